"""avhb: an evaluation harness for audio-visual and video language models.

The public API is importable from here; names load lazily (``import avhb``
imports nothing heavy, so listing stays fast)::

    from avhb import hookimpl                                    # a plugin's hooks
    from avhb import Backend, Capabilities, Request, Response   # a model backend
    from avhb import Metric, SampleRecord, Aggregate             # a metric
    from avhb import SampleContext, DriverResult, StepFailed     # a multi-step driver
    from avhb import ReopenedRun, write_json_atomic              # a pack command over a finished run

Four public modules complete it: ``avhb.media`` (probing, frames, audio,
boxes, grids, resizing, fingerprints: its package-level names),
``avhb.score.metric_helpers`` (field specs, verdict log entries, counts),
``avhb.redact`` (secrets out of what a backend says) and
``avhb.plugins.metrics`` (the built-in metrics a pack builds on: its
package-level names).  Everything else
under ``avhb.`` is private: the built-in task packs, metrics, backends and
the examples import only these (``tests/test_import_graph.py`` checks it;
docs/plugins.md, "The public API").
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from avhb.lazy_exports import lazy_exports
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
    "first_json_value": "avhb.score.judge_replies",
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

if TYPE_CHECKING:  # the same names for a type checker, which does not run __getattr__ (tests/test_types.py
    # holds them equal to _EXPORTS)
    from avhb.errors import UserError as UserError, SampleError as SampleError
    from avhb.hookspecs import hookimpl as hookimpl
    from avhb.model.backend import (
        Backend as Backend, BackendSpec as BackendSpec, Capabilities as Capabilities, Argument as Argument,
        create_backend as create_backend, parse_backend_spec as parse_backend_spec, parse_kv as parse_kv)
    from avhb.model.prices import Prices as Prices, FREE as FREE
    from avhb.model.resilience import (
        Failure as Failure, RetryPolicy as RetryPolicy, AdaptiveLimiter as AdaptiveLimiter,
        classify_exception as classify_exception, HTTPStatusFailure as HTTPStatusFailure,
        MalformedReply as MalformedReply)
    from avhb.model.messages import (
        Request as Request, Response as Response, Message as Message, TextPart as TextPart, ImagePart as ImagePart,
        VideoPart as VideoPart, AudioPart as AudioPart, prompt_text as prompt_text)
    from avhb.call.caller import Caller as Caller, Call as Call
    from avhb.score.metric import (
        Metric as Metric, Filter as Filter, SampleRecord as SampleRecord, ScoreContext as ScoreContext,
        HEADLINE as HEADLINE, DIAGNOSTIC as DIAGNOSTIC, COUNT as COUNT)
    from avhb.score.aggregate import (
        Aggregate as Aggregate, mean_stderr as mean_stderr, bootstrap_stderr as bootstrap_stderr)
    from avhb.score.aggregations import Aggregation as Aggregation
    from avhb.score.judges import (
        JudgeRole as JudgeRole, Verdict as Verdict, JudgeError as JudgeError, Judges as Judges,
        TaskJudges as TaskJudges, parse_judge_bindings as parse_judge_bindings)
    from avhb.score.judge_replies import first_json_value as first_json_value
    from avhb.taskdef.templates import render as render_template  # noqa: F401  (exported: __all__ is _EXPORTS's)
    from avhb.data.download import PrepareResult as PrepareResult, fetch_http as fetch_http, run_items as run_items
    from avhb.paths import built_media_dir as built_media_dir, models_dir as models_dir
    from avhb.media.spec import MediaSpec as MediaSpec
    from avhb.run.driver import (
        SampleContext as SampleContext, StepFailed as StepFailed, DriverResult as DriverResult, DriverRun as DriverRun)
    from avhb.options import RunOptions as RunOptions
    from avhb.api import evaluate as evaluate
    from avhb.runfolder.results import RunResults as RunResults, TaskResult as TaskResult
    from avhb.run.reopen import ReopenedRun as ReopenedRun
    from avhb.run.session import CallSession as CallSession
    from avhb.runfolder.journal import Journal as Journal
    from avhb.atomic import write_atomic as write_atomic
    from avhb.runfolder.folder import write_json_atomic as write_json_atomic


if not TYPE_CHECKING:  # hidden from a type checker, so a name missing above is an error, not Any
    __getattr__ = lazy_exports(globals(), _EXPORTS)


def __dir__() -> list[str]:
    return __all__
