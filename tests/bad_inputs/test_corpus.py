"""Runs the bad-input corpus (``cases.py``) through the CLI, several cases
at once, each in a fresh process under its own timeout; one test per case."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bad_inputs.cases import CASES, Case, _dead_port, build_world, seed_run

WORKERS = 3


@dataclass
class Outcome:
    proc: subprocess.CompletedProcess | None
    seconds: float
    timed_out: bool = False
    setup_error: str | None = None


def _fill(arg: str, world: Path, case_dir: Path, port: str) -> str:
    return arg.replace("{run}", str(case_dir / "run")).replace("{world}", str(world)).replace(
        "{case}", str(case_dir)).replace("{port}", port)


def _run_case(case: Case, world: Path, seed: Path, env: dict[str, str]) -> Outcome:
    case_dir = world / "cases" / case.name
    case_dir.mkdir(parents=True)
    if case.keep:
        shutil.copytree(seed, case_dir / "run")
    port = _dead_port()
    try:
        if case.setup:
            case.setup(world, case_dir)
    except Exception as exc:  # reported by the case's test
        return Outcome(None, 0.0, setup_error=f"{type(exc).__name__}: {exc}")
    args = [sys.executable, "-m", "avhb.cli", *(_fill(a, world, case_dir, port) for a in case.args)]
    full_env = {**os.environ, **env, "AVHB_CACHE_DIR": str(world / "cache"), **case.env}
    full_env.pop("OPENAI_API_KEY", None)
    start = time.perf_counter()
    try:
        proc = subprocess.run(args, capture_output=True, text=True, env=full_env, timeout=case.timeout,
                              preexec_fn=case.preexec, cwd=case_dir)
        return Outcome(proc, time.perf_counter() - start)
    except subprocess.TimeoutExpired:
        return Outcome(None, time.perf_counter() - start, timed_out=True)
    finally:
        holder = case_dir / "holder.pid"
        if holder.exists():
            try:
                os.kill(int(holder.read_text()), 9)
            except ProcessLookupError:
                pass


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    world = tmp_path_factory.mktemp("bad-inputs")
    env = build_world(world)
    (world / "env.json").write_text(json.dumps(env))
    seed = seed_run(world, {**env, "AVHB_CACHE_DIR": str(world / "cache")})
    with ThreadPoolExecutor(WORKERS) as pool:
        futures = {c.name: pool.submit(_run_case, c, world, seed, env) for c in CASES}
        outcomes = {name: f.result() for name, f in futures.items()}
    slow = sorted(outcomes.items(), key=lambda kv: -kv[1].seconds)[:5]
    print("slowest cases:", ", ".join(f"{n} {o.seconds:.1f}s" for n, o in slow))
    return world, seed, outcomes


def test_corpus_is_large_enough():
    assert len(CASES) >= 40 and len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(corpus, case: Case):
    world, seed, outcomes = corpus
    out = outcomes[case.name]
    assert out.setup_error is None, out.setup_error
    assert not out.timed_out, f"{case.name}: no answer within {case.timeout}s (a hang)"
    proc = out.proc
    text = proc.stderr if case.stream == "stderr" else proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    assert proc.returncode == case.code, f"exit {proc.returncode}, wanted {case.code}:\n{proc.stderr[-3000:]}"
    errors = [line for line in text.splitlines() if line.startswith("avhb: error")]
    if case.kind == "error":
        assert len(errors) == 1, errors or proc.stderr[-3000:]
        line = errors[0]
    else:
        assert not errors, errors
        prefix = {"warning": "avhb: warning", "note": "avhb: note"}.get(case.kind)
        matching = [l for l in text.splitlines() if prefix and l.startswith(prefix) and all(e in l for e in case.expect)]
        assert prefix is None or len(matching) == 1, proc.stderr[-3000:]
        line = matching[0] if matching else ""
    for expected in case.expect:
        assert expected in line, f"{expected!r} not in {line!r}"
    if case.max_seconds is not None:
        assert out.seconds < case.max_seconds, f"took {out.seconds:.1f}s"
    case_dir = world / "cases" / case.name
    if case.keep:  # the finished run in the folder survived
        seed_results = json.loads((seed / "results.json").read_text())["results"]
        now = json.loads((case_dir / "run" / "results.json").read_text())["results"]
        assert all(now.get(t) == r for t, r in seed_results.items()), now
        journal = (seed / "journal" / "responses.jsonl").read_bytes()
        assert (case_dir / "run" / "journal" / "responses.jsonl").read_bytes().startswith(journal)
    if case.check:
        case.check(world, case_dir, proc)
