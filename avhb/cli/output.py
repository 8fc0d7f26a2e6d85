"""What every command prints the same way: the results table with the run's
notes, an error in one line, and a reader of stdout that went away."""
from __future__ import annotations

import sys
from pathlib import Path


def stdout_closed() -> int:
    """The reader of stdout went away (``avhb show X | head``): stop quietly.
    Later writes (the interpreter's flush at exit) go to /dev/null instead of
    raising ``BrokenPipeError`` again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 0


def one_line(exc: BaseException) -> str:
    from avhb.redact import redact_text

    return " ".join(redact_text(str(exc)).split())


def print_results(results: dict, run_dir: Path | None = None) -> None:
    """The results table, with the run's notes (run.json) under it."""
    from avhb.report.table import format_results_table

    from avhb.runfolder.manifest import recorded_manifest

    run = recorded_manifest(run_dir) if run_dir is not None else None
    notes = list((run or {}).get("notes") or [])
    print(format_results_table(results, notes))
    from avhb.runfolder.results import RunResults

    for line in RunResults.from_json(results).undefined_headlines():
        print(f"avhb: warning: {line}", file=sys.stderr)
