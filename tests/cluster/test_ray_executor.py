"""``--executor ray``: a real local Ray cluster (started by the run itself,
two worker processes), a text task against a scripted OpenAI-compatible
server on 127.0.0.1, one worker SIGKILLed mid-run: the run finishes with
results and samples identical to a one-process run, every sample exactly
once, and the duplicated calls bounded by what the dead worker held.

Skipped when Ray is not installed (``pip install 'avhb[ray]'``;
``scripts/test.sh`` installs it).  Takes tens of seconds: starting Ray.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.servers.openai_server import ScriptedServer, echo_last_user
from avhb.run.usage import without_timings

pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # starts a local Ray cluster per test: 30-50 s each

ROWS = 60
PER_WORKER = 2  # requests each worker holds (the openai backend's concurrency)


def _answer(body: dict) -> str:
    m = re.search(r"ANSWER:\s*(\S+)", echo_last_user(body))
    return m.group(1) if m else "no idea"


def _data(root: Path) -> Path:
    root.mkdir()
    rows = [{"id": f"r{i:02d}", "q": f"question {i}", "a": f"ans{i % 7}", "kind": "xy"[i % 2], "know": i % 5 != 0}
            for i in range(ROWS)]
    (root / "easy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _samples(run: Path) -> bytes:
    return (run / "samples" / "testpack__qa_easy.jsonl").read_bytes()


def _one_process_run(server: ScriptedServer, tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """The command and environment of the run under test, after running it
    once in one process into ``tmp_path/one`` (the reference); the server's
    counters are reset afterwards."""
    data = _data(tmp_path / "data")
    model = f"openai:fake,base_url={server.base_url},concurrency={PER_WORKER}"
    base = [sys.executable, "-m", "avhb.cli", "--tasks", "testpack/qa_easy", "--model", model, "--sample-data",
            "--data", f"testpack/qa_easy={data}", "--no-report"]
    env = dict(os.environ, OPENAI_API_KEY="sk-test-not-real", RAY_USAGE_STATS_ENABLED="0")
    one = subprocess.run([*base, "--output-dir", str(tmp_path / "one")], env=env, capture_output=True, text=True,
                         timeout=300)
    assert one.returncode == 0, one.stderr[-3000:]
    assert server.count == ROWS
    server.reset_counters()
    return base, env


def test_a_worker_killed_mid_run_changes_nothing(tmp_path, testpack):
    with ScriptedServer(reply=_answer, delay=0.2) as server:
        base, env = _one_process_run(server, tmp_path)

        out = tmp_path / "ray"
        proc = subprocess.Popen([*base, "--executor", "ray,workers=2", "--output-dir", str(out)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        pids: dict[int, int] = {}

        def read() -> None:
            for line in proc.stderr:
                lines.append(line)
                m = re.match(r"avhb: ray worker (\d+) for openai:fake: pid (\d+)", line)
                if m:
                    pids.setdefault(int(m.group(1)), int(m.group(2)))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            deadline = time.monotonic() + 240
            while (server.count < 10 or 0 not in pids) and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            assert proc.poll() is None, "".join(lines)[-3000:]
            assert 0 in pids and 1 in pids and len({pids[0], pids[1], os.getpid()}) == 3, "".join(lines)[-3000:]
            killed_at = server.count
            os.kill(pids[0], signal.SIGKILL)
            proc.wait(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
        reader.join(timeout=10)
        stderr = "".join(lines)
        assert proc.returncode == 0, stderr[-3000:]
        assert killed_at < ROWS  # the kill landed mid-run

    # identical to the one-process run: every sample once, same answers, same numbers
    assert _samples(out) == _samples(tmp_path / "one")
    ray_res, one_res = (without_timings(json.loads((d / "results.json").read_text())) for d in (out, tmp_path / "one"))
    assert ray_res == one_res and ray_res["results"]["testpack/qa_easy"]["samples"] == ROWS
    ids = [json.loads(line)["id"] for line in _samples(out).splitlines()]
    assert len(ids) == len(set(ids)) == ROWS
    # the driver journaled each answer once; the calls made twice are at most what the dead worker held
    assert len((out / "journal" / "responses.jsonl").read_text().splitlines()) == ROWS
    assert ROWS <= server.count <= ROWS + PER_WORKER
    assert f"ray worker 0 for openai:fake (pid {pids[0]}) died" in stderr
    assert re.search(r"\[ray openai:fake\] w0( down)? \d+ calls [\d.]+/s \| w1 \d+ calls [\d.]+/s", stderr)
    run = json.loads((out / "run.json").read_text())
    assert run["model"]["executor"] == {"kind": "ray", "workers": 2}
    assert run["model"]["identity"] == json.loads((tmp_path / "one" / "run.json").read_text())["model"]["identity"]


def _names(pids: dict[int, int]) -> dict[int, str]:
    out = {}
    for pid in pids:
        try:
            out[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode().strip()
        except OSError:
            pass
    return out


def test_a_killed_driver_resumes_with_the_same_command(tmp_path, testpack):
    """The run folder on the driver is the single truth: the driver SIGKILLed
    mid-run takes the local Ray cluster it started with it (agents, raylet,
    workers: nothing left running), and the same command finishes the run
    with what was journaled kept, its result equal to a one-process run's."""
    from avhb.cluster.ray_reaper import _alive, descendants

    with ScriptedServer(reply=_answer, delay=0.2) as server:
        base, env = _one_process_run(server, tmp_path)

        out = tmp_path / "ray"
        command = [*base, "--executor", "ray,workers=2", "--output-dir", str(out)]
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        journal = out / "journal" / "responses.jsonl"
        try:
            deadline = time.monotonic() + 240
            while proc.poll() is None and time.monotonic() < deadline and (
                    not journal.exists() or len(journal.read_bytes().splitlines()) < 10):
                time.sleep(0.02)
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            started = descendants(proc.pid)  # the cluster the driver started, and avhb's reaper
            names = set(_names(started).values())
        finally:
            os.kill(proc.pid, signal.SIGKILL)  # the driver alone, as the OOM killer would
            proc.wait()
        assert {"ray::DashboardAgent", "ray::RuntimeEnvAgent"} <= names, names
        assert any(n.endswith("raylet") for n in names) and any(n.endswith("gcs_server") for n in names), names
        deadline = time.monotonic() + 30
        while _alive(started) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _names({pid: started[pid] for pid in _alive(started)})
        assert not left, f"still running after the driver was killed: {left}"
        kept = len(journal.read_bytes().splitlines())
        assert 10 <= kept < ROWS and not (out / "results.json").exists()
        calls_before = server.count

        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-3000:]
        # the journaled answers were kept: only the rest were asked again
        assert server.count - calls_before <= ROWS - kept + 2 * PER_WORKER

    assert _samples(out) == _samples(tmp_path / "one")
    assert without_timings(json.loads((out / "results.json").read_text())) == without_timings(
        json.loads((tmp_path / "one" / "results.json").read_text()))  # latencies are measured, not computed
    assert len((out / "journal" / "responses.jsonl").read_text().splitlines()) == ROWS
