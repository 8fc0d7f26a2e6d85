"""The run-folder lock: one process at a time writes a run folder.

    lock = RunLock(folder)          # <folder>/.lock
    lock.acquire()                  # or: with RunLock(folder): ...
    ...
    lock.release()

``acquire`` takes an exclusive ``flock`` on ``<folder>/.lock`` (never
blocking) and writes the holder into it as JSON (``pid``, ``host``,
``since``, ``command``, and its lease: ``token``, ``lease_s``,
``renewed``).  The kernel drops a ``flock`` when its process dies, however
it dies, so on one machine:

- a folder held by a live process raises :class:`RunFolderLocked` (a
  ``UserError``: exit 2) naming the holder (pid, host, since when);
- a lock file left by a killed process (still naming it) is taken over,
  and ``acquire`` returns that stale holder (``note`` says so, for the
  caller to print).

Across machines a shared filesystem may not carry a ``flock`` (Lustre
mounted ``localflock``; NFS's lock state is lost with a crashed client),
so the holder also keeps a **lease**: every ``lease_s`` seconds (30;
``AVHB_LOCK_LEASE_S``) a thread rewrites ``renewed`` (the holder's clock)
in the lock file and ``fsync``\\ s it, so that other machines see it.  A
record from another host is

- refused while its lease is fresh (renewed less than ``EXPIRY_PERIODS``
  = 4 periods ago, by this machine's clock);
- taken over once it is older, but only after watching it for
  ``WATCH_PERIODS`` = 1.5 periods without a renewal: a holder that is alive
  renews within any one period, so a clock on this machine running ahead of
  the holder's (which makes a live lease look old) is caught and named
  instead of trusted.  A clock running *behind* only delays a takeover.
  Clocks within 3 periods (90 s) of each other never make a difference;
  cluster nodes run NTP (munge, SLURM's authentication, already refuses
  skews of 5 minutes);
- refused when it carries no lease (no ``renewed``: nothing says whether
  its holder is alive): delete the lock file once that run is known to be
  gone.

A holder whose lease was taken over while it was stopped (a suspended job)
finds another token in the file at its next renewal: it stops renewing,
leaves the file to the new holder, and calls ``on_lost`` (the evaluator
stops the run there).

``holder(folder)`` reads who holds (or last held) a folder without taking
anything.  The lock is released on ``release`` (the file is emptied, not
deleted: deleting a locked file lets a third process lock a new inode).
The host is ``socket.gethostname()``, read at each ``acquire``.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from avhb.errors import EnvironmentFailure, UserError

LOCK_NAME = ".lock"
LEASE_S = 30.0  # how often a holder renews its lease (AVHB_LOCK_LEASE_S overrides)
EXPIRY_PERIODS = 4.0  # a lease not renewed for this many periods is expired ...
WATCH_PERIODS = 1.5  # ... once it was also seen unchanged for this many


def lease_period() -> float:
    """The lease period this process renews at (``AVHB_LOCK_LEASE_S``, else 30 s)."""
    text = os.environ.get("AVHB_LOCK_LEASE_S", "").strip()
    if not text:
        return LEASE_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:  # NaN fails too
        raise UserError(f"AVHB_LOCK_LEASE_S={text!r}: give the lock's lease period in seconds, e.g. 30")
    return value


@dataclass(frozen=True)
class LockHolder:
    pid: int
    host: str
    since: float  # UNIX time the lock was taken
    command: list[str] = field(default_factory=list)
    token: str = ""  # this holding's id (a takeover writes another)
    lease_s: float | None = None  # the holder's renewal period; None: written without a lease
    renewed: float | None = None  # UNIX time of the last renewal, on the holder's clock

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since)) if self.since else "?"
        return f"pid {self.pid} on {self.host} (since {when})"

    def lease_age(self, now: float | None = None) -> float | None:
        """Seconds since the last renewal, by this machine's clock."""
        return None if self.renewed is None else (time.time() if now is None else now) - self.renewed


class RunFolderLocked(UserError):
    """Another live process holds the run folder."""

    def __init__(self, folder: Path, holder: LockHolder | None):
        who = holder.describe() if holder else "another process"
        age = holder.lease_age() if holder else None
        lease = (f", its lease renewed {max(age, 0):.0f} s ago"
                 if age is not None and holder is not None and holder.host != socket.gethostname() else "")
        super().__init__(f"{folder} is in use by {who}{lease}: wait for it to finish, or use another --output-dir")
        self.holder = holder


def holder(folder: Path) -> LockHolder | None:
    """Who holds, or last held, ``folder``'s lock (None: nobody recorded)."""
    return _parse(_read(Path(folder) / LOCK_NAME))


def _read(path: Path) -> str:
    """The lock file as another machine sees it now (a fresh open: NFS
    revalidates its cache on open)."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def _current(path: Path) -> LockHolder | None:
    """The record in the lock file now; a non-empty file that does not
    parse is read again a few times (a renewal being written on another
    machine) before it counts as no record."""
    for attempt in range(4):
        text = _read(path)
        record = _parse(text)
        if record is not None or not text.strip():
            return record
        time.sleep(0.05 * (attempt + 1))
    return None


def _number(value: Any) -> float | None:  # a JSON value (float() refuses what is not a number)
    return None if value is None else float(value)


def _parse(text: str) -> LockHolder | None:
    try:
        data = json.loads(text)
        return LockHolder(int(data["pid"]), str(data["host"]), float(data.get("since") or 0),
                          [str(c) for c in data.get("command") or []], str(data.get("token") or ""),
                          _number(data.get("lease_s")), _number(data.get("renewed")))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


class RunLock:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self._fd: int | None = None
        self._record: dict | None = None
        self._size = 0  # bytes of the record written (a renewal pads to it: never a shorter, torn file)
        self._io = threading.Lock()  # the renewer thread and release() share the descriptor
        self.note: str | None = None  # what acquire took over, for the caller to say
        self.lost: LockHolder | None = None  # who took the lease over while this process held it
        self.on_lost: Callable[[LockHolder], None] | None = None  # called from the renewer thread

    @property
    def held(self) -> bool:
        return self._fd is not None

    @property
    def lease_s(self) -> float:
        """The lease this process holds the lock under (once acquired)."""
        assert self._record is not None, "the lock is not held"
        return float(self._record["lease_s"])

    def acquire(self) -> LockHolder | None:
        """Take the lock; returns the stale holder taken over (None when the
        folder was free; ``note`` then says what was taken over).  Raises
        :class:`RunFolderLocked`, or ``UserError`` for another machine's
        record without a lease or with a lease that is still renewed."""
        import fcntl

        if self._fd is not None:
            return None
        period = lease_period()
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
        previous = _current(self.path)
        me = socket.gethostname()
        self.note = None
        try:
            if previous is not None and previous.host != me:
                self.note = self._expired(previous)
            elif previous is not None and previous.pid != os.getpid():
                self.note = f"took over the lock of {previous.describe()}, which is no longer running"
        except BaseException:
            os.close(fd)
            raise
        if previous is not None and previous.pid == os.getpid() and previous.host == me:
            previous = None
        now = time.time()
        self._record = {**asdict(LockHolder(os.getpid(), me, now, list(sys.argv), uuid.uuid4().hex, period, now))}
        data = json.dumps(self._record).encode()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
            os.fsync(fd)
        except OSError as exc:  # a full disk: one line, as every writer of the run folder (closing drops the flock)
            os.close(fd)
            raise EnvironmentFailure(f"cannot write {self.path} (the run folder's lock): {exc.strerror or exc}; the "
                                     "run's finished work is kept, re-run the command to resume") from None
        self._size = len(data)
        self._fd, self.lost = fd, None
        _renewer.add(self)
        return previous

    def _expired(self, previous: LockHolder) -> str:
        """The takeover note for another machine's expired lease; raises
        while it is alive (module docstring)."""
        if previous.lease_s is None or previous.renewed is None:
            raise UserError(f"{self.folder} is recorded as in use by {previous.describe()}, another machine; if that "
                            f"run is gone, delete {self.path}")
        age = previous.lease_age() or 0.0
        if age <= EXPIRY_PERIODS * previous.lease_s:
            raise RunFolderLocked(self.folder, previous)
        watch = WATCH_PERIODS * previous.lease_s
        deadline = time.monotonic() + watch
        while time.monotonic() < deadline:
            time.sleep(min(1.0, previous.lease_s / 5))
            now = _current(self.path)
            if now is None:
                return f"{previous.describe()} released the lock while it was watched"
            if now.token != previous.token:
                raise RunFolderLocked(self.folder, now)
            if now.renewed != previous.renewed:
                raise UserError(
                    f"{self.folder} is in use by {previous.describe()}: its lease (every {previous.lease_s:g} s) was "
                    f"renewed while it was watched, though by this machine's clock its last renewal was {age:.0f} s "
                    f"ago: the clocks of {socket.gethostname()} and {previous.host} differ by about {age:.0f} s "
                    "(sync them, e.g. NTP); wait for that run to finish")
        return (f"took over the lock of {previous.describe()}, another machine: its lease (every "
                f"{previous.lease_s:g} s) was last renewed {age:.0f} s ago and not while it was watched for "
                f"{watch:g} s, so that run is gone")

    def renew(self) -> None:
        """Rewrite ``renewed`` (the renewer thread calls this every lease
        period); finds a takeover (another token in the file) instead."""
        with self._io:
            if self._fd is None or self._record is None:
                return
            now = _current(self.path)
            if now is not None and now.token and now.token != self._record["token"]:
                self.lost = now
                _renewer.remove(self)
            else:
                self._record["renewed"] = time.time()
                data = json.dumps(self._record).encode()
                data += b" " * max(0, self._size - len(data))
                try:
                    os.pwrite(self._fd, data, 0)
                    os.fsync(self._fd)
                except OSError:
                    return  # a full or unreachable filesystem: the next period tries again
                self._size = len(data)
                return
        if self.on_lost is not None:
            self.on_lost(self.lost)

    def release(self) -> None:
        _renewer.remove(self)
        with self._io:
            if self._fd is None:
                return
            fd, self._fd = self._fd, None
            try:
                if self.lost is None:  # a lease taken over is the new holder's file
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


class _Renewer:
    """One daemon thread renewing every lock this process holds, each at
    its own lease period."""

    def __init__(self) -> None:
        self._due: dict[RunLock, float] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, lock: RunLock) -> None:
        with self._wake:
            self._due[lock] = time.monotonic() + lock.lease_s
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="avhb-lock-lease", daemon=True)
                self._thread.start()
            self._wake.notify()

    def remove(self, lock: RunLock) -> None:
        with self._wake:
            self._due.pop(lock, None)

    def _loop(self) -> None:
        while True:
            with self._wake:
                now = time.monotonic()
                due = [lock for lock, at in self._due.items() if at <= now]
                for lock in due:
                    self._due[lock] = now + lock.lease_s
                if not due:
                    self._wake.wait(timeout=min(self._due.values()) - now if self._due else None)
                    continue
            for lock in due:
                lock.renew()


_renewer = _Renewer()
