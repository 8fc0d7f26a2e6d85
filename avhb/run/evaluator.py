"""A run, as a short composition of phases:

    resolve tasks and data -> build the model's and judges' callers (fail
    before paying) -> per task: generate (drivers through the one call path)
    -> score (filters, metrics, judges) -> results (typed; flattened when
    written) -> run folder (samples, results.json, report.html)

``avhb score`` is the same run with a replaying model caller: every model
answer comes from the journal, and no backend is built for the model.

The report is not drawn here (run/ never imports report/): ``report``, a
function of the run folder (the CLI and :func:`avhb.evaluate` pass
:func:`avhb.report.html.write_report`), is called once results.json is
written, under the lock.

The run holds its folder's lock throughout (:mod:`avhb.runfolder.lock`).  When a
backend's circuit breaker opens (the model's or a judge's), the task in
progress finishes with its remaining samples recorded as not attempted,
its results are written, later tasks are not started, and the run raises
``RunStopped`` naming the backend.  A run that finishes with more failed
samples than its error budget allows (``--max-errors``) raises
``OverBudget`` (a ``RunStopped``) once everything is written
(:mod:`avhb.run.budget`).
"""
from __future__ import annotations

import sys
from collections import Counter
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable

from avhb.errors import EnvironmentFailure, RunStopped, UserError
from avhb.redact import add_arg_secrets
from avhb.model.backend import Backend, BackendSpec, create_backend
from avhb.call.caller import Caller, NotInJournal
from avhb.registry import get_registry
from avhb.run.budget import OverBudget, over_budget
from avhb.resume.finished import inputs
from avhb.runfolder.folder import RunFolder
from avhb.run.generate_phase import TaskRun, generate, generate_bar, write_out
from avhb.process.interrupt import stoppable
from avhb.runfolder.journal import MODEL_CALLS, Journal, kind_file
from avhb.run.session import CallSession
from avhb.runfolder.manifest import build_manifest, recorded_manifest
from avhb.run.notes import adaptation_notes, judge_adaptation_notes, said_kinds, samples_notes, task_key_notes
from avhb.options import RunOptions, media_plan
from avhb.run.plan import (backend_notes, check_backend, check_judge_kinds, check_metric_roles, check_names_used,
                           check_runnable, check_transcribers, resolve_sources, resolve_tasks)
from avhb.run.records import SampleReader, TaskSamples
from avhb.run.reduced import Reduced
from avhb.runfolder.results import RunResults
from avhb.resume.decide import kept_and_rerun, mark_finished, refuse_other_calls, settle
from avhb.run.score_phase import cluster_key, score, score_bar, summarize
from avhb.run.stream import Failures, kept_fields, slim, window_size
from avhb.score.judges import Judges
from avhb.score.metric import SampleRecord
from avhb.taskdef.index import TaskIndex, build_index
from avhb.run.task import Task


class NotInRunJournal(UserError):
    """A replaying run (``avhb score``, ``avhb merge``) needs an answer its
    journal does not hold; ``records`` are the task's samples as this run
    built them (the missing ones have ``error == "not in the journal"``)."""

    def __init__(self, message: str, task: str, records: list[SampleRecord]):
        super().__init__(message)
        self.task = task
        self.records = records




class Evaluator:
    def __init__(self, options: RunOptions, index: TaskIndex | None = None,
                 report: Callable[[Path], object] | None = None):
        over_budget({}, options.max_errors)  # a bad --max-errors is refused before the folder is made
        self.o = options
        self.report = report  # writes report.html from the run folder (None: no report)
        self.registry = get_registry()
        self.index = index or build_index(self.registry)
        self.folder = RunFolder(options.output_dir)
        self.results = RunResults()
        self.reader = SampleReader(options, self.index, self.results.absent)  # the data, checked; its samples chosen
        self._said: set[str] = set()  # "task|adaptation kind" already said in a note
        self.manifest: dict[str, Any] = {}
        self.stopped: str | None = None  # why the run stopped early (a backend's breaker opened)
        self.not_attempted = 0  # samples an open breaker never sent
        self.causes: Counter[str] = Counter()  # the failed samples' errors, by cause (avhb.run.budget.error_cause)
        self.kept_usage: dict[str, Any] | None = None  # usage["model"] of a resume that kept every task

    @property
    def _model(self) -> BackendSpec:
        """The model under test (a run names one: ``--model``, or run.json's)."""
        assert self.o.model is not None, "a run needs a model"
        return self.o.model

    async def run(self) -> dict[str, Any]:
        """The run (:meth:`_run`), holding the folder's lock, held to its
        error budget: results.json's content, or ``OverBudget`` with it."""
        self.folder.open()  # the lock: one process writes a run folder
        try:
            results = await stoppable(self._run(), lock=self.folder.lock)  # SIGTERM: finish what is in flight, stop
        finally:
            self.folder.close()
        over = over_budget(results, self.o.max_errors, self.causes)
        if over:
            raise OverBudget(over, results)
        return results

    async def _run(self) -> dict[str, Any]:
        """The phases (module docstring): plan and read the data, build the
        callers and check before any call, settle against run.json, run the
        tasks, finish."""
        tasks = resolve_tasks(self.index, self.registry, self.o)
        check_runnable(tasks)  # an output type avhb does not run is said before its data is read
        check_names_used(tasks, self.index, self.o)  # a misspelt --data NAME is said before any data is looked for
        recorded = recorded_manifest(self.folder.root) or {}
        sources = resolve_sources(tasks, self.index, self.o, recorded)
        plans = {t.name: media_plan(t, self.o) for t in tasks}
        for t in tasks:
            check_metric_roles(t, self.o.predict_only)
        samples, absent_note = self.reader.read(tasks, sources)  # data checked before any model call
        tasks = [t for t in tasks if t.name in samples]
        notes = (list(self.o.notes) + absent_note + samples_notes(self.o.samples, self.reader.matched)
                 + task_key_notes(tasks))
        make_backend = create_backend if self.o.executor is None else self.o.executor.backend_factory()
        add_arg_secrets(self._model.args)  # the run's secrets (avhb.redact), wherever the backend runs
        backend = None if self.o.score_only else make_backend(self._model)
        if backend is not None:
            notes += backend_notes(backend, tasks, plans, sources, samples, self.o, self._model.label)
        session = CallSession(self.folder.journal_dir, self.o.judges, make_backend,
                              replay_identities=(recorded.get("judge_identities") or {}) if self.o.replay_judges else None)
        self._check_before_calls(tasks, plans, sources, samples, backend, session.judges)
        model = self._model_caller(session, backend, recorded)
        notes = self._say_notes(backend, tasks, notes)
        if self.o.max_cost is not None:
            session.limit_spend(self.o.max_cost)  # the judges' callers are built (judges.prepare above)
        try:
            runs = self._task_runs(tasks, sources, plans, model, session.judges)
            panels = self._build_manifest(recorded, tasks, sources, plans, backend, session.judges, notes)
            before = RunResults.read(self.folder.root) or RunResults()
            parts = {t.name: inputs(t, sources[t.name], plans[t.name], self.o, model.identity, panels[t.name],
                                    self.registry.versions()) for t in tasks}
            kept, rerun = kept_and_rerun([t.name for t in tasks], before.tasks, recorded, parts,
                                         self.folder.samples_path, self.o.score_only)
            refuse_other_calls(self.folder, self.manifest, recorded, self.o)  # refused: nothing printed or estimated
            if self.o.write_out:
                write_out(runs, samples)
            if backend is not None:  # before anything is moved aside: --max-cost may refuse to start
                self._say_estimate(runs, samples, kept, session.judges, session.journal)
            settle(self.folder, self.manifest, recorded, rerun, self.o)
            self.folder.write_run(self.manifest)
            await self._run_tasks(tasks, runs, samples, kept, before, parts, model, session.judges)
        finally:
            await session.aclose()
        return self._finish(tasks)

    # ------------------------------------------------------------------ before any call
    def _check_before_calls(self, tasks: list[Task], plans: dict[str, Any], sources: dict[str, Any],
                            samples: dict[str, TaskSamples], backend: Backend | None, judges: Judges) -> None:
        """What would fail mid-run fails now: a judge that cannot be built
        (or cannot see what it is sent), a later task's missing
        speech-to-text package, settings the backend refuses before it
        loads (:mod:`avhb.run.plan`)."""
        check_judge_kinds(tasks, judges, self.o, self.registry)
        for t in tasks:
            if not self.o.replay_judges:
                judges.prepare(t.bound_roles(self.o.predict_only))
        check_transcribers(tasks, plans, sources, samples, backend, judges, self.o)  # no backend: judges only
        if backend is not None:
            check_backend(tasks, plans, backend, self.o, self.registry, self._model.label)

    def _model_caller(self, session: CallSession, backend: Backend | None, recorded: dict[str, Any]) -> Caller:
        """The model's caller: through the backend, or (``avhb score``)
        replaying the identity run.json recorded."""
        if backend is not None:
            return session.model_caller(backend, label=self._model.label)
        rec = recorded.get("model") or {}
        return session.model_caller(identity=rec.get("identity") or {k: rec.get(k) for k in ("kind", "name", "args")})

    def _say_notes(self, backend: Backend | None, tasks: list[Task], notes: list[str]) -> list[str]:
        """The plan-time notes (the backend's first), said once each."""
        notes = list(dict.fromkeys([*(getattr(backend, "notes", []) or []), *notes]))
        for note in notes:
            print(f"avhb: note: {note}", file=sys.stderr)
        self._said = {k for t in tasks for k in said_kinds(t.name, notes)}
        return notes

    def _build_manifest(self, recorded: dict[str, Any], tasks: list[Task], sources: dict[str, Any],
                        plans: dict[str, Any], backend: Backend | None, judges: Judges,
                        notes: list[str]) -> dict[str, dict[str, list[Any]]]:
        """run.json's content (self.manifest, written once settled); returns
        each task's judge panels (role -> judge identities)."""
        self.manifest = build_manifest(
            recorded or None, self.o, tasks, sources, plans,
            None if backend is None else {**backend.describe(), "identity": backend.identity},
            self._describe_judges(tasks, judges), self.registry.versions(), notes, judges.identities())
        for name, n in self.reader.docs.items():  # lm-eval's n-samples "original" (avhb.report.lmeval)
            self.manifest["tasks"][name]["docs"] = n
        if self.o.seeds is not None:
            self.manifest["seeds"] = list(self.o.seeds)
        if self.o.system_instruction:
            self.manifest["system_instruction"] = self.o.system_instruction
        panels = {t.name: self._judge_identities(t, judges) for t in tasks}
        self.manifest["judge_panels"] = {role: ids for t in tasks for role, ids in panels[t.name].items()}
        return panels

    # ------------------------------------------------------------------ the tasks
    def _task_runs(self, tasks: list[Task], sources: dict[str, Any], plans: dict[str, Any], model: Caller,
                   judges: Judges) -> dict[str, TaskRun]:
        """Each task as its drivers see it: data, media plan, the model's
        and its judges' callers, generation settings, few-shot examples."""
        return {t.name: TaskRun(t, sources[t.name], plans[t.name], model,
                                judges.for_task(t.name, t.judge_roles(), plans[t.name]), self.o.gen_kwargs,
                                self.o.seed, self.o.system_instruction, self.reader.fewshot.get(t.name, {}),
                                self.o.fewshot_as_multiturn) for t in tasks}

    async def _run_tasks(self, tasks: list[Task], runs: dict[str, TaskRun], samples: dict[str, TaskSamples],
                         kept: set[str], before: RunResults, parts: dict[str, dict[str, str] | None], model: Caller,
                         judges: Judges) -> None:
        """Each task in turn: kept whole (finished earlier with the same
        settings) or generated and scored; its results written as soon as
        it ends; stop when a backend's breaker opened."""
        ran = False
        for task in tasks:
            run = runs[task.name]
            if task.name in kept:
                self.results.tasks[task.name] = before.tasks[task.name]  # nothing to do: see avhb.resume.finished
                if not ran:  # a resume with nothing to do leaves results.json as it was
                    self.results.judge_usage = dict(before.judge_usage)
                print(f"avhb: {task.name}: finished earlier with the same settings; results kept", file=sys.stderr)
                clean = True
            else:
                ran = True
                clean = await self._run_task(run, judges, samples[task.name])
            self.results.aggregate_groups(self.index.groups, self.index.group_members, self.index.group_entries)
            self._write_results(judges, ran)  # each task's results land as soon as it finishes
            mark_finished(self.folder, self.manifest, task.name, parts[task.name] if clean else None)
            self.stopped = self._stop_reason(model, judges)
            if self.stopped:
                break
        if not ran:
            self.kept_usage = _usage_of_the_same_tasks(before, self.results)

    def _finish(self, tasks: list[Task]) -> dict[str, Any]:
        """results.json's last word (a stopped run says why), the report;
        a stopped run raises RunStopped."""
        message = None
        if self.stopped:
            done = [t.name for t in tasks if t.name in self.results.tasks]
            skipped = len(tasks) - len(done)
            message = (f"{self.stopped}; {self.not_attempted} samples not attempted"
                       + (f", {skipped} tasks not started" if skipped else ""))
            self.results.extra["stopped"] = message  # unfinished: `avhb merge` refuses it until it is resumed
        if self.results.tasks:  # the model's usage: the journal read once, when the results are complete
            self._add_model_usage()
        if self.results.tasks or message:
            self.folder.write_results(self.results.to_json())
        if self.o.write_report:
            self._write_report()
        if message:
            raise RunStopped(message + "; re-running the command retries them", self.results.to_json())
        return self.results.to_json()

    def _say_estimate(self, runs: dict[str, TaskRun], samples: dict[str, TaskSamples], finished: set[str],
                      judges: Judges, journal: Journal) -> None:
        """The calls, tokens and cost ahead, before the first call
        (:mod:`avhb.run.estimate`); ``--max-cost`` refuses to start above it."""
        from avhb.run.estimate import estimate

        ahead = estimate(runs, samples, finished, judges, journal, self.o.predict_only)
        print(f"avhb: estimate: {ahead.line()}", file=sys.stderr)
        for note in ahead.notes:
            print(f"avhb: estimate: {note}", file=sys.stderr)
        limit = self.o.max_cost
        if limit is None:
            return
        cost = ahead.cost
        if cost is None:
            raise UserError(f"--max-cost {limit:g}: the cost cannot be estimated ({', '.join(ahead.unpriced())}: no "
                            "prices known), so the run could not be held under it; drop --max-cost to run anyway")
        if cost > limit:
            raise UserError(f"--max-cost {limit:g}: the estimated cost is {cost:.4f} USD (an upper bound: every "
                            "completion at max_tokens); lower --limit or raise --max-cost")

    @staticmethod
    def _stop_reason(model: Caller, judges: Judges) -> str | None:
        if model.spend is not None and model.spend.reached:
            return model.spend.message()
        for caller in [model, *judges.callers()]:
            message = caller.stop_message()
            if message:
                return message
        return None

    def _describe_judges(self, tasks: list[Task], judges: Judges) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for t in tasks:
            try:
                out.update(judges.describe(t.judge_roles()))
            except UserError:
                if not self.o.predict_only:
                    raise
        return out

    def _judge_identities(self, task: Task, judges: Judges) -> dict[str, list[Any]]:
        """The identities of the judges each of the task's roles asks."""
        roles = task.bound_roles(self.o.predict_only)
        return {name: [judges.caller(spec).identity for spec in judges.panel(role)] for name, role in roles.items()}

    async def _run_task(self, run: TaskRun, judges: Judges, samples: TaskSamples) -> bool:
        """Generate, score and write one task, a window of samples at a time
        (:mod:`avhb.run.stream`), then summarize it; True when no sample
        failed and every judge verdict was read (the task is finished:
        avhb.resume.finished)."""
        task = run.task
        metrics = [] if self.o.predict_only else task.metrics()
        keep = kept_fields(metrics)
        axes = [axis.field for axis in task.breakdown]  # with the fields the samples cluster by (kept for the summary)
        axes += [f for f in cluster_key(task, self.o.repeats or task.repeats).fields if f not in axes]
        size = len(samples) if run.model.replaying else window_size(run.model.concurrency)
        failures = Failures()
        # each window's records, reduced to what the aggregates read: as columns when they read no more
        # than the summary keeps (avhb.run.reduced)
        records: list[SampleRecord] | Reduced = Reduced(breakdown=axes) if keep == frozenset() else []
        model_cost = lambda: judges.usage.cost + run.model.usage.cost  # noqa: E731
        judge_cost = lambda: judges.usage.cost  # noqa: E731
        # one window: each stage's progress opens and closes with it; several: each spans them all
        spanning = samples.window_count(size) > 1
        with (generate_bar(run, samples.todo) if spanning else nullcontext()) as model_bar, \
                (score_bar(task, len(samples)) if spanning and metrics else nullcontext()) as score_bar_, \
                self.folder.samples_file(task.name) as append:
            for window in samples.windows(size):
                await self._window(run, window, metrics, model_cost, judge_cost, model_bar, score_bar_, failures)
                append(window)
                failures.add(window)
                if not isinstance(records, Reduced):  # the columns keep what slim would
                    slim(window, keep, axes)
                records.extend(window)
                window.clear()  # let go before the next window is built (the loop still names this one)
        path = self.folder.samples_path(task.name)
        if failures.crashes:
            print(f"avhb: warning: {task.name}: scoring failed on {failures.crashes} samples (recorded "
                  f"as errors); first: {failures.first_crash}", file=sys.stderr)
        self._say(judge_adaptation_notes(run.judges.adaptations, self._said))
        self.results.add_judge_errors(run.judges.errors, run.judges.last_error)
        result = summarize(task, records, metrics, run.judges, self.o.repeats or task.repeats)
        self.results.tasks[task.name] = result
        self.not_attempted += failures.not_attempted
        self.causes.update(failures.causes)
        if failures.first is not None:
            cause, count = failures.causes.most_common(1)[0]
            print(f"avhb: warning: task {task.name}: {failures.count} of {len(records)} samples failed and are "
                  f"excluded from its metrics (most common error, {count} of them: {cause}; first: sample "
                  f"{failures.first[0]!r}); see {path}", file=sys.stderr)
        return result.errors == 0 and result.judge_failures == 0

    async def _window(self, run: TaskRun, window: list[SampleRecord], metrics: list[Any],
                      model_cost: Callable[[], float], judge_cost: Callable[[], float], model_bar: Any,
                      score_bar_: Any, failures: Failures) -> None:
        """One window's samples generated and scored."""
        task = run.task
        missing = await generate(run, window, model_cost, bar=model_bar)
        self._note_adaptations(task, window)
        if missing:
            raise NotInRunJournal(f"{missing} responses of task {task.name!r} are not in {self.folder.root}'s journal "
                                  "(the run is unfinished or failed there): resume it with its original command "
                                  "first; avhb score makes no model calls", task.name, window)
        if metrics:
            try:
                failures.add_crashes(await score(task, window, metrics, run.judges, judge_cost,
                                                 run.source.media_root, bar=score_bar_))
            except NotInJournal:
                raise NotInRunJournal(f"a judge answer of task {task.name!r} is not in {self.folder.root}'s journal "
                                      "(the run is unfinished there): resume it with its original command first",
                                      task.name, window) from None

    def _note_adaptations(self, task: Task, records: list[SampleRecord]) -> None:
        """Adaptations the plan-time notes did not foresee (a driver's
        requests, samples unlike the first): said once, kept in run.json."""
        label = self.o.model.label if self.o.model else "the model"
        self._say(adaptation_notes(task.name, records, self._said, label))

    def _say(self, new: list[str]) -> None:
        """Notes found while the run goes: said once, kept in run.json."""
        if not new:
            return
        for note in new:
            print(f"avhb: note: {note}", file=sys.stderr)
        self.manifest["notes"] = list(dict.fromkeys([*self.manifest.get("notes", []), *new]))
        self.folder.write_run(self.manifest)

    # ------------------------------------------------------------------ outputs
    def _write_results(self, judges: Judges, ran: bool = True) -> None:
        self.results.model = self.o.model.label if self.o.model else None
        if ran:
            self.results.judge_usage = judges.usage.as_dict()
        if self.o.shard is not None:  # a shard's numbers are a slice's, not the benchmark's
            self.results.extra["shard"] = self.o.shard.label
        self.folder.write_results(self.results.to_json())

    def _add_model_usage(self) -> None:
        """results.json's ``usage["model"]``: the calls its results rest
        on, from the journal (:mod:`avhb.run.usage`)."""
        from avhb.run.usage import model_usage

        if self.kept_usage is not None:  # every task kept whole: the journal holds nothing new for them
            self.results.usage["model"] = self.kept_usage
            return
        self.results.usage["model"] = model_usage(
            kind_file(self.folder.journal_dir, MODEL_CALLS),
            {name: self.folder.samples_path(name) for name in self.results.tasks})

    def _write_report(self) -> None:
        """report.html; a report that fails is a warning (a report bug must
        not lose a finished run), except a folder that cannot be written (a
        full disk): that is the run's failure, one line, as for every
        writer of the run folder (its results are kept; re-running writes
        the report)."""
        if self.report is None:
            return
        try:
            self.report(self.folder.root)
        except EnvironmentFailure:
            raise
        except Exception as exc:
            print(f"avhb: warning: report.html not written: {exc}", file=sys.stderr)


def _usage_of_the_same_tasks(before: RunResults, now: RunResults) -> dict[str, Any] | None:
    """The previous results.json's ``usage["model"]`` when it covers exactly
    the tasks these results hold (a resume that kept every task: the calls
    those results rest on are the ones it counted), else None (read the
    journal again)."""
    model = before.usage.get("model")
    if not isinstance(model, dict) or not isinstance(model.get("tasks"), dict):
        return None
    return model if set(model["tasks"]) == set(now.tasks) else None
