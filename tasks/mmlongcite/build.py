"""Building long contexts the way MMLongCite does (``avhb mmlongcite-build``).

Symmetric proportional truncation (single-source items)
-------------------------------------------------------
A document's units around its evidence: the prefix (the units before the
first evidence unit, L_p tokens), the evidence span (first to last evidence
unit, kept whole, L_e tokens; units between two evidence units stay too) and
the suffix (L_s tokens).  For a target of L_t tokens the prefix and suffix
keep

    L'_p = (L_t - L_e) * L_p / (L_p + L_s),    L'_s = (L_t - L_e) * L_s / (L_p + L_s)

tokens (floored; all of them when L_p + L_s <= L_t - L_e), cut at unit
boundaries: whole units are kept outward from the evidence while they fit,
and the first unit that would overflow ends that side.  An evidence span
longer than L_t is an error for that item.

Distractors (multi-source items)
--------------------------------
The item's own units stay one block; documents from a pool (in an order
shuffled by the seed) are screened one by one by the ``distractor_check``
judge role (upstream Qwen3.5-397B-A17B; fields ``question``, ``answer``,
``candidate``, the candidate's images attached).  A candidate the judge says
supports or contradicts the answer (``yes``) is rejected, and so is one
whose verdict never parsed; every rejection is logged with its reason.
Accepted documents are added while the total stays within L_t; the blocks
(the item's and the distractors') are then shuffled by the seed and the
evidence indices shifted to the item block's new place.

Tokens: ``count(unit)``; the command uses the core's budget estimate
(characters / 3 for text, ``--tokens-per-image`` per image).
"""
from __future__ import annotations

import asyncio
import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from avhb import ImagePart, JudgeError

Count = Callable[[dict[str, Any]], int]
SCREEN_BATCH = 8


def estimate_tokens(tokens_per_image: int = 256) -> Count:
    def count(unit: dict[str, Any]) -> int:
        if unit.get("type") == "image":
            return tokens_per_image
        return len(str(unit.get("text", ""))) // 3
    return count


def truncation_budget(target: int, evidence: int, prefix: int, suffix: int) -> tuple[int, int]:
    """``(L'_p, L'_s)`` (module docstring)."""
    if min(target, evidence, prefix, suffix) < 0:
        raise ValueError("token counts must not be negative")
    if evidence > target:
        raise ValueError(f"the evidence alone ({evidence} tokens) is longer than the target ({target} tokens)")
    room = target - evidence
    if prefix + suffix <= room:
        return prefix, suffix
    return math.floor(room * prefix / (prefix + suffix)), math.floor(room * suffix / (prefix + suffix))


@dataclass
class Truncated:
    context: list[dict[str, Any]]
    evidence: list[int]
    kept: tuple[int, int]  # first and last original unit index kept (1-based)
    budgets: tuple[int, int]  # (L'_p, L'_s)


def truncate(context: list[dict[str, Any]], evidence: list[int], target: int, count: Count) -> Truncated:
    """Symmetric proportional truncation around ``evidence`` (1-based)."""
    if not evidence:
        raise ValueError("truncation needs the item's evidence units")
    first, last = min(evidence), max(evidence)
    if first < 1 or last > len(context):
        raise ValueError(f"evidence {evidence} outside the context's units 1..{len(context)}")
    sizes = [count(u) for u in context]
    l_p, l_e, l_s = sum(sizes[:first - 1]), sum(sizes[first - 1:last]), sum(sizes[last:])
    bp, bs = truncation_budget(target, l_e, l_p, l_s)
    start, used = first, 0
    while start > 1 and used + sizes[start - 2] <= bp:
        start -= 1
        used += sizes[start - 1]
    end, used = last, 0
    while end < len(context) and used + sizes[end] <= bs:
        used += sizes[end]
        end += 1
    return Truncated(context[start - 1:end], [e - start + 1 for e in evidence], (start, end), (bp, bs))


@dataclass
class Screened:
    accepted: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)  # {"id", "reason", "verdict"}


def _candidate(doc: dict[str, Any], media_path: Callable[[str], str]) -> tuple[str, list[Any]]:
    lines, media = [], []
    for unit in doc.get("context") or []:
        if unit.get("type") == "image":
            media.append(ImagePart(path=media_path(str(unit["image"]))))
            lines.append(f"(image {len(media)}, attached)")
        else:
            lines.append(str(unit.get("text", "")))
    return "\n\n".join(lines), media


async def screen(item: dict[str, Any], candidates: list[dict[str, Any]], judges: Any, *,
                 role: str = "distractor_check", media_path: Callable[[str], str] = lambda p: p) -> Screened:
    """Ask ``role`` about each candidate (module docstring)."""
    from .data import text_of

    out = Screened()
    question, answer = text_of(item.get("question")), str(item.get("ground_truth", ""))

    async def one(doc: dict[str, Any]) -> None:
        text, media = _candidate(doc, media_path)
        fields = {"question": question, "answer": answer, "candidate": text}
        try:
            verdict = await (judges.ask(role, fields, media=media) if media else judges.ask(role, fields))
        except JudgeError as exc:  # no answer: rejected, with the judge's error as the reason
            out.rejected.append({"item": item.get("id"), "candidate": doc.get("id"), "reason": str(exc),
                                 "verdict": None})
            return
        value = str(verdict.value).strip().lower() if verdict.ok else None
        if value == "no":
            out.accepted.append(doc)
        else:
            reason = "supports or contradicts the answer" if value == "yes" else "judge reply never parsed"
            out.rejected.append({"item": item.get("id"), "candidate": doc.get("id"), "reason": reason,
                                 "verdict": getattr(verdict, "raw", None)})

    await asyncio.gather(*(one(d) for d in candidates))
    order = {id(d): i for i, d in enumerate(candidates)}
    out.accepted.sort(key=lambda d: order[id(d)])
    return out


def _size(doc: dict[str, Any], count: Count) -> int:
    return sum(count(u) for u in doc.get("context") or [])


@dataclass
class WithDistractors:
    context: list[dict[str, Any]]
    evidence: list[int]
    distractors: list[Any]  # pool ids, in context order
    rejected: list[dict[str, Any]]


async def add_distractors(item: dict[str, Any], pool: list[dict[str, Any]], target: int, count: Count, judges: Any,
                          *, seed: int = 0, role: str = "distractor_check",
                          media_path: Callable[[str], str] = lambda p: p) -> WithDistractors:
    """The item's block plus screened pool documents up to ``target``
    tokens, blocks shuffled by ``seed`` (module docstring)."""
    rng = random.Random(f"{seed}:{item.get('id')}")
    own = list(item["context"])
    total = sum(count(u) for u in own)
    if total > target:
        raise ValueError(f"item {item.get('id')}: its own units ({total} tokens) exceed the target ({target})")
    order = list(pool)
    rng.shuffle(order)
    blocks: list[tuple[Any, list[dict[str, Any]]]] = []
    rejected: list[dict[str, Any]] = []
    pos = 0
    while pos < len(order) and total < target:
        room = target - total
        batch: list[dict[str, Any]] = []
        while pos < len(order) and len(batch) < SCREEN_BATCH:
            doc = order[pos]
            pos += 1
            if 0 < _size(doc, count) <= room:  # one that cannot fit is not worth a judge call
                batch.append(doc)
        if not batch:
            break
        result = await screen(item, batch, judges, role=role, media_path=media_path)
        rejected.extend(result.rejected)
        for doc in result.accepted:
            size = _size(doc, count)
            if total + size <= target:
                blocks.append((doc.get("id"), list(doc["context"])))
                total += size
    blocks.append((None, own))
    rng.shuffle(blocks)
    context: list[dict[str, Any]] = []
    offset = 0
    for key, units in blocks:
        if key is None:
            offset = len(context)
        context.extend(units)
    evidence = [e + offset for e in item.get("evidence") or []]
    return WithDistractors(context, evidence, [k for k, _ in blocks if k is not None], rejected)


def as_row(item: dict[str, Any], context: list[dict[str, Any]], evidence: list[int], count: Count) -> dict[str, Any]:
    """An upstream-schema row for the built context (``text_length``: its
    text tokens; ``mm_length``: all its tokens)."""
    text_tokens = sum(count(u) for u in context if u.get("type") != "image")
    row: dict[str, Any] = {k: item[k] for k in ("id", "question", "ground_truth", "task") if k in item}
    return {**row, "context": context, "text_length": text_tokens, "mm_length": sum(count(u) for u in context),
            "evidence": evidence}
