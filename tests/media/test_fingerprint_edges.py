"""The content fingerprint's edges (avhb/media/fingerprints.py), each pinned
by a case its mutation run left open: the value is the documented hash,
the racy window and the persist size are boundaries, a file written while
it is read is not cached, the disk entry's layout and what makes it a
miss, a cache that cannot be written, and what ``known`` answers."""
from __future__ import annotations

import hashlib
import json
import os
import time

import pytest

from avhb.errors import SampleError
from avhb.media import fingerprints as fp


@pytest.fixture
def settled(monkeypatch):
    monkeypatch.setattr(fp, "RACY_SECONDS", 0.01)
    fp.forget()
    yield
    fp.forget()


def _write(path, data: bytes) -> str:
    path.write_bytes(data)
    time.sleep(0.05)
    return str(path)


def _entries() -> list:
    root = fp.store_dir()
    return sorted(root.rglob("*.json")) if root.is_dir() else []


def test_the_value_is_sha256_of_the_size_and_the_whole_content(tmp_path, settled):
    data = b"hello, world" * 1000
    clip = _write(tmp_path / "clip.mp4", data)
    expected = hashlib.sha256(len(data).to_bytes(8, "little") + data).hexdigest()[:32]
    assert fp.fingerprint(clip) == expected
    assert fp.fingerprint(_write(tmp_path / "five.wav", b"hello")) == "fe745503750fdbf3e6ef676d16d85ee0"


def test_a_file_larger_than_a_read_block_is_hashed_whole(tmp_path, settled):
    data = os.urandom(fp.READ_BLOCK) + b"tail"
    clip = _write(tmp_path / "clip.mp4", data)
    assert fp.fingerprint(clip) == hashlib.sha256(len(data).to_bytes(8, "little") + data).hexdigest()[:32]


def test_the_stat_key_is_device_inode_size_mtime_and_ctime(tmp_path):
    path = _write(tmp_path / "a.wav", b"abc")
    st = os.stat(path)
    assert fp.stat_key(path) == (st.st_dev, st.st_ino, 3, st.st_mtime_ns, st.st_ctime_ns)
    with pytest.raises(OSError):
        fp.stat_key(str(tmp_path / "gone.wav"))


def test_the_racy_window_is_a_boundary(tmp_path, monkeypatch):
    fp.forget()
    clip = _write(tmp_path / "clip.mp4", b"x" * 1000)
    ctime = os.stat(clip).st_ctime_ns / 1e9
    monkeypatch.setattr(fp, "RACY_SECONDS", 5.0)
    monkeypatch.setattr(fp.time, "time", lambda: ctime + 5.0)  # exactly settled
    fp.fingerprint(clip)
    assert fp.known(clip)
    fp.forget()
    monkeypatch.setattr(fp.time, "time", lambda: ctime + 4.99)  # not yet
    fp.fingerprint(clip)
    assert not fp.known(clip)
    fp.forget()


def test_files_from_the_persist_size_up_get_a_disk_entry(tmp_path, settled):
    small = _write(tmp_path / "small.jpg", os.urandom(fp.PERSIST_MIN_BYTES - 1))
    exact = _write(tmp_path / "exact.jpg", os.urandom(fp.PERSIST_MIN_BYTES))
    fp.fingerprint(small)
    assert _entries() == []
    value = fp.fingerprint(exact)
    [entry] = _entries()
    st = os.stat(exact)
    record = [exact, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    name = hashlib.blake2b(json.dumps(record).encode(), digest_size=16).hexdigest()
    assert entry == fp.store_dir() / name[:2] / f"{name}.json"
    assert json.loads(entry.read_text()) == {"stat": record, "fingerprint": value}
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]  # no temporary file left beside it
    fp.forget()
    reads = fp.reads
    assert fp.fingerprint(exact) == value and fp.reads == reads and fp.known(exact)  # the entry answered
    fp.forget()
    assert fp.fingerprint(small) and fp.reads == reads + 1  # a small file is hashed again


def test_an_entry_of_another_stat_or_without_a_fingerprint_is_a_miss(tmp_path, settled):
    clip = _write(tmp_path / "clip.mp4", os.urandom(fp.PERSIST_MIN_BYTES))
    value = fp.fingerprint(clip)
    [entry] = _entries()
    good = json.loads(entry.read_text())
    for bad in ({**good, "stat": [*good["stat"][:-1], 0]}, {**good, "fingerprint": 12345}, ["a list"],
                {"stat": good["stat"]}):
        entry.write_text(json.dumps(bad))
        fp.forget()
        reads = fp.reads
        assert fp.fingerprint(clip) == value and fp.reads == reads + 1, bad


def test_a_file_written_while_it_is_read_is_not_cached(tmp_path, settled, monkeypatch):
    clip = _write(tmp_path / "clip.mp4", b"a" * 5000)
    real = fp._hash_file

    def growing(path):
        value = real(path)
        with open(path, "ab") as fh:  # the download is still going
            fh.write(b"more")
        return value

    monkeypatch.setattr(fp, "_hash_file", growing)
    fp.fingerprint(clip)
    assert not fp.known(clip) and _entries() == []
    monkeypatch.setattr(fp, "_hash_file", real)
    time.sleep(0.05)
    assert fp.fingerprint(clip) == real(clip)  # the file as it is now
    assert fp.known(clip)


def test_a_cache_that_cannot_be_written_is_only_slower(tmp_path, settled, monkeypatch):
    monkeypatch.setenv("AVHB_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").write_text("a file where the folder would be")
    clip = _write(tmp_path / "clip.mp4", os.urandom(fp.PERSIST_MIN_BYTES))
    value = fp.fingerprint(clip)
    assert fp.known(clip) and value == fp.fingerprint(clip)


def test_a_failed_rename_leaves_no_temporary_file(tmp_path, settled, monkeypatch):
    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fp.os, "replace", refuse)
    clip = _write(tmp_path / "clip.mp4", os.urandom(fp.PERSIST_MIN_BYTES))
    assert fp.fingerprint(clip)
    root = fp.store_dir()
    assert [p for p in root.rglob("*") if p.is_file()] == []


def test_known_answers_from_memory_only_while_the_file_is_unchanged(tmp_path, settled):
    clip = _write(tmp_path / "clip.mp4", b"v" * 3000)
    assert not fp.known(clip)
    fp.fingerprint(clip)
    assert fp.known(clip) and fp.known(os.path.relpath(clip))  # by its absolute path
    _write(tmp_path / "clip.mp4", b"w" * 3001)
    assert not fp.known(clip)
    fp.fingerprint(clip)
    os.unlink(clip)
    assert not fp.known(clip)  # gone: not known, and no error
    with pytest.raises(SampleError, match="file not found"):
        fp.fingerprint(clip)  # the memory does not answer for a file that is gone


def test_a_relative_path_is_the_same_file(tmp_path, settled, monkeypatch):
    clip = _write(tmp_path / "clip.mp4", b"r" * 2000)
    value = fp.fingerprint(clip)
    monkeypatch.chdir(tmp_path)
    reads = fp.reads
    assert fp.fingerprint("clip.mp4") == value and fp.reads == reads


def test_an_entry_folder_that_exists_already_is_used(tmp_path, settled):
    # entries share their folder (the name's first two hex digits): a second entry in it is stored too
    clip = _write(tmp_path / "clip.mp4", os.urandom(fp.PERSIST_MIN_BYTES))
    entry, _ = fp._entry(os.path.abspath(clip), fp.stat_key(clip))
    entry.parent.mkdir(parents=True)
    fp.fingerprint(clip)
    assert _entries() == [entry]


def test_threads_asking_for_one_file_at_once_read_it_once(tmp_path, settled, monkeypatch):
    import threading

    clip = _write(tmp_path / "frame.jpg", b"p" * 3000)  # below the persist size: only memory answers
    real, hashed = fp._hash_file, []

    def slow(path):
        hashed.append(path)
        time.sleep(0.3)  # the other thread reaches the lock meanwhile
        return real(path)

    monkeypatch.setattr(fp, "_hash_file", slow)
    start = threading.Barrier(2)
    values = []

    def ask():
        start.wait()
        values.append(fp.fingerprint(clip))

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(values) == 2 and values[0] == values[1] == real(clip)
    assert len(hashed) == 1  # the second waited for the first one's answer


def test_the_racy_window_is_read_from_the_ctime_not_the_mtime(tmp_path):
    # a file unpacked with its old mtime put back (tar, cp -p) was still changed just now: its ctime says so
    fp.forget()
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"v" * 3000)
    hour_ago = time.time() - 3600
    os.utime(clip, (hour_ago, hour_ago))
    assert fp.fingerprint(str(clip)) and not fp.known(str(clip))  # hashed, not remembered
    fp.forget()


def test_a_remembered_file_costs_one_stat(tmp_path, settled, monkeypatch):
    # a resumed 100,000-sample run asks for every media file again: memory answers with one stat, no lock,
    # no file checks
    clip = _write(tmp_path / "clip.mp4", b"v" * 3000)
    value = fp.fingerprint(clip)
    real, stats = fp.stat_key, []
    monkeypatch.setattr(fp, "stat_key", lambda path: stats.append(path) or real(path))
    assert fp.fingerprint(clip) == value and stats == [os.path.abspath(clip)]


def test_a_small_file_never_looks_in_the_store(tmp_path, settled, monkeypatch):
    clip = _write(tmp_path / "frame.jpg", b"p" * (fp.PERSIST_MIN_BYTES - 1))

    def no_entry(path, key):
        raise AssertionError("a file below the persist size looked for its entry")

    monkeypatch.setattr(fp, "_entry", no_entry)
    assert fp.fingerprint(clip) and fp.known(clip)
