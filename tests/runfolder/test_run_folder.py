"""Issue 15, defects 3, 6 and 7: the run folder.  An --output-dir that is a
file or cannot be written, and a full disk, are one line (exit 2 or 1) and
keep finished work; one process at a time writes a folder (a lock, a
stale lock taken over); temp files of a killed write are cleaned on open."""
from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from avhb.errors import EnvironmentFailure, UserError
from avhb.runfolder.folder import RunFolder
from avhb.runfolder.journal import Journal
from avhb.runfolder.lock import RunFolderLocked, RunLock, holder
from tests.conftest import run_cli

QA = ["--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--no-report"]


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("avhb: error")]


def test_output_dir_that_is_a_file(testpack, tmp_path):
    target = tmp_path / "afile"
    target.write_text("x")
    proc = run_cli(*QA, "--output-dir", str(target))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert _errors(proc.stderr) == [f"avhb: error: --output-dir {target}: is a file, not a folder"]
    proc = run_cli(*QA, "--output-dir", str(target / "sub"))
    assert proc.returncode == 2 and "a parent of it is a file" in _errors(proc.stderr)[0]


def test_output_dir_that_cannot_be_created(testpack, tmp_path):
    proc = run_cli(*QA, "--output-dir", "/proc/avhb-no-such-place/run")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    [line] = _errors(proc.stderr)
    assert "--output-dir /proc/avhb-no-such-place/run: cannot create it" in line


def test_journal_on_a_full_disk_fails_cleanly(tmp_path):
    (tmp_path / "responses.jsonl").symlink_to("/dev/full")
    journal = Journal(tmp_path, fsync_interval=0)
    with pytest.raises(EnvironmentFailure, match="No space left on device"):
        journal.put("responses", "k", {"response": "a"})
    journal.close()  # no second error from close


def _fill_journal(run: Path, limit: int) -> None:
    """Pad the journal with blank lines (skipped when read) up to ``limit`` - 64
    bytes, so its next entries exceed a file-size limit of ``limit``."""
    path = run / "journal" / "responses.jsonl"
    size = path.stat().st_size
    with open(path, "ab") as fh:
        fh.write(b"\n" * (limit - 64 - size))


def test_full_disk_mid_run_is_one_line_and_keeps_finished_work(testpack, tmp_path):
    out = tmp_path / "run"
    proc = run_cli(*QA, "--output-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    limit = 256 * 1024
    _fill_journal(out, limit)

    def small_disk():  # every file this process writes is limited to `limit` bytes: EFBIG past it
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    args = [sys.executable, "-m", "avhb.cli", "--tasks", "testpack/qa_all", "--model", "testpack/echo",
            "--sample-data", "--no-report", "--output-dir", str(out)]
    proc = subprocess.run(args, capture_output=True, text=True, preexec_fn=small_disk, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = _errors(proc.stderr)
    assert "cannot write the journal" in line and "File too large" in line and "re-run the command" in line
    # qa_easy (replayed from the journal) finished before the failure: its results and samples are kept
    results = json.loads((out / "results.json").read_text())["results"]
    assert results["testpack/qa_easy"]["exact"] == 1.0 and "testpack/qa_hard" not in results
    # with room again, the same command resumes and finishes
    proc = run_cli("--tasks", "testpack/qa_all", "--model", "testpack/echo", "--sample-data", "--no-report",
                   "--output-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads((out / "results.json").read_text())["results"]) == {"testpack/qa_easy", "testpack/qa_hard"}


# ---------------------------------------------------------------- the lock

def test_lock_api(tmp_path):
    first, second = RunLock(tmp_path), RunLock(tmp_path)
    assert first.acquire() is None and first.held
    me = holder(tmp_path)
    assert me.pid == os.getpid() and me.host == socket.gethostname() and me.since <= time.time()
    with pytest.raises(RunFolderLocked) as info:
        second.acquire()
    assert f"pid {os.getpid()} on {socket.gethostname()}" in str(info.value)
    first.release()
    assert holder(tmp_path) is None and (tmp_path / ".lock").exists()
    with second:
        assert second.held
    assert not second.held


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_lock_of_a_killed_process_is_taken_over(testpack, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    pid = _dead_pid()
    (out / ".lock").write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "since": time.time() - 60}))
    lock = RunLock(out)
    stale = lock.acquire()
    assert stale is not None and stale.pid == pid and holder(out).pid == os.getpid()
    lock.release()
    # the CLI takes it over too, and says so
    (out / ".lock").write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "since": time.time()}))
    proc = run_cli(*QA, "--output-dir", str(out))
    assert proc.returncode == 0 and f"took over the lock of pid {pid}" in proc.stderr, proc.stderr


def test_a_lock_recorded_on_another_host_is_not_taken_over(tmp_path):
    (tmp_path / ".lock").write_text(json.dumps({"pid": 1, "host": "elsewhere.example", "since": 0}))
    with pytest.raises(UserError, match=r"pid 1 on elsewhere.example .*another machine"):
        RunLock(tmp_path).acquire()


@pytest.mark.slow  # the first run holds the folder about 18 s (3 s a call) while the second is tried
def test_second_process_on_one_folder_exits_2_naming_the_holder(testpack, tmp_path):
    out, calls = tmp_path / "run", tmp_path / "calls.txt"
    first = subprocess.Popen([sys.executable, "-m", "avhb.cli", "--tasks", "testpack/qa_easy", "--model",
                              f"testpack/echo,delay=3,concurrency=1,calls={calls}", "--sample-data", "--no-report",
                              "--output-dir", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:  # 6 samples, one at a time, 3 s each: the first run holds the folder for ~18 s, longer than a
        # second process takes to start on a loaded machine (at 0.5 s a call it could finish first)
        deadline = time.time() + 120
        while not (calls.exists() and calls.read_text()) and time.time() < deadline:
            time.sleep(0.05)
        proc = run_cli(*QA, "--output-dir", str(out))
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        [line] = _errors(proc.stderr)
        assert f"{out} is in use by pid {first.pid} on {socket.gethostname()}" in line
    finally:
        first.kill()
        first.wait()
    # the first run was killed: its lock is stale now and the folder resumes (with its own model settings:
    # the echo backend's args are its identity, and another one would be refused as another configuration)
    proc = run_cli("--tasks", "testpack/qa_easy", "--model", f"testpack/echo,delay=3,concurrency=1,calls={calls}",
                   "--sample-data", "--no-report", "--output-dir", str(out))
    assert proc.returncode == 0 and f"took over the lock of pid {first.pid}" in proc.stderr


def test_orphaned_temp_files_are_removed_on_open(testpack, tmp_path):
    out = tmp_path / "run"
    proc = run_cli(*QA, "--output-dir", str(out))
    assert proc.returncode == 0
    orphans = [out / ".results.json.4242.tmp", out / ".report.html.4242.tmp", out / "samples" / ".x.jsonl.4242.tmp"]
    for path in orphans:
        path.write_bytes(b"x" * 1000)
    proc = run_cli(*QA, "--output-dir", str(out))
    assert proc.returncode == 0
    assert not any(p.exists() for p in orphans)
    assert (out / "results.json").is_file()


def test_run_folder_open_reports_and_cleans(tmp_path, capsys):
    folder = RunFolder(tmp_path / "r")
    (folder.root / ".run.json.1.tmp").write_text("{")
    assert folder.open() is None and not (folder.root / ".run.json.1.tmp").exists()
    folder.close()


def test_the_samples_file_shows_a_documents_plain_fields():
    """Bytes and arrays are left out of a sample's line, long text cut at
    20,000 characters (str subclasses too); plain values kept as they are."""
    import numpy as np

    from avhb.runfolder.folder import _public_doc

    class Text(str):
        pass

    doc = {"q": "short", "long": "x" * 20001, "sub": Text("y" * 20001), "n": 3, "f": 0.5, "none": None, "ok": True,
           "list": [1], "map": {"a": 1}, "raw": b"\x00", "buf": bytearray(b"1"), "pixels": np.zeros(2)}
    out = _public_doc(doc)
    assert sorted(out) == ["f", "list", "long", "map", "n", "none", "ok", "q", "sub"]
    assert out["long"] == "x" * 20000 + "…" and out["sub"] == "y" * 20000 + "…" and out["map"] is doc["map"]
