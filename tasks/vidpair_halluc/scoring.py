"""Pair and group scoring for VidPair-Halluc, as pure functions.

Binary questions (formats.md §1.6-1.7; upstream evaluate/videoqa.py and
clipqa.py).  Rows are grouped into *samples*: one pair of videos at one level
(upstream: one object of the evaluation JSON).  Inside a sample:

* a **video-pair unit** (vAcc) is one ``qa_group`` (one question asked on
  every video of the pair);
* a **question-pair unit** (qAcc) is one video file asked the questions of
  two or more groups (pos and neg);
* predictions and golds go through the mode's yes/no extraction
  (``extract.yes_no_extractor``): avhb's (a hedge such as "I am not sure"
  is unknown) by default, upstream's substring rule in mode ``upstream``.

Default rules (mode ``avhb``, ``unknown="exclude"``, upstream-faithful):

* a sample is skipped whole when it lacks one of ``binary_qa_pos`` /
  ``binary_qa_neg`` (clip-level samples: has fewer than two
  ``binary_qa_<k>`` groups), has fewer than two distinct gold files, or
  fewer than two replies that are valid for pairing (``valid_for_pairing``);
* unknown or missing answers are excluded: a video-pair unit counts when
  at least one member is yes/no and is right iff every answered member is
  right; a question-pair unit counts when at least two members are yes/no
  and is right iff all of them are right;
* ``total_qa`` = yes/no answers, ``FP`` = yes where the gold is no,
  ``fp_rate = FP / total_qa``;
  ``yes_diff = (model_yes - gt_yes) / total_qa`` where ``gt_yes`` counts the
  gold yes of every row of the scored samples (``gt_yes="all"``, as
  videoqa.py) or only of answered rows (``gt_yes="answered"``, as clipqa.py);
* ``wAcc = (vp_right + qp_right) / (vp_total + qp_total)``.

``unknown="wrong"``: no sample is skipped; every unit counts and an unknown
member makes it wrong; every answered row counts in ``total_qa`` (an
unknown is neither a yes nor an FP).

Failed samples (no reply: missing video, backend error) are never answers
(docs/errors.md): they count toward the skip rule's checks (groups, gold
files) as the rows upstream ships, and nowhere else — not in units, not in
``total_qa``, not in ``gt_yes``; ``missing`` counts them.

Mode ``upstream`` reproduces the published scripts: pos/neg samples follow
videoqa.py (the temporal level skips the two-gold-files check, as its
``has_paired_videos_T``; ``gt_yes`` = all); clip-level samples follow
clipqa.py (validity = ``valid_clip``, invalid replies are dropped before
extraction, golds are compared as raw strings, ``gt_yes`` = answered).

Multiple choice (upstream evalaute/evaluate_mcq.py).  Per row: right iff the
extracted answer equals the gold (a letter, or for clip-order golds the
``letter_sequence``).  Upstream F1 sets P = R = TP / (TP + FP) over answered
rows, so **F1 = accuracy** (0 when TP = 0); ``macro_f1`` is the mean over
labels (every letter in gold or prediction) of 2TP / (2TP + FP + FN).
Default pairs are the rows of one ``pair_id`` (positive and adversarial
video), right iff every member is right; a pair is scored only with both
members present (and, under ``unknown="exclude"``, both answered): otherwise
it is an *incomplete pair*, counted and not scored (a pair cut by
``--limit``, or one side unreadable).  A gold is a clip-order sequence only
when every character is one of the row's option letters; a gold naming no
option is a ``SampleError``.  Upstream mode counts answered rows
only, takes video-level samples (``id``) through the file-name prefix check
(``T_``/``M_`` files never pair, so those samples are skipped) and pairs files
ending ``_0.mp4``/``_1.mp4`` and ``_0.mp4``/``_2.mp4``; spatial samples use the
clip-level script (sequence comparison of the whole reply, no skip check).
"""
from __future__ import annotations

import re
from dataclasses import astuple, dataclass, fields
from typing import Any, Callable, Hashable, Iterable, Sequence

import numpy as np

from avhb import Aggregate, SampleError, UserError, bootstrap_stderr
from avhb.plugins.metrics import macro_f1 as generic_macro_f1, unit_accuracy

from .extract import (UNKNOWN, first_letter, is_sequence_answer, letter_sequence, valid_clip, valid_for_pairing,
                      yes_no_extractor)

MODES = ("avhb", "upstream")
_CLIP_GROUP = re.compile(r"^binary_qa_\d+$")


def check_option(name: str, value: Any, allowed: Sequence[str]) -> Any:
    if value not in allowed:
        raise ValueError(f"option {name!r} must be one of {list(allowed)}, not {value!r}")
    return value


def check_upstream_options(mode: str, unknown: str | None = None, gt_yes: str | None = None) -> None:
    """``mode: upstream`` fixes the unknown rule and the gold-yes scope itself:
    combining it with ``unknown: wrong`` or ``gt_yes: answered`` is a user error."""
    if mode != "upstream":
        return
    if unknown == "wrong":
        raise UserError("vidpair_halluc: mode 'upstream' scores as the published scripts do; "
                        "it cannot be combined with unknown: wrong")
    if gt_yes == "answered":
        raise UserError("vidpair_halluc: mode 'upstream' fixes the gold-yes scope per script; "
                        "it cannot be combined with gt_yes: answered")


# ---------------------------------------------------------------- binary


@dataclass(frozen=True)
class BinaryItem:
    sample: Hashable  # one pair at one level
    group: str  # qa_group
    file: str  # file_name
    gold: Any  # the row's answer, raw
    reply: str | None  # the model's raw reply; None = no prediction (the sample failed)
    level: str | None = None


@dataclass
class BinaryTally:
    vp_right: int = 0
    vp_total: int = 0
    qp_right: int = 0
    qp_total: int = 0
    total_qa: int = 0
    model_yes: int = 0
    gt_yes_all: int = 0
    gt_yes_answered: int = 0
    fp: int = 0
    rows: int = 0
    unknown: int = 0  # replies that extract to unknown (failed samples not included)
    missing: int = 0  # rows without a reply (failed samples)
    skipped: int = 0  # samples skipped whole (0 or 1 per sample)

    def __add__(self, other: "BinaryTally") -> "BinaryTally":
        return BinaryTally(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def gt_yes(self, scope: str) -> int:
        return self.gt_yes_answered if scope == "answered" else self.gt_yes_all


def _is_clip(groups: Iterable[str]) -> bool:
    gs = list(groups)
    return bool(gs) and all(_CLIP_GROUP.match(g or "") for g in gs)


def tally_sample(items: Sequence[BinaryItem], mode: str = "avhb", unknown: str = "exclude") -> BinaryTally:
    """The counts of one sample (see module docstring)."""
    check_option("mode", mode, MODES)
    check_option("unknown", unknown, ("exclude", "wrong"))
    t = BinaryTally(rows=len(items))
    yes_no = yes_no_extractor(mode)
    t.unknown = sum(1 for it in items if it.reply is not None and yes_no(it.reply) == UNKNOWN)
    t.missing = sum(1 for it in items if it.reply is None)
    groups = list(dict.fromkeys(it.group for it in items))
    clip = _is_clip(groups)
    upstream_clip = mode == "upstream" and clip
    check_upstream_options(mode, unknown)
    if mode == "upstream":
        unknown = "exclude"

    # -- skip rule
    if unknown == "exclude":
        if upstream_clip:
            skip = sum(valid_clip(it.reply) for it in items) < 2
        else:
            has_groups = len(groups) >= 2 if clip else {"binary_qa_pos", "binary_qa_neg"} <= set(groups)
            files_ok = len({it.file for it in items}) >= 2
            if mode == "upstream" and items and items[0].level == "temporal":
                files_ok = True  # videoqa.py's has_paired_videos_T has no gold-file check
            skip = not has_groups or not files_ok or sum(valid_for_pairing(it.reply) for it in items) < 2
        if skip:
            t.skipped = 1
            return t

    # -- per-row answers
    def pred(it: BinaryItem) -> str:
        if upstream_clip and not valid_clip(it.reply):
            return UNKNOWN
        return yes_no(it.reply)

    def gold(it: BinaryItem) -> Any:
        return it.gold if upstream_clip else yes_no(it.gold)

    answers = [(it, pred(it), gold(it)) for it in items if it.reply is not None]  # failed rows: no answer
    for _it, p, g in answers:
        answered = p in ("yes", "no")
        if g == "yes":
            t.gt_yes_all += 1
            t.gt_yes_answered += answered
        if answered or unknown == "wrong":
            t.total_qa += 1
            t.model_yes += p == "yes"
            t.fp += p == "yes" and g == "no"
    if upstream_clip:  # clipqa.py counts the gold yes of answered rows only
        t.gt_yes_all = t.gt_yes_answered

    def unit(members: list[tuple[BinaryItem, str, Any]], min_answered: int) -> tuple[int, int]:
        """(counted, right) of one unit."""
        if not members:
            return 0, 0
        if unknown == "wrong":
            return 1, int(all(p == g for _, p, g in members))
        known = [(p, g) for _, p, g in members if p in ("yes", "no")]
        if len(known) < min_answered:
            return 0, 0
        return 1, int(all(p == g for p, g in known))

    for g in groups:
        counted, right = unit([a for a in answers if a[0].group == g], 1)
        t.vp_total += counted
        t.vp_right += right
    for f in dict.fromkeys(it.file for it in items):
        members = [a for a in answers if a[0].file == f]
        if len({a[0].group for a in members}) < 2:
            continue
        counted, right = unit(members, 2)
        t.qp_total += counted
        t.qp_right += right
    return t


def tally_binary(items: Iterable[BinaryItem], mode: str = "avhb", unknown: str = "exclude") -> list[BinaryTally]:
    """One tally per sample, in first-seen order."""
    samples: dict[Hashable, list[BinaryItem]] = {}
    for it in items:
        samples.setdefault(it.sample, []).append(it)
    return [tally_sample(v, mode, unknown) for v in samples.values()]


def _total(tallies: Sequence[BinaryTally]) -> BinaryTally:
    out = BinaryTally()
    for t in tallies:
        out = out + t
    return out


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


BINARY_STATS: dict[str, Callable[[BinaryTally, str], tuple[float | None, int]]] = {
    "vAcc": lambda t, s: (_ratio(t.vp_right, t.vp_total), t.vp_total),
    "qAcc": lambda t, s: (_ratio(t.qp_right, t.qp_total), t.qp_total),
    "wAcc": lambda t, s: (_ratio(t.vp_right + t.qp_right, t.vp_total + t.qp_total), t.vp_total + t.qp_total),
    "yes_diff": lambda t, s: (_ratio(t.model_yes - t.gt_yes(s), t.total_qa), t.total_qa),
    "fp_rate": lambda t, s: (_ratio(t.fp, t.total_qa), t.total_qa),
}


def binary_stat(tallies: Sequence[BinaryTally], stat: str, gt_yes: str = "all", iters: int = 1000) -> Aggregate:
    """One of ``BINARY_STATS`` over the samples; stderr by bootstrap over samples (pairs)."""
    check_option("gt_yes", gt_yes, ("all", "answered"))
    fn = BINARY_STATS[stat]
    value, n = fn(_total(tallies), gt_yes)
    if value is None:
        return Aggregate(None, None, n)
    mat = np.array([astuple(t) for t in tallies], dtype=np.int64)

    def resampled(idx: Sequence[int]) -> float | None:
        return fn(BinaryTally(*(int(x) for x in mat[list(idx)].sum(axis=0))), gt_yes)[0]

    return Aggregate(value, bootstrap_stderr(list(range(len(tallies))), resampled, iters=iters), n)


# ---------------------------------------------------------------- multiple choice


@dataclass(frozen=True)
class McqItem:
    pair: Hashable  # (repeat, level, pair_id): the default pairing unit
    sample: Hashable  # (repeat, level, id): upstream's evaluation object
    file: str
    level: str | None
    gold: Any  # upstream mode: the raw gold; avhb mode: the gold key (``gold_key``; None if it named no option)
    pred: Any  # the extracted answer (None = unparsed)
    answered: bool  # a reply exists (False for a failed sample)


@dataclass
class McqTally:
    rows: int = 0
    right: int = 0
    pairs: int = 0
    pairs_right: int = 0
    incomplete_pairs: int = 0  # pairing units not scored: fewer than two members present (or known, under "exclude")
    unparsed: int = 0
    missing: int = 0
    skipped: int = 0
    labels: tuple[tuple[Any, Any], ...] = ()  # (pred, gold) of every counted row, for macro F1


def gold_key(gold: Any, options: dict[str, str] | Iterable[str]) -> Any:
    """The gold as compared in avhb mode.  ``options``: the option letters
    (or letter -> text).  A clip-order gold (``is_sequence_answer``) becomes
    its letter sequence; otherwise the letter the gold names (the letter
    itself or an option's exact text).  Without options, a gold that is a
    single letter is taken as is.  A gold that names no option raises
    ``SampleError`` (never its first letter)."""
    opts = dict(options) if isinstance(options, dict) else {str(k): str(k) for k in options}
    if is_sequence_answer(gold, opts):
        return letter_sequence(gold)
    text = str(gold).strip() if gold is not None else ""
    by_upper = {k.strip().upper(): k for k in opts}
    if text.upper() in by_upper:
        return by_upper[text.upper()]
    for k, v in opts.items():
        if text and v.strip().lower() == text.lower():
            return k
    if not opts and len(text) == 1 and text.isalpha() and text.isascii():
        return text.upper()
    raise SampleError(f"gold answer {gold!r} names no option ({', '.join(opts) or 'no options found'})")


def tally_mcq_default(items: Sequence[McqItem], unknown: str = "wrong") -> McqTally:
    """One pairing unit under avhb's rules (``gold`` is already the gold key):
    unparsed rows are wrong (``unknown="wrong"``) or dropped (``"exclude"``);
    missing rows (failed samples) are always dropped (docs/errors.md).  The unit is a scored pair only with at least two
    members (after dropping, under ``"exclude"``), right iff every one is
    right; otherwise it is an incomplete pair (counted, not scored)."""
    check_option("unknown", unknown, ("exclude", "wrong"))
    t = McqTally()
    t.unparsed = sum(1 for it in items if it.answered and it.pred is None)
    t.missing = sum(1 for it in items if not it.answered)
    counted = [it for it in items if it.answered and (unknown == "wrong" or it.pred is not None)]
    verdicts = [it.pred is not None and it.pred == it.gold for it in counted]
    t.rows, t.right = len(counted), sum(verdicts)
    t.labels = tuple((it.pred, it.gold) for it in counted)
    stats = unit_accuracy(counted, lambda it: it.pair, lambda it: it.pred is not None and it.pred == it.gold,
                          unknown="wrong", expected_size=2, incomplete="exclude")
    t.pairs, t.pairs_right = stats.total, stats.correct
    t.incomplete_pairs = 1 if items and not stats.total else 0
    return t


def _video_level_paired(files: Iterable[str]) -> bool:
    """evaluate_mcq.py ``has_paired_videos_video_level``."""
    files = list(files)
    prefixes = {"_".join(f.split("_")[:-1]) for f in files if f.endswith(".mp4") and len(f.split("_")) >= 3}
    return any(sum(1 for f in files if f.startswith(p) and f.endswith(".mp4")) >= 2 for p in prefixes)


def tally_mcq_upstream(items: Sequence[McqItem]) -> McqTally:
    """One upstream sample (``id`` at one level), as evaluate_mcq.py scores it."""
    t = McqTally()
    t.missing = sum(1 for it in items if not it.answered)
    clip = bool(items) and items[0].level == "spatial"
    if not clip and not _video_level_paired(it.file for it in items):
        t.skipped = 1
        return t
    gold = {it.file: (letter_sequence(it.gold) if clip else first_letter(it.gold)) for it in items}
    pred = {it.file: it.pred for it in items if it.answered}
    common = [f for f in gold if f in pred]
    t.rows = len(common)
    t.right = sum(pred[f] == gold[f] for f in common)
    t.labels = tuple((pred[f], gold[f]) for f in common)
    ends = {}
    for f in common:
        for k in ("0", "1", "2"):
            if f.endswith(f"_{k}.mp4"):
                ends[k] = f
    for a, b in (("0", "1"), ("0", "2")):
        if a in ends and b in ends:
            t.pairs += 1
            t.pairs_right += pred[ends[a]] == gold[ends[a]] and pred[ends[b]] == gold[ends[b]]
    return t


def tally_mcq(items: Iterable[McqItem], mode: str = "avhb", unknown: str = "wrong") -> list[McqTally]:
    check_option("mode", mode, MODES)
    units: dict[Hashable, list[McqItem]] = {}
    for it in items:
        units.setdefault(it.sample if mode == "upstream" else it.pair, []).append(it)
    if mode == "upstream":
        return [tally_mcq_upstream(v) for v in units.values()]
    return [tally_mcq_default(v, unknown) for v in units.values()]


def upstream_f1(ts: Sequence[McqTally]) -> float | None:
    """F1 with P = R = TP/(TP+FP) over counted rows: equals accuracy (0 when TP = 0)."""
    rows, right = sum(t.rows for t in ts), sum(t.right for t in ts)
    if not rows:
        return None
    p = right / rows
    return 2 * p * p / (p + p) if p > 0 else 0.0


def macro_f1(pairs: Iterable[tuple[Any, Any]]) -> float | None:
    """Mean over labels (gold or predicted, None excluded) of 2TP/(2TP+FP+FN);
    a None prediction is a miss of its gold label."""
    items = list(pairs)
    return generic_macro_f1([p for p, _ in items], [g for _, g in items], unknown="wrong")


MCQ_STATS: dict[str, Callable[[Sequence[McqTally]], tuple[float | None, int]]] = {
    "f1": lambda ts: (upstream_f1(ts), sum(t.rows for t in ts)),
    "acc": lambda ts: (_ratio(sum(t.right for t in ts), sum(t.rows for t in ts)), sum(t.rows for t in ts)),
    "pair_acc": lambda ts: (_ratio(sum(t.pairs_right for t in ts), sum(t.pairs for t in ts)), sum(t.pairs for t in ts)),
    "macro_f1": lambda ts: (macro_f1(x for t in ts for x in t.labels), sum(t.rows for t in ts)),
}


def mcq_stat(tallies: Sequence[McqTally], stat: str, iters: int = 1000) -> Aggregate:
    """One of ``MCQ_STATS``; stderr by bootstrap over pairs (upstream mode: samples)."""
    fn = MCQ_STATS[stat]
    value, n = fn(tallies)
    se = bootstrap_stderr(list(tallies), lambda ts: fn(ts)[0], iters=iters) if value is not None else None
    return Aggregate(value, se, n)


# ---------------------------------------------------------------- open-ended


def clustered_mean(units: dict[Hashable, list[float | None]], iters: int = 1000) -> Aggregate:
    """Mean of the non-None values; stderr by bootstrap over the units (pairs)."""
    groups = [[v for v in vs if v is not None] for vs in units.values()]
    groups = [g for g in groups if g]

    def stat(gs: Sequence[list[float]]) -> float | None:
        n = sum(len(g) for g in gs)
        return sum(sum(g) for g in gs) / n if n else None

    value = stat(groups)
    n = sum(len(g) for g in groups)
    return Aggregate(value, bootstrap_stderr(groups, stat, iters=iters) if value is not None else None, n)
