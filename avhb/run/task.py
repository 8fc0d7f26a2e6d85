"""A task at run time: its YAML config plus lazily imported hooks.

Hook failures: a hook that cannot be imported (its module raises, the name
is missing) or a load-time hook that raises (``data_loader``,
``process_docs``) is a ``UserError`` naming the YAML file and the function;
a per-sample hook that raises (``doc_to_text``, ``doc_to_target``,
``doc_to_choice``, ``doc_to_messages``) fails that sample only, with a
``SampleError`` naming the hook and the exception."""
from __future__ import annotations

import ast
import functools
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from avhb.data.jsonl_rows import JsonlRows
from avhb.data.arrow_cache import load_arrow
from avhb.data.media_columns import DatasetRows, is_media_dataset, undecoded
from avhb.data.sources import DataSource, default_loader, eval_split, load_builder
from avhb.errors import SampleError, UserError
from avhb.score.judges import JudgeRole
from avhb.score.aggregations import Aggregation, default_aggregation, default_higher_is_better
from avhb.score.metric import Filter, Metric, SampleRecord, takes_aggregation
from avhb.score.peer_filter import PeerFilter, is_peer_filter, registered_by_peer
from avhb.score.process_results import ProcessResults, Reported
from avhb.registry import Registry, import_path
from avhb.requirements import check_requirements
from avhb.taskdef.config import TaskConfig
from avhb.score.metric_check import entry_options
from avhb.taskdef import lmms
from avhb.taskdef.fewshot import FewshotSettings, settings as fewshot_settings
from avhb.taskdef.prompt import OWN
from avhb.taskdef.templates import is_field_name, is_template, lookup, render


@dataclass(frozen=True)
class Breakdown:
    """One breakdown axis: the doc field, and the separator of a field that
    holds several values in one string (None: a plain field; a list value
    is always read as several values)."""

    field: str
    separator: str | None = None

    def values(self, doc: dict[str, Any]) -> list[str]:
        """The cell keys a doc falls in: its value, or each of its values
        (stripped, empty ones and repeats dropped); ``"(none)"`` when it has
        none."""
        raw = doc.get(self.field)
        if isinstance(raw, (list, tuple)):
            items = [str(v).strip() for v in raw if v is not None]
        elif raw is not None and self.separator and isinstance(raw, str):
            items = [v.strip() for v in raw.split(self.separator)]
        else:
            items = [] if raw is None else [str(raw)]
        items = list(dict.fromkeys(v for v in items if v))
        return items or ["(none)"]


_NO_FIELD = object()  # Task._field: the doc has no such field

# lm-eval's metrics for a task whose metric_list is absent (its DEFAULT_METRIC_REGISTRY; generate_until's
# exact_match is left out: an avhb task without metrics only generates)
DEFAULT_METRICS = {"multiple_choice": ("acc", "acc_norm"), "loglikelihood": ("perplexity", "acc"),
                   "loglikelihood_rolling": ("word_perplexity", "byte_perplexity", "bits_per_byte")}

# Metric names the registry does not know are resolved to this registered
# metric (the built-in adapter to Hugging Face evaluate, in plugins/metrics).
FALLBACK_METRIC = "evaluate"


def _names_parameter(fn: Callable, name: str) -> bool:
    """Whether ``fn``'s signature names the parameter ``name``."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def columns_of(docs: Sequence[dict[str, Any]]) -> frozenset[str] | None:
    """The columns of loaded data, as lm-eval's ``features`` are: a
    Dataset's column names, the union of a list's keys; None for a .jsonl
    file read lazily (its rows are not all held)."""
    if isinstance(docs, JsonlRows):
        return None
    if isinstance(docs, DatasetRows):
        return frozenset(docs.dataset.column_names)
    return frozenset(key for doc in docs for key in doc)


class Task:
    def __init__(self, cfg: TaskConfig, registry: Registry):
        self.cfg = cfg
        self.name = cfg.name
        self.registry = registry
        self._roles: dict[str, JudgeRole] | None = None
        self._splits: dict[tuple, dict[str, list[dict[str, Any]]]] = {}  # a builder task's splits, read once
        self.num_fewshot: int | None = None  # --num_fewshot (see with_num_fewshot)
        self.model_name: str | None = None  # the run's backend kind: lmms_eval_specific_kwargs' model entry
        self._memo: dict[tuple, Any] = {}  # per-task settings read once per (setting, num_fewshot, model_name)
        self.columns: frozenset[str] | None = None  # the loaded data's columns (None: not known; see _field)
        self.output_path: str | None = None  # the run folder (see in_folder)

    def _once(self, what: str, make: Callable[[], Any]) -> Any:
        """``make()``, computed once per setting for the task's current
        ``num_fewshot`` and ``model_name`` (the only state it depends on
        besides the config, which is not changed after loading)."""
        key = (what, self.num_fewshot, self.model_name)
        try:
            return self._memo[key]
        except KeyError:
            value = self._memo[key] = make()
            return value

    # -- hooks -------------------------------------------------------------
    @functools.lru_cache(maxsize=None)
    def hook(self, dotted: str) -> Callable:
        try:
            return import_path(self.cfg.hook_path(dotted))
        except UserError:
            raise
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] in ("lmms_eval", "lm_eval"):
                raise UserError(f"{self.cfg.file}: hook {dotted!r} imports {exc.name}, which is not installed here: "
                                f"install {'lmms-eval' if (exc.name or '').startswith('lmms') else 'lm-eval'} next to avhb, "
                                "or write the hook without it") from None
            if exc.name:  # a package the task's hooks need (egoschema's utils.py imports requests)
                raise UserError(f"{self.cfg.file}: hook {dotted!r} imports {exc.name}, which is not installed here: "
                                f"install the package that provides {exc.name.split('.')[0]!r} next to avhb (for most: "
                                f"pip install {exc.name.split('.')[0]})") from None
            raise UserError(f"{self.cfg.file}: hook {dotted!r} cannot be loaded: {_describe(exc)}") from None
        except Exception as exc:  # ImportError, AttributeError, or whatever the module raised at import
            raise UserError(f"{self.cfg.file}: hook {dotted!r} cannot be loaded: {_describe(exc)}") from None

    def call_hook(self, key: str, dotted: str, *args: Any, **kwargs: Any) -> Any:
        """A per-sample hook: an exception fails the sample, naming the hook."""
        fn = self.hook(dotted)
        try:
            return fn(*args, **kwargs)
        except (SampleError, UserError):
            raise
        except Exception as exc:
            raise SampleError(f"{key} hook {dotted} failed: {_describe(exc)}") from None

    def _load_hook(self, key: str, *args: Any) -> Any:
        """Run the load-time hook ``key`` names (see :meth:`_load_hook_at`)."""
        return self._load_hook_at((key,), self.cfg.get(key)["function"], *args)

    def _load_hook_at(self, keypath: tuple, dotted: str, *args: Any) -> Any:
        """Run a load-time hook named at ``keypath``; an exception is a user
        error naming the file and the function."""
        fn = self.hook(dotted)
        try:
            return fn(*args)
        except UserError:
            raise
        except Exception as exc:
            raise UserError(f"{self.cfg.file}: {'.'.join(keypath)} hook {dotted} failed: {_describe(exc)}") from None

    def _has_hook(self, key: str) -> bool:
        value = self.cfg.get(key)
        return isinstance(value, dict) and "function" in value

    # -- data --------------------------------------------------------------
    def fewshot_pool(self, source: DataSource, docs: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
        """The docs few-shot examples are drawn from (lm-eval's order, see
        avhb.taskdef.fewshot): the few-shot split, else ``samples`` (inline
        or a hook), else the training split, else the validation split,
        else ``docs`` (the evaluated ones)."""
        fs = self.fewshot
        if fs.num <= 0:
            return []
        if fs.split is not None:
            return self.load_docs(source, fs.split, fs.process_docs)
        if fs.samples is not None:
            samples = fs.samples
            if isinstance(samples, dict) and "function" in samples:
                samples = self._load_hook_at(("fewshot_config", "samples"), samples["function"])
            return self._listed(samples, f"{self.cfg.file}: fewshot_config.samples")
        for key in ("training_split", "validation_split"):
            if self.cfg.get(key):
                return self.load_docs(source, self.cfg.get(key), fs.process_docs)
        return docs

    def load_docs(self, source: DataSource, split: str | None = None,
                  process_docs: Any = OWN) -> Sequence[dict[str, Any]]:
        """The task's samples of ``split`` (default: the evaluated one,
        ``test_split`` else ``validation_split``): its data loader (called
        with the config's ``test_split`` set to ``split``), a builder
        task's split, or the default loader; then ``process_docs`` (the
        task's, or ``process_docs``: a few-shot pool's), which receives a
        ``datasets.Dataset`` when ``datasets`` read the data (as lm-eval
        passes it), else the list of rows.  Every sample must be a mapping.
        Audio and video columns are decoded by avhb, when a row is read
        (:mod:`avhb.data.media_columns`): such a dataset's rows stay in it
        (:class:`DatasetRows`), not in a list."""
        split = split or eval_split(self.cfg)
        if self._has_hook("data_loader"):
            config = self.cfg.config if split == eval_split(self.cfg) else {**self.cfg.config, "test_split": split}
            docs = self._load_hook("data_loader", source.root, config)
            where = f"{self.cfg.file}: data_loader hook {self.cfg.get('data_loader')['function']}"
        elif source.kind == "builder":
            key = (str(source.root), str(source.base), source.builder)
            if key not in self._splits:
                self._splits[key] = load_builder(source, self.cfg)
            splits = self._splits[key]
            if split not in splits:
                raise UserError(f"task {self.name!r}: split {split!r} is not in its {source.builder} data "
                                f"(splits: {', '.join(splits) or 'none'}; a single data_files entry is the "
                                "'train' split)")
            docs = splits[split]
            where = f"task {self.name!r} ({source.builder} data, split {split!r})"
        elif source.kind == "datasets-cache":  # a build in datasets' Arrow cache, read as datasets reads it
            docs = load_arrow(source.root, str(self.cfg.get("dataset_path")), split, self.name)
            where = f"task {self.name!r} (datasets' cache {source.root}, split {split!r})"
        else:
            docs = default_loader(source.root, self.cfg, split)
            where = str(source.root)
        docs = undecoded(docs)  # a datasets.Dataset's Audio/Video columns: avhb's decoders, not torchcodec
        hook = self.cfg.get("process_docs") if process_docs is OWN else process_docs
        if isinstance(hook, dict) and "function" in hook:  # a Dataset stays one: lm-eval's hooks call .map/.filter
            docs = self._load_hook_at(("process_docs",), hook["function"],
                                      list(docs) if isinstance(docs, JsonlRows) else docs)
            where = f"{self.cfg.file}: process_docs hook {hook['function']}"
        docs = self._listed(docs, where)
        found = columns_of(docs)
        if found is not None:  # a few-shot split's columns count too
            self.columns = found if self.columns is None else self.columns | found
        return docs

    @staticmethod
    def _listed(docs: Any, where: str) -> Sequence[dict[str, Any]]:
        if isinstance(docs, JsonlRows):  # every row was checked when the file was scanned
            return docs
        if is_media_dataset(docs):  # a Dataset's rows are mappings; read (and decoded) when used
            return DatasetRows(docs)
        try:
            docs = list(docs)
        except TypeError:
            raise UserError(f"{where}: returned {type(docs).__name__}, not a list of samples") from None
        for i, d in enumerate(docs):
            if not isinstance(d, dict):
                raise UserError(f"{where}: sample {i} is {type(d).__name__} {str(d)[:60]!r}, not a mapping of fields")
        return docs

    def doc_id(self, doc: dict[str, Any], index: int) -> str:
        field = self.cfg.get("doc_id")
        if field:
            try:
                return str(lookup(doc, field))
            except SampleError:
                raise UserError(f"task {self.name!r}: doc_id field {field!r} missing in sample {index}") from None
        return str(index)

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

    # -- scoring -----------------------------------------------------------
    @functools.cached_property
    def lmms_conventions(self) -> bool:
        """Whether lmms-eval's conventions apply (the task uses a key only
        lmms-eval has: ``doc_to_visual`` or ``lmms_eval_specific_kwargs``):
        answers reach ``process_results`` stripped, as lmms-eval strips them.
        Read for every request: computed once (the config does not change)."""
        return self.cfg.get("doc_to_visual") is not None or self.cfg.get("lmms_eval_specific_kwargs") is not None

    def metrics(self) -> list[Metric]:
        """The task's metrics: each ``metric_list`` entry, or the task's
        ``process_results`` hook reporting them; with lm-eval filter
        pipelines, once per pipeline, reported as lm-eval names them
        (``exact_match,strict-match``)."""
        pipelines = self.filter_pipelines()
        keys: list[str | None] = [name for name, _ in pipelines] if pipelines is not None else [None]
        if self._has_hook("process_results"):
            return [self._process_results(key) for key in keys]
        entries = self.cfg.get("metric_list")
        if entries is None:  # lm-eval's metrics for an output type, when a task names none
            entries = [{"metric": m} for m in DEFAULT_METRICS.get(self.output_type, ())]
        return [self._metric(entry, key) for key in keys for entry in entries]

    @property
    def output_type(self) -> str:
        return str(self.cfg.get("output_type") or "generate_until")

    def _metric(self, entry: dict[str, Any], filter_key: str | None) -> Metric:
        options = entry_options(entry)
        what = f"task {self.name!r}: metric {entry.get('metric') or entry.get('function')}"
        if "function" in entry:
            cls, name = self.hook(entry["function"]), entry["function"].rpartition(".")[2]
        elif entry.get("hf_evaluate") is True:  # lm-eval: this name from Hugging Face evaluate, not the registry
            cls = None
        elif entry["metric"] in self.registry.entries.get("metrics", {}) and entry["metric"] != FALLBACK_METRIC:
            cls, name = self.registry.load("metrics", entry["metric"]), entry["metric"].rpartition("/")[2]
        else:
            cls = None
        if cls is None:
            metric = self._fallback_metric(entry, options, what)
        else:
            check_requirements(what, getattr(cls, "requires", ()))
            try:
                metric = cls(name=entry.get("name") or name, **options)  # `name:` renames the reported metric
            except UserError as exc:  # e.g. an option the metric does not declare (Metric.accepts)
                raise UserError(f"{self.cfg.file}: metric_list: {entry.get('metric') or entry.get('function')}: "
                                f"{exc}") from None
            except Exception as exc:  # bad options: the metric's constructor refused them
                raise UserError(f"{self.cfg.file}: metric_list: {entry.get('metric') or entry.get('function')}: "
                                f"{_describe(exc)}") from None
        if filter_key is not None:
            metric.name, metric.filter_key = f"{metric.name},{filter_key}", filter_key
        for key in ("higher_is_better", "kind", "description"):  # the YAML says what the number is
            if key in entry:
                setattr(metric, key, entry[key])
        if "aggregation" in entry and entry["aggregation"] != getattr(metric.aggregation, "name", "mean"):
            if not takes_aggregation(type(metric)):
                raise UserError(f"{what}: aggregation {entry['aggregation']!r} cannot apply: this metric computes "
                                "its own aggregate")
            chosen = self._aggregation(entry["aggregation"])
            metric.aggregation = None if chosen.fn is None else chosen
        return metric

    def _aggregation(self, value: Any) -> Aggregation:
        """A metric_list ``aggregation``: a name, or a hook over the values."""
        if isinstance(value, dict):
            fn = self.hook(value["function"])
            if _names_parameter(fn, "args"):  # lmms-eval passes args= (its CLI namespace) when a hook names it
                return Aggregation(value["function"], lambda items: fn(items, args=self.peer_args()))
            return Aggregation(value["function"], fn)
        try:
            return Aggregation.named(str(value))
        except UserError as exc:
            raise UserError(f"{self.cfg.file}: metric_list: {exc}") from None

    def _process_results(self, filter_key: str | None) -> Metric:
        dotted = self.cfg.get("process_results")["function"]
        reported = []
        for e in self.cfg.get("metric_list") or []:
            name = metric_name(e)
            reported.append(Reported(name, self._aggregation(e.get("aggregation", default_aggregation(name))),
                                     e.get("higher_is_better", default_higher_is_better(name))))
        if not reported:
            raise UserError(f"{self.cfg.file}: process_results needs a metric_list naming the keys it returns")

        def call(doc: dict[str, Any], results: list[Any]) -> Any:
            return self.call_hook("process_results", dotted, doc, results)

        return ProcessResults(call, self.results_of, reported, dotted, filter_key)

    def results_of(self, record: SampleRecord) -> list[Any]:
        """What lm-eval passes a task's ``process_results`` as ``results``:
        ``[answer]`` for a generated one (the filtered one; stripped under
        lmms-eval conventions), ``[(loglikelihood, is_greedy), ...]`` per
        choice for multiple_choice (and per context-free choice after
        them), ``[(loglikelihood, is_greedy)]`` for loglikelihood,
        ``[loglikelihood]`` for loglikelihood_rolling."""
        scored = record.outputs.get("loglikelihoods")
        if isinstance(scored, list):
            pairs = [(float(ll), bool(greedy)) for ll, greedy in scored]
            return [ll for ll, _ in pairs] if self.output_type == "loglikelihood_rolling" else pairs
        value = record.extracted if record.extracted is not None else record.response
        if self.lmms_conventions:
            value = value.strip() if isinstance(value, str) else "" if value is None else value
        return [value]

    def _fallback_metric(self, entry: dict[str, Any], options: dict[str, Any], what: str) -> Metric:
        """A metric name avhb does not register (``rouge``), or one under
        ``evaluate/`` (``evaluate/sacrebleu``, ``evaluate/metrics/mine.py``),
        is the metric registered as ``evaluate`` with ``module`` = that name
        (``metric: evaluate`` takes ``module:`` from the entry) and the
        task's folder for relative module paths (lm-eval's fallback to
        ``evaluate.load``).  Without that metric, an unknown name is the
        registry's error."""
        name = entry["metric"]
        explicit = name == FALLBACK_METRIC or name.startswith(FALLBACK_METRIC + "/")
        module = options.pop("module", None) if name == FALLBACK_METRIC else \
            name[len(FALLBACK_METRIC) + 1:] if explicit else name
        if FALLBACK_METRIC not in self.registry.entries.get("metrics", {}):
            self.registry.path("metrics", name)  # raises: unknown metric (known: ...)
        try:
            cls = self.registry.load("metrics", FALLBACK_METRIC)
            check_requirements(f"metric {name!r}", getattr(cls, "requires", ()))
            metric = cls(name=entry.get("name"), module=module, base_dir=str(self.pack_dir), **options)
        except UserError as exc:
            if explicit:
                raise UserError(f"{what}: {exc}") from None
            known = ", ".join(n for n in self.registry.names("metrics") if n != FALLBACK_METRIC)
            raise UserError(f"{what}: not an avhb metric (known: {known}), and not loadable through "
                            f"the {FALLBACK_METRIC!r} metric: {exc}") from None
        return metric

    def filters(self) -> list[Filter]:
        """The avhb filter chain (``filter_list: [{filter: NAME, ...}]``);
        empty for a task with lm-eval filter pipelines (see filter_pipelines)."""
        if self.filter_pipelines() is not None:
            return []
        out = []
        for entry in self.cfg.get("filter_list") or []:
            options = {k: v for k, v in entry.items() if k not in ("filter", "function")}
            out.append(self._filter(entry["function"] if "function" in entry else entry["filter"],
                                    "function" in entry, options))
        return out

    def filter_pipelines(self) -> list[tuple[str, list[Filter]]] | None:
        """lm-eval's filter pipelines (``filter_list: [{name, filter:
        [{function: NAME, ...}, ...]}]``) as (name, steps), or None when the
        task's filter_list is avhb's chain (or absent).  A step's
        ``function`` is a registered filter's name or a hook class; a
        step option written ``!function`` is the hook itself (``custom``'s
        ``filter_fn``)."""
        entries = self.cfg.get("filter_list") or []
        lm_eval = [isinstance(e, dict) and isinstance(e.get("filter"), list) for e in entries]
        if not any(lm_eval):
            return None
        if not all(lm_eval):
            raise UserError(f"{self.cfg.file}: filter_list mixes lm-eval pipelines ({{name, filter: [...]}}) with "
                            "avhb filter steps ({filter: NAME}); use one form")
        out = []
        for entry in entries:
            steps = []
            for step in entry["filter"]:
                function = step["function"]
                options = {k: (self.hook(v["function"]) if isinstance(v, dict) and set(v) == {"function"} else v)
                           for k, v in step.items() if k != "function"}
                if isinstance(function, dict):
                    steps.append(self._filter(function["function"], True, options))
                else:
                    steps.append(self._filter(function, False, options))
            out.append((str(entry["name"]), steps))
        return out

    def _filter(self, name: str, hook: bool, options: dict[str, Any]) -> Filter:
        """A filter step: a hook class, a registered avhb filter, or a filter a
        task module registers in a peer's registry (lm-eval's
        ``@register_filter``); a peer's filter class runs through
        :class:`PeerFilter`."""
        if hook:
            cls = self.hook(name)
        elif name in self.registry.entries.get("filters", {}):
            cls = self.registry.load("filters", name)
        else:
            self.import_hooks()  # a task module may register the filter when imported
            cls = registered_by_peer(name)
            if cls is None:
                cls = self.registry.load("filters", name)  # raises: unknown filter (known: ...)
        try:
            made = cls(**options)
        except UserError:
            raise
        except Exception as exc:
            raise UserError(f"{self.cfg.file}: filter_list: {name}: {_describe(exc)}") from None
        return PeerFilter(made, name.rpartition(".")[2]) if is_peer_filter(made) else made

    def import_hooks(self) -> None:
        """Import every hook module the task names (what registers a peer's
        filters and metrics by name)."""
        from avhb.taskdef.task_checks import iter_hooks

        for _, dotted in iter_hooks(self.cfg.config):
            self.hook(dotted)

    def judge_roles(self) -> dict[str, JudgeRole]:
        if self._roles is None:
            self._roles = {name: JudgeRole.from_config(name, cfg or {}, self.cfg.pack_dir)
                           for name, cfg in (self.cfg.get("judges") or {}).items()}
        return self._roles

    def bound_roles(self, predict_only: bool) -> dict[str, JudgeRole]:
        """The judge roles a run binds: every one, or under
        ``--predict_only`` (no metrics) only those a driver asks in its
        loop."""
        roles = self.judge_roles()
        if predict_only:
            roles = {n: r for n, r in roles.items() if r.in_loop and self.cfg.get("driver")}
        return roles

    @property
    def generation(self) -> dict[str, Any]:
        """``generation_kwargs`` with lm-eval's defaults (see lm_generation),
        and lmms-eval's ``model_specific_generation_kwargs`` for the run's
        model (its entry, else ``default``) over them.  A new dict each time
        (callers add to it)."""
        return dict(self._once("generation", self._generation))

    def _generation(self) -> dict[str, Any]:
        out = lm_generation(self.cfg, self.lmms_conventions)[0]
        per_model = self.cfg.get("model_specific_generation_kwargs")
        if isinstance(per_model, dict):
            out.update(per_model.get(self.model_name) or per_model.get("default") or {})
        return out

    def _target_kwargs(self) -> Any:
        """lmms-eval's ``model_specific_target_kwargs`` for the run's model:
        its entry, else ``default`` (None when neither: the hook gets the doc
        alone), as lmms-eval's ConfigurableTask resolves it."""
        per_model = self.cfg.get("model_specific_target_kwargs")
        if not isinstance(per_model, dict):
            return None
        return per_model[self.model_name] if self.model_name in per_model else per_model.get("default")

    @property
    def fewshot(self) -> FewshotSettings:
        return self._once("fewshot", lambda: fewshot_settings(self.cfg, self.num_fewshot))

    def with_num_fewshot(self, num: int | None) -> "Task":
        """This task with ``--num_fewshot`` applied (lm-eval: except a task that sets 0)."""
        self.num_fewshot = num
        return self

    def in_folder(self, folder: str | Path | None) -> "Task":
        """This task for a run writing to ``folder`` (where an lmms-eval
        hook's submission files go: ``peer_args``)."""
        self.output_path = None if folder is None else str(folder)
        return self

    def peer_args(self) -> Any:
        """What lmms-eval passes an aggregation hook as ``args`` (its CLI
        namespace), as far as its hooks read it: ``output_path``, the run
        folder (lmms-eval's ``generate_submission_file`` writes under
        ``<output_path>/submissions``)."""
        import types

        return types.SimpleNamespace(output_path=self.output_path)

    def for_model(self, name: str | None) -> "Task":
        """This task for a run of the backend kind ``name`` (lmms-eval's
        per-model ``lmms_eval_specific_kwargs``)."""
        self.model_name = name
        return self

    @property
    def repeats(self) -> int:
        return int(self.cfg.get("repeats", 1))

    @property
    def breakdown(self) -> list[Breakdown]:
        """The ``breakdown`` fields: a name, or ``{field, separator}`` for a
        multi-valued field written as one string (CURVE's ``skills``)."""
        out = []
        for entry in self.cfg.get("breakdown") or []:
            if isinstance(entry, dict):
                out.append(Breakdown(str(entry["field"]), entry.get("separator")))
            else:
                out.append(Breakdown(str(entry)))
        return out

    @property
    def pack_dir(self) -> Path:
        return self.cfg.pack_dir


def metric_name(entry: dict[str, Any]) -> str:
    """A metric_list entry's name: ``metric``, or the function's name for
    lm-eval's ``metric: !function module.fn``."""
    metric = entry.get("metric")
    if isinstance(metric, dict) and "function" in metric:
        return str(metric["function"]).rpartition(".")[2]
    return str(metric if metric is not None else entry.get("function", "")).rpartition(".")[2] \
        if metric is None else str(metric)


MAX_TOKEN_KEYS = ("max_tokens", "max_gen_toks", "max_new_tokens", "max_completion_tokens")


def lm_generation(cfg: TaskConfig, lmms: bool = False) -> tuple[dict[str, Any], list[str]]:
    """A task's generation settings with lm-eval's defaults (Task.generation),
    and the defaults it filled in (said at run time).  A ``generate_until``
    task (the default output type) gets, for each setting it leaves out,
    what lm-eval's API models send: ``temperature: 0``, ``max_gen_toks:
    256`` and ``until: [fewshot_delimiter]`` (avhb's ``stop`` counts as an
    ``until``); under lmms-eval conventions what lmms-eval's OpenAI model
    sends: ``temperature: 0``, ``max_new_tokens: 1024`` and no stop
    sequence.  A setting written ``null`` is left to the backend; ``until:
    []`` is no stop sequence."""
    given = cfg.get("generation_kwargs")
    out: dict[str, Any] = dict(given or {})
    added: list[str] = []
    if cfg.get("output_type", "generate_until") == "generate_until":
        if "temperature" not in out:
            out["temperature"] = 0.0
            added.append("temperature 0")
        if not any(k in out for k in MAX_TOKEN_KEYS):
            key, value = ("max_new_tokens", 1024) if lmms else ("max_gen_toks", 256)
            out[key] = value
            added.append(f"{key} {value}")
        if "until" not in out and "stop" not in out and not lmms:
            delimiter = cfg.get("fewshot_delimiter", "\n\n")
            out["until"] = [delimiter]
            added.append(f"until [{delimiter!r}]")
    if isinstance(out.get("temperature"), int) and not isinstance(out.get("temperature"), bool):
        out["temperature"] = float(out["temperature"])
    if out.get("until") == []:
        out.pop("until")
    return {k: v for k, v in out.items() if v is not None}, added


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
