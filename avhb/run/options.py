"""What a run was asked to do: the parsed command line, as one dataclass."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avhb.errors import UserError
from avhb.media.materialize import ABLATIONS
from avhb.model.backend import BackendSpec


@dataclass
class RunOptions:
    tasks: list[str]
    model: BackendSpec | None
    output_dir: Path
    judges: dict[str, list[BackendSpec]] = field(default_factory=dict)
    judge_args: list[str] = field(default_factory=list)  # the --judge flags as given (kept for `avhb score`)
    data: dict[str, Path] = field(default_factory=dict)
    sample_data: bool = False
    limit: int | None = None
    samples: list[str] | None = None
    seed: int = 1234
    repeats: int | None = None
    predict_only: bool = False
    ablations: tuple[str, ...] = ()
    media: dict[str, Any] = field(default_factory=dict)  # --media k=v, over each task's media block
    gen_kwargs: dict[str, Any] = field(default_factory=dict)  # --gen-kwargs k=v, over generation_kwargs
    score_only: bool = False  # `avhb score`: no model calls, every answer replayed from the journal
    command: list[str] = field(default_factory=list)
    write_report: bool = True
    shard: Any = None  # avhb.run.shard.Shard: this process runs one slice of every task (--shard I/N)
    executor: Any = None  # avhb.run.executor.ExecutorSpec: where backends run (--executor; None: in this process)
    replay_judges: bool = False  # every judge answer from the journal too (`avhb merge`): no call at all


def parse_ablations(text: str | None) -> tuple[str, ...]:
    items = tuple(a.strip() for a in (text or "").split(",") if a.strip())
    for a in items:
        if a not in ABLATIONS:
            raise UserError(f"--ablate {a!r}: unknown switch (choose from {', '.join(ABLATIONS)})")
    return items


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """A run folder's ``run.json`` (a ``UserError`` when there is none)."""
    import json

    path = Path(run_dir) / "run.json"
    if not path.is_file():
        raise UserError(f"{run_dir}: no run.json (not a run folder)")
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        run = None
    if not isinstance(run, dict):
        raise UserError(f"{path} is not valid JSON")
    return run


def options_from_run(run_dir: Path, judge_args: list[str] | None = None, score_only: bool = True) -> RunOptions:
    """The options a finished run was made with, as its run.json records
    them (``judge_args`` replaces its ``--judge`` flags when given): what
    ``avhb score`` and pack commands (CURVE's diagnosis) run under."""
    from avhb.model.backend import parse_backend_spec
    from avhb.score.judges import parse_judge_bindings

    from avhb.run.shard import Shard

    run = read_manifest(run_dir)
    model = run.get("model") or {}
    judge_args = list(judge_args or run.get("judge_args") or [])
    return RunOptions(
        tasks=list(run.get("tasks") or {}), model=parse_backend_spec(f"{model.get('kind')}:{model.get('name')}"),
        output_dir=Path(run_dir), judges=parse_judge_bindings(judge_args), judge_args=judge_args,
        data={k: Path(v) for k, v in (run.get("data") or {}).items()}, sample_data=bool(run.get("sample_data")),
        limit=run.get("limit"), samples=run.get("samples"), seed=int(run.get("seed", 1234)), repeats=run.get("repeats"),
        ablations=tuple(run.get("ablations") or ()), media=run.get("media") or {}, gen_kwargs=run.get("gen_kwargs") or {},
        score_only=score_only, command=run.get("command", []), shard=Shard.from_json(run.get("shard")))


def media_plan(task: Any, options: RunOptions):
    """The task's media settings (its YAML block merged with ``--media``),
    parsed once; request building and materialisation both read it."""
    from avhb.media.materialize import MediaPlan
    from avhb.media.spec import MediaSpec

    merged = {**(task.cfg.get("media") or {}), **options.media}
    spec = MediaSpec.from_dict(merged, where=f"task {task.name}: media")
    return MediaPlan(spec, tuple(options.ablations), task.name)
