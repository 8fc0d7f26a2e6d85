#!/usr/bin/env python3
"""Print the differential table over lm-eval 0.4.13's shipped task folders
in Markdown: task, source folder, lm-eval's exit, avhb's exit, requests
equal, metrics equal, what differs (tests/compat/real/lm_eval_harness.py;
the same run as tests/compat/test_real_lm_eval.py).

    python scripts/real_tasks_table.py [--rows gsm8k,boolq] [--work DIR] [--jobs 2] [--hub-cache-rows all]

Needs lm-eval's venv (scripts/peer_envs.sh lmeval).  ``--work`` keeps the
run's folders (both tools' outputs, the request log, the Hub's log); by
default a temporary folder is removed afterwards.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.compat.real.lm_eval_harness import VENV, markdown_table, run_differential  # noqa: E402
from tests.compat.real.lm_eval_rows import EXPECTED_TO_FAIL_UNTIL_FIXED, HUB_CACHE_ROWS, ROWS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", help="comma-separated row names (default: all)")
    parser.add_argument("--work", type=Path, help="keep the run's folders here")
    parser.add_argument("--jobs", type=int, default=2, help="avhb rows run at once (default 2)")
    parser.add_argument("--hub-cache-rows", default=",".join(HUB_CACHE_ROWS),
                        help="rows avhb runs a second time from lm-eval's hub cache, no prepare (default: "
                             f"{','.join(HUB_CACHE_ROWS)}; 'all'; '' for none)")
    args = parser.parse_args(argv)
    if not (VENV / "bin" / "lm_eval").exists():
        print(f"real_tasks_table: lm-eval is not installed in {VENV}: run scripts/peer_envs.sh lmeval", file=sys.stderr)
        return 2
    rows = list(ROWS)
    if args.rows:
        wanted = args.rows.split(",")
        unknown = sorted(set(wanted) - {r.name for r in ROWS})
        if unknown:
            print(f"real_tasks_table: unknown rows {', '.join(unknown)}", file=sys.stderr)
            return 2
        rows = [r for r in ROWS if r.name in wanted]
    again = [r.name for r in rows] if args.hub_cache_rows == "all" else \
        [n for n in args.hub_cache_rows.split(",") if n]
    start = time.monotonic()
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        results = run_differential(args.work, rows, args.jobs, again)
    else:
        with tempfile.TemporaryDirectory(prefix="real-lm-eval-") as tmp:
            results = run_differential(Path(tmp), rows, args.jobs, again)
    print(markdown_table(results, EXPECTED_TO_FAIL_UNTIL_FIXED))
    print(f"\n{len(rows)} rows in {time.monotonic() - start:.0f} s wall.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
