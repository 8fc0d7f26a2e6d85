"""What a request is built from: the seam between building requests
(:mod:`avhb.taskdef.requests`) and the task at run time
(:class:`avhb.run.task.Task`, which satisfies it).

The request builder sits below the run in the layers (docs/design.md), so it
cannot import ``Task``; it names what it reads of one here instead, and mypy
checks that ``Task`` provides it wherever a ``Task`` is passed in.  Each
member is the task's reading of one lm-eval/lmms-eval key for a document:
``doc_to_text`` (``text``), ``doc_to_target`` (``target``), ``doc_to_choice``
(``choices``), ``description``, ``gen_prefix``, partial evaluation
(``partial_index``), lm-eval's ``doc_to_image``/``doc_to_audio``
(``lm_eval_media``), lmms-eval's ``doc_to_visual`` (``visuals``) and
``doc_to_messages`` (``messages``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from avhb.taskdef.config import TaskConfig
from avhb.taskdef.fewshot import FewshotSettings


class PromptSource(Protocol):
    """A task as the request builder reads it (module docstring)."""

    cfg: TaskConfig
    name: str

    @property
    def output_type(self) -> str: ...

    @property
    def lmms_conventions(self) -> bool: ...

    @property
    def generation(self) -> dict[str, Any]: ...

    @property
    def fewshot(self) -> FewshotSettings: ...

    def text(self, doc: dict[str, Any], sample: str | None = None, spec: Any = ...) -> str: ...

    def target(self, doc: dict[str, Any], sample: str | None = None, spec: Any = ...,
               choice_spec: Any = ...) -> Any: ...

    def choices(self, doc: dict[str, Any], sample: str | None = None, spec: Any = ...) -> list[str] | None: ...

    def partial_index(self, doc: dict[str, Any], sample: str | None = None) -> int | None: ...

    def gen_prefix(self, doc: dict[str, Any], sample: str | None = None, spec: Any = ...) -> str | None: ...

    def description(self, doc: dict[str, Any], sample: str | None = None) -> str: ...

    def lm_eval_media(self, doc: dict[str, Any], root: Path, sample: str | None = None) -> list[Any]: ...

    def visuals(self, doc: dict[str, Any], root: Path, sample: str | None = None) -> list[Any]: ...

    def messages(self, doc: dict[str, Any], context: dict[str, Any]) -> Any: ...
