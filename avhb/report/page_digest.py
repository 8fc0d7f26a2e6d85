"""The digest of what a report is made from, kept in the page
(``<meta name="avhb-inputs">``): run.json (without its ``updated`` stamp,
which the page does not show) and results.json, by their bytes; each
samples file by name, size and mtime (a samples file is only ever replaced
whole); the sample cap; the report code and avhb's version.  The secret
values redaction removes are not part of it (a hash of them in the page
could be checked against guesses), so a report is not rewritten only
because a new secret variable was set.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from avhb.runfolder.layout import RESULTS_FILE, RUN_FILE, results_file, samples_files
from avhb.runfolder.manifest import manifest_file

_HERE = os.path.dirname(os.path.abspath(__file__))
# the code that decides what a page shows: this package, redaction, and the run folder's readers
_REPORT_CODE = [os.path.join(_HERE, f) for f in sorted(os.listdir(_HERE)) if f.endswith(".py")]
_REPORT_CODE.append(os.path.join(os.path.dirname(_HERE), "redact.py"))
_REPORT_CODE += [os.path.join(os.path.dirname(_HERE), "runfolder", f) for f in ("layout.py", "json_file.py", "samples.py")]
_FINGERPRINT = re.compile(rb'<meta name="avhb-inputs" content="([0-9a-f]{64})">')


def page_digest(run_dir: Path, max_samples_per_task: int | None) -> str:
    """What the report shows is made of: run.json and results.json (bytes),
    the samples files (name, size, mtime), the cap, the report code (and
the run folder's readers it reads through)."""
    from avhb.version import __version__

    h = hashlib.sha256(f"report-v1|{__version__}|{max_samples_per_task}".encode())
    for code in _REPORT_CODE:
        try:
            st = os.stat(code)
            h.update(f"|{os.path.basename(code)}:{st.st_mtime_ns}:{st.st_size}".encode())
        except OSError:
            h.update(b"|-")
    for name, raw in ((RUN_FILE, _shown_run(run_dir)), (RESULTS_FILE, _read(results_file(run_dir)))):
        h.update(f"|{name}:-".encode() if raw is None else f"|{name}:".encode() + hashlib.sha256(raw).digest())
    for path in samples_files(run_dir):
        try:
            st = path.stat()
        except OSError:
            continue
        h.update(f"|samples/{path.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


# run.json keys the report never shows: ``updated`` is stamped at every write and
# ``invocations`` grows by one line per command, a finished rerun included.
_NOT_SHOWN = ("updated", "invocations")


def _shown_run(run_dir: Path) -> bytes | None:
    """run.json for the digest, read once: the keys the report never shows
    left out of its object, the rest with sorted keys (a rerun may write
    them in another order); its bytes as they are when it holds no JSON
    object; None when there is none."""
    got = manifest_file(run_dir)
    if got.data is None:
        return _read(got.path)
    return json.dumps({k: v for k, v in got.data.items() if k not in _NOT_SHOWN}, sort_keys=True).encode()


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def recorded_page_digest(report: Path) -> str | None:
    """The digest recorded in an existing report (None: none, or no report)."""
    try:
        with open(report, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    found = _FINGERPRINT.search(head)
    return found.group(1).decode() if found else None
