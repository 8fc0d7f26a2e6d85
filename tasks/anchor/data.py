"""Reading ANCHOR's JSONL (both line formats of ``eval_models.py``'s
``parse_dataset``) into one sample per question.

Layout (``--data anchor=PATH``, or the sample pack)::

    PATH/<file>.jsonl         dataset_kwargs.file: anchor.jsonl (full set),
                              anchor_refined.jsonl, anchor_grounding.jsonl
                              (file names INFERRED; PATH may be the file)
    PATH/videos/<basename>    the video a line names (INFERRED: the release's
                              paths are absolute paths on the authors' disk)

Format A (annotation-tool export): ``annotation.video.src``,
``annotation.objectAnnotationListMap`` {frame key on the 10 Hz grid (str) ->
[{instance, labelId, score, color, x, y, width, height}]} and
``annotation.actionAnnotationList`` [{start, end, question, answer,
gemini_analysis, object, ...}]: one sample per action.  Format B:
``{"videoID", "QAs": [{question, answer, start?, end?}]}``: one sample per QA.
As upstream: an empty ``question`` is skipped (counted); ``start``/``end``
are read with ``float()`` (None when absent or not a number) and the clip is
used only when end > start (the media layer notes "whole video" otherwise).
A video that is missing is not dropped: its samples fail with a media error
(counted in ``errors``), and the loader says how many are missing.

Each sample (doc) has: ``sample_id`` (``<video stem>:<index in its
line>``), ``format`` (A/B), ``line``, ``video``, ``video_file``
(``videos/<basename>``), ``question``, ``answer``, ``start``, ``end``,
``gold_cot`` (the reference CoT, ``dataset_kwargs.reference_field``,
default ``gemini_analysis``; None for format B), ``reference`` (the gold CoT,
else ``answer``), ``reference_answer`` (the text after the first ``Final
Answer`` marker of ``reference``, else all of it), ``boxes`` (format A:
{frame key: [{x, y, width, height, label, color}]}, drawn on the frames),
``box_spans`` ([{label, start, end}] seconds, from the keys / 10),
``evidence`` (gold CoT + the box labels with their time spans: what the
hallucination judge checks against), ``gold_intervals`` (grounding: the gold
CoT's cue timeframes, else [start, end]), ``target`` and ``target_boxes``
(grounding: the label of the annotated instance the action names, and its
boxes by frame key), and ``difficulty`` / ``source`` when the line carries
them (keys INFERRED).
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avhb import UserError

KEY_FPS = 10.0  # the annotation grid: frame key k is at k / 10 s
FINAL_ANSWER = re.compile(r"(?i)final\s+answer\s*[:\-]?\s*")  # upstream's marker (run_judges.py)
_TIME = r"(?:\d{1,2}:)?\d{1,2}:\d{2}(?:\.\d+)?"
_RANGE = re.compile(rf"({_TIME})\s*(?:-|–|—|to)\s*({_TIME})")
_SINGLE = re.compile(rf"(?<![\d:])({_TIME})(?![\d:])")
_TIMEFRAME_LINE = re.compile(r"(?i)time\s*frame")
DEFAULT_REFERENCE = "gemini_analysis"


@dataclass
class LoadReport:
    """What one JSONL file gave: the docs and what was left out."""

    path: Path
    docs: list[dict[str, Any]] = field(default_factory=list)
    lines: int = 0
    empty_questions: int = 0
    missing_videos: list[str] = field(default_factory=list)


def seconds(stamp: str) -> float:
    """``"01:05"`` -> 65.0, ``"1:02:03"`` -> 3723.0, ``"00:07.5"`` -> 7.5."""
    total = 0.0
    for part in stamp.split(":"):
        total = total * 60 + float(part)
    return total


def timeframes(cot: str | None) -> list[list[float]]:
    """The ``[start, end]`` seconds of every ``Timeframe:`` line of a gold CoT
    (``mm:ss-mm:ss``, ``h:mm:ss``, en/em dashes or "to"); a lone time gives
    a point ``[t, t]``.  Times elsewhere in the text are not read."""
    out: list[list[float]] = []
    for line in (cot or "").splitlines():
        marker = _TIMEFRAME_LINE.search(line)
        if not marker:
            continue
        text = line[marker.end():]
        ranges = [(seconds(a), seconds(b)) for a, b in _RANGE.findall(text)]
        if ranges:
            out.extend([min(a, b), max(a, b)] for a, b in ranges)
        else:
            out.extend([seconds(t), seconds(t)] for t in _SINGLE.findall(text))
    return out


def final_answer(text: str | None) -> str:
    """Upstream's rule (run_judges.py ``_extract_final_answer``): the text
    after the *first* ``Final Answer`` marker, else the whole text; stripped,
    with leading markdown emphasis and one bullet removed."""
    text = text or ""
    m = FINAL_ANSWER.search(text)
    rest = text[m.end():] if m else text
    rest = re.sub(r"^[\s*#_]+", "", rest)
    rest = re.sub(r"^[-\u2022]\s+", "", rest)
    return rest.strip()


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _clip(start: float | None, end: float | None) -> tuple[float, float] | None:
    return (start, end) if start is not None and end is not None and end > start else None


def _boxes(annotation: dict[str, Any], where: str) -> dict[str, list[dict[str, Any]]]:
    """``objectAnnotationListMap`` as {frame key: [box dict]} with the label
    (``labelId``) and colour the drawing uses, plus ``instance``."""
    raw = annotation.get("objectAnnotationListMap") or {}
    if not isinstance(raw, dict):
        raise UserError(f"{where}: objectAnnotationListMap must be an object {{frame key: [boxes]}}")
    out: dict[str, list[dict[str, Any]]] = {}
    for key, boxes in raw.items():
        try:
            int(key)
        except (TypeError, ValueError):
            raise UserError(f"{where}: objectAnnotationListMap key {key!r} is not a frame index") from None
        kept = []
        for box in boxes or []:
            try:
                kept.append({"x": float(box["x"]), "y": float(box["y"]), "width": float(box["width"]),
                             "height": float(box["height"]), "label": str(box.get("labelId") or ""),
                             "color": box.get("color"), "instance": box.get("instance")})
            except (KeyError, TypeError, ValueError):
                raise UserError(f"{where}: frame {key}: a box needs numeric x, y, width, height") from None
        if kept:
            out[str(key)] = kept
    return out


def clip_boxes(boxes: dict[str, list[dict[str, Any]]], clip: tuple[float, float] | None) -> dict[str, list[dict[str, Any]]]:
    """The boxes a sample draws: those of the keys inside its clip (every
    key for the whole video), without the ``instance`` bookkeeping.  Each
    sample line of the run folder carries its doc, so a clip of a long video
    keeps only its own seconds of annotation."""
    out = {}
    for key, items in boxes.items():
        if clip and not clip[0] - 1 / KEY_FPS <= int(key) / KEY_FPS <= clip[1] + 1 / KEY_FPS:
            continue
        out[key] = [{k: v for k, v in b.items() if k != "instance"} for b in items]
    return out


def box_spans(boxes: dict[str, list[dict[str, Any]]], clip: tuple[float, float] | None) -> list[dict[str, Any]]:
    """Per label, the first and last annotated time (key / 10 s), limited to
    the clip when there is one; labels in sorted order."""
    times: dict[str, list[float]] = {}
    for key, items in boxes.items():
        t = int(key) / KEY_FPS
        if clip and not clip[0] <= t <= clip[1]:
            continue
        for b in items:
            times.setdefault(b["label"], []).append(t)
    return [{"label": label, "start": min(ts), "end": max(ts)} for label, ts in sorted(times.items()) if label]


def evidence_text(gold_cot: str | None, spans: list[dict[str, Any]]) -> str:
    """The hallucination judge's gold evidence: the gold CoT, then the
    annotated objects with the seconds they are boxed in."""
    parts = [gold_cot.strip()] if gold_cot else []
    if spans:
        lines = [f"- {s['label']}: {s['start']:g}-{s['end']:g} s" for s in spans]
        parts.append("Annotated objects (bounding boxes) and when they are visible:\n" + "\n".join(lines))
    return "\n\n".join(parts)


def _target(action: dict[str, Any], boxes: dict[str, list[dict[str, Any]]]) -> tuple[str | None, dict[str, list[float]]]:
    """The grounding target: the label of the annotated instance the action's
    ``object`` names (else the only label there is), and its box per frame
    key.  (None, {}) when neither identifies one."""
    wanted = action.get("object")
    chosen = [b for items in boxes.values() for b in items if wanted is not None and b.get("instance") == wanted]
    labels = {b["label"] for b in chosen} or {b["label"] for items in boxes.values() for b in items}
    if len(labels) != 1:
        return None, {}
    label = labels.pop()
    by_key: dict[str, list[float]] = {}
    for key, items in boxes.items():
        for b in items:
            if b["label"] == label and (not chosen or b.get("instance") == wanted) and key not in by_key:
                by_key[key] = [b["x"], b["y"], b["width"], b["height"]]
    return label, by_key


def _doc(entry: dict[str, Any], *, fmt: str, line: int, index: int, video: str, reference_field: str,
         boxes: dict[str, list[dict[str, Any]]] | None, extra: dict[str, Any]) -> dict[str, Any]:
    start, end = _float(entry.get("start")), _float(entry.get("end"))
    clip = _clip(start, end)
    gold = entry.get(reference_field) if fmt == "A" else None
    gold = gold.strip() if isinstance(gold, str) and gold.strip() else None
    answer = str(entry.get("answer") or "").strip()
    reference = gold or answer
    spans = box_spans(boxes, clip) if boxes else []
    frames = timeframes(gold)
    offset = clip[0] if clip else 0.0  # INFERRED: the gold CoT's times are relative to the clip the annotator saw
    gold_intervals = [[a + offset, b + offset] for a, b in frames] or ([list(clip)] if clip else None)
    drawn = clip_boxes(boxes, clip) if boxes else {}
    target, target_boxes = _target(entry, boxes) if boxes else (None, {})
    target_boxes = {k: v for k, v in target_boxes.items() if k in drawn}
    name = Path(video).name
    doc = {
        "sample_id": f"{Path(name).stem}:{index}", "format": fmt, "line": line, "video": name,
        "video_file": f"videos/{name}", "question": str(entry["question"]).strip(), "answer": answer,
        "start": start, "end": end, "gold_cot": gold, "reference": reference,
        "reference_answer": final_answer(reference), "boxes": drawn or None, "box_spans": spans,
        "evidence": evidence_text(gold, spans), "gold_intervals": gold_intervals,
        "target": target, "target_boxes": target_boxes or None,
    }
    for key in ("difficulty", "source"):
        value = entry.get(key, extra.get(key))
        if value is not None:
            doc[key] = value
    return doc


def _video_name(value: Any) -> str:
    name = Path(str(value or "").strip()).name
    return name if not name or Path(name).suffix else f"{name}.mp4"


def read_jsonl(path: Path, reference_field: str = DEFAULT_REFERENCE) -> LoadReport:
    """Every sample of one JSONL file (module docstring); a line that is not
    a JSON object of either format is a ``UserError`` naming file and line."""
    report = LoadReport(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read ANCHOR data: {exc}") from None
    seen: set[str] = set()
    for line_no, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{path}:{line_no}"
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            raise UserError(f"{where}: not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise UserError(f"{where}: expected a JSON object")
        report.lines += 1
        if isinstance(obj.get("annotation"), dict):
            ann = obj["annotation"]
            video = _video_name((ann.get("video") or {}).get("src"))
            entries, fmt, boxes = ann.get("actionAnnotationList") or [], "A", _boxes(ann, where)
        elif "videoID" in obj:
            video, entries, fmt, boxes = _video_name(obj.get("videoID")), obj.get("QAs") or [], "B", None
        else:
            raise UserError(f"{where}: neither format A ('annotation') nor format B ('videoID', 'QAs')")
        if not video:
            raise UserError(f"{where}: the line names no video")
        if not isinstance(entries, list):
            raise UserError(f"{where}: {'actionAnnotationList' if fmt == 'A' else 'QAs'} must be a list")
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            if not str(entry.get("question") or "").strip():
                report.empty_questions += 1
                continue
            doc = _doc(entry, fmt=fmt, line=line_no, index=index, video=video, reference_field=reference_field,
                       boxes=boxes, extra=obj)
            if doc["sample_id"] in seen:  # the same video on two lines
                doc["sample_id"] = f"{Path(video).stem}:L{line_no}:{index}"
            seen.add(doc["sample_id"])
            report.docs.append(doc)
    return report


def load(root: Path, config: dict[str, Any]) -> list[dict[str, Any]]:
    """``data_loader`` hook.  ``dataset_kwargs``: ``file`` (the JSONL under
    the data root), ``reference_field`` (the action key holding the gold CoT,
    default ``gemini_analysis``: swap it to score against another reference,
    the paper's circularity check).  Prints what was skipped or is missing."""
    root = Path(root)
    kwargs = config.get("dataset_kwargs") or {}
    path = root if root.is_file() else root / str(kwargs.get("file", "anchor.jsonl"))
    if not path.is_file():
        raise UserError(f"{path}: ANCHOR data not found (pass --data anchor=FOLDER holding {path.name} and videos/)")
    report = read_jsonl(path, str(kwargs.get("reference_field") or DEFAULT_REFERENCE))
    folder = path.parent
    report.missing_videos = sorted({d["video_file"] for d in report.docs if not (folder / d["video_file"]).is_file()})
    task = config.get("task", "anchor")
    if report.empty_questions:
        print(f"avhb: {task}: {report.empty_questions} entries with an empty question skipped ({path.name})",
              file=sys.stderr)
    if report.missing_videos:
        print(f"avhb: warning: {task}: {len(report.missing_videos)} videos missing under {folder / 'videos'} "
              f"(e.g. {report.missing_videos[0]}); their samples fail with a media error", file=sys.stderr)
    if root.is_file() or folder != root:
        for d in report.docs:
            d["video_file"] = str(folder / d["video_file"])
    return report.docs
