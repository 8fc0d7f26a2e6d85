"""MMLongCite hooks: the loader, the prompt, and the answer split.

Prompt (every family, one system prompt, ``prompts/system.txt``): the
context units numbered 1-based in context order, a text unit as
``[i] text``, an image unit as an image part labelled ``[i]`` (HR tasks:
one labelled image per grid, see hr.py), then the question with its
options and instruction as the row gives them.  Units are never dropped or
merged (citations would shift): a sample whose text and images do not fit
the model's context fails alone with the budget's message (the core's
image budget), and so does a sample with a missing image.

The answer: statements, each ending with at most 3 citations ``[i]``, then
``Final answer: ...`` on the last line.  :func:`split_response` cuts a
reply into the statements (what the citation metric parses) and the final
answer (what ``cor`` judges); a reasoning block ``<think>...</think>`` is
removed first.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from avhb import Filter, ImagePart, Message, SampleError, SampleRecord, ScoreContext, TextPart, UserError
from avhb.plugins.metrics import FINAL_ANSWER, final_answer, strip_citations

from . import data, hr

PACK = Path(__file__).resolve().parent
_THINK = re.compile(r"^.*</think>", re.S)


@lru_cache(maxsize=None)
def prompt(name: str) -> str:
    return (PACK / "prompts" / name).read_text(encoding="utf-8").strip()


# ---------------------------------------------------------------- loading


def load(root: Path, config: dict[str, Any]) -> list[dict[str, Any]]:
    """``data_loader`` hook.  ``dataset_kwargs``: ``family`` (one of the four,
    or ``all``), ``hr`` (``none``, ``easy`` or ``hard``), ``families``,
    ``buckets``, ``hr_datasets`` (see data.py and hr.py)."""
    kw = config.get("dataset_kwargs") or {}
    families = data.family_table(kw.get("families"))
    buckets = data.parse_buckets(kw.get("buckets"))
    family = str(kw.get("family", "all"))
    level = str(kw.get("hr", "none"))
    if family != "all" and family not in data.FAMILIES:
        raise UserError(f"mmlongcite: dataset_kwargs.family {family!r} is not one of {', '.join(data.FAMILIES)} or all")
    root = Path(root)
    base = root.parent if root.is_file() else root
    docs = data.load_rows(root, families, buckets)
    where = config.get("task", "mmlongcite")
    data.warn_unknown(docs, base)
    if level != "none":
        docs = load_hr(base, docs, level, kw.get("hr_datasets") or [], families, buckets)
    if family != "all":
        docs = [d for d in docs if d["family"] == family]
    data.warn_missing_images(docs, base, where)
    return docs


def load_hr(root: Path, originals: list[dict[str, Any]], level: str, hr_datasets: list[str],
            families: dict[str, str], buckets: list[data.Bucket]) -> list[dict[str, Any]]:
    """The HR rows of ``level`` (hr.py): shipped ones joined to their
    originals, else the originals of ``hr_datasets`` with grids to build."""
    per_grid = hr.level_spec(level)["per_grid"]
    folder = root / data.HR_DIR / level
    shipped = folder.is_dir() and any(p.suffix in (".json", ".jsonl") for p in folder.iterdir())
    by_id = {str(d["id"]): d for d in originals}
    out = []
    if shipped:
        for file in data.row_files(folder, Path(".")):
            for row in data.read_rows(file):
                key = str(row.get("id"))
                original = by_id.get(key)
                if original is None:
                    out.append({**row, "id": row.get("id"), "context": [], "dataset": "(unknown)", "family": None,
                                "length_bucket": None, "task": "", "hr_level": level, "hr_source": "shipped",
                                "hr_error": f"HR row id {key} ({file.name}) has no original row in "
                                            f"{data.DATA_DIR}"})
                    continue
                plan = hr.layout(original["context"], per_grid)
                hr_context = [dict(u, image=data.resolve_image(root, u["image"])) if u.get("type") == "image"
                              else dict(u) for u in row.get("context") or []]
                problem = hr.attach_shipped(plan, hr_context)
                doc = {**original, "hr_level": level, "hr_source": "shipped", "hr_layout": plan}
                if problem:
                    doc["hr_error"] = f"HR row id {key} ({file.name}): {problem}"
                out.append(doc)
        return out
    wanted = {data.norm(n) for n in hr_datasets}
    return [{**d, "hr_level": level, "hr_source": "built", "hr_layout": hr.layout(d["context"], per_grid)}
            for d in originals if data.norm(d["dataset"]) in wanted]


def target(doc: dict[str, Any]) -> str:
    return str(doc.get("ground_truth", "")).strip()


def doc_to_text(doc: dict[str, Any]) -> str:
    return str(doc.get("question_text", ""))


# ---------------------------------------------------------------- prompt


def context_parts(doc: dict[str, Any], root: Path) -> list[Any]:
    """The numbered units as parts (module docstring)."""
    if doc.get("hr_layout") is not None:
        return hr.parts(doc, root)
    parts: list[Any] = []
    for i, unit in enumerate(doc["context"], 1):
        if unit["type"] == "text":
            parts.append(TextPart(f"[{i}] {unit['text']}"))
        else:
            path = Path(unit["image"])
            parts.append(ImagePart(path=str(path if path.is_absolute() else root / path), label=f"[{i}]"))
    return parts


def messages(doc: dict[str, Any], ctx: dict[str, Any]) -> list[Message]:
    """``doc_to_messages`` hook: the system prompt, then one user turn with
    the context units and the question."""
    if doc.get("hr_error"):
        raise SampleError(doc["hr_error"])
    root = Path(ctx["root"])
    root = root.parent if root.is_file() else root
    user = [TextPart(prompt("context_header.txt")), *context_parts(doc, root),
            TextPart(prompt("question.txt").replace("{{question}}", doc_to_text(doc)))]
    return [Message("system", [TextPart(prompt("system.txt"))]), Message("user", user)]


# ---------------------------------------------------------------- the answer


def split_response(text: str | None) -> tuple[str, str | None]:
    """``(statements, final answer)``: the text before the last ``Final
    answer:`` marker and what follows it (citations removed); without a
    marker, the whole reply and None.  A ``<think>`` block is dropped."""
    if not text:
        return "", None
    body = _THINK.sub("", text).strip()
    matches = list(FINAL_ANSWER.finditer(body))
    if not matches:
        return body, None
    last = matches[-1]
    line_start = body.rfind("\n", 0, last.start()) + 1
    answer = final_answer(body[line_start:])
    statements = body[:line_start].strip()
    return statements, (strip_citations(answer).strip() if answer else "") or None


class Statements(Filter):
    """The statements part of the reply (for the citation metric); the
    final answer goes to ``record.meta["final_answer"]`` (for ``cor``)."""

    name = "statements"

    async def apply(self, value: Any, record: SampleRecord, ctx: ScoreContext) -> Any:
        if value is None:
            return None
        statements, answer = split_response(str(value))
        record.meta["final_answer"] = answer
        if answer is None:
            record.meta["final_answer_missing"] = True
        return statements


statements = Statements
