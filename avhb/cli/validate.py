"""``avhb validate [PATH...]``: task files checked, no code run."""
from __future__ import annotations

import argparse
from pathlib import Path

from avhb.cli.parsing import add_flag


def command(args, argv) -> int:
    """Every error of every file, one line each, then the notes (avhb/run/validate.py)."""
    from avhb.registry import get_registry
    from avhb.run.validate import validate_installed, validate_paths

    registry = get_registry()
    result = validate_paths([Path(p) for p in args.paths], registry) if args.paths else validate_installed(registry)
    for line in result.errors + result.notes:
        print(line)
    print(result.summary(installed=not args.paths))
    return 0 if result.ok else 1


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", help="YAML files or folders (default: every installed task)")
    add_flag(p, "--include-path", dest="include_path", action="append", default=[], metavar="DIR")
