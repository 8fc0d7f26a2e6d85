"""ANCHOR's pack metrics (named in YAML with ``name:``):

* :class:`GoldFacet` — a judge-panel Likert facet (the built-in ``likert``)
  that needs the gold CoT: ``hallucination`` (judged against the gold
  evidence) and ``divergence`` (against the gold reasoning path).  A sample
  without a gold CoT (format B lines) is not sent to the judges: its score
  is None, counted in ``<name>_no_gold`` (not a judge failure).
* :class:`AnswerAcc` — ``answer_acc``: one yes/no judge (upstream: GPT-5-nano)
  on the final answer vs the reference final answer; per sample 1 (yes) or 0
  (no); the aggregate is the share of yes (x 100 = the paper's %).  A reply
  that never parses is excluded and counted (``answer_acc_judge_failures``);
  a failed sample is excluded and counted (``answer_acc_errors``).

The ``answer`` facet is the built-in ``likert`` as is; every facet is the
panel's mean of the members' valid ratings (a member whose reply never
parsed is left out of that mean and counted in ``<name>_member_failures``).
"""
from __future__ import annotations

from typing import Any, Sequence

from avhb import Aggregate, Metric, SampleRecord, ScoreContext, mean_stderr
from avhb.plugins.metrics import LikertFacet
from avhb.score.metric_helpers import count, judge_fields, resolve, usable, verdict_log


class GoldFacet(LikertFacet):
    """``likert`` over samples that have a gold CoT.  Option ``gold`` (field
    spec, default ``doc.gold_cot``) names it."""
    reads = frozenset({"judgements", "meta"})  # what aggregate() reads (Metric.reads)

    name = "gold_facet"
    description = "judge-panel rating 1-5 of the answers whose sample has a gold CoT"
    accepts = {"gold": "field spec of the gold CoT (default doc.gold_cot)"}

    def _no_gold_flag(self) -> str:
        return f"{self.name}_no_gold"

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        record.meta.pop(self._no_gold_flag(), None)
        if not resolve(record, self.options.get("gold", "doc.gold_cot")):
            record.meta[self._no_gold_flag()] = True
            return {self.name: None}
        return await super().score(record, ctx)

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        out = super().aggregate(records)
        ok = usable(records)
        no_gold = sum(bool(r.meta.get(self._no_gold_flag())) for r in ok)
        failures = out[f"{self.name}_judge_failures"]
        out[f"{self.name}_judge_failures"] = count(int(failures.value or 0) - no_gold, len(ok))
        out[f"{self.name}_no_gold"] = count(no_gold, len(ok))
        return out


YES_NO = {"yes": 1.0, "no": 0.0}


class AnswerAcc(Metric):
    """Options: ``role`` (default "answer_acc"), ``fields`` (judge fields;
    default question / final answer / reference final answer)."""
    reads = frozenset()  # what aggregate() reads (Metric.reads)

    name = "answer_acc"
    description = "share of final answers the judge says match the reference's"
    accepts = {"role": "the judge role (default answer_acc)", "fields": "judge field -> field spec"}
    DEFAULT_FIELDS = {"question": "doc.question", "response": "extracted", "reference": "doc.reference_answer"}

    @property
    def role(self) -> str:
        return self.options.get("role", "answer_acc")

    @property
    def needs_judges(self) -> tuple[str, ...]:  # type: ignore[override]  # over Metric's attribute: roles from the options
        return (self.role,)

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        fields = judge_fields(record, dict(self.options.get("fields") or self.DEFAULT_FIELDS))
        verdict = await ctx.judges.ask(self.role, fields)
        record.judgements[self.name] = verdict_log(self.role, verdict)
        value = YES_NO.get(str(verdict.value).lower()) if verdict.ok else None
        if value is None:
            record.meta.setdefault("judge_failures", []).append(self.name)
        return {self.name: value}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = usable(records)
        values = [r.scores.get(self.name) for r in ok]
        return {
            self.name: mean_stderr(values),
            f"{self.name}_judge_failures": count(sum(v is None for v in values), len(ok)),
            f"{self.name}_errors": count(len(records) - len(ok), len(records)),
        }
