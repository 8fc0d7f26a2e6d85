"""Media content fingerprints (avhb.media.fingerprints): the whole file is
hashed, once per file, and cached by a stat key that a corrected file
cannot keep (issue 23, item 1)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from avhb.errors import SampleError
from avhb.media import fingerprints as fp

MiB = 1 << 20


@pytest.fixture
def settled(monkeypatch):
    """Files count as settled 10 ms after their last change (default 2 s),
    so a test can cache a file it just wrote; the memory starts empty."""
    monkeypatch.setattr(fp, "RACY_SECONDS", 0.01)
    fp.forget()
    yield
    fp.forget()


def _write(path, data: bytes) -> str:
    path.write_bytes(data)
    time.sleep(0.05)  # past the racy window and the kernel's coarse clock tick
    return str(path)


def _entries() -> list:
    root = fp.store_dir()
    return sorted(p for p in root.rglob("*.json")) if root.is_dir() else []


def _correct_in_place(path: str, offset: int) -> None:
    """A researcher's correction: one byte changed in place (same inode, same
    size), then the old mtime put back with os.utime."""
    st = os.stat(path)
    with open(path, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)


def test_a_corrected_file_of_the_same_size_and_mtime_changes_the_fingerprint(tmp_path, settled):
    # 4 MiB: the byte changed lies between the head and middle blocks the old sampled hash read
    clip = _write(tmp_path / "clip.mp4", os.urandom(4 * MiB))
    before = fp.fingerprint(clip)
    assert fp.fingerprint(clip) == before and len(_entries()) == 1  # cached in memory and on disk
    _correct_in_place(clip, int(1.25 * MiB))
    time.sleep(0.05)
    changed = fp.fingerprint(clip)
    assert changed != before  # in this process (the memory's stat key has the old ctime)
    fp.forget()
    assert fp.fingerprint(clip) == changed  # in a new process: the disk entry of the old stat is not used
    # replaced by another file (new inode), same size, mtime restored: also seen
    st = os.stat(clip)
    fixed = tmp_path / "fixed.mp4"
    fixed.write_bytes(os.urandom(4 * MiB))
    os.replace(fixed, clip)
    os.utime(clip, ns=(st.st_atime_ns, st.st_mtime_ns))
    time.sleep(0.05)
    assert fp.fingerprint(clip) not in (before, changed)


def test_the_fingerprint_follows_content_not_path_or_mtime(tmp_path, settled):
    data = os.urandom(MiB)
    a = _write(tmp_path / "a.wav", data)
    b = tmp_path / "sub" / "b.wav"
    b.parent.mkdir()
    b = _write(b, data)
    os.utime(b, (1, 1))
    assert fp.fingerprint(a) == fp.fingerprint(b)
    with pytest.raises(SampleError, match="file not found"):
        fp.fingerprint(str(tmp_path / "missing.mp4"))
    with pytest.raises(SampleError, match="empty file"):
        fp.fingerprint(_write(tmp_path / "empty.mp4", b""))


def test_a_file_is_read_once_and_a_new_process_reads_none(tmp_path, settled):
    clip = _write(tmp_path / "clip.mp4", os.urandom(2 * MiB))
    reads = fp.reads
    value = fp.fingerprint(clip)
    for _ in range(5):
        assert fp.fingerprint(clip) == value and fp.known(clip)
    assert fp.reads == reads + 1
    fp.forget()
    assert not fp.known(clip)
    assert fp.fingerprint(clip) == value and fp.reads == reads + 1  # the disk entry answered
    # a real second process (default racy window) finds it too, reading nothing
    code = ("import sys; from avhb.media import fingerprints as f; v = f.fingerprint(sys.argv[1]); "
            "print(v, f.reads)")
    out = subprocess.run([sys.executable, "-c", code, clip], capture_output=True, text=True, check=True,
                         env=dict(os.environ)).stdout.split()
    assert out == [value, "0"]


def test_threads_asking_for_one_file_hash_it_once(tmp_path, settled):
    clip = _write(tmp_path / "clip.mp4", os.urandom(8 * MiB))
    reads = fp.reads
    got = []
    threads = [threading.Thread(target=lambda: got.append(fp.fingerprint(clip))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 1 and len(got) == 4 and fp.reads == reads + 1


def test_a_file_that_just_changed_or_is_small_is_not_written_down(tmp_path, monkeypatch):
    fp.forget()
    clip = tmp_path / "fresh.mp4"
    clip.write_bytes(os.urandom(MiB))  # ctime now: inside the default 2 s racy window
    reads = fp.reads
    value = fp.fingerprint(str(clip))
    assert fp.fingerprint(str(clip)) == value and fp.reads == reads + 2  # hashed at each look, never cached
    assert _entries() == [] and not fp.known(str(clip))
    monkeypatch.setattr(fp, "RACY_SECONDS", 0.01)
    small = _write(tmp_path / "frame.jpg", os.urandom(fp.PERSIST_MIN_BYTES - 1))
    fp.fingerprint(small)
    assert fp.known(small) and _entries() == []  # remembered in memory; not worth a disk entry
    fp.forget()


def test_a_corrupt_entry_is_a_miss(tmp_path, settled):
    clip = _write(tmp_path / "clip.mp4", os.urandom(MiB))
    value = fp.fingerprint(clip)
    [entry] = _entries()
    entry.write_text("{not json")
    fp.forget()
    reads = fp.reads
    assert fp.fingerprint(clip) == value and fp.reads == reads + 1
