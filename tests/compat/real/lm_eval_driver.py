"""Runs lm-eval 0.4.13's own command line once per row of a plan, in one
process (its task index, 14,000 YAML files, is built once and shared: its
start-up is the cost), and writes each row's outcome.

Run with lm-eval's interpreter (no avhb import here)::

    .venv-lmeval/bin/python tests/compat/real/lm_eval_driver.py PLAN.json

PLAN.json: ``{"rows": [{"row": NAME, "argv": [...]}, ...], "status": PATH}``;
each ``argv`` is what follows ``lm_eval`` on a command line (``run --model
... --tasks NAME --output_path DIR``).  Each row runs through lm-eval's CLI
(``HarnessCLI`` parsing, ``Run._execute``: its config checks, task
manager, ``simple_evaluate``, its results file), with two settings its
command line does not expose: ``bootstrap_iters=100`` (the differential
compares closed-form standard errors only) and one task index for every
row (``TaskIndex.build`` remembered).  A
row that raises is recorded (exit 1 and the exception's last line) and the
next row runs.  PATH gets ``{row: {"exit": 0|1, "error": str|None,
"seconds": float}}``, rewritten after every row.
"""
from __future__ import annotations

import functools
import json
import logging
import sys
import time
import traceback
from pathlib import Path

# run as a script: this folder's modules must not shadow what lm-eval imports
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import lm_eval
import lm_eval.evaluator as evaluator
from lm_eval.tasks._index import TaskIndex
from lm_eval._cli import HarnessCLI


def _index_once(build):
    """lm-eval's ``TaskIndex.build`` remembered per list of folders: every
    row's TaskManager (made with that row's metadata, as the CLI makes it)
    reads the same index; its factory deep-copies an entry's config before
    using it, so the shared entries stay as built."""
    built: dict[tuple[str, ...], dict] = {}

    def build_once(paths, *args, **kwargs):
        paths = list(paths)
        key = tuple(str(p) for p in paths) + (json.dumps([args, kwargs], sort_keys=True, default=str),)
        if key not in built:
            built[key] = build(paths, *args, **kwargs)
        return built[key]

    return build_once


def _last_line(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    return (lines[-1] if lines else type(exc).__name__).strip()[:500]


def main(plan_path: str) -> int:
    plan = json.loads(open(plan_path, encoding="utf-8").read())
    quick = functools.partial(evaluator.simple_evaluate, bootstrap_iters=100)
    evaluator.simple_evaluate = quick
    lm_eval.simple_evaluate = quick  # Run._execute's `from lm_eval import simple_evaluate`
    TaskIndex.build = staticmethod(_index_once(TaskIndex.build))
    from lm_eval.utils import setup_logging

    setup_logging()
    logging.getLogger().setLevel(logging.WARNING)
    status: dict[str, dict] = {}
    for item in plan["rows"]:
        start = time.monotonic()
        error = None
        try:
            cli = HarnessCLI()
            args = cli._parser.parse_args(item["argv"])
            cli.execute(args)
        except KeyboardInterrupt:
            raise
        except SystemExit as exc:  # argparse and lm-eval's own checks exit
            if exc.code not in (0, None):
                traceback.print_exc()
                error = f"SystemExit: {exc.code}"
        except BaseException as exc:  # a row that fails must not stop the others
            traceback.print_exc()
            error = _last_line(exc)
        status[item["row"]] = {"exit": 0 if error is None else 1, "error": error,
                               "seconds": round(time.monotonic() - start, 2)}
        with open(plan["status"], "w", encoding="utf-8") as fh:
            json.dump(status, fh, indent=1)
        print(f"lm_eval_driver: {item['row']}: {'ok' if error is None else error}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
