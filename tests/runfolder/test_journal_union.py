"""Which answer the union of shard journals keeps (avhb/runfolder/journal.py,
``Journal.merge``): a key two sources hold is the first source's line
(the shard that asked first, as ``avhb merge`` names the folders), and
within a source its last line (a call that failed and was retried on
resume); the later copies are counted as repeats with their cost."""
from __future__ import annotations

import json

from avhb.runfolder.journal import Journal


def _write(folder, kind, rows):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{kind}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_first_source_holding_a_key_gives_its_last_line(tmp_path):
    first, second, out = tmp_path / "a", tmp_path / "b", tmp_path / "out"
    _write(first, "judges", [{"key": "k1", "response": "a-early", "cost": 0.5},
                             {"key": "k1", "response": "a-late", "cost": 0.25},
                             {"key": "k2", "response": "a2", "cost": 0.0}])
    _write(second, "judges", [{"key": "k1", "response": "b", "cost": 0.125},
                              {"key": "k3", "response": "b3", "cost": 0.0}])
    union = Journal.merge(out, [first, second])
    kept = Journal(out).all("judges")
    assert {k: v["response"] for k, v in kept.items()} == {"k1": "a-late", "k2": "a2", "k3": "b3"}
    assert union.entries == {"judges.jsonl": 3}
    assert union.repeated == {"judges.jsonl": 1} and union.repeated_cost == {"judges.jsonl": 0.125}
    # named the other way round, the other shard's answer is the one kept
    Journal.merge(out, [second, first])
    assert Journal(out).all("judges")["k1"]["response"] == "b"


def test_lines_that_are_not_entries_are_skipped_and_a_last_line_gets_its_newline(tmp_path):
    first, second, out = tmp_path / "a", tmp_path / "b", tmp_path / "out"
    first.mkdir()
    (first / "responses.jsonl").write_bytes(b'{"key": "k1", "response": "one"}\n{"key": "k2", "respo\n[1, 2]\n"x"\n'
                                            b'{"key": 5}\n{"key": "k3", "response": "three"}')  # torn, a list, no key
    _write(second, "responses", [{"key": "k3", "response": "later", "cost": None},
                                 {"key": "k1", "response": "again", "cost": 0.1234567}])
    union = Journal.merge(out, [first, second])
    text = (out / "responses.jsonl").read_text()
    assert text.endswith("\n") and len(text.splitlines()) == 2
    assert {k: v["response"] for k, v in Journal(out).all("responses").items()} == {"k1": "one", "k3": "three"}
    assert union.repeated == {"responses.jsonl": 2}
    assert union.repeated_cost == {"responses.jsonl": 0.123457}  # a repeat without a cost costs nothing; 6 places


def test_no_repeat_is_no_entry_in_the_repeat_counts(tmp_path):
    _write(tmp_path / "a", "judges", [{"key": "k1", "cost": 1.0}])
    _write(tmp_path / "b", "judges", [{"key": "k2", "cost": 1.0}])
    union = Journal.merge(tmp_path / "out", [tmp_path / "a", tmp_path / "b"])
    assert union.entries == {"judges.jsonl": 2} and union.repeated == {} and union.repeated_cost == {}
