"""A media file's content fingerprint: what every call key and media-cache
key holds for a video, audio or image file (one mechanism for all three).

**Fingerprint** = the first 128 bits (32 hex digits) of SHA-256 over the
file's size (8 bytes, little-endian) and its *whole* content.  Whole, not
sampled: a hash of a few blocks cannot see a corrected file of the same
size whose changes lie elsewhere (a fixed frame, a re-muxed audio track
with the same length), and the journal would answer from the old file.
SHA-256, a collision-resistant hash that CPUs with SHA extensions compute
faster than BLAKE2b (benchmarks/README.md).  It ignores the path and the
modification time, so a moved or re-downloaded copy keeps its fingerprint.

**Computed once per file**, cached under the file's *stat key*: (absolute
path, device, inode, size, mtime_ns, ctime_ns).  Which fields to trust:
size and mtime are restored by ``cp -p``, ``rsync -t``, ``tar`` and
``os.utime``, so a corrected file can carry the old ones; the inode is
kept by an in-place rewrite and reused after a delete and create; the
ctime is set by the kernel on every write, rename or metadata change and
cannot be set back from user space.  The ctime makes the stat key
trustworthy, the other fields make it precise.  A file whose ctime is
within ``RACY_SECONDS`` of the moment it is hashed is not cached at all (a
write in the same clock tick could leave the ctime unchanged; git treats
its index the same way), so a file being written is hashed again at each
look until it settles.

Two levels:

* in this process: path -> (stat key, fingerprint); each look is one
  ``os.stat``, and a file is read at most once while its stat key holds;
* on disk: ``<cache>/fingerprints/<k[:2]>/<k>.json`` (``<cache>`` is
  :func:`avhb.paths.cache_dir`, ``k`` a hash of the stat key), holding the
  stat key and the fingerprint, written atomically; shared by every run on
  the machine, so resuming a run over 2-hour videos reads no video.  Files
  under ``PERSIST_MIN_BYTES`` (64 KiB) are not written there: reading an
  entry costs about as much CPU as hashing a file that small
  (benchmarks/README.md).  An entry whose stat key no longer matches is
  never looked up again; a corrupt one is a miss; the folder can be
  deleted at any time.

Cold, a file costs one sequential read of its bytes; warm, one ``stat``
and one small read (``benchmarks/resume_keys.py`` measures both on a
1,000-video run).
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path

from avhb.atomic import write_atomic
from avhb.errors import EnvironmentFailure

RACY_SECONDS = 2.0
PERSIST_MIN_BYTES = 64 * 1024
READ_BLOCK = 1 << 20

_memo: dict[str, tuple[tuple[int, ...], str]] = {}
_busy: dict[str, threading.Lock] = {}
_guard = threading.Lock()
reads = 0  # whole-file reads done by this process (for tests and benchmarks)


def stat_key(path: str) -> tuple[int, ...]:
    """(device, inode, size, mtime_ns, ctime_ns) of ``path`` (OSError when
    it cannot be read)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def fingerprint(path: str) -> str:
    """The file's content fingerprint (module docstring); ``SampleError``
    when it is missing, not a regular file, or empty."""
    from avhb.media._open import check_file

    path = os.path.abspath(str(path))
    try:
        key = stat_key(path)
    except OSError:
        key = None
    memo = _memo.get(path)
    if key is not None and memo is not None and memo[0] == key:
        return memo[1]
    check_file(path)
    with _guard:
        lock = _busy.setdefault(path, threading.Lock())
    with lock:  # one thread hashes a file; the others wait for its answer
        key = stat_key(path)
        memo = _memo.get(path)
        if memo is not None and memo[0] == key:
            return memo[1]
        stored = _load(path, key)
        if stored is not None:
            _memo[path] = (key, stored)
            return stored
        started = time.time()
        value = _hash_file(path)
        if stat_key(path) != key:  # written while it was read: nothing is cached
            return value
        if started - key[4] / 1e9 >= RACY_SECONDS:
            _memo[path] = (key, value)
            if key[2] >= PERSIST_MIN_BYTES:
                _store(path, key, value)
        return value


def known(path: str) -> bool:
    """Whether :func:`fingerprint` answers ``path`` from this process's
    memory (one ``stat``, no read)."""
    memo = _memo.get(os.path.abspath(str(path)))
    if memo is None:
        return False
    try:
        return memo[0] == stat_key(os.path.abspath(str(path)))
    except OSError:
        return False


def forget() -> None:
    """Drop this process's memory (the on-disk entries stay)."""
    _memo.clear()


def _hash_file(path: str) -> str:
    global reads
    size = os.path.getsize(path)
    h = hashlib.sha256(size.to_bytes(8, "little"))
    buf = bytearray(READ_BLOCK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(view[:n])
    reads += 1
    return h.hexdigest()[:32]


def store_dir() -> Path:
    from avhb.paths import cache_dir

    return cache_dir() / "fingerprints"


def _entry(path: str, key: tuple[int, ...]) -> tuple[Path, list]:
    record = [path, *key]
    name = hashlib.blake2b(json.dumps(record).encode(), digest_size=16).hexdigest()
    return store_dir() / name[:2] / f"{name}.json", record


def _load(path: str, key: tuple[int, ...]) -> str | None:
    if key[2] < PERSIST_MIN_BYTES:
        return None
    entry, record = _entry(path, key)
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("stat") != record or not isinstance(data.get("fingerprint"), str):
        return None
    return data["fingerprint"]


def _store(path: str, key: tuple[int, ...], value: str) -> None:
    """Write the entry atomically; a cache that cannot be written is only
    a slower next run."""
    entry, record = _entry(path, key)
    try:
        write_atomic(entry, lambda fh: json.dump({"stat": record, "fingerprint": value}, fh), durable=False)
    except EnvironmentFailure:
        pass
