"""A preempted or requeued shard resumes on another machine (issue 27).

* SIGTERM mid-run (a scheduler's preemption): the calls in flight finish
  and are journaled, the lock is released, exit 143 with one line; the
  same command on another host (``tests/cluster/as_host.py``: the hostname the
  lock reads) finishes the shard with no call sent twice (counted by the
  local OpenAI-compatible server), and the merge of the shards equals the
  unsharded run;
* SIGKILL (a node that died, no signal handled): the lock file keeps naming
  the dead host; its lease (renewed every ``AVHB_LOCK_LEASE_S``) is refused
  while fresh and taken over, with a note, once expired;
* a live lease on another host is refused even where the ``flock`` does not
  cross machines, and a holder whose clock differs is named, not trusted;
* ``avhb merge`` takes an expired lease of a shard folder over the same way.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from avhb.errors import UserError
from avhb.runfolder.lock import RunFolderLocked, RunLock, holder
from avhb.run.usage import without_timings
from tests.servers.openai_server import ScriptedServer, echo_last_user

AS_HOST = str(Path(__file__).with_name("as_host.py"))
ROWS = 40
CONCURRENCY = 2


def _answer(body: dict) -> str:
    m = re.search(r"ANSWER:\s*(\S+)", echo_last_user(body))
    return m.group(1) if m else "no idea"


def _flags(tmp_path: Path, server: ScriptedServer) -> list[str]:
    data = tmp_path / "data"
    if not data.exists():
        data.mkdir()
        rows = [{"id": f"r{i:02d}", "q": f"question {i}", "a": f"ans{i % 7}", "kind": "xy"[i % 2]} for i in range(ROWS)]
        (data / "easy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return ["--tasks", "testpack/qa_easy", "--model",
            f"openai:fake,base_url={server.base_url},concurrency={CONCURRENCY}", "--sample-data",
            "--data", f"testpack/qa_easy={data / 'easy.jsonl'}", "--no-report"]


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, OPENAI_API_KEY="sk-test-not-real", **extra)


def _on(host: str, *args: str, env: dict | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, AS_HOST, host, *args], env=env or _env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _until(check, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def _shard_size(folder: Path) -> int:
    return _lines(folder / "samples" / "testpack__qa_easy.jsonl")


def test_a_shard_sigtermed_mid_run_resumes_on_another_host_with_no_call_sent_twice(tmp_path, testpack):
    with ScriptedServer(reply=_answer, delay=0.2) as server:
        flags = _flags(tmp_path, server)
        full = subprocess.run([sys.executable, "-m", "avhb.cli", *flags, "--output-dir", str(tmp_path / "full")],
                              env=_env(), capture_output=True, text=True, timeout=300)
        assert full.returncode == 0, full.stderr[-2000:]
        server.reset_counters()

        shard = tmp_path / "shard-0"
        command = [*flags, "--shard", "0/2", "--output-dir", str(shard)]
        first = _on("node07", *command)
        _until(lambda: server.count >= 6 or first.poll() is not None)
        assert first.poll() is None
        assert holder(shard).host == "node07" and holder(shard).lease_s == 30
        first.send_signal(signal.SIGTERM)
        out, err = first.communicate(timeout=60)
        assert first.returncode == 143, err[-3000:]
        last = err.strip().splitlines()[-1]
        assert last.startswith("avhb: stopped by SIGTERM: the calls in flight finished and were journaled, ")
        assert "samples not attempted; the run folder's lock is released: re-run the same command to resume" in last
        assert holder(shard) is None  # released: nothing for the next machine to wait for
        sent = server.count
        assert _lines(shard / "journal" / "responses.jsonl") == sent  # every call the server got is journaled
        assert json.loads((shard / "results.json").read_text())["stopped"].startswith("stopped by SIGTERM; ")

        # the requeued task, on another node: the same command finishes the shard, nothing asked twice
        second = _on("node08", *command)
        out, err = second.communicate(timeout=300)
        assert second.returncode == 0, err[-3000:]
        assert "another machine" not in err and "took over" not in err
        size = _shard_size(shard)
        assert sent < size and server.count == size == _lines(shard / "journal" / "responses.jsonl")
        assert "stopped" not in json.loads((shard / "results.json").read_text())

        other = subprocess.run([sys.executable, "-m", "avhb.cli", *flags, "--shard", "1/2", "--output-dir",
                                str(tmp_path / "shard-1")], env=_env(), capture_output=True, text=True, timeout=300)
        assert other.returncode == 0, other.stderr[-2000:]
        assert server.count == ROWS  # over both shards: every sample asked once
    merged = subprocess.run([sys.executable, "-m", "avhb.cli", "merge", str(tmp_path / "merged"), str(shard),
                             str(tmp_path / "shard-1"), "--no-report"], env=_env(), capture_output=True, text=True)
    assert merged.returncode == 0, merged.stderr[-2000:]
    assert (without_timings(json.loads((tmp_path / "merged" / "results.json").read_text()))
            == without_timings(json.loads((tmp_path / "full" / "results.json").read_text())))


def test_a_stopped_shard_is_refused_by_the_merge_until_resumed(tmp_path, testpack, capsys):
    """SIGTERM during the last task leaves results for every task: the
    merge still refuses it (results.json says ``stopped``)."""
    from avhb.cli import main

    flags = ["--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--no-report"]
    shards = [tmp_path / f"s{i}" for i in range(2)]
    for i, out in enumerate(shards):
        assert main([*flags, "--shard", f"{i}/2", "--output-dir", str(out)]) == 0
    res = json.loads((shards[1] / "results.json").read_text())
    res["stopped"] = "stopped by SIGTERM; 3 samples not attempted"
    (shards[1] / "results.json").write_text(json.dumps(res))
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "m"), *map(str, shards)]) == 2
    err = capsys.readouterr().err
    assert f"shard 1/2 ({shards[1]}) is unfinished: it stopped before the end (stopped by SIGTERM; 3 samples not " \
           "attempted); resume it with its original command" in err


def test_a_dead_hosts_lease_is_refused_while_fresh_and_taken_over_once_expired(tmp_path, testpack, monkeypatch):
    lease = 1.0
    env = _env(AVHB_LOCK_LEASE_S=str(lease))
    with ScriptedServer(reply=_answer, delay=0.2) as server:
        shard = tmp_path / "shard-0"
        command = [*_flags(tmp_path, server), "--shard", "0/2", "--output-dir", str(shard)]
        first = _on("node07", *command, env=env)
        _until(lambda: server.count >= 6 or first.poll() is not None)
        assert first.poll() is None
        renewed = holder(shard).renewed
        _until(lambda: holder(shard).renewed != renewed, timeout=10)  # the holder renews its lease
        first.kill()  # the node dies: no signal handled, the record stays
        first.wait()
        dead = holder(shard)
        assert dead.host == "node07" and dead.pid == first.pid and dead.lease_s == lease
        sent, kept = server.count, _lines(shard / "journal" / "responses.jsonl")
        assert sent - kept <= CONCURRENCY  # the killed process lost at most its calls in flight

        # another machine, at once: the lease is fresh, the folder is refused (its flock is free)
        monkeypatch.setattr(socket, "gethostname", lambda: "node08")
        monkeypatch.setenv("AVHB_LOCK_LEASE_S", str(lease))
        with pytest.raises(RunFolderLocked, match=rf"in use by pid {first.pid} on node07 .*its lease renewed \d+ s "
                                                  "ago: wait for it to finish"):
            RunLock(shard).acquire()
        monkeypatch.undo()

        # once it is older than 4 periods: taken over, with a note, and the shard finishes
        _until(lambda: time.time() - dead.renewed > 4 * lease + 0.2, timeout=30)
        second = _on("node08", *command, env=env)
        out, err = second.communicate(timeout=300)
        assert second.returncode == 0, err[-3000:]
        assert re.search(rf"avhb: note: {re.escape(str(shard))}: took over the lock of pid {first.pid} on node07 "
                         rf"\(since [^)]*\), another machine: its lease \(every 1 s\) was last renewed \d+ s ago and "
                         r"not while it was watched for 1.5 s, so that run is gone", err), err[-3000:]
        size = _shard_size(shard)
        # what the dead process had journaled was kept: only the rest was asked
        assert server.count - sent == size - kept and _lines(shard / "journal" / "responses.jsonl") == size
        assert holder(shard) is None


_LIVE = """
import fcntl, socket, sys, time
socket.gethostname = lambda: "node07"
skew = float(sys.argv[2])
if skew:
    real = time.time
    time.time = lambda: real() - skew  # this holder's clock runs behind
from avhb.runfolder.lock import RunLock
lock = RunLock(sys.argv[1])
lock.acquire()
fcntl.flock(lock._fd, fcntl.LOCK_UN)  # a filesystem whose flock does not reach other machines
print("held", flush=True)
time.sleep(120)
"""


class _LiveElsewhere:
    """A live holder on "node07" that keeps renewing its lease, on a folder
    whose flock this machine does not see."""

    def __init__(self, folder: Path, skew: float = 0.0):
        self.proc = subprocess.Popen([sys.executable, "-c", _LIVE, str(folder), str(skew)], stdout=subprocess.PIPE,
                                     text=True, env=dict(os.environ, AVHB_LOCK_LEASE_S="0.3"))
        assert self.proc.stdout.readline().strip() == "held"

    def __enter__(self) -> "_LiveElsewhere":
        return self

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()


def test_a_live_lease_on_another_host_is_refused_and_a_clock_difference_named(tmp_path, testpack):
    from tests.conftest import run_cli

    out = tmp_path / "run"
    out.mkdir()
    with _LiveElsewhere(out) as live:
        with pytest.raises(RunFolderLocked, match=rf"in use by pid {live.proc.pid} on node07 .*its lease renewed"):
            RunLock(out).acquire()
        time.sleep(1.5)  # well past 4 periods of 0.3 s: still renewed, still refused
        proc = run_cli("--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--no-report",
                       "--output-dir", str(out))
        assert proc.returncode == 2
        assert re.search(rf"avhb: error: {re.escape(str(out))} is in use by pid {live.proc.pid} on node07 \(since "
                         r"[^)]*\), its lease renewed 0 s ago: wait for it to finish", proc.stderr), proc.stderr
        assert holder(out).pid == live.proc.pid  # untouched
    # a holder whose clock is 100 s behind: its lease looks old here, but is seen renewed while watched
    other = tmp_path / "other"
    other.mkdir()
    with _LiveElsewhere(other, skew=100) as live:
        with pytest.raises(UserError, match=rf"in use by pid {live.proc.pid} on node07 .*renewed while it was watched, "
                                            r"though by this machine's clock its last renewal was 10\d s ago: the "
                                            r"clocks of .* and node07 differ by about 10\d s"):
            RunLock(other).acquire()
        assert holder(other).pid == live.proc.pid


def test_a_lease_taken_over_stops_its_old_holder(tmp_path, monkeypatch):
    """A holder that was stopped (a suspended job) past its lease finds
    another token at its next renewal: it calls ``on_lost`` and leaves the
    file to the new holder."""
    monkeypatch.setenv("AVHB_LOCK_LEASE_S", "0.2")
    old = RunLock(tmp_path)
    old.acquire()
    lost = []
    old.on_lost = lost.append
    record = json.loads((tmp_path / ".lock").read_text())
    record.update(token="new-holder", pid=4242, host="node08")
    (tmp_path / ".lock").write_text(json.dumps(record))
    _until(lambda: lost, timeout=5)
    assert lost[0].pid == 4242 and old.lost is not None
    old.release()
    assert holder(tmp_path).pid == 4242  # not emptied: it is the new holder's


def test_merge_takes_an_expired_lease_of_a_shard_over(tmp_path, testpack, capsys):
    from avhb.cli import main

    flags = ["--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--no-report"]
    shards = [tmp_path / f"s{i}" for i in range(2)]
    for i, out in enumerate(shards):
        assert main([*flags, "--shard", f"{i}/2", "--output-dir", str(out)]) == 0
    stale = {"pid": 999999, "host": "node07", "since": time.time() - 600, "command": [], "token": "t",
             "lease_s": 0.2, "renewed": time.time() - 500}
    (shards[1] / ".lock").write_text(json.dumps(stale))
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "m"), *map(str, shards), "--no-report"]) == 0
    err = capsys.readouterr().err
    assert f"avhb: note: {shards[1]}: took over the lock of pid 999999 on node07" in err
    assert "its lease (every 0.2 s) was last renewed 500 s ago" in err
    # a fresh lease of another host is refused by the merge, naming it
    (shards[1] / ".lock").write_text(json.dumps({**stale, "lease_s": 30, "renewed": time.time()}))
    assert main(["merge", str(tmp_path / "m"), *map(str, shards), "--no-report"]) == 2
    assert f"shard 1/2 ({shards[1]}) is still running: pid 999999 on node07" in capsys.readouterr().err
