"""``avhb anchor-compare A B``: where two models both answer right, does B
hallucinate more?  (The paper, GPT-5.2 as A vs Gemini-3-Flash as B: 2,012
items both right; B's hallucination rating lower by more than 1.0 on 250 and
by more than 1.5 on 81; every judge agreeing on 74 % of them.)

Definitions
-----------
* items: the samples (task, id, repeat) present in both runs' ANCHOR answer
  tasks; **both right** = ``answer_acc`` 1 in both;
* gap = A's panel-mean ``hallucination`` - B's (5 = almost none, so a
  positive gap means B hallucinates more); items where either has no
  rating (no gold CoT, judge failure) are left out and counted;
* ``lower_by_<t>`` = both-right items with gap > t, for t = 1.0 and 1.5;
* ``all_judges_agree`` (ours: the paper does not spell it out) = among the
  ``lower_by_1.0`` items, those on which every panel member that rated both
  rated B strictly lower than A (members matched by panel position; at
  least two members must have rated both), and its share.

Reads the two runs' sample files only (no model or judge call).  The result
is printed and written to ``A/anchor_compare/<B folder name>.json``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from avhb import UserError

THRESHOLDS = (1.0, 1.5)


def _rated(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _members(line: dict[str, Any], facet: str) -> list[Any]:
    return list(((line.get("judgements") or {}).get(facet) or {}).get("per_judge") or [])


def members_agree(a: dict[str, Any], b: dict[str, Any], facet: str) -> bool:
    pairs = [(x, y) for x, y in zip(_members(a, facet), _members(b, facet))
             if _rated(x) is not None and _rated(y) is not None]
    return len(pairs) >= 2 and all(float(y) < float(x) for x, y in pairs)


def compare_samples(a_lines: list[dict[str, Any]], b_lines: list[dict[str, Any]], facet: str = "hallucination",
                    thresholds: tuple[float, ...] = THRESHOLDS) -> dict[str, Any]:
    """The counts of the module docstring for one task's sample lines."""
    a_by = {(d["id"], int(d.get("repeat", 0))): d for d in a_lines if d.get("error") is None}
    b_by = {(d["id"], int(d.get("repeat", 0))): d for d in b_lines if d.get("error") is None}
    common = sorted(set(a_by) & set(b_by))
    both_right = [k for k in common if (a_by[k].get("scores") or {}).get("answer_acc") == 1
                  and (b_by[k].get("scores") or {}).get("answer_acc") == 1]
    gaps: dict[tuple[str, int], float] = {}
    for k in both_right:
        x, y = _rated((a_by[k].get("scores") or {}).get(facet)), _rated((b_by[k].get("scores") or {}).get(facet))
        if x is not None and y is not None:
            gaps[k] = x - y
    out: dict[str, Any] = {"items": len(common), "both_right": len(both_right), "rated": len(gaps),
                           "unrated": len(both_right) - len(gaps)}
    for t in thresholds:
        out[f"lower_by_{t:g}"] = sum(g > t for g in gaps.values())
    lowest = [k for k, g in gaps.items() if g > thresholds[0]]
    agree = [k for k in lowest if members_agree(a_by[k], b_by[k], facet)]
    out["all_judges_agree"] = len(agree)
    out["all_judges_agree_share"] = len(agree) / len(lowest) if lowest else None
    out["lower_ids"] = [f"{i}#{r}" for i, r in sorted(lowest)]
    return out


def compare_runs(a_dir: Path, b_dir: Path, facet: str = "hallucination",
                 tasks: list[str] | None = None) -> dict[str, Any]:
    from avhb import ReopenedRun, write_json_atomic

    from .difficulty import _anchor_tasks

    a, b = ReopenedRun(Path(a_dir), judges={}), ReopenedRun(Path(b_dir), judges={})
    try:
        names = tasks or _anchor_tasks([a.manifest, b.manifest])
        if not names:
            raise UserError("anchor-compare: the two runs share no ANCHOR answer task (anchor, anchor_refined)")
        result: dict[str, Any] = {"a": str(a.root), "b": str(b.root), "facet": facet, "tasks": {}}
        for name in names:
            result["tasks"][name] = compare_samples(a.samples(name), b.samples(name), facet)
    finally:
        for run in (a, b):
            run.journal.close()
    write_json_atomic(Path(a_dir) / "anchor_compare" / f"{Path(b_dir).name}.json", result)
    return result
