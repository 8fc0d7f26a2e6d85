"""A task at run time: its YAML config plus lazily imported hooks.

Hook failures: a hook that cannot be imported (its module raises, the name
is missing) or a load-time hook that raises (``data_loader``,
``process_docs``) is a ``UserError`` naming the YAML file and the function;
a per-sample hook that raises (``doc_to_text``, ``doc_to_target``,
``doc_to_choice``, ``doc_to_messages``) fails that sample only, with a
``SampleError`` naming the hook and the exception."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable

from avhb.data.sources import DataSource, default_loader
from avhb.errors import SampleError, UserError
from avhb.score.judges import JudgeRole
from avhb.score.metric import Filter, Metric
from avhb.registry import Registry, import_path
from avhb.requirements import check_requirements
from avhb.taskdef.config import TaskConfig
from avhb.taskdef.templates import is_template, lookup, render


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

    def text(self, doc: dict[str, Any]) -> str:
        value = self.cfg.get("doc_to_text")
        if isinstance(value, dict):
            return str(self.call_hook("doc_to_text", value["function"], doc))
        return render(value or "", doc)

    def target(self, doc: dict[str, Any]) -> Any:
        value = self.cfg.get("doc_to_target")
        if value is None:
            return None
        if isinstance(value, dict):
            return self.call_hook("doc_to_target", value["function"], doc)
        if is_template(value):
            return render(value, doc)
        return lookup(doc, value)

    def choices(self, doc: dict[str, Any]) -> list[str] | None:
        value = self.cfg.get("doc_to_choice")
        if value is None:
            return None
        if isinstance(value, list):
            return [str(v) for v in value]
        if isinstance(value, dict):
            out = self.call_hook("doc_to_choice", value["function"], doc)
        else:
            out = lookup(doc, value)
        if out is None:
            return None
        if isinstance(out, (str, bytes)) or not hasattr(out, "__iter__"):
            raise SampleError(f"doc_to_choice gave {type(out).__name__} {str(out)[:60]!r}, not a list of choices")
        return [str(v) for v in out]

    def messages(self, doc: dict[str, Any], context: dict[str, Any]) -> Any:
        """The ``doc_to_messages`` hook's messages for one sample."""
        return self.call_hook("doc_to_messages", self.cfg.get("doc_to_messages")["function"], doc, context)

    # -- scoring -----------------------------------------------------------
    def metrics(self) -> list[Metric]:
        out = []
        for entry in self.cfg.get("metric_list") or []:
            options = {k: v for k, v in entry.items()
                       if k not in ("metric", "function", "aggregation", "higher_is_better", "name")}
            if "function" in entry:
                cls, name = self.hook(entry["function"]), entry["function"].rpartition(".")[2]
            else:
                cls, name = self.registry.load("metrics", entry["metric"]), entry["metric"].rpartition("/")[2]
            label = entry.get("metric") or entry.get("function")
            check_requirements(f"task {self.name!r}: metric {label}", getattr(cls, "requires", ()))
            try:
                metric = cls(name=entry.get("name") or name, **options)  # `name:` renames the reported metric
            except UserError:
                raise
            except Exception as exc:  # bad options: the metric's constructor refused them
                raise UserError(f"{self.cfg.file}: metric_list: {label}: {_describe(exc)}") from None
            if "higher_is_better" in entry:
                metric.higher_is_better = entry["higher_is_better"]
            out.append(metric)
        return out

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
    def breakdown(self) -> list[str]:
        return list(self.cfg.get("breakdown") or [])

    @property
    def pack_dir(self) -> Path:
        return self.cfg.pack_dir


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__
