"""Issue 27, item 3: shards that differ only in how their calls were made
merge.  Three real shards of a text task against the counting server on
127.0.0.1; each loses some calls (HTTP 400) and is resumed: one as it
ran, one with another backend concurrency, one with ``--executor ray`` (a
real local Ray cluster the run starts).  The merge accepts them and equals the
unsharded run; each shard's run.json records its invocations, its call
settings as they were.

Skipped when Ray is not installed (``scripts/test.sh`` installs it).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.servers.openai_server import Fault, ScriptedServer, echo_last_user
from avhb.run.usage import without_timings

pytest.importorskip("ray")

ROWS = 24


def _answer(body: dict) -> str:
    m = re.search(r"ANSWER:\s*(\S+)", echo_last_user(body))
    return m.group(1) if m else "no idea"


def _data(root: Path) -> Path:
    root.mkdir()
    rows = [{"id": f"r{i:02d}", "q": f"question {i}", "a": f"ans{i % 5}", "kind": "xy"[i % 2]} for i in range(ROWS)]
    (root / "easy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _samples(run: Path) -> bytes:
    return (run / "samples" / "testpack__qa_easy.jsonl").read_bytes()


def test_shards_resumed_with_another_concurrency_or_on_ray_merge_into_the_unsharded_run(tmp_path, testpack):
    data = _data(tmp_path / "data")
    failing = {"on": False}

    def fault(index, body):  # while on: every question number divisible by 3 fails, not retried
        m = re.search(r"question (\d+)", echo_last_user(body))
        if failing["on"] and m and int(m.group(1)) % 3 == 0:
            return Fault(status=400, body='{"error": {"message": "scripted"}}')
        return None

    env = {"OPENAI_API_KEY": "sk-test-not-real", "RAY_USAGE_STATS_ENABLED": "0"}
    with ScriptedServer(reply=_answer) as server:
        server.set_fault(fault)

        def command(out: Path, concurrency: int, *extra: str) -> list[str]:
            return ["--tasks", "testpack/qa_easy", "--model",
                    f"openai:fake,base_url={server.base_url},concurrency={concurrency}", "--sample-data",
                    "--data", f"testpack/qa_easy={data}", "--no-report", "--max-errors", "100%",
                    "--output-dir", str(out), *extra]

        full = tmp_path / "full"
        proc = run_cli(*command(full, 2), env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        shards = [tmp_path / f"shard{i}" for i in range(3)]
        failing["on"] = True
        for i, out in enumerate(shards):
            proc = run_cli(*command(out, 2, "--shard", f"{i}/3"), env=env)
            assert proc.returncode == 0, proc.stderr[-3000:]
        errors = [json.loads((s / "results.json").read_text())["results"]["testpack/qa_easy"]["errors"] for s in shards]
        assert sum(errors) == len(range(0, ROWS, 3)) and errors[1] > 0 and errors[2] > 0
        failing["on"] = False
        calls = server.count
        same = run_cli(*command(shards[0], 2, "--shard", "0/3"), env=env)  # resumed as it ran
        assert same.returncode == 0 and "how calls are made changed" not in same.stderr, same.stderr[-3000:]
        resumed = run_cli(*command(shards[1], 5, "--shard", "1/3"), env=env)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert "how calls are made changed: concurrency 2 -> 5" in resumed.stderr
        on_ray = run_cli(*command(shards[2], 2, "--shard", "2/3", "--executor", "ray,workers=1"), env=env,
                         timeout=600)
        assert on_ray.returncode == 0, on_ray.stderr[-3000:]
        assert 'how calls are made changed: executor local -> {"kind": "ray", "workers": 1}' in on_ray.stderr
        assert server.count - calls == sum(errors)  # only the failed calls were sent again
        merged = tmp_path / "merged"
        proc = run_cli("merge", str(merged), *map(str, shards), "--no-report")
        assert proc.returncode == 0, proc.stderr[-3000:]

    assert _samples(merged) == _samples(full)
    assert without_timings(json.loads((merged / "results.json").read_text())) == without_timings(
        json.loads((full / "results.json").read_text()))  # latencies are measured, not computed
    assert json.loads((merged / "results.json").read_text())["results"]["testpack/qa_easy"]["errors"] == 0
    one, ray_run = (json.loads((s / "run.json").read_text()) for s in shards[1:])
    assert [i["how"]["concurrency"] for i in one["invocations"]] == [2, 5]
    assert [i["how"]["executor"] for i in ray_run["invocations"]] == ["local", {"kind": "ray", "workers": 1}]
    first = json.loads((shards[0] / "run.json").read_text())
    for key in ("gen_kwargs", "media", "seed", "tasks"):
        assert one[key] == ray_run[key] == first[key]
    assert one["model"]["identity"] == ray_run["model"]["identity"] == first["model"]["identity"]
