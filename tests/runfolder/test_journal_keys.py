"""The journal's in-memory index holds 4 bytes of each key's hash and its
line's offset (issue 26: memory per sample); every key still answers as
written, before and after the journal is reopened and with many keys a
bucket, two keys sharing a hash each answer for themselves, and ``all``
gives the keys back."""
from __future__ import annotations

import hashlib

import pytest

from avhb.runfolder import journal as journal_module
from avhb.runfolder import hash_index
from avhb.runfolder.journal import Journal


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
    monkeypatch.setattr(journal_module, "key_hash", lambda key: 7)  # every key collides
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
def test_the_index_answers_with_many_keys_per_bucket(tmp_path, reopen):
    """More keys than buckets, so buckets hold several entries; a key
    written again answers with its newer line, before and after reopening."""
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(3 * hash_index.BUCKETS)] + ["plain", "k" * 64]
    journal = Journal(tmp_path)
    for i, key in enumerate(keys):
        journal.put("responses", key, {"response": f"r{i}"})
    journal.put("responses", keys[3], {"response": "again"})
    if reopen:
        journal.close()
        journal = Journal(tmp_path)
    index = journal._load("responses")
    assert len(index) == len(keys) + 1
    want = {k: f"r{i}" for i, k in enumerate(keys)} | {keys[3]: "again"}
    assert {k: journal.get("responses", k)["response"] for k in keys} == want
    assert journal.get("responses", hashlib.sha256(b"never").hexdigest()) is None
    assert {k: v["response"] for k, v in journal.all("responses").items()} == want


def test_the_index_holds_8_bytes_an_entry():
    index = hash_index.HashIndex()
    for i in range(200_000):
        index.add(hash_index.key_hash(f"k{i}"), i * 300)
    held = sum(len(h) for h in index._hashes if h is not None) + sum(
        v.itemsize * len(v) for v in index._values if v is not None)
    assert held == 8 * 200_000
    assert index.values_of(hash_index.key_hash("k123456")) == [123456 * 300]


def test_a_hash_straddling_two_entries_is_not_found():
    """The bytes of a hash can occur across two neighbouring entries of a
    bucket: that is no entry, and the real one after it is still found."""
    index = hash_index.HashIndex()
    bucket = 5
    a, b = 0x11223344, 0x55667788
    index.add((a << hash_index.BUCKET_BITS) | bucket, 1)
    index.add((b << hash_index.BUCKET_BITS) | bucket, 2)
    straddle = int.from_bytes(a.to_bytes(4, "little")[2:] + b.to_bytes(4, "little")[:2], "little")
    assert index.values_of((straddle << hash_index.BUCKET_BITS) | bucket) == []
    index.add((straddle << hash_index.BUCKET_BITS) | bucket, 3)
    assert index.values_of((straddle << hash_index.BUCKET_BITS) | bucket) == [3]
    assert index.values_of((a << hash_index.BUCKET_BITS) | bucket) == [1]
    assert index.values_of((a << hash_index.BUCKET_BITS) | (bucket + 1)) == []  # another bucket


def test_offsets_past_4_gib_widen_the_index():
    """A journal file past 4 GiB: its offsets no longer fit 4 bytes, and the
    bucket widens to 8 (a uint32 would refuse or wrap 2**33 + 5)."""
    index = hash_index.HashIndex()
    index.add(1, 10)
    index.add(2, 20)
    assert index._values[1].itemsize == 4
    index.add(3, (1 << 33) + 5)
    index.add(1, (1 << 32) + 7)  # the same hash again, past 4 GiB: oldest first
    assert index._values[1].itemsize == 8 and index._values[2].itemsize == 4
    assert index.values_of(1) == [10, (1 << 32) + 7]
    assert index.values_of(3) == [(1 << 33) + 5] and index.values_of(2) == [20]
    assert sorted(index.values()) == [10, 20, (1 << 32) + 7, (1 << 33) + 5]
