"""avhb: an evaluation harness for audio-visual and video language models.

The public API is importable from here; names load lazily (``import avhb``
imports nothing heavy, so listing stays fast)::

    from avhb import hookimpl                                    # a plugin's hooks
    from avhb import Backend, Capabilities, Request, Response   # a model backend
    from avhb import Metric, SampleRecord, Aggregate             # a metric
    from avhb import SampleContext, DriverResult, StepFailed     # a multi-step driver
    from avhb import ReopenedRun, write_json_atomic              # a pack command over a finished run

Three public modules complete it: ``avhb.media`` (probing, frames, audio,
boxes, grids, resizing, fingerprints: its package-level names),
``avhb.score.metric_helpers`` (field specs, verdict log entries, counts)
and ``avhb.redact`` (secrets out of what a backend says).  Everything else
under ``avhb.`` is private: the built-in task packs, metrics, backends and
the examples import only these (``tests/test_import_graph.py`` checks it;
docs/plugins.md, "The public API").
"""
from __future__ import annotations

import importlib
from typing import Any

from avhb.version import __version__

# public name -> "module" (the same name there) or "module:attr" (another name there)
_EXPORTS = {
    # errors
    "UserError": "avhb.errors", "SampleError": "avhb.errors",
    # plugins
    "hookimpl": "avhb.hookspecs",
    # model backends and the one call path
    "Backend": "avhb.model.backend", "BackendSpec": "avhb.model.backend", "Capabilities": "avhb.model.backend",
    "Argument": "avhb.model.backend",  # a model argument a backend declares (avhb list backends, docs/backends.md)
    "create_backend": "avhb.model.backend", "parse_backend_spec": "avhb.model.backend", "parse_kv": "avhb.model.backend",
    "Prices": "avhb.model.prices", "FREE": "avhb.model.prices",
    # what a backend says about a failed attempt (the caller retries: avhb.model.resilience)
    "Failure": "avhb.model.resilience", "RetryPolicy": "avhb.model.resilience",
    "AdaptiveLimiter": "avhb.model.resilience", "classify_exception": "avhb.model.resilience",
    "HTTPStatusFailure": "avhb.model.resilience", "MalformedReply": "avhb.model.resilience",
    "Request": "avhb.model.messages", "Response": "avhb.model.messages", "Message": "avhb.model.messages",
    "TextPart": "avhb.model.messages", "ImagePart": "avhb.model.messages", "VideoPart": "avhb.model.messages",
    "AudioPart": "avhb.model.messages", "prompt_text": "avhb.model.messages", "Caller": "avhb.call.caller", "Call": "avhb.call.caller",
    # scoring
    "Metric": "avhb.score.metric", "Filter": "avhb.score.metric", "SampleRecord": "avhb.score.metric",
    "ScoreContext": "avhb.score.metric", "HEADLINE": "avhb.score.metric", "DIAGNOSTIC": "avhb.score.metric",
    "COUNT": "avhb.score.metric", "Aggregate": "avhb.score.aggregate", "mean_stderr": "avhb.score.aggregate",
    "bootstrap_stderr": "avhb.score.aggregate", "Aggregation": "avhb.score.aggregations",
    # judges
    "JudgeRole": "avhb.score.judges", "Verdict": "avhb.score.judges", "JudgeError": "avhb.score.judges",
    "Judges": "avhb.score.judges", "TaskJudges": "avhb.score.judges", "parse_judge_bindings": "avhb.score.judges",
    "first_json_value": "avhb.score.parsers",
    # task files, data and folders
    "render_template": "avhb.taskdef.templates:render", "PrepareResult": "avhb.data.download",
    "fetch_http": "avhb.data.download", "run_items": "avhb.data.download", "built_media_dir": "avhb.paths",
    "models_dir": "avhb.paths",
    # media
    "MediaSpec": "avhb.media.spec",
    # runs, and pack commands over a finished one
    "SampleContext": "avhb.run.driver", "StepFailed": "avhb.run.driver", "DriverResult": "avhb.run.driver",
    "DriverRun": "avhb.run.driver", "RunOptions": "avhb.options",
    "evaluate": "avhb.api", "RunResults": "avhb.runfolder.results", "TaskResult": "avhb.runfolder.results",
    "ReopenedRun": "avhb.run.reopen", "CallSession": "avhb.run.session", "Journal": "avhb.runfolder.journal", "write_atomic": "avhb.atomic",
    "write_json_atomic": "avhb.runfolder.folder",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'avhb' has no attribute {name!r}")
    module, _, attr = where.partition(":")
    value = getattr(importlib.import_module(module), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
