"""Reading ``items.jsonl``: the JSON Schema, the graph and asset checks, and
the normalised docs every HAVE task selects from.

Layout (``--data have=PATH``, the sample pack): ``PATH/items.jsonl`` (one item
per line, see ``schema/items.schema.json`` and the README) and the assets it
names, relative to ``PATH``.  ``PATH`` may also be the ``items.jsonl`` file.

What a bad line costs:

* a line the loader cannot identify or route (not JSON, not an object, no
  string ``id`` or ``subtask``, an ``id`` seen before) is a ``UserError``
  naming the file and line: the run stops before any model call;
* an item it can name but not run is *rejected*: its sample fails with a
  one-line message ``FILE:LINE: item ID: problem`` (excluded from the
  metrics, counted in ``errors``), and the loader says on stderr, once per
  file, how many were rejected.  Problems: a schema error, a malformed graph
  (:mod:`.graph`), a missing asset, a panorama view with no image, an MCQ
  answer that names no option.

Normalisation (each doc is the item plus): asset paths made absolute;
``query`` (the question, else the instruction text: what the answer matcher
and scorer read); ``options`` filled with ``Audio A``, ``Audio B``... when
only ``options_audio`` is given; for interaction items ``max_turns`` (default
2 x the shortest path, INFERRED), ``shortest_path`` and, for navigation
nodes given as ``panorama_id``/``heading``, ``images`` =
``images/pano/<id>_<heading>.jpg``.  ``_rejected`` holds the rejection
message (None when the item is fine) and ``_where`` ``FILE:LINE``.
"""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

from avhb import UserError

from .graph import GraphError, check_graph, default_max_turns

ITEMS = "items.jsonl"
SCHEMA_FILE = Path(__file__).parent / "schema" / "items.schema.json"
# The subtasks a HAVE task runs (static.yaml, interaction.yaml, music.yaml; a test keeps these in sync).
STATIC_SUBTASKS = ("instructed_recognition", "text_rich_qa", "cross_modal_matching", "audio_grounded_vqa",
                   "math", "multidisciplinary_reasoning", "discourse_reasoning")
INTERACTION_SUBTASKS = ("navigation", "puzzle", "music_reproduction")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class Rejected(ValueError):
    """An item that cannot run (one-line message)."""


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def items_file(root: Path) -> Path:
    root = Path(root)
    path = root if root.is_file() else root / ITEMS
    if not path.is_file():
        raise UserError(f"{path}: HAVE-Bench data not found (expected {ITEMS} with its assets next to it; "
                        "pass --data have=FOLDER or run the sample pack with --sample-data)")
    return path


def read_items(root: Path) -> list[dict[str, Any]]:
    """Every item of the file, normalised (module docstring); parsed once
    per file version per process."""
    path = items_file(root).resolve()
    st = path.stat()
    return _read(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _read(path_text: str, mtime_ns: int, size: int) -> list[dict[str, Any]]:
    path = Path(path_text)
    folder = path.parent
    docs: list[dict[str, Any]] = []
    first_line: dict[str, int] = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            item = _identify(line, path, n, first_line)
            where = f"{path}:{n}"
            try:
                doc = normalise(item, folder)
                rejected = None
            except Rejected as exc:
                doc, rejected = dict(item), f"{where}: item {item['id']!r}: {exc}"
            doc["_rejected"], doc["_where"] = rejected, where
            docs.append(doc)
    _announce(path, docs)
    return docs


def _identify(line: str, path: Path, n: int, first_line: dict[str, int]) -> dict[str, Any]:
    try:
        item = json.loads(line)
    except ValueError as exc:
        raise UserError(f"{path}:{n}: not JSON ({exc})") from None
    if not isinstance(item, dict):
        raise UserError(f"{path}:{n}: an item must be a JSON object, got {type(item).__name__}")
    if not isinstance(item.get("id"), str) or not item["id"]:
        raise UserError(f"{path}:{n}: the item has no string 'id' (ids name the samples)")
    if not isinstance(item.get("subtask"), str) or not item["subtask"]:
        raise UserError(f"{path}:{n}: item {item['id']!r} has no string 'subtask' (it picks the task)")
    if item["id"] in first_line:
        raise UserError(f"{path}:{n}: item {item['id']!r}: duplicate id (first on line {first_line[item['id']]})")
    first_line[item["id"]] = n
    return item


def _announce(path: Path, docs: list[dict[str, Any]]) -> None:
    rejected = [d["_rejected"] for d in docs if d["_rejected"]]
    if rejected:
        print(f"avhb: warning: have: {len(rejected)} of {len(docs)} items in {path} are rejected (their samples "
              f"fail with the reason, counted in errors); first: {rejected[0]}", file=sys.stderr)
    known = set(STATIC_SUBTASKS) | set(INTERACTION_SUBTASKS)
    orphans: dict[str, int] = {}
    for d in docs:
        if d["subtask"] not in known:
            orphans[d["subtask"]] = orphans.get(d["subtask"], 0) + 1
    for subtask, count in sorted(orphans.items()):
        print(f"avhb: warning: have: {count} items in {path} are of subtask {subtask!r}, which no HAVE task runs: "
              f"add {{subtask: {subtask}, ...}} to tasks/have/static.yaml's expand list to run them as have_{subtask}",
              file=sys.stderr)


# ---------------------------------------------------------------- one item

def schema_problem(item: dict[str, Any]) -> str | None:
    """The first JSON Schema error of an item, as ``key.path: message``."""
    errors = sorted(_validator().iter_errors(item), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return None
    err = errors[0]
    while err.context:  # anyOf / if-then: the most specific branch
        err = max(err.context, key=lambda e: len(e.absolute_path))
    where = _keypath(err.absolute_path)
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else err.message
        return f"{where + '.' if where else ''}{missing}: required key missing"
    if err.validator == "anyOf":
        return f"{where or '(item)'}: {err.message[:160]}"
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        return f"{where}: unknown key {extra[0]!r}" if extra else f"{where}: {err.message[:160]}"
    if err.validator == "enum":
        return f"{where}: must be one of {err.validator_value}, got {err.instance!r}"
    if err.validator == "type":
        return f"{where}: expected {err.validator_value}, got {type(err.instance).__name__}"
    return f"{where or '(item)'}: {err.message[:160]}"


def _keypath(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _asset(folder: Path, rel: str, what: str) -> str:
    p = Path(rel)
    full = p if p.is_absolute() else folder / p
    if not full.is_file():
        raise Rejected(f"{what}: {rel} not found under {folder}")
    return str(full)


def _pano_path(node: dict[str, Any]) -> str:
    heading = node["heading"]
    text = f"{heading:g}" if isinstance(heading, (int, float)) else str(heading)
    return f"images/pano/{node['panorama_id']}_{text}.jpg"


def normalise(item: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The doc for one item (module docstring); :class:`Rejected` if it
    cannot run."""
    problem = schema_problem(item)
    if problem:
        raise Rejected(problem)
    if item["level"] == "interaction":
        return _interaction(item, folder)
    return _static(item, folder)


def _static(item: dict[str, Any], folder: Path) -> dict[str, Any]:
    doc = dict(item)
    doc["images"] = [_asset(folder, p, f"images[{i}]") for i, p in enumerate(item["images"])]
    if item.get("audio"):
        doc["audio"] = _asset(folder, item["audio"], "audio")
    if item.get("options_audio"):
        doc["options_audio"] = [_asset(folder, p, f"options_audio[{i}]") for i, p in enumerate(item["options_audio"])]
        if item.get("options") and len(item["options"]) != len(item["options_audio"]):
            raise Rejected(f"options has {len(item['options'])} entries but options_audio {len(item['options_audio'])}")
        doc.setdefault("options", [f"Audio {LETTERS[i]}" for i in range(len(item["options_audio"]))])
    doc["query"] = (item.get("question") or "").strip() or (item.get("instruction_text") or "").strip()
    if item["answer_type"] == "mcq":
        letters = LETTERS[: len(doc["options"])]
        answer = item["answer"].strip()
        by_text = [LETTERS[i] for i, o in enumerate(doc["options"]) if o.strip().lower() == answer.lower()]
        if not (len(answer) == 1 and answer.upper() in letters) and not by_text:
            raise Rejected(f"answer {item['answer']!r} names none of the {len(letters)} options ({letters})")
    return doc


def _interaction(item: dict[str, Any], folder: Path) -> dict[str, Any]:
    doc = dict(item)
    try:
        shortest = check_graph(item)
    except GraphError as exc:
        raise Rejected(str(exc)) from None
    intro = dict(item.get("intro") or {})
    if intro.get("images"):
        intro["images"] = [_asset(folder, p, f"intro.images[{i}]") for i, p in enumerate(intro["images"])]
    if intro.get("audio"):
        intro["audio"] = _asset(folder, intro["audio"], "intro.audio")
    nodes = []
    for node in item["nodes"]:
        node = dict(node)
        where = f"node {node['id']!r}"
        if node.get("panorama_id") and not node.get("images"):
            rel = _pano_path(node)
            if not (folder / rel).is_file():
                raise Rejected(f"{where}: view {node['panorama_id']} heading {node['heading']:g}: {rel} not found "
                               f"under {folder} (upstream ships panorama ids only; fetch the views yourself)")
            node["images"] = [rel]
        node["images"] = [_asset(folder, p, f"{where} image") for p in node.get("images") or []]
        if node.get("audio"):
            node["audio"] = _asset(folder, node["audio"], f"{where} audio")
        nodes.append(node)
    doc.update(intro=intro, nodes=nodes, shortest_path=shortest,
               max_turns=item.get("max_turns") or default_max_turns(shortest))
    return doc
