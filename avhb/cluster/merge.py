"""``avhb merge OUT SHARD_DIR...``: the run folders of ``--shard I/N`` runs
combined into one run folder equal to the unsharded run's.

1. Every folder must be a finished shard of the same run: the same ``N``,
   and the same settings of every kind but *how* calls were made
   (:func:`avhb.resume.setting_kinds.compare`, the comparison resume uses: model,
   tasks and their configs, data, generation and media settings, judges,
   selection, plugins; a shard resumed with another concurrency,
   ``--batch_size`` or executor still merges), each index ``0..N-1``
   exactly once.  A missing index, a duplicate, a
   shard that is still running (its folder is locked by a live process, or
   by another host's live lease) or unfinished (a task without results, a
   samples file short of its count, results marked ``stopped`` by a
   breaker or a stop signal) is named and the merge refuses: it never
   reports partial numbers.
   The merge holds every shard's lock from this check to its end (no shard
   can be resumed into while it is read) and OUT's lock from before OUT is
   read (a second merge or a run into OUT is refused, naming its pid).
2. ``OUT/journal/`` is the union of the shards' journals (journal keys are
   content hashes, so a key means the same call in every shard; a key seen
   twice is kept once).  ``OUT/run.json`` is the shards' without ``shard``,
   with ``merged_from``.
3. The merged run is then scored as ``avhb score`` scores a run, with the
   judges replayed too: every model answer and every judge verdict comes
   from the merged journal, so the merge makes no call at all; a missing
   one stops it as an unfinished shard would.  Samples are rebuilt in the
   dataset's order, so ``samples/``, ``results.json`` (pairs, groups,
   breakdowns, bootstrap stderrs, run-wide cut points such as
   conciseness's) and ``report.html`` equal the unsharded run's.
   ``judge_usage`` is the sum of the shards' (the calls were made there),
   with ``duplicated_calls``/``duplicated_cost``: the judge calls that
   repeated a request another shard made (shards share no journal while
   they run; docs/design.md says why), also said in a note.
4. The merged run is held to the shards' ``--max-errors`` (``run.json:
   max_errors``; :func:`error_budget`): ``avhb merge`` exits as the
   unsharded run would.

The merge reads the tasks' data like ``avhb score`` (the same paths the
shards used: a shared filesystem on a cluster), and checks it against what
the shards recorded in ``samples/``: data changed since is named
(:func:`_data_changes`), never reported as an unfinished shard.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, Callable

from avhb.cluster.shard import Shard
from avhb.errors import UserError
from avhb.options import DEFAULT_MAX_ERRORS
from avhb.resume.setting_kinds import HOW, Difference, compare
from avhb.runfolder.folder import RunFolder, logged_doc
from avhb.runfolder.layout import journal_dir, pooled_file, report_file, results_file, run_file, samples_dir
from avhb.runfolder.journal import Journal, JournalUnion
from avhb.runfolder.lock import RunFolderLocked, RunLock
from avhb.runfolder.manifest import read_manifest
from avhb.runfolder.results import RunResults
from avhb.runfolder.samples import SamplesFile


def _describe(shard: Shard | None, folder: Path) -> str:
    return f"shard {shard.label} ({folder})" if shard else str(folder)


def _first_difference(a: dict[str, Any], b: dict[str, Any]) -> Difference | None:
    """The first setting two shards' run.json differ in, how-settings aside."""
    return next((d for d in compare(a, b, grow=False).items if d.kind != HOW), None)


def check_finished(folder: Path, run: dict[str, Any], label: str) -> None:
    """``UserError`` unless every task of the shard has results and a
    complete samples file."""
    results = RunResults.read(folder)
    if results is None:
        raise UserError(f"{label} is unfinished: no readable results.json; resume it with its original command "
                        "(the merge refuses partial numbers)")
    if results.stopped:  # a breaker or a stop signal ended it early
        raise UserError(f"{label} is unfinished: it stopped before the end ({results.stopped}); resume it with "
                        "its original command (the merge refuses partial numbers)")
    for task in run.get("tasks") or {}:
        cell = results.tasks.get(task)
        if cell is None:
            raise UserError(f"{label} is unfinished: task {task!r} has no results; resume it with its original "
                            "command (the merge refuses partial numbers)")
        source = SamplesFile.of(folder, task)
        lines = sum(1 for _ in source.rows())
        if source.bad:
            raise UserError(f"{label} has a corrupt samples file: {source.bad_summary()}; resume it with its "
                            "original command (it writes the file again; the merge refuses partial numbers)")
        if source.missing:
            raise UserError(f"{label} is unfinished: {source.path} is missing, its results say {cell.samples} "
                            "samples; resume it with its original command")
        if lines != cell.samples:
            raise UserError(f"{label} is unfinished: {source.path} has {lines} samples, its results say "
                            f"{cell.samples}; resume it with its original command")


def _hold(folder: Path, label: str) -> RunLock:
    """The shard folder's lock, held for the whole merge: a shard that is
    still running (a live process holds its folder) is refused, naming that
    process, and none can start writing while it is merged."""
    lock = RunLock(folder)
    try:
        lock.acquire()
    except RunFolderLocked as exc:
        who = exc.holder.describe() if exc.holder else "another process"
        raise UserError(f"{label} is still running: {who} holds it; wait for it to finish (the merge refuses "
                        "partial numbers)") from None
    if lock.note:  # a killed shard's lock (on another machine: its lease expired) taken over
        print(f"avhb: note: {folder}: {lock.note}", file=sys.stderr)
    return lock


def _hold_out(folder: RunFolder) -> None:
    """OUT's lock, held until the merged run is written: two merges (or a
    run) into one folder are refused, naming the process that holds it."""
    try:
        folder.open()
    except RunFolderLocked as exc:
        who = exc.holder.describe() if exc.holder else "another process"
        raise UserError(f"avhb merge: the output folder {folder.root} is in use by {who}: wait for it to finish, "
                        "or merge into another folder") from None


def plan_merge(out: Path, folders: list[Path], locks: list[RunLock] | None = None
               ) -> tuple[dict[str, Any], list[tuple[Shard, Path, dict[str, Any]]]]:
    """Check the shards (module docstring, step 1); returns the run.json of
    the merged run and the shards in index order.  Each shard's lock is
    taken (and appended to ``locks``, for the caller to release)."""
    if not folders:
        raise UserError("avhb merge OUT SHARD_DIR...: name the shard run folders")
    shards: list[tuple[Shard, Path, dict[str, Any]]] = []
    for folder in folders:
        if out.resolve() == folder.resolve():
            raise UserError(f"avhb merge: the output folder {out} is one of the shards; merge into a new folder")
        run = read_manifest(folder)
        shard = Shard.from_json(run.get("shard"))
        if shard is None:
            raise UserError(f"{folder} is not a shard (its run.json has no 'shard'; it was not run with --shard I/N)")
        shards.append((shard, folder, run))
    count = shards[0][0].count
    for shard, folder, _ in shards:
        if shard.count != count:
            raise UserError(f"{_describe(shard, folder)} is one of {shard.count} shards, "
                            f"{_describe(shards[0][0], shards[0][1])} one of {count}")
    seen: dict[int, Path] = {}
    for shard, folder, _ in shards:
        if shard.index in seen:
            raise UserError(f"shard {shard.label} is given twice: {seen[shard.index]} and {folder}")
        seen[shard.index] = folder
    missing = [i for i in range(count) if i not in seen]
    if missing:
        given = ", ".join(f"{s.label} ({f})" for s, f, _ in sorted(shards, key=lambda x: x[0].index))
        raise UserError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{i}/{count}' for i in missing)} "
                        f"missing (given: {given}); the merge refuses partial numbers")
    shards.sort(key=lambda x: x[0].index)
    for shard, folder, run in shards[1:]:
        diff = _first_difference(shards[0][2], run)
        if diff is not None:
            raise UserError(f"{_describe(shard, folder)} differs from {_describe(shards[0][0], shards[0][1])} in "
                            f"run.json {diff.key!r} ({diff.new} here, {diff.old} there): they are not shards of "
                            "one run")
    for shard, folder, run in shards:
        label = _describe(shard, folder)
        lock = _hold(folder, label)
        if locks is not None:
            locks.append(lock)
        else:
            lock.release()
        check_finished(folder, run, label)
    first = shards[0][2]
    merged = {k: v for k, v in first.items() if k not in ("shard", "finished", "invocations", "previous")}
    identities: dict[str, Any] = {}
    for _, _, run in shards:
        identities.update(run.get("judge_identities") or {})
    if identities:
        merged["judge_identities"] = identities
    merged["merged_from"] = [str(f) for _, f, _ in shards]
    return merged, shards


def _check_out(out: Path, merged: dict[str, Any]) -> None:
    """OUT is new, or an earlier merge of the same run (read under OUT's lock)."""
    if run_file(out).is_file():
        before = read_manifest(out)
        if before.get("shard") or _first_difference(before, merged) is not None:
            raise UserError(f"{out} holds another run; merge into a new folder")


def merge_journals(out: Path, folders: list[Path]) -> JournalUnion:
    """``OUT/journal/`` = the union of the shards' journals (:meth:`Journal.merge`)."""
    return Journal.merge(journal_dir(out), [journal_dir(f) for f in folders])


def _summed_usage(shards: list[tuple[Shard, Path, dict[str, Any]]]) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for _, folder, _ in shards:
        results = RunResults.read(folder)  # check_finished read it already
        usage = results.judge_usage if results is not None else {}
        for k, v in usage.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                total[k] = total.get(k, 0) + v
    if "cost" in total:
        total["cost"] = round(total["cost"], 6)
    return total


def error_budget(shards: list[tuple[Shard, Path, dict[str, Any]]], given: str | None) -> str:
    """The ``--max-errors`` the merged run is held to: ``given``, else the
    one the shards ran under (``run.json: max_errors``; 5%, the run's
    default, for shards that did not record it).  Shards that ran under
    different budgets need ``given``: the merge picks none of them."""
    if given is not None:
        return given
    budgets: dict[str, Shard] = {}
    for shard, _, run in shards:
        budgets.setdefault(str(run.get("max_errors") or DEFAULT_MAX_ERRORS), shard)  # each budget with the first shard under it
    if len(budgets) > 1:
        listed = ", ".join(f"{b} (shard {s.label})" for b, s in budgets.items())
        raise UserError(f"avhb merge: the shards ran under different --max-errors ({listed}): give the merge one, "
                        "e.g. avhb merge --max-errors 5% OUT SHARD_DIR...")
    return next(iter(budgets))


def merge(out: Path, folders: list[Path], command: list[str] | None = None,
          report: Callable[[Path], object] | None = None, max_errors: str | None = None) -> dict[str, Any]:
    """The merge (module docstring); returns the merged results.json.  Its
    run.json records the error budget the merged counts are held to
    (:func:`error_budget`).  ``report`` writes the merged folder's
    report.html (the CLI passes :func:`avhb.report.html.write_report`;
    None: no report)."""
    from avhb.process.interrupt import raising
    from avhb.run.budget import OverBudget, over_budget

    out = Path(out)
    locks: list[RunLock] = []
    try:
        with raising():  # SIGTERM: the locks below are released on the way out
            results = _merge(out, [Path(f) for f in folders], command, report, max_errors, locks)
    finally:
        for lock in locks:
            lock.release()
    over = over_budget(results, read_manifest(out)["max_errors"])  # the shards' budget, over the merged counts
    if over:
        raise OverBudget(over, results)
    return results


def _merge(out: Path, folders: list[Path], command: list[str] | None, report: Callable[[Path], object] | None,
           max_errors: str | None, locks: list[RunLock]) -> dict[str, Any]:
    from avhb.options import parse_error_budget
    from avhb.process import event_loop
    from avhb.run.evaluator import Evaluator, NotInRunJournal
    from avhb.runfolder.manifest import options_from_run

    merged, shards = plan_merge(out, folders, locks)  # every shard's lock, held throughout
    merged["max_errors"] = error_budget(shards, max_errors)
    parse_error_budget(merged["max_errors"])  # a bad --max-errors is refused before OUT is touched
    folder = RunFolder(out)
    _hold_out(folder)
    locks.append(folder.lock)
    _check_out(out, merged)
    # a previous merge's files are rebuilt
    for path in (samples_dir(out), results_file(out), report_file(out), pooled_file(out)):
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    union = merge_journals(out, [f for _, f, _ in shards])
    repeats = _repeated_judge_calls(union)
    if command:
        merged["command"] = list(command)
    folder.write_run(merged)
    options = options_from_run(out, score_only=True)
    options.replay_judges = True
    options.write_report = False
    options.notes = [repeats] if repeats else []  # said and kept in run.json notes, under the results table
    evaluator = Evaluator(options, report=report)
    evaluator.folder = folder
    try:
        event_loop.run(evaluator._run())
        _check_data(out, shards, merged)
    except (NotInRunJournal, UserError) as exc:
        for path in (samples_dir(out), results_file(out)):  # no numbers from a refused merge
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
        raise UserError(_why_missing(exc, shards, merged)) if isinstance(exc, NotInRunJournal) else exc from None
    usage = _summed_usage(shards)
    if union.repeated.get(JUDGES):
        usage["duplicated_calls"] = union.repeated[JUDGES]
        usage["duplicated_cost"] = union.repeated_cost[JUDGES]
    evaluator.results.judge_usage = usage
    results = evaluator.results.to_json()
    folder.write_results(results)
    evaluator._write_report()
    return results


JUDGES = "judges.jsonl"


def _repeated_judge_calls(union: JournalUnion) -> str | None:
    """The note on judge calls made in more than one shard (None: none).
    Within a run identical judge requests are asked once; shards do not
    share their journals while they run (docs/design.md), so a request
    that samples of two shards share is asked in both."""
    repeated = union.repeated.get(JUDGES, 0)
    if not repeated:
        return None
    distinct = union.entries.get(JUDGES, 0)
    return (f"judges: {repeated} of the {distinct + repeated} judge calls the shards made repeat a request another "
            f"shard made too (an unsharded run asks each of the {distinct} distinct requests once); results.json "
            f"judge_usage counts every call made, duplicated_calls these {repeated}")


def _docs(source: SamplesFile) -> dict[tuple[str, int], Any]:
    """(sample id, repeat) -> the sample's fields, as a samples file
    records them (the shards' files were checked whole by
    :func:`check_finished`; the merged run's are this merge's own)."""
    out: dict[tuple[str, int], Any] = {}
    for row in source.rows():
        try:
            out[(str(row["id"]), int(row.get("repeat") or 0))] = row.get("doc") or {}
        except (ValueError, KeyError, TypeError):
            continue
    return out


def _data_changes(task: str, current: dict[tuple[str, int], Any], shards: list[tuple[Shard, Path, dict[str, Any]]],
                  merged: dict[str, Any]) -> str | None:
    """How the task's data now differs from what the shards ran (their
    samples files), as one line; None when it does not."""
    recorded: dict[tuple[str, int], Any] = {}
    for _, folder, _ in shards:
        recorded.update(_docs(SamplesFile.of(folder, task)))
    new = [k for k in current if k not in recorded]
    gone = [k for k in recorded if k not in current]
    changed = []
    for k, now in current.items():
        before = recorded.get(k)
        if before is not None:
            fields = sorted(f for f in set(now) | set(before) if now.get(f) != before.get(f))
            if fields:
                changed.append((k[0], fields))
    if not (new or gone or changed):
        return None
    parts = []
    if changed:
        sid, fields = changed[0]
        parts.append(f"{len(changed)} samples differ from what the shards ran (first: sample {sid!r}, "
                     f"field{'s' if len(fields) > 1 else ''} {', '.join(map(repr, fields[:5]))})")
    if new:
        parts.append(f"{len(new)} samples are new (first: {new[0][0]!r})")
    if gone:
        parts.append(f"{len(gone)} samples the shards ran are gone (first: {gone[0][0]!r})")
    root = ((merged.get("tasks") or {}).get(task) or {}).get("data", {}).get("root", "?")
    return (f"task {task!r}: its data ({root}) changed after the shards ran: {'; '.join(parts)}; the merge "
            "replays the shards' answers and scores them against the data they were given: restore that data, or "
            "run the shards again")


def _why_missing(exc: Any, shards: list[tuple[Shard, Path, dict[str, Any]]], merged: dict[str, Any]) -> str:
    """Why the merged run lacks answers: the task's data changed since the
    shards ran (named), or a shard's journal lacks them (that shard named)."""
    current = {(str(r.id), r.repeat): logged_doc(r.doc) for r in exc.records}
    changes = _data_changes(exc.task, current, shards, merged)
    if changes:
        return changes
    owner = {k: (shard, folder) for shard, folder, _ in shards for k in _docs(SamplesFile.of(folder, exc.task))}
    lacking = [owner[(str(r.id), r.repeat)] for r in exc.records
               if r.error == "not in the journal" and (str(r.id), r.repeat) in owner]
    if lacking:
        shard, folder = lacking[0]
        return (f"task {exc.task!r}: {len(lacking)} responses are in no shard's journal though its data is as the "
                f"shards ran it (first: shard {shard.label}, {folder}): that shard's journal is incomplete (or a "
                "media file changed); resume it with its original command, or run it again")
    return (f"task {exc.task!r}: {exc} (its data is as the shards ran it: a shard's journal is incomplete or a "
            "media file changed; resume that shard with its original command, or run it again)")


def _check_data(out: Path, shards: list[tuple[Shard, Path, dict[str, Any]]], merged: dict[str, Any]) -> None:
    """Every task's merged samples hold the data the shards ran: answers
    replayed against changed targets would score silently wrong."""
    for task in merged.get("tasks") or {}:
        changes = _data_changes(task, _docs(SamplesFile.of(out, task)), shards, merged)
        if changes:
            raise UserError(changes)
