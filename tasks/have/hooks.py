"""Task hooks of the static HAVE tasks: the loader (shared with the
interaction tasks), the request, the target and the options.

``load(root, config)`` selects the items of ``dataset_kwargs.subtask``
(order kept).  ``dataset_kwargs.kind`` is ``static`` or ``interaction``: an
item whose level does not match its task's kind is rejected.
``dataset_kwargs.instruction``: ``spoken`` (SI, default: an AaI item's
instruction is its audio) or ``text`` (TI, the ``have_<subtask>_ti`` tasks:
``instruction_text`` replaces the audio).  A rejected item (see
:mod:`.items`) fails its sample with its one-line reason.

The request (INFERRED wording, the same for every model; the paper publishes
no prompt) is one user turn: the images, then the audio (an AaI item's
spoken instruction under SI; an AaC item's context audio), then the text:

* AaI, SI: ``The audio is a spoken instruction about the image. Follow it.``
* AaI, TI: the ``instruction_text``;
* AaC: the ``question``;

then the options (``A. cat`` lines; for ``options_audio`` a ``A.`` label
before each clip) and the answer line: ``Answer with the option's letter
from the given choices directly.`` (MCQ) or ``Answer concisely.`` (open).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from avhb import AudioPart, ImagePart, Message, SampleError, TextPart, UserError

from .items import LETTERS, read_items

SPOKEN_PROMPT = "The audio is a spoken instruction about the image. Follow it."
MCQ_LINE = "Answer with the option's letter from the given choices directly."
OPEN_LINE = "Answer concisely."
KINDS = ("static", "interaction")
INSTRUCTIONS = ("spoken", "text")


def load(root: Path, config: dict[str, Any]) -> list[dict[str, Any]]:
    """``data_loader`` hook (module docstring)."""
    kwargs = config.get("dataset_kwargs") or {}
    subtask = kwargs.get("subtask")
    kind = kwargs.get("kind", "static")
    instruction = kwargs.get("instruction", "spoken")
    if not subtask:
        raise UserError(f"task {config.get('task')!r}: dataset_kwargs.subtask is required")
    if kind not in KINDS:
        raise UserError(f"task {config.get('task')!r}: dataset_kwargs.kind {kind!r} is not one of {KINDS}")
    if instruction not in INSTRUCTIONS:
        raise UserError(f"task {config.get('task')!r}: dataset_kwargs.instruction {instruction!r} is not one of "
                        f"{INSTRUCTIONS}")
    docs = []
    for item in read_items(Path(root)):
        if item["subtask"] != subtask:
            continue
        doc = dict(item, instruction_mode=instruction)
        if not doc["_rejected"] and (doc.get("level") == "interaction") != (kind == "interaction"):
            doc["_rejected"] = (f"{doc['_where']}: item {doc['id']!r}: level {doc.get('level')!r} does not fit "
                                f"the {kind} task of subtask {subtask!r}")
        docs.append(doc)
    return docs


def check(doc: dict[str, Any]) -> None:
    """``SampleError`` with the rejection reason of a rejected item."""
    if doc.get("_rejected"):
        raise SampleError(doc["_rejected"])


def messages(doc: dict[str, Any], ctx: dict[str, Any]) -> list[Message]:
    """``doc_to_messages`` hook (module docstring)."""
    check(doc)
    parts: list[Any] = [ImagePart(path=p) for p in doc["images"]]
    aai = doc["role"] == "AaI"
    spoken = aai and doc["instruction_mode"] == "spoken"
    if doc.get("audio") and (spoken or not aai):
        parts.append(AudioPart(path=doc["audio"]))
    if spoken:
        lead = SPOKEN_PROMPT
    elif aai:
        lead = doc["instruction_text"].strip()
    else:
        lead = doc["question"].strip()
    mcq = doc["answer_type"] == "mcq"
    if mcq and doc.get("options_audio"):
        parts.append(TextPart(f"{lead}\nOptions:"))
        for letter, clip in zip(LETTERS, doc["options_audio"]):
            parts += [TextPart(f"{letter}."), AudioPart(path=clip)]
        parts.append(TextPart(MCQ_LINE))
    elif mcq:
        options = "\n".join(f"{L}. {o}" for L, o in zip(LETTERS, doc["options"]))
        parts.append(TextPart(f"{lead}\n{options}\n{MCQ_LINE}"))
    else:
        parts.append(TextPart(f"{lead}\n{OPEN_LINE}"))
    return [Message("user", parts)]


def target(doc: dict[str, Any]) -> str:
    """``doc_to_target`` hook: the answer (an option letter or text for MCQ,
    the reference for open answers)."""
    check(doc)
    return doc["answer"]


def choices(doc: dict[str, Any]) -> list[str] | None:
    """``doc_to_choice`` hook: the option texts of an MCQ item (sent as
    ``Request.choices``, for option-scoring backends), else None."""
    if doc.get("_rejected") or doc.get("answer_type") != "mcq":
        return None
    return list(doc["options"])
