"""VidPair-Halluc metrics (pack-local; referenced as ``- function: metrics.<name>``).

Binary (``vAcc``, ``qAcc``, ``wAcc``, ``yes_diff``, ``fp_rate``, ``unknown``)
and multiple-choice (``mcq_f1``, ``mcq_macro_f1``, ``mcq_pair_acc``) metrics
score pairs and groups; their definitions are in ``scoring.py``.  Shared
options (every entry of one task should use the same values):

* ``mode``: ``avhb`` (default) or ``upstream`` (the published scripts exactly);
* ``unknown``: binary ``exclude`` (default, upstream) or ``wrong``; MCQ
  ``wrong`` (default: an unparsed reply is scored wrong and counted) or ``exclude``;
* ``gt_yes``: ``all`` (default, videoqa.py) or ``answered`` (clipqa.py) — the
  scope of gold yes in ``yes_diff``;
* ``use_judge`` (MCQ, default true): ask the ``answer_matcher`` role when the
  rule parser finds no letter (none, or several candidates);
* ``parser`` (MCQ, default ``single``): the rule parser of
  ``plugins/metrics/choice.py`` — ``single`` commits only when exactly one
  option is indicated, ``mmmu`` is MMMU's rule (last candidate wins);
* ``bootstrap_iters`` (1000): resamples of pairs for every stderr.

A sample that failed outside the model (e.g. its video is missing) has no
reply and is never a wrong answer (docs/errors.md): binary and MCQ metrics
count it as ``missing`` and leave it out of every unit and share (a pair
with a failed member is an incomplete pair), the open score excludes it.

``open_score``: the ``scorer`` judge's 0-2 rating / 2 (``scale: 2``, parser
``score_0_2``) or (rating - 1) / 4 (``scale: 5``, parser ``rating_json`` or
``integer`` on 1-5); a reply that never parsed, or a value that is not a
number on the scale (booleans included), is excluded and counted in
``<name>_judge_failures``.  A panel mean such as 1.5 is a valid rating.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from avhb import COUNT, DIAGNOSTIC, Aggregate, Metric, SampleError, SampleRecord, ScoreContext, UserError
from avhb.plugins.metrics import check_parser, inline_options, options_from, resolve_choice, valid_rating

from . import scoring
from .extract import UNKNOWN, first_letter, is_sequence_answer, letter_sequence, yes_no_extractor


def _reply(record: SampleRecord) -> str | None:
    """The text the metrics read: the filtered answer when a filter made a
    string, else the raw reply; None for a failed sample."""
    if record.error is not None:
        return None
    return record.extracted if isinstance(record.extracted, str) else record.response


def _count(value: int, n: int) -> Aggregate:
    return Aggregate(float(value), None, n)


# ---------------------------------------------------------------- binary


class _Binary(Metric):
    """Per sample: the mode's yes/no extraction (logged in ``meta``; avhb's
    reads a hedge as unknown, upstream's substring rule as no).
    Aggregate: one statistic of ``scoring.BINARY_STATS`` over pairs."""
    reads = frozenset({"doc", "extracted", "response", "target"})  # what aggregate() reads (Metric.reads)

    stat = ""
    accepts = {"mode": "avhb (default) or upstream (the published scripts)",
               "unknown": "exclude (default) or wrong", "gt_yes": "all (default) or answered: gold yes in yes_diff",
               "bootstrap_iters": "resamples of pairs for the standard error (1000)"}

    def __init__(self, name: str | None = None, **options: Any):
        super().__init__(name, **options)
        self.mode = scoring.check_option("mode", options.get("mode", "avhb"), scoring.MODES)
        self.unknown = scoring.check_option("unknown", options.get("unknown", "exclude"), ("exclude", "wrong"))
        self.gt_yes = scoring.check_option("gt_yes", options.get("gt_yes", "all"), ("all", "answered"))
        self.iters = int(options.get("bootstrap_iters", 1000))
        scoring.check_upstream_options(self.mode, self.unknown, self.gt_yes)
        if self.mode == "upstream":  # each script fixes its own scope (videoqa: all; clipqa: answered)
            self.gt_yes = "all"

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        yes_no = yes_no_extractor(self.mode)
        answer, gold = yes_no(_reply(record)), yes_no(record.target)
        record.meta["yes_no"] = answer
        if answer == UNKNOWN:
            record.meta["unknown"] = True
        return {"binary_correct": None if answer == UNKNOWN else float(answer == gold),
                "binary_unknown": float(answer == UNKNOWN)}

    def items(self, records: Sequence[SampleRecord]) -> list[scoring.BinaryItem]:
        out = []
        for r in records:
            d = r.doc
            if not d.get("qa_group"):
                raise UserError(f"vidpair_halluc: binary row {d.get('qa_id') or r.id!r} has no qa_group "
                                "(binary_qa_pos / binary_qa_neg): it could never be paired")
            unit = d.get("id") if self.mode == "upstream" else (d.get("pair_id") or d.get("id"))
            out.append(scoring.BinaryItem(sample=(r.repeat, d.get("level"), unit), group=str(d.get("qa_group")),
                                          file=str(d.get("file_name")), gold=r.target, reply=_reply(r),
                                          level=d.get("level")))
        return out

    def group_key(self, record: SampleRecord) -> Any:
        """Rows of one sample (a pair of videos at one level) score together:
        ``--shard`` keeps them in one shard."""
        d = record.doc
        return (d.get("level"), d.get("id") if self.mode == "upstream" else (d.get("pair_id") or d.get("id")))

    def tallies(self, records: Sequence[SampleRecord]) -> list[scoring.BinaryTally]:
        return scoring.tally_binary(self.items(records), self.mode, self.unknown)

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        return {self.name: scoring.binary_stat(self.tallies(records), self.stat, self.gt_yes, self.iters)}


class VAcc(_Binary):
    """Video-pair accuracy: one question over both videos, all answers right."""

    stat = "vAcc"
    rate = True  # a share of units: its interval stays in [0, 1]
    description = "video-pair accuracy: one question over both videos of a pair, every answer right"


class QAcc(_Binary):
    """Question-pair accuracy: the pos and neg questions on one video both right."""

    stat = "qAcc"
    rate = True  # a share of units: its interval stays in [0, 1]
    description = "question-pair accuracy: the pos and neg questions on one video both right"


class WAcc(_Binary):
    """(vp_right + qp_right) / (vp_total + qp_total)."""

    stat = "wAcc"
    rate = True  # a share of units: its interval stays in [0, 1]
    description = "video-pair and question-pair units right, pooled (the paper's binary wAcc)"


class YesDiff(_Binary):
    """(model_yes - gt_yes) / total_qa; also reports ``<name>_model_yes`` and
    ``<name>_gt_yes`` (n = total_qa)."""
    reads = frozenset({"doc", "extracted", "response", "target"})  # what aggregate() reads (Metric.reads)

    stat = "yes_diff"
    higher_is_better = False
    kind = DIAGNOSTIC
    description = "(model yes - gold yes) / questions: the yes-bias (0 is unbiased)"
    outputs = {"model_yes": COUNT, "gt_yes": COUNT}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ts = self.tallies(records)
        total = scoring._total(ts)
        return {self.name: scoring.binary_stat(ts, self.stat, self.gt_yes, self.iters),
                f"{self.name}_model_yes": _count(total.model_yes, total.total_qa),
                f"{self.name}_gt_yes": _count(total.gt_yes(self.gt_yes), total.total_qa)}


class FPRate(_Binary):
    """FP / total_qa, FP = yes where the gold is no; also reports ``<name>_fp``."""
    reads = frozenset({"doc", "extracted", "response", "target"})  # what aggregate() reads (Metric.reads)

    stat = "fp_rate"
    rate = True  # a share of units: its interval stays in [0, 1]
    higher_is_better = False
    kind = DIAGNOSTIC
    description = "share of questions answered yes where the gold is no"
    outputs = {"fp": COUNT}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ts = self.tallies(records)
        total = scoring._total(ts)
        return {self.name: scoring.binary_stat(ts, self.stat, self.gt_yes, self.iters),
                f"{self.name}_fp": _count(total.fp, total.total_qa)}


class UnknownCount(_Binary):
    """Counts, no estimate: ``<name>`` unknown replies (n = rows with a
    reply), ``<name>_missing`` answers (failed samples; n = rows),
    ``<name>_skipped_pairs`` (samples skipped whole; n = samples)."""
    reads = frozenset({"doc", "extracted", "response", "target"})  # what aggregate() reads (Metric.reads)

    higher_is_better = False
    kind = COUNT
    description = "replies that are neither yes nor no"
    outputs = {"missing": COUNT, "skipped_pairs": COUNT}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ts = self.tallies(records)
        total = scoring._total(ts)
        return {self.name: _count(total.unknown, total.rows - total.missing),
                f"{self.name}_missing": _count(total.missing, total.rows),
                f"{self.name}_skipped_pairs": _count(total.skipped, len(ts))}


# ---------------------------------------------------------------- multiple choice

_SEQ_PUNCT = re.compile(r"[\s,;.\-–>→|/]+")


def robust_sequence(reply: str | None, letters: set[str]) -> str | None:
    """A clip-order reply as a letter sequence: separators (spaces, commas,
    arrows, dashes) removed, upper-cased; None unless every character is an
    option letter."""
    if not reply:
        return None
    s = _SEQ_PUNCT.sub("", reply.strip()).upper()
    return s if s and all(c in letters for c in s) else None


def mcq_options(doc: dict[str, Any]) -> dict[str, str]:
    """Letter -> option text: ``option_map``, else ``choices``, else the
    options written in the question."""
    for value in (doc.get("option_map"), doc.get("choices")):
        opts = options_from(value) if isinstance(value, (dict, list)) else {}
        if opts:
            return opts
    return inline_options(str(doc.get("question") or ""))


class _Mcq(Metric):
    """Per sample: the answer extracted once per mode (cached in
    ``meta["mcq"]``).  Aggregate: one of ``scoring.MCQ_STATS``."""
    reads = frozenset({"doc", "meta", "target"})  # what aggregate() reads (Metric.reads)

    stat = ""
    needs_judges = ("answer_matcher",)
    accepts = {"mode": "avhb (default) or upstream (the first-letter rule)",
               "unknown": "wrong (default) or exclude: an unparsed reply",
               "use_judge": "ask answer_matcher when the rules find no letter (default true)",
               "parser": "the rule parser: single (default) or mmmu",
               "bootstrap_iters": "resamples of pairs for the standard error (1000)"}

    def __init__(self, name: str | None = None, **options: Any):
        super().__init__(name, **options)
        self.mode = scoring.check_option("mode", options.get("mode", "avhb"), scoring.MODES)
        self.unknown = scoring.check_option("unknown", options.get("unknown", "wrong"), ("exclude", "wrong"))
        scoring.check_upstream_options(self.mode, options.get("unknown"))
        self.use_judge = bool(options.get("use_judge", True))
        self.parser = check_parser(options.get("parser", "single"))
        self.iters = int(options.get("bootstrap_iters", 1000))

    def _key(self) -> str:
        if self.mode == "upstream":
            return "upstream"
        return ("mmmu_" if self.parser == "mmmu" else "") + ("robust" if self.use_judge else "rules")

    async def extract(self, record: SampleRecord, ctx: ScoreContext | None) -> dict[str, Any]:
        cache = record.meta.setdefault("mcq", {})
        if self._key() in cache:
            return cache[self._key()]
        reply, doc = _reply(record), record.doc
        if self.mode == "upstream":
            seq = doc.get("level") == "spatial"
            out = {"pred": letter_sequence(reply) if seq else first_letter(reply),
                   "gold": letter_sequence(record.target) if seq else first_letter(record.target), "by": "upstream"}
        else:
            options = mcq_options(doc)
            gold = scoring.gold_key(record.target, options)  # SampleError: the gold names no option
            if is_sequence_answer(record.target, options):
                out = {"pred": robust_sequence(reply, {k.upper() for k in options}), "gold": gold, "by": "rules"}
            else:
                res = await resolve_choice(reply, options, str(doc.get("question") or ""), ctx, self.use_judge,
                                           parser=self.parser)
                if res.judgement is not None:
                    record.judgements["answer_matcher"] = res.judgement
                out = {"pred": res.letter, "gold": gold, "by": res.by, "judge_failed": res.judge_failed}
            if out["pred"] is None:
                record.meta["unparsed"] = True
        cache[self._key()] = out
        return out

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        got = await self.extract(record, ctx)
        return {"mcq_correct": float(got["pred"] is not None and got["pred"] == got["gold"]),
                "mcq_unparsed": float(got["pred"] is None)}

    def group_key(self, record: SampleRecord) -> Any:
        """The pair (upstream: the sample) a row is scored in; ``--shard``
        keeps it in one shard."""
        d = record.doc
        return (d.get("level"), d.get("id") if self.mode == "upstream" else (d.get("pair_id") or d.get("id")))

    def items(self, records: Sequence[SampleRecord]) -> list[scoring.McqItem]:
        out = []
        for r in records:
            d = r.doc
            got = (r.meta.get("mcq") or {}).get(self._key()) if r.error is None else None
            out.append(scoring.McqItem(
                pair=(r.repeat, d.get("level"), d.get("pair_id") or d.get("id")),
                sample=(r.repeat, d.get("level"), d.get("id")), file=str(d.get("file_name")), level=d.get("level"),
                gold=got["gold"] if got else (r.target if self.mode == "upstream" else _safe_gold(r)),
                pred=got["pred"] if got else None, answered=r.error is None))
        return out

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ts = scoring.tally_mcq(self.items(records), self.mode, self.unknown)
        return {self.name: scoring.mcq_stat(ts, self.stat, self.iters)}


def _safe_gold(record: SampleRecord) -> Any:
    """The gold key of a record that was never scored (its model call
    failed); None when the gold names no option (the row counts as wrong)."""
    try:
        return scoring.gold_key(record.target, mcq_options(record.doc))
    except SampleError:
        return None


class McqF1(_Mcq):
    """Upstream F1 (= accuracy over counted rows); also reports the counts
    ``<name>_unparsed``, ``<name>_missing`` (n = rows) and
    ``<name>_skipped_samples`` (upstream mode; n = samples)."""
    reads = frozenset({"doc", "meta", "target"})  # what aggregate() reads (Metric.reads)

    stat = "f1"
    rate = True  # a share of units: its interval stays in [0, 1]
    description = "upstream F1: accuracy over the rows counted (unparsed replies count as wrong)"

    outputs = {"unparsed": COUNT, "missing": COUNT, "skipped_samples": COUNT}
    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        items = self.items(records)
        ts = scoring.tally_mcq(items, self.mode, self.unknown)
        unparsed = sum(1 for it in items if it.answered and it.pred is None)
        return {self.name: scoring.mcq_stat(ts, self.stat, self.iters),
                f"{self.name}_unparsed": _count(unparsed, len(items)),
                f"{self.name}_missing": _count(sum(1 for it in items if not it.answered), len(items)),
                f"{self.name}_skipped_samples": _count(sum(t.skipped for t in ts), len(ts))}


class McqMacroF1(_Mcq):
    """Macro F1 over option letters."""

    description = "macro F1 over the option letters"

    stat = "macro_f1"
    rate = True  # a share of units: its interval stays in [0, 1]


class McqPairAcc(_Mcq):
    """Both videos of a pair answered right (default pairing: ``pair_id``).
    Also reports ``<name>_incomplete_pairs`` (avhb mode: pairing units not
    scored for lack of a second member; n = pairing units)."""
    reads = frozenset({"doc", "meta", "target"})  # what aggregate() reads (Metric.reads)

    description = "share of pairs (the same question on both videos) answered right on both"

    stat = "pair_acc"
    rate = True  # a share of units: its interval stays in [0, 1]

    outputs = {"incomplete_pairs": COUNT}
    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ts = scoring.tally_mcq(self.items(records), self.mode, self.unknown)
        return {self.name: scoring.mcq_stat(ts, self.stat, self.iters),
                f"{self.name}_incomplete_pairs": _count(sum(t.incomplete_pairs for t in ts), len(ts))}


# ---------------------------------------------------------------- open-ended


SCALES = {2: (0.0, 2.0), 5: (1.0, 5.0)}  # scale -> rating range
_SCALE_PARSERS = {2: ("score_0_2",), 5: ("rating_json", "integer")}


def check_scale_parser(metric: str, scale: int, role: Any) -> None:
    """``UserError`` unless the ``scorer`` role's parser yields ratings on
    ``scale``: ``score_0_2`` for scale 2; ``rating_json`` / ``integer`` with
    ``min: 1, max: 5`` for scale 5 (``rating_json`` defaults to 1-5)."""
    parser = getattr(role, "parser", None)
    opts = getattr(role, "parser_options", None) or {}
    ok = parser in _SCALE_PARSERS[scale]
    if ok and scale == 5:
        lo, hi = (opts.get("min", 1), opts.get("max", 5)) if parser == "rating_json" else (opts.get("min"), opts.get("max"))
        ok = (lo, hi) == (1, 5)
    if not ok:
        raise UserError(f"{metric}: scale {scale} needs the scorer judge's parser to rate on "
                        f"{'0-2 (parser: score_0_2)' if scale == 2 else '1-5 (parser: rating_json or integer, min 1, max 5)'}"
                        f"; the task declares parser {parser!r} {opts or ''}".rstrip())


class OpenScore(Metric):
    """The ``scorer`` judge's rating of a description against the reference,
    mapped to [0, 1] (see module docstring); stderr by bootstrap over pairs.

    A rating counts only when the verdict is ok and its value is a number
    (not a boolean) on the scale's range: [0, 2] for ``scale: 2``, [1, 5]
    for ``scale: 5``; a panel's mean (e.g. 1.5 from ratings 1 and 2) is
    valid.  Anything else is excluded and counted in
    ``<name>_judge_failures`` (n = samples with a reply).  The task's scorer
    role must use a parser on the same scale (``check_scale_parser``)."""
    reads = frozenset({"doc"})  # what aggregate() reads (Metric.reads)

    needs_judges = ("scorer",)

    description = "the scorer judge's 0-2 rating of the description, mapped to [0, 1]"
    outputs = {"judge_failures": COUNT}
    accepts = {"scale": "2 (a 0-2 rating, default) or 5 (1-5)",
               "bootstrap_iters": "resamples of pairs for the standard error (1000)"}
    def __init__(self, name: str | None = None, **options: Any):
        if "errors" in options:
            raise UserError(f"{name or self.name}: option 'errors' was removed: a failed sample is excluded and "
                            "counted in the task's errors (docs/errors.md)")
        super().__init__(name, **options)
        self.scale = int(options.get("scale", 2))
        if self.scale not in SCALES:
            raise ValueError(f"{self.name}: scale must be 2 (0-2) or 5 (1-5), not {self.scale!r}")
        self.iters = int(options.get("bootstrap_iters", 1000))
        self._checked: set[int] = set()

    def _check_parser(self, judges: Any) -> None:
        roles = getattr(judges, "roles", None)
        if not isinstance(roles, dict) or id(roles) in self._checked:
            return
        if "scorer" in roles:
            check_scale_parser(self.name, self.scale, roles["scorer"])
        self._checked.add(id(roles))

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        self._check_parser(ctx.judges)
        verdict = await ctx.judges.ask("scorer", {"question": str(record.doc.get("question") or ""),
                                                  "reference": str(record.target or ""),
                                                  "response": _reply(record) or ""})
        record.judgements["scorer"] = {"value": verdict.value, "ok": verdict.ok, "raw": verdict.raw,
                                       "per_judge": list(getattr(verdict, "per_judge", None) or [])}
        low, high = SCALES[self.scale]
        v = valid_rating(verdict.value, low, high) if verdict.ok else None
        if v is None:
            record.meta.setdefault("judge_failures", []).append(self.name)
            return {self.name: None}
        return {self.name: (v - low) / (high - low)}

    def group_key(self, record: SampleRecord) -> Any:
        """The pair whose ratings cluster the stderr; ``--shard`` keeps it in one shard."""
        return (record.doc.get("level"), record.doc.get("pair_id") or record.doc.get("id"))

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        units: dict[Any, list[float | None]] = {}
        for r in records:
            d = r.doc
            key = (r.repeat, d.get("level"), d.get("pair_id") or d.get("id"))
            if r.error is not None:
                continue  # failed outside the model: excluded
            units.setdefault(key, []).append(r.scores.get(self.name))
        answered = [r for r in records if r.error is None]
        failures = sum(1 for r in answered if r.scores.get(self.name) is None)
        return {self.name: scoring.clustered_mean(units, self.iters),
                f"{self.name}_judge_failures": _count(failures, len(answered))}


# Public metric names (the YAML's ``- function: metrics.<name>`` gives the result key).
vAcc = VAcc
qAcc = QAcc
wAcc = WAcc
yes_diff = YesDiff
fp_rate = FPRate
unknown = UnknownCount
mcq_f1 = McqF1
mcq_macro_f1 = McqMacroF1
mcq_pair_acc = McqPairAcc
open_score = OpenScore
