"""Taking the run folder's lock (avhb/runfolder/lock.py, ``RunLock.acquire``):
each failure is one line naming the lock file (it cannot be created, the
file system cannot lock), the file is the owner's to write and everyone's
to read, and a record of this very process is no stale holder."""
from __future__ import annotations

import errno
import json
import os
import socket
import stat
import subprocess
import time

import pytest

from avhb.errors import EnvironmentFailure
from avhb.runfolder import lock as lock_module
from avhb.runfolder.lock import RunLock


def test_the_lock_file_is_the_owners_to_write_and_everyones_to_read(tmp_path):
    old = os.umask(0)
    try:
        lock = RunLock(tmp_path)
        lock.acquire()
        assert stat.S_IMODE(os.stat(tmp_path / ".lock").st_mode) == 0o644
        lock.release()
    finally:
        os.umask(old)


def test_a_lock_that_cannot_be_created_is_one_line(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(ro)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        with pytest.raises(EnvironmentFailure) as failed:
            RunLock(ro).acquire()
        assert str(failed.value) == f"{ro / '.lock'}: cannot create the run folder's lock: Read-only file system"
    finally:
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)


def test_a_file_system_that_cannot_lock_is_one_line(tmp_path, monkeypatch):
    import fcntl

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    lock = RunLock(tmp_path)
    with pytest.raises(EnvironmentFailure) as failed:
        lock.acquire()
    assert str(failed.value) == f"{tmp_path / '.lock'}: cannot lock: No locks available"
    assert not lock.held


def test_a_record_of_this_process_is_no_stale_holder(tmp_path):
    record = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
    (tmp_path / ".lock").write_text(json.dumps(record))
    lock = RunLock(tmp_path)
    assert lock.acquire() is None and lock.note is None
    lock.release()
    # another process's record on this machine is one (a killed run's)
    (tmp_path / ".lock").write_text(json.dumps({**record, "pid": 2 ** 22 + 17}))
    lock = RunLock(tmp_path)
    stale = lock.acquire()
    assert stale is not None and stale.pid == 2 ** 22 + 17 and "no longer running" in lock.note
    lock.release()
    assert lock_module.holder(tmp_path) is None
