"""The run's append-only journal: what resume and re-scoring read.

One JSON object per line in ``journal/<kind>.jsonl`` (kinds: ``responses``,
``judges``).  Each line is written whole and flushed to the OS at once, so a
SIGKILL loses at most the line being written (a torn last line is skipped on
reading); ``fsync`` runs at most every ``fsync_interval`` seconds and on
close, which bounds what a power cut can lose without paying one fsync per
sample.  In memory: an index of byte offsets (:class:`avhb.runfolder.hash_index.HashIndex`,
about 8 bytes a call), the entries stay on disk.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator


from avhb.atomic import write_atomic
from avhb.errors import EnvironmentFailure
from avhb.redact import redacted_json
from avhb.runfolder.hash_index import HashIndex, key_hash

MODEL_CALLS = "responses"  # the model's calls' kind (judges ask under "judges": avhb.score.judges)


def kind_file(folder: Path, kind: str) -> Path:
    """``journal/<kind>.jsonl`` in the journal folder ``folder``."""
    return Path(folder) / f"{kind}.jsonl"


def entries(path: Path) -> Iterator[dict[str, Any]]:
    """Every entry of one journal file in the order written (a key retried
    has several); a torn line of a killed run is skipped, and a file not
    there has none."""
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return
    with fh:
        for line in fh:
            entry = _entry(line)
            if entry is not None:
                yield entry


def _entry(line: bytes) -> dict[str, Any] | None:
    """A journal line's entry: a JSON object with a string ``key``; None
    for anything else (a torn write from a killed run)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) and isinstance(entry.get("key"), str) else None


class Journal:
    """``get`` / ``put`` over the journal files.  What is kept in memory is
    an index, key -> the byte offset of the key's last line, not the
    entries: an entry is read back (one ``pread``) when it is asked for and
    its full key compared, so a million calls' journal costs about 8 MB
    (:class:`HashIndex`), not its size in Python objects."""

    def __init__(self, folder: Path, fsync_interval: float = 0.2):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.fsync_interval = fsync_interval
        self._index: dict[str, HashIndex] = {}  # kind -> where its keys' lines start
        self._files: dict[str, Any] = {}
        self._ends: dict[str, int] = {}  # where the next line of a kind's file starts
        self._readers: dict[str, int] = {}  # read-only descriptors
        self._last_sync = time.monotonic()
        self._failed = False

    @staticmethod
    def merge(target: Path, sources: list[Path]) -> "JournalUnion":
        """Write the union of the journal folders ``sources`` into the
        journal folder ``target`` (``avhb merge``: the shards' journals),
        each key once (:func:`_merge`)."""
        return _merge(Path(target), [Path(s) for s in sources])

    def _path(self, kind: str) -> Path:
        return kind_file(self.folder, kind)

    def _load(self, kind: str) -> HashIndex:
        if kind not in self._index:
            index = HashIndex()
            path = self._path(kind)
            if path.is_file():  # a regular file: a device (/dev/full) has no entries, only bytes
                with open(path, "rb") as fh:
                    offset = 0
                    for line in fh:
                        record = _entry(line)
                        if record is not None:
                            index.add(key_hash(record["key"]), offset)
                        offset += len(line)
            self._index[kind] = index
        return self._index[kind]

    def _read(self, kind: str, offset: int) -> dict[str, Any] | None:
        fd = self._readers.get(kind)
        if fd is None:
            fd = self._readers[kind] = os.open(self._path(kind), os.O_RDONLY)
        chunk, size = b"", 4096
        while True:  # one line from offset
            chunk = os.pread(fd, size, offset)
            end = chunk.find(b"\n")
            if end >= 0 or len(chunk) < size:
                line = chunk if end < 0 else chunk[:end]
                break
            size *= 4
        try:
            record = json.loads(line)
        except ValueError:
            return None
        return record if isinstance(record, dict) else None

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        for offset in reversed(self._load(kind).values_of(key_hash(key))):  # newest first; a hash two keys
            # share: the line's key decides
            entry = self._read(kind, offset)
            if entry is not None and entry.get("key") == key:
                return entry
        return None

    def holds(self, kind: str) -> bool:
        """Whether the journal has any entry of ``kind``."""
        return len(self._load(kind)) > 0

    def all(self, kind: str) -> dict[str, dict[str, Any]]:
        """Every entry of a kind, its last line per key (read from disk: for
        tools and tests)."""
        out = {}
        for offset in sorted(self._load(kind).values()):
            entry = self._read(kind, offset)
            if entry is not None and isinstance(entry.get("key"), str):
                out[entry["key"]] = entry
        return out

    def put(self, kind: str, key: str, record: dict[str, Any]) -> dict[str, Any]:
        """Append one entry (redacted); returns the entry as kept."""
        text, record = redacted_json({"key": key, **record}, default=str)  # = redact(), then json.dumps()
        index = self._load(kind)
        line = (text + "\n").encode()
        fh = self._files.get(kind)
        try:
            if fh is None:
                path = self._path(kind)
                fh = open(path, "ab", buffering=0)  # each line one write to the OS, no buffer to flush
                end = path.stat().st_size
                # a torn last line must not swallow the next record
                if end and not _ends_with_newline(path):
                    _write_all(fh, b"\n")
                    end += 1
                self._files[kind] = fh
                self._ends[kind] = end
            _write_all(fh, line)
            now = time.monotonic()
            if now - self._last_sync >= self.fsync_interval:
                self.sync()
        except OSError as exc:
            self._failed = True
            raise EnvironmentFailure(f"cannot write the journal {self._path(kind)}: {exc.strerror or exc}; the run's "
                                     "finished work is kept, re-run the command to resume") from None
        index.add(key_hash(key), self._ends[kind])
        self._ends[kind] += len(line)
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
        for fd in self._readers.values():
            os.close(fd)
        self._readers.clear()


def _write_all(fh: Any, data: bytes) -> None:
    """``data`` written whole to the unbuffered file ``fh`` (a short write
    writes the rest)."""
    view = memoryview(data)
    while view:
        view = view[fh.write(view):]


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


@dataclass
class JournalUnion:
    """What :meth:`Journal.merge` wrote: entries per journal file, and per
    file the calls that repeat a key another source also holds (the same
    request asked in two shards: a judge question two shards' samples share)
    with what they cost."""

    entries: dict[str, int] = field(default_factory=dict)
    repeated: dict[str, int] = field(default_factory=dict)
    repeated_cost: dict[str, float] = field(default_factory=dict)


def _last_lines(path: Path) -> dict[str, bytes]:
    """key -> the key's last whole line in the journal file ``path``, as
    :class:`Journal` reads it (a call that failed and was retried on resume
    has two; a torn line of a killed run is skipped)."""
    out: dict[str, bytes] = {}
    with open(path, "rb") as src:
        for line in src:
            entry = _entry(line)
            if entry is not None:
                out[entry["key"]] = line if line.endswith(b"\n") else line + b"\n"
    return out


def _merge(target: Path, sources: list[Path]) -> JournalUnion:
    """``target/<kind>.jsonl`` = the sources' entries (journal folders, in
    order), each key once: its last line in the first source that holds it.
    Each file is written atomically, so a killed merge leaves the old
    journal or the new one."""
    kinds = sorted({p.name for f in sources for p in Path(f).glob("*.jsonl")})
    union = JournalUnion()
    for kind in kinds:
        lines: dict[str, bytes] = {}
        repeated, cost = 0, 0.0
        for folder in sources:
            path = Path(folder) / kind
            if not path.is_file():
                continue
            for key, line in _last_lines(path).items():
                if key in lines:  # asked in an earlier source too: that source's answer is kept
                    repeated += 1
                    cost += float(json.loads(line).get("cost") or 0.0)
                else:
                    lines[key] = line
        write_atomic(Path(target) / kind, lambda fh: fh.writelines(lines.values()), binary=True)
        union.entries[kind] = len(lines)
        if repeated:
            union.repeated[kind], union.repeated_cost[kind] = repeated, round(cost, 6)
    return union

