"""``avhb export RUN``: a run folder in lm-eval's output shape."""
from __future__ import annotations

import argparse
from pathlib import Path


def command(args, argv) -> int:
    from avhb.report.lmeval import export_run

    for path in export_run(Path(args.run_dir), Path(args.output) if args.output else None):
        print(path)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir")
    p.add_argument("--format", choices=["lm-eval"], default="lm-eval")
    p.add_argument("--output", default=None, metavar="DIR",
                   help="where (default: inside the run folder, replacing its earlier export); DIR/<model>/...")
