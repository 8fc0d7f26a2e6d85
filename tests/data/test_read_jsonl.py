"""A JSONL data file's rows (issue 26, avhb.data.jsonl_rows): every line is
checked as the line-by-line reader did (rows in order, blank lines
skipped; a bad line, a row that is not an object, a BOM or bytes that are not
UTF-8 named by line) when the rows are first read, and each row is decoded
from its line when asked; a file changed under the run is an error, never
rows of a file the run did not check."""
from __future__ import annotations

import os

import pytest

from avhb.data.jsonl_rows import JsonlRows
from avhb.errors import UserError


def test_rows_in_order_blank_lines_skipped(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"id": 1}\r\n\n  \n{"id": 2, "t": "a\\nb \\u00e9"}\n\xc2\xa0\n{"id": 3}')  # U+00A0: blank too
    rows = JsonlRows(path)
    assert len(rows) == 3 and list(rows) == [{"id": 1}, {"id": 2, "t": "a\nb \u00e9"}, {"id": 3}]
    assert rows[1] == {"id": 2, "t": "a\nb \u00e9"} and rows[-1] == {"id": 3} and rows[1:] == [rows[1], rows[2]]
    assert rows.take([2, 0, 2]) == [{"id": 3}, {"id": 1}, {"id": 3}]
    assert rows.take(range(3)) == list(rows) and rows.take([1, 2, 0, 1]) == [rows[1], rows[2], rows[0], rows[1]]
    assert rows[0] is not rows[0]  # decoded again each time: nothing held
    with pytest.raises(IndexError):
        rows[3]


@pytest.mark.parametrize("data, message", [
    (b'{"id": 1}\n{"id": 2\n', "rows.jsonl:2: not valid JSON"),
    (b'{"id": 1}\n{"id": 2}, {"id": 3}\n', "rows.jsonl:2: not valid JSON"),
    (b'{"id": 1}\n[1, 2]\n', "rows.jsonl:2: a row must be a JSON object"),
    (b'\xef\xbb\xbf{"id": 1}\n', "rows.jsonl:1: not valid JSON: Unexpected UTF-8 BOM"),
    (b'{"id": 1}\n{"t": "\xff"}\n', "rows.jsonl:2: not UTF-8 text"),
    (b'{"id": 1}\n\n\n{"id": 2,}\n', "rows.jsonl:4: not valid JSON"),
])
def test_a_bad_line_is_named(tmp_path, data, message):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(data)
    rows = JsonlRows(path)  # the offsets only
    with pytest.raises(UserError, match=message.replace("[", r"\[")):
        list(rows)  # the first pass checks every line
    with pytest.raises(UserError, match=message.replace("[", r"\[")):
        rows.take(range(len(rows)))  # a row read before that pass is named by its line too


def test_a_windows_rows_come_from_one_read_of_their_bytes(tmp_path, monkeypatch):
    """Consecutive rows are read together (one read, not a line each), the
    blank lines between them skipped, and equal to the rows read alone."""
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"".join(b'{"id": %d}\n' % i + (b"\n \n" if i % 3 == 0 else b"") for i in range(10)))
    rows = JsonlRows(path)
    reads = []
    real_open = open

    class Counted:
        def __init__(self, fh):
            self.fh = fh

        def __getattr__(self, name):
            attr = getattr(self.fh, name)
            if name in ("read", "readline"):
                def counted(*args):
                    reads.append(name)
                    return attr(*args)
                return counted
            return attr

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.fh.__exit__(*exc)

    monkeypatch.setattr("builtins.open", lambda *a, **k: Counted(real_open(*a, **k)))
    assert rows.take(range(2, 9)) == [{"id": i} for i in range(2, 9)]
    assert reads == ["read"]
    assert rows.take([9, 0, 1, 5]) == [{"id": 9}, {"id": 0}, {"id": 1}, {"id": 5}]
    assert reads == ["read"] * 4


def test_a_file_changed_under_the_run_is_an_error(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": 1}\n{"id": 2}\n')
    rows = JsonlRows(path)
    stat = os.stat(path)
    path.write_text('{"id": 7}\n{"id": 8}\n')  # the same size: the modification time tells
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    with pytest.raises(UserError, match="rows.jsonl: the data file changed during the run"):
        rows.take([0])
    with pytest.raises(UserError, match="changed during the run"):
        list(rows)


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(UserError, match="nothing.jsonl: cannot read data"):
        JsonlRows(tmp_path / "nothing.jsonl")


def test_offsets_are_four_bytes_under_4_gib_and_eight_above(tmp_path, monkeypatch):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": 1}\n{"id": 2}\n')
    assert JsonlRows(path)._marks.typecode == "I"
    monkeypatch.setattr("avhb.data.jsonl_rows.os.path.getsize", lambda p: 1 << 32)  # a file past 4 GiB
    wide = JsonlRows(path)
    assert wide._marks.typecode == "q" and list(wide) == [{"id": 1}, {"id": 2}]


def test_one_offset_kept_every_64_rows_any_row_found(tmp_path):
    """Rows between marks are found by reading on from the mark before
    them, blank lines skipped; a bad row among them is named by its line;
    the last row needs no newline."""
    from avhb.data.jsonl_rows import MARK

    n = 3 * MARK + 7
    lines = [b'{"id": %d}\n' % i + (b"\n" if i % 10 == 0 else b"") for i in range(n)]
    lines[-1] = lines[-1].rstrip(b"\n")
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"".join(lines))
    rows = JsonlRows(path)
    assert len(rows) == n and len(rows._marks) == 4  # rows 0, 64, 128, 192
    order = [n - 1, 0, MARK - 1, MARK, MARK + 1, 2 * MARK + 5, 191, 192, 193, 5]
    assert rows.take(order) == [{"id": i} for i in order]
    assert rows.take(range(MARK - 3, 2 * MARK + 3)) == [{"id": i} for i in range(MARK - 3, 2 * MARK + 3)]
    assert list(rows) == [{"id": i} for i in range(n)]
    lines[130] = b'{"id": 130,}\n'
    path.write_bytes(b"".join(lines))
    bad = JsonlRows(path)
    line_of_130 = sum(line.count(b"\n") for line in lines[:130]) + 1
    with pytest.raises(UserError, match=f"rows.jsonl:{line_of_130}: not valid JSON"):
        bad.take([131, 130])
    assert bad.take([129, 131]) == [{"id": 129}, {"id": 131}]
