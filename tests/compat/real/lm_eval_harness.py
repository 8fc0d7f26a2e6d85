"""The lm-eval half of the differential over real task folders: the task
folders lm-eval 0.4.13 ships, run as shipped by lm-eval and by avhb over
the same synthetic Hub data, against one logging scripted model.

1. The Hub: every repo of tests/compat/real/lm_eval_data.py published to a
   FakeHub (tests/servers/hub_server.py); both tools fetch through it
   (``HF_ENDPOINT``): lm-eval through ``datasets.load_dataset(path, name)``,
   avhb through ``avhb prepare``.
2. lm-eval: its own installed tasks (``.venv-lmeval``), one process per model
   type (``local-chat-completions`` with ``--apply_chat_template``;
   ``local-completions``) running every row of that type through its CLI
   (tests/compat/real/lm_eval_driver.py).
3. avhb: each row's top-level folder copied unmodified from the same
   installed package into ``<work>/lm_eval_tasks/`` (``--include_path``, so
   avhb names the tasks ``lm_eval_tasks/<name>``), prepared (all at once, or
   per row when that fails) and run per row (tests/compat/real/avhb_runner.py),
   ``openai`` / ``openai-completions``.
4. Per row: both exits, the requests (tests/compat/real/compare.py) and
   every metric lm-eval reports.  Some rows run in avhb a second time, from
   the hub cache and Arrow cache lm-eval's ``datasets`` left (no prepare).

``run_differential(work)`` does it all and returns a :class:`RowResult` per
row; ``markdown_table(results)`` prints the table.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from tests.compat.real.avhb_runner import AvhbRun, prepare_all, run_avhb_row
from tests.compat.real.compare import (MetricPair, RequestDiff, compare_requests, describe_metrics, group_names_of,
                                       metric_pairs)
from tests.compat.real.lm_eval_data import HUB_REPOS
from tests.compat.real.lm_eval_rows import ROWS, Row
from tests.compat.real.model import model_name, serve, split_model
from tests.compat.tools import read_log
from tests.servers.hub_server import FakeHub

ROOT = Path(__file__).resolve().parents[3]
VENV = Path(os.environ.get("AVHB_LMEVAL_VENV", ROOT / ".venv-lmeval"))
NS = "lm_eval_tasks"
DRIVER = Path(__file__).with_name("lm_eval_driver.py")
MODELS = {"chat": ("local-chat-completions", "chat/completions", "openai"),
          "ll": ("local-completions", "completions", "openai-completions")}


def peer_tasks_dir(venv: Path = VENV) -> Path:
    """The ``lm_eval/tasks`` folder installed in lm-eval's venv."""
    found = sorted(venv.glob("lib/python*/site-packages/lm_eval/tasks"))
    if not found:
        raise FileNotFoundError(f"no lm_eval/tasks under {venv}: run scripts/peer_envs.sh lmeval")
    return found[0]


def copy_folders(rows: Iterable[Row], dest: Path, source: Path | None = None) -> Path:
    """Each row's top-level task folder, copied unmodified into ``dest``."""
    source = source or peer_tasks_dir()
    dest.mkdir(parents=True, exist_ok=True)
    for folder in sorted({r.folder for r in rows}):
        if not (dest / folder).exists():
            shutil.copytree(source / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def publish_all(hub: FakeHub) -> dict[str, str]:
    """Every dataset repo the rows read, on ``hub``; repo -> commit."""
    return {repo: hub.publish(repo, make()) for repo, make in HUB_REPOS.items()}


@dataclass
class RowResult:
    row: Row
    peer_exit: int
    peer_error: str | None
    avhb: AvhbRun
    requests: RequestDiff
    metrics: list[MetricPair] = field(default_factory=list)
    data: str = "avhb prepare"  # where avhb's run read the datasets from

    @property
    def metrics_equal(self) -> bool:
        return bool(self.metrics) and all(p.equal for p in self.metrics)

    @property
    def identical(self) -> bool:
        return self.peer_exit == 0 and self.avhb.exit == 0 and self.requests.equal and self.metrics_equal

    def what_differs(self) -> str:
        """Each difference, most basic first: the exits, then the requests,
        else the metrics ("" when identical)."""
        parts = []
        if self.peer_exit != 0:
            parts.append(f"lm-eval fails: {self.peer_error}")
        if self.avhb.exit != 0:
            parts.append(f"avhb exits {self.avhb.exit}: {self.avhb.message}")
        if not self.requests.equal:
            parts.append(f"requests: {self.requests.describe()}")
        elif not self.metrics_equal:
            parts.append(f"metrics: {describe_metrics(self.metrics)}")
        return " · ".join(parts)


def _lm_env(work: Path, hub_url: str) -> dict[str, str]:
    env = dict(os.environ, HF_HOME=str(work / "hf_lm"), HF_ENDPOINT=hub_url, HF_HUB_OFFLINE="0",
               TOKENIZERS_PARALLELISM="false", OPENAI_API_KEY="none", HF_HUB_DISABLE_TELEMETRY="1")
    for name in ("PYTHONPATH", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        env.pop(name, None)
    return env


def _lm_plan(kind: str, rows: list[Row], base_url: str, work: Path) -> Path:
    model, endpoint, _ = MODELS[kind]
    items = []
    for row in rows:
        argv = ["run", "--model", model, "--model_args",
                f"model={model_name('peer', row.id)},base_url={base_url}/{endpoint},num_concurrent=1,max_retries=1"
                + (f",{row.peer_model_args}" if row.peer_model_args else ""),
                "--tasks", row.name, "--output_path", str(work / "lm" / row.id)]
        items.append({"row": row.id, "argv": argv + (["--apply_chat_template"] if kind == "chat" else [])})
    plan = work / "lm" / f"plan_{kind}.json"
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text(json.dumps({"rows": items, "status": str(work / "lm" / f"status_{kind}.json")}, indent=1))
    return plan


def _lm_results(folder: Path) -> dict:
    found = sorted(folder.rglob("results_*.json"))
    return json.loads(found[-1].read_text()) if found else {}


def run_differential(work: Path, rows: Iterable[Row] = ROWS, jobs: int = 2,
                     hub_cache_rows: Iterable[str] = ()) -> dict[str, RowResult]:
    """Run every row through both tools (module docstring); row id -> result.
    The rows named in ``hub_cache_rows`` run in avhb a second time once
    lm-eval is done, without ``avhb prepare``: offline, from lm-eval's
    Hugging Face home (the hub cache and Arrow cache its ``datasets``
    filled), compared with the same lm-eval run (result key
    ``<row>@hub-cache``)."""
    rows = list(rows)
    again = [r for r in rows if r.name in set(hub_cache_rows)]
    include = copy_folders(rows, work / NS)
    log = work / "requests.jsonl"
    hub = FakeHub()
    publish_all(hub)
    forms = {r.id: r.answers for r in rows}
    statuses: dict[str, dict] = {}
    avhb_runs: dict[str, AvhbRun] = {}
    with hub.serve() as hub_url, serve(str(log), forms) as server:
        lm_procs = []
        for kind in MODELS:
            kind_rows = [r for r in rows if r.kind == kind]
            if kind_rows:
                plan = _lm_plan(kind, kind_rows, server.base_url, work)
                with open(work / "lm" / f"driver_{kind}.log", "w") as out:
                    lm_procs.append(subprocess.Popen([str(VENV / "bin" / "python"), str(DRIVER), str(plan)], cwd=work,
                                                     env=_lm_env(work, hub_url), stdout=out, stderr=subprocess.STDOUT))
        prepared = prepare_all([f"{NS}/{r.name}" for r in rows], include, work, hub_url)

        def one(row: Row, tool: str = "avhb", hf_home: Path | None = None) -> tuple[str, AvhbRun]:
            backend = MODELS[row.kind][2]
            key = row.id if tool == "avhb" else f"{row.id}@hub-cache"
            out = work / "avhb_out" / key
            out.parent.mkdir(parents=True, exist_ok=True)
            spec = f"{backend}:{model_name(tool, row.id)},base_url={server.base_url}"
            return key, run_avhb_row(f"{NS}/{row.name}", include, spec, work, hub_url, out,
                                     prepared=prepared or hf_home is not None, hf_home=hf_home)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            avhb_runs.update(pool.map(one, rows))
            for proc in lm_procs:
                proc.wait(timeout=1800)
            avhb_runs.update(pool.map(lambda r: one(r, "avhbcache", work / "hf_lm"), again))
        for kind in MODELS:
            path = work / "lm" / f"status_{kind}.json"
            if path.is_file():
                statuses.update(json.loads(path.read_text()))
    with open(work / "hub_requests.jsonl", "w") as fh:  # what both tools asked the Hub (to debug a fetch)
        fh.writelines(json.dumps(r.__dict__) + "\n" for r in hub.requests)
    by_tool_row: dict[tuple[str, str], list[dict]] = {}
    for entry in read_log(log):
        body = entry.get("body")
        if isinstance(body, dict) and "model" in body:
            by_tool_row.setdefault(split_model(body["model"]), []).append(body)
    out: dict[str, RowResult] = {}
    for row, tool, key in [(r, "avhb", r.id) for r in rows] + [(r, "avhbcache", f"{r.id}@hub-cache") for r in again]:
        status = statuses.get(row.id, {"exit": 1, "error": "lm-eval did not reach this row (see lm/driver_*.log)"})
        peer = _lm_results(work / "lm" / row.id)
        avhb = avhb_runs[key]
        requests = compare_requests(by_tool_row.get(("peer", row.id), []), by_tool_row.get((tool, row.id), []))
        pairs = metric_pairs(peer, avhb.results(), lambda name: f"{NS}/{name}", group_names_of(peer)) if peer else []
        out[key] = RowResult(row, status["exit"], status.get("error"), avhb, requests, pairs,
                             "lm-eval's hub cache" if tool == "avhbcache" else "avhb prepare")
    return out


def markdown_table(results: dict[str, RowResult], expected: dict[str, str] | None = None) -> str:
    """The differential table: task, source folder, lm-eval's exit, avhb's
    exit, requests equal, metrics equal, what differs."""
    lines = ["| task | folder | avhb's data | lm-eval exit | avhb exit | requests equal | metrics equal | what differs |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results.values():
        req = f"{'yes' if r.requests.equal else 'no'} ({r.requests.peer}/{r.requests.avhb})"
        good = sum(p.equal for p in r.metrics)
        met = f"{'yes' if r.metrics_equal else 'no'} ({good}/{len(r.metrics)})"
        what = r.what_differs() or "—"
        if expected and r.row.id in expected:
            what += f" [expected: {expected[r.row.id]}]"
        what = what.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r.row.name} | {r.row.folder} | {r.data} | {r.peer_exit} | {r.avhb.exit} | {req} | {met} "
                     f"| {what} |")
    same = sum(r.identical for r in results.values())
    lines.append("")
    lines.append(f"{same} of {len(results)} rows identical (exits 0, requests equal, every metric equal to 1e-9).")
    return "\n".join(lines)


