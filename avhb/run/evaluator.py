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

The run holds its folder's lock throughout (:mod:`avhb.run.lock`).  When a
backend's circuit breaker opens (the model's or a judge's), the task in
progress finishes with its remaining samples recorded as not attempted,
its results are written, later tasks are not started, and the run raises
``RunStopped`` naming the backend.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from avhb.data.sources import DataSource, resolve_source
from avhb.errors import RunStopped, SampleError, UserError
from avhb.model.backend import BackendSpec, create_backend
from avhb.call.caller import Caller, NotInJournal
from avhb.registry import get_registry
from avhb.run.finished import file_stamp, fingerprint, inputs, why_not
from avhb.run.folder import RunFolder
from avhb.run.generate import TaskRun, generate, write_out
from avhb.run.interrupt import stoppable
from avhb.run.journal import Journal
from avhb.run.session import CallSession
from avhb.run.manifest import build_manifest
from avhb.run.notes import (adaptation_notes, first_request_media, gen_kwargs_notes, judge_adaptation_notes, plan_notes,
                             said_kinds, samples_notes, task_key_notes)
from avhb.run.options import RunOptions, limit_for, media_plan
from avhb.run.results import RunResults
from avhb.run.settings import CALLS, HOW, SCORING, SELECTION, compare, invocation, keep_previous, refusal
from avhb.run.scoring import score, summarize
from avhb.score.judges import Judges
from avhb.score.metric import SampleRecord
from avhb.taskdef.fewshot import examples_for
from avhb.taskdef.index import TaskIndex, build_index, load_task
from avhb.taskdef.requests import LOGLIKELIHOOD_TYPES
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
        self.o = options
        self.report = report  # writes report.html from the run folder (None: no report)
        self.registry = get_registry()
        self.index = index or build_index(self.registry)
        self.folder = RunFolder(options.output_dir)
        self.results = RunResults()
        self._matched: dict[str, set[str]] = {}  # task -> the --samples ids it has
        self._docs: dict[str, int] = {}  # task -> its documents before --limit/--samples/--shard
        self._fewshot: dict[str, dict[str, list[dict[str, Any]]]] = {}  # task -> sample id -> few-shot examples
        self._said: set[str] = set()  # "task|adaptation kind" already said in a note
        self.manifest: dict[str, Any] = {}
        self.stopped: str | None = None  # why the run stopped early (a backend's breaker opened)
        self.not_attempted = 0  # samples an open breaker never sent

    @property
    def _model(self) -> BackendSpec:
        """The model under test (a run names one: ``--model``, or run.json's)."""
        assert self.o.model is not None, "a run needs a model"
        return self.o.model

    async def run(self) -> dict[str, Any]:
        self.folder.open()  # the lock: one process writes a run folder
        try:
            return await stoppable(self._run(), lock=self.folder.lock)  # SIGTERM: finish what is in flight, stop
        finally:
            self.folder.close()

    async def _run(self) -> dict[str, Any]:
        names, _ = self.index.resolve(self.o.tasks)
        tasks = [Task(load_task(self.index, n), self.registry).with_num_fewshot(self.o.num_fewshot)
                 .for_model(self.o.model.kind if self.o.model else None) for n in names]
        self._check_names_used(tasks)  # a misspelt --data NAME is said before any data is looked for
        recorded = self.folder.read_json("run.json") or {}
        sources = {t.name: resolve_source(t.cfg, self.o.data, self.o.sample_data, self.index.groups_of(t.name),
                                          self._recorded_base(recorded, t.name))
                   for t in tasks}
        plans = {t.name: media_plan(t, self.o) for t in tasks}
        for t in tasks:
            self._check_metric_roles(t)
        records, absent_note = self._all_records(tasks, sources)  # data read before any model call
        tasks = [t for t in tasks if t.name in records]
        notes = list(self.o.notes) + absent_note + samples_notes(self.o.samples, self._matched) + task_key_notes(tasks)
        make_backend = create_backend if self.o.executor is None else self.o.executor.backend_factory()
        backend = None if self.o.score_only else make_backend(self._model)
        if backend is not None:
            notes += self._backend_notes(backend, tasks, plans, sources, records)
        session = CallSession(self.folder.journal_dir, self.o.judges, make_backend,
                              replay_identities=(recorded.get("judge_identities") or {}) if self.o.replay_judges else None)
        journal, judges = session.journal, session.judges
        for t in tasks:  # a judge that cannot be built (or cannot see what it is sent) fails now
            if not self.o.replay_judges:
                judges.prepare(t.bound_roles(self.o.predict_only))
        if backend is not None:  # a later task's speech-to-text package is missing: said now, not mid-run
            self._check_transcribers(tasks, plans, sources, records, backend, judges)
        replicas = int(getattr(backend, "replicas", 1) or 1)
        if replicas > 1 and self.o.executor is None:
            raise UserError(f"--model {self._model.label}: {replicas} engines (data_parallel_size) run as Ray workers, "
                            "one engine each: add --executor ray[:ADDRESS]")
        if backend is not None:
            for t in tasks:  # settings the backend can refuse before it loads (vLLM: frames per prompt)
                backend.check_media(plans[t.name].spec, t.name)
                self._check_loglikelihood(t, backend)
        if backend is not None:
            model = session.model_caller(backend, label=self._model.label)
        else:
            rec = recorded.get("model") or {}
            model = session.model_caller(identity=rec.get("identity") or {k: rec.get(k) for k in ("kind", "name", "args")})
        notes = list(dict.fromkeys([*(getattr(backend, "notes", []) or []), *notes]))
        for note in notes:
            print(f"avhb: note: {note}", file=sys.stderr)
        self._said = {k for t in tasks for k in said_kinds(t.name, notes)}
        if self.o.max_cost is not None:
            session.limit_spend(self.o.max_cost)  # the judges' callers are built (judges.prepare above)
        try:
            runs = {t.name: TaskRun(t, sources[t.name], plans[t.name], model,
                                    judges.for_task(t.name, t.judge_roles(), plans[t.name]), self.o.gen_kwargs,
                                    self.o.seed, self.o.system_instruction, self._fewshot.get(t.name, {}),
                                    self.o.fewshot_as_multiturn) for t in tasks}
            self.manifest = build_manifest(
                recorded or None, self.o, tasks, sources, plans,
                None if backend is None else {**backend.describe(), "identity": backend.identity},
                self._describe_judges(tasks, judges), self.registry.versions(), notes, judges.identities())
            for name, n in self._docs.items():  # lm-eval's n-samples "original" (avhb.report.lmeval)
                self.manifest["tasks"][name]["docs"] = n
            if self.o.seeds is not None:
                self.manifest["seeds"] = list(self.o.seeds)
            if self.o.system_instruction:
                self.manifest["system_instruction"] = self.o.system_instruction
            panels = {t.name: self._judge_identities(t, judges) for t in tasks}
            self.manifest["judge_panels"] = {role: ids for t in tasks for role, ids in panels[t.name].items()}
            before = RunResults.from_json(self.folder.read_json("results.json"))
            parts = {t.name: inputs(t, sources[t.name], plans[t.name], self.o, model.identity, panels[t.name],
                                    self.registry.versions()) for t in tasks}
            kept, rerun = set(), {}
            for t in tasks:  # finished tasks: kept whole, or run again (said, and their results kept: _settle)
                if self.o.score_only or t.name not in before.tasks:
                    continue
                why = why_not(recorded, t.name, parts[t.name], self.folder.samples_path(t.name))
                if why is None:
                    kept.add(t.name)
                elif t.name in (recorded.get("finished") or {}):
                    rerun[t.name] = why
            if self.o.write_out:
                write_out(runs, records)
            if backend is not None:  # before anything is moved aside: --max-cost may refuse to start
                self._say_estimate(runs, records, kept, judges, journal)
            self._settle(recorded, rerun)
            self.folder.write_run(self.manifest)
            ran = False
            for task in tasks:
                run = runs[task.name]
                if task.name in kept:
                    self.results.tasks[task.name] = before.tasks[task.name]  # nothing to do: see avhb.run.finished
                    if not ran:  # a resume with nothing to do leaves results.json as it was
                        self.results.judge_usage = dict(before.judge_usage)
                    print(f"avhb: {task.name}: finished earlier with the same settings; results kept", file=sys.stderr)
                    clean = True
                else:
                    ran = True
                    clean = await self._run_task(run, judges, records[task.name])
                self.results.aggregate_groups(self.index.groups, self.index.group_members, self.index.group_entries)
                self._write_results(judges, ran)  # each task's results land as soon as it finishes
                self._mark_finished(task.name, parts[task.name] if clean else None)
                self.stopped = self._stop_reason(model, judges)
                if self.stopped:
                    break
        finally:
            await session.aclose()
        message = None
        if self.stopped:
            done = [t.name for t in tasks if t.name in self.results.tasks]
            skipped = len(tasks) - len(done)
            message = (f"{self.stopped}; {self.not_attempted} samples not attempted"
                       + (f", {skipped} tasks not started" if skipped else ""))
            self.results.extra["stopped"] = message  # unfinished: `avhb merge` refuses it until it is resumed
            self.folder.write_results(self.results.to_json())
        if self.o.write_report:
            self._write_report()
        if message:
            raise RunStopped(message + "; re-running the command retries them", self.results.to_json())
        return self.results.to_json()

    def _say_estimate(self, runs: dict[str, TaskRun], records: dict[str, list[SampleRecord]], finished: set[str],
                      judges: Judges, journal: Journal) -> None:
        """The calls, tokens and cost ahead, before the first call
        (:mod:`avhb.run.estimate`); ``--max-cost`` refuses to start above it."""
        from avhb.run.estimate import estimate

        ahead = estimate(runs, records, finished, judges, journal, self.o.predict_only)
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

    def _recorded_base(self, recorded: dict[str, Any], task: str) -> Path | None:
        """``avhb score``: the folder a builder task's relative data paths
        resolved under when the run ran (a new run resolves them afresh)."""
        if not self.o.score_only:
            return None
        base = ((recorded.get("tasks") or {}).get(task) or {}).get("data", {}).get("base")
        return Path(base) if base else None

    @staticmethod
    def _stop_reason(model: Caller, judges: Judges) -> str | None:
        if model.spend is not None and model.spend.reached:
            return model.spend.message()
        for caller in [model, *judges.callers()]:
            message = caller.stop_message()
            if message:
                return message
        return None

    # ------------------------------------------------------------------ checks
    def _check_names_used(self, tasks: list[Task]) -> None:
        """--data and --judge names that match nothing are typos: say so.
        A --data NAME is used when some task reads it (``data_flag_for``);
        one that names a task but that every such task reads another
        --data entry for first is an error too (its path would be ignored)."""
        from avhb.data.sources import data_flag_for

        names: dict[str, set[str]] = {}  # task -> the --data NAMEs it answers to
        read: dict[str, str | None] = {}  # task -> the --data NAME it reads
        for t in tasks:
            groups = self.index.groups_of(t.name)
            names[t.name] = {n for n in (t.name, t.cfg.data_name, *t.cfg.tags, *groups) if n}
            read[t.name] = data_flag_for(t.cfg, self.o.data, groups)
        known = set().union(*names.values())
        for name in sorted(set(self.o.data) - set(read.values())):
            if name in known:
                readers = sorted({str(read[t]) for t in names if name in names[t]})
                raise UserError(f"--data {name}=...: ignored: every task it names reads --data "
                                f"{', '.join(readers)}=... first (a task's own name, then its pack, tags and groups); "
                                "drop one of them")
            raise UserError(f"--data {name}=...: no task of this run is named, tagged or grouped {name!r}"
                            f"{_spelling_hint(name, known, tasks)} (use one of: {', '.join(sorted(known))})")
        roles = {r for t in tasks for r in (t.cfg.get("judges") or {})}
        unknown = sorted(set(self.o.judges) - roles - {"*"})
        if unknown and not self.o.predict_only:
            raise UserError(f"--judge {unknown[0]}=...: no task of this run declares judge role {unknown[0]!r} "
                            f"(roles: {', '.join(sorted(roles)) or 'none'})")

    def _check_loglikelihood(self, task: Task, backend: Any) -> None:
        """A log-likelihood task on a backend that gives no token
        log-probabilities is one line before any call, naming those that do."""
        if task.output_type in LOGLIKELIHOOD_TYPES and not getattr(backend.capabilities, "loglikelihood", False):
            able = []
            for name in self.registry.names("backends"):
                try:
                    cls = self.registry.load("backends", name)
                except Exception:  # a plugin backend that cannot be imported here is not one to suggest
                    continue
                if getattr(getattr(cls, "capabilities", None), "loglikelihood", False):
                    able.append(name)
            raise UserError(f"task {task.name!r} (output_type {task.output_type}) needs token log-probabilities, "
                            f"which {self._model.label} does not give; backends that do: "
                            f"{', '.join(able) or 'none installed'}")

    def _check_metric_roles(self, task: Task) -> None:
        if self.o.predict_only:
            return
        roles = task.judge_roles()
        for m in task.metrics():
            missing = [r for r in m.needs_judges if r not in roles]
            if missing:
                raise UserError(f"task {task.name!r}: metric {m.name!r} needs judge role(s) {', '.join(missing)}, "
                                f"which {task.cfg.file.name} does not declare under 'judges'")

    def _check_transcribers(self, tasks: list[Task], plans: dict[str, Any], sources: dict[str, Any],
                            records: dict[str, list[SampleRecord]], backend: Any, judges: Judges) -> None:
        """Every task whose audio will reach the model, or a judge that
        hears none, as a transcript needs its registered transcriber's
        packages (the function's ``requires``): a missing one stops the run
        before the first task starts, not after earlier tasks spent their
        calls."""
        from avhb.media.materialize import load_transcriber
        from avhb.requirements import check_requirements
        from avhb.run.notes import first_request_media, media_of_spec

        for t in tasks:
            plan = plans[t.name]
            ablations = set(plan.ablations)
            if ablations & {"no_audio", "text_only"}:
                continue
            media = first_request_media(t, records[t.name], sources[t.name].root, plan.spec) or \
                media_of_spec(plan.spec)
            model_side = media["audio"] and ("audio_as_transcript" in ablations or not backend.capabilities.audio)
            roles = {} if self.o.replay_judges else t.bound_roles(self.o.predict_only)
            judge_side = any("audio" in role.media and not judges.caller(spec).capabilities.audio
                             for role in roles.values() for spec in judges.panel(role))
            if model_side or judge_side:
                name = plan.spec.transcriber
                check_requirements(f"task {t.name}: its audio becomes a transcript; transcriber {name!r}",
                                   getattr(load_transcriber(name), "requires", ()))

    def _describe_judges(self, tasks: list[Task], judges: Judges) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for t in tasks:
            try:
                out.update(judges.describe(t.judge_roles()))
            except UserError:
                if not self.o.predict_only:
                    raise
        return out

    # ------------------------------------------------------------------ one task
    def _backend_notes(self, backend: Any, tasks: list[Task], plans: dict[str, Any], sources: dict[str, Any],
                       records: dict[str, list[SampleRecord]]) -> list[str]:
        """What this backend will not get as asked (:mod:`avhb.run.notes`)."""
        notes: list[str] = []
        if self.o.batch_size == "auto":
            notes.append(f"--batch_size auto: {self._model.label} keeps its own concurrency "
                         f"({backend.concurrency} requests in flight)")
        elif self.o.batch_size is not None:
            notes.append(f"--batch_size {self.o.batch_size}: at most {self.o.batch_size} requests in flight to "
                         f"{self._model.label} (the backend's concurrency; it was {backend.concurrency})")
            backend.concurrency = int(self.o.batch_size)
        notes += gen_kwargs_notes(self.o.gen_kwargs, backend)
        for t in tasks:
            plan = plans[t.name]
            media = first_request_media(t, records[t.name], sources[t.name].root, plan.spec)
            notes += plan_notes(t.name, media, plan.spec, plan.ablations, backend.capabilities, self._model.label,
                                getattr(backend, "transcribes", None))
        return notes

    def _all_records(self, tasks: list[Task], sources: dict[str, DataSource]) -> tuple[dict[str, list[SampleRecord]],
                                                                                       list[str]]:
        """Every task's records, and the note on the ones skipped.  A task
        reached through a group, tag or glob whose data has no samples (a
        locale the user's copy lacks) is skipped and recorded as absent
        (its groups aggregate over the members with data:
        ``RunResults.absent``); a task named in ``--tasks`` with no samples
        is an error, as is a run left with no task."""
        explicit = {n for n in self.o.tasks if n in self.index.tasks}
        records: dict[str, list[SampleRecord]] = {}
        empty: dict[str, list[str]] = {}  # data root -> its tasks with no samples
        for t in tasks:
            docs = t.load_docs(sources[t.name])
            if not docs and t.name in explicit:
                raise UserError(f"task {t.name!r}: its data ({sources[t.name].root}) has no samples")
            if not docs:
                self.results.absent[t.name] = f"its data ({sources[t.name].root}) has no samples"
                empty.setdefault(str(sources[t.name].root), []).append(t.name)
                continue
            self._docs[t.name] = len(docs)  # lm-eval's n-samples "original" (avhb.report.lmeval)
            records[t.name] = self._records(t, sources[t.name], docs)
        if not records:
            raise UserError(f"no task of this run has samples: {', '.join(self.results.absent)} "
                            f"({'; '.join(self.results.absent.values())})")
        if not empty:
            return records, []
        groups = sorted({g for names in empty.values() for t in names for g in self.index.groups_of(t)})
        skipped = "; ".join(f"{', '.join(names)} (no samples in {root})" for root, names in empty.items())
        where = (f"; group(s) {', '.join(groups)} aggregate over the members with data (results.json "
                 "absent_members)") if groups else ""
        return records, [f"skipped {sum(map(len, empty.values()))} task(s) whose data has no samples: {skipped}{where}"]

    def _records(self, task: Task, source: DataSource, docs: list[dict[str, Any]]) -> list[SampleRecord]:
        pairs = [(task.doc_id(d, i), d) for i, d in enumerate(docs)]
        self._fewshot[task.name] = self._examples(task, source, docs, pairs)
        first: dict[str, int] = {}
        for i, (sample_id, _) in enumerate(pairs):
            if sample_id in first:
                field = task.cfg.get("doc_id")
                raise UserError(f"task {task.name!r}: sample id {sample_id!r} appears twice in {source.root} "
                                f"(samples {first[sample_id]} and {i}"
                                + (f"; doc_id field {field!r} must be unique)" if field else ")"))
            first[sample_id] = i
        if self.o.samples:
            wanted = set(self.o.samples)
            pairs = [(i, d) for i, d in pairs if i in wanted]
            self._matched[task.name] = {i for i, _ in pairs}
        limit = limit_for(self.o.limit, len(pairs))
        if limit is not None:
            pairs = pairs[:limit]
        repeats = self.o.repeats or task.repeats
        records = []
        for sample_id, doc in pairs:
            for rep in range(repeats):
                record = SampleRecord(id=sample_id, doc=doc, repeat=rep)
                try:
                    record.target = task.target(doc, sample_id)
                except SampleError as exc:
                    record.error = str(exc)
                records.append(record)
        if self.o.shard is not None:  # this shard's slice; pairs and groups stay whole
            records = self.o.shard.select(records, task.metrics(), task.name)
        return records

    def _examples(self, task: Task, source: DataSource, docs: list[dict[str, Any]],
                  pairs: list[tuple[str, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
        """Every sample's few-shot examples, drawn in the task's order
        (avhb.taskdef.fewshot): before --limit, --samples and --shard keep
        some, so a sample's examples do not depend on which others run."""
        fs = task.fewshot
        if fs.num <= 0:
            return {}
        if task.cfg.get("doc_to_messages"):
            raise UserError(f"task {task.name!r}: few-shot examples (num_fewshot {fs.num}) need doc_to_text; its "
                            "doc_to_messages hook builds its own messages")
        pool = task.fewshot_pool(source, docs)
        seed = self.o.fewshot_seed if self.o.fewshot_seed is not None else self.o.seed
        try:
            drawn = examples_for(docs, pool, fs, seed)
        except UserError as exc:
            raise UserError(f"task {task.name!r}: {exc}") from None
        return {sample_id: examples for (sample_id, _), examples in zip(pairs, drawn)}

    def _judge_identities(self, task: Task, judges: Judges) -> dict[str, list[Any]]:
        """The identities of the judges each of the task's roles asks."""
        roles = task.bound_roles(self.o.predict_only)
        return {name: [judges.caller(spec).identity for spec in judges.panel(role)] for name, role in roles.items()}

    def _settle(self, recorded: dict[str, Any], rerun: dict[str, str]) -> None:
        """The one-configuration rule (:mod:`avhb.run.settings`) against the
        folder's recorded run.json: refuse other call settings (unless
        ``--allow-config-change``; ``avhb score`` makes no calls and only
        says them), say every change in one line each, keep the results
        they replace in ``previous/``, record this invocation."""
        from datetime import datetime, timezone

        from avhb.call.caller import KEY_SCHEME

        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        root = self.folder.root
        score = self.o.score_only
        self.manifest["call_keys"] = KEY_SCHEME
        if not recorded:
            if not score:
                self.manifest["invocations"] = [invocation(self.manifest, now)]
            return
        changes = compare(recorded, self.manifest)
        if changes.of(CALLS) and not score and not self.o.allow_config_change:
            raise UserError(refusal(root, changes))
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
        if (said or rerun) and (root / "results.json").is_file():
            where = keep_previous(root, recorded)
            print(f"avhb: note: {root}: the results this run replaces are kept in {root / where}/ "
                  "(run.json 'previous')", file=sys.stderr)
            self.manifest["previous"] = [*(recorded.get("previous") or []), {
                "folder": where, "at": now, "why": said + [f"{t}: {why}" for t, why in rerun.items()]}]
        if recorded.get("call_keys") != KEY_SCHEME and (self.folder.journal_dir / "responses.jsonl").is_file():
            print(f"avhb: note: {root}: its journal was written with the earlier call keys (video and audio by path): "
                  "calls with media are sent again under content keys; text-only calls are answered by the journal",
                  file=sys.stderr)
        if score:
            return
        history = list(recorded.get("invocations") or [invocation(recorded, recorded.get("created") or now)])
        if changes.of(HOW):
            print(f"avhb: note: {root}: how calls are made changed: {changes.said(HOW)} (the answers do not depend "
                  "on it; each invocation's settings are in run.json 'invocations')", file=sys.stderr)
        self.manifest["invocations"] = [*history, invocation(self.manifest, now)]

    def _mark_finished(self, task: str, parts: dict[str, str] | None) -> None:
        """Record (or clear) the task's inputs and fingerprint in run.json."""
        finished = dict(self.manifest.get("finished") or {})
        fp = fingerprint(parts)
        stamp = file_stamp(self.folder.samples_path(task)) if fp else None
        if fp and stamp:
            finished[task] = {"fingerprint": fp, "inputs": parts, "samples": stamp}
        elif task in finished:
            del finished[task]
        else:
            return
        self.manifest["finished"] = finished
        self.folder.write_run(self.manifest)

    async def _run_task(self, run: TaskRun, judges: Judges, records: list[SampleRecord]) -> bool:
        """Generate and score one task; True when no sample failed and every
        judge verdict was read (the task is finished: avhb.run.finished)."""
        task = run.task
        metrics = [] if self.o.predict_only else task.metrics()
        missing = await generate(run, records, lambda: judges.usage.cost + run.model.usage.cost)
        self._note_adaptations(task, records)
        if missing:
            raise NotInRunJournal(f"{missing} responses of task {task.name!r} are not in {self.folder.root}'s journal "
                                  "(the run is unfinished or failed there): resume it with its original command "
                                  "first; avhb score makes no model calls", task.name, records)
        if metrics:
            try:
                await score(task, records, metrics, run.judges, lambda: judges.usage.cost, run.source.media_root)
            except NotInJournal:
                raise NotInRunJournal(f"a judge answer of task {task.name!r} is not in {self.folder.root}'s journal "
                                      "(the run is unfinished there): resume it with its original command first",
                                      task.name, records) from None
        self._say(judge_adaptation_notes(run.judges.adaptations, self._said))
        self.results.add_judge_errors(run.judges.errors, run.judges.last_error)
        result = summarize(task, records, metrics, run.judges, self.o.repeats or task.repeats)
        self.results.tasks[task.name] = result
        self.not_attempted += sum(1 for r in records if r.error and "not attempted: " in r.error)
        path = self.folder.write_samples(task.name, records)
        failed = [r for r in records if r.error]
        if failed:
            first = failed[0]
            print(f"avhb: warning: task {task.name}: {len(failed)} of {len(records)} samples failed and are excluded "
                  f"from its metrics (first: sample {first.id!r}: {' '.join((first.error or '').split())[:300]}); "
                  f"see {path}", file=sys.stderr)
        return result.errors == 0 and result.judge_failures == 0

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

    def _write_report(self) -> None:
        if self.report is None:
            return
        try:
            self.report(self.folder.root)
        except Exception as exc:  # a report bug must not lose a finished run
            print(f"avhb: warning: report.html not written: {exc}", file=sys.stderr)


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

