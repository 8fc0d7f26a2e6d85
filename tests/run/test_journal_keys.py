"""The journal's in-memory index holds call keys (SHA-256 hex) as their 32
bytes (issue 26: memory per sample); every key still answers as written,
before and after the journal is reopened, and ``all`` gives the keys back."""
from __future__ import annotations

import hashlib

from avhb.run.journal import Journal, _compact


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


def test_a_call_key_is_held_as_its_bytes():
    key = hashlib.sha256(b"x").hexdigest()
    assert _compact(key) == bytes.fromhex(key)
    assert _compact(key.upper()) == key.upper() and _compact("k") == "k" and _compact("g" * 64) == "g" * 64
