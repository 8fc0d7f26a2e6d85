"""Multi-step samples.  A task may name a driver hook
(``driver: !function hooks.drive``)::

    async def drive(ctx: SampleContext, doc: dict) -> DriverResult:
        first = await ctx.ask(ctx.request(), step="look")
        ...
        return final_text            # or (final_text, {"turns": 3, ...})

(``Driver`` is that signature; ``ctx.run`` is the task as it runs,
:class:`DriverRun`.)

``ctx.ask(messages_or_request, step=...)`` calls the model under test through
the run's one call path (:mod:`avhb.call.caller`): each step is journaled
under a key made of the sample (task, id, repeat), the step name and the
conversation so far, so a resumed run replays finished steps with zero
calls and continues at the first unfinished one, and ``avhb score`` replays
them all.  ``ctx.judge(role, fields, media=...)`` asks a judge role during
generation (declare it ``in_loop: true`` so it is bound under
``--predict-only`` too); the verdict is journaled under the task, sample, repeat
and step, so a replay returns the verdict this sample got even when another
sample asked the same question and a judge that samples answered it
differently.  ``ctx.log(step, data)`` appends to the sample's
trajectory (written to ``samples/<task>.jsonl``; model steps and in-loop
verdicts are logged there automatically).  ``ctx.chunks(video_part)``
splits a long video by the task's ``media.chunks``.

A step whose call failed raises :class:`StepFailed`; the sample then fails
with that error (a re-run retries the step).  Drivers must be
deterministic given the replies: replay depends on it.  Conversations keep
their earlier turns' media unless the driver drops them.

Tasks without a driver run :func:`single_step`: one call with the task's
request.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, Sequence

from avhb.errors import SampleError
from avhb.call.caller import Call, Caller
from avhb.model.messages import Message, Request, VideoPart
from avhb.taskdef.requests import build_request

if TYPE_CHECKING:
    from pathlib import Path

    from avhb.data.sources import DataSource
    from avhb.media.materialize import MediaPlan
    from avhb.media.spec import MediaSpec
    from avhb.run.task import Task
    from avhb.score.judges import TaskJudges, Verdict


class StepFailed(SampleError):
    """A driver step whose model call failed (the sample fails with it)."""


class DriverRun(Protocol):
    """The task as a driver sees it while it runs (``ctx.run``): what
    :class:`avhb.run.generate_phase.TaskRun` holds (read only)."""

    @property
    def task(self) -> Task: ...

    @property
    def source(self) -> DataSource: ...

    @property
    def plan(self) -> MediaPlan: ...

    @property
    def model(self) -> Caller: ...

    @property
    def judges(self) -> TaskJudges: ...

    @property
    def gen_kwargs(self) -> dict[str, Any]: ...

    @property
    def seed(self) -> int: ...

    @property
    def system_instruction(self) -> str | None: ...

    @property
    def fewshot(self) -> dict[str, list[dict[str, Any]]]: ...

    @property
    def multiturn(self) -> bool: ...

    @property
    def media_root(self) -> Path: ...


# What a driver returns: the final answer, or the answer and outputs for the metrics.
DriverResult = str | tuple[str, dict[str, Any]]


@dataclass
class SampleContext:
    """What a driver receives for one sample (and repeat)."""

    run: DriverRun  # the task's TaskRun (avhb.run.generate_phase)
    doc: dict[str, Any]
    sample_id: str
    repeat: int
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    multi_step: bool = True

    @property
    def task(self) -> str:
        return self.run.task.name

    @property
    def media(self) -> MediaSpec:
        """The task's media settings (``MediaSpec``)."""
        return self.run.plan.spec

    @property
    def root(self) -> Path:
        return self.run.media_root

    def request(self, doc: dict[str, Any] | None = None) -> Request:
        """The task's own request for this sample (prompt and media from
        its YAML), with the run's generation settings."""
        request = build_request(self.run.task, doc or self.doc, self.root, self.sample_id, self.media,
                                getattr(self.run, "fewshot", {}).get(self.sample_id, ()),
                                getattr(self.run, "multiturn", True))
        request.generation = self._generation(request.generation)
        instruction = getattr(self.run, "system_instruction", None)
        if instruction:
            add_system_instruction(request, instruction)
        return request

    def _generation(self, base: dict[str, Any] | None) -> dict[str, Any]:
        gen = {**(base if base is not None else self.run.task.generation), **self.run.gen_kwargs}
        gen.setdefault("seed", self.run.seed + self.repeat)
        return gen

    async def ask(self, messages: Request | Sequence[Message], *, step: str | None = None,
                  generation: dict[str, Any] | None = None, choices: list[str] | None = None) -> Call:
        """One model step (module docstring).  ``messages`` is the whole
        conversation so far (or a ready request)."""
        if isinstance(messages, Request):
            request = messages
        else:
            request = Request(messages=list(messages), generation=self._generation({**self.run.task.generation,
                                                                                      **(generation or {})}),
                              choices=choices)
        context = self.prepare(request, step)
        call = await self.run.model.call(request, plan=self.run.plan, context=context,
                                         log={"task": self.task, "id": self.sample_id, "repeat": self.repeat,
                                              **({"step": step} if step is not None else {})})
        self.calls.append(call)
        if self.multi_step:
            self.trajectory.append({"step": step, "kind": "model", "response": call.text, "error": call.error,
                                    **({"adaptations": call.adaptations} if call.adaptations else {})})
        if call.error is not None:
            raise StepFailed(call.error if step is None else f"step {step!r}: {call.error}")
        return call

    def prepare(self, request: Request, step: str | None = None) -> dict[str, Any]:
        """Mark ``request`` as this sample's and return its key context (what
        :meth:`ask` sends; the run's estimate reads the same keys)."""
        request.fields = {**request.fields, "task": self.task, "sample_id": self.sample_id}
        context: dict[str, Any] = {"repeat": self.repeat}
        if step is not None:
            context["step"] = step
        return context

    async def judge(self, role: str, fields: dict[str, Any], *, media: Sequence[Any] = (), step: str | None = None) -> Verdict:
        """A judge verdict during generation (``Verdict``: value, ok, raw)."""
        verdict = await self.run.judges.ask(role, fields, media, context={
            "task": self.task, "id": self.sample_id, "repeat": self.repeat, "step": step or role})
        self.trajectory.append({"step": step or role, "kind": "judge", "role": role, "value": verdict.value,
                                "ok": verdict.ok})
        return verdict

    def log(self, step: str, data: dict[str, Any]) -> None:
        self.trajectory.append({"step": step, **data})

    def chunks(self, part: VideoPart) -> list[VideoPart]:
        """``part`` split into the task's ``media.chunks`` (seconds, fps,
        width x height): one part per chunk, sampled when sent."""
        from avhb.media.chunks import chunk_bounds
        from avhb.media.probe import probe

        spec = self.media.chunks
        if spec is None:
            raise SampleError(f"task {self.task}: the driver asks for chunks but media.chunks is not set")
        start, end = part.segment or (0.0, probe(part.path).duration)
        sampling = {"fps": spec.fps, "width": spec.width, "height": spec.height}
        return [VideoPart(path=part.path, segment=(start + a, start + b), sampling=dict(sampling), boxes=part.boxes,
                          labelled=part.labelled)
                for a, b in chunk_bounds(end - start, spec.seconds)]


def add_system_instruction(request: Request, instruction: str) -> None:
    """``--system_instruction``: lm-eval's placement, before the task's own
    system text (``maybe_delimit(instruction, system, "\n\n")``: the
    delimiter only where neither side has whitespace at the join), or as a
    new system message first."""
    from avhb.model.messages import TextPart

    first = request.messages[0] if request.messages else None
    if first is not None and first.role == "system":
        own = first.text
        joined = own and instruction + ("" if instruction[-1].isspace() or own[0].isspace() else "\n\n") + own
        first.parts = [TextPart(joined or instruction), *(p for p in first.parts if not isinstance(p, TextPart))]
    else:
        request.messages.insert(0, Message("system", [TextPart(instruction)]))


# A driver hook (``driver: !function hooks.drive``; module docstring).
Driver = Callable[[SampleContext, dict[str, Any]], Awaitable[DriverResult]]


async def single_step(ctx: SampleContext, doc: dict[str, Any]) -> DriverResult:
    """The driver of every task that names none: the task's request, once.
    A log-likelihood request's answer reaches the metrics as outputs
    (``loglikelihoods``; for multiple_choice also the ``choices`` and the
    ``gold`` index), and its text is the most likely choice (or the
    log-likelihood)."""
    request = ctx.request()
    call = await ctx.ask(request)
    found = call.meta.get("loglikelihoods")
    if request.loglikelihood is None:
        return call.text
    if not isinstance(found, list) or len(found) != len(request.loglikelihood):
        raise StepFailed(f"the backend answered {len(found) if isinstance(found, list) else 'no'} log-likelihoods "
                         f"for {len(request.loglikelihood)} continuations")
    task = ctx.run.task
    outputs: dict[str, Any] = {"loglikelihoods": [[float(ll), bool(g)] for ll, g in found]}
    if task.output_type == "multiple_choice":
        choices = task.choices(doc, ctx.sample_id) or []
        outputs.update(choices=choices, gold=task.gold(doc, choices, ctx.sample_id))
        lls = [float(ll) for ll, _ in found[:len(choices)]]
        return choices[max(range(len(lls)), key=lambda i: (lls[i], -i))], outputs
    return f"{float(found[0][0]):.6f}", outputs
