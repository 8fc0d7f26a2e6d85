"""Reading MMLongCite rows and deriving what the tasks need from them.

Layout (``--data mmlongcite=PATH``, the sample pack, or the prepared Hub
snapshot of ``Jonaszky123/MMLongCite``)::

    PATH/data/mmlongcite/*.json[l]            the rows (a JSON array or JSON lines per file)
    PATH/data/mmlongcite-hr/{easy,hard}/*     MMLongCite-HR rows (optional; see hr.py)
    PATH/image/mmlongcite/<dataset>/<f>.png   the images, as the rows name them
    PATH/images/mmlongcite/<dataset>/<f>.png  ... or under ``images/`` (the release's folder)

``PATH`` may also be a folder holding the row files directly, or one file.

Row keys (CONFIRMED, upstream README): ``id`` (int), ``context`` (list of
``{"type": "image", "image": "image/mmlongcite/<dataset>/<file>.png"}`` or
``{"type": "text", "text": ...}``), ``question`` (list of ``{"type": "text",
"text": ...}``, options and instruction inside the text), ``ground_truth``
(e.g. ``"C"``), ``task`` (list, e.g. ``["SP_Figure_Reasoning"]``),
``text_length``, ``mm_length``.  A row lacking one of them, or with a context
unit that is neither text nor image, is a ``UserError`` naming the file and
the row.  Variants accepted: ``question`` as a plain string, ``task`` as a
string, numbers written as strings.

Derived fields (INFERRED, documented in the README):

* ``dataset``: the folder after ``image/mmlongcite/`` in the first image
  path (``images/mmlongcite/`` and a bare ``mmlongcite/`` too); a row
  without images takes its own ``dataset`` key, else its file's stem.
* ``family``: the ``families`` table (YAML ``dataset_kwargs``) by the
  dataset's name compared without case and punctuation (``MMLongBench-Doc``
  = ``mmlongbench_doc``).  A dataset in no family is announced once on
  stderr (per data root, not per task) with its row count and belongs to
  no family task.
* ``length`` = ``mm_length``; ``length_bucket``: the ``buckets`` table,
  ``lower <= length < upper`` (``upper`` null: no bound).
* ``task``: the labels joined by ``+`` (a breakdown key); the list itself
  stays in ``task_labels``.
* ``question_text``, ``options`` (parsed from the question's option lines),
  ``mcq`` (the gold is one of the option letters), ``n_units``,
  ``evidence`` (optional gold unit indices, 1-based; ``evidence`` /
  ``evidence_index`` / ``gold_units`` keys accepted).
* ``document``: the source the context was cut from, what the tasks'
  samples cluster by (``cluster_key``).  Single-source QA (the pages of
  one document) and video (the frames of one video): the dataset and the
  first image's file name without its page or time suffix
  (``5511023_14.png`` -> ``longdocurl/5511023``, ``v017_t0010.png`` ->
  ``longvideobench/v017``); every other row (several sources, a haystack
  of unrelated images, no image, no family) is its own
  (``<dataset>/row:<id>``).

Image paths are resolved once: the unit's ``image`` is rewritten to the path
(relative to ``PATH``) that exists, ``image/...`` first, then
``images/...``.  A missing image is kept as written; the sample fails with
a media error naming the file when it is read (nothing is dropped), and the
loader says how many are missing.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from avhb import UserError
from avhb.plugins.metrics import inline_options

REQUIRED = ("id", "context", "question", "ground_truth", "task", "text_length", "mm_length")
DATA_DIR = Path("data") / "mmlongcite"
HR_DIR = Path("data") / "mmlongcite-hr"
_IMAGE_ROOT = re.compile(r"^(?:\./)?(?:images?/)?mmlongcite(?:-hr)?/(?:(?:easy|hard)/)?([^/]+)/")
_EVIDENCE_KEYS = ("evidence", "evidence_index", "gold_units")
FAMILIES = ("single_source", "multi_source", "visual_grounding", "video")


def norm(name: str) -> str:
    """A dataset name compared without case and punctuation."""
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


@dataclass(frozen=True)
class Bucket:
    name: str
    lower: int
    upper: int | None  # None: no upper bound

    def holds(self, length: int) -> bool:
        return self.lower <= length and (self.upper is None or length < self.upper)


def parse_buckets(spec: Any) -> list[Bucket]:
    """The YAML ``buckets`` list of ``{name, lower, upper}``; ``UserError``
    when a bucket is malformed or two overlap."""
    if not isinstance(spec, list) or not spec:
        raise UserError("mmlongcite: dataset_kwargs.buckets must be a list of {name, lower, upper}")
    out = []
    for i, b in enumerate(spec):
        if not isinstance(b, dict) or "name" not in b or "lower" not in b:
            raise UserError(f"mmlongcite: buckets[{i}] must be a mapping with name, lower and upper")
        upper = b.get("upper")
        bucket = Bucket(str(b["name"]), int(b["lower"]), None if upper is None else int(upper))
        if bucket.upper is not None and bucket.upper <= bucket.lower:
            raise UserError(f"mmlongcite: bucket {bucket.name}: upper must be above lower")
        out.append(bucket)
    out.sort(key=lambda b: b.lower)
    for a, b in zip(out, out[1:]):
        if a.upper is None or a.upper > b.lower:
            raise UserError(f"mmlongcite: buckets {a.name} and {b.name} overlap")
    return out


def bucket_of(length: int, buckets: list[Bucket]) -> str | None:
    for b in buckets:
        if b.holds(length):
            return b.name
    return None


def family_table(spec: Any) -> dict[str, str]:
    """``{family: [dataset names]}`` (YAML) -> ``{normalised name: family}``."""
    if not isinstance(spec, dict):
        raise UserError("mmlongcite: dataset_kwargs.families must map a family to its dataset names")
    out: dict[str, str] = {}
    for family, names in spec.items():
        if family not in FAMILIES:
            raise UserError(f"mmlongcite: unknown family {family!r} in dataset_kwargs.families "
                            f"(known: {', '.join(FAMILIES)})")
        for name in names or []:
            key = norm(name)
            if key in out and out[key] != family:
                raise UserError(f"mmlongcite: dataset {name!r} is listed under {out[key]} and {family}")
            out[key] = family
    return out


# ---------------------------------------------------------------- files


def row_files(root: Path, sub: Path = DATA_DIR) -> list[Path]:
    """The row files under ``root`` (module docstring), sorted by name."""
    if root.is_file():
        return [root]
    for folder in (root / sub, root):
        files = sorted(p for p in folder.glob("*") if p.suffix in (".json", ".jsonl") and p.is_file())
        if files:
            return files
    raise UserError(f"{root}: no MMLongCite rows (expected {sub}/*.json[l]); fetch them with "
                    "`avhb prepare mmlongcite` or pass --data mmlongcite=FOLDER")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """``.jsonl``: one row per line; otherwise a JSON array of rows, an
    object of rows, or one row (JSON lines are accepted there too)."""
    text = path.read_text(encoding="utf-8")

    def lines() -> list[Any]:
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise UserError(f"{path}:{n}: not JSON: {exc}") from None
        return rows

    if path.suffix == ".jsonl":
        data: Any = lines()
    else:
        try:
            data = json.loads(text)
        except ValueError:
            data = lines()
    if isinstance(data, dict):
        data = [data] if "context" in data else list(data.values())
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise UserError(f"{path}: expected a JSON array of rows (objects) or JSON lines")
    return data


def resolve_image(root: Path, rel: str) -> str:
    """The path (relative to ``root``) at which the image a row names
    exists: as written, then under ``images/``; as written when neither."""
    p = Path(rel)
    if p.is_absolute():
        return rel
    candidates = [p]
    if p.parts and p.parts[0] == "image":
        candidates.append(Path("images", *p.parts[1:]))
    elif p.parts and p.parts[0] != "images":
        candidates.append(Path("images") / p)
    for c in candidates:
        if (root / c).is_file():
            return c.as_posix()
    return rel


_PAGE_SUFFIX = re.compile(r"_t?\d+$")
ONE_SOURCE = ("single_source", "video")  # families whose images are the pages or frames of one source


def document_of(dataset: str, family: str | None, context: list[dict[str, Any]], row_id: Any) -> str:
    """The source of a row's context (module docstring, ``document``)."""
    if family in ONE_SOURCE:
        for unit in context:
            if unit.get("type") == "image" and unit.get("image"):
                stem = Path(str(unit["image"])).stem
                return f"{dataset}/{_PAGE_SUFFIX.sub('', stem) or stem}"
    return f"{dataset}/row:{row_id}"


def dataset_of(row: dict[str, Any], file: Path) -> str:
    for unit in row.get("context") or []:
        if isinstance(unit, dict) and unit.get("type") == "image" and unit.get("image"):
            m = _IMAGE_ROOT.match(str(unit["image"]))
            if m:
                return m.group(1)
    if row.get("dataset"):
        return str(row["dataset"])
    return file.stem


def text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(v.get("text", "")) if isinstance(v, dict) else str(v) for v in value)
    return str(value or "")


def _int(value: Any, what: str, where: str) -> int:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        raise UserError(f"{where}: {what} must be a number, got {value!r}") from None


def check_row(row: dict[str, Any], where: str) -> None:
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise UserError(f"{where}: missing key(s) {', '.join(missing)} (MMLongCite rows need {', '.join(REQUIRED)})")
    if not isinstance(row["context"], list) or not row["context"]:
        raise UserError(f"{where}: context must be a non-empty list of units")
    for i, unit in enumerate(row["context"], 1):
        kind = unit.get("type") if isinstance(unit, dict) else None
        if kind == "text" and isinstance(unit.get("text"), str):
            continue
        if kind == "image" and isinstance(unit.get("image"), str) and unit["image"]:
            continue
        raise UserError(f"{where}: context unit [{i}] must be {{type: text, text}} or {{type: image, image}}, "
                        f"got {json.dumps(unit)[:120]}")


def evidence_of(row: dict[str, Any], n_units: int, where: str) -> list[int] | None:
    for key in _EVIDENCE_KEYS:
        if row.get(key) is not None:
            value = row[key]
            values = value if isinstance(value, list) else [value]
            out = sorted({_int(v, key, where) for v in values})
            bad = [i for i in out if i < 1 or i > n_units]
            if bad:
                raise UserError(f"{where}: {key} {bad} is outside the context's units 1..{n_units}")
            return out
    return None


def prepare_row(row: dict[str, Any], file: Path, root: Path, families: dict[str, str],
                buckets: list[Bucket]) -> dict[str, Any]:
    """The row plus the derived fields (module docstring)."""
    where = f"{file}: row id {row.get('id', '?')}"
    check_row(row, where)
    context = [dict(u, image=resolve_image(root, u["image"])) if u["type"] == "image" else dict(u)
               for u in row["context"]]
    labels = row["task"] if isinstance(row["task"], list) else [row["task"]]
    question = text_of(row["question"])
    options = inline_options(question)
    gold = str(row["ground_truth"]).strip()
    length = _int(row["mm_length"], "mm_length", where)
    dataset = dataset_of(row, file)
    return {
        **row,
        "id": row["id"],
        "context": context,
        "dataset": dataset,
        "family": families.get(norm(dataset)),
        "length": length,
        "length_bucket": bucket_of(length, buckets),
        "text_length": _int(row["text_length"], "text_length", where),
        "mm_length": length,
        "task": "+".join(str(t) for t in labels),
        "task_labels": [str(t) for t in labels],
        "question_text": question,
        "options": options,
        "mcq": bool(options) and gold.upper() in {k.upper() for k in options},
        "n_units": len(context),
        "evidence": evidence_of(row, len(context), where),
        "document": document_of(dataset, families.get(norm(dataset)), context, row["id"]),
    }


def load_rows(root: Path, families: dict[str, str], buckets: list[Bucket],
              sub: Path = DATA_DIR) -> list[dict[str, Any]]:
    """Every row under ``root`` (file order, then row order), prepared;
    duplicate ids are a ``UserError``."""
    root = Path(root)
    base = root.parent if root.is_file() else root
    docs: list[dict[str, Any]] = []
    seen: dict[str, Path] = {}
    for file in row_files(root, sub):
        for i, row in enumerate(read_rows(file)):
            if not isinstance(row, dict):
                raise UserError(f"{file}: row {i} is not an object")
            doc = prepare_row(row, file, base, families, buckets)
            key = str(doc["id"])
            if key in seen:
                raise UserError(f"{file}: duplicate id {key!r} (also in {seen[key]}); ids are the sample ids")
            seen[key] = file
            docs.append(doc)
    return docs


_SAID: set[tuple[str, str, int]] = set()  # (data root, dataset, rows) already announced in this process


def warn_unknown(docs: Iterable[dict[str, Any]], root: Path) -> None:
    """One line per dataset in no family (its rows belong to no family
    task), said once per data root: every MMLongCite task of a run reads
    the same rows."""
    counts: dict[str, int] = {}
    for d in docs:
        if d.get("family") is None:
            counts[d["dataset"]] = counts.get(d["dataset"], 0) + 1
    for name, n in sorted(counts.items()):
        key = (str(Path(root).resolve()), name, n)
        if key in _SAID:
            continue
        _SAID.add(key)
        print(f"avhb: warning: mmlongcite ({root}): dataset {name!r} is in no family ({n} rows; they join no "
              f"family task): add it to dataset_kwargs.families", file=sys.stderr)


def warn_missing_images(docs: list[dict[str, Any]], root: Path, where: str) -> None:
    paths = {u["image"] for d in docs for u in d["context"] if u.get("type") == "image"}
    missing = sorted(p for p in paths if not (root / p).is_file())
    if missing:
        print(f"avhb: warning: mmlongcite ({where}): {len(missing)} of {len(paths)} images missing under {root} "
              f"(e.g. {missing[0]}); their samples fail with a media error", file=sys.stderr)
