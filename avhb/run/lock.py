"""The run-folder lock: one process at a time writes a run folder.

    lock = RunLock(folder)          # <folder>/.lock
    lock.acquire()                  # or: with RunLock(folder): ...
    ...
    lock.release()

``acquire`` takes an exclusive ``flock`` on ``<folder>/.lock`` (never
blocking) and writes the holder into it as JSON (``pid``, ``host``,
``since``, ``command``).  The kernel drops a ``flock`` when its process
dies, however it dies, so:

- a folder held by a live process raises :class:`RunFolderLocked` (a
  ``UserError``: exit 2) naming the holder (pid, host, since when);
- a lock file left by a killed process (still naming it) is taken over,
  and ``acquire`` returns that stale holder so the caller can say so;
- a holder recorded on *another host* is not taken over even when the
  ``flock`` is free (a shared filesystem may not carry locks across
  machines): remove the lock file once that run is known to be gone.

``holder(folder)`` reads who holds (or last held) a folder without taking
anything.  The lock is released on ``release`` (the file is emptied, not
deleted: deleting a locked file lets a third process lock a new inode).
"""
from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from avhb.errors import EnvironmentFailure, UserError

LOCK_NAME = ".lock"


@dataclass(frozen=True)
class LockHolder:
    pid: int
    host: str
    since: float  # UNIX time the lock was taken
    command: list[str] = field(default_factory=list)

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since)) if self.since else "?"
        return f"pid {self.pid} on {self.host} (since {when})"


class RunFolderLocked(UserError):
    """Another live process holds the run folder."""

    def __init__(self, folder: Path, holder: LockHolder | None):
        who = holder.describe() if holder else "another process"
        super().__init__(f"{folder} is in use by {who}: wait for it to finish, or use another --output-dir")
        self.holder = holder


def holder(folder: Path) -> LockHolder | None:
    """Who holds, or last held, ``folder``'s lock (None: nobody recorded)."""
    return _parse(_read(Path(folder) / LOCK_NAME))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _parse(text: str) -> LockHolder | None:
    try:
        data = json.loads(text)
        return LockHolder(int(data["pid"]), str(data["host"]), float(data.get("since") or 0),
                          [str(c) for c in data.get("command") or []])
    except (ValueError, KeyError, TypeError):
        return None


class RunLock:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> LockHolder | None:
        """Take the lock; returns the stale holder taken over (None when the
        folder was free).  Raises :class:`RunFolderLocked`."""
        import fcntl

        if self._fd is not None:
            return None
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise EnvironmentFailure(f"{self.path}: cannot create the run folder's lock: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunFolderLocked(self.folder, holder(self.folder)) from None
        except OSError as exc:
            os.close(fd)
            raise EnvironmentFailure(f"{self.path}: cannot lock: {exc.strerror or exc}") from None
        previous = _parse(os.pread(fd, 65536, 0).decode("utf-8", "replace"))
        me = socket.gethostname()
        if previous is not None and previous.host != me:
            os.close(fd)
            raise UserError(f"{self.folder} is recorded as in use by {previous.describe()}, another machine; if that "
                            f"run is gone, delete {self.path}")
        if previous is not None and previous.pid == os.getpid():
            previous = None
        info = LockHolder(os.getpid(), me, time.time(), list(sys.argv))
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(asdict(info)).encode(), 0)
        self._fd = fd
        return previous

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        finally:
            os.close(fd)  # closing drops the flock

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
