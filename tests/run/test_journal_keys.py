"""The journal's in-memory index holds 4 bytes of each key's hash and its
line's offset (issue 26: memory per sample); every key still answers as
written, before and after the journal is reopened and across the index's
merges, two keys sharing a hash each answer for themselves, and ``all``
gives the keys back."""
from __future__ import annotations

import hashlib

import pytest

from avhb.run import journal as journal_module
from avhb.run.journal import Journal, _Offsets


def test_keys_answer_as_written_and_come_back_from_all(tmp_path):
    call = hashlib.sha256(b"x").hexdigest()
    upper = hashlib.sha256(b"y").hexdigest().upper()  # 64 hex digits, but not how keys are written: kept as text
    odd = "z" * 64
    keys = [call, upper, odd, "k1", ""]
    journal = Journal(tmp_path)
    for i, key in enumerate(keys):
        journal.put("responses", key, {"response": f"r{i}"})
    assert [journal.get("responses", k)["response"] for k in keys] == [f"r{i}" for i in range(len(keys))]
    assert journal.get("responses", call.upper()) is None  # never written: keys are not case-folded
    journal.close()
    again = Journal(tmp_path)
    assert [again.get("responses", k)["response"] for k in keys] == [f"r{i}" for i in range(len(keys))]
    assert sorted(again.all("responses")) == sorted(keys)
    assert again.get("responses", hashlib.sha256(b"other").hexdigest()) is None


def test_keys_sharing_a_hash_each_answer_for_themselves(tmp_path, monkeypatch):
    monkeypatch.setattr(journal_module, "_hash", lambda key: 7)  # every key collides
    journal = Journal(tmp_path)
    for key, text in [("a", "first a"), ("b", "b"), ("a", "second a")]:
        journal.put("responses", key, {"response": text})
    assert journal.get("responses", "a")["response"] == "second a"  # the last line of a key wins
    assert journal.get("responses", "b")["response"] == "b" and journal.get("responses", "c") is None
    journal.close()
    again = Journal(tmp_path)
    assert again.get("responses", "a")["response"] == "second a" and again.get("responses", "b")["response"] == "b"
    assert {k: v["response"] for k, v in again.all("responses").items()} == {"a": "second a", "b": "b"}


@pytest.mark.parametrize("reopen", [False, True])
def test_the_index_answers_across_its_merges(tmp_path, monkeypatch, reopen):
    monkeypatch.setattr(_Offsets, "MERGE_AT", 8)
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(50)] + ["plain", "k" * 64]
    journal = Journal(tmp_path)
    for i, key in enumerate(keys):
        journal.put("responses", key, {"response": f"r{i}"})
    journal.put("responses", keys[3], {"response": "again"})  # after its line was merged into the arrays
    later = [hashlib.sha256(f"later{i}".encode()).hexdigest() for i in range(8)]
    for key in later:  # and "again" merged too: both of its lines in the arrays, the newer one must win
        journal.put("responses", key, {"response": key[:4]})
    if reopen:
        journal.close()
        journal = Journal(tmp_path)
    index = journal._load("responses")
    assert len(index._hashes) >= 56 and len(index) == len(keys) + 9  # merged: most of it in the arrays
    assert index._hashes.dtype.itemsize == 4 and index._offsets.dtype.itemsize == 4  # 8 bytes a line
    want = {k: f"r{i}" for i, k in enumerate(keys)} | {keys[3]: "again"} | {k: k[:4] for k in later}
    assert {k: journal.get("responses", k)["response"] for k in [*keys, *later]} == want
    assert journal.get("responses", hashlib.sha256(b"never").hexdigest()) is None
    assert {k: v["response"] for k, v in journal.all("responses").items()} == want


def test_offsets_past_4_gib_widen_the_index(monkeypatch):
    """A journal file past 4 GiB: its offsets no longer fit the index's 4
    bytes, and the index widens to 8 (a uint32 would wrap 2**33 + 5 to 5)."""
    monkeypatch.setattr(_Offsets, "MERGE_AT", 2)
    index = _Offsets()
    index.add(1, 10)
    index.add(2, 20)  # merged: 4-byte offsets
    assert index._offsets.dtype.itemsize == 4
    index.add(3, (1 << 33) + 5)
    index.add(1, (1 << 32) + 7)  # the same hash again, past 4 GiB: newest first
    assert index._offsets.dtype.itemsize == 8
    assert index.newest_first(1) == [(1 << 32) + 7, 10]
    assert index.newest_first(3) == [(1 << 33) + 5] and index.newest_first(2) == [20]
    assert sorted(index.offsets()) == [10, 20, (1 << 32) + 7, (1 << 33) + 5]
