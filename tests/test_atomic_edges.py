"""The one atomic write's edges (avhb/atomic.py), each a case its mutation
run left open: durable by default (fsync before the rename; a cache
passes durable=False), missing folders made, a temp file that cannot be
opened, a rename that fails, an interrupt during the fsync, and a temp
file that cannot be removed after a failure -- the path is left as it
was and the failure is one line (EnvironmentFailure) or the interrupt
itself."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from avhb import atomic
from avhb.atomic import atomic_file, write_atomic
from avhb.errors import EnvironmentFailure


def _fsyncs(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: calls.append(fd) or real(fd))
    return calls


def test_durable_unless_asked_otherwise(tmp_path, monkeypatch):
    calls = _fsyncs(monkeypatch)
    write_atomic(tmp_path / "a.json", lambda fh: fh.write("{}"))
    assert len(calls) == 1
    write_atomic(tmp_path / "cache.json", lambda fh: fh.write("{}"), durable=False)
    with atomic_file(tmp_path / "b.jsonl") as fh:
        fh.write("x\n")
    with atomic_file(tmp_path / "c.jsonl", durable=False) as fh:
        fh.write("x\n")
    assert len(calls) == 2
    assert [(tmp_path / n).read_text() for n in ("a.json", "cache.json", "b.jsonl", "c.jsonl")] == ["{}", "{}", "x\n", "x\n"]


def test_missing_folders_are_made(tmp_path):
    write_atomic(tmp_path / "a" / "b" / "c.json", lambda fh: fh.write("1"))
    assert (tmp_path / "a" / "b" / "c.json").read_text() == "1"


def test_a_temp_file_that_cannot_be_opened_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(EnvironmentFailure, match=r"cannot write .*afile/out\.json: File exists; resume"):
        write_atomic(tmp_path / "afile" / "out.json", lambda fh: fh.write("1"), hint="resume")  # its folder is a file

    def no_more_files(*args, **kwargs):
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(atomic, "open", no_more_files, raising=False)
    with pytest.raises(EnvironmentFailure, match=r"cannot write .*out\.json: Too many open files$"):
        write_atomic(tmp_path / "out.json", lambda fh: fh.write("1"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_rename_that_fails_is_one_line_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "taken"
    target.mkdir()  # a folder where the file should go: the rename refuses
    with pytest.raises(EnvironmentFailure, match=r"cannot write .*taken: Is a directory"):
        write_atomic(target, lambda fh: fh.write("1"))
    assert target.is_dir() and sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_an_interrupt_during_the_fsync_is_raised_as_itself(tmp_path, monkeypatch):
    (tmp_path / "r.json").write_text("old")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "r.json", lambda fh: fh.write("new"))
    assert (tmp_path / "r.json").read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_temp_file_that_cannot_be_removed_after_a_failure_hides_nothing(tmp_path, monkeypatch):
    real = Path.unlink

    def refuse(self, *args, **kwargs):
        if self.name.endswith(".tmp"):
            raise PermissionError(13, "Permission denied")
        return real(self, *args, **kwargs)

    def full(fh):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "unlink", refuse)
    with pytest.raises(EnvironmentFailure, match="No space left on device"):
        write_atomic(tmp_path / "r.json", full)
