"""The run's plan, checked before any call: the tasks ``--tasks``
resolves to, each task's data source, what the backend will not get as
asked (notes), and the checks that stop a run before it pays: ``--data``
and ``--judge`` names that match nothing, metrics whose judge roles are
not declared, judges whose backend nothing installed registers, missing
transcribers, output types avhb does not run, settings the backend
refuses (engines without an executor, media, log-likelihoods)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from avhb.data.sources import DataSource, resolve_source
from avhb.errors import UserError
from avhb.registry import Registry
from avhb.run.notes import first_request_media, gen_kwargs_notes, literal_notes, plan_notes
from avhb.options import RunOptions
from avhb.run.task import Task
from avhb.score.judges import Judges
from avhb.run.records import TaskSamples
from avhb.taskdef.index import TaskIndex, load_task
from avhb.taskdef.config import unrunnable
from avhb.taskdef.requests import LOGLIKELIHOOD_TYPES


def resolve_tasks(index: TaskIndex, registry: Registry, o: RunOptions) -> list[Task]:
    """The run's tasks (``--tasks``: names, groups, tags, globs), their
    few-shot count and model kind set."""
    names, _ = index.resolve(o.tasks)
    return [Task(load_task(index, n), registry).with_num_fewshot(o.num_fewshot)
            .for_model(o.model.kind if o.model else None).in_folder(o.output_dir) for n in names]


def resolve_sources(tasks: list[Task], index: TaskIndex, o: RunOptions,
                    recorded: dict[str, Any]) -> dict[str, DataSource]:
    """Each task's data source (``--data``, ``--sample-data``, the task's own),
    after its hook modules are imported: a package they need and this
    machine lacks is said first (it stops ``avhb prepare`` too, so the data
    would be missing for that reason)."""
    for t in tasks:
        t.import_hooks()
    return {t.name: resolve_source(t.cfg, o.data, o.sample_data, index.groups_of(t.name),
                                   _recorded_base(o, recorded, t.name))
            for t in tasks}


def _recorded_base(o: RunOptions, recorded: dict[str, Any], task: str) -> Path | None:
    """``avhb score``: the folder a builder task's relative data paths
    resolved under when the run ran (a new run resolves them afresh)."""
    if not o.score_only:
        return None
    base = ((recorded.get("tasks") or {}).get(task) or {}).get("data", {}).get("base")
    return Path(base) if base else None


def check_names_used(tasks: list[Task], index: TaskIndex, o: RunOptions) -> None:
    """--data and --judge names that match nothing are typos: say so.
    A --data NAME is used when some task reads it (``data_flag_for``);
    one that names a task but that every such task reads another
    --data entry for first is an error too (its path would be ignored)."""
    from avhb.data.sources import data_flag_for

    names: dict[str, set[str]] = {}  # task -> the --data NAMEs it answers to
    read: dict[str, str | None] = {}  # task -> the --data NAME it reads
    for t in tasks:
        groups = index.groups_of(t.name)
        names[t.name] = {n for n in (t.name, t.cfg.data_name, *t.cfg.tags, *groups) if n}
        read[t.name] = data_flag_for(t.cfg, o.data, groups)
    known = set().union(*names.values())
    for name in sorted(set(o.data) - set(read.values())):
        if name in known:
            readers = sorted({str(read[t]) for t in names if name in names[t]})
            raise UserError(f"--data {name}=...: ignored: every task it names reads --data "
                            f"{', '.join(readers)}=... first (a task's own name, then its pack, tags and groups); "
                            "drop one of them")
        raise UserError(f"--data {name}=...: no task of this run is named, tagged or grouped {name!r}"
                        f"{_spelling_hint(name, known, tasks)} (use one of: {', '.join(sorted(known))})")
    roles = {r for t in tasks for r in (t.cfg.get("judges") or {})}
    unknown = sorted(set(o.judges) - roles - {"*"})
    if unknown and not o.predict_only:
        raise UserError(f"--judge {unknown[0]}=...: no task of this run declares judge role {unknown[0]!r} "
                        f"(roles: {', '.join(sorted(roles)) or 'none'})")


def check_metric_roles(task: Task, predict_only: bool) -> None:
    if predict_only:
        return
    roles = task.judge_roles()
    for m in task.metrics():
        missing = [r for r in m.needs_judges if r not in roles]
        if missing:
            raise UserError(f"task {task.name!r}: metric {m.name!r} needs judge role(s) {', '.join(missing)}, "
                            f"which {task.cfg.file.name} does not declare under 'judges'")


def check_judge_kinds(tasks: list[Task], judges: Judges, o: RunOptions, registry: Registry) -> None:
    """Every judge a task's roles bind (the YAML's ``default``, ``--judge``)
    is a backend or judge kind something installed registers: one line
    naming the task and the role, and for a namespaced kind (``kw/keyword``)
    its plugin, before any judge is built or any sample asked."""
    from avhb.model.backend import unknown_kind

    if o.replay_judges:
        return
    known = set(registry.names("backends")) | set(registry.names("judges"))
    for t in tasks:
        for role in t.bound_roles(o.predict_only).values():
            for spec in judges.panel(role):
                if spec.kind not in known:
                    raise UserError(f"task {t.name}: judge role {role.name!r} ({spec.label}): "
                                    f"{unknown_kind(spec.kind, registry)}")


def check_transcribers(tasks: list[Task], plans: dict[str, Any], sources: dict[str, Any],
                       records: dict[str, TaskSamples], backend: Any, judges: Judges, o: RunOptions) -> None:
    """Every task whose audio will reach the model, or a judge role that
    hears none, as a transcript needs its registered transcriber's
    packages (the function's ``requires``): a missing one stops the run
    before the first task starts, not after earlier tasks spent their
    calls.  The line names who would get the transcript (the model, or
    judge role R, with its spec) and both ways on: ``audio=true`` on that
    spec when the backend takes it (the model may hear audio), or the
    package for a transcript.  ``backend`` None (``avhb score``): the
    model's answers are replayed, its judges' are asked again."""
    from avhb.media.materialize import load_transcriber
    from avhb.run.notes import media_of_spec

    for t in tasks:
        plan = plans[t.name]
        ablations = set(plan.ablations)
        if ablations & {"no_audio", "text_only"}:
            continue
        deaf: list[tuple[str, str, str | None]] = []  # (who, its spec's label, the flag that binds it)
        if backend is not None:
            media = first_request_media(t, records[t.name].first(), sources[t.name].root, plan.spec) or \
                media_of_spec(plan.spec)
            if media["audio"] and "audio_as_transcript" in ablations:
                deaf.append(("the model", _label(o.model, backend), None))
            elif media["audio"] and not backend.capabilities.audio:
                deaf.append(("the model", _label(o.model, backend), "--model "))
        roles = {} if o.replay_judges else t.bound_roles(o.predict_only)
        for role in roles.values():
            if "audio" not in role.media:
                continue
            for spec in judges.panel(role):
                if not judges.caller(spec).capabilities.audio:
                    deaf.append((f"judge role {role.name!r}", spec.label, f"--judge {role.name}="))
        if deaf:
            name = plan.spec.transcriber
            missing = _missing_package(getattr(load_transcriber(name), "requires", ()))
            if missing is not None:
                raise UserError(_transcript_needed(t.name, deaf, name, *missing))


def _label(spec: Any, backend: Any) -> str:
    return spec.label if spec is not None else backend.spec.label


def _missing_package(requires: Any) -> tuple[str, str] | None:
    """The first (module, avhb extra) of ``requires`` not installed."""
    from avhb.requirements import installed

    return next(((m, e) for m, e in requires if not installed(m)), None)


def _takes_audio_argument(label: str) -> bool:
    """Whether ``label``'s backend kind takes ``audio=true`` (declares
    an ``audio`` argument with an effect: ``avhb list backends``)."""
    from avhb.registry import get_registry

    kind = label.partition(":")[0]
    try:
        cls = get_registry().load("backends", kind)
    except Exception:  # not a backend kind (a judge plugin's), or one that cannot be imported here
        return False
    arg = (getattr(cls, "arguments", None) or {}).get("audio")
    return arg is not None and not getattr(arg, "ignored", False)


def _transcript_needed(task: str, deaf: list[tuple[str, str, str | None]], transcriber: str,
                       module: str, extra: str) -> str:
    """One line: who would get a transcript, the package the transcriber
    lacks, and both ways on."""
    who = " and ".join(dict.fromkeys(
        f"{w} ({label}, {'which hears no audio here' if flag else '--ablate audio_as_transcript'})"
        for w, label, flag in deaf))
    ways = [f"if {label} hears audio, add audio=true to its spec ({flag}{label},audio=true)"
            for _, label, flag in dict.fromkeys(deaf) if flag is not None and _takes_audio_argument(label)]
    ways.append(f"for a transcript, install the transcriber: pip install 'avhb[{extra}]'")
    how = "; or ".join(ways)
    return (f"task {task}: its audio becomes a transcript for {who}; transcriber {transcriber!r} needs the "
            f"{module!r} package, which is not installed. {how[0].upper()}{how[1:]}")


def check_backend(tasks: list[Task], plans: dict[str, Any], backend: Any, o: RunOptions, registry: Registry,
                  label: str) -> None:
    """Settings the backend refuses before it loads: engines that need an
    executor, media (vLLM: frames per prompt), log-likelihoods."""
    replicas = int(getattr(backend, "replicas", 1) or 1)
    if replicas > 1 and o.executor is None:
        raise UserError(f"--model {label}: {replicas} engines (data_parallel_size) run as Ray workers, "
                        "one engine each: add --executor ray[:ADDRESS]")
    for t in tasks:
        backend.check_media(plans[t.name].spec, t.name)
        check_loglikelihood(t, backend, registry, label)


def check_runnable(tasks: list[Task]) -> None:
    """A task whose output type avhb loads but does not run
    (:func:`avhb.taskdef.config.unrunnable`) is one line naming the task,
    the output type and why, before its data is read or any call made."""
    for task in tasks:
        why = unrunnable(task.cfg.config)
        if why is not None:
            raise UserError(f"task {task.name!r} cannot run in avhb: {why}")


def check_loglikelihood(task: Task, backend: Any, registry: Registry, label: str) -> None:
    """A log-likelihood task on a backend that gives no token
    log-probabilities is one line before any call, naming those that do."""
    if task.output_type in LOGLIKELIHOOD_TYPES and not getattr(backend.capabilities, "loglikelihood", False):
        able = []
        for name in registry.names("backends"):
            try:
                cls = registry.load("backends", name)
            except Exception:  # a plugin backend that cannot be imported here is not one to suggest
                continue
            if getattr(getattr(cls, "capabilities", None), "loglikelihood", False):
                able.append(name)
        raise UserError(f"task {task.name!r} (output_type {task.output_type}) needs token log-probabilities, "
                        f"which {label} does not give; backends that do: "
                        f"{', '.join(able) or 'none installed'}")


def backend_notes(backend: Any, tasks: list[Task], plans: dict[str, Any], sources: dict[str, Any],
                  records: dict[str, TaskSamples], o: RunOptions, label: str) -> list[str]:
    """What this backend will not get as asked (:mod:`avhb.run.notes`)."""
    notes: list[str] = []
    if o.batch_size == "auto":
        notes.append(f"--batch_size auto: {label} keeps its own concurrency "
                     f"({backend.concurrency} requests in flight)")
    elif o.batch_size is not None:
        notes.append(f"--batch_size {o.batch_size}: at most {o.batch_size} requests in flight to "
                     f"{label} (the backend's concurrency; it was {backend.concurrency})")
        backend.concurrency = int(o.batch_size)
    notes += gen_kwargs_notes(o.gen_kwargs, backend)
    for t in tasks:
        plan = plans[t.name]
        first = records[t.name].first()
        media = first_request_media(t, first, sources[t.name].root, plan.spec)
        notes += plan_notes(t.name, media, plan.spec, plan.ablations, backend.capabilities, label,
                            getattr(backend, "transcribes", None))
        notes += literal_notes(t, first)
    return notes


def _spelling_hint(name: str, known: set[str], tasks: list[Task]) -> str:
    """'; did you mean X?' for a --data NAME: the namespaced spelling of a
    bare name (``qa`` -> ``mypack/qa``) or the bare one of a wrongly
    namespaced name, the pack whose Hub dataset the name is, or a close
    spelling."""
    import difflib

    tail = name.rpartition("/")[2]
    same = sorted(n for n in known if n.rpartition("/")[2] == tail)
    hub = sorted({t.cfg.data_name for t in tasks if t.cfg.get("dataset_path") == name and t.cfg.data_name})
    close = same or hub or difflib.get_close_matches(name, sorted(known), n=3)
    return f"; did you mean {' or '.join(close)}?" if close else ""
