"""The journal's edges (avhb/runfolder/journal.py), each pinned by a case its
mutation run left open: when it syncs, what a torn last line does to the
next entry, an entry longer than one read block, a last line without its
newline, a failing disk on close, and the descriptors it releases."""
from __future__ import annotations

import errno
import gc
import json
import os
import types
import warnings

import pytest

from avhb.errors import EnvironmentFailure
from avhb.runfolder import journal as journal_mod
from avhb.runfolder.journal import Journal


class Clock:
    def __init__(self, now: float):
        self.now = now

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def fsyncs(monkeypatch):
    calls = []
    real = os.fsync

    def counting(fd):
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return calls


def _lines(path):
    return path.read_bytes().split(b"\n")


def test_it_syncs_once_the_interval_has_passed_and_on_close(tmp_path, monkeypatch, fsyncs):
    clock = Clock(100.0)
    monkeypatch.setattr(journal_mod, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    j = Journal(tmp_path, fsync_interval=1.0)
    clock.now = 100.5
    j.put("responses", "a", {"response": "1"})
    assert fsyncs == []  # half the interval: written and flushed, not synced
    clock.now = 101.0
    j.put("responses", "b", {"response": "2"})
    assert len(fsyncs) == 1  # exactly the interval since the journal opened
    clock.now = 101.5
    j.put("responses", "c", {"response": "3"})
    assert len(fsyncs) == 1  # the interval counts from the last sync, not from the start
    j.close()
    assert len(fsyncs) == 2  # close syncs what is left


def test_the_default_interval_is_a_fifth_of_a_second(tmp_path, monkeypatch, fsyncs):
    clock = Clock(50.0)
    monkeypatch.setattr(journal_mod, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    j = Journal(tmp_path)
    clock.now = 50.1
    j.put("responses", "a", {"response": "1"})
    assert fsyncs == []
    clock.now = 50.5
    j.put("responses", "b", {"response": "2"})
    assert len(fsyncs) == 1
    j.close()


def test_a_nested_folder_is_created(tmp_path):
    j = Journal(tmp_path / "run" / "journal")
    j.put("responses", "k", {"response": "x"})
    j.close()
    assert Journal(tmp_path / "run" / "journal").get("responses", "k")["response"] == "x"


def test_an_entry_after_a_torn_line_is_found_by_this_journal_and_the_next(tmp_path):
    (tmp_path / "responses.jsonl").write_bytes(b'{"key": "old", "response": "kept"}\n{"key": "torn", "resp')
    j = Journal(tmp_path)
    j.put("responses", "new", {"response": "after the tear"})
    assert j.get("responses", "new")["response"] == "after the tear"  # the offset this journal indexed
    assert j.get("responses", "old")["response"] == "kept"
    j.close()
    again = Journal(tmp_path)
    assert again.get("responses", "new")["response"] == "after the tear"
    assert again.get("responses", "torn") is None
    lines = _lines(tmp_path / "responses.jsonl")
    assert lines[1] == b'{"key": "torn", "resp' and json.loads(lines[2])["key"] == "new" and lines[3] == b""


def test_a_clean_journal_reopened_gets_no_blank_lines(tmp_path):
    for n in range(3):  # three sessions, one entry each
        j = Journal(tmp_path)
        j.put("responses", f"k{n}", {"response": str(n)})
        j.close()
    lines = _lines(tmp_path / "responses.jsonl")
    assert lines[-1] == b"" and [json.loads(line)["key"] for line in lines[:-1]] == ["k0", "k1", "k2"]


def test_a_last_line_without_its_newline_is_still_an_entry(tmp_path):
    (tmp_path / "responses.jsonl").write_bytes(b'{"key": "a", "response": "1"}\n{"key": "b", "response": "2"}')
    j = Journal(tmp_path)
    assert j.get("responses", "b") == {"key": "b", "response": "2"}
    j.put("responses", "c", {"response": "3"})  # a newline goes first: b stays whole
    j.close()
    assert Journal(tmp_path).all("responses") == {
        "a": {"key": "a", "response": "1"}, "b": {"key": "b", "response": "2"}, "c": {"key": "c", "response": "3"}}


@pytest.mark.parametrize("length", [4000, 4095, 4096, 4097, 20_000, 70_000])
def test_entries_longer_than_a_read_block_come_back_whole(tmp_path, length):
    j = Journal(tmp_path)
    text = "x" * length
    j.put("responses", "long", {"response": text})
    j.put("responses", "after", {"response": "short"})
    j.put("responses", "long2", {"response": text + "y"})  # the last line of the file
    assert j.get("responses", "long")["response"] == text
    assert j.get("responses", "long2")["response"] == text + "y"
    j.close()
    again = Journal(tmp_path)
    assert again.get("responses", "long")["response"] == text
    assert again.get("responses", "after")["response"] == "short"
    assert again.get("responses", "long2")["response"] == text + "y"


def test_a_short_entry_is_one_read_however_long_the_file(tmp_path, monkeypatch):
    j = Journal(tmp_path)
    j.put("responses", "first", {"response": "a"})
    for n in range(200):
        j.put("responses", f"pad{n}", {"response": "p" * 100})
    j.close()
    reads = []
    real = os.pread

    def counting(fd, size, offset):
        reads.append(size)
        return real(fd, size, offset)

    monkeypatch.setattr(os, "pread", counting)
    again = Journal(tmp_path)
    assert again.get("responses", "first")["response"] == "a"
    assert reads == [4096]  # one block from the entry's offset, not the file to its end
    again.close()


def test_an_entry_changed_behind_its_back_reads_as_missing(tmp_path):
    j = Journal(tmp_path)
    j.put("responses", "k", {"response": "v"})
    j.put("responses", "m", {"response": "w"})
    assert j.get("responses", "k")["response"] == "v"
    path = tmp_path / "responses.jsonl"
    data = path.read_bytes()
    path.write_bytes(b"#" * data.index(b"\n") + data[data.index(b"\n"):])  # same length, not JSON
    assert j.get("responses", "k") is None and j.get("responses", "m")["response"] == "w"
    j.close()


def test_a_full_disk_names_the_error_not_its_number(tmp_path):
    (tmp_path / "responses.jsonl").symlink_to("/dev/full")
    j = Journal(tmp_path, fsync_interval=0)
    with pytest.raises(EnvironmentFailure) as info:
        j.put("responses", "k", {"response": "a"})
    assert f"cannot write the journal {tmp_path / 'responses.jsonl'}: No space left on device;" in str(info.value)
    assert "Errno" not in str(info.value)
    j.close()


def test_a_sync_that_fails_on_close_is_one_error_then_none(tmp_path, monkeypatch):
    j = Journal(tmp_path, fsync_interval=3600)
    j.put("responses", "k", {"response": "a"})

    def full(*_):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(j, "sync", full)
    with pytest.raises(EnvironmentFailure) as info:
        j.close()
    assert str(info.value) == f"cannot write the journal in {tmp_path}: No space left on device"
    j.close()  # the run is already stopping with that error: no second one
    monkeypatch.undo()
    assert Journal(tmp_path).get("responses", "k")["response"] == "a"  # the line was flushed before


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_close_releases_every_descriptor_it_opened(tmp_path):
    gc.collect()
    before = _open_fds()
    j = Journal(tmp_path)
    j.put("responses", "k", {"response": "a"})
    j.put("judges", "k", {"response": "b"})
    assert j.get("responses", "k")["response"] == "a" and j.get("judges", "k")["response"] == "b"
    assert _open_fds() == before + 4  # two files appended to, two read from
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        j.close()
        gc.collect()
    assert _open_fds() == before
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]  # closed, not left to the collector


def test_text_is_kept_as_utf8_not_escaped(tmp_path):
    # the journal is read by people and by grep: a reply in any language is its own text in the file
    j = Journal(tmp_path)
    j.put("model", "k1", {"response": "café — 日本語"})
    j.close()
    raw = (tmp_path / "model.jsonl").read_bytes()
    assert "café — 日本語".encode() in raw and b"\\u" not in raw
    assert Journal(tmp_path).get("model", "k1")["response"] == "café — 日本語"
