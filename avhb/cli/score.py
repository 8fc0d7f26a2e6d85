"""``avhb score RUN``: metrics and judges applied again to a finished run, no model call."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from avhb.cli.output import print_results


def command(args, argv) -> int:
    from avhb.api import evaluate
    from avhb.cluster.shard import Shard
    from avhb.runfolder.manifest import options_from_run

    options = options_from_run(Path(args.run_dir), judge_args=args.judge, shard_from_json=Shard.from_json)
    options.write_report = not args.no_report
    results = evaluate(options)
    print_results(results, Path(args.run_dir))
    if args.pool:
        from avhb.report.pooling import pool_runs

        pooled = pool_runs([Path(args.run_dir), *map(Path, args.pool)])
        for task, cells in pooled["results"].items():
            for label, values in cells.items():
                shown = ", ".join(f"{k} {v:.4f}" for k, v in values.items()
                                  if isinstance(v, float) and not k.endswith(("_stderr", "_n")))
                print(f"pooled {task} | {label} | {shown}")
        print(f"{args.run_dir}/pooled.json", file=sys.stderr)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir")
    p.add_argument("--judge", action="append", default=[], metavar="ROLE=BACKEND:NAME[,k=v]",
                   help="re-score with this judge bound to role ROLE (repeat for a panel; '*=SPEC' binds "
                        "every role); given, these replace the run's own --judge flags. Verdicts the run's "
                        "journal holds are reused, others asked; the model is not called")
    p.add_argument("--pool", nargs="*", default=None, help="other run folders pooled for cross-run metrics")
    p.add_argument("--no-report", action="store_true", help="skip report.html")
