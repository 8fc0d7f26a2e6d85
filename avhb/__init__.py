"""avhb: an evaluation harness for audio-visual and video language models.

The public API is importable from here; names load lazily (``import avhb``
imports nothing heavy, so listing stays fast)::

    from avhb import Backend, Capabilities, Request, Response   # a model backend
    from avhb import Metric, SampleRecord, Aggregate             # a metric
    from avhb import SampleContext, StepFailed                   # a multi-step driver
    from avhb import hookimpl                                    # a plugin's hooks
"""
from __future__ import annotations

import importlib
from typing import Any

from avhb.version import __version__

_EXPORTS = {
    # errors
    "UserError": "avhb.errors", "SampleError": "avhb.errors",
    # plugins
    "hookimpl": "avhb.hookspecs",
    # model backends and the one call path
    "Backend": "avhb.model.backend", "BackendSpec": "avhb.model.backend", "Capabilities": "avhb.model.backend",
    "Request": "avhb.model.messages", "Response": "avhb.model.messages", "Message": "avhb.model.messages",
    "TextPart": "avhb.model.messages", "ImagePart": "avhb.model.messages", "VideoPart": "avhb.model.messages",
    "AudioPart": "avhb.model.messages", "Caller": "avhb.call.caller", "Call": "avhb.call.caller",
    # scoring
    "Metric": "avhb.score.metric", "Filter": "avhb.score.metric", "SampleRecord": "avhb.score.metric",
    "ScoreContext": "avhb.score.metric", "Aggregate": "avhb.score.aggregate", "mean_stderr": "avhb.score.aggregate",
    "bootstrap_stderr": "avhb.score.aggregate", "JudgeRole": "avhb.score.judges", "Verdict": "avhb.score.judges",
    "JudgeError": "avhb.score.judges",
    # media
    "MediaSpec": "avhb.media.spec",
    # runs
    "SampleContext": "avhb.run.driver", "StepFailed": "avhb.run.driver", "RunOptions": "avhb.run.options",
    "evaluate": "avhb.api", "RunResults": "avhb.run.results", "TaskResult": "avhb.run.results",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'avhb' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
