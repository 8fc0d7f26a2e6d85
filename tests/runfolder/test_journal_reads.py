"""The journal's readers and its close (avhb/runfolder/journal.py): ``holds``
says whether a kind has any entry, ``all`` skips a line rewritten since it
was indexed, ``entries`` reads a file in order past torn lines, and
``close`` after the files were written releases them even when a close
fails."""
from __future__ import annotations

import os

from avhb.runfolder.journal import Journal, entries, kind_file


def test_holds_is_whether_a_kind_has_an_entry(tmp_path):
    journal = Journal(tmp_path)
    assert not journal.holds("responses")
    journal.put("responses", "k1", {"response": "a"})
    assert journal.holds("responses") and not journal.holds("judges")
    journal.close()


def test_a_line_rewritten_since_it_was_indexed_is_skipped(tmp_path):
    journal = Journal(tmp_path)
    journal.put("responses", "k1", {"response": "a"})
    journal.put("responses", "k2", {"response": "b"})
    journal.close()
    reader = Journal(tmp_path)
    assert set(reader.all("responses")) == {"k1", "k2"}
    path = tmp_path / "responses.jsonl"
    first = path.read_bytes().split(b"\n", 1)[0]
    with open(path, "r+b") as fh:  # the first line overwritten in place (a disk error, another writer)
        fh.write(b"#" * len(first))
    assert set(reader.all("responses")) == {"k2"}
    reader.close()


def test_close_releases_the_files_when_one_will_not_close(tmp_path):
    journal = Journal(tmp_path, fsync_interval=3600)
    journal.put("responses", "k1", {"response": "a"})
    real = journal._files["responses"]

    class Stuck:
        def fileno(self):
            return real.fileno()

        def close(self):
            real.close()
            raise OSError(5, "Input/output error")

    journal._files["responses"] = Stuck()
    journal.close()  # no error: the run is ending anyway
    assert journal._files == {} and journal._readers == {}
    assert os.path.getsize(tmp_path / "responses.jsonl") > 0


def test_entries_are_every_line_in_order_past_torn_ones(tmp_path):
    journal = Journal(tmp_path)
    journal.put("responses", "k1", {"error": "timeout"})
    journal.put("responses", "k1", {"response": "a"})  # retried: both lines are entries
    journal.close()
    path = kind_file(tmp_path, "responses")
    assert path == tmp_path / "responses.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'["no key"]\n{"key": 3}\n{"key": "k2", "resp')  # not entries, and a killed run's torn write
    assert [(e["key"], e.get("error")) for e in entries(path)] == [("k1", "timeout"), ("k1", None)]
    assert list(entries(tmp_path / "judges.jsonl")) == []  # no file: no entries
