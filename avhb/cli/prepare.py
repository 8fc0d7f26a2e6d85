"""``avhb prepare TASKS``: tasks' data fetched ahead of a run."""
from __future__ import annotations

import argparse

from avhb.cli.parsing import add_flag


def command(args, argv) -> int:
    from avhb.run.prepare import prepare_tasks

    return prepare_tasks([t.strip() for t in args.tasks.split(",") if t.strip()], args.data_dir)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("tasks")
    add_flag(p, "--data-dir", default=None)
    add_flag(p, "--include-path", dest="include_path", action="append", default=[], metavar="DIR")
