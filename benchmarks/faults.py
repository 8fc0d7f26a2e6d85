"""Crash safety and fault tolerance, measured end to end (issue 15).

    python benchmarks/faults.py                      # 10 kills, every fault kind, 500 samples
    python benchmarks/faults.py --kills 3 --storms 503 --samples 120   # the test suite's short version

The run under test: ``testpack/qa_judged`` (a model call and a judge call
per sample, through the real OpenAI-compatible backend) on N generated
samples, against a scripted local server (tests/servers/openai_server.py)
that answers as a model (``m``) and as a 0/1/2 judge (``j``; every 11th
judge reply is unparsable once, so re-asks are exercised too).

1. **Reference**: one clean run; its samples and results are the truth.
2. **SIGKILL trials**: the same command in a fresh folder, killed at a
   random moment, then re-run to completion.  Kill moments rotate over
   three phases: during generation (after a random number of model calls),
   during judging (after a random number of judge calls), and during the
   final results/report writes (a random delay after the last judge call,
   within the tail the reference run took).  Per trial: samples lost
   (reference ids missing after the resume), duplicated (an id twice in a
   samples file), whether samples and results equal the reference, and
   *extra calls* (calls of the killed run + the resume - calls of the
   reference) against *in flight* (calls the server had received at the
   kill that the journal did not hold): every finished call is replayed,
   so the two are equal.
3. **Fault storms**: one fresh run per fault kind with the server failing
   20 % of requests that way (``429`` with Retry-After, ``500``, ``503``,
   ``hang`` past the client's 1 s timeout, ``drop``: connection closed with
   no reply, ``malformed`` JSON, ``empty`` body); the run must finish
   identical to the reference.

Prints one table; exits 1 if any trial lost, duplicated or changed anything.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.servers.openai_server import Fault, ScriptedServer  # noqa: E402

TASK = "testpack/qa_judged"
SAMPLES_FILE = "testpack__qa_judged.jsonl"
FAULT_KINDS = ("429", "500", "503", "hang", "drop", "malformed", "empty")
PHASES = ("generation", "judging", "writes")


# ---------------------------------------------------------------- the server's answers

class Answers:
    """The scripted model and judge; counts calls by role."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.model = 0
        self.judge = 0
        self.last_judge = 0.0

    def reset(self) -> None:
        with self.lock:
            self.model = self.judge = 0

    def __call__(self, body: dict) -> str:
        user = [m["content"] for m in body["messages"] if m["role"] == "user"]
        first = re.sub(r"</?data-[0-9a-f]+>", "", user[0] if isinstance(user[0], str) else "")
        if body.get("model") == "m":
            with self.lock:
                self.model += 1
            i = int(re.search(r"question (\d+)", first).group(1))
            answer = re.search(r"ANSWER: (\S+)", first).group(1)
            return answer if i % 3 else f"not {answer}"
        with self.lock:
            self.judge += 1
            self.last_judge = time.monotonic()
        i = int(re.search(r"question (\d+)", first).group(1))
        if i % 11 == 0 and len(user) == 1:
            return "I cannot decide."  # unparsable: the judge is re-asked
        ref = re.search(r"Reference: (\S+)", first).group(1)
        resp = re.search(r"Response: (.*)\nScore", first, re.S).group(1).strip()
        return "2" if resp == ref else "0"


def storm(kind: str, share: float = 0.2, seed: int = 15):
    """A fault function failing ``share`` of requests with ``kind``."""
    def fault(index: int, body: dict) -> Fault | None:
        h = int(hashlib.sha256(f"{seed}:{index}".encode()).hexdigest()[:8], 16)
        if h % 1000 >= share * 1000:
            return None
        return {"429": Fault(status=429, retry_after="0.05"), "500": Fault(status=500), "503": Fault(status=503),
                "hang": Fault(sleep=1.5), "drop": Fault(drop=True), "malformed": Fault(malformed=True),
                "empty": Fault(empty=True)}[kind]
    return fault


# ---------------------------------------------------------------- runs

@dataclass
class World:
    root: Path
    data: Path
    env: dict[str, str]
    base_url: str

    def command(self, out: Path, *, timeout: float | None = None) -> list[str]:
        model = f"openai:m,base_url={self.base_url},max_retries=10" + (f",timeout={timeout}" if timeout else "")
        judge = f"scorer=openai:j,base_url={self.base_url},max_retries=10" + (f",timeout={timeout}" if timeout else "")
        return [sys.executable, "-m", "avhb.cli", "--tasks", TASK, "--model", model, "--judge", judge,
                "--data", f"testpack/qa={self.data}", "--output-dir", str(out), "--max-errors", "0%"]


def make_world(root: Path, samples: int, base_url: str) -> World:
    data = root / "data"
    data.mkdir(parents=True)
    rows = [{"id": f"s{i:04d}", "q": f"question {i}", "a": f"a{i % 7}"} for i in range(samples)]
    (data / "easy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "fixtures" / "testpack_src"),
                                                         os.environ.get("PYTHONPATH", "")]),
           "AVHB_CACHE_DIR": str(root / "cache"), "HF_HUB_OFFLINE": "1"}
    env.pop("OPENAI_API_KEY", None)
    return World(root, data, env, base_url)


def run(world: World, out: Path, timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(world.command(out, timeout=timeout), env=world.env, capture_output=True, text=True,
                          timeout=900)


def projection(out: Path) -> tuple[list[tuple], dict]:
    """What must not change: each sample's outcome, and the results."""
    lines = [json.loads(x) for x in (out / "samples" / SAMPLES_FILE).read_text().splitlines()]
    rows = [(x["id"], x["repeat"], x["response"], x["extracted"], json.dumps(x["scores"], sort_keys=True), x["error"],
             json.dumps({k: (v.get("value"), v.get("ok")) for k, v in (x["judgements"] or {}).items()}, sort_keys=True))
            for x in lines]
    res = json.loads((out / "results.json").read_text())
    return rows, {"results": res["results"], "groups": res.get("groups")}


def journal_finished(out: Path) -> int:
    n = 0
    for kind in ("responses", "judges"):
        path = out / "journal" / f"{kind}.jsonl"
        if not path.exists():
            continue
        for line in path.read_bytes().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # the torn line of the kill
            if isinstance(rec, dict) and rec.get("error") is None:
                n += 1
    return n


@dataclass
class Trial:
    name: str
    phase: str = ""
    lost: int = 0
    duplicated: int = 0
    identical: bool = False
    extra_calls: int = 0
    in_flight: int = 0
    faults: int = 0
    temp_files_at_kill: int = 0
    seconds: float = 0.0
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.lost and not self.duplicated and self.identical and self.extra_calls == self.in_flight


def compare(trial: Trial, out: Path, reference: tuple) -> None:
    rows, results = projection(out)
    ids = [r[0] for r in rows]
    trial.lost = len({r[0] for r in reference[0]} - set(ids))
    trial.duplicated = len(ids) - len(set(ids))
    trial.identical = rows == reference[0] and results == reference[1]


def kill_trial(world: World, srv: ScriptedServer, answers: Answers, k: int, phase: str, rng: random.Random,
               reference: tuple, ref_calls: int, ref_tail: float, samples: int) -> Trial:
    out = world.root / f"kill{k}"
    trial = Trial(f"kill {k + 1}", phase)
    srv.reset_counters()
    answers.reset()
    start = time.perf_counter()
    proc = subprocess.Popen(world.command(out), env=world.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if phase == "generation":
        target = rng.randint(1, samples - 1)
        wait = lambda: answers.model >= target
    elif phase == "judging":
        target = rng.randint(1, samples - 1)
        wait = lambda: answers.judge >= target
    else:
        wait = lambda: answers.judge >= samples + len(range(0, samples, 11))  # every judge call, re-asks too
    deadline = time.time() + 600
    while not wait() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.001)
    if phase == "writes":
        time.sleep(rng.uniform(0, ref_tail))
    if proc.poll() is not None:
        trial.note = "finished before the kill"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(0.3)  # let the server count what was already on the wire
    at_kill = srv.count
    trial.temp_files_at_kill = len(list(out.glob(".*.tmp")) + list((out / "samples").glob(".*.tmp")))
    trial.in_flight = at_kill - journal_finished(out)
    done = run(world, out)
    if done.returncode != 0:
        trial.note = f"resume exited {done.returncode}: {done.stderr[-300:]}"
        return trial
    trial.extra_calls = srv.count - ref_calls
    trial.seconds = time.perf_counter() - start
    compare(trial, out, reference)
    if list(out.glob(".*.tmp")):
        trial.note = "temp files left after the resume"
        trial.identical = False
    return trial


def storm_trial(world: World, srv: ScriptedServer, answers: Answers, kind: str, reference: tuple,
                ref_calls: int) -> Trial:
    out = world.root / f"storm-{kind}"
    trial = Trial(f"storm {kind}", "20% of requests")
    srv.reset_counters()
    srv.set_fault(storm(kind))
    start = time.perf_counter()
    try:
        done = run(world, out, timeout=1.0)
    finally:
        srv.set_fault(None)
    trial.seconds = time.perf_counter() - start
    trial.faults = srv.count - ref_calls  # every faulted request was retried once more
    if done.returncode != 0:
        trial.note = f"exited {done.returncode}: {done.stderr[-300:]}"
        return trial
    compare(trial, out, reference)
    return trial


def measure(samples: int = 500, kills: int = 10, kinds: tuple[str, ...] = FAULT_KINDS, seed: int = 15,
            workdir: Path | None = None) -> tuple[list[Trial], dict]:
    rng = random.Random(seed)
    answers = Answers()
    tmp = Path(tempfile.mkdtemp(prefix="avhb-faults-", dir=workdir))
    try:
        with ScriptedServer(reply=answers, record=False) as srv:
            world = make_world(tmp, samples, srv.base_url)
            t0 = time.perf_counter()
            ref = run(world, tmp / "reference")
            if ref.returncode != 0:
                raise RuntimeError(f"reference run failed: {ref.stderr[-2000:]}")
            ref_seconds = time.perf_counter() - t0
            ref_tail = max(0.05, time.monotonic() - answers.last_judge)
            ref_calls = srv.count
            reference = projection(tmp / "reference")
            trials = [kill_trial(world, srv, answers, k, PHASES[k % 3], rng, reference, ref_calls, ref_tail, samples)
                      for k in range(kills)]
            trials += [storm_trial(world, srv, answers, kind, reference, ref_calls) for kind in kinds]
        info = {"samples": samples, "reference_calls": ref_calls, "reference_seconds": round(ref_seconds, 1),
                "tail_seconds": round(ref_tail, 2)}
        return trials, info
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def table(trials: list[Trial], info: dict) -> str:
    head = ("trial", "kill moment / faults", "lost", "dup", "identical", "extra calls", "in flight", "faulted",
            "tmp at kill", "s")
    rows = [(t.name, t.phase, str(t.lost), str(t.duplicated), "yes" if t.identical else "NO",
             str(t.extra_calls) if t.name.startswith("kill") else "-",
             str(t.in_flight) if t.name.startswith("kill") else "-",
             str(t.faults) if t.name.startswith("storm") else "-",
             str(t.temp_files_at_kill) if t.name.startswith("kill") else "-", f"{t.seconds:.1f}")
            for t in trials]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    out = [f"{info['samples']} samples, reference run: {info['reference_calls']} calls in "
           f"{info['reference_seconds']} s", line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
           *map(line, rows)]
    kills = [t for t in trials if t.name.startswith("kill")]
    storms = [t for t in trials if t.name.startswith("storm")]
    out.append(f"SIGKILL trials: {len(kills)} ({', '.join(f'{sum(t.phase == p for t in kills)} {p}' for p in PHASES)}); "
               f"fault storms: {len(storms)} ({sum(t.faults for t in storms)} faulted requests); "
               f"samples lost {sum(t.lost for t in trials)}, duplicated {sum(t.duplicated for t in trials)}, "
               f"results identical: {'yes' if all(t.identical for t in trials) else 'NO'}, "
               f"extra calls {sum(t.extra_calls for t in kills)} vs in flight {sum(t.in_flight for t in kills)}")
    out += [f"note: {t.name}: {t.note}" for t in trials if t.note]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--storms", default=",".join(FAULT_KINDS), help="fault kinds, comma-separated (or 'none')")
    ap.add_argument("--seed", type=int, default=15)
    args = ap.parse_args(argv)
    kinds = tuple(k for k in args.storms.split(",") if k and k != "none")
    trials, info = measure(args.samples, args.kills, kinds, args.seed)
    print(table(trials, info))
    return 0 if all(t.ok for t in trials) else 1


if __name__ == "__main__":
    sys.exit(main())
