"""The one-configuration decision over a run folder's run.json, made once
a run's manifest is built and before its first task: which finished tasks
are kept whole and which run again (:mod:`avhb.resume.finished`), the
settings that changed (:mod:`avhb.resume.setting_kinds`: refused, or said, the
results they replace kept in ``previous/``), this invocation recorded; and,
as each task ends, its finished record in run.json."""
from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from avhb.call.caller import KEY_SCHEME
from avhb.errors import UserError
from avhb.resume.finished import file_stamp, task_digest, why_not
from avhb.runfolder.folder import RunFolder
from avhb.runfolder.journal import MODEL_CALLS, kind_file
from avhb.runfolder.layout import results_file
from avhb.runfolder.previous import keep_previous
from avhb.options import RunOptions
from avhb.runfolder.results import TaskResult
from avhb.resume.setting_kinds import CALLS, HOW, SCORING, SELECTION, compare, invocation, refusal


def kept_and_rerun(names: list[str], before: dict[str, TaskResult], recorded: dict[str, Any],
                   parts: dict[str, dict[str, str] | None], samples_path: Callable[[str], Path],
                   score_only: bool) -> tuple[set[str], dict[str, str]]:
    """Finished tasks: kept whole, or run again (task -> why; said, and
    their results kept: :func:`settle`)."""
    kept, rerun = set(), {}
    for name in names:
        if score_only or name not in before:
            continue
        why = why_not(recorded, name, parts[name], samples_path(name))
        if why is None:
            kept.add(name)
        elif name in (recorded.get("finished") or {}):
            rerun[name] = why
    return kept, rerun


def refuse_other_calls(folder: RunFolder, manifest: dict[str, Any], recorded: dict[str, Any],
                       o: RunOptions) -> None:
    """The one-configuration refusal alone (``UserError``: other call
    settings in a folder that recorded a run, without
    ``--allow-config-change``), checked before anything is estimated or
    moved aside."""
    if not recorded or o.score_only or o.allow_config_change:
        return
    changes = compare(recorded, manifest)
    if changes.of(CALLS):
        raise UserError(refusal(folder.root, changes))


def settle(folder: RunFolder, manifest: dict[str, Any], recorded: dict[str, Any], rerun: dict[str, str],
           o: RunOptions) -> None:
    """The one-configuration rule (:mod:`avhb.resume.setting_kinds`) against the
    folder's recorded run.json: refuse other call settings
    (:func:`refuse_other_calls`; ``avhb score`` makes no calls and only
    says them), say every change in one line each, keep the results
    they replace in ``previous/``, record this invocation."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    root = folder.root
    score = o.score_only
    manifest["call_keys"] = KEY_SCHEME
    if not recorded:
        if not score:
            manifest["invocations"] = [invocation(manifest, now)]
        return
    changes = compare(recorded, manifest)
    refuse_other_calls(folder, manifest, recorded, o)
    said = []
    if changes.of(CALLS):
        said.append(f"call settings changed ({'re-scored from the journal' if score else '--allow-config-change'}): "
                    f"{changes.said(CALLS)}")
    if changes.of(SCORING):
        said.append(f"{changes.said(SCORING)} (re-scored; the model's answers come from the journal)")
    if changes.of(SELECTION):
        said.append(changes.said(SELECTION))
    for line in said:
        print(f"avhb: note: {root}: {line}", file=sys.stderr)
    for task, why in rerun.items():
        print(f"avhb: note: {task}: finished earlier, but {why}: running it again (the journal answers every "
              "call already made)", file=sys.stderr)
    if (said or rerun) and results_file(root).is_file():
        where = keep_previous(root, recorded)
        print(f"avhb: note: {root}: the results this run replaces are kept in {root / where}/ "
              "(run.json 'previous')", file=sys.stderr)
        manifest["previous"] = [*(recorded.get("previous") or []), {
            "folder": where, "at": now, "why": said + [f"{t}: {why}" for t, why in rerun.items()]}]
    if recorded.get("call_keys") != KEY_SCHEME and kind_file(folder.journal_dir, MODEL_CALLS).is_file():
        print(f"avhb: note: {root}: its journal was written with the earlier call keys (video and audio by path): "
              "calls with media are sent again under content keys; text-only calls are answered by the journal",
              file=sys.stderr)
    if score:
        return
    history = list(recorded.get("invocations") or [invocation(recorded, recorded.get("created") or now)])
    if changes.of(HOW):
        print(f"avhb: note: {root}: how calls are made changed: {changes.said(HOW)} (the answers do not depend "
              "on it; each invocation's settings are in run.json 'invocations')", file=sys.stderr)
    manifest["invocations"] = [*history, invocation(manifest, now)]


def mark_finished(folder: RunFolder, manifest: dict[str, Any], task: str, parts: dict[str, str] | None) -> None:
    """Record (or clear) the task's inputs and digest in run.json."""
    finished = dict(manifest.get("finished") or {})
    fp = task_digest(parts)
    stamp = file_stamp(folder.samples_path(task)) if fp else None
    if fp and stamp:
        finished[task] = {"fingerprint": fp, "inputs": parts, "samples": stamp}
    elif task in finished:
        del finished[task]
    else:
        return
    manifest["finished"] = finished
    folder.write_run(manifest)

