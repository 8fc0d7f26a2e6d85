"""HAVE-Bench scores.  Every task reports ``score`` (so groups average one
name); samples that failed outside the model (``record.error``: a rejected
item, missing media, a backend that never answered) are excluded from every
number here and counted in the task's ``errors``, never scored as wrong.

Static tasks (:class:`StaticScore`), per item by ``answer_type``:

* ``mcq``: the built-in choice metric (``choice_accuracy``): the rule parser
  (unambiguous answers only), then the ``answer_matcher`` judge (3 tries);
  an answer neither maps to an option scores 0 and is counted in
  ``score_unparsed`` (a matcher that never replied validly also in
  ``score_judge_failures``);
* ``open``: the ``scorer`` judge says yes/no against the reference (its
  prompt is the subtask's ``prompts/open_<subtask>.txt``, with in-context
  examples): 1 / 0; a reply that never parses is excluded, counted in
  ``score_excluded`` and ``score_judge_failures``.

``score`` = the mean of the run means (the paper: "every number is the
mean of 3 independent runs"): each repeat's mean over its scored items, then
the mean over the repeats that scored any (:func:`mean_of_runs`; each run's
value is also in ``score_runs``).  Its stderr is over items (each item's
mean over its scored runs), ``n`` the scored samples of all runs.
``score_pooled`` (diagnostic) is the mean over every scored sample of all
runs pooled; the two differ when the runs score different items (a judge
reply that never parsed in one run).  With one run they are equal.

Interaction tasks (:class:`InteractionScore`), from the driver's outputs:
``score`` = success rate over the scored instances, as the mean of the run
means (``score_pooled``: pooled, as above); an instance whose edge judge
never replied validly is excluded (``score_excluded``).  Also
``mean_turns`` (turns taken, over the scored instances), and the counts
``ambiguous_steps`` (turns where more than one edge fired; summed),
``turn_limit`` (instances that ran out of turns), ``fail_node`` (instances
that reached a fail node) and ``skipped_learn`` (instances that reached a
``solve`` node before any ``learn`` node; puzzles).
"""
from __future__ import annotations

from typing import Any, Sequence

from avhb import COUNT, DIAGNOSTIC, Aggregate, Metric, SampleRecord, ScoreContext, mean_stderr
from avhb.plugins.metrics import ChoiceAccuracy
from avhb.score.metric_helpers import count, usable, verdict_log

POOLED = (DIAGNOSTIC, "mean over every scored sample of all runs pooled (the headline is the mean of the run means)")


def mean_of_runs(records: list[SampleRecord], name: str) -> Aggregate:
    """The mean of each repeat's mean of ``record.scores[name]`` over its
    scored records (None left out; repeats with none left out); stderr over
    items (each item's mean over its scored repeats); n = scored records."""
    by_run: dict[int, list[float]] = {}
    by_item: dict[str, list[float]] = {}
    for r in records:
        value = r.scores.get(name)
        if value is not None:
            by_run.setdefault(r.repeat, []).append(float(value))
            by_item.setdefault(str(r.id), []).append(float(value))
    if not by_run:
        return Aggregate(None, None, 0)
    means = [sum(v) / len(v) for v in by_run.values()]
    items = mean_stderr([sum(v) / len(v) for v in by_item.values()])
    return Aggregate(sum(means) / len(means), items.stderr, sum(len(v) for v in by_run.values()))


class StaticScore(Metric):
    """Options: ``matcher`` (judge role, "answer_matcher"), ``scorer``
    (judge role, "scorer")."""
    reads = frozenset({"meta"})  # what aggregate() reads (Metric.reads)

    name = "score"
    accepts = {"matcher": "the MCQ matcher judge role (default answer_matcher)",
               "scorer": "the open-answer judge role (default scorer)"}
    description = ("accuracy: MCQ by the rule parser then the answer_matcher judge, open answers by the scorer "
                   "judge; the mean of the runs' means")
    outputs = {"pooled": POOLED,
               "unparsed": (COUNT, "MCQ replies no rule or matcher mapped to an option (scored 0)"),
               "excluded": (COUNT, "open answers whose scorer reply never parsed (excluded)"),
               "judge_failures": (COUNT, "matcher or scorer replies that never parsed")}

    def __init__(self, name: str | None = None, **options: Any):
        super().__init__(name, **options)
        self.choice = ChoiceAccuracy(name=self.name, question_field="query", role=self.matcher)

    @property
    def matcher(self) -> str:
        return self.options.get("matcher", "answer_matcher")

    @property
    def scorer(self) -> str:
        return self.options.get("scorer", "scorer")

    @property
    def needs_judges(self) -> tuple[str, ...]:  # type: ignore[override]  # over Metric's attribute: roles from the options
        return (self.matcher, self.scorer)

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        if record.doc.get("answer_type") == "mcq":
            return {self.name: (await self.choice.score(record, ctx))[self.name]}
        fields = {"question": record.doc.get("query") or "", "reference": str(record.target or ""),
                  "response": record.response or ""}
        verdict = await ctx.judges.ask(self.scorer, fields)
        record.judgements[self.name] = verdict_log(self.scorer, verdict)
        if not verdict.ok or verdict.value not in ("yes", "no"):
            record.meta["judge_failed"] = True
            return {self.name: None}
        return {self.name: 1.0 if verdict.value == "yes" else 0.0}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = usable(records)
        values = [r.scores.get(self.name) for r in ok]
        matcher_failed = sum(bool((r.meta.get("choice") or {}).get("judge_failed")) for r in ok)
        return {
            self.name: mean_of_runs(ok, self.name),
            f"{self.name}_pooled": mean_stderr(values),
            f"{self.name}_unparsed": count(sum(bool(r.meta.get("unparsed")) for r in ok), len(ok)),
            f"{self.name}_excluded": count(sum(v is None for v in values), len(ok)),
            f"{self.name}_judge_failures": count(matcher_failed + sum(bool(r.meta.get("judge_failed")) for r in ok),
                                                 len(ok)),
        }


class InteractionScore(Metric):
    """Success rate of a task-graph walk (module docstring)."""
    reads = frozenset({"outputs"})  # what aggregate() reads (Metric.reads)

    name = "score"
    description = "success rate: walks that reach the goal along judged transitions; the mean of the runs' means"
    accepts: dict[str, str] = {}
    outputs = {"pooled": POOLED,
               "excluded": (COUNT, "walks ended by an edge-judge reply that never parsed (excluded)"),
               "mean_turns": (DIAGNOSTIC, "turns taken, over the scored walks"),
               "ambiguous_steps": (COUNT, "turns where more than one edge fired (the first declared was taken)"),
               "turn_limit": (COUNT, "walks that ran out of turns"),
               "fail_node": (COUNT, "walks that reached a fail node"),
               "skipped_learn": (COUNT, "puzzle walks that reached a solve node before any learn node")}

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        out = record.outputs
        if out.get("outcome") == "excluded":
            return {self.name: None}
        return {self.name: 1.0 if out.get("success") else 0.0}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = usable(records)
        scored = [r for r in ok if r.scores.get(self.name) is not None]
        outcome = [r.outputs.get("outcome") for r in scored]
        return {
            self.name: mean_of_runs(scored, self.name),
            f"{self.name}_pooled": mean_stderr([r.scores[self.name] for r in scored]),
            f"{self.name}_excluded": count(len(ok) - len(scored), len(ok)),
            "mean_turns": mean_stderr([r.outputs.get("turns") for r in scored]),
            "ambiguous_steps": count(sum(int(r.outputs.get("ambiguous_steps") or 0) for r in scored), len(scored)),
            "turn_limit": count(outcome.count("turn_limit"), len(scored)),
            "fail_node": count(outcome.count("fail_node"), len(scored)),
            "skipped_learn": count(sum(bool(r.outputs.get("skipped_learn")) for r in scored), len(scored)),
        }
