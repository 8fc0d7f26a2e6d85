"""The hooks a plugin implements.  A plugin is any module with ``@hookimpl``
functions, registered by an entry point in the group ``avhb``:

    [project.entry-points.avhb]
    mypkg = "mypkg.avhb_plugin"

Each hook returns names and *import paths* ("package.module:attr"), never
objects, so listing what is installed imports nothing heavy.  Names from a
third-party plugin are namespaced by its entry-point name (``mypkg/name``);
the built-ins, shipped by the ``avhb`` distribution itself, are bare.
"""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("avhb")
hookimpl = pluggy.HookimplMarker("avhb")


@hookspec
def avhb_task_packages() -> list[str]:
    """Dotted names of packages holding task YAML files (searched
    recursively).  Hooks named in a YAML resolve inside its package."""


@hookspec
def avhb_backends() -> dict[str, str]:
    """Model backend kinds -> "module:Class" (a ``avhb.model.backend.Backend``)."""


@hookspec
def avhb_metrics() -> dict[str, str]:
    """Metric names -> "module:Class" (a ``avhb.score.metric.Metric``)."""


@hookspec
def avhb_filters() -> dict[str, str]:
    """Filter names -> "module:Class" (a ``avhb.score.metric.Filter``)."""


@hookspec
def avhb_judges() -> dict[str, str]:
    """Judge kinds -> "module:Class": a ``avhb.model.backend.Backend`` that
    answers judge requests without being a chat model (an embedding scorer
    reading ``Request.fields``, replying one of ``Request.choices``).  Bound
    as ``--judge ROLE=<plugin>/<kind>``; any backend kind judges too."""


@hookspec
def avhb_transcribers() -> dict[str, str]:
    """Speech-to-text names -> "module:function"; the function is
    ``transcribe(array, rate=..., language=None)`` returning an object with
    ``text`` and ``model``.  Used when audio becomes a transcript (a backend
    that hears no audio, ``--ablate audio_as_transcript``).  The function
    may carry ``requires = ((module, avhb extra), ...)``: a run checks them
    for every task that will need it before its first task starts."""


@hookspec
def avhb_judge_parsers() -> dict[str, str]:
    """Judge-reply parser names -> "module:function"; the function is
    ``parse(reply, options) -> value | None`` (None: unparsable, re-ask),
    with optional attributes ``format_hint`` (the re-ask line) and
    ``answer_space(options)`` (the closed set of valid replies)."""


@hookspec
def avhb_commands() -> dict[str, str]:
    """Extra ``avhb`` subcommands -> "module:function"; the function takes
    the remaining argv and returns an exit code (e.g. CURVE's ``diagnose``)."""


@hookspec
def avhb_model_presets() -> list[str]:
    """Dotted "package:file.yaml" resources with model presets."""
