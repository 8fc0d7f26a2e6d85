"""The run's append-only journal: what resume and re-scoring read.

One JSON object per line in ``journal/<kind>.jsonl`` (kinds: ``responses``,
``judges``).  Each line is written whole and flushed to the OS at once, so a
SIGKILL loses at most the line being written (a torn last line is skipped on
reading); ``fsync`` runs at most every ``fsync_interval`` seconds and on
close, which bounds what a power cut can lose without paying one fsync per
sample.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


class Journal:
    def __init__(self, folder: Path, fsync_interval: float = 0.2):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.fsync_interval = fsync_interval
        self._entries: dict[str, dict[str, dict[str, Any]]] = {}
        self._files: dict[str, Any] = {}
        self._last_sync = time.monotonic()

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

    def put(self, kind: str, key: str, record: dict[str, Any]) -> None:
        record = {"key": key, **record}
        self._load(kind)[key] = record
        fh = self._files.get(kind)
        if fh is None:
            path = self.folder / f"{kind}.jsonl"
            fh = open(path, "ab")
            # a torn last line must not swallow the next record
            if path.stat().st_size and not _ends_with_newline(path):
                fh.write(b"\n")
            self._files[kind] = fh
        fh.write(json.dumps(record, ensure_ascii=False, default=str).encode() + b"\n")
        fh.flush()
        now = time.monotonic()
        if now - self._last_sync >= self.fsync_interval:
            self.sync()

    def sync(self) -> None:
        for fh in self._files.values():
            os.fsync(fh.fileno())
        self._last_sync = time.monotonic()

    def close(self) -> None:
        self.sync()
        for fh in self._files.values():
            fh.close()
        self._files.clear()


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
