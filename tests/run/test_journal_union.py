"""Which answer the union of shard journals keeps (avhb/run/journal.py,
``Journal.merge``): a key two sources hold is the first source's line
(the shard that asked first, as ``avhb merge`` names the folders), and
within a source its last line (a call that failed and was retried on
resume); the later copies are counted as repeats with their cost."""
from __future__ import annotations

import json

from avhb.run.journal import Journal


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
