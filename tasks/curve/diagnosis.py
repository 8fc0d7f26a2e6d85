"""Evidence-graph diagnosis of a finished CURVE run (``avhb diagnose RUN_DIR``,
commands.py), as the CURVE paper defines it: the run level.  Its parts:

* evidence_graph.py: the graph a judge builds from a question's reference
  reasoning trace (nodes, premises, paths; the reply parser);
* error_isolation.py: one sample's rounds of re-asking the model and
  checking nodes, with hints (the three judge roles);
* diagnosis_summary.py: the statistics over diagnosed samples.

Items: by default the questions the run scored 0 (``accuracy`` = 0: the
judge said wrong); partially right answers (1 of 2) are not errors and are
not diagnosed, nor are samples whose run or judge failed.  ``items:
not_correct`` (every score below 1, the old ``--only-incorrect``) and
``items: all`` widen the set (:func:`selected`).

Judge calls go through the run's judges (``avhb.ReopenedRun``) with the
run's journal (kind ``judges``) and model re-queries are journaled as each
sample's ``diagnosis`` step, so running the diagnosis again makes no new
calls.

Outputs: ``RUN_DIR/diagnosis/<task>.jsonl`` (one labelled graph per sample,
with each round's reasoning, hints and checked nodes) and
``RUN_DIR/diagnosis/summary.json`` (overall and per locale, see
:func:`summarize` and :func:`diagnose_run`).

The names of every part are importable from here (``__all__``).
"""
from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from avhb import (Backend, BackendSpec, Response, RunResults, SampleError, TextPart, UserError, create_backend,
                  write_atomic)

from . import hooks, locales
from .diagnosis_summary import accuracy_by_locale, brief, by_field, resource_split, summarize
from .error_isolation import (CHECK_ROLE, DEFAULT_JUDGE, ERROR_KINDS, GRAPH_ROLE, HINT_ROLE, VERDICTS, Hint, Round,
                              SampleDiagnosis, diagnose_sample, parse_hint, requery_block, roles)
from .evidence_graph import EvidenceGraph, EvidenceNode, GraphError, graph_from_dict, parse_graph_reply, validate_graph

__all__ = ["CHECK_ROLE", "DEFAULT_JUDGE", "ERROR_KINDS", "GRAPH_ROLE", "HINT_ROLE", "ITEMS", "VERDICTS", "EvidenceGraph",
           "EvidenceNode", "GraphError", "Hint", "Round", "SampleDiagnosis", "accuracy_by_locale", "brief", "by_field",
           "diagnose_run", "diagnose_run_async", "diagnose_sample", "graph_from_dict", "parse_graph_reply", "parse_hint",
           "resource_split", "roles", "selected", "summarize", "validate_graph"]

ITEMS = ("zero", "not_correct", "all")


def selected(record: dict[str, Any], items: str) -> bool:
    """Whether a scored sample is diagnosed under ``items`` (module docstring)."""
    score = (record.get("scores") or {}).get("accuracy")
    if items == "all":
        return True
    if items == "not_correct":
        return score != 1.0
    return score == 0.0


_LOCALE_TASK = re.compile(r"^curve_[a-z]{2,3}_[A-Z]{2}$")


def _curve_tasks(run: dict[str, Any]) -> list[str]:
    """The run's CURVE locale tasks (``curve_<ll>_<CC>``).  The category
    tasks (``curve_cat_*``) hold the same questions, so they are left out."""
    pack = Path(__file__).resolve().parent
    out = []
    for name, info in (run.get("tasks") or {}).items():
        try:
            inside = Path(info.get("file", "")).resolve().parent == pack
        except OSError:
            inside = False
        if inside and _LOCALE_TASK.match(name):
            out.append(name)
    return out


def _unique(diagnoses: list[SampleDiagnosis]) -> list[SampleDiagnosis]:
    """One diagnosis per sample id (the first), so that a question diagnosed
    under two tasks (a locale and a category task) counts once."""
    seen: set[str] = set()
    out = []
    for d in diagnoses:
        if d.id not in seen:
            seen.add(d.id)
            out.append(d)
    return out


def _model_asker(run, task_run):
    """``ask_model`` for :func:`diagnose_sample`: the task's own request for
    the sample (the run's media plan, generation settings and seed) with the
    locale's step-by-step prompt, the evidence already right and the hints
    so far, asked as the sample's ``diagnosis`` step through the run's call
    path."""

    async def ask(sample_id: str, doc: dict[str, Any], established: list[str], hints: list[str]) -> Response:
        ctx = run.context(task_run, doc, sample_id)
        try:
            request = ctx.request()
        except SampleError as exc:
            return Response(text="", error=f"request: {exc}")
        users = [m for m in request.messages if m.role == "user"]
        texts = [p for p in users[-1].parts if isinstance(p, TextPart)] if users else []
        if not texts:
            return Response(text="", error="the task's request has no text part to extend")
        texts[-1].text = hooks.reasoning_prompt(doc) + requery_block(established, hints)
        try:
            call = await ctx.ask(request, step="diagnosis")
        except SampleError as exc:  # the call failed (recorded; a re-run asks again)
            return Response(text="", error=str(exc))
        return Response(text=call.text)

    return ask


async def diagnose_run_async(run_dir: Path, *, judges: dict[str, list[BackendSpec]] | None = None,
                             model: BackendSpec | None = None, tasks: list[str] | None = None,
                             samples: list[str] | None = None, max_rounds: int = 5, items: str = "zero",
                             low_resource: list[str] | None = None, default_judge: str = DEFAULT_JUDGE,
                             backend_factory: Callable[[BackendSpec], Backend] = create_backend,
                             concurrency: int = 8) -> dict[str, Any]:
    """See :func:`diagnose_run`."""
    from avhb import ReopenedRun, write_json_atomic

    run_dir = Path(run_dir)
    if max_rounds < 1:
        raise UserError(f"diagnose: max_rounds must be at least 1, got {max_rounds}")
    if items not in ITEMS:
        raise UserError(f"diagnose: items must be one of {', '.join(ITEMS)}, got {items!r}")
    low = set(locales.LOW_RESOURCE if low_resource is None else low_resource)
    bad = sorted(code for code in low if code not in locales.LOCALES)
    if bad:
        raise UserError(f"diagnose: low-resource locale(s) {', '.join(bad)} are not CURVE locales ({', '.join(locales.LOCALES)})")
    run = ReopenedRun(run_dir, model=model, judges=judges, backend_factory=backend_factory)
    names = tasks or _curve_tasks(run.manifest)
    if not names:
        raise UserError(f"{run_dir}: the run has no CURVE tasks to diagnose")
    unknown = [t for t in names if t not in (run.manifest.get("tasks") or {})]
    if unknown:
        raise UserError(f"{run_dir}: task(s) {', '.join(unknown)} not in this run")
    role_defs = roles(default_judge)
    sample_limit = asyncio.Semaphore(max(1, concurrency))
    all_diagnoses: list[SampleDiagnosis] = []
    failures: Counter[str] = Counter()
    considered = 0
    out_dir = run_dir / "diagnosis"
    try:
        run.judges.prepare(role_defs)
        for name in names:
            task_run = run.task_run(name, role_defs)
            ask = _model_asker(run, task_run)
            records = [r for r in run.samples(name) if r.get("repeat", 0) == 0 and r.get("error") is None]
            if samples:
                wanted = set(samples)
                records = [r for r in records if r["id"] in wanted]
            considered += len(records)
            records = [r for r in records if selected(r, items)]

            async def one(record: dict[str, Any]) -> SampleDiagnosis:
                async with sample_limit:
                    return await diagnose_sample(name, record["id"], record["doc"], task_run.judges, ask, max_rounds)

            diagnoses = list(await asyncio.gather(*(one(r) for r in records)))
            failures.update(task_run.judges.failures)
            out_dir.mkdir(parents=True, exist_ok=True)
            path = out_dir / f"{name.replace('/', '__')}.jsonl"
            text = "".join(json.dumps(d.to_json(), ensure_ascii=False) + "\n" for d in diagnoses)
            write_atomic(path, lambda fh: fh.write(text))
            all_diagnoses.extend(diagnoses)
    finally:
        await run.aclose()
    all_diagnoses = _unique(all_diagnoses)
    by_locale: dict[str, list[SampleDiagnosis]] = {}
    for d in all_diagnoses:
        by_locale.setdefault(d.locale or "(none)", []).append(d)
    results = RunResults.read(run_dir) or RunResults()
    summary = {
        "run": str(run_dir), "model": run.model_spec.label, "max_rounds": max_rounds,
        "items": {"rule": items, "considered": considered, "diagnosed": len(all_diagnoses)},
        "judges": {r: [s.label for s in run.judges.panel(role)] for r, role in role_defs.items()},
        "judge_failures": dict(failures),
        "overall": summarize(all_diagnoses, max_rounds),
        "locales": {loc: summarize(ds, max_rounds) for loc, ds in sorted(by_locale.items())},
        "resource": resource_split(all_diagnoses, low),
        "by_skill": by_field(all_diagnoses, lambda d: d.skills),
        "by_subcategory": by_field(all_diagnoses, lambda d: [d.subcategory] if d.subcategory else []),
        "accuracy": accuracy_by_locale(results, [t for t in names if _LOCALE_TASK.match(t)]),
        "judge_usage": run.judges.usage.as_dict(),
    }
    write_json_atomic(out_dir / "summary.json", summary)
    return summary


def diagnose_run(run_dir: Path, **options: Any) -> dict[str, Any]:
    """Diagnose a finished CURVE run; returns the summary (also written to
    ``RUN_DIR/diagnosis/summary.json``).

    Options: ``judges`` ({role: [BackendSpec]}, from ``--judge``; default:
    the run's ``--judge`` flags, so ``*=SPEC`` carries over; unbound roles use
    ``default_judge``, Gemini-2.5-Pro), ``model`` (BackendSpec; default the
    run's model as recorded in run.json — pass it again when the model needs
    arguments that are not recorded, such as an API key variable), ``tasks``
    (default: every locale task ``curve_<ll>_<CC>`` of the run; the summary
    counts each sample id once even when ``tasks`` names a locale and a
    category task), ``samples`` (ids), ``max_rounds`` (5), ``items``
    (``zero``: the samples scored 0, the default and the paper's choice;
    ``not_correct``: every score below 1; ``all``), ``low_resource`` (the
    locales counted as low-resource in ``resource``; default
    ``locales.LOW_RESOURCE``), ``backend_factory`` (tests), ``concurrency``
    (samples in flight).  Samples whose run failed (``error``) are not
    diagnosed.

    Summary keys: ``items`` (the rule, samples considered and diagnosed),
    ``overall`` and ``locales`` (:func:`summarize` each), ``resource``
    (:func:`resource_split`), ``by_skill`` and ``by_subcategory``
    (:func:`brief` per value; ``skills`` is multi-label), ``accuracy``
    (:func:`accuracy_by_locale`), ``judges``, ``judge_failures``,
    ``judge_usage``."""
    return asyncio.run(diagnose_run_async(run_dir, **options))
