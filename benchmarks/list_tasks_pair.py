"""Listing lm-eval's own task folder: ``avhb list tasks --include_path
<lm_eval/tasks>`` cold and warm beside lm-eval 0.4.13's ``lm_eval ls tasks``,
paired and interleaved in one invocation (benchmarks/pairing.py: fresh
processes, A B C / C B A rounds; wall s, CPU s of the process tree, peak RSS;
medians with min-max, per-round ratios to lm-eval).

    python benchmarks/list_tasks_pair.py                  # 5 rounds
    python benchmarks/list_tasks_pair.py --rounds 3 --tasks-dir DIR

The folder is the ``lm_eval/tasks`` lm-eval's venv ships (scripts/peer_envs.sh
lmeval), read where it lies, unmodified (``--tasks-dir`` names another copy).
Cases:

- ``avhb cold``: avhb's task index removed before each run (its own cache
  folder, ``AVHB_CACHE_DIR``), so every file is read;
- ``avhb warm``: the index left from the run before, nothing changed;
- ``lm_eval ls tasks``: lm-eval's listing (it has no index: every run reads
  every file).  ``lm_eval --tasks list`` is no listing in 0.4.13: it ends in
  ``ValueError: Tasks not found: list`` (exit 1); ``ls tasks`` is its command.

Every run is checked: avhb must list at least ``--min-tasks`` tasks of the
folder (named ``tasks/<name>``), lm-eval must print its task table with at
least as many rows; a run that fails its check is FAILED and the script exits 1.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pairing import Case, Run, machine_line, peer_missing, peer_python, progress, run_rounds  # noqa: E402


def lm_eval_tasks_dir(python: str) -> Path | None:
    venv = Path(python).parent.parent
    found = sorted(venv.glob("lib/python*/site-packages/lm_eval/tasks"))
    return found[-1] if found else None


def avhb_listed(run: Run, namespace: str) -> int:
    """Tasks of the included folder avhb printed (one line each, ``<namespace>/<name>`` first)."""
    return sum(1 for line in run.stdout.splitlines() if line.startswith(namespace + "/"))


def lm_eval_tables(stdout: str) -> dict[str, int]:
    """Rows of each table ``lm_eval ls tasks`` prints (Group, Tag, Task), by the header's first cell."""
    counts: dict[str, int] = {}
    current = None
    for line in stdout.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        cell = line.strip("|").split("|")[0].strip()
        if current is None:
            current = cell
            counts[current] = 0
        elif not re.fullmatch(r"-+", cell):
            counts[current] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tasks-dir", type=Path, help="lm-eval's tasks folder (default: .venv-lmeval's)")
    ap.add_argument("--min-tasks", type=int, default=10_000, help="fewest tasks a listing must show")
    args = ap.parse_args(argv)
    lm = peer_python("lm-eval")
    if lm is None:
        print(peer_missing("lm-eval"), file=sys.stderr)
        return 2
    tasks_dir = args.tasks_dir or lm_eval_tasks_dir(lm)
    if tasks_dir is None or not tasks_dir.is_dir():
        print(f"list_tasks_pair: no lm_eval/tasks folder in {Path(lm).parent.parent}; pass --tasks-dir",
              file=sys.stderr)
        return 2
    namespace = tasks_dir.name
    files = sum(1 for _ in tasks_dir.rglob("*.yaml"))
    tmp = Path(tempfile.mkdtemp(prefix="avhb-list-pair-"))
    try:
        cache = tmp / "cache"
        env = dict(os.environ, AVHB_CACHE_DIR=str(cache), AVHB_NO_PROGRESS="1")
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: byte code cached
        avhb_cmd = [sys.executable, "-m", "avhb.cli", "list", "tasks", "--include_path", str(tasks_dir)]
        seen: dict[str, int] = {}

        def check_avhb(run: Run) -> dict:
            listed = avhb_listed(run, namespace)
            if listed < args.min_tasks:
                raise AssertionError(f"avhb listed {listed} tasks of {tasks_dir} (fewer than {args.min_tasks})")
            seen["avhb"] = listed
            return {"tasks": listed}

        def check_lm(run: Run) -> dict:
            tables = lm_eval_tables(run.stdout)
            if tables.get("Task", 0) < args.min_tasks:
                raise AssertionError(f"lm_eval ls tasks printed {tables} (a Task table under {args.min_tasks} rows)")
            seen.update({f"lm-eval {k}": v for k, v in tables.items()})
            return {"tasks": tables["Task"]}

        def drop_index(_round: int) -> None:
            shutil.rmtree(cache / "task-index", ignore_errors=True)

        cases = [Case("avhb cold", avhb_cmd, env=env, cwd=str(tmp), before=drop_index, parse=check_avhb,
                      timeout=900),
                 Case("avhb warm", avhb_cmd, env=env, cwd=str(tmp), parse=check_avhb, timeout=900),
                 Case("lm_eval ls tasks", [str(Path(lm).parent / "lm_eval"), "ls", "tasks"], cwd=str(tmp),
                      parse=check_lm, timeout=900)]
        progress(f"listing {tasks_dir} ({files:,} YAML files); {machine_line()}; {args.rounds} rounds")
        # the warm case needs an index: one untimed listing first (also byte-compiles avhb as installed)
        from pairing import run_process

        first = run_process(avhb_cmd, env=env, cwd=str(tmp))
        if first.rc != 0:
            print(f"avhb list tasks failed:\n{first.stderr[-2000:]}", file=sys.stderr)
            return 1
        paired = run_rounds(cases, args.rounds, log=progress)
        print(f"\n`avhb list tasks --include_path {tasks_dir}` ({files:,} YAML files) beside "
              f"`lm_eval ls tasks`; {machine_line()}")
        print(", ".join(f"{k}: {v:,}" for k, v in seen.items()))
        print(paired.table(base="lm_eval ls tasks"))
        return 1 if paired.failures() else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
