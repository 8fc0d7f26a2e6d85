"""The task's readings of a document through its prompt keys, as lm-eval
and lmms-eval read them: ``doc_to_text`` (:meth:`TaskPrompts.text`),
``doc_to_target`` (``target``, with lmms-eval's
``model_specific_target_kwargs``), ``doc_to_choice`` (``choices``), the right
choice (``gold``), partial evaluation (``partial_index``), ``gen_prefix``,
``description``, lm-eval's ``doc_to_image``/``doc_to_audio``
(``lm_eval_media``), lmms-eval's ``doc_to_visual`` (``visuals``) and
``doc_to_messages`` (``messages``).

A mixin of :class:`avhb.run.task.Task`, which holds the config, the hooks
and the run's settings these read; the request builder reads a
task through :class:`avhb.taskdef.prompt_source.PromptSource`, which these
methods make up.  A bare name is a field when the loaded data has that
column (:meth:`TaskPrompts._field`: lm-eval decides by the dataset's
columns), otherwise a template.
"""
from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from avhb.errors import SampleError
from avhb.taskdef import lmms
from avhb.taskdef.config import TaskConfig
from avhb.taskdef.prompt import OWN
from avhb.taskdef.templates import is_field_name, is_template, lookup, render

_NO_FIELD = object()  # TaskPrompts._field: the data has no such column


class TaskPrompts:
    """The prompt readings (module docstring), mixed into ``Task``, which
    holds what they read (declared here for the type checker only)."""

    if TYPE_CHECKING:
        cfg: TaskConfig
        name: str
        columns: frozenset[str] | None  # the loaded data's columns (None: not known)
        model_name: str | None

        def hook(self, dotted: str) -> Callable: ...

        def call_hook(self, key: str, dotted: str, *args: Any, **kwargs: Any) -> Any: ...

        def _once(self, what: str, make: Callable[[], Any]) -> Any: ...

        @property
        def lmms_conventions(self) -> bool: ...

        @property
        def output_type(self) -> str: ...

    def text(self, doc: dict[str, Any], sample: str | None = None, spec: Any = OWN) -> str:
        """``doc_to_text`` as lm-eval reads it: a hook, a field of the sample
        (``doc_to_text: question``), or a template.  ``spec``: another
        doc_to_text (a few-shot example's, ``fewshot_config.doc_to_text``)."""
        value = self.cfg.get("doc_to_text") if spec is OWN else spec
        if isinstance(value, dict):
            kwargs = self.lmms_kwargs
            args = (doc,) if kwargs is None else (doc, kwargs)  # lmms-eval: doc_to_text(doc, lmms_eval_specific_kwargs)
            return str(self.call_hook("doc_to_text", value["function"], *args))
        if is_field_name(value) and value in doc:
            return str(doc[value])
        return self._render(value or "", doc, sample, "doc_to_text")

    def target(self, doc: dict[str, Any], sample: str | None = None, spec: Any = OWN, choice_spec: Any = OWN) -> Any:
        """``doc_to_target`` as lm-eval reads it: a hook, a field, or a
        template (one rendering a Python list, ``[...]``, is that list of
        targets).  With ``doc_to_choice`` set, an integer target (or a
        template that renders to digits) is the index of the right choice
        and becomes that choice's text.  ``spec`` / ``choice_spec``: another
        doc_to_target / doc_to_choice (a few-shot example's)."""
        value = self.cfg.get("doc_to_target") if spec is OWN else spec
        has_choices = (self.cfg.get("doc_to_choice") if choice_spec is OWN else choice_spec) is not None
        if value is None:
            return None
        out = self._raw_target(value, doc, sample, has_choices)
        if isinstance(out, int) and not isinstance(out, bool) and has_choices:
            choices = self.choices(doc, sample, choice_spec) or []
            if not 0 <= out < len(choices):
                raise SampleError(f"sample {sample}: doc_to_target index {out} is not one of the "
                                  f"{len(choices)} choices")
            out = choices[out]
        return out

    def _raw_target(self, value: Any, doc: dict[str, Any], sample: str | None, has_choices: bool) -> Any:
        """``doc_to_target`` before an index becomes its choice: an integer
        or a list as written, a hook's value, a field of the doc, else a
        template (a string naming no field is lm-eval's literal); a template
        rendering digits is an index when there are choices, one rendering
        ``[...]`` is that list."""
        if isinstance(value, (int, list)) and not isinstance(value, bool):
            return value
        if isinstance(value, dict):
            kwargs = self._once("target_kwargs", self._target_kwargs)
            args = (doc,) if kwargs is None else (doc, kwargs)  # lmms-eval: doc_to_target(doc, model_specific_target_kwargs)
            return self.call_hook("doc_to_target", value["function"], *args)
        if not is_template(value):
            found = self._field(str(value), doc, sample)
            if found is not _NO_FIELD:
                return found
        out = self._render(str(value), doc, sample, "doc_to_target")
        if out.strip().isdigit() and has_choices:
            return int(out.strip())
        if len(out) >= 2 and out[0] == "[" and out[-1] == "]":
            try:
                return ast.literal_eval(out)
            except (SyntaxError, ValueError):
                pass
        return out

    def _field(self, name: str, doc: dict[str, Any], sample: str | None = None) -> Any:
        """A field of the doc by (dotted) name, or ``_NO_FIELD`` for a string
        that names no column of the task's data.  lm-eval decides by the
        dataset's columns (``self.features``), not by the one sample: a
        string naming a column is that column (a sample lacking it is a
        ``SampleError``), any other is a template (a literal).  Where the
        columns are not known (a .jsonl file read lazily, a doc given
        directly), a bare field name is a field."""
        if name in doc:
            return doc[name]
        if not is_field_name(name):
            return _NO_FIELD
        if self.columns is not None and name.split(".", 1)[0] not in self.columns:
            return _NO_FIELD
        return lookup(doc, name, sample)

    def choices(self, doc: dict[str, Any], sample: str | None = None, spec: Any = OWN) -> list[str] | None:
        """``doc_to_choice`` as lm-eval reads it: a list, a hook, a field
        holding the list, or a template rendering a Python list literal
        (``"{{[option_a, option_b]}}"``).  ``spec``: another doc_to_choice."""
        value = self.cfg.get("doc_to_choice") if spec is OWN else spec
        if value is None:
            return None
        if isinstance(value, list):
            return [str(v) for v in value]
        if isinstance(value, dict) and "function" in value:
            out = self.call_hook("doc_to_choice", value["function"], doc)
        elif isinstance(value, dict):  # lm-eval: a mapping's values are the choices
            out = list(value.values())
        elif is_template(value):
            text = self._render(value, doc, sample, "doc_to_choice")
            try:
                out = ast.literal_eval(text.strip())
            except (ValueError, SyntaxError):
                raise SampleError(f"sample {sample}: doc_to_choice rendered {text[:80]!r}, not a list") from None
        else:
            out = self._field(str(value), doc, sample)
            if out is _NO_FIELD:  # lm-eval: a string naming no column is a template rendering a list literal
                try:
                    out = ast.literal_eval(str(value).strip())
                except (ValueError, SyntaxError):
                    raise SampleError(f"sample {sample}: doc_to_choice {str(value)[:80]!r} names no column "
                                      "of the data and is not a list") from None
        if out is None:
            return None
        if isinstance(out, dict):  # lm-eval: a mapping's values are the choices
            out = list(out.values())
        if not isinstance(out, (list, tuple)):
            raise SampleError(f"sample {sample}: doc_to_choice gave {type(out).__name__}, not a list")
        return [str(v) for v in out]

    def partial_index(self, doc: dict[str, Any], sample: str | None = None) -> int | None:
        """lm-eval's partial evaluation (its ``multiple_input``): for a
        multiple_choice task whose ``doc_to_text`` gives an integer (a hook
        returning one, an integer in the YAML, a field holding one, or a
        template rendering digits), that integer is the index of the right
        choice, and the choices are the contexts scored before the target
        (winogrande).  None for every other task and doc."""
        if self.output_type != "multiple_choice" or self.cfg.get("doc_to_choice") is None:
            return None
        value = self.cfg.get("doc_to_text")
        if isinstance(value, dict):
            out = self.call_hook("doc_to_text", value["function"], doc)
        elif isinstance(value, int) and not isinstance(value, bool):
            out = value
        elif isinstance(value, str) and is_field_name(value) and value in doc:
            out = doc[value]
        elif isinstance(value, str):
            text = self._render(value, doc, sample, "doc_to_text")
            out = int(text) if text.isdigit() else None
        else:
            out = None
        return out if isinstance(out, int) and not isinstance(out, bool) else None

    def gen_prefix(self, doc: dict[str, Any], sample: str | None = None, spec: Any = OWN) -> str | None:
        """lm-eval's ``gen_prefix`` for a doc: a field of it, or a template
        over it (``spec``: a few-shot example's ``fewshot_config.gen_prefix``;
        default the task's); None when the task sets none."""
        value = self.cfg.get("gen_prefix") if spec is OWN else spec
        if value is None:
            return None
        if isinstance(value, str) and value in doc:
            return str(doc[value])
        return self._render(str(value), doc, sample, "gen_prefix")

    def lm_eval_media(self, doc: dict[str, Any], root: Path, sample: str | None = None) -> list[Any]:
        """lm-eval's ``doc_to_image`` and ``doc_to_audio`` as message parts,
        before the text: each a field (a PIL image, audio ``{array,
        sampling_rate}``, or a list of them), a template rendering a Python
        list, a list of those, or a hook."""
        out: list[Any] = []
        for key in ("doc_to_image", "doc_to_audio"):
            value = self.cfg.get(key)
            if value is None:
                continue
            found = self._lm_eval_visual(key, value, doc, sample)
            out += lmms.visual_parts(found if isinstance(found, list) else [found], root, str(sample))
        return out

    def _lm_eval_visual(self, key: str, value: Any, doc: dict[str, Any], sample: str | None) -> Any:
        if isinstance(value, list):
            found = [self._lm_eval_visual(key, v, doc, sample) for v in value]
            return [f for item in found if item is not None for f in (item if isinstance(item, list) else [item])]
        if isinstance(value, dict) and "function" in value:
            return self.call_hook(key, value["function"], doc)
        if isinstance(value, str) and value in doc:
            return doc[value]
        if isinstance(value, str):
            text = self._render(value, doc, sample, key)
            try:
                return ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise SampleError(f"sample {sample}: {key} rendered {text[:80]!r}, not a field or a list") from None
        return None

    def gold(self, doc: dict[str, Any], choices: list[str], sample: str | None = None) -> int | list[int]:
        """A multiple_choice doc's right choice as lm-eval reads it: the
        target's index (an integer, or the position of its text among the
        choices; -1 when it is none of them), or a list of them; under
        partial evaluation the index ``doc_to_text`` gives (partial_index)."""
        partial = self.partial_index(doc, sample)
        if partial is not None:
            return partial if 0 <= partial < len(choices) else -1
        value = self.cfg.get("doc_to_target")
        raw = self._raw_target(value, doc, sample, True) if value is not None else None

        def index(one: Any) -> int:
            if isinstance(one, int) and not isinstance(one, bool):
                return one if 0 <= one < len(choices) else -1
            return choices.index(str(one)) if str(one) in choices else -1

        return [index(v) for v in raw] if isinstance(raw, list) else index(raw)

    def _render(self, template: str, doc: dict[str, Any], sample: str | None, where: str) -> str:
        """A template of the task; lmms-eval conventions drop its last
        newline, as lmms-eval's Jinja environment does (lm-eval keeps it)."""
        return render(template, doc, sample, where, trailing_newline=not self.lmms_conventions)

    def description(self, doc: dict[str, Any], sample: str | None = None) -> str:
        """lm-eval's ``description``: a field of the evaluated doc, or a
        template over it; sent before the prompt (module prompt.py)."""
        value = self.cfg.get("description")
        if not value:
            return ""
        if is_field_name(value) and value in doc:
            return str(doc[value])
        return self._render(str(value), doc, sample, "description")

    def messages(self, doc: dict[str, Any], context: dict[str, Any]) -> Any:
        """The ``doc_to_messages`` hook's messages for one sample: avhb's
        ``hook(doc, ctx)`` returning Messages, or lmms-eval's ``hook(doc)``
        / ``hook(doc, lmms_eval_specific_kwargs=...)`` returning its chat
        form (avhb.taskdef.lmms)."""
        dotted = self.cfg.get("doc_to_messages")["function"]
        fn = self.hook(dotted)
        if not lmms.takes_kwargs(fn):
            return self.call_hook("doc_to_messages", dotted, doc, context)
        kwargs = self.lmms_kwargs
        if kwargs is None or len(inspect.signature(fn).parameters) == 1:
            out = self.call_hook("doc_to_messages", dotted, doc)
        else:
            out = self.call_hook("doc_to_messages", dotted, doc, lmms_eval_specific_kwargs=kwargs)
        if isinstance(out, list) and all(isinstance(m, dict) for m in out):
            return lmms.chat_messages(out, Path(context["root"]), str(context.get("sample", "")))
        return out

    @property
    def lmms_kwargs(self) -> dict[str, Any] | None:
        """``lmms_eval_specific_kwargs`` resolved for the run's model (avhb.taskdef.lmms)."""
        return lmms.resolve_kwargs(self.cfg.get("lmms_eval_specific_kwargs"), self.model_name)

    def visuals(self, doc: dict[str, Any], root: Path, sample: str | None = None) -> list[Any]:
        """lmms-eval's ``doc_to_visual`` as message parts (avhb.taskdef.lmms)."""
        value = self.cfg.get("doc_to_visual")
        if value is None:
            return []
        if isinstance(value, dict):
            fn = self.hook(value["function"])
            kwargs = self.lmms_kwargs
            args = (doc, kwargs) if kwargs is not None and lmms.takes_two(fn) else (doc,)
            out = self.call_hook("doc_to_visual", value["function"], *args)
        else:
            out = [lookup(doc, str(value), sample)]
        return lmms.visual_parts(out, root, str(sample))

    def _target_kwargs(self) -> Any:
        """lmms-eval's ``model_specific_target_kwargs`` for the run's model:
        its entry, else ``default`` (None when neither: the hook gets the doc
        alone), as lmms-eval's ConfigurableTask resolves it."""
        per_model = self.cfg.get("model_specific_target_kwargs")
        if not isinstance(per_model, dict):
            return None
        return per_model[self.model_name] if self.model_name in per_model else per_model.get("default")

