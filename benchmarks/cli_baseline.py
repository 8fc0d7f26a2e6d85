"""End-to-end `avhb run` on instant text answers, this checkout against
older avhb trees, interleaved (benchmarks/pairing.py: fresh processes,
A B C / C B A rounds) so load drift hits every tree alike.  Each tree runs
in its own interpreter (this one with the tree first on PYTHONPATH, or a
checkout's own venv); the workload and the local server are
benchmarks/throughput.py's.

    python benchmarks/cli_baseline.py --tree old=4f67da6
    python benchmarks/cli_baseline.py --tree base=/work/wt/base/.venv/bin/python:/work/wt/base
    python benchmarks/cli_baseline.py --tree old=4f67da6 --limit 1     # fixed start-up only

Prints, per tree, wall and CPU seconds and peak RSS (median, min-max) and
each round's ratio to this checkout; every run's results are checked
(all samples written, exact_match 1.0).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput as T  # noqa: E402
from pairing import Case, head_tree, machine_line, progress, run_rounds, tree_from_spec  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=REV|NAME=PYTHON:SRC",
                    help="an older tree (repeatable)")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--limit", help="pass --limit to every run (1: start-up only)")
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    server = T.Server("fast")
    try:
        with tempfile.TemporaryDirectory(prefix="avhb-clibase-") as tmp:
            trees = [head_tree()] + [tree_from_spec(s, Path(tmp)) for s in args.tree]
            cases = []
            for tree in trees:
                work = Path(tmp) / tree.name
                work.mkdir()
                w = T.Workload("text", args.n, 8, work)
                env = dict(os.environ, PYTHONPATH=tree.pythonpath(str(w.pack)), AVHB_CACHE_DIR=str(work / "cache"),
                           HF_HUB_OFFLINE="1")
                cmd = [tree.python, "-m", "avhb.cli", "run", "--tasks", f"tputpack/{w.task}", "--model",
                       T.model_spec("aiohttp", server.base_url), "--sample-data", "--no-report",
                       *(["--limit", args.limit] if args.limit else [])]
                subprocess.run([*cmd, "--output-dir", str(work / "warm")], env=env, cwd=work, capture_output=True,
                               check=True)  # index and dataset cache warm, as in throughput.py's cli mode
                expect = int(args.limit) if args.limit else args.n
                cases.append(Case(tree.name, lambda k, cmd=cmd, work=work: [*cmd, "--output-dir", str(work / f"run{k}")],
                                  env=env, cwd=work,
                                  parse=lambda run, work=work, w=w, expect=expect: T.check_run(work / f"run{run.round}", w, expect)))
            paired = run_rounds(cases, args.rounds, log=progress)
    finally:
        server.close()
    print(f"{args.n} text questions{' --limit ' + args.limit if args.limit else ''}; {machine_line()}")
    print(paired.table(base="head"))
    return 1 if paired.failures() else 0


if __name__ == "__main__":
    raise SystemExit(main())
