"""avhb's side of a differential row, as a user runs a peer's task folder
today: ``avhb prepare TASK --include_path DIR`` fetches the task's Hub data
through ``HF_ENDPOINT`` (the suite's FakeHub) into ``$AVHB_DATA_DIR``, then
``avhb --tasks TASK --include_path DIR --model BACKEND:MODEL,base_url=...``
runs it offline against the logging server (or, with ``hf_home`` and
``prepared``, the run alone reads what another tool left in that Hugging
Face home: the hub cache and ``datasets``' Arrow cache).  The rows' tasks are prepared
in one ``avhb prepare`` first (:func:`prepare_all`); when that fails, each
row prepares its own, so the failing one is named.  Each row runs in its own
process (a task avhb refuses must not stop the others), in its own output
folder.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class AvhbRun:
    prepare_exit: int
    exit: int  # the run's exit status (not run: the prepare's)
    output: Path
    message: str  # the last lines of the failing step's stderr ("" when both passed)
    seconds: float

    def results(self) -> dict:
        path = self.output / "results.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    def data_kinds(self) -> set[str]:
        """Where the run read its tasks' data (run.json: each task's data
        ``kind``: hub, hub-cache, datasets-cache...)."""
        path = self.output / "run.json"
        tasks = json.loads(path.read_text()).get("tasks", {}) if path.is_file() else {}
        return {str((t.get("data") or {}).get("kind")) for t in tasks.values() if isinstance(t, dict)}


def _tail(proc: subprocess.CompletedProcess, lines: int = 6) -> str:
    text = (proc.stderr or "").strip() or (proc.stdout or "").strip()
    return "\n".join(text.splitlines()[-lines:])


def avhb_env(work: Path, hub_url: str, hf_home: Path | None = None) -> dict[str, str]:
    """The environment of avhb's processes: its own Hugging Face home and
    data folder, or with ``hf_home`` another tool's home and an empty data
    folder (so that nothing avhb prepared can be read instead)."""
    data = work / ("avhb_data" if hf_home is None else "avhb_data_unprepared")
    env = dict(os.environ, HF_HOME=str(hf_home or work / "hf_avhb"), AVHB_DATA_DIR=str(data),
               HF_ENDPOINT=hub_url, TOKENIZERS_PARALLELISM="false", OPENAI_API_KEY="none")
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        env.pop(name, None)
    return env


def _prepare(tasks: list[str], include: Path, work: Path, hub_url: str,
             timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "avhb.cli", "prepare", *tasks, "--include_path", str(include)],
                          cwd=work, env=dict(avhb_env(work, hub_url), HF_HUB_OFFLINE="0"), capture_output=True,
                          text=True, timeout=timeout)


def prepare_all(tasks: list[str], include: Path, work: Path, hub_url: str, timeout: float = 900) -> bool:
    """``avhb prepare`` of every task at once; whether it exited 0."""
    return _prepare(tasks, include, work, hub_url, timeout).returncode == 0


def run_avhb_row(task: str, include: Path, model: str, work: Path, hub_url: str, output: Path,
                 timeout: float = 600, prepared: bool = False, hf_home: Path | None = None) -> AvhbRun:
    """Prepare (unless ``prepared``) and run one task (or group, or tag)
    ``task`` of the include folder ``include``; ``model`` is avhb's
    ``--model`` spec; ``hf_home``: the Hugging Face home the run reads
    (default: avhb's own, ``<work>/hf_avhb``)."""
    start = time.monotonic()
    env = avhb_env(work, hub_url, hf_home)
    if not prepared:
        prepare = _prepare([task], include, work, hub_url, timeout)
        if prepare.returncode != 0:
            return AvhbRun(prepare.returncode, prepare.returncode, output, "avhb prepare: " + _tail(prepare),
                           time.monotonic() - start)
    run = subprocess.run([sys.executable, "-m", "avhb.cli", "--tasks", task, "--include_path", str(include),
                          "--model", model, "--output_path", str(output), "--no_report"],
                         cwd=work, env=dict(env, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1"), capture_output=True,
                         text=True, timeout=timeout)
    (output.parent / f"{output.name}.log").write_text(run.stdout + "\n--- stderr\n" + run.stderr)
    return AvhbRun(0, run.returncode, output, _tail(run) if run.returncode else "", time.monotonic() - start)
