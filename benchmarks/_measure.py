"""Shared helpers for the benchmark scripts: run a command in a fresh
process and report wall time and peak RSS (of the child, via wait4)."""
from __future__ import annotations

import os
import statistics
import subprocess
import time
from dataclasses import dataclass


@dataclass
class Measurement:
    seconds: float
    peak_mb: float
    returncode: int
    cpu_seconds: float = 0.0  # user + system time of the child


def measure(cmd: list[str], env: dict | None = None, cwd: str | None = None) -> Measurement:
    import tempfile

    with tempfile.TemporaryFile() as stderr:  # a file, not a pipe: a chatty child cannot block on a full pipe
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            stderr.seek(0)
            err = stderr.read().decode(errors="replace")[-600:]
            print(f"  ! {' '.join(cmd[:4])}... exited {proc.returncode}: {err}")
    return Measurement(elapsed, usage.ru_maxrss / 1024, proc.returncode, usage.ru_utime + usage.ru_stime)


def median_of(n: int, cmd: list[str], before=None, **kw) -> Measurement:
    """Median of n fresh runs; ``before()`` is called before each (not timed)."""
    runs = []
    for _ in range(n):
        if before is not None:
            before()
        runs.append(measure(cmd, **kw))
    return Measurement(statistics.median(r.seconds for r in runs), statistics.median(r.peak_mb for r in runs),
                       max(r.returncode for r in runs), statistics.median(r.cpu_seconds for r in runs))


def ensure_venv(path: str, packages: list[str]) -> str | None:
    """A venv with ``packages`` at ``path``; returns its bin dir or None."""
    bin_dir = os.path.join(path, "bin")
    marker = os.path.join(path, ".avhb-ready")
    if os.path.exists(marker):
        return bin_dir
    print(f"  installing {' '.join(packages)} into {path} (once)...")
    if subprocess.run(["python3", "-m", "venv", path]).returncode != 0:
        return None
    if subprocess.run([os.path.join(bin_dir, "pip"), "install", "-q", *packages]).returncode != 0:
        return None
    open(marker, "w").close()
    return bin_dir
