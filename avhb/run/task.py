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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from avhb.data.sources import DataSource, default_loader
from avhb.errors import SampleError, UserError
from avhb.score.judges import JudgeRole
from avhb.score.metric import Filter, Metric
from avhb.registry import Registry, import_path
from avhb.requirements import check_requirements
from avhb.taskdef.config import TaskConfig
from avhb.score.metric_check import entry_options
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


# Metric names the registry does not know are resolved to this registered
# metric (the built-in adapter to Hugging Face evaluate, in plugins/metrics).
FALLBACK_METRIC = "evaluate"


class Task:
    def __init__(self, cfg: TaskConfig, registry: Registry):
        self.cfg = cfg
        self.name = cfg.name
        self.registry = registry
        self._roles: dict[str, JudgeRole] | None = None

    # -- hooks -------------------------------------------------------------
    @functools.lru_cache(maxsize=None)
    def hook(self, dotted: str) -> Callable:
        try:
            return import_path(self.cfg.hook_path(dotted))
        except UserError:
            raise
        except Exception as exc:  # ImportError, AttributeError, or whatever the module raised at import
            raise UserError(f"{self.cfg.file}: hook {dotted!r} cannot be loaded: {_describe(exc)}") from None

    def call_hook(self, key: str, dotted: str, *args: Any) -> Any:
        """A per-sample hook: an exception fails the sample, naming the hook."""
        fn = self.hook(dotted)
        try:
            return fn(*args)
        except (SampleError, UserError):
            raise
        except Exception as exc:
            raise SampleError(f"{key} hook {dotted} failed: {_describe(exc)}") from None

    def _load_hook(self, key: str, *args: Any) -> Any:
        """Run a load-time hook; an exception is a user error naming the file
        and the function."""
        dotted = self.cfg.get(key)["function"]
        fn = self.hook(dotted)
        try:
            return fn(*args)
        except UserError:
            raise
        except Exception as exc:
            raise UserError(f"{self.cfg.file}: {key} hook {dotted} failed: {_describe(exc)}") from None

    def _has_hook(self, key: str) -> bool:
        value = self.cfg.get(key)
        return isinstance(value, dict) and "function" in value

    # -- data --------------------------------------------------------------
    def load_docs(self, source: DataSource) -> list[dict[str, Any]]:
        """The task's samples: its data loader (or the default one), then
        ``process_docs``.  Every sample must be a mapping."""
        if self._has_hook("data_loader"):
            docs = self._load_hook("data_loader", source.root, self.cfg.config)
            where = f"{self.cfg.file}: data_loader hook {self.cfg.get('data_loader')['function']}"
        else:
            docs = default_loader(source.root, self.cfg)
            where = str(source.root)
        docs = self._listed(docs, where)
        if self._has_hook("process_docs"):
            docs = self._listed(self._load_hook("process_docs", docs),
                                f"{self.cfg.file}: process_docs hook {self.cfg.get('process_docs')['function']}")
        return docs

    @staticmethod
    def _listed(docs: Any, where: str) -> list[dict[str, Any]]:
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

    def text(self, doc: dict[str, Any], sample: str | None = None) -> str:
        """``doc_to_text`` as lm-eval reads it: a hook, a field of the sample
        (``doc_to_text: question``), or a template."""
        value = self.cfg.get("doc_to_text")
        if isinstance(value, dict):
            return str(self.call_hook("doc_to_text", value["function"], doc))
        if is_field_name(value) and value in doc:
            return str(doc[value])
        return render(value or "", doc, sample, "doc_to_text")

    def target(self, doc: dict[str, Any], sample: str | None = None) -> Any:
        """``doc_to_target`` as lm-eval reads it: a hook, a field, or a
        template.  With ``doc_to_choice`` set, an integer target (or a
        template that renders to digits) is the index of the right choice
        and becomes that choice's text."""
        value = self.cfg.get("doc_to_target")
        if value is None:
            return None
        if isinstance(value, dict):
            out = self.call_hook("doc_to_target", value["function"], doc)
        elif is_template(value):
            out = render(value, doc, sample, "doc_to_target")
            if out.strip().isdigit() and self.cfg.get("doc_to_choice") is not None:
                out = int(out.strip())
        else:
            out = lookup(doc, value, sample)
        if isinstance(out, int) and not isinstance(out, bool) and self.cfg.get("doc_to_choice") is not None:
            choices = self.choices(doc, sample) or []
            if not 0 <= out < len(choices):
                raise SampleError(f"sample {sample}: doc_to_target index {out} is not one of the "
                                  f"{len(choices)} choices")
            out = choices[out]
        return out

    def choices(self, doc: dict[str, Any], sample: str | None = None) -> list[str] | None:
        """``doc_to_choice`` as lm-eval reads it: a list, a hook, a field
        holding the list, or a template rendering a Python list literal
        (``"{{[option_a, option_b]}}"``)."""
        value = self.cfg.get("doc_to_choice")
        if value is None:
            return None
        if isinstance(value, list):
            return [str(v) for v in value]
        if isinstance(value, dict):
            out = self.call_hook("doc_to_choice", value["function"], doc)
        elif is_template(value):
            text = render(value, doc, sample, "doc_to_choice")
            try:
                out = ast.literal_eval(text.strip())
            except (ValueError, SyntaxError):
                raise SampleError(f"sample {sample}: doc_to_choice rendered {text[:80]!r}, not a list") from None
        else:
            out = lookup(doc, value, sample)
        if out is None:
            return None
        if isinstance(out, dict):  # lm-eval: a mapping's values are the choices
            out = list(out.values())
        if not isinstance(out, (list, tuple)):
            raise SampleError(f"sample {sample}: doc_to_choice gave {type(out).__name__}, not a list")
        return [str(v) for v in out]

    def messages(self, doc: dict[str, Any], context: dict[str, Any]) -> Any:
        """The ``doc_to_messages`` hook's messages for one sample."""
        return self.call_hook("doc_to_messages", self.cfg.get("doc_to_messages")["function"], doc, context)

    # -- scoring -----------------------------------------------------------
    def metrics(self) -> list[Metric]:
        out = []
        for entry in self.cfg.get("metric_list") or []:
            options = entry_options(entry)
            what = f"task {self.name!r}: metric {entry.get('metric') or entry.get('function')}"
            if "function" in entry:
                cls, name = self.hook(entry["function"]), entry["function"].rpartition(".")[2]
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
            for key in ("higher_is_better", "kind", "description"):  # the YAML says what the number is
                if key in entry:
                    setattr(metric, key, entry[key])
            out.append(metric)
        return out

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
        out = []
        for entry in self.cfg.get("filter_list") or []:
            options = {k: v for k, v in entry.items() if k not in ("filter", "function")}
            cls = self.hook(entry["function"]) if "function" in entry else self.registry.load("filters", entry["filter"])
            try:
                out.append(cls(**options))
            except UserError:
                raise
            except Exception as exc:
                raise UserError(f"{self.cfg.file}: filter_list: {entry.get('filter') or entry.get('function')}: "
                                f"{_describe(exc)}") from None
        return out

    def judge_roles(self) -> dict[str, JudgeRole]:
        if self._roles is None:
            self._roles = {name: JudgeRole.from_config(name, cfg or {}, self.cfg.pack_dir)
                           for name, cfg in (self.cfg.get("judges") or {}).items()}
        return self._roles

    @property
    def generation(self) -> dict[str, Any]:
        return dict(self.cfg.get("generation_kwargs") or {})

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


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
