"""Issue 15, defects 3 and 13: local data files with bad rows are one
line naming the file and the (1-based) line; every row must be an object."""
from __future__ import annotations

import pytest

from avhb.data.sources import DataSource, _read_records
from avhb.errors import UserError


def _error(path) -> str:
    with pytest.raises(UserError) as info:
        list(_read_records(path))  # a .jsonl file's lines are checked by the first pass over its rows
    return str(info.value)


def test_jsonl_row_that_is_not_an_object(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": 1}\n\n[1, 2]\n')
    assert _error(path) == f"{path}:3: a row must be a JSON object (one sample), got list"


def test_jsonl_error_names_the_files_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": 1}\n{"id": 2}\n\n{"id": 3,}\n')
    message = _error(path)
    assert message.startswith(f"{path}:4: not valid JSON:"), message  # the file's line, not "line 1" of the row


def test_non_utf8_jsonl_and_json(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"id": 1}\n{"q": "caf\xe9"}\n')
    assert _error(path).startswith(f"{path}:2: not UTF-8 text")
    arr = tmp_path / "d.json"
    arr.write_bytes(b'[\n{"q": "ok"},\n{"q": "caf\xe9"}]')
    assert _error(arr).startswith(f"{arr}:3: not UTF-8 text")


def test_json_syntax_error_names_its_line(tmp_path):
    arr = tmp_path / "d.json"
    arr.write_text('[\n{"q": 1},\n{"q": 2,,}\n]')
    assert _error(arr).startswith(f"{arr}:3: not valid JSON")


def test_good_files_still_load(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": 1}\n\n{"id": 2}\n')
    assert list(_read_records(path)) == [{"id": 1}, {"id": 2}]


def test_media_root_of_a_data_file_is_its_folder(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("{}\n")
    assert DataSource(path, "local").media_root == tmp_path
    assert DataSource(tmp_path, "local").media_root == tmp_path
