"""``avhb merge OUT SHARD...``: shards of one run combined into the unsharded run."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from avhb.cli.output import print_results
from avhb.cli.parsing import add_flag


def command(args, argv) -> int:
    from avhb.cluster.merge import merge
    from avhb.run.budget import OverBudget

    report: Callable[[Path], object] | None = None
    if not args.no_report:
        from avhb.report.html import write_report as report
    over = None
    try:
        results = merge(Path(args.out), [Path(d) for d in args.shard_dirs], command=["avhb", *argv],
                        report=report, max_errors=args.max_errors)
    except OverBudget as exc:  # the merged counts over the shards' budget: written, then exit 1
        results, over = exc.results, str(exc)
    print_results(results, Path(args.out))
    print(f"\nmerged run folder: {args.out}", file=sys.stderr)
    if over:
        print(f"avhb: error: {over}", file=sys.stderr)
        return 1
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", help="the merged run folder")
    p.add_argument("shard_dirs", nargs="+", help="every shard's run folder")
    p.add_argument("--no-report", action="store_true", help="skip report.html")
    add_flag(p, "--max-errors", default=None, metavar="SHARE",
             help="error budget of the merged run (default: the one the shards ran under)")
