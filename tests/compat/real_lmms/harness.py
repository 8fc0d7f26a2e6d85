"""lmms-eval 0.7.3 and avhb on lmms-eval's shipped task folders, side by
side: one local Hub (tests/servers/hub_server.py) serving the synthetic
repos (repos.py), one logging OpenAI-compatible server answering by the
reply rule (reply.py), then per task:

* **lmms-eval**: one ``lmms-eval eval --model openai`` process for every task
  it runs (``max_frames_num`` = :data:`FRAMES`); the tasks it fails on itself
  (:data:`PEER_FAILS`) in a second process, whose failure is kept, and
  through peer_requests.py, which builds their requests with lmms-eval's own
  objects so that the prompt text, visuals and generation settings can
  still be compared;
* **avhb**, installed beside lmms-eval in its venv (the tasks' hooks import
  ``lmms_eval``; its ``avhb`` console script): one ``avhb prepare`` of every
  task, then ``avhb run`` over ``--include_path <lmms_eval/tasks>`` (tasks
  ``tasks/<name>``), with ``--media frames=FRAMES`` and ``audio=true``: the
  tasks expected to pass in one run (each alone when that run fails, so each
  gets its own exit), those in ``EXPECTED_TO_FAIL_UNTIL_FIXED`` in another
  (one is rerun alone unless that run shows its own failure), each hook
  import of ``lmms_eval`` costing about 8 CPU seconds;
* the requests of each document (found by the tag in its question) are
  compared: roles, the parts in order, every text equal, images and frames
  counted, which frames (each synthetic frame shows its index; avhb runs
  with ``include_last_frame=true``, lmms-eval's spacing: qwen_vl_utils'
  ``linspace(0, total - 1, n)``), still images of the same size and pixels
  (exactly: both send a still image as PNG),
  max tokens and temperature; every metric lmms-eval reports is compared
  to 1e-9.

Differences accepted on purpose are measured per task and listed in the
row's ``accepted`` (never hidden): lmms-eval's video frames are resized by
qwen_vl_utils (avhb sends the source size); lmms-eval sometimes sends a
wrong frame (decord 0.6.0's ``get_batch`` returns an earlier frame for one
index, not in every run: accepted only where avhb sends the frames
lmms-eval's own rule asks for); lmms-eval sends an audio file's
local path as ``audio_url``, avhb the audio itself (``input_audio``);
generation keys beyond max tokens and temperature (lmms-eval's ``top_p``,
avhb's ``seed``).

``python -m tests.compat.real_lmms.harness [TASK,...]`` prints the Markdown
table (task, modality, peer exit, avhb exit, requests equal, metrics equal,
what differs).
"""
from __future__ import annotations

import base64
import io
import json
import math
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.compat.real_lmms import repos
from tests.compat.real_lmms.reply import reply
from tests.compat.real_lmms.tasks import BY_NAME, EXPECTED_TO_FAIL_UNTIL_FIXED, TASKS, RealTask

ROOT = Path(__file__).resolve().parents[3]
VENV = Path(os.environ.get("AVHB_LMMS_VENV", ROOT / ".venv-lmms"))
FRAMES = 4
SOURCE_FRAME = repos.VIDEO_SIZE
HF_TOKEN = "hf_local_test_token"  # lmms-eval's tasks ask for a token (dataset_kwargs.token); the local Hub takes any

# lmms-eval's own failures under --model openai, with their cause (the row still compares what it can)
PEER_FAILS: dict[str, str] = {
    "clotho_aqa_test": "datasets 5 decodes the Audio column to a torchcodec AudioDecoder, which lmms-eval's chat "
                       "messages refuse (lmms_eval/api/task.py _visual_to_content: TypeError: Unsupported visual type)",
    "air_bench_foundation_sound": "datasets 5 decodes the Audio column to a torchcodec AudioDecoder, which lmms-eval's "
                                  "chat messages refuse (lmms_eval/api/task.py _visual_to_content: TypeError)",
}

_TAG = re.compile(r"\[([a-z0-9_]+)#(\d+)\]")
_EXC = re.compile(r"^[A-Za-z_.]*(Error|Exception|Exit)\b.*:")


def tasks_dir() -> Path:
    found = sorted(VENV.glob("lib/python3*/site-packages/lmms_eval/tasks"))
    if not found:
        raise FileNotFoundError(f"lmms-eval is not installed in {VENV}: run scripts/peer_envs.sh lmms")
    return found[0]


def available() -> bool:
    return (VENV / "bin" / "lmms-eval").exists() and bool(sorted(VENV.glob("lib/python3*/site-packages/avhb*")))


def lmms_args(base_url: str, names: list[str], out: str, frames: int = FRAMES) -> list[str]:
    """``lmms-eval``'s arguments: its OpenAI-compatible chat model against ``base_url``."""
    return ["eval", "--model", "openai", "--model_args",
            f"model_version=fake,base_url={base_url},max_frames_num={frames},num_concurrent=1",
            "--tasks", ",".join(names), "--output_path", out, "--log_samples"]


def avhb_args(base_url: str, names: list[str], folder: Path, frames: int = FRAMES) -> list[str]:
    """``avhb run``'s arguments for lmms-eval's tasks ``names`` (folder ``tasks/``)."""
    return ["run", "--tasks", ",".join(f"tasks/{n}" for n in names), "--include_path", str(tasks_dir()), "--model",
            f"openai:fake,base_url={base_url},audio=true", "--media", f"frames={frames},include_last_frame=true",
            "--output_path", str(folder), "--no_report"]


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """A results file's metrics per task (avhb's ``tasks/<name>`` as ``<name>``)."""
    return {task.split("/", 1)[-1]: metrics for task, metrics in json.loads(path.read_text()).get("results", {}).items()}


# ------------------------------------------------------------------ results of one tool

@dataclass
class ToolRun:
    exit: int | None = None
    output: str = ""  # the tail of its stdout/stderr
    tasks: list[str] = field(default_factory=list)  # the tasks it ran
    seconds: float = 0.0
    requests: dict[str, dict[int, dict]] = field(default_factory=dict)  # task -> doc -> request body
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # task -> metric key -> value

    @property
    def error(self) -> str:
        """The last exception line of its output ("" if none): lmms-eval 0.7.3
        prints a failed evaluation's traceback and still exits 0."""
        found = [ln.strip() for ln in self.output.splitlines() if _EXC.match(ln.strip())]
        return found[-1][:300] if found else ""

    def status(self, task: str) -> str:
        """Its exit, and "no results" with the error when it wrote none for ``task``."""
        if self.exit is None:
            return "not run"
        if task in self.results or self.exit != 0:
            return str(self.exit)
        return f"{self.exit}, no results"


@dataclass
class Row:
    task: str
    modality: str
    peer_exit: str  # lmms-eval's exit status ("0, no results" when it printed a traceback and wrote nothing)
    avhb_exit: int | None
    requests_equal: bool | None = None
    metrics_equal: bool | None = None
    first_difference: str = ""
    accepted: list[str] = field(default_factory=list)
    compared_docs: int = 0
    compared_metrics: int = 0
    avhb_run_tasks: int = 1  # how many tasks shared avhb's run (its exit is theirs together)
    peer_note: str = ""  # why lmms-eval has no results for the task (PEER_FAILS's cause, else its error)
    peer_error: str = ""  # the last exception line lmms-eval printed, when it has no results
    peer_doc_errors: list[str] = field(default_factory=list)  # lmms-eval's objects' failures per document

    @property
    def ok(self) -> bool:
        metrics = self.metrics_equal or (self.metrics_equal is None and self.task in PEER_FAILS)
        return self.avhb_exit == 0 and bool(self.requests_equal) and bool(metrics)


_PROGRESS = re.compile(r"it/s\]|s/it\]|^\[tasks/[^\]]*\] \d+/\d+ ")  # tqdm bars, avhb's progress lines


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> tuple[int, str, float]:
    """``cmd``'s exit, the tail of its output without progress lines, its wall seconds."""
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)

    def kept(text: str) -> str:
        return "\n".join(ln for ln in text.replace("\r", "\n").splitlines() if not _PROGRESS.search(ln))

    out = (kept(proc.stdout)[-4000:] + "\n" + kept(proc.stderr)[-12000:]).strip()
    return proc.returncode, out, time.monotonic() - start


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _texts(body: dict) -> str:
    out = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        else:
            out.extend(p.get("text", "") for p in content or [] if p.get("type") == "text")
    return "\n".join(out)


def attribute(bodies: list[dict]) -> dict[str, dict[int, dict]]:
    """The chat requests by task and document, found by the question's tag."""
    by_key = {t.key: t.name for t in TASKS}
    out: dict[str, dict[int, dict]] = {}
    for body in bodies:
        m = _TAG.search(_texts(body))
        if m and m.group(1) in by_key:
            out.setdefault(by_key[m.group(1)], {})[int(m.group(2))] = body
    return out


# ------------------------------------------------------------------ one session: both tools

class Session:
    """A work folder, the local Hub with the tasks' repos, the model server."""

    def __init__(self, work: Path, tasks: list[RealTask], rows: int = repos.ROWS) -> None:
        from tests.servers.hub_server import FakeHub
        from tests.servers.openai_server import ScriptedServer

        self.work = work
        self.tasks = tasks
        self.hub = FakeHub()
        for maker in sorted({t.repo for t in tasks}):
            repos.publish(self.hub, repos.MAKERS[maker](rows))
        self.log = work / "requests.jsonl"
        self.timings: dict[str, float] = {}  # wall seconds per phase
        self.server = ScriptedServer(reply=reply, record=False, log_path=str(self.log))

    def env(self, tool: str, hub_url: str) -> dict[str, str]:
        env = dict(os.environ, HF_HOME=str(self.work / f"hf-{tool}"), HF_ENDPOINT=hub_url, HF_TOKEN=HF_TOKEN,
                   HF_HUB_DISABLE_TELEMETRY="1", OPENAI_API_KEY="none", FORCE_QWENVL_VIDEO_READER="decord",
                   AVHB_CACHE_DIR=str(self.work / "avhb-cache"), AVHB_DATA_DIR=str(self.work / "avhb-data"),
                   TOKENIZERS_PARALLELISM="false")
        env.pop("PYTHONPATH", None)
        for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_CACHE", "HF_DATASETS_CACHE"):
            env.pop(key, None)
        return env

    # -- lmms-eval
    def run_lmms(self, names: list[str], env: dict[str, str], out: str, dump: Path | None = None) -> ToolRun:
        """``lmms-eval eval`` of ``names``; with ``dump``, through peer_requests.py,
        which then writes what lmms-eval's objects build for each document there."""
        run = ToolRun(tasks=list(names))
        if not names:
            return run
        before = len(_log(self.log))
        args = lmms_args(self.server.base_url, names, out)
        cmd = [str(VENV / "bin" / "lmms-eval"), *args] if dump is None else \
            [str(VENV / "bin" / "python"), str(Path(__file__).with_name("peer_requests.py")), ",".join(names),
             str(dump), str(FRAMES), "--", *args]
        run.exit, run.output, run.seconds = _run(cmd, self.work, env)
        run.requests = attribute([r["body"] for r in _log(self.log)[before:] if r["path"].endswith("/chat/completions")])
        for path in sorted((self.work / out).rglob("*_results.json")):
            run.results.update(read_results(path))
        return run

    # -- avhb
    def _avhb(self, args: list[str], env: dict[str, str]) -> tuple[int, str, float]:
        return _run([str(VENV / "bin" / "avhb"), *args], self.work, env)

    def prepare_avhb(self, names: list[str], env: dict[str, str]) -> None:
        """``avhb prepare`` of every task, in one process (it goes on past a
        task it cannot prepare; that task's run then says its data is missing)."""
        self.avhb_prepare = self._avhb(["prepare", ",".join(f"tasks/{n}" for n in names), "--include_path",
                                        str(tasks_dir())], env)

    def run_avhb(self, names: list[str], env: dict[str, str], label: str) -> ToolRun:
        """``avhb run`` of ``names`` in one run folder (their data prepared)."""
        run = ToolRun(tasks=list(names))
        folder = self.work / "avhb-runs" / label
        before = len(_log(self.log))
        run.exit, run.output, run.seconds = self._avhb(avhb_args(self.server.base_url, names, folder), env)
        if (folder / "results.json").exists():
            run.results = read_results(folder / "results.json")
        run.requests = attribute([r["body"] for r in _log(self.log)[before:] if r["path"].endswith("/chat/completions")])
        return run

    def avhb_side(self, names: list[str], env: dict[str, str]) -> dict[str, ToolRun]:
        """Every task's avhb run.  The tasks expected to pass run together
        (each alone when that run fails, so each gets its own exit); the tasks
        still expected to fail run together too, and one is run alone again
        unless that shared run shows its own failure (a request of its own
        that differs, or its own result that differs), so a fix is noticed."""
        self.prepare_avhb(names, env)
        self.timings["avhb prepare"] = self.avhb_prepare[2]
        out: dict[str, ToolRun] = {}
        hopeful = [n for n in names if n not in EXPECTED_TO_FAIL_UNTIL_FIXED]
        expected = [n for n in names if n in EXPECTED_TO_FAIL_UNTIL_FIXED]
        if hopeful:
            together = self.run_avhb(hopeful, env, "together")
            alone = together.exit != 0 and len(hopeful) > 1
            out.update({n: self.run_avhb([n], env, n) if alone else together for n in hopeful})
        if expected:
            shared = self.run_avhb(expected, env, "expected")
            for name in expected:
                own = self.compare(BY_NAME[name], shared)
                evidence = own.requests_equal is False and bool(shared.requests.get(name)) or \
                    (name in shared.results and own.metrics_equal is False)
                out[name] = shared if evidence or len(expected) == 1 else self.run_avhb([name], env, name)
        return out

    def run(self) -> dict[str, Row]:
        names = [t.name for t in self.tasks]
        failing = [n for n in names if n in PEER_FAILS]
        clock = time.monotonic()

        def lap(what: str) -> None:
            nonlocal clock
            self.timings[what] = time.monotonic() - clock
            clock = time.monotonic()

        with self.hub.serve() as url, self.server:
            lmms_env, avhb_env = self.env("lmms", url), self.env("avhb", url)
            self.hub.clear_log()
            self.lmms = self.run_lmms([n for n in names if n not in PEER_FAILS], lmms_env, "lmms_out")
            lap("lmms-eval")
            dump = self.work / "peer_requests.json"
            self.lmms_failing = self.run_lmms(failing, lmms_env, "lmms_out_failing", dump)
            if failing and not dump.exists():
                raise RuntimeError(f"peer_requests.py wrote nothing:\n{self.lmms_failing.output}")
            self.peer_docs = json.loads(dump.read_text()) if failing else []
            lap("lmms-eval on the tasks it fails on, and their requests by its objects")
            self.hub_downloads = {"lmms-eval": len(self.hub.downloads())}
            self.avhb = self.avhb_side(names, avhb_env)
            lap("avhb")
            self.hub_downloads["avhb"] = len(self.hub.downloads()) - self.hub_downloads["lmms-eval"]
        return {t.name: self.compare(t) for t in self.tasks}

    # -- comparison
    def compare(self, task: RealTask, ours: ToolRun | None = None) -> Row:
        """The row of ``task``: lmms-eval's run against avhb's (its own, or ``ours``)."""
        failing = task.name in PEER_FAILS
        lmms = self.lmms_failing if failing else self.lmms
        ours = ours or self.avhb[task.name]
        row = Row(task.name, task.modality, lmms.status(task.name), ours.exit, avhb_run_tasks=len(ours.tasks))
        if task.name not in lmms.results:
            row.peer_error = lmms.error
            row.peer_note = PEER_FAILS.get(task.name, lmms.error)
        if failing:
            compare_peer_docs(row, [d for d in self.peer_docs if d["task"] == task.name],
                              ours.requests.get(task.name, {}))
        else:
            compare_requests(row, task, lmms.requests.get(task.name, {}), ours.requests.get(task.name, {}))
            if task.name in lmms.results:
                compare_metrics(row, lmms.results.get(task.name, {}), ours.results.get(task.name))
        strays = sorted(t for t in ours.requests if t not in ours.tasks)
        if strays and not row.requests_equal and not ours.requests.get(task.name):
            row.first_difference += f" (avhb's run sent the questions of {', '.join(strays)}: it read another task's rows)"
        if ours.exit != 0:  # say why it failed first: the line naming this task, in a run of several
            named = _task_line(ours.output, task.name)
            if named or len(ours.tasks) == 1:
                row.first_difference = f"avhb exits {ours.exit}: {named or _last_line(ours.output, task.name)}"
            else:
                row.first_difference += f" (avhb's run of {len(ours.tasks)} tasks exits {ours.exit})"
            code, text, _ = getattr(self, "avhb_prepare", (0, "", 0.0))
            prep = [ln.strip() for ln in text.splitlines() if ln.startswith(f"tasks/{task.name}: ") and
                    any(w in ln for w in ("not ", "fail", "error"))]
            if prep or code not in (0, 1):
                row.first_difference += f" (avhb prepare exits {code}: {prep[-1] if prep else _last_line(text, task.name)})"
        return row


def _task_line(text: str, task: str) -> str:
    """avhb's last warning or error that names ``task`` and says it failed ("" if none)."""
    named = f"tasks/{task}"
    found = [ln.strip() for ln in text.splitlines() if ln.startswith(("avhb: warning:", "avhb: error:"))
             and (f"{named}:" in ln or f"{named}'" in ln or f"{named} " in ln) and ("fail" in ln or " not " in ln)]
    return found[-1][:400] if found else ""


def _last_line(text: str, task: str) -> str:
    """The line that says why a run failed: avhb's warning or error naming
    the task, else its error line, else the last exception line of a
    traceback, else the last warning, else the last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("$ ")]
    named = f"tasks/{task}"
    for pick in (lambda ln: ln == _task_line(ln, task),
                 lambda ln: ln.startswith(f"{named}: ") and ("not" in ln or "fail" in ln),
                 lambda ln: ln.startswith("avhb: error:"), lambda ln: bool(_EXC.match(ln)),
                 lambda ln: ln.startswith("avhb: warning:"), lambda ln: True):
        found = [ln for ln in lines if pick(ln)]
        if found:
            return found[-1][:400]
    return "(no output)"


# ------------------------------------------------------------------ request comparison

def _image_size(url: str) -> tuple[int, int]:
    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size


def _pixels(url: str):
    import numpy as np
    from PIL import Image

    raw = base64.b64decode(url.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"), dtype=np.int16)


def shape(body: dict) -> tuple[list, list[str], list[str]]:
    """(roles with their parts in order, the image URLs, the audio part types)."""
    messages, images, audio = [], [], []
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, str):
            messages.append((m["role"], [("text", content)]))
            continue
        parts = []
        for p in content:
            if p["type"] == "text":
                parts.append(("text", p["text"]))
            elif p["type"] == "image_url":
                parts.append(("image",))
                images.append(p["image_url"]["url"])
            elif p["type"] in ("input_audio", "audio_url"):
                parts.append(("audio",))
                audio.append(p["type"])
            else:
                parts.append((p["type"],))
        messages.append((m["role"], _merge_texts(parts)))
    return messages, images, audio


def _merge_texts(parts: list[tuple]) -> list[tuple]:
    """Adjacent text parts as one (a tool may split a text where the other does not)."""
    out: list[tuple] = []
    for p in parts:
        if p[0] == "text" and out and out[-1][0] == "text":
            out[-1] = ("text", out[-1][1] + p[1])
        else:
            out.append(p)
    return out


def _first_text_diff(a: str, b: str) -> str:
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return f"at char {i}: lmms-eval {a[max(0, i - 30):i + 50]!r} vs avhb {b[max(0, i - 30):i + 50]!r}"


def frame_indices(urls: list[str]) -> list[int]:
    """The index each frame shows (make_test_media's bit grid, readable at any size)."""
    import numpy as np
    from PIL import Image

    from tests.fixtures.make_test_media import decode_index

    return [decode_index(np.asarray(Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1]))).convert("RGB")))
            for u in urls]


def lmms_indices(total: int, n: int) -> list[int]:
    """The frames lmms-eval's openai model asks qwen_vl_utils for (``nframes`` = n):
    ``linspace(0, total - 1, n)`` rounded half to even, as torch rounds."""
    import numpy as np

    return [int(x) for x in np.round(np.linspace(0, total - 1, n))]


def compare_requests(row: Row, task: RealTask, theirs: dict[int, dict], ours: dict[int, dict],
                     source_frame: tuple[int, int] = SOURCE_FRAME, video_seconds: float | None = None) -> None:
    if not theirs:
        row.first_difference = row.first_difference or "lmms-eval sent no request for this task"
        row.requests_equal = None if row.peer_note else False
        return
    accepted: set[str] = set()
    misreads: list[str] = []  # lmms-eval's frames that are not the ones its own rule asks for
    video = task.modality in ("video", "audio-visual")
    for doc in sorted(set(theirs) | set(ours)):
        where = f"doc {doc}"
        if doc not in ours:
            return _differ(row, f"{where}: avhb sent no request (lmms-eval did)")
        if doc not in theirs:
            return _differ(row, f"{where}: avhb sent a request lmms-eval did not")
        a, b = theirs[doc], ours[doc]
        (ma, ia, aa), (mb, ib, ab) = shape(a), shape(b)
        if [r for r, _ in ma] != [r for r, _ in mb]:
            return _differ(row, f"{where}: roles {[r for r, _ in ma]} vs {[r for r, _ in mb]}")
        for (role, pa), (_, pb) in zip(ma, mb):
            kinds_a, kinds_b = [p[0] for p in pa], [p[0] for p in pb]
            if kinds_a != kinds_b:
                return _differ(row, f"{where}: {role} parts {_runs(kinds_a)} vs {_runs(kinds_b)}")
            for x, y in zip(pa, pb):
                if x[0] == "text" and x[1] != y[1]:
                    return _differ(row, f"{where}: {role} text differs {_first_text_diff(x[1], y[1])}")
        for key in ("max_tokens", "temperature"):
            va, vb = a.get(key), b.get(key)
            if (float(va) if va is not None else None) != (float(vb) if vb is not None else None):
                return _differ(row, f"{where}: {key} {va} vs {vb}")
        if aa != ab:
            accepted.add(f"audio as {'/'.join(sorted(set(aa)))} (lmms-eval) vs {'/'.join(sorted(set(ab)))} (avhb)")
        if video:
            sa, sb = {_image_size(u) for u in ia}, {_image_size(u) for u in ib}
            if sb != {source_frame}:
                return _differ(row, f"{where}: avhb's frames are {sorted(sb)}, not the source size {source_frame}")
            if sa != sb:
                accepted.add(f"frames {'/'.join(f'{w}x{h}' for w, h in sorted(sa))} (lmms-eval, qwen_vl_utils "
                             f"resize) vs {'/'.join(f'{w}x{h}' for w, h in sorted(sb))} (avhb, source size)")
            xa, xb = frame_indices(ia), frame_indices(ib)
            rule = lmms_indices(repos.video_frames(doc, video_seconds), len(ia))
            if xb != rule:
                return _differ(row, f"{where}: avhb sent frames {xb}, lmms-eval's rule (qwen_vl_utils) picks {rule}"
                                    f" and it sent {xa}")
            if xa != rule:
                misreads.append(", ".join(f"frame {got} for {want}" for got, want in zip(xa, rule) if got != want))
        else:
            for k, (ua, ub) in enumerate(zip(ia, ib)):
                pa_, pb_ = _pixels(ua), _pixels(ub)
                if pa_.shape != pb_.shape:
                    return _differ(row, f"{where}: image {k} is {pa_.shape[1]}x{pa_.shape[0]} vs "
                                        f"{pb_.shape[1]}x{pb_.shape[0]}")
                if not (pa_ == pb_).all():  # both send a still image lossless (PNG)
                    return _differ(row, f"{where}: image {k} pixels differ (mean {float(abs(pa_ - pb_).mean()):.2f}, "
                                        f"{ua.split(';', 1)[0]} vs {ub.split(';', 1)[0]})")
        for key in sorted((set(a) | set(b)) - {"messages", "model", "max_tokens", "temperature"}):
            va, vb = a.get(key), b.get(key)
            if va == vb:
                continue
            if key == "seed" and va is None:
                accepted.add(f"seed {vb} sent by avhb only (its run seed, on purpose)")
            elif key == "top_p" and {va, vb} <= {None, 1.0}:
                accepted.add(f"top_p {va if va is not None else vb} sent by "
                             f"{'lmms-eval' if va is not None else 'avhb'} only (1.0: no effect)")
            else:
                return _differ(row, f"{where}: {key} {va!r} (lmms-eval) vs {vb!r} (avhb)")
        row.compared_docs += 1
    row.requests_equal = True
    if misreads:
        accepted.add(f"lmms-eval sent a wrong frame in {len(misreads)} of {len(theirs)} requests (e.g. {misreads[0]}: "
                     "decord 0.6.0's get_batch through qwen_vl_utils, not in every run)")
    row.accepted = sorted(accepted)


def _runs(kinds: list[str]) -> str:
    out: list[str] = []
    for k in kinds:
        if out and out[-1].split("x")[0] == k:
            n = int(out[-1].split("x")[1]) + 1 if "x" in out[-1] else 2
            out[-1] = f"{k}x{n}"
        else:
            out.append(k)
    return "[" + ", ".join(out) + "]"


def _differ(row: Row, what: str) -> None:
    row.requests_equal = False
    row.first_difference = what


def compare_peer_docs(row: Row, docs: list[dict], ours: dict[int, dict]) -> None:
    """A task lmms-eval fails on: avhb's requests against what lmms-eval's own
    objects build (text, number of audio parts, max tokens, temperature)."""
    if not docs:
        return _differ(row, "lmms-eval built no document")
    row.peer_doc_errors = sorted({d["error"] for d in docs if "error" in d})
    for d in docs:
        where = f"doc {d['doc_id']}"
        body = ours.get(d["doc_id"])
        if body is None:
            return _differ(row, f"{where}: avhb sent no request")
        messages, images, audio = shape(body)
        texts = [p[1] for _, parts in messages for p in parts if p[0] == "text"]
        if texts != [d["text"]]:
            return _differ(row, f"{where}: text {_first_text_diff(d['text'], ' | '.join(texts))}")
        n_audio = sum(1 for v in d["visuals"] if v["type"] in ("AudioDecoder", "dict") or
                      (v["type"] == "path" and v["path"].endswith((".wav", ".mp3", ".flac"))))
        if len(audio) != n_audio or images:
            return _differ(row, f"{where}: {len(audio)} audio and {len(images)} image parts vs lmms-eval's visuals "
                                f"{[v['type'] for v in d['visuals']]}")
        for key in ("max_tokens", "temperature"):
            if float(body.get(key, -1)) != float(d[key]):
                return _differ(row, f"{where}: {key} {d[key]} vs {body.get(key)}")
        row.compared_docs += 1
    row.requests_equal = True
    row.accepted = [f"audio as {'/'.join(sorted(set(audio)))} (avhb); lmms-eval builds none (it fails)"] if audio else []


# ------------------------------------------------------------------ metric comparison

def metric_items(results: dict[str, Any]) -> list[tuple[str, float]]:
    """lmms-eval's reported metrics of a task: ``metric,filter`` keys with a number (no stderrs)."""
    out = []
    for key, value in results.items():
        if "," not in key or "_stderr" in key.split(",")[0] or isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            out.append((key, float(value)))
    return out


def _ours(results: dict[str, Any], key: str) -> Any:
    metric, _, flt = key.partition(",")
    for k in (key, metric if flt == "none" else None, metric):
        if k is not None and k in results:
            value = results[k]
            return value.get("value") if isinstance(value, dict) else value
    return None


def compare_metrics(row: Row, theirs: dict[str, Any], ours: dict[str, Any] | None) -> None:
    items = metric_items(theirs)
    if not items:
        row.metrics_equal = False
        row.first_difference = row.first_difference or "lmms-eval reported no metric"
        return
    if ours is None:
        row.metrics_equal = False
        row.first_difference = row.first_difference or "avhb reported no result for the task"
        return
    for key, value in items:
        mine = _ours(ours, key)
        if not isinstance(mine, (int, float)) or not math.isclose(value, float(mine), rel_tol=0, abs_tol=1e-9):
            row.metrics_equal = False
            row.first_difference = row.first_difference or f"metric {key}: lmms-eval {value} vs avhb {mine}"
            return
        row.compared_metrics += 1
    row.metrics_equal = True


# ------------------------------------------------------------------ the table

def _mark(value: bool | None, n: int = 0) -> str:
    return "n/a" if value is None else (f"yes ({n})" if value and n else "yes" if value else "**no**")


def table(rows: dict[str, Row]) -> str:
    lines = ["| task | modality | lmms-eval exit | avhb exit | requests equal | metrics equal | what differs |",
             "|---|---|---|---|---|---|---|"]
    for r in rows.values():
        what = "; ".join(x for x in [r.first_difference, *r.accepted, r.peer_note and f"lmms-eval fails: {r.peer_note}"]
                         if x)
        shared = f" (run of {r.avhb_run_tasks})" if r.avhb_run_tasks > 1 and r.avhb_exit != 0 else ""
        lines.append(f"| {r.task} | {r.modality} | {r.peer_exit} | {r.avhb_exit}{shared} | "
                     f"{_mark(r.requests_equal, r.compared_docs)}"
                     f" | {_mark(r.metrics_equal, r.compared_metrics)} | {what.replace('|', '/')} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    import tempfile

    names = argv[0].split(",") if argv else [t.name for t in TASKS]
    with tempfile.TemporaryDirectory(prefix="real-lmms-") as tmp:
        session = Session(Path(tmp), [BY_NAME[n] for n in names])
        start = time.monotonic()
        rows = session.run()
        print(table(rows))
        print("\n" + "; ".join(f"{k} {v:.1f} s" for k, v in session.timings.items()) +
              f"; {time.monotonic() - start:.1f} s in all (wall)")
        print("files fetched from the local Hub: " + ", ".join(f"{k} {v}" for k, v in session.hub_downloads.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
