"""``previous/<timestamp>/`` (avhb/runfolder/previous.py): what a re-run
that replaces results keeps, linked or copied (a full disk:
tests/runfolder/test_full_disk.py)."""
from __future__ import annotations

import json
import os
from datetime import datetime

from avhb.runfolder import previous
from avhb.runfolder.previous import keep_previous


class _Frozen(datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime(2026, 3, 4, 5, 6, 7, tzinfo=tz)


def test_previous_keeps_the_results_samples_report_and_run_json(tmp_path, monkeypatch):
    monkeypatch.setattr(previous, "datetime", _Frozen)
    (tmp_path / "samples").mkdir()
    (tmp_path / "results.json").write_text('{"r": 1}')
    (tmp_path / "report.html").write_text("<html>")
    (tmp_path / "samples" / "a.jsonl").write_text("{}\n")
    (tmp_path / "samples" / "notes.txt").write_text("not a sample file")
    first = keep_previous(tmp_path, {"created": "then"})
    assert first == "previous/20260304T050607Z"
    kept = tmp_path / first
    assert json.loads((kept / "results.json").read_text()) == {"r": 1}
    assert (kept / "report.html").read_text() == "<html>"
    assert (kept / "samples" / "a.jsonl").read_text() == "{}\n" and not (kept / "samples" / "notes.txt").exists()
    assert json.loads((kept / "run.json").read_text()) == {"created": "then"}
    assert os.stat(kept / "results.json").st_ino == os.stat(tmp_path / "results.json").st_ino  # a hard link
    second = keep_previous(tmp_path, {"created": "again"})  # the same second: a folder of its own
    third = keep_previous(tmp_path, {"created": "thrice"})
    assert len({first, second, third}) == 3
    assert second == first + "-2" and third == first + "-3"
    assert json.loads((tmp_path / second / "run.json").read_text()) == {"created": "again"}
    # where links are refused (another filesystem), the files are copied
    monkeypatch.setattr(previous.os, "link", lambda *a: (_ for _ in ()).throw(OSError(18, "Invalid cross-device link")))
    copied = tmp_path / keep_previous(tmp_path, {})
    assert (copied / "results.json").read_text() == '{"r": 1}'
    assert os.stat(copied / "results.json").st_ino != os.stat(tmp_path / "results.json").st_ino


def test_previous_of_a_folder_with_no_results_yet(tmp_path):
    kept = tmp_path / keep_previous(tmp_path, {"x": 1})
    assert sorted(p.name for p in kept.iterdir()) == ["run.json", "samples"]
