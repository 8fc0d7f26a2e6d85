"""A media file rewritten while its fingerprint is computed
(avhb/media/fingerprints.py): the value read is returned for this look
only; nothing is remembered for the file -- in memory or on disk -- under
the stat key read before the rewrite, so the next look hashes the file
as it is now."""
from __future__ import annotations

import os
import time

import pytest

from avhb.media import fingerprints as fp


@pytest.fixture
def settled(monkeypatch):
    monkeypatch.setattr(fp, "RACY_SECONDS", 0.01)
    fp.forget()
    yield
    fp.forget()


def _entries() -> list:
    root = fp.store_dir()
    return sorted(root.rglob("*.json")) if root.is_dir() else []


@pytest.mark.parametrize("size", [5000, 2 * fp.PERSIST_MIN_BYTES])  # kept in memory only; and on disk too
def test_a_file_rewritten_in_place_while_it_is_hashed_is_remembered_nowhere(tmp_path, settled, monkeypatch, size):
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"a" * size)
    time.sleep(0.05)
    real = fp._hash_file

    def rewritten(path):
        value = real(path)
        with open(path, "r+b") as fh:  # corrected in place, same size
            fh.write(b"b" * 16)
        return value

    monkeypatch.setattr(fp, "_hash_file", rewritten)
    before = fp.fingerprint(str(clip))
    assert os.path.abspath(clip) not in fp._memo and _entries() == []
    monkeypatch.setattr(fp, "_hash_file", real)
    time.sleep(0.05)
    after = fp.fingerprint(str(clip))
    assert after == real(str(clip)) != before and fp.known(str(clip))
