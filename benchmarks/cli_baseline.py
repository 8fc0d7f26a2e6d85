"""End-to-end `avhb run` on 2,000 instant text answers, this checkout against
older avhb trees, interleaved (A B C, C B A, ...) so load drift hits every
tree alike.  Each tree runs in its own interpreter (a venv with that tree
installed, or this one with the tree first on PYTHONPATH); the workload and
the local server are benchmarks/throughput.py's.

    python benchmarks/cli_baseline.py --tree base=/work/wt/base/.venv/bin/python:/work/wt/base
    python benchmarks/cli_baseline.py --tree base=PY:SRC --limit 1     # fixed start-up only

Prints the median wall and CPU seconds per tree and each run's wall time.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput as T  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PYTHON:SRC",
                    help="an older tree: its interpreter and source folder (repeatable)")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--limit", help="pass --limit to every run (1: start-up only)")
    ap.add_argument("--repeats", type=int, default=6)
    args = ap.parse_args()
    trees = [("head", sys.executable, str(ROOT))]
    for spec in args.tree:
        name, _, rest = spec.partition("=")
        py, _, src = rest.partition(":")
        trees.append((name, py, src))
    server = T.Server("fast")
    try:
        setups = {}
        with tempfile.TemporaryDirectory(prefix="avhb-clibase-") as tmp:
            for name, py, src in trees:
                work = Path(tmp) / name
                work.mkdir()
                w = T.Workload("text", args.n, 8, work)
                env = dict(os.environ, PYTHONPATH=T._pythonpath(str(w.pack), src), AVHB_CACHE_DIR=str(work / "cache"),
                           HF_HUB_OFFLINE="1")
                cmd = [py, "-m", "avhb.cli", "run", "--tasks", f"tputpack/{w.task}", "--model",
                       T.model_spec("aiohttp", server.base_url), "--sample-data", "--no-report",
                       *(["--limit", args.limit] if args.limit else [])]
                subprocess.run([*cmd, "--output-dir", str(work / "warm")], env=env, cwd=work, capture_output=True,
                               check=True)  # index and dataset cache warm, as in throughput.py's cli mode
                setups[name] = (work, env, cmd)
            runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in trees}
            order = [name for name, _, _ in trees]
            for i in range(args.repeats):
                for name in (order if i % 2 == 0 else order[::-1]):
                    work, env, cmd = setups[name]
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    start = time.perf_counter()
                    subprocess.run([*cmd, "--output-dir", str(work / f"run{i}")], env=env, cwd=work,
                                   capture_output=True, check=True)
                    wall = time.perf_counter() - start
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    runs[name].append((wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime))
    finally:
        server.close()
    head = statistics.median(w for w, _ in runs["head"])
    print(f"{args.n} text questions{' --limit ' + args.limit if args.limit else ''}; {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    for name, rs in runs.items():
        wall, cpu = statistics.median(w for w, _ in rs), statistics.median(c for _, c in rs)
        print(f"  {name:8s} wall {wall:6.2f} s  cpu {cpu:6.2f} s  head time / {name} time {head / wall:4.2f}  "
              f"runs {[round(w, 2) for w, _ in rs]}")


if __name__ == "__main__":
    main()
