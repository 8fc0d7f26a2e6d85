"""The run's append-only journal: what resume and re-scoring read.

One JSON object per line in ``journal/<kind>.jsonl`` (kinds: ``responses``,
``judges``).  Each line is written whole and flushed to the OS at once, so a
SIGKILL loses at most the line being written (a torn last line is skipped on
reading); ``fsync`` runs at most every ``fsync_interval`` seconds and on
close, which bounds what a power cut can lose without paying one fsync per
sample.

Entries are redacted (:func:`avhb.redact.redact`) before they are kept or
written, as the samples file is: a reply that echoes an API key never
reaches the disk.  A failed write (a full disk) raises ``EnvironmentFailure``
(one line, exit 1); the lines already written stay valid and a re-run
resumes from them.  After a failed write, ``close`` releases the files
without raising again.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from avhb.errors import EnvironmentFailure
from avhb.redact import redact


class Journal:
    def __init__(self, folder: Path, fsync_interval: float = 0.2):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.fsync_interval = fsync_interval
        self._entries: dict[str, dict[str, dict[str, Any]]] = {}
        self._files: dict[str, Any] = {}
        self._last_sync = time.monotonic()
        self._failed = False

    def _load(self, kind: str) -> dict[str, dict[str, Any]]:
        if kind not in self._entries:
            entries: dict[str, dict[str, Any]] = {}
            path = self.folder / f"{kind}.jsonl"
            if path.exists():
                with open(path, "rb") as fh:
                    for line in fh:
                        try:
                            record = json.loads(line)
                        except ValueError:
                            continue  # torn write from a killed run
                        if isinstance(record, dict) and "key" in record:
                            entries[record["key"]] = record
            self._entries[kind] = entries
        return self._entries[kind]

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        return self._load(kind).get(key)

    def all(self, kind: str) -> dict[str, dict[str, Any]]:
        return self._load(kind)

    def put(self, kind: str, key: str, record: dict[str, Any]) -> dict[str, Any]:
        """Append one entry (redacted); returns the entry as kept."""
        record = redact({"key": key, **record})
        path = self.folder / f"{kind}.jsonl"
        line = json.dumps(record, ensure_ascii=False, default=str).encode() + b"\n"
        try:
            fh = self._files.get(kind)
            if fh is None:
                fh = open(path, "ab")
                self._files[kind] = fh
                # a torn last line must not swallow the next record
                if path.stat().st_size and not _ends_with_newline(path):
                    fh.write(b"\n")
            fh.write(line)
            fh.flush()
            now = time.monotonic()
            if now - self._last_sync >= self.fsync_interval:
                self.sync()
        except OSError as exc:
            self._failed = True
            raise EnvironmentFailure(f"cannot write the journal {path}: {exc.strerror or exc}; the run's finished "
                                     "work is kept, re-run the command to resume") from None
        self._load(kind)[key] = record
        return record

    def sync(self) -> None:
        for fh in self._files.values():
            os.fsync(fh.fileno())
        self._last_sync = time.monotonic()

    def close(self) -> None:
        """Sync and close; never raises after a failed write (the run is
        already stopping with that error)."""
        try:
            self.sync()
        except OSError as exc:
            if not self._failed:
                self._failed = True
                self._close_files()
                raise EnvironmentFailure(f"cannot write the journal in {self.folder}: {exc.strerror or exc}") from None
        self._close_files()

    def _close_files(self) -> None:
        for fh in self._files.values():
            try:
                fh.close()
            except OSError:
                pass  # the buffered bytes are lost with the disk that refused them
        self._files.clear()


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
