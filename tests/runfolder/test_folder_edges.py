"""The run folder's edges (avhb/runfolder/folder.py), each a case its mutation
run left open: run.json's and results.json's exact text, values JSON
cannot hold, the folders a failed command made and removes (and those it
did not make, which it keeps, with their lock), a folder the user cannot
write, a run.json that is not JSON, temp files that cannot be removed,
the samples line's optional keys and the fields of a document it keeps."""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from avhb.errors import EnvironmentFailure, UserError
from avhb.runfolder.folder import RunFolder, _public_doc, _write_sample_lines
from avhb.score.metric import SampleRecord


def test_run_json_is_indented_by_two_and_keeps_text_outside_ascii(tmp_path):
    folder = RunFolder(tmp_path / "run")
    data = {"tasks": {"curve_ja_JP": {"note": "日本語 ñ"}}, "n": [1, 2]}
    folder.write_run(data)
    folder.write_results(data)
    for name in ("run.json", "results.json"):
        assert (tmp_path / "run" / name).read_text(encoding="utf-8") == json.dumps(data, indent=2, ensure_ascii=False)


@dataclass
class _Point:
    x: int


def test_values_json_cannot_hold_are_written_as_lists_or_text(tmp_path):
    folder = RunFolder(tmp_path / "run")
    folder.write_results({"scores": np.array([1.5, 2.0]), "path": Path("/data/x"), "point": _Point(3)})
    assert json.loads((tmp_path / "run" / "results.json").read_text()) == {
        "scores": [1.5, 2.0], "path": "/data/x", "point": {"x": 3}}


def test_a_failed_command_removes_the_folders_it_made_and_no_other(tmp_path):
    parent = tmp_path / "a" / "b"
    folder = RunFolder(parent / "run")  # a, a/b and a/b/run are made for it (parents too)
    folder.open()
    (parent / "run" / "journal").mkdir()  # empty folders count as nothing
    (parent / "run" / "samples" / "x").mkdir(parents=True)
    folder.close()
    assert not (tmp_path / "a").exists()
    # a folder that was there before the command is kept, with its lock file (only released)
    existing = tmp_path / "mine"
    existing.mkdir()
    folder = RunFolder(existing)
    folder.open()
    folder.close()
    assert existing.is_dir() and (existing / ".lock").is_file() and (existing / ".lock").read_text() == ""
    # a made folder that holds a file is kept whole, lock file included
    folder = RunFolder(tmp_path / "c" / "run")
    folder.open()
    (tmp_path / "c" / "run" / "results.json").write_text("{}")
    folder.close()
    assert (tmp_path / "c" / "run" / "results.json").is_file() and (tmp_path / "c" / "run" / ".lock").is_file()


def test_a_made_parent_that_gained_a_file_is_kept(tmp_path):
    folder = RunFolder(tmp_path / "p" / "q" / "run")
    folder.open()
    (tmp_path / "p" / "other.txt").write_text("someone else's")
    folder.close()
    assert not (tmp_path / "p" / "q").exists() and (tmp_path / "p" / "other.txt").is_file()


def test_nothing_but_the_lock_and_empty_folders_is_nothing(tmp_path):
    from avhb.runfolder.folder import _holds_nothing

    root = tmp_path / "run"
    (root / "journal").mkdir(parents=True)
    (root / ".lock").write_text("")
    assert _holds_nothing(root)
    (root / "journal" / ".lock").write_text("")  # a lock file's name elsewhere is a file like any other
    assert not _holds_nothing(root)
    (root / "journal" / ".lock").unlink()
    (root / "a").write_text("x")
    assert not _holds_nothing(root)


def test_a_lock_file_that_cannot_be_removed_is_left(tmp_path, monkeypatch):
    folder = RunFolder(tmp_path / "made" / "run")
    folder.open()
    real = Path.unlink

    def refuse(self, *args, **kwargs):
        if self.name == ".lock":
            raise PermissionError(13, "Permission denied")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "unlink", refuse)
    folder.close()  # no error: the lock is released, the folder kept
    assert (tmp_path / "made" / "run" / ".lock").is_file() and not folder.lock.held


def test_a_missing_parent_is_made_and_an_unmakeable_folder_is_one_line(tmp_path):
    RunFolder(tmp_path / "x" / "y" / "run")
    assert (tmp_path / "x" / "y" / "run").is_dir()
    target = Path("/proc/avhb-no-such-place/run")
    try:
        target.mkdir(parents=True)
    except OSError as exc:
        why = exc.strerror
    with pytest.raises(EnvironmentFailure) as failed:
        RunFolder(target)
    assert str(failed.value) == f"--output-dir {target}: cannot create it: {why}"


def test_a_folder_that_cannot_be_written_is_one_line(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(ro)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()} (root can write any folder otherwise)")
    try:
        (ro / "run").mkdir()
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True, capture_output=True)
        with pytest.raises(EnvironmentFailure, match=r"--output-dir .*/ro/run: not writable by this user"):
            RunFolder(ro / "run")
    finally:
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)


def test_a_run_json_that_is_not_json_reads_as_none(tmp_path):
    """A re-run reads a torn run.json as none (it starts afresh); a reader
    that needs the run (avhb score, pack commands) refuses it in one line."""
    from avhb.runfolder.manifest import read_manifest, recorded_manifest
    from avhb.runfolder.results import RunResults

    RunFolder(tmp_path / "run")
    (tmp_path / "run" / "run.json").write_text('{"tasks": ')
    assert recorded_manifest(tmp_path / "run") is None and RunResults.read(tmp_path / "run") is None
    with pytest.raises(UserError, match=r"run/run.json is not valid JSON$"):
        read_manifest(tmp_path / "run")
    (tmp_path / "run" / "run.json").write_text('["a list"]')
    assert recorded_manifest(tmp_path / "run") is None


def test_a_temp_file_that_cannot_be_removed_is_left(tmp_path, monkeypatch):
    folder = RunFolder(tmp_path / "run")
    (tmp_path / "run" / ".results.json.1.2.tmp").write_text("half")
    (tmp_path / "run" / "samples").mkdir()
    (tmp_path / "run" / "samples" / ".t.jsonl.1.2.tmp").write_text("half")

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "unlink", refuse)
    assert folder.clean_temp_files() == []
    monkeypatch.undo()
    assert sorted(p.name for p in folder.clean_temp_files()) == [".results.json.1.2.tmp", ".t.jsonl.1.2.tmp"]


class _Lines:
    def __init__(self):
        self.text = ""

    def write(self, text):
        self.text += text


def _line(record: SampleRecord) -> dict:
    out = _Lines()
    _write_sample_lines(out, [record])
    return json.loads(out.text)


def test_trajectory_and_outputs_only_when_a_sample_has_them():
    plain = _line(SampleRecord(id="1", doc={}))
    assert "trajectory" not in plain and "outputs" not in plain
    full = _line(SampleRecord(id="2", doc={}, trajectory=[{"step": 1}], outputs={"loglikelihoods": [[-1.0, True]]}))
    assert full["trajectory"] == [{"step": 1}] and full["outputs"] == {"loglikelihoods": [[-1.0, True]]}


def test_a_documents_fields_kept_in_its_line():
    doc = {"audio": b"RIFF....", "frames": np.zeros((2, 2)), "path": Path("/x.mp4"), "q": "x" * 20000,
           "long": "y" * 20001, "n": 3, "tags": ["a"], "none": None}
    kept = _public_doc(doc)
    assert list(kept) == ["path", "q", "long", "n", "tags", "none"]  # bytes and arrays left out, the rest in order
    assert kept["q"] == "x" * 20000 and kept["long"] == "y" * 20000 + "…" and kept["path"] == Path("/x.mp4")
