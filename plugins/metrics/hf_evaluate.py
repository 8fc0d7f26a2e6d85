"""Metrics from Hugging Face ``evaluate``, as lm-eval falls back to them.

A ``metric_list`` entry naming a metric avhb does not register (``metric:
rouge``), or naming one explicitly (``metric: evaluate/sacrebleu``,
``metric: evaluate/metrics/my_metric.py``), is this metric with ``module``
set to that name (``avhb.run.task.Task.metrics`` resolves it through the
registry under the name ``evaluate``).  ``module`` is, in this order:

1. a local metric module: a ``.py`` file or a folder holding ``NAME.py``,
   relative to the task's folder (or absolute);
2. a module on the Hugging Face Hub (``rouge`` = ``evaluate-metric/rouge``;
   ``org/name`` for a community module), taken from the Hugging Face cache
   (``$HF_HOME/modules``) when it is there, else downloaded when the Hub is
   reachable.  With ``HF_HUB_OFFLINE=1`` (or ``HF_EVALUATE_OFFLINE=1``) only
   the cache is read.  ``avhb prepare TASK`` builds the task's
   metrics where the Hub is reachable, which caches their modules for
   offline runs.

An evaluate module is Python code that ``evaluate`` imports, as a task's
hooks are: a local module runs like the pack's own hooks; a Hub module is
code from its Hub repository (``evaluate-metric/NAME`` for the canonical
ones), as it is in lm-eval and in ``evaluate`` itself.

Options (the rest of the entry): ``config_name`` (``evaluate.load``'s), and
``keys`` (which of ``compute()``'s results to report: a name or a list;
default every number it returns), ``bootstrap_iters`` (100; 0: no stderr);
every other key is a keyword argument of ``compute()`` (``ignore_case:
true``, ``tokenize: 13a``...).

Definitions:

- ``predictions`` = each sample's extracted answer (``record.extracted``,
  the raw response when no filter ran; an answer that extracted to None is
  the empty string), ``references`` = its target (a list stays a list: a
  multi-reference metric takes it as such);
- samples that failed (``record.error``: no answer from the model, bad
  media, a hook error) are left out of the corpus and counted in the task's
  ``errors``; ``n`` is the number of samples scored;
- the value is ``compute()`` over all scored samples at once (corpus
  level: corpus BLEU is corpus BLEU, not a mean of sentence BLEUs; for a
  per-sample mean such as exact match it is that mean);
- the standard error is a bootstrap over samples
  (``avhb.score.aggregate.bootstrap_stderr``, seed 1234): resample the
  scored samples with replacement ``bootstrap_iters`` times, recompute,
  take the standard deviation.  The resamples go straight to the module's
  ``_compute`` with the rows ``compute()`` was given after evaluate checked
  and encoded them against the module's features (each call of the public
  ``compute()`` rebuilds an Arrow table, ~10-30 ms; identical rows encode
  identically).  The default of 100 resamples is ours (INFERRED), as
  lm-eval caps its corpus metrics (BLEU, chrF, TER) at 100;
- names: one reported key is reported under the metric's name (``name:``
  renames it; default the module's name: ``rouge``, ``my_metric`` for
  ``metrics/my_metric.py``); several keys as ``<name>_<key>``
  (``rouge_rouge1``, ``rouge_rougeL``...).

``import evaluate`` imports its ``evaluator`` subpackage, which imports
``transformers.pipelines`` and torch when they are installed (~10 s of CPU
here); avhb only loads metric modules, so evaluate is imported with
``transformers`` hidden for the duration of that import (a module that
needs transformers, such as bertscore, still imports it itself).

Private to avhb: a pack imports what it builds on from ``avhb.plugins.metrics``
(its package-level names); importing this module from outside avhb is
deprecated (it still works, but its layout may change).
"""
from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from avhb import Aggregate, Metric, SampleRecord, ScoreContext, UserError, bootstrap_stderr

DEFAULT_BOOTSTRAP_ITERS = 100
_TRUE = ("1", "ON", "YES", "TRUE")
_LOADED: dict[tuple[str, str | None], Any] = {}


def import_evaluate() -> Any:
    """``evaluate``, imported without its transformers-based evaluator (see
    the module docstring) and offline when ``HF_HUB_OFFLINE`` says so."""
    if "evaluate" in sys.modules:
        return sys.modules["evaluate"]
    if offline():
        os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
    hide = "transformers" not in sys.modules
    if hide:
        sys.modules["transformers"] = None  # type: ignore[assignment]  # `import transformers` -> ImportError
    try:
        import evaluate
    finally:
        if hide and sys.modules.get("transformers", 0) is None:
            del sys.modules["transformers"]
    evaluate.logging.set_verbosity_error()
    return evaluate


def offline() -> bool:
    return any(os.environ.get(k, "").upper() in _TRUE for k in ("HF_HUB_OFFLINE", "HF_EVALUATE_OFFLINE"))


def default_name(module: str) -> str:
    """``rouge`` -> rouge; ``org/bleu_x`` -> bleu_x; ``metrics/em.py`` -> em."""
    tail = module.rstrip("/").replace(os.sep, "/").rpartition("/")[2]
    return tail[:-3] if tail.endswith(".py") else tail


def _local_path(module: str, base_dir: str | None) -> Path | None:
    """The local module file/folder ``module`` names, or None for a Hub name.
    Raises for a path that looks local but is not there."""
    looks_local = module.endswith(".py") or module.startswith((".", "/", "~")) or module.count("/") > 1
    candidates = [Path(module).expanduser()] if Path(module).expanduser().is_absolute() else \
        [Path(base_dir) / module] if base_dir else []
    for path in candidates:
        if path.is_file() or (path.is_dir() and (path / f"{path.name}.py").is_file()):
            return path.resolve()
    if looks_local:
        where = candidates[0] if candidates else Path(module)
        raise UserError(f"evaluate metric module {module!r}: no such file ({where})")
    return None


def load_module(module: str, base_dir: str | None = None, config_name: str | None = None) -> Any:
    """The ``evaluate`` module instance for ``module`` (cached per process)."""
    local = _local_path(module, base_dir)
    key = (str(local) if local else module, config_name)
    if key in _LOADED:
        return _LOADED[key]
    evaluate = import_evaluate()
    kwargs: dict[str, Any] = {"config_name": config_name, "keep_in_memory": True}
    if local is None:
        kwargs["module_type"] = "metric" if "/" not in module else None
        if offline():
            from evaluate.utils.file_utils import DownloadConfig

            kwargs["download_config"] = DownloadConfig(local_files_only=True)
    try:
        loaded = evaluate.load(str(local) if local else module, **kwargs)
    except ImportError as exc:  # the module's own requirements (rouge_score, sacrebleu...)
        raise UserError(f"evaluate metric {module!r} needs a package that is not installed: "
                        f"{_one_line(exc)}") from None
    except (FileNotFoundError, ConnectionError, OSError) as exc:
        if local is not None:
            raise UserError(f"evaluate metric module {str(local)!r} could not be loaded: {_one_line(exc)}") from None
        from evaluate import config

        state = "this run is offline (HF_HUB_OFFLINE)" if offline() else "the Hugging Face Hub could not be reached"
        raise UserError(f"evaluate metric {module!r} is not in the Hugging Face cache ({config.HF_MODULES_CACHE}) and "
                        f"{state}: run `avhb prepare TASK` where the Hub is reachable (it caches the module "
                        f"for offline runs), or name a local module file (metric: evaluate/path/to/{default_name(module)}"
                        ".py)") from None
    except Exception as exc:  # a module that fails on import or in its _info
        raise UserError(f"evaluate metric {module!r} could not be loaded: {type(exc).__name__}: {_one_line(exc)}") from None
    _LOADED[key] = loaded
    return loaded


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:400] + ("..." if len(text) > 400 else "")


def _number(value: Any) -> float | None:
    """A scalar result as a float (numpy scalars included); None otherwise."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", 1) == 0:
        out = item()
        return float(out) if isinstance(out, (int, float)) else None
    return None


class EvaluateMetric(Metric):
    """A Hugging Face ``evaluate`` metric (see the module docstring)."""
    reads = frozenset({"extracted", "response", "target"})  # what aggregate() reads (Metric.reads)

    name = "evaluate"
    description = "a Hugging Face evaluate module's corpus score over the scored samples"
    accepts = {"module": "the evaluate module (a Hub name or a local file)", "base_dir": "where a relative module is",
               "config_name": "the module's configuration", "keys": "the result keys reported (default all)",
               "bootstrap_iters": "resamples for the standard error (100)",
               "*": "any other option is passed to the module's compute()"}
    requires = (("evaluate", "evaluate"),)

    def __init__(self, name: str | None = None, *, module: str | None = None, base_dir: str | None = None,
                 config_name: str | None = None, keys: str | list[str] | None = None,
                 bootstrap_iters: int = DEFAULT_BOOTSTRAP_ITERS, **compute_kwargs: Any):
        if not module:
            raise UserError("metric evaluate needs module: NAME (a Hub metric such as rouge, or a local "
                            "module file), e.g. `metric: evaluate/rouge`")
        super().__init__(name or default_name(str(module)), module=module, config_name=config_name, keys=keys,
                         bootstrap_iters=bootstrap_iters, **compute_kwargs)
        self.module_name = str(module)
        self.keys = [keys] if isinstance(keys, str) else list(keys) if keys else None
        if not isinstance(bootstrap_iters, int) or isinstance(bootstrap_iters, bool) or bootstrap_iters < 0:
            raise UserError(f"metric {self.name!r}: bootstrap_iters must be a whole number >= 0, "
                            f"got {bootstrap_iters!r}")
        self.bootstrap_iters = bootstrap_iters
        self.compute_kwargs = compute_kwargs
        self.module = load_module(self.module_name, base_dir, config_name)  # fails before any model call

    def prepare(self) -> str:
        """For ``avhb prepare``: the module was fetched (or found) when this
        metric was built; says where offline runs will find it."""
        from evaluate import config

        return f"evaluate module {self.module_name!r} ready (Hugging Face cache {config.HF_MODULES_CACHE})"

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        return {}  # corpus level: computed in aggregate

    # -- aggregation ---------------------------------------------------------
    def _names(self, keys: list[str]) -> dict[str, str]:
        if len(keys) == 1:
            return {keys[0]: self.name}
        return {k: f"{self.name}_{k}" for k in keys}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        scored = [r for r in records if r.error is None]
        if not scored:
            return {out: Aggregate(None, None, 0) for out in self._names(self.keys or [""]).values()}
        predictions = [_prediction(r) for r in scored]
        references = [r.target for r in scored]
        captured: dict[str, Any] = {}
        compute = self.module._compute

        def capture(**inputs: Any) -> Any:
            captured.update(inputs)
            return compute(**inputs)

        self.module._compute = capture  # see "resamples" in the docstring
        try:
            result = self.module.compute(predictions=predictions, references=references, **self.compute_kwargs)
        except (UserError, KeyboardInterrupt):
            raise
        except Exception as exc:
            raise UserError(f"metric {self.name!r}: evaluate's compute() on {len(scored)} samples failed: "
                            f"{type(exc).__name__}: {_one_line(exc)}") from None
        finally:
            del self.module._compute
        if not isinstance(result, dict):
            raise UserError(f"metric {self.name!r}: evaluate module {self.module_name!r} returned "
                            f"{type(result).__name__}, not a dict of results")
        keys = self.keys or [k for k, v in result.items() if _number(v) is not None]
        missing = [k for k in keys if k not in result]
        if missing or not keys:
            raise UserError(f"metric {self.name!r}: evaluate module {self.module_name!r} returned "
                            f"{', '.join(sorted(result)) or 'nothing'}; no number "
                            f"{'named ' + ', '.join(missing) if missing else 'at all'} (set keys:)")
        stderrs = self._bootstrap(keys, captured, len(scored))
        return {out: Aggregate(_number(result[k]), stderrs.get(k), len(scored)) for k, out in self._names(keys).items()}

    def _bootstrap(self, keys: list[str], inputs: dict[str, Any], n: int) -> dict[str, float | None]:
        if self.bootstrap_iters == 0 or n < 2 or not inputs:
            return {}
        columns = {k: list(v) for k, v in inputs.items() if k not in self.compute_kwargs}  # the feature columns
        fixed = {k: v for k, v in inputs.items() if k in self.compute_kwargs}
        cache: dict[tuple[int, ...], dict[str, Any]] = {}

        def results(sample: list[int]) -> dict[str, Any]:
            key = tuple(sample)
            if key not in cache:
                cache[key] = self.module._compute(**{k: [col[i] for i in sample] for k, col in columns.items()}, **fixed)
            return cache[key]

        out: dict[str, float | None] = {}
        for k in keys:  # the same seed draws the same resamples for every key: each is computed once
            def statistic(sample: Sequence[int], k: str = k) -> float | None:
                value = _number(results(list(sample)).get(k))
                return value if value is not None and math.isfinite(value) else None

            out[k] = bootstrap_stderr(list(range(n)), statistic, iters=self.bootstrap_iters)
        return out


def _prediction(record: SampleRecord) -> Any:
    value = record.extracted if record.extracted is not None else record.response
    return "" if value is None else value
