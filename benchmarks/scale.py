"""Scale of one process: a text task of 1k / 10k / 100k samples against an
instant local OpenAI-compatible server, then the resume of the finished
largest run.

    python benchmarks/scale.py                     # 1000,10000,100000
    python benchmarks/scale.py --sizes 1000,10000

For each size, ``avhb run --tasks tputpack/tput_text --model
openai:fake,base_url=...`` runs in a fresh process (the task pack of
``benchmarks/throughput.py``, one generated question per sample, metric
``exact_match``) and the table gives wall time, samples/s, ms per sample,
CPU per sample and the process's peak RSS (``wait4``).  The resume row
re-runs the largest size's command into its finished run folder: every
answer is a journal hit, and the server's completion counter (``GET
/v1/stats``) must not move.

Goals (issue 17): peak RSS < 400 MB at 100k; flat per-sample cost; the
resume of a finished 100k run in < 5 s with zero calls.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput import CONCURRENCY, ROOT, Server, Workload, _pythonpath, measure  # noqa: E402

TASK = "tput_text"

GOAL_RSS_MB = 400
GOAL_RESUME_S = 5.0


def served(server: Server) -> int:
    with urllib.request.urlopen(f"{server.base_url}/stats", timeout=10) as reply:
        return int(json.loads(reply.read())["completions"])


def command(server: Server, out: Path) -> list[str]:
    return [sys.executable, "-m", "avhb.cli", "run", "--tasks", f"tputpack/{TASK}", "--model",
            f"openai:fake,base_url={server.base_url},concurrency={CONCURRENCY}", "--sample-data",
            "--output-dir", str(out), "--no-report"]


def check(out: Path, n: int) -> str:
    results = json.loads((out / "results.json").read_text())["results"][f"tputpack/{TASK}"]
    with open(out / "samples" / f"tputpack__{TASK}.jsonl", "rb") as fh:
        lines = sum(1 for _ in fh)
    ok = lines == n and results.get("samples") == n and results.get("exact_match") == 1.0
    return f"samples {lines}/{n}, exact_match {results.get('exact_match')}" + ("" if ok else "  (WRONG)")


def row(label: str, n: int, res: dict, calls: int, detail: str) -> str:
    wall = res["wall"]
    return (f"| {label:<14} | {n:>7} | {wall:7.2f} | {n / wall:9.0f} | {1000 * wall / n:10.3f} | "
            f"{1000 * res['cpu'] / n:13.3f} | {res['peak_mb']:7.0f} | {calls:>7} | {detail} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--keep", default=None, help="keep the run folders under this directory")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    server = Server("fast")
    failed = False
    print(f"instant server {server.base_url} (own process), concurrency {CONCURRENCY}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| run            | samples |  wall s | samples/s |  ms/sample | CPU ms/sample | peak MB |   calls | check |")
    print("|----------------|---------|---------|-----------|------------|---------------|---------|---------|-------|")
    try:
        with (contextlib.nullcontext(tempfile.mkdtemp(prefix="avhb-scale-", dir=args.keep)) if args.keep
              else tempfile.TemporaryDirectory(prefix="avhb-scale-")) as tmp:
            work = Path(tmp)
            for n in sizes:
                workload = Workload("text", n, 0, work / f"w{n}")  # the throughput benchmark's text task
                env = dict(os.environ, PYTHONPATH=_pythonpath(str(workload.pack), str(ROOT)),
                           AVHB_CACHE_DIR=str(work / "cache"),
                           HF_HUB_OFFLINE="1")
                out = work / f"run{n}"
                before = served(server)
                res = measure(command(server, out), env, cwd=work)
                calls = served(server) - before
                if res["rc"] != 0:
                    print(f"| {n} FAILED rc={res['rc']}: {res['stderr'][-800:]}")
                    failed = True
                    continue
                rss_ok = n < 100_000 or res["peak_mb"] < GOAL_RSS_MB
                print(row("run", n, res, calls, check(out, n) + ("" if rss_ok else
                                                                  f"; peak RSS goal < {GOAL_RSS_MB} MB: MISSED")),
                      flush=True)
                failed |= not rss_ok or "WRONG" in check(out, n)
                if n == max(sizes):
                    before = served(server)
                    res = measure(command(server, out), env, cwd=work)
                    calls = served(server) - before
                    verdict = "ok" if res["rc"] == 0 and calls == 0 and res["wall"] < GOAL_RESUME_S else "MISSED"
                    print(row("resume (done)", n, res, calls, f"{check(out, n)}; goal < {GOAL_RESUME_S:.0f} s, "
                                                               f"0 calls: {verdict}"), flush=True)
                    failed |= verdict != "ok"
            if args.keep:
                print(f"\nrun folders kept under {work}")
    finally:
        server.close()
    print(f"\ngoals: peak RSS < {GOAL_RSS_MB} MB at 100k, flat ms/sample, resume of 100k < {GOAL_RESUME_S:.0f} s "
          "with 0 calls")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
