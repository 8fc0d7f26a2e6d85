"""A task at run time: its YAML config plus lazily imported hooks.

Hook failures: a hook that cannot be imported (its module raises, the name
is missing) or a load-time hook that raises (``custom_dataset``, ``data_loader``,
``process_docs``) is a ``UserError`` naming the YAML file and the function;
a per-sample hook that raises (``doc_to_text``, ``doc_to_target``,
``doc_to_choice``, ``doc_to_messages``) fails that sample only, with a
``SampleError`` naming the hook and the exception."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from avhb.data.jsonl_rows import JsonlRows
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
from avhb.taskdef.fewshot import FewshotSettings, settings as fewshot_settings
from avhb.taskdef.prompt import OWN
from avhb.taskdef.reasoning import reasoning_steps
from avhb.taskdef.task_checks import pip_name
from avhb.taskdef.templates import lookup
from avhb.run.task_prompts import TaskPrompts


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
    if _read_by_datasets(docs):
        from avhb.data.media_columns import DatasetRows

        if isinstance(docs, DatasetRows):
            return frozenset(docs.dataset.column_names)
    return frozenset(key for doc in docs for key in doc)


def _read_by_datasets(docs: Any) -> bool:
    """Whether ``docs`` may be what ``datasets`` made (a ``Dataset``, or
    its :class:`~avhb.data.media_columns.DatasetRows`): anything but a
    list or a .jsonl file's rows.  Only such data imports
    :mod:`avhb.data.media_columns`."""
    return not isinstance(docs, (list, JsonlRows))


class Task(TaskPrompts):
    def __init__(self, cfg: TaskConfig, registry: Registry):
        self.cfg = cfg
        self.name = cfg.name
        self.registry = registry
        self._roles: dict[str, JudgeRole] | None = None
        self._splits: dict[tuple, dict[str, list[dict[str, Any]]]] = {}  # a builder task's splits, read once
        self._custom: Mapping[str, Any] | None = None  # what a custom_dataset hook made (made once)
        self.num_fewshot: int | None = None  # --num_fewshot (see with_num_fewshot)
        self.model_name: str | None = None  # the run's backend kind: lmms_eval_specific_kwargs' model entry
        self._memo: dict[tuple, Any] = {}  # per-task settings read once per (setting, num_fewshot, model_name)
        self._hooks: dict[str, Callable] = {}  # hook() imports, one per dotted name
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
    def hook(self, dotted: str) -> Callable:
        """The hook ``dotted`` names, imported once per task (kept on the task, so it goes with it)."""
        try:
            return self._hooks[dotted]
        except KeyError:
            fn = self._hooks[dotted] = self._import_hook(dotted)
            return fn

    def _import_hook(self, dotted: str) -> Callable:
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
                top = exc.name.split(".")[0]
                raise UserError(f"{self.cfg.file}: hook {dotted!r} imports {exc.name}, which is not installed here: "
                                f"install the package that provides {top!r} next to avhb (pip install "
                                f"{pip_name(top)})") from None
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

    def _load_hook_at(self, keypath: tuple, dotted: str, *args: Any, **kwargs: Any) -> Any:
        """Run a load-time hook named at ``keypath``; an exception is a user
        error naming the file and the function."""
        fn = self.hook(dotted)
        try:
            return fn(*args, **kwargs)
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
        ``test_split`` else ``validation_split``): its custom_dataset hook's
        (:meth:`_custom_dataset`), its data loader (called
        with the config's ``test_split`` set to ``split``), a builder
        task's split, or the default loader; then ``process_docs`` (the
        task's, or ``process_docs``: a few-shot pool's), which receives a
        ``datasets.Dataset`` when ``datasets`` read the data (as lm-eval
        passes it), else the list of rows.  Every sample must be a mapping.
        Audio and video columns are decoded by avhb, when a row is read
        (:mod:`avhb.data.media_columns`): such a dataset's rows stay in it
        (:class:`DatasetRows`), not in a list."""
        split = split or eval_split(self.cfg)
        if self._has_hook("custom_dataset"):
            docs = self._custom_dataset(split)
            where = f"{self.cfg.file}: custom_dataset hook {self.cfg.get('custom_dataset')['function']}"
        elif self._has_hook("data_loader"):
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
            from avhb.data.arrow_cache import load_arrow

            docs = load_arrow(source.root, str(self.cfg.get("dataset_path")), split, self.name)
            where = f"task {self.name!r} (datasets' cache {source.root}, split {split!r})"
        else:
            docs = default_loader(source.root, self.cfg, split)
            where = str(source.root)
        if _read_by_datasets(docs):  # a datasets.Dataset's Audio/Video columns: avhb's decoders, not torchcodec
            from avhb.data.media_columns import undecoded

            docs = undecoded(docs)
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

    def _custom_dataset(self, split: str) -> Any:
        """``split`` of what lm-eval's ``custom_dataset`` hook makes, called
        once per task as lm-eval calls it: ``custom_dataset(**metadata,
        **dataset_kwargs)`` (the YAML's metadata; lmms-eval's list of
        mappings read as their union), returning a mapping of split ->
        rows (a ``datasets.DatasetDict`` or a dict of lists)."""
        dotted = self.cfg.get("custom_dataset")["function"]
        if self._custom is None:
            metadata = self.cfg.get("metadata")
            if isinstance(metadata, list):
                metadata = {k: v for item in metadata if isinstance(item, dict) for k, v in item.items()}
            metadata = metadata if isinstance(metadata, dict) else {}
            kwargs = self.cfg.get("dataset_kwargs") or {}
            both = sorted(set(metadata) & set(kwargs))
            if both:  # lm-eval's call fails on them too (a keyword given twice)
                raise UserError(f"{self.cfg.file}: custom_dataset hook {dotted}: {', '.join(both)} set in both "
                                "metadata and dataset_kwargs (each is passed to it as a keyword)")
            made = self._load_hook_at(("custom_dataset",), dotted, **metadata, **kwargs)
            if not isinstance(made, Mapping):
                raise UserError(f"{self.cfg.file}: custom_dataset hook {dotted} returned {type(made).__name__}, "
                                "not a mapping of split -> rows")
            self._custom = made
        if split not in self._custom:
            raise UserError(f"task {self.name!r}: split {split!r} is not in what its custom_dataset hook {dotted} "
                            f"made (splits: {', '.join(map(str, self._custom)) or 'none'})")
        return self._custom[split]

    @staticmethod
    def _listed(docs: Any, where: str) -> Sequence[dict[str, Any]]:
        if isinstance(docs, JsonlRows):  # every row was checked when the file was scanned
            return docs
        if _read_by_datasets(docs):
            from avhb.data.media_columns import DatasetRows, is_media_dataset

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
        """The avhb filter chain (``filter_list: [{filter: NAME, ...}]``),
        between the task's reasoning steps (:meth:`_with_reasoning`); empty
        for a task with lm-eval filter pipelines (see filter_pipelines)."""
        if self.filter_pipelines() is not None:
            return []
        out = []
        for entry in self.cfg.get("filter_list") or []:
            options = {k: v for k, v in entry.items() if k not in ("filter", "function")}
            out.append(self._filter(entry["function"] if "function" in entry else entry["filter"],
                                    "function" in entry, options))
        return self._with_reasoning(out)

    def _with_reasoning(self, steps: list[Filter]) -> list[Filter]:
        """``steps`` with the task's reasoning blocks stripped around them
        (:mod:`avhb.taskdef.reasoning`): ``strip_thinking`` first for
        ``auto_strip_thinking``, ``strip_thinking`` with ``reasoning_tags``'
        pairs last (``strip`` for an empty list of pairs)."""
        try:
            where = reasoning_steps(self.cfg.config, self.lmms_conventions)
        except ValueError as exc:
            raise UserError(f"{self.cfg.file}: reasoning_tags: {exc}") from None
        before = [self._filter("strip_thinking", False, {})] if where.before else []
        if where.after is None:
            after = []
        elif where.after:
            after = [self._filter("strip_thinking", False, {"tag_pairs": where.after})]
        else:
            after = [self._filter("strip", False, {})]
        return before + steps + after

    def filter_pipelines(self) -> list[tuple[str, list[Filter]]] | None:
        """lm-eval's filter pipelines (``filter_list: [{name, filter:
        [{function: NAME, ...}, ...]}]``) as (name, steps), or None when the
        task's filter_list is avhb's chain (or absent).  A step's
        ``function`` is a registered filter's name or a hook class; a
        step option written ``!function`` is the hook itself (``custom``'s
        ``filter_fn``).  Each pipeline strips the task's reasoning blocks as
        :meth:`_with_reasoning` says."""
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
            out.append((str(entry["name"]), self._with_reasoning(steps)))
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
