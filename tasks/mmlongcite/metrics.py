"""MMLongCite's answer correctness (``cor``) and error taxonomy.

``cor`` (per answer, 1 or 0)
----------------------------
The answer judged is the reply's final answer (``Final answer: ...``; see
``hooks.split_response``), or, when the reply has no such line, the whole
reply with its citation markers removed.

* multiple choice (the gold is one of the option letters written in the
  question): the option letter by avhb's single-option rule parser
  (``parser: single``, ``parse_choice`` in ``plugins/metrics/choice.py``: it
  commits only when the reply indicates exactly one option, so "A or B"
  is not read as B the way MMMU's last-candidate rule would), then the
  ``answer_matcher`` judge when the rules find none or several
  (``avhb.plugins.metrics.resolve_choice``); 1 iff it is the gold.
  No letter at all: 0, counted in ``cor_unparsed``.
* any other gold: the ``scorer`` judge says yes/no (fields ``question``,
  ``reference``, ``response``).  An empty answer scores 0 (unparsed); a
  judge reply that never parses is excluded and counted
  (``cor_judge_failures``), never guessed.

Error taxonomy (ours; the paper names the six classes without operational
rules).  Each answer that is not fully right (cor 1, CR 1 and CP 1) gets the
FIRST label whose rule holds:

1. ``format_error``: no statement, no citation anywhere, or no answer
   extractable (``cor`` unparsed);
2. ``joint_failure``: cor 0 and not located;
3. ``comprehension_failure``: cor 0 and located, where located = some
   in-range citation names a gold ``evidence`` unit, or, for rows without
   ``evidence``, CR = 1;
4. ``citation_hallucination``: cor 1 and a cited statement is unsupported
   (its cited units do not entail it) or cites an index out of range;
5. ``citation_omission``: cor 1 and a statement has no citation;
6. ``over_citation``: cor 1, CR 1 and CP < 1.

The rules cover every case (cor 1 with CR < 1 falls under 4 or 5).  Rule 1
reads the reply alone (its statements and citations as parsed, and whether
an answer could be extracted), so it is decided before any judge; past it,
an answer whose cor or citation scores are None (a judge reply that never
parsed) gets no label (``taxonomy_unlabelled``) — a well-formed answer
whose entailment judge failed is unlabelled, never a format error.  Reported: the share of
each label among the labelled error cases (``taxonomy_<label>``, as the
paper reports its 120 analysed cases), its count
(``taxonomy_<label>_count``), the number of error cases
(``taxonomy_errors``) and of fully right answers (``taxonomy_correct``);
per family (task) and per bucket (``breakdown``) like every metric.

Samples that failed outside the model (missing image, over budget, a data
error) are excluded from both and counted in the task's ``errors``.
"""
from __future__ import annotations

from typing import Any, Sequence

from avhb import Aggregate, Metric, SampleRecord, ScoreContext, mean_stderr
from avhb.plugins.metrics import parse_yes_no, resolve_choice, strip_citations
from avhb.score.metric_helpers import count, usable, verdict_log

from .hooks import split_response

LABELS = ("format_error", "joint_failure", "comprehension_failure", "citation_hallucination",
          "citation_omission", "over_citation")


def answer_text(record: SampleRecord) -> str:
    """The final answer, else the whole reply without citation markers."""
    if "final_answer" in record.meta:
        answer = record.meta["final_answer"]
        statements = record.extracted if isinstance(record.extracted, str) else ""
    else:
        statements, answer = split_response(record.response)
    return (answer or strip_citations(statements or "")).strip()


class Correctness(Metric):
    """``cor`` (module docstring).  Options: ``matcher_role``
    ("answer_matcher"), ``scorer_role`` ("scorer")."""
    reads = frozenset({"meta"})  # what aggregate() reads (Metric.reads)

    name = "cor"
    description = "answer correctness: the option letter by rules then the matcher judge, else the scorer judge"
    accepts = {"matcher_role": "the MCQ matcher role (default answer_matcher)",
               "scorer_role": "the open-answer judge role (default scorer)"}

    @property
    def needs_judges(self) -> tuple[str, ...]:  # type: ignore[override]  # over Metric's attribute: roles from the options
        return (self.options.get("matcher_role", "answer_matcher"), self.options.get("scorer_role", "scorer"))

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        doc = record.doc
        text = answer_text(record)
        gold = str(record.target if record.target is not None else doc.get("ground_truth", "")).strip()
        info: dict[str, Any] = {"answer": text, "mcq": bool(doc.get("mcq")), "unparsed": False, "judge_failed": False}
        record.meta[self.name] = info
        if doc.get("mcq"):
            options = dict(doc.get("options") or {})
            res = await resolve_choice(text, options, str(doc.get("question_text", "")), ctx,
                                       role=self.options.get("matcher_role", "answer_matcher"), parser="single")
            info.update(letter=res.letter, by=res.by, judge_failed=res.judge_failed)
            if res.judgement is not None:
                record.judgements[self.name] = res.judgement
            if res.letter is None:
                info["unparsed"] = True
                return {self.name: 0.0}
            return {self.name: float(res.letter.upper() == gold.upper())}
        if not text:
            info["unparsed"] = True
            return {self.name: 0.0}
        role = self.options.get("scorer_role", "scorer")
        verdict = await ctx.judges.ask(role, {"question": str(doc.get("question_text", "")), "reference": gold,
                                              "response": text})
        record.judgements[self.name] = verdict_log(role, verdict)
        value = parse_yes_no(verdict.value) if verdict.ok else None
        if value is None:
            info["judge_failed"] = True
            record.meta.setdefault("judge_failures", []).append(self.name)
            return {self.name: None}
        return {self.name: float(value)}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = usable(records)
        infos = [r.meta.get(self.name) or {} for r in ok]
        return {
            self.name: mean_stderr([r.scores.get(self.name) for r in ok]),
            f"{self.name}_unparsed": count(sum(bool(i.get("unparsed")) for i in infos), len(ok)),
            f"{self.name}_judge_failures": count(sum(bool(i.get("judge_failed")) for i in infos), len(ok)),
        }


def located(statements: list[dict[str, Any]], evidence: list[int] | None, recall: float | None) -> bool:
    if evidence:
        gold = set(evidence)
        return any(gold.intersection(s["citations"]) for s in statements if not s.get("out_of_range"))
    return recall == 1.0


def classify(cor: float | None, recall: float | None, precision: float | None, statements: list[dict[str, Any]],
             unparsed: bool, evidence: list[int] | None) -> str | None:
    """The taxonomy label of one answer, ``"correct"`` when it is fully
    right, None when it cannot be decided (module docstring)."""
    if not statements or not any(s["citations"] for s in statements) or unparsed:
        return "format_error"
    if cor is None or recall is None or precision is None:
        return None
    if cor == 1.0 and recall == 1.0 and precision == 1.0:
        return "correct"
    if cor == 0.0:
        return "comprehension_failure" if located(statements, evidence, recall) else "joint_failure"
    if any(s["citations"] and (s.get("out_of_range") or not s["recall"]) for s in statements):
        return "citation_hallucination"
    if any(not s["citations"] for s in statements):
        return "citation_omission"
    return "over_citation"  # cor 1, CR 1, CP < 1


class Taxonomy(Metric):
    """The error taxonomy (module docstring).  Runs after the citation and
    ``cor`` metrics; options ``citation`` ("citation") and ``cor`` ("cor")
    name them."""
    reads = frozenset({"meta"})  # what aggregate() reads (Metric.reads)

    name = "taxonomy"
    description = "error-taxonomy labels of the answers not fully right"
    accepts = {"citation": "the citation metric's name (default citation)", "cor": "the cor metric's name (default cor)"}

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        cit = self.options.get("citation", "citation")
        cor_name = self.options.get("cor", "cor")
        details = (record.meta.get(cit) or {}).get("statements") or []
        label = classify(record.scores.get(cor_name), record.scores.get(f"{cit}_recall"),
                         record.scores.get(f"{cit}_precision"), details,
                         bool((record.meta.get(cor_name) or {}).get("unparsed")), record.doc.get("evidence"))
        record.meta[self.name] = label
        return {f"{self.name}_error": None if label is None else float(label != "correct")}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = usable(records)
        labels = [r.meta.get(self.name) for r in ok]
        errors = [x for x in labels if x not in (None, "correct")]
        out = {f"{self.name}_errors": count(len(errors), len(ok)),
               f"{self.name}_correct": count(sum(x == "correct" for x in labels), len(ok)),
               f"{self.name}_unlabelled": count(sum(x is None for x in labels), len(ok))}
        for label in LABELS:
            out[f"{self.name}_{label}"] = mean_stderr([float(x == label) for x in errors])
            out[f"{self.name}_{label}_count"] = count(sum(x == label for x in errors), len(ok))
        return out


cor = Correctness
taxonomy = Taxonomy
