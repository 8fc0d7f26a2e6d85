"""The one reader of samples files (avhb/runfolder/samples.py) and its one
policy for a line that is not a sample: skipped and recorded with its line
number and why (torn, not JSON, not an object, not UTF-8); blank lines are
nothing; a missing file holds no samples; an unreadable one is one error
naming it.  The callers' use of the policy (the report lists, merge and a
paired comparison refuse) is tested with each caller."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from avhb.errors import UserError
from avhb.runfolder.folder import RunFolder
from avhb.runfolder.layout import samples_path, task_of_samples_file
from avhb.runfolder.samples import (NOT_JSON, NOT_OBJECT, NOT_UTF8, BadLine, SamplesFile, SamplesUnreadable,
                                    sample_record)
from avhb.score.metric import SampleRecord


def _file(tmp_path: Path, data: bytes) -> SamplesFile:
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    return SamplesFile(path)


def _line(sid: str, **more) -> bytes:
    return (json.dumps({"id": sid, **more}, ensure_ascii=False) + "\n").encode()


def test_a_torn_last_line_is_skipped_and_named(tmp_path):
    f = _file(tmp_path, _line("a") + _line("b") + b'{"id": "c", "resp')
    assert [r["id"] for r in f.rows()] == ["a", "b"]
    assert f.bad == [BadLine(f.path, 3, NOT_JSON)] and not f.missing
    assert f.bad_summary() == f"{f.path} line 3: not JSON"


def test_a_list_a_string_or_a_number_line_is_not_a_sample(tmp_path):
    f = _file(tmp_path, _line("a") + b'[1, 2]\n"text"\n3\nnull\n' + _line("b"))
    assert [r["id"] for r in f.rows()] == ["a", "b"]
    assert [(b.lineno, b.why) for b in f.bad] == [(2, NOT_OBJECT), (3, NOT_OBJECT), (4, NOT_OBJECT), (5, NOT_OBJECT)]
    assert f.bad_summary() == f"{f.path} line 2: not an object, and 3 more bad lines"


def test_blank_lines_are_nothing_and_keep_the_line_numbers(tmp_path):
    f = _file(tmp_path, b"\n" + _line("a") + b"   \n\r\n" + _line("b") + b"\n")
    lines = list(f.lines())
    assert [(x.lineno, x.row["id"]) for x in lines] == [(2, "a"), (5, "b")]
    assert f.bad == [] and f.bad_summary() is None
    assert lines[0].text == '{"id": "a"}'  # the line as written, without its line end


def test_a_missing_file_holds_no_samples(tmp_path):
    f = SamplesFile(tmp_path / "none.jsonl")
    assert list(f.rows()) == [] and f.missing and f.bad == []
    f.path.write_bytes(_line("a"))
    assert [r["id"] for r in f.rows()] == ["a"] and not f.missing  # each pass looks again


def test_a_file_that_cannot_be_read_is_one_error_naming_it(tmp_path):
    (tmp_path / "t.jsonl").mkdir()  # a folder where the file should be
    f = SamplesFile(tmp_path / "t.jsonl")
    with pytest.raises(SamplesUnreadable) as err:
        list(f.rows())
    assert isinstance(err.value, UserError) and err.value.path == f.path
    assert str(err.value).startswith(f"{f.path}: unreadable (") and "\n" not in str(err.value)


def test_bytes_that_are_not_utf8_are_a_bad_line_not_replaced(tmp_path):
    f = _file(tmp_path, _line("a") + b'{"id": "b\xff\xfe"}\n' + _line("c"))
    assert [r["id"] for r in f.rows()] == ["a", "c"]
    assert f.bad == [BadLine(f.path, 2, NOT_UTF8)]


def test_a_line_separator_inside_a_value_is_part_of_the_line(tmp_path):
    """Samples are written with ensure_ascii=False: U+2028, U+0085 and \\x1c
    reach the file raw; str.splitlines would cut the line there."""
    f = _file(tmp_path, _line("a", response="one\u2028two\x85three\x1cfour") + _line("b"))
    rows = list(f.rows())
    assert [r["id"] for r in rows] == ["a", "b"] and f.bad == []
    assert rows[0]["response"] == "one\u2028two\x85three\x1cfour"


def test_each_pass_starts_with_no_bad_lines(tmp_path):
    f = _file(tmp_path, _line("a") + b"torn")
    list(f.rows())
    assert len(f.bad) == 1
    f.path.write_bytes(_line("a"))
    list(f.rows())
    assert f.bad == []


def test_whole_lines_the_caller_passes_over_are_counted_unparsed(tmp_path, monkeypatch):
    """``parse`` is asked of whole lines only ('{' to '}' and the newline, as
    the run writes them): a torn line, a line that does not start with '{'
    or ends otherwise are read and recorded whatever it says.  A whole line
    it passes over is counted as it is, not examined (the report's count
    past its sample cap)."""
    from avhb.runfolder import samples

    parsed: list[str] = []
    real = samples.json.loads
    monkeypatch.setattr(samples.json, "loads", lambda text: parsed.append(text) or real(text))
    f = _file(tmp_path, _line("a") + _line("b", error="boom") + b'{"id": "\xff"}\n' + b"[1]\n" + b'{"id": "d"}  \n'
              + b'{"id": "c"')
    asked: list[bytes] = []
    lines = list(f.lines(parse=lambda raw: asked.append(raw) or b'"error"' in raw))
    assert [(x.lineno, x.row["id"]) for x in lines] == [(2, "b"), (5, "d")] and f.passed_over == 2
    assert lines[0].text == '{"id": "b", "error": "boom"}'
    assert asked == [_line("a"), _line("b", error="boom"), b'{"id": "\xff"}\n']
    assert [(b.lineno, b.why) for b in f.bad] == [(4, NOT_OBJECT), (6, NOT_JSON)]
    assert [real(t) for t in parsed[:-1]] == [{"id": "b", "error": "boom"}, [1], {"id": "d"}]
    list(f.lines())
    assert f.passed_over == 0 and len(f.bad) == 3  # each pass counts afresh; unasked, the \xff line is bad


def test_a_run_folders_samples_file_reads_back_as_the_records_written(tmp_path):
    folder = RunFolder(tmp_path / "run")
    written = [SampleRecord(id="q1", doc={"question": "2+2?", "video": b"\x00"}, target="4", response="4",
                            extracted="4", scores={"acc": 1.0}, judgements={"j": {"ok": True}}, repeat=1,
                            trajectory=[{"step": "ask"}], outputs={"o": 1}),
               SampleRecord(id="q2", doc={}, target="5", response=None, error="no media")]
    with folder.samples_file("mypack/qa") as append:
        append(written)
    f = SamplesFile.of(folder.root, "mypack/qa")
    assert f.path == samples_path(folder.root, "mypack/qa") == folder.root / "samples" / "mypack__qa.jsonl"
    got = [sample_record(r) for r in f.rows()]
    assert [(r.id, r.repeat, r.target, r.response, r.extracted, r.scores, r.judgements, r.error, r.trajectory,
             r.outputs) for r in got] == [(r.id, r.repeat, r.target, r.response, r.extracted, r.scores, r.judgements,
                                           r.error, r.trajectory, r.outputs) for r in written]
    assert got[0].doc == {"question": "2+2?"}  # bytes are not logged
    assert task_of_samples_file(f.path, ["other", "mypack/qa"]) == "mypack/qa"
    assert task_of_samples_file(f.path, ["other"]) == "mypack__qa"
