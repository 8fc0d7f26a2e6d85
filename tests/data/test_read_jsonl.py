"""A JSONL data file read in one go (issue 26) says what the line-by-line
reader said: rows in order, blank lines skipped, and a bad line, a row that
is not an object, a BOM or bytes that are not UTF-8 named by line."""
from __future__ import annotations

import pytest

from avhb.data.sources import _read_jsonl
from avhb.errors import UserError


def test_rows_in_order_blank_lines_skipped(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"id": 1}\r\n\n  \n{"id": 2, "t": "a\\nb \\u00e9"}\n{"id": 3}')
    assert _read_jsonl(path) == [{"id": 1}, {"id": 2, "t": "a\nb \u00e9"}, {"id": 3}]


@pytest.mark.parametrize("data, message", [
    (b'{"id": 1}\n{"id": 2\n', "rows.jsonl:2: not valid JSON"),
    (b'{"id": 1}\n{"id": 2}, {"id": 3}\n', "rows.jsonl:2: not valid JSON"),
    (b'{"id": 1}\n[1, 2]\n', "rows.jsonl:2: a row must be a JSON object"),
    (b'\xef\xbb\xbf{"id": 1}\n', "rows.jsonl:1: not valid JSON"),
    (b'{"id": 1}\n{"t": "\xff"}\n', "rows.jsonl:2: not UTF-8 text"),
])
def test_a_bad_line_is_named(tmp_path, data, message):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(data)
    with pytest.raises(UserError, match=message.replace("[", r"\[")):
        _read_jsonl(path)
