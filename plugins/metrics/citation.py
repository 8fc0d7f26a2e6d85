"""Citation recall, precision and F1 by leave-one-out entailment.

Parsing (``parse_statements``)
------------------------------
An answer is a list of statements.  If it uses ``<statement>...</statement>``
tags, each tag is one statement (text outside the tags is ignored).
Otherwise each non-empty line (list markers ``-``, ``*``, ``•``, ``1.``,
``1)`` removed) is split into sentences at ``. ! ? 。 ！ ？`` followed by
whitespace or the end; citation markers right after the terminal
punctuation still belong to that sentence, and a fragment holding only
citations joins the previous sentence.

Citations are ``[i]`` markers, 1-based; ``[i, j]`` and ranges ``[i-j]``
are expanded.  Per statement, in this order:

1. out-of-range check over *all* its citations (i < 1 or i > number of
   units).  Default (``out_of_range="zero"``, L-CiteEval): such a statement
   has recall 0 and adds nothing to the precision denominator.
   ``out_of_range="drop"`` discards the bad indices instead;
2. duplicates collapsed, first occurrence kept (``dedup=False`` keeps them);
3. the first ``max_citations`` (3) kept.

Scoring (``score_citations``)
-----------------------------
Let C(s) be a statement's citations and E(S) "the units in S, together,
entail s" as judged by the ``entailment`` role (fields ``premise`` and
``hypothesis`` = the statement without citation markers; value "yes"/"no").
The empty set entails nothing (no judge call).  Identical queries within
one answer are asked once.

* statement recall = 1 if C(s) is non-empty, in range and E(C(s)); else 0.
  A statement without citations has recall 0.
* citation c of s is necessary (default ``precision="loo"``, MMLongCite) iff
  E(C(s)) and not E(C(s) minus c).  ``precision="alce"``: if E(C(s)) and
  |C(s)| > 1, c counts iff E({c}) or not E(C(s) minus c); if |C(s)| = 1 it
  counts iff E(C(s)).  The two differ when two cited units each suffice
  alone (LOO 0/2, ALCE 2/2).
* CR = mean statement recall; CP = counted citations / citations of in-range
  statements (0 when there are none); F1 = 2·CP·CR/(CP+CR), 0 when both 0.
* An answer with no statement is skipped (L-CiteEval; counted in
  ``<name>_no_statements``) or scores 0 with ``empty_answer="zero"``.
* If any needed entailment reply never parsed, the answer's scores are
  None (excluded, counted in ``<name>_judge_failures``) — never guessed.

The premise (``Citation`` metric)
---------------------------------
The cited units in index order, each on its own paragraph: a text unit as
``[i] text``; an image (video, audio) unit as ``[i] (image [i], attached)``
in the text, and the file itself sent to the judge AS AN IMAGE (an
``ImagePart`` labelled ``[i]``, path resolved against the task's data
root; ``VideoPart`` / ``AudioPart`` for video and audio units).  The judge
role must declare the media it is sent (``media: [image]`` in the task's
YAML), so that a judge which cannot see images is refused before the run
(``Judges.prepare``); a role that does not declare them is a ``UserError``
here, never a silent text-only judgement.  Statements judged with at least
one non-text unit are counted in ``<name>_nontext_citations``.

Aggregates: ``<name>_recall``, ``<name>_precision`` and ``<name>_f1`` are
per-answer values averaged over answers; ``<name>_f1_of_means`` is the F1
of the mean precision and the mean recall (stderr by bootstrap over
answers).

Correctness of the answer itself is a separate metric.

Private to avhb: a pack imports what it builds on from ``avhb.plugins.metrics``
(its package-level names); importing this module from outside avhb is
deprecated (it still works, but its layout may change).
"""
from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

from avhb import (COUNT, DIAGNOSTIC, HEADLINE, Aggregate, AudioPart, ImagePart, Metric, SampleRecord, ScoreContext,
                  UserError, VideoPart, bootstrap_stderr, mean_stderr)
from avhb.score.metric_helpers import count, resolve, usable


_CITE = re.compile(r"\[\s*(\d+(?:\s*[-\u2013]\s*\d+)?(?:\s*,\s*\d+(?:\s*[-\u2013]\s*\d+)?)*)\s*\]")
_CITES_ONLY = re.compile(r"^(?:\s*" + _CITE.pattern + r")+\s*[.!?\u3002\uff01\uff1f]*\s*$")
_SENTENCE = re.compile(
    r".+?(?:[.!?\u3002\uff01\uff1f]+(?:\s*" + _CITE.pattern + r")*(?=\s|$)|$)")
_LIST_MARK = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")
_STATEMENT_TAG = re.compile(r"<statement>(.*?)</statement>", re.S)
_MAX_RANGE = 100

Entails = Callable[[Any, str], Awaitable["bool | None"]]  # (premise, hypothesis) -> verdict
MEDIA_KINDS = ("image", "video", "audio")


@dataclass
class Statement:
    text: str  # without citation markers
    citations: list[int]  # after the range, de-duplication and max rules
    out_of_range: bool = False
    raw_citations: list[int] = field(default_factory=list)


def citation_indices(text: str) -> list[int]:
    """Every cited index in order of appearance (ranges expanded; a range
    longer than 100 contributes only its two ends)."""
    out: list[int] = []
    for m in _CITE.finditer(text):
        for part in m.group(1).split(","):
            ends = [int(x) for x in re.split(r"[-\u2013]", part)]
            if len(ends) == 1:
                out.append(ends[0])
            else:
                lo, hi = ends
                out.extend(range(lo, hi + 1) if 0 <= hi - lo <= _MAX_RANGE else [lo, hi])
    return out


def strip_citations(text: str) -> str:
    out = _CITE.sub("", text)
    out = re.sub(r"</?cite>", "", out)
    out = re.sub(r"\s+([.,;:!?\u3002\uff01\uff1f])", r"\1", out)
    return " ".join(out.split())


def split_statements(answer: str) -> list[str]:
    """Raw statement strings (with their citation markers)."""
    tagged = _STATEMENT_TAG.findall(answer)
    if tagged:
        return [t for t in tagged if t.strip()]
    pieces: list[str] = []
    for line in answer.splitlines():
        line = _LIST_MARK.sub("", line).strip()
        if not line:
            continue
        for m in _SENTENCE.finditer(line):
            frag = m.group(0).strip()
            if not frag:
                continue
            if _CITES_ONLY.match(frag) and pieces:
                pieces[-1] = pieces[-1] + " " + frag
            else:
                pieces.append(frag)
    return [p for p in pieces if re.search(r"\w", strip_citations(p))]


def parse_statements(
    answer: str | None,
    n_units: int | None = None,
    max_citations: int = 3,
    dedup: bool = True,
    out_of_range: str = "zero",
    max_statements: int | None = None,
) -> list[Statement]:
    """Statements and their citations (see module docstring)."""
    if out_of_range not in ("zero", "drop"):
        raise ValueError(f"out_of_range must be 'zero' or 'drop', not {out_of_range!r}")
    if not answer:
        return []
    result = []
    for raw in split_statements(answer)[:max_statements]:
        cites = citation_indices(raw)
        bad = [c for c in cites if c < 1 or (n_units is not None and c > n_units)]
        oor = bool(bad) and out_of_range == "zero"
        kept = [c for c in cites if c not in bad] if out_of_range == "drop" else list(cites)
        if dedup:
            kept = list(dict.fromkeys(kept))
        result.append(Statement(strip_citations(raw), kept[:max_citations], oor, cites))
    return result


@dataclass
class CitationScores:
    recall: float | None
    precision: float | None
    f1: float | None
    n_statements: int
    n_citations: int  # precision denominator
    n_counted: int  # precision numerator
    judge_failed: bool = False
    statements: list[dict[str, Any]] = field(default_factory=list)


def f1_score(p: float, r: float) -> float:
    """2PR/(P+R); 0 when both are 0."""
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def join_units(units: list[str], subset: tuple[int, ...]) -> str:
    return "\n\n".join(units[i - 1] for i in sorted(subset))


@dataclass
class Premise:
    """What the entailment judge is shown for one set of cited units."""

    text: str
    media: list[Any] = field(default_factory=list)  # ImagePart / VideoPart / AudioPart, in index order
    kinds: tuple[str, ...] = ()  # media kinds among them


async def score_citations(
    statements: list[Statement], units: list[Any], entails: Entails, precision: str = "loo",
    empty_answer: str = "skip", join: Callable[[list[Any], tuple[int, ...]], Any] = join_units,
) -> CitationScores:
    """Recall, precision and F1 of one answer (see module docstring).
    ``entails(premise, hypothesis)`` returns True, False or None (judge
    failure); ``premise = join(units, subset)`` (default: the units' texts
    joined by blank lines)."""
    if precision not in ("loo", "alce"):
        raise ValueError(f"precision must be 'loo' or 'alce', not {precision!r}")
    if not statements:
        zero = 0.0 if empty_answer == "zero" else None
        return CitationScores(zero, zero, zero, 0, 0, 0)
    cache: dict[tuple[tuple[int, ...], str], bool | None] = {}

    async def ask_all(keys: list[tuple[tuple[int, ...], str]]) -> None:
        todo = list(dict.fromkeys(k for k in keys if k not in cache))
        for k in todo:
            if not k[0]:
                cache[k] = False
        todo = [k for k in todo if k[0]]
        replies = await asyncio.gather(*(entails(join(units, k[0]), k[1]) for k in todo))
        cache.update(zip(todo, replies))

    def key(s: Statement, subset: Any) -> tuple[tuple[int, ...], str]:
        return tuple(sorted(set(subset))), s.text

    def minus(s: Statement, c: int) -> tuple[tuple[int, ...], str]:
        # without de-duplication a repeated index leaves with all its copies
        return key(s, [x for x in s.citations if x != c])

    scored = [s for s in statements if s.citations and not s.out_of_range]
    await ask_all([key(s, s.citations) for s in scored])
    supported = [s for s in scored if cache[key(s, s.citations)]]
    if precision == "loo":
        await ask_all([minus(s, c) for s in supported for c in s.citations])
    else:
        multi = [s for s in supported if len(set(s.citations)) > 1]
        await ask_all([key(s, [c]) for s in multi for c in s.citations])
        await ask_all([minus(s, c) for s in multi for c in s.citations if cache[key(s, [c])] is False])
    if any(v is None for v in cache.values()):  # the statements as parsed stay: what the reply holds is known
        undecided = [{"text": s.text, "citations": s.citations, "out_of_range": s.out_of_range, "recall": None,
                      "counted": None} for s in statements]
        return CitationScores(None, None, None, len(statements), 0, 0, judge_failed=True, statements=undecided)

    def counts(s: Statement, c: int) -> bool:
        if precision == "loo":
            return not cache[minus(s, c)]
        if len(set(s.citations)) == 1:
            return True
        return bool(cache[key(s, [c])]) or not cache[minus(s, c)]

    recalls: list[float] = []
    den = num = 0
    details = []
    scored_ids = {id(s) for s in scored}
    for s in statements:
        joint = id(s) in scored_ids and bool(cache[key(s, s.citations)])
        counted = sum(counts(s, c) for c in s.citations) if joint else 0
        if id(s) in scored_ids:
            den += len(s.citations)
            num += counted
        recalls.append(float(joint))
        details.append({"text": s.text, "citations": s.citations, "out_of_range": s.out_of_range,
                        "recall": float(joint), "counted": counted})
    r = sum(recalls) / len(recalls)
    p = num / den if den else 0.0
    return CitationScores(r, p, f1_score(p, r), len(statements), den, num, statements=details)


def parse_yes_no(value: Any) -> bool | None:
    """An entailment judge value as a bool: yes/true/1 or no/false/0."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if value is not None else ""
    if text in ("yes", "true", "1", "entailed", "entailment"):
        return True
    if text in ("no", "false", "0", "not entailed", "not_entailment"):
        return False
    return None


def unit_kind(unit: Any) -> str:
    """``text`` for a string or a dict with ``text``; else the first of
    ``image``, ``video``, ``audio`` the dict names (``type`` first)."""
    if isinstance(unit, str):
        return "text"
    if isinstance(unit, dict):
        kind = unit.get("type")
        if kind in MEDIA_KINDS and unit.get(kind) is not None:
            return kind
        if unit.get("text") is not None:
            return "text"
        for key in MEDIA_KINDS:
            if unit.get(key) is not None:
                return key
    return "text"


def is_text_unit(unit: Any) -> bool:
    """True for a unit the judge reads as text."""
    return unit_kind(unit) == "text"


def unit_text(unit: Any) -> str:
    """A text unit's text (other units: their file reference)."""
    if isinstance(unit, str):
        return unit
    if isinstance(unit, dict):
        kind = unit_kind(unit)
        if kind == "text" and unit.get("text") is not None:
            return str(unit["text"])
        if kind != "text":
            return f"<{kind}: {unit[kind]}>"
    return str(unit)


def build_premise(units: list[Any], subset: tuple[int, ...],
                  media_path: Callable[[str], str] = lambda p: p) -> Premise:
    """The premise for the cited ``subset`` (1-based) of ``units`` (module
    docstring): text units as ``[i] text``, media units attached as parts."""
    lines: list[str] = []
    media: list[Any] = []
    kinds: list[str] = []
    for i in sorted(subset):
        unit = units[i - 1]
        kind = unit_kind(unit)
        if kind == "text":
            lines.append(f"[{i}] {unit_text(unit)}")
            continue
        lines.append(f"[{i}] ({kind} [{i}], attached)")
        path = media_path(str(unit[kind]))
        media.append(ImagePart(path=path, label=f"[{i}]") if kind == "image"
                     else VideoPart(path=path) if kind == "video" else AudioPart(path=path))
        kinds.append(kind)
    return Premise("\n\n".join(lines), media, tuple(dict.fromkeys(kinds)))


class Citation(Metric):
    """Reports ``<name>_recall``, ``<name>_precision``, ``<name>_f1``
    (per-answer values, averaged over answers) and ``<name>_f1_of_means``.

    Options: ``units`` (field spec of the context units, default
    ``meta.citation_units`` then ``doc.context``), ``role`` ("entailment"),
    ``precision`` ("loo" | "alce"), ``dedup`` (True), ``max_citations`` (3),
    ``out_of_range`` ("zero" | "drop"), ``empty_answer`` ("skip" | "zero"),
    ``max_statements`` (None).  Samples that failed outside the model are
    excluded (docs/errors.md).
    """
    reads = frozenset({"meta"})  # what aggregate() reads (Metric.reads)

    name = "citation"
    description = "citation recall, precision and F1 of the answer's cited statements (an entailment judge)"
    accepts = {"units": "field spec of the context units (default meta.citation_units, then doc.context)",
               "role": "the entailment judge role (default entailment)",
               "precision": "loo (leave-one-out, default) or alce",
               "dedup": "collapse repeated citations (default true)",
               "max_citations": "citations kept per statement (default 3)",
               "out_of_range": "zero (the statement scores 0, default) or drop (the citation is dropped)",
               "empty_answer": "skip (default) or zero: an answer with no statement",
               "max_statements": "statements scored per answer (default all)"}
    outputs = {"recall": (HEADLINE, "citation recall: statements whose cited text entails them"),
               "precision": (HEADLINE, "citation precision: citations that support their statement"),
               "f1": (HEADLINE, "harmonic mean of citation recall and precision, per answer, averaged"),
               "f1_of_means": (DIAGNOSTIC, "harmonic mean of the mean citation recall and the mean precision"),
               "judge_failures": COUNT, "no_statements": COUNT, "uncited_statements": COUNT,
               "out_of_range_statements": COUNT, "nontext_citations": COUNT}

    @property
    def needs_judges(self) -> tuple[str, ...]:  # type: ignore[override]  # over Metric's attribute: roles from the options
        return (self.options.get("role", "entailment"),)

    def _raw_units(self, record: SampleRecord) -> list[Any]:
        spec = self.options.get("units")
        value = resolve(record, spec) if spec else (record.meta.get("citation_units") or record.doc.get("context"))
        return list(value or [])

    def _units(self, record: SampleRecord) -> list[str]:
        return [unit_text(u) for u in self._raw_units(record)]

    def _check_role_media(self, ctx: ScoreContext, role: str, kinds: tuple[str, ...]) -> None:
        declared = getattr(ctx.judges, "roles", {}).get(role)
        if declared is None or not kinds:
            return
        missing = [k for k in kinds if k not in declared.media]
        if missing:
            raise UserError(f"task {ctx.task!r}: metric {self.name!r} sends cited {', '.join(missing)} units to judge "
                            f"role {role!r}, which does not declare them: add `media: [{', '.join(missing)}]` to the "
                            f"role in the task's YAML (a judge that cannot see them is then refused before the run)")

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        o = self.options
        role = o.get("role", "entailment")
        units = self._raw_units(record)
        answer = record.extracted if isinstance(record.extracted, str) else record.response
        statements = parse_statements(answer, len(units), int(o.get("max_citations", 3)), bool(o.get("dedup", True)),
                                      o.get("out_of_range", "zero"), o.get("max_statements"))
        calls = 0

        def join(all_units: list[Any], subset: tuple[int, ...]) -> Premise:
            return build_premise(all_units, subset, ctx.media_path)

        async def entails(premise: Premise, hypothesis: str) -> bool | None:
            nonlocal calls
            self._check_role_media(ctx, role, premise.kinds)
            calls += 1
            fields = {"premise": premise.text, "hypothesis": hypothesis}
            verdict = await (ctx.judges.ask(role, fields, media=premise.media) if premise.media
                             else ctx.judges.ask(role, fields))
            return parse_yes_no(verdict.value) if verdict.ok else None

        res = await score_citations(statements, units, entails, o.get("precision", "loo"), o.get("empty_answer", "skip"),
                                    join=join)
        nontext = {i + 1 for i, u in enumerate(units) if not is_text_unit(u)}
        record.meta[self.name] = {
            "n_statements": res.n_statements, "n_citations": res.n_citations, "n_counted": res.n_counted,
            "judge_calls": calls, "judge_failed": res.judge_failed, "statements": res.statements,
            "uncited": sum(1 for s in statements if not s.citations and not s.out_of_range),
            "out_of_range": sum(1 for s in statements if s.out_of_range),
            "nontext_citations": sum(1 for s in statements
                                     if s.citations and not s.out_of_range and nontext.intersection(s.citations)),
        }
        if res.judge_failed:
            record.meta.setdefault("judge_failures", []).append(self.name)
        return {f"{self.name}_recall": res.recall, f"{self.name}_precision": res.precision, f"{self.name}_f1": res.f1}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        ok = usable(records)
        out = {}
        for part in ("recall", "precision", "f1"):
            key = f"{self.name}_{part}"
            out[key] = mean_stderr([r.scores.get(key) for r in ok])
        pairs = [(r.scores.get(f"{self.name}_precision"), r.scores.get(f"{self.name}_recall")) for r in ok]
        pairs = [(p, r) for p, r in pairs if p is not None and r is not None]
        out[f"{self.name}_f1_of_means"] = Aggregate(f1_of_means(pairs), bootstrap_stderr(pairs, f1_of_means), len(pairs))
        metas = [r.meta.get(self.name) or {} for r in ok]
        out[f"{self.name}_judge_failures"] = count(sum(bool(m.get("judge_failed")) for m in metas), len(ok))
        out[f"{self.name}_no_statements"] = count(sum(m.get("n_statements", 0) == 0 for m in metas), len(ok))
        out[f"{self.name}_uncited_statements"] = count(sum(m.get("uncited", 0) for m in metas), len(ok))
        out[f"{self.name}_out_of_range_statements"] = count(sum(m.get("out_of_range", 0) for m in metas), len(ok))
        out[f"{self.name}_nontext_citations"] = count(sum(m.get("nontext_citations", 0) for m in metas), len(ok))
        return out


def f1_of_means(pairs: Any) -> float | None:
    """F1 of the mean precision and the mean recall of ``(p, r)`` pairs
    (None when there are none)."""
    pairs = list(pairs)
    if not pairs:
        return None
    return f1_score(sum(p for p, _ in pairs) / len(pairs), sum(r for _, r in pairs) / len(pairs))
