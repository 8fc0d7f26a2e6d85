"""Loading the upstream ``curve.json`` and turning a record into a prompt.

Data layout (``--data curve=PATH``, the sample pack, or ``avhb prepare``'s
output folder)::

    PATH/curve.json                 the upstream JSON array of records
    PATH/videos/<YouTube id>.mp4    one file per video; the id is the ``v=``
                                    value of ``video_id`` (11 characters)

Each record gets two extra fields: ``youtube_id`` and ``video_file``
(``videos/<id>.mp4``, relative to PATH; the task's ``media.video`` points at
it).  A record whose file is missing is kept: the evaluator fails that one
sample with a media error naming the path (for backends that see pixels), and
the loader prints how many files are missing.  Nothing is dropped silently.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from avhb import UserError

from . import locales

JSON_NAME = "curve.json"
_ID = re.compile(r"^[A-Za-z0-9_-]{11}$")


def youtube_id(video_id: str) -> str | None:
    """The 11-character id of a YouTube reference: ``...watch?v=ID``,
    ``youtu.be/ID``, ``/shorts/ID``, ``/embed/ID`` or a bare id; None if
    there is none."""
    text = (video_id or "").strip()
    if _ID.match(text):
        return text
    url = urlparse(text)
    v = parse_qs(url.query).get("v")
    if v and _ID.match(v[0]):
        return v[0]
    parts = [p for p in url.path.split("/") if p]
    if url.netloc.endswith("youtu.be") and parts and _ID.match(parts[0]):
        return parts[0]
    if len(parts) >= 2 and parts[-2] in ("shorts", "embed", "v", "live") and _ID.match(parts[-1]):
        return parts[-1]
    return None


def read_records(root: Path) -> list[dict[str, Any]]:
    """The records of ``root/curve.json`` (or ``root`` itself if it is the
    file).  Accepts a JSON array, an object of records, or JSON lines."""
    path = root if root.is_file() else root / JSON_NAME
    if not path.is_file():
        raise UserError(f"{path}: CURVE data not found (expected {JSON_NAME}; fetch it with `avhb prepare curve` "
                        f"or pass --data curve=FOLDER)")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as exc:
            raise UserError(f"{path}: not JSON or JSON lines: {exc}") from None
    if isinstance(data, dict):
        data = list(data.values())
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise UserError(f"{path}: expected a JSON array of records")
    return data


def prepare_record(record: dict[str, Any], where: Path) -> dict[str, Any]:
    """The record plus ``youtube_id`` and ``video_file``; ``external_links``
    normalised to a list (a string becomes a one-item list)."""
    for key in ("key", "video_id", "locale", "question", "answer"):
        if key not in record:
            raise UserError(f"{where}: a record lacks {key!r} (record {record.get('key', '?')!r})")
    vid = youtube_id(str(record["video_id"]))
    if vid is None:
        raise UserError(f"{where}: record {record['key']!r}: video_id {record['video_id']!r} holds no YouTube id")
    links = record.get("external_links")
    if isinstance(links, str):
        links = [links] if links.strip() else []
    return {**record, "key": str(record["key"]), "external_links": list(links or []),
            "youtube_id": vid, "video_file": f"videos/{vid}.mp4"}


def check_records(records: list[dict[str, Any]], where: Path) -> None:
    """``UserError`` for two records with one ``key`` (the sample id) or a
    record whose ``locale`` is not a known one."""
    seen: set[str] = set()
    for record in records:
        key = str(record.get("key"))
        if "key" in record and key in seen:
            raise UserError(f"{where}: duplicate key {key!r} (keys are the sample ids and must be unique)")
        seen.add(key)
        if "locale" in record and locales.find(str(record["locale"])) is None:
            raise UserError(f"{where}: record {record.get('key', '?')!r}: unknown locale {record['locale']!r} "
                            f"(known: {', '.join(locales.LOCALES)})")


def load(root: Path, config: dict[str, Any]) -> list[dict[str, Any]]:
    """``data_loader`` hook.  ``dataset_kwargs``: ``locale`` (e.g. ``ta-IN``)
    and/or ``category`` (e.g. ``Sports``) select records; order is kept.
    Both compare without case (``ta_in`` = ``ta-IN``).  Duplicate keys and
    unknown locales (in the data or in ``locale``) are ``UserError``s."""
    root = Path(root)
    kwargs = config.get("dataset_kwargs") or {}
    want_locale = kwargs.get("locale")
    want_category = kwargs.get("category")
    if want_locale:
        want_locale = locales.get(str(want_locale)).code
    records = read_records(root)
    check_records(records, root if root.is_file() else root / JSON_NAME)
    docs = []
    for record in records:
        if want_locale and locales.normalize(str(record.get("locale", ""))) != locales.normalize(want_locale):
            continue
        if want_category and str(record.get("category", "")).strip().lower() != str(want_category).strip().lower():
            continue
        docs.append(prepare_record(record, root))
    folder = root.parent if root.is_file() else root
    if root.is_file():  # media paths resolve against the data root: make them absolute
        docs = [{**d, "video_file": str(folder / d["video_file"])} for d in docs]
    missing = sorted({d["video_file"] for d in docs if not (folder / d["video_file"]).is_file()})
    if missing:
        print(f"avhb: warning: curve ({want_locale or want_category or 'all'}): {len(missing)} of "
              f"{len({d['video_file'] for d in docs})} videos missing under {folder / 'videos'} "
              f"(e.g. {missing[0]}); their samples fail with a media error. Fetch them with `avhb prepare`.",
              file=sys.stderr)
    return docs


def doc_to_text(doc: dict[str, Any]) -> str:
    """The native-language question and the locale's concise-answer line."""
    return f"{doc['question'].strip()}\n\n{locales.get(str(doc.get('locale', 'en-GB'))).answer}"


def reasoning_prompt(doc: dict[str, Any]) -> str:
    """The diagnosis prompt: the question and the locale's step-by-step line."""
    return f"{doc['question'].strip()}\n\n{locales.get(str(doc.get('locale', 'en-GB'))).reasoning}"
