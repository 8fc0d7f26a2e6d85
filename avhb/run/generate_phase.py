"""The generate phase: every (sample, repeat) of a task runs its driver
(one call by default, several for multi-step tasks) through the run's
model caller, many samples at once under the backend's concurrency limit.

Resume is the journal: a driver re-run after a crash finds its finished
calls there and continues at the first unfinished one; under ``avhb score``
(a replaying caller) every call must be found, else the run is unfinished.
"""
from __future__ import annotations

import asyncio
import functools
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, TypeVar

from avhb.data.sources import DataSource
from avhb.errors import EnvironmentFailure, SampleError, UserError
from avhb.media.materialize import MediaPlan
from avhb.call.caller import Caller, NotInJournal
from avhb.run.driver import Driver, SampleContext, single_step
from avhb.run.progress import Progress
from avhb.score.judges import TaskJudges
from avhb.score.metric import SampleRecord
from avhb.run.task import Task

DRIVERS_IN_FLIGHT = 256  # samples whose driver runs at once (the backend's own limit applies within)
T = TypeVar("T")


@dataclass
class TaskRun:
    """Everything one task's samples need while they generate and score."""

    task: Task
    source: DataSource
    plan: MediaPlan
    model: Caller
    judges: TaskJudges
    gen_kwargs: dict[str, Any]
    seed: int
    system_instruction: str | None = None  # --system_instruction (avhb.run.driver.add_system_instruction)
    fewshot: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # sample id -> its few-shot examples
    multiturn: bool = True  # few-shot examples as turns of their own (lm-eval's --fewshot_as_multiturn)

    @property
    def driver(self) -> Driver:
        hook = self.task.cfg.get("driver")
        return self.task.hook(hook["function"]) if hook else single_step

    @property
    def multi_step(self) -> bool:
        return bool(self.task.cfg.get("driver"))

    @functools.cached_property
    def media_root(self) -> Path:
        """Where the samples' relative media paths resolve (found once: a stat)."""
        return self.source.media_root


def generate_bar(run: TaskRun, todo: int) -> Progress:
    """The model stage's progress over ``todo`` records (those not failed already)."""
    label = f"{run.task.name}: {'replay' if run.model.replaying else 'model'}"
    return Progress(label, todo)


async def generate(run: TaskRun, records: list[SampleRecord], cost_of: Callable[[], float] = lambda: 0.0,
                   bar: Progress | None = None) -> int:
    """Fill each record's response (or error); returns how many records a
    replaying caller could not find in the journal.  ``bar``: the stage's
    progress when it spans several calls (a task's windows), else its own."""
    missing = 0
    todo = [r for r in records if r.error is None]
    with nullcontext(bar) if bar is not None else generate_bar(run, len(todo)) as bar:
        seen = [cost_of()]

        async def one(record: SampleRecord) -> None:
            nonlocal missing
            try:
                await drive_one(run, record)
            except NotInJournal:
                missing += 1
                record.error = "not in the journal"
            spent = cost_of() - seen[0]
            seen[0] += spent
            bar.update(1, error=record.error is not None, cost=spent)

        # as many samples at once as the backend takes (a vLLM batch), at least DRIVERS_IN_FLIGHT
        await run_bounded(todo, one, max(DRIVERS_IN_FLIGHT, run.model.concurrency))
    return missing


def write_out(runs: dict[str, "TaskRun"], samples: dict[str, Any]) -> None:
    """``--write_out`` (lm-eval's): each task's first sample as it will be
    sent (prompt text, media parts named), and its target, on stderr."""
    import sys

    from avhb.model.messages import TextPart

    for name, run in runs.items():
        record = samples[name].first(ok=True)  # avhb.run.records.TaskSamples
        if record is None:
            continue
        ctx = SampleContext(run, record.doc, record.id, record.repeat, multi_step=run.multi_step)
        try:
            request = ctx.request()
        except Exception as exc:  # the sample will fail the same way when it runs
            print(f"Task: {name}; document {record.id}: its request cannot be built ({exc})", file=sys.stderr)
            continue
        lines = []
        for m in request.messages:
            media = [f"<{type(p).__name__.removesuffix('Part').lower()} {getattr(p, 'path', None) or 'array'}>"
                     for p in m.parts if not isinstance(p, TextPart)]
            lines.append(f"[{m.role}] " + " ".join([*media, m.text]).strip())
        print(f"Task: {name}; document {record.id}; context prompt (starting on next line):\n" + "\n".join(lines)
              + "\n(end of prompt on previous line)\ntarget string or answer choice index (starting on next line):\n"
              + f"{record.target}\n(end of target on previous line)\n"
              + f"Request: generation {request.generation}" + (" (a driver task: its later steps are not shown)"
                                                              if run.multi_step else ""), file=sys.stderr)


async def drive_one(run: TaskRun, record: SampleRecord) -> None:
    ctx = SampleContext(run, record.doc, record.id, record.repeat, multi_step=run.multi_step)
    try:
        out = await run.driver(ctx, record.doc)
    except (UserError, NotInJournal, EnvironmentFailure):
        raise
    except SampleError as exc:  # a failed step, a missing media file, a template field not in the sample
        record.error = str(exc)
    except Exception as exc:  # a driver hook that raises fails its sample, not the run
        hook = (run.task.cfg.get("driver") or {}).get("function", "driver")
        record.error = f"driver {hook} failed: {type(exc).__name__}: {exc}"
    else:
        response, outputs = (out if isinstance(out, tuple) else (out, {}))
        record.response = None if response is None else str(response)
        record.outputs = dict(outputs or {})
    _log_calls(record, ctx)


def _log_calls(record: SampleRecord, ctx: SampleContext) -> None:
    """What the sample file says about the calls: the last call's prompt and
    media, every adaptation, summed usage, the trajectory of a multi-step
    sample."""
    record.trajectory = ctx.trajectory if ctx.multi_step else []
    if not ctx.calls:
        return
    last = ctx.calls[-1]
    record.meta.update(prompt_hash=last.key[:16], prompt=last.prompt, media=last.media)
    record.meta["adaptations"] = list(dict.fromkeys(a for c in ctx.calls for a in c.adaptations))
    usage: dict[str, int] = {}
    for c in ctx.calls:
        for k, v in (c.usage or {}).items():
            usage[k] = usage.get(k, 0) + int(v or 0)
    if usage:
        record.meta["usage"] = usage
    if last.meta:
        record.meta["response"] = last.meta


async def run_bounded(items: Iterable[T], fn: Callable[[T], Awaitable[Any]], limit: int) -> None:
    """``fn(item)`` for every item, at most ``limit`` at once, started in
    order: ``limit`` workers pull from one iterator, so memory holds
    ``limit`` coroutines, not one per sample.  The first failure cancels
    the others and is raised as itself."""
    iterator = iter(items)

    async def worker() -> None:
        for item in iterator:  # shared: each worker takes the next item
            await fn(item)

    await run_all(worker() for _ in range(max(1, limit)))


async def run_all(coroutines) -> None:
    """Run concurrently; the first failure cancels the others (so nothing is
    still running when the run cleans up) and is raised as itself."""
    try:
        async with asyncio.TaskGroup() as group:
            for coroutine in coroutines:
                group.create_task(coroutine)
    except BaseExceptionGroup as failures:
        raise failures.exceptions[0] from None
