"""The one-configuration rule: which run settings change the model's calls,
and which only change how they are made.  Resume (:mod:`avhb.run.evaluator`)
and ``avhb merge`` (:mod:`avhb.cluster.merge`) both compare two ``run.json``
documents with :func:`compare`; this module is the only place that sorts a
setting into a kind.

* **calls**: what the model is asked, or how it answers -- the model
  (its identity: kind, name and the args that change answers; an API
  backend's ``concurrency``, ``timeout`` and ``max_retries`` are not part
  of it), ``--gen-kwargs``, ``--media``, ``--ablate``, ``--seed``,
  ``--repeats``, and per task its resolved config (its YAML, wherever it
  was found: a pack or an ``--include_path`` folder; templates, system
  prompts, media blocks...) and its data source (kind, root, revision;
  what ``--data`` / ``--sample-data`` resolved to).  A difference in an
  existing run folder is refused (one line naming each difference, old ->
  new) unless ``--allow-config-change`` is given.
* **scoring**: which judges rate the answers (each role's panel, by
  identity) and ``--predict-only``.  A change re-scores (the model's
  answers come from the journal), said in one line.
* **selection**: which samples run -- ``--tasks``, ``--limit``,
  ``--samples``.  A folder may grow: a task added is no difference; a task
  left out, or another limit or sample list, is said in one line.
* **how**: how calls are made, never what they answer -- ``--batch_size``,
  the backend's runtime settings (concurrency, timeout, retries),
  ``--executor`` and its workers, ``--max-errors``, report flags.  Free to
  change on resume and to differ between shards; each invocation's are
  recorded in ``run.json`` ``invocations``, with a note when they changed.
* **code**: avhb's plugins and their versions.  Not refused on resume (a
  finished task whose code changed runs again: :mod:`avhb.resume.finished`),
  but shards of one run must agree.

Whenever results that finished are replaced because of a calls (accepted),
scoring or selection difference, or because a finished task's inputs
changed, the previous ``results.json``, ``samples/`` and ``run.json`` are
kept in ``previous/<timestamp>/`` (:func:`avhb.runfolder.previous.keep_previous`), listed in
``run.json`` ``previous``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from avhb.runfolder.layout import previous_dir

CALLS, SCORING, SELECTION, HOW, CODE, RUN = "calls", "scoring", "selection", "how", "code", "run"

# every RunOptions field, by kind (a test checks that none is left out): a new option
# must say here whether it changes calls
OPTION_KINDS: dict[str, str] = {
    "model": CALLS, "gen_kwargs": CALLS, "media": CALLS, "ablations": CALLS, "seed": CALLS, "repeats": CALLS,
    "data": CALLS, "sample_data": CALLS, "include_paths": CALLS,  # through each task's data source and config
    "seeds": CALLS, "system_instruction": CALLS,  # lm-eval's --seed A,B,C,D and --system_instruction
    "num_fewshot": CALLS, "fewshot_as_multiturn": CALLS, "fewshot_seed": CALLS,  # the prompt's few-shot examples
    "judges": SCORING, "judge_args": SCORING, "predict_only": SCORING,
    "tasks": SELECTION, "limit": SELECTION, "samples": SELECTION,
    "shard": SELECTION,  # fixed per folder: another shard in a shard's folder is refused (manifest.py)
    "batch_size": HOW, "executor": HOW, "write_report": HOW, "notes": HOW, "command": HOW,
    "write_out": HOW, "max_cost": HOW, "max_errors": HOW,
    # what the command is, not a setting of the run
    "output_dir": RUN, "score_only": RUN, "replay_judges": RUN, "allow_config_change": RUN,
}

# Where a finished task's digest (avhb.resume.finished) holds the options that decide its results.  Every
# option of kind calls, scoring or selection is in the digest's ``options`` part (by its value, when not
# at RunOptions' default) unless it is named here with the part that holds it instead; so a new option that
# changes calls is in the digest without another list to edit.
FINGERPRINT_ELSEWHERE: dict[str, str] = {
    "model": "model",  # the backend's identity
    "media": "media", "ablations": "media",  # the task's media plan (MediaPlan.key)
    "data": "data", "sample_data": "data",  # the task's data source and files
    "include_paths": "task",  # where the task's YAML was found: its config and its pack's files
    "judges": "judges", "judge_args": "judges",  # each role's panel, by identity
    "tasks": "task",  # which tasks run: each task has a digest of its own
}


def fingerprinted_options() -> tuple[str, ...]:
    """The options a finished task's ``options`` part holds: every option
    of kind calls, scoring or selection that no other part holds
    (:data:`FINGERPRINT_ELSEWHERE`)."""
    return tuple(name for name, kind in OPTION_KINDS.items()
                 if kind in (CALLS, SCORING, SELECTION) and name not in FINGERPRINT_ELSEWHERE)


@dataclass(frozen=True)
class Difference:
    kind: str
    key: str  # the run.json key (``tasks.<name>.config.<key>`` for a task's config)
    old: str
    new: str
    label: str = ""  # how it is said when not "<key> <old> -> <new>"

    def __str__(self) -> str:
        return f"{self.label or self.key} {self.old} -> {self.new}"


@dataclass
class Changes:
    """What differs between a recorded run.json and a new one."""

    items: list[Difference] = field(default_factory=list)

    def of(self, *kinds: str) -> list[Difference]:
        return [d for d in self.items if d.kind in kinds]

    def said(self, *kinds: str) -> str:
        return "; ".join(str(d) for d in self.of(*kinds))


def show(value: Any, limit: int = 160) -> str:
    """A setting's value in one short piece of a line."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def identity_of(model: dict[str, Any] | None) -> dict[str, Any] | None:
    """The recorded model's identity (older run.json: kind, name, args)."""
    if not model:
        return None
    return model.get("identity") or {k: model.get(k) for k in ("kind", "name", "args")}


def spec_text(identity: dict[str, Any] | None) -> str:
    """``kind:name,k=v`` of a backend identity."""
    if not identity:
        return "none"
    head = f"{identity.get('kind')}:{identity.get('name')}" if identity.get("name") else str(identity.get("kind"))
    args = raw if isinstance(raw := identity.get("args"), dict) else {}
    return head + "".join(f",{k}={show(v)}" for k, v in sorted(args.items()))


def how_settings(run: dict[str, Any]) -> dict[str, Any]:
    """The how-settings a run.json records: batch size, executor, the
    backend's runtime settings."""
    model = run.get("model") or {}
    out = {"batch_size": run.get("batch_size"), "executor": model.get("executor") or "local"}
    for key, value in sorted((model.get("runtime") or {}).items()):
        out[key] = value
    return out


def _data_text(data: dict[str, Any] | None) -> str:
    data = data or {}
    return f"{data.get('kind')}:{data.get('root')}" + (f"@{data['revision']}" if data.get("revision") else "")


def _task_changes(name: str, old: dict[str, Any], new: dict[str, Any]) -> list[Difference]:
    out: list[Difference] = []
    if old.get("hash") != new.get("hash"):
        a, b = old.get("config"), new.get("config")
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                if not _same(a.get(key), b.get(key)):
                    out.append(Difference(CALLS, f"tasks.{name}.config.{key}", show(a.get(key)), show(b.get(key)),
                                          f"task {name} {key}"))
        if not out:
            out.append(Difference(CALLS, f"tasks.{name}.hash", show(old.get("hash")), show(new.get("hash")),
                                  f"task {name} config"))
    if not _same(old.get("data"), new.get("data")):
        out.append(Difference(CALLS, f"tasks.{name}.data", _data_text(old.get("data")), _data_text(new.get("data")),
                              f"task {name} data"))
    return out


def _panels(run: dict[str, Any]) -> dict[str, list[str]]:
    """Each judge role's panel as text (by identity where recorded)."""
    panels = run.get("judge_panels")
    if isinstance(panels, dict):
        return {role: [spec_text(i) for i in ids] for role, ids in panels.items()}
    return {role: list(labels) for role, labels in (run.get("judges") or {}).items()}


def _fewshot_seed(run: dict[str, Any]) -> Any:
    """The few-shot seed as RunOptions records it: None when it is the
    run's seed (folders written before that rule hold the number)."""
    value = run.get("fewshot_seed")
    return None if value == run.get("seed") else value


def _fewshot_draw(run: dict[str, Any]) -> Any:
    """The seed the few-shot examples are drawn with (avhb.run.records)."""
    value = run.get("fewshot_seed")
    return run.get("seed") if value is None else value


def compare(old: dict[str, Any], new: dict[str, Any], grow: bool = True) -> Changes:
    """Every difference between two run.json documents, by kind.  ``grow``:
    a task (or judge role) only ``new`` has is no difference (a resume may
    add tasks); shards compare with ``grow=False``."""
    items: list[Difference] = []
    a, b = identity_of(old.get("model")), identity_of(new.get("model"))
    if a is not None and b is not None and not _same(a, b):
        items.append(Difference(CALLS, "model", show(spec_text(a), 400), show(spec_text(b), 400)))
    for key in ("gen_kwargs", "media", "ablations", "seed", "seeds", "repeats", "system_instruction", "num_fewshot",
                "fewshot_as_multiturn"):
        if not _same(old.get(key), new.get(key)):
            items.append(Difference(CALLS, key, show(old.get(key)), show(new.get(key))))
    if _fewshot_draw(old) != _fewshot_draw(new) and (_fewshot_seed(old), _fewshot_seed(new)) != (None, None):
        # another draw, not by the seed alone (said above)
        items.append(Difference(CALLS, "fewshot_seed", show(old.get("fewshot_seed")), show(new.get("fewshot_seed"))))
    old_tasks, new_tasks = old.get("tasks") or {}, new.get("tasks") or {}
    for name in sorted(set(old_tasks) & set(new_tasks)):
        items += _task_changes(name, old_tasks[name] or {}, new_tasks[name] or {})
    left_out = sorted(set(old_tasks) - set(new_tasks))
    added = sorted(set(new_tasks) - set(old_tasks))
    if left_out or (added and not grow):
        items.append(Difference(SELECTION, "tasks", show(", ".join(sorted(old_tasks)), 120),
                                show(", ".join(sorted(new_tasks)), 120)))
    for key in ("limit", "samples"):
        if not _same(old.get(key), new.get(key)):
            items.append(Difference(SELECTION, key, show(old.get(key)), show(new.get(key))))
    pa, pb = _panels(old), _panels(new)
    for role in sorted(set(pa) | set(pb)):
        if role in pa and role in pb and pa[role] != pb[role]:
            items.append(Difference(SCORING, f"judges.{role}", show(", ".join(pa[role]), 400),
                                    show(", ".join(pb[role]), 400), f"judge {role}"))
        elif not grow and (role in pa) != (role in pb):
            items.append(Difference(SCORING, f"judges.{role}", show(", ".join(pa.get(role, [])) or None),
                                    show(", ".join(pb.get(role, [])) or None), f"judge {role}"))
    if bool(old.get("predict_only")) != bool(new.get("predict_only")):
        items.append(Difference(SCORING, "predict_only", show(bool(old.get("predict_only"))),
                                show(bool(new.get("predict_only"))), "predict-only"))
    if not _same(old.get("plugins"), new.get("plugins")):
        items.append(Difference(CODE, "plugins", show(old.get("plugins")), show(new.get("plugins"))))
    ha, hb = how_settings(old), how_settings(new)
    for key in sorted(set(ha) | set(hb)):
        if not _same(ha.get(key), hb.get(key)):
            items.append(Difference(HOW, key, show(ha.get(key)), show(hb.get(key))))
    return Changes(items)


def refusal(folder: Path, changes: Changes) -> str:
    """The one line that refuses call-setting differences in a run folder."""
    return (f"{folder} holds a run with other call settings: {changes.said(CALLS)}; use a new --output-dir for "
            f"these settings, or pass --allow-config-change to run them in this folder (its finished results "
            f"are then kept in {previous_dir(folder)}/)")


def invocation(run: dict[str, Any], at: str) -> dict[str, Any]:
    """One entry of run.json ``invocations``: when, the command, its how-settings."""
    return {"at": at, "command": run.get("command"), "how": how_settings(run)}
