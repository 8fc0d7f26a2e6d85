"""``previous/<timestamp>/``: the results a re-run replaces, kept.  What
to keep is :mod:`avhb.resume.decide`'s decision; this module copies the
files (the folder's names: :mod:`avhb.runfolder.layout`)."""
from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from avhb.atomic import write_failure
from avhb.errors import EnvironmentFailure
from avhb.runfolder.folder import RESUME_HINT, write_json_atomic
from avhb.runfolder.layout import previous_dir, report_file, results_file, run_file, samples_dir, samples_files


def keep_previous(root: Path, recorded: dict[str, Any]) -> str:
    """Keep the run folder's ``results.json``, ``report.html``,
    ``samples/`` and its recorded ``run.json`` in ``previous/<timestamp>/``
    (hard links where the filesystem allows: every one of these files is
    replaced by a rename, never written in place, so a link keeps the old
    content); returns the folder relative to ``root``.  A folder that
    cannot be written (a full disk) is one line naming the file, as for
    every writer of the run folder; the run folder is left as it was (the
    incomplete ``previous/<timestamp>/`` removed)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = previous_dir(root) / stamp
    n = 1
    while target.exists():
        n += 1
        target = previous_dir(root) / f"{stamp}-{n}"
    files = [results_file(root), report_file(root), *samples_files(root)]
    where = samples_dir(target)
    try:
        where.mkdir(parents=True)
        for path in files:
            if path.is_file():
                where = target / path.relative_to(root)
                _link_or_copy(path, where)
        write_json_atomic(run_file(target), recorded)
    except (OSError, EnvironmentFailure) as exc:
        shutil.rmtree(target, ignore_errors=True)
        if isinstance(exc, EnvironmentFailure):
            raise
        raise write_failure(where, exc, RESUME_HINT) from None
    return str(target.relative_to(root))


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
