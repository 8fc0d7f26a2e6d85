"""Task hooks: the data loader, the request builder and the option list.

``load(root, config)`` returns one doc per QA row of the split named by the
task's ``dataset_name`` (binary | multiple_choice | open_ended), filtered by
``dataset_kwargs.level`` (``all`` keeps every level) and
``dataset_kwargs.category_class`` (``all``, ``temporal`` or ``spatial``).  Every doc carries the
release row (JSON fields decoded, see ``release.py``) plus these normalised
keys, each taken from the row when present and otherwise filled as stated:

* ``qa_id``: row order, ``<split>_<5 digits>`` (1-based);
* ``video_file``: the absolute path of the row's video (``repo_video_path``,
  else ``video_path``, resolved as upstream's ``video_path``);
* ``file_name``: the video path's last component;
* ``id``: the video's folder (``VidPair-Halluc/<id>/<file>``), else the pair's ``id``;
* ``pair_id``: the ``pairs.json`` entry naming this video;
* ``video_role``: ``positive``/``adversarial`` from that entry;
* ``category``: ``metadata.csv``, else the pair entry; ``level``: the pair
  entry, else ``metadata.csv`` (a pair whose rows end up at different
  levels is warned about on stderr, once per load); ``mask_flags``:
  ``metadata.csv``; each else from the names (category = ``id`` minus a ``T_`` prefix, left of the
  last ``_``; level: a pair whose video starts ``T_`` -> temporal, ``M_``/``R_``
  -> spatial, else video; without a pair, the row's own file name);
* ``category_class``: ``temporal`` or ``spatial``, the paper's class of the
  category (``release.CATEGORY_CLASS``; a row's own value wins; None for an
  unknown category);
* ``qa_group``: ``binary_qa_pos``/``binary_qa_neg`` from a ``question_id``
  ending in ``_pos``/``_neg``; ``multiple_qa`` / ``open_qa`` for the other splits.
  A binary row that ends up without a ``binary_qa_pos|neg|<k>`` group is a
  ``UserError`` naming the QA file and the row (it could never be paired);
* ``prompt``: the question plus the split's answer instruction
  (``dataset_kwargs.post_prompt`` overrides it; ``""`` sends the bare question).

A row whose video file is missing still yields a doc; the request builder
(``messages``) then raises ``SampleError``, so that sample fails with a
recorded error and the run goes on.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path, PurePosixPath
from typing import Any

from avhb import Message, SampleError, TextPart, UserError, VideoPart

from .release import (CATEGORY_CLASS, CLASSES, LEVELS, category_from_id, level_from_file, read_release, row_video,
                      video_file)

POST_PROMPTS = {
    "binary": "Answer with yes or no.",
    "multiple_choice": "Answer with the option's letter from the given choices directly.",
    "open_ended": "",
}
DEFAULT_GROUP = {"multiple_choice": "multiple_qa", "open_ended": "open_qa"}
_BINARY_GROUP = re.compile(r"^binary_qa_(pos|neg|\d+)$")


def load(root: Path, config: dict[str, Any]) -> list[dict[str, Any]]:
    """The docs of one task (see module docstring)."""
    qa_type = config.get("dataset_name") or "binary"
    kwargs = config.get("dataset_kwargs") or {}
    level = str(kwargs.get("level", "all") or "all")
    if level != "all" and level not in LEVELS:
        raise UserError(f"vidpair_halluc: dataset_kwargs.level {level!r} is not 'all' or one of {', '.join(LEVELS)}")
    cls = str(kwargs.get("category_class", "all") or "all")
    if cls != "all" and cls not in CLASSES:
        raise UserError(f"vidpair_halluc: dataset_kwargs.category_class {cls!r} is not 'all' or one of {', '.join(CLASSES)}")
    post = kwargs.get("post_prompt", POST_PROMPTS.get(qa_type, ""))
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"vidpair_halluc: {root} is not a folder (expected a release folder with qa/hf/)")
    rel = read_release(root, qa_type)
    normalised = [normalise(row, rel, qa_type, i) for i, row in enumerate(rel.rows, 1)]
    warn_mixed_levels(normalised, qa_type)
    docs = []
    for doc in normalised:
        if level != "all" and doc.get("level") != level:
            continue
        if cls != "all" and doc.get("category_class") != cls:
            continue
        question = str(doc.get("question") or "")
        doc["prompt"] = f"{question}\n{post}" if post else question
        docs.append(doc)
    return docs


def normalise(row: dict[str, Any], rel, qa_type: str, index: int) -> dict[str, Any]:
    doc = dict(row)
    doc.setdefault("qa_type", qa_type)
    if not doc.get("qa_id"):
        doc["qa_id"] = f"{qa_type}_{index:05d}"
    path = row_video(row)
    parts = PurePosixPath(str(path).replace("\\", "/")).parts if path else ()
    resolved = str(video_file(rel.root, path)) if path else ""
    doc["video_file"] = resolved
    if not doc.get("file_name") and parts:
        doc["file_name"] = parts[-1]
    pair = rel.pairs.get(str(row.get("pair_id"))) if row.get("pair_id") is not None else None
    pair = pair or rel.pair_of_video.get(resolved)
    meta = rel.metadata.get(resolved) or {}
    if not doc.get("id"):
        folder = parts[-2] if len(parts) >= 2 else None
        doc["id"] = folder or (pair or {}).get("id") or meta.get("id")
    if doc.get("pair_id") is None and pair:
        doc["pair_id"] = pair.get("pair_id")
    if not doc.get("video_role") and pair:
        for role in ("positive", "adversarial"):
            if pair.get(f"{role}_video") and str(video_file(rel.root, pair[f"{role}_video"])) == resolved:
                doc["video_role"] = role
    if not doc.get("category"):
        doc["category"] = meta.get("category") or (pair or {}).get("category") or None
    if not doc.get("level"):
        doc["level"] = (pair or {}).get("level") or meta.get("level") or None
    if not doc.get("category") and doc.get("id"):
        doc["category"] = category_from_id(str(doc["id"]))
    if not doc.get("category_class"):
        doc["category_class"] = CATEGORY_CLASS.get(str(doc.get("category") or ""))
    if not doc.get("level"):
        names = [str(pair[k]) for k in ("positive_video", "adversarial_video") if pair and pair.get(k)]
        names = [PurePosixPath(n.replace("\\", "/")).name for n in names] or [str(doc.get("file_name") or "")]
        levels = [level_from_file(n) for n in names if n]
        doc["level"] = next((lv for lv in levels if lv != "video"), levels[0] if levels else None)
    if "mask_flags" not in doc and meta.get("mask_flags_json"):
        try:
            doc["mask_flags"] = json.loads(meta["mask_flags_json"])
        except json.JSONDecodeError:
            doc["mask_flags"] = meta["mask_flags_json"]
    if not doc.get("qa_group"):
        qid = str(doc.get("question_id") or "")
        if qa_type == "binary" and qid.endswith(("_pos", "_neg")):
            doc["qa_group"] = "binary_qa_" + qid[-3:]
        else:
            doc["qa_group"] = DEFAULT_GROUP.get(qa_type)
    if qa_type == "binary" and not _BINARY_GROUP.match(str(doc.get("qa_group") or "")):
        raise UserError(f"{rel.source or rel.root}: binary row {doc.get('qa_id')!r} has no pos/neg qa_group "
                        f"(qa_group {doc.get('qa_group')!r}, question_id {doc.get('question_id')!r}): it could never be paired")
    return doc


def warn_mixed_levels(docs: list[dict[str, Any]], qa_type: str) -> str | None:
    """One stderr warning (returned too) when the rows of a pair carry
    different levels; None when every pair is at one level."""
    levels: dict[str, set[str]] = {}
    for d in docs:
        if d.get("pair_id") is not None:
            levels.setdefault(str(d["pair_id"]), set()).add(str(d.get("level")))
    mixed = sorted(p for p, lv in levels.items() if len(lv) > 1)
    if not mixed:
        return None
    msg = (f"avhb: warning: vidpair_halluc ({qa_type}): {len(mixed)} pair(s) have rows at different levels "
           f"(e.g. {mixed[0]}: {', '.join(sorted(levels[mixed[0]]))}); they are scored apart per level")
    print(msg, file=sys.stderr)
    return msg


def messages(doc: dict[str, Any], ctx: dict[str, Any]) -> list[Message]:
    """One user turn: the video, then the prompt.  A missing video is this
    sample's error (``SampleError``), never a crash."""
    path = doc.get("video_file")
    if not path:
        raise SampleError(f"sample {doc.get('qa_id')}: the row names no video (repo_video_path / video_path)")
    if not Path(path).is_file():
        raise SampleError(f"sample {doc.get('qa_id')}: video file missing: {path}")
    return [Message("user", [VideoPart(path=str(path)), TextPart(str(doc.get("prompt") or ""))])]


def choices(doc: dict[str, Any]) -> list[str] | None:
    """Option texts in letter order (``option_map`` by letter, else
    ``choices``); None when the row has none that decoded."""
    omap = doc.get("option_map")
    if isinstance(omap, dict) and omap:
        return [str(omap[k]) for k in sorted(omap)]
    ch = doc.get("choices")
    if isinstance(ch, list) and ch:
        return [str(c) for c in ch]
    return None
