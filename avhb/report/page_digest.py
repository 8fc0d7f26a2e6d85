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

_HERE = os.path.dirname(os.path.abspath(__file__))
# the code that decides what a page shows: this package and redaction
_REPORT_CODE = [os.path.join(_HERE, f) for f in sorted(os.listdir(_HERE)) if f.endswith(".py")]
_REPORT_CODE.append(os.path.join(os.path.dirname(_HERE), "redact.py"))
_FINGERPRINT = re.compile(rb'<meta name="avhb-inputs" content="([0-9a-f]{64})">')


def page_digest(run_dir: Path, max_samples_per_task: int | None) -> str:
    """What the report shows is made of: run.json and results.json (bytes),
    the samples files (name, size, mtime), the cap, the report code."""
    from avhb.version import __version__

    h = hashlib.sha256(f"report-v1|{__version__}|{max_samples_per_task}".encode())
    for path in _REPORT_CODE:
        try:
            st = os.stat(path)
            h.update(f"|{os.path.basename(path)}:{st.st_mtime_ns}:{st.st_size}".encode())
        except OSError:
            h.update(b"|-")
    for name in ("run.json", "results.json"):
        try:
            raw = (run_dir / name).read_bytes()
        except OSError:
            h.update(f"|{name}:-".encode())
            continue
        if name == "run.json":
            raw = _without_stamp(raw)
        h.update(f"|{name}:".encode() + hashlib.sha256(raw).digest())
    try:
        entries = sorted((e.name, e.stat()) for e in os.scandir(run_dir / "samples") if e.name.endswith(".jsonl"))
    except OSError:
        entries = []
    for name, st in entries:
        h.update(f"|samples/{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


# run.json keys the report never shows: ``updated`` is stamped at every write and
# ``invocations`` grows by one line per command, a finished rerun included.
_NOT_SHOWN = ("updated", "invocations")


def _without_stamp(raw: bytes) -> bytes:
    """run.json's bytes for the digest: the keys the report never shows
    left out, the rest with sorted keys (a rerun may write them in another order)."""
    try:
        info = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(info, dict):
        return raw
    return json.dumps({k: v for k, v in info.items() if k not in _NOT_SHOWN}, sort_keys=True).encode()


def recorded_page_digest(report: Path) -> str | None:
    """The digest recorded in an existing report (None: none, or no report)."""
    try:
        with open(report, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    found = _FINGERPRINT.search(head)
    return found.group(1).decode() if found else None
