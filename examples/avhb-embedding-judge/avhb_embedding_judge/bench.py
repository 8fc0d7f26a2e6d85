"""Measure the judge's cost: ``python -m avhb_embedding_judge.bench``.

Prints the model load time (first use in a fresh process, imports included)
and the mean latency of one response/reference similarity, over distinct
sentence pairs so no cache helps.
"""
from __future__ import annotations

import argparse
import time

from . import model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m avhb_embedding_judge.bench")
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    args = parser.parse_args(argv)
    if args.threads:
        model.set_threads(args.threads)
    start = time.perf_counter()
    model.get_model(args.device)
    load = time.perf_counter() - start
    encode = model.encoder(args.device)
    model.text_similarity("warm up", "warm up once", encode)
    start = time.perf_counter()
    for i in range(args.pairs):
        model.text_similarity(f"The answer to question {i} is a red car parked outside.",
                              f"Question {i}: someone left a crimson automobile by the door.", encode)
    per_pair = (time.perf_counter() - start) / args.pairs
    print(f"model load: {load:.2f} s\nper pair: {per_pair * 1000:.1f} ms (mean of {args.pairs}, device {args.device}, "
          f"{model.torch_threads()} torch threads)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
