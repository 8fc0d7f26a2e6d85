"""A local Ray cluster dies with the avhb process that started it.

``--executor ray`` without an address starts a new local cluster from the
driver (``ray.init``).  Ray ties its head processes (``gcs_server``,
``raylet``, ...) to the driver with the kernel's parent-death signal, but
the raylet's own children, ``ray::DashboardAgent`` and
``ray::RuntimeEnvAgent`` (about 180 MB together), outlive a SIGKILLed
driver: they see the raylet die, then hang reporting it to the GCS, which
died too (Ray 2.60; ``include_dashboard=False`` still starts both agents).

So the driver also starts this reaper (:func:`start`), in a session of its
own, so that a kill of the driver's process group spares it:

* its stdin is a pipe whose other end only the driver holds, which the
  kernel closes however the driver ends (exit, SIGKILL, OOM);
* until then it records, every second, the driver's descendants (pid and
  start time, from ``/proc``);
* at end of file it sends SIGTERM to each recorded process still running
  with the same start time (a recycled pid is never hit), and SIGKILL a
  second later to those left.

Linux only (``/proc``); elsewhere no reaper is started.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

PROC = Path("/proc")
SCAN_S = 1.0
TERM_WAIT_S = 1.0


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a live process."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ... starttime is field 22
    return int(fields[1]), int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """pid -> start time of every live descendant of ``root``."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                children.setdefault(stat[0], []).append(int(entry.name))
                starts[int(entry.name)] = stat[1]
    out: dict[int, int] = {}
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        if pid not in out and pid in starts:
            out[pid] = starts[pid]
            stack.extend(children.get(pid, []))
    return out


def _alive(known: dict[int, int]) -> list[int]:
    return [pid for pid, start in known.items() if (_stat(pid) or (0, None))[1] == start]


def reap(known: dict[int, int]) -> list[int]:
    """SIGTERM, then SIGKILL, the recorded processes still running; returns them."""
    targets = _alive(known)
    for pid in targets:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + TERM_WAIT_S
    while time.monotonic() < deadline and _alive({p: known[p] for p in targets}):
        time.sleep(0.05)
    for pid in _alive({p: known[p] for p in targets}):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return targets


def watch(driver: int) -> None:
    me = os.getpid()
    known: dict[int, int] = {}
    while True:
        ready, _, _ = select.select([sys.stdin.fileno()], [], [], SCAN_S)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            break  # the driver is gone
        known.update(descendants(driver))
        known.pop(me, None)
    reap(known)


_started: subprocess.Popen | None = None


def start() -> subprocess.Popen | None:
    """The reaper of this process's descendants (once per process; None
    where there is no ``/proc``)."""
    global _started
    if _started is not None or not (PROC / str(os.getpid()) / "stat").exists():
        return _started
    _started = subprocess.Popen([sys.executable, "-m", "avhb.cluster.ray_reaper", str(os.getpid())],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    return _started


if __name__ == "__main__":
    watch(int(sys.argv[1]))
