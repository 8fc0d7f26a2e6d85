"""A finished run folder, reopened for a pack command (CURVE's ``avhb
diagnose``, ANCHOR's difficulty grading...): the run's own resolved
settings (options from run.json, each task's media plan) and its call
session (:class:`avhb.run.session.CallSession`: the journal, callers for the
model and judges), so a command asks through the one call
path and its calls are journaled and replayed like the run's own.

    run = ReopenedRun(run_dir)
    try:
        task_run = run.task_run("curve_de_DE", roles)
        ctx = run.context(task_run, doc, sample_id)
        call = await ctx.ask(ctx.request(), step="diagnosis")
    finally:
        await run.aclose()
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from avhb.data.sources import DataSource
from avhb.model.backend import Backend, BackendSpec, create_backend
from avhb.call.caller import Caller
from avhb.registry import get_registry
from avhb.run.driver import SampleContext
from avhb.errors import UserError
from avhb.runfolder.layout import journal_dir
from avhb.runfolder.samples import SamplesFile
from avhb.run.generate_phase import TaskRun
from avhb.run.session import CallSession
from avhb.options import media_plan
from avhb.runfolder.manifest import options_from_run, read_manifest
from avhb.score.judges import JudgeRole
from avhb.taskdef.index import build_index, load_task
from avhb.run.task import Task


class ReopenedRun:
    def __init__(self, run_dir: Path, *, model: BackendSpec | None = None,
                 judges: dict[str, list[BackendSpec]] | None = None,
                 backend_factory: Callable[[BackendSpec], Backend] = create_backend):
        self.root = Path(run_dir)
        self.manifest = read_manifest(self.root)
        self.options = options_from_run(self.root)
        recorded = self.manifest.get("model") or {}
        self.model_spec = model or BackendSpec(recorded.get("kind", ""), recorded.get("name", ""),
                                               dict(recorded.get("args") or {}))
        self.registry = get_registry()
        self.index = build_index(self.registry)
        self.session = CallSession(journal_dir(self.root), judges if judges is not None else self.options.judges,
                                   backend_factory)
        self.journal, self.judges = self.session.journal, self.session.judges
        self._factory = backend_factory
        self._tasks: dict[str, Task] = {}

    @property
    def model(self) -> Caller:
        """The model's caller, its backend built on first use."""
        if self.session.model is None:
            self.session.model_caller(self._factory(self.model_spec), label=self.model_spec.label)
        assert self.session.model is not None
        return self.session.model

    def task(self, name: str) -> Task:
        if name not in self._tasks:
            self._tasks[name] = Task(load_task(self.index, name), self.registry)
        return self._tasks[name]

    def task_run(self, name: str, roles: dict[str, JudgeRole] | None = None) -> TaskRun:
        """The task as the run ran it (data root, media plan, generation
        settings, seed), with ``roles`` (default: the task's own) as judges."""
        task = self.task(name)
        info = (self.manifest.get("tasks") or {}).get(name) or {}
        data = info.get("data") or {}
        source = DataSource.from_json(data)
        plan = media_plan(task, self.options)
        roles = roles if roles is not None else task.judge_roles()
        return TaskRun(task, source, plan, self.model, self.judges.for_task(name, roles, plan),
                       self.options.gen_kwargs, self.options.seed)

    def context(self, task_run: TaskRun, doc: dict[str, Any], sample_id: str, repeat: int = 0) -> SampleContext:
        return SampleContext(task_run, doc, sample_id, repeat)

    def samples(self, name: str) -> list[dict[str, Any]]:
        """The samples of ``samples/<task>.jsonl`` (none when the task has no
        file); a line that is not a sample refuses the file, naming it
        (a pack's numbers made from part of a run would be silently wrong)."""
        source = SamplesFile.of(self.root, name)
        rows = list(source.rows())
        if source.bad:
            raise UserError(f"{source.bad_summary()} (rerun the run's command to write its samples file again)")
        return rows

    async def aclose(self) -> None:
        await self.session.aclose()
