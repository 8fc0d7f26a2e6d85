"""Scale of one process: a text task of 1k / 10k / 100k samples against an
instant local OpenAI-compatible server, then the rerun of the finished
largest run; this checkout and older trees side by side.

    python benchmarks/scale.py                                  # 1000,10000,100000, 3 rounds
    python benchmarks/scale.py --sizes 1000,10000 --tree old=4f67da6
    python benchmarks/scale.py --sizes 1000000 --rounds 1       # one long run (not for CI)

For each tree and size, ``avhb run --tasks tputpack/tput_text --model
openai:fake,base_url=...`` runs in a fresh process (the task pack of
``benchmarks/throughput.py``, one generated question per sample, metric
``exact_match``, ``--no-report``) into a fresh run folder; all (tree, size)
cases are interleaved round-robin by benchmarks/pairing.py (``--rounds``,
at least 3 by default).  The tables give wall time, CPU and peak RSS
(medians, min-max), per-sample CPU, and per-round ratios to this checkout.
The ``finished`` case (``--finished-sizes``, default the largest) re-runs
a size's command, with the default report, in the run folder that holds
the finished run (put back before each round, same path, same mtimes):
every answer is a journal hit, and the server's completion counter
(``GET /v1/stats``) must not move.

Goals (issues 17 and 26): peak RSS at 100k within 1.5x of 10k; per-sample
CPU flat in N; a finished rerun of 100k in <= 2 s CPU with zero calls.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pairing import Case, head_tree, machine_line, progress, run_rounds, tree_from_spec  # noqa: E402
from throughput import CONCURRENCY, Server, Workload, check_run  # noqa: E402

TASK = "tput_text"


def served(server: Server) -> int:
    with urllib.request.urlopen(f"{server.base_url}/stats", timeout=10) as reply:
        return int(json.loads(reply.read())["completions"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=REV|NAME=PYTHON:SRC",
                    help="an older avhb to run the same workload with (repeatable)")
    ap.add_argument("--keep", default=None, help="keep the run folders under this directory")
    ap.add_argument("--finished-sizes", default=None,
                    help="sizes whose finished rerun is measured (default: the largest; '' for none)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    finished = ([max(sizes)] if args.finished_sizes is None else
                [int(s) for s in args.finished_sizes.split(",") if s.strip()])
    unknown = [n for n in finished if n not in sizes]
    if unknown:
        raise SystemExit(f"--finished-sizes {unknown}: not among --sizes")
    server = Server("fast")
    print(f"instant server {server.base_url} (own process), concurrency {CONCURRENCY}, {machine_line()}, "
          f"{args.rounds} rounds\n")
    tmp = tempfile.mkdtemp(prefix="avhb-scale-", dir=args.keep)
    failed = False
    try:
        work = Path(tmp)
        trees = [head_tree()] + [tree_from_spec(s, work) for s in args.tree]
        cases: list[Case] = []
        for tree in trees:
            for n in sizes:
                w = Workload("text", n, 0, work / f"{tree.name}-w{n}")
                env = dict(os.environ, PYTHONPATH=tree.pythonpath(str(w.pack)), AVHB_CACHE_DIR=str(work / f"{tree.name}-cache"),
                           HF_HUB_OFFLINE="1")
                cmd = [tree.python, "-m", "avhb.cli", "run", "--tasks", f"tputpack/{TASK}", "--model",
                       f"openai:fake,base_url={server.base_url},concurrency={CONCURRENCY}", "--sample-data"]
                folder = work / f"{tree.name}-runs{n}"

                def before(k: int, folder=folder) -> None:
                    shutil.rmtree(folder / f"run{k}", ignore_errors=True)

                cases.append(Case(f"{tree.name} {n}", lambda k, cmd=cmd, folder=folder:
                                  [*cmd, "--output-dir", str(folder / f"run{k}"), "--no-report"],
                                  env=env, cwd=work, before=before,
                                  parse=lambda run, folder=folder, w=w, n=n: check_run(folder / f"run{run.round}", w, n)))
                # the index and dataset cache warm, as a user's second run finds them
                subprocess.run([*cmd, "--limit", "1", "--no-report", "--output-dir", str(folder / "warmup")], env=env,
                               cwd=work, capture_output=True, check=True)
                if n in finished:
                    cases.append(_finished_case(f"{tree.name} {n} finished", cmd, env, work, folder, w, n, server))
        paired = run_rounds(cases, args.rounds, log=progress)
    finally:
        server.close()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(paired.table(base=None))
    print("\nper sample (median CPU ms / sample; ratio to head per round):")
    for case in paired.cases:
        n = int(case.split()[1])
        cpu = paired.stat(case, "cpu")
        if cpu is None:
            continue
        line = f"  {case:28s} CPU {1000 * cpu.median / n:8.4f} ms/sample ({1000 * cpu.lo / n:.4f}-{1000 * cpu.hi / n:.4f})"
        head = "head " + case.split(" ", 1)[1]
        if not case.startswith("head ") and head in paired.cases:
            rs = paired.ratios(case, head, "cpu")
            line += f"   CPU / head: {' '.join(f'{r:.2f}' for r in rs)}"
        print(line)
    for tree in trees:
        small, big = f"{tree.name} {min(sizes)}", f"{tree.name} {max(sizes)}"
        if len(sizes) > 1 and paired.stat(small, "peak_mb") and paired.stat(big, "peak_mb"):
            print(f"  {tree.name}: peak RSS {max(sizes)} / {min(sizes)} = "
                  f"{paired.stat(big, 'peak_mb').median / paired.stat(small, 'peak_mb').median:.2f}")
    failed |= bool(paired.failures())
    return 1 if failed else 0


def _finished_case(name: str, cmd: list[str], env: dict, work: Path, folder: Path, w: Workload, n: int,
                   server: Server) -> Case:
    """The default command (report included) over a run folder that holds
    the finished run, as a user re-runs it: the same command, the same
    folder.  The run is made once in ``rerun/`` and kept aside (metadata
    and mtimes included); before each round it is put back at ``rerun/``,
    so every round finds the folder the run left (its report.html made from
    the same inputs, and the command recorded in run.json the same)."""
    done = folder / "finished-source"
    rerun = folder / "rerun"
    calls: dict[int, int] = {}

    def before(k: int) -> None:
        if not done.exists():
            subprocess.run([*cmd, "--output-dir", str(rerun)], env=env, cwd=work, capture_output=True, check=True)
            os.replace(rerun, done)
        shutil.rmtree(rerun, ignore_errors=True)
        shutil.copytree(done, rerun)
        calls[k] = served(server)

    def parse(run) -> dict:
        moved = served(server) - calls[run.round]
        if moved:
            raise AssertionError(f"{moved} model calls on a finished rerun")
        return check_run(rerun, w, n)

    return Case(name, [*cmd, "--output-dir", str(rerun)], env=env, cwd=work, before=before, parse=parse)


if __name__ == "__main__":
    sys.exit(main())
