"""What a run is about to spend, said before its first call.

For every task that is not finished already (``avhb.resume.finished``), each
sample's request is built as the run will send it (references only: nothing
is decoded), its journal key is looked up, and what the journal answered
already is free: a resume estimates only what is left.

- **model calls**: one per sample and repeat (a driver task: at least one;
  its later steps are not known before it runs); prompt tokens are the
  text's characters / 3 (the budget check's rule) plus ``tokens_per_frame``
  for each image and each video frame the task's media settings plan (a
  video sampled by ``fps`` without ``max_frames`` counts no frames, said);
  completion tokens are the request's ``max_tokens`` (an upper bound; none
  set: not bounded, said).
- **judge calls**: for each metric that needs a judge role, at most one call
  per scored sample and panel member (metrics that try rules first ask
  fewer), less the answers the journal holds for that task and role;
  prompt tokens: the role's prompt template plus the answer it judges;
  completion tokens: the role's ``max_tokens``.
- **cost**: tokens times each backend's ``prices`` (``avhb.model.prices``);
  unknown when a backend with calls to make has none.

``--max-cost USD`` refuses to start when the cost is above it, or unknown.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from avhb.model.messages import ImagePart, TextPart, VideoPart
from avhb.run.stream import WINDOW

_MAX_TOKEN_KEYS = ("max_tokens", "max_new_tokens", "max_completion_tokens", "max_gen_toks")


def text_tokens(text_chars: int) -> int:
    """The token estimate of a text of ``text_chars`` characters (the
    budget check's rule: characters / 3)."""
    return text_chars // 3


@dataclass
class CallCount:
    """Calls to one backend."""

    label: str
    prices: Any = None
    calls: int = 0
    answered: int = 0  # found in the journal: free
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unbounded: int = 0  # calls with no max_tokens (their completion is not counted)

    @property
    def cost(self) -> float | None:
        if not self.calls:
            return 0.0
        if self.prices is None:
            return None
        return self.prices.cost(self.prompt_tokens, self.completion_tokens)


@dataclass
class Estimate:
    model: CallCount
    judges: dict[str, CallCount] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def counts(self) -> list[CallCount]:
        return [self.model, *self.judges.values()]

    @property
    def cost(self) -> float | None:
        costs = [c.cost for c in self.counts]
        return None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)

    def unpriced(self) -> list[str]:
        return [c.label for c in self.counts if c.cost is None]

    def line(self) -> str:
        m = self.model
        judge_calls = sum(j.calls for j in self.judges.values())
        judge_answered = sum(j.answered for j in self.judges.values())
        parts = [f"{m.calls:,} model calls to {m.label}" + (f" ({m.answered:,} more answered in the journal, free)"
                                                          if m.answered else ""),
                 f"~{m.prompt_tokens:,} prompt tokens",
                 f"<= {m.completion_tokens:,} completion tokens" + (f" ({m.unbounded:,} calls without max_tokens "
                                                                    "not counted)" if m.unbounded else "")]
        if self.judges:
            jp = sum(j.prompt_tokens for j in self.judges.values())
            jc = sum(j.completion_tokens for j in self.judges.values())
            parts.append(f"<= {judge_calls:,} judge calls" + (f" ({judge_answered:,} answered in the journal, free)"
                                                               if judge_answered else "")
                         + f" (~{jp:,} prompt, <= {jc:,} completion tokens)")
        cost = self.cost
        if cost is not None:
            sources = sorted({c.prices.source for c in self.counts if c.calls and c.prices is not None})
            parts.append(f"cost <= {cost:.6f} USD" + (f" ({'; '.join(sources)})" if sources else ""))
        else:
            parts.append(f"cost unknown ({', '.join(self.unpriced())}: no prices known)")
        return "; ".join(parts)


def estimate(runs: dict[str, Any], samples: dict[str, Any], skip: set[str], judges: Any,
             journal: Any, predict_only: bool) -> Estimate:
    """The estimate for the tasks in ``runs`` (``TaskRun`` by name) not in
    ``skip`` (finished earlier); ``samples``: each task's
    :class:`avhb.run.records.TaskSamples`, whose records are built a window
    at a time here as when they run."""
    from avhb.run.driver import SampleContext

    first = next(iter(runs.values()))
    model = first.model
    out = Estimate(CallCount(model.label, getattr(model.backend, "prices", None)))
    held = _judge_answers(journal) if not predict_only else Counter()
    replies: bool | None = None  # whether the journal holds any reply (read once, when a task is counted)
    for name, run in runs.items():
        if name in skip:
            continue
        caps = model.capabilities
        if replies is None:
            replies = model.journal.holds(model.kind)  # an empty journal answers nothing: no key to compute
        task_samples = samples[name]
        unplanned_video = False
        count = out.model
        per_frame = caps.tokens_per_frame
        failed = task_samples.failed
        for window in task_samples.documents(WINDOW):
            for position, sample_id, doc in window:
                if position in failed:  # fails before any call
                    continue
                for repeat in range(task_samples.repeats):
                    ctx = SampleContext(run, doc, sample_id, repeat, multi_step=False)
                    try:
                        request = ctx.request()
                    except Exception:  # the sample fails when it runs (SampleError, a hook that raises): free
                        continue
                    if replies and model.answered(model.key(request, run.plan, ctx.prepare(request))):
                        count.answered += 1
                        continue
                    count.calls += 1
                    chars = frames = 0
                    for msg in request.messages:
                        for p in msg.parts:
                            if isinstance(p, TextPart):
                                chars += len(p.text)
                            elif isinstance(p, ImagePart):
                                frames += 1
                            elif isinstance(p, VideoPart):
                                spec = run.plan.spec.frame_spec(segment=p.segment, default_frames=caps.default_frames,
                                                                sampling=p.sampling)
                                planned = spec.frames or spec.max_frames
                                unplanned_video |= not planned
                                frames += int(planned or 0)
                    count.prompt_tokens += text_tokens(chars) + per_frame * frames
                    generation = request.generation
                    bound = None
                    for k in _MAX_TOKEN_KEYS:
                        bound = generation.get(k)
                        if bound:
                            break
                    if bound:
                        count.completion_tokens += int(bound)
                    else:
                        count.unbounded += 1
            window.clear()  # let go before the next window is built (the loop still names this one)
        if run.multi_step:
            out.notes.append(f"{name}: a driver task; its later steps are not counted")
        if unplanned_video:
            out.notes.append(f"{name}: video sampled by fps without max_frames; its frames are not counted")
        if not predict_only:
            _judge_calls(out, run, task_samples.todo, judges, held, name)
    return out


def _judge_answers(journal: Any) -> Counter:
    """(task, role, judge) -> answers the journal holds."""
    held: Counter = Counter()
    for entry in journal.all("judges").values():
        if entry.get("error") is None:
            held[(entry.get("task"), entry.get("role"), entry.get("judge"))] += 1
    return held


def _judge_calls(out: Estimate, run: Any, scored: int, judges: Any, held: Counter, task: str) -> None:
    roles = run.task.judge_roles()
    asked = {r for m in run.task.metrics() for r in m.needs_judges if r in roles}
    answer_tokens = out.model.completion_tokens // max(out.model.calls, 1) if out.model.calls else 0
    for role_name in sorted(asked):
        role = roles[role_name]
        for spec in judges.panel(role):
            caller = judges.caller(spec)
            count = out.judges.setdefault(spec.label, CallCount(spec.label, getattr(caller.backend, "prices", None)))
            free = min(scored, held[(task, role_name, spec.label)])
            calls = scored - free
            count.answered += free
            count.calls += calls
            count.prompt_tokens += calls * (text_tokens(len(role.prompt)) + answer_tokens)
            count.completion_tokens += calls * int(role.generation.get("max_tokens") or 0)
