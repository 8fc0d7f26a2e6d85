"""The run, as a straight line: tasks -> samples -> requests -> journal ->
backend -> filters -> metrics (+ judges) -> aggregates -> run folder."""
from __future__ import annotations

import asyncio
import platform
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__
from .aggregate import Aggregate, weighted_mean
from .backend import Backend, BackendSpec, create_backend
from .data import DataSource, resolve_source
from .errors import SampleError, UserError
from .journal import Journal
from .judges import Judges, TaskJudges
from .messages import Response
from .metric import SampleRecord, ScoreContext
from .registry import get_registry
from .report.progress import Progress
from .requests import build_request, has_media, materialize, prompt_text, request_key
from .run_folder import RunFolder
from .task import Task
from .task_index import TaskIndex, build_index, load_task


@dataclass
class RunOptions:
    tasks: list[str]
    model: BackendSpec | None
    output_dir: Path
    judges: dict[str, list[BackendSpec]] = field(default_factory=dict)
    judge_args: list[str] = field(default_factory=list)  # the --judge flags as given (kept for `avhb score`)
    data: dict[str, Path] = field(default_factory=dict)
    sample_data: bool = False
    limit: int | None = None
    samples: list[str] | None = None
    seed: int = 1234
    repeats: int | None = None
    predict_only: bool = False
    ablations: tuple[str, ...] = ()
    media: dict[str, Any] = field(default_factory=dict)  # --media k=v, over each task's media block
    gen_kwargs: dict[str, Any] = field(default_factory=dict)  # --gen-kwargs k=v, over generation_kwargs
    score_only: bool = False  # `avhb score`: no model calls, responses from the journal
    command: list[str] = field(default_factory=list)
    write_report: bool = True


class _NoModel(Backend):
    """Stands in for the model under `avhb score`: it has the recorded
    model's identity (so request keys match the journal), and any request
    not in the journal is a recorded error, never a model call."""

    def __init__(self, recorded: dict[str, Any]):
        super().__init__(BackendSpec(recorded.get("kind", "?"), recorded.get("name", ""), recorded.get("args", {})))
        self._identity = recorded.get("identity") or {k: recorded.get(k) for k in ("kind", "name", "args")}

    @property
    def identity(self) -> dict[str, Any]:
        return self._identity

    async def generate(self, request):
        raise AssertionError("avhb score never calls the model")


class Evaluator:
    def __init__(self, options: RunOptions, index: TaskIndex | None = None):
        self.o = options
        self.registry = get_registry()
        self.index = index or build_index(self.registry)
        self.folder = RunFolder(options.output_dir)
        self.journal: Journal | None = None  # opened once the tasks, data and backends resolve
        self.backend: Backend | None = None  # created once the tasks and their data resolve
        self.judges = Judges(options.judges, None, create_backend)
        self.results: dict[str, Any] = {"results": {}, "groups": {}, "breakdowns": {}}

    # ------------------------------------------------------------------
    async def run(self) -> dict[str, Any]:
        names, _ = self.index.resolve(self.o.tasks)
        tasks = [Task(load_task(self.index, n), self.registry) for n in names]
        sources = {t.name: resolve_source(t.cfg, self.o.data, self.o.sample_data, self.index.groups_of(t.name))
                   for t in tasks}
        self._check_names_used(tasks)
        if self.o.score_only:
            self.backend = _NoModel((self.folder.read_json("run.json") or {}).get("model") or {})
        else:
            self.backend = create_backend(self.o.model)
        if not self.o.predict_only:  # a judge that cannot be built fails now, not after hours of generation
            for t in tasks:
                for role in t.judge_roles().values():
                    for spec in self.judges.panel(role):
                        self.judges.backend(spec)
        self.journal = Journal(self.folder.journal_dir)
        self.judges.journal = self.journal
        self._write_run_json(tasks, sources)
        try:
            for task in tasks:
                results, breakdowns = await self._run_task(task, sources[task.name])
                self.results["results"][task.name] = results
                if breakdowns:
                    self.results["breakdowns"][task.name] = breakdowns
                self._aggregate_groups()
                self._write_results()  # each task's results land as soon as it finishes
        finally:
            self.journal.close()  # opened above, before this block
            await self.judges.close()
            await self.backend.aclose()
        if self.o.write_report:
            self._write_report()
        return self.results

    def _check_names_used(self, tasks: list[Task]) -> None:
        """--data and --judge names that match nothing are typos: say so."""
        known = set()
        for t in tasks:
            tags = t.cfg.get("tag") or []
            known |= {t.name, t.cfg.benchmark, *([tags] if isinstance(tags, str) else tags), *self.index.groups_of(t.name)}
        unused = sorted(set(self.o.data) - known)
        if unused:
            raise UserError(f"--data {unused[0]}=...: no task of this run is named, tagged or grouped {unused[0]!r} "
                            f"(use one of: {', '.join(sorted(n for n in known if n))})")
        roles = {r for t in tasks for r in (t.cfg.get("judges") or {})}
        unknown = sorted(set(self.o.judges) - roles - {"*"})
        if unknown and not self.o.predict_only:
            raise UserError(f"--judge {unknown[0]}=...: no task of this run declares judge role {unknown[0]!r} "
                            f"(roles: {', '.join(sorted(roles)) or 'none'})")

    # ------------------------------------------------------------------
    async def _run_task(self, task: Task, source: DataSource) -> tuple[dict[str, Any], dict[str, Any]]:
        docs = task.load_docs(source)
        ids = [task.doc_id(d, i) for i, d in enumerate(docs)]
        pairs = list(zip(ids, docs))
        if self.o.samples:
            wanted = set(self.o.samples)
            pairs = [(i, d) for i, d in pairs if i in wanted]
            if not pairs:
                print(f"avhb: warning: {task.name}: none of --samples {','.join(self.o.samples)[:200]} is a sample id "
                      f"of this task (ids look like {ids[0] if ids else '-'!r})", file=sys.stderr)
        if self.o.limit is not None:
            pairs = pairs[: self.o.limit]
        repeats = self.o.repeats or task.repeats
        metrics = [] if self.o.predict_only else task.metrics()
        roles = task.judge_roles()
        for m in metrics:  # before any model call is paid for
            missing = [r for r in m.needs_judges if r not in roles]
            if missing:
                raise UserError(f"task {task.name!r}: metric {m.name!r} needs judge role(s) {', '.join(missing)}, "
                                f"which {task.cfg.file.name} does not declare under 'judges'")
        media = {**(task.cfg.get("media") or {}), **self.o.media}
        caps = self.backend.capabilities
        identity = self.backend.identity

        records: list[SampleRecord] = []
        pending: list[tuple[SampleRecord, Any]] = []
        for sample_id, doc in pairs:
            for rep in range(repeats):
                record = SampleRecord(id=sample_id, doc=doc, repeat=rep)
                try:
                    record.target = task.target(doc)
                    request = build_request(task, doc, source.root, sample_id)
                except SampleError as exc:
                    record.error = str(exc)
                    records.append(record)
                    continue
                request.generation.update(self.o.gen_kwargs)
                request.generation.setdefault("seed", self.o.seed + rep)
                request.key = request_key(request, identity, rep, self.o.ablations, media)
                record.meta.update(prompt_hash=request.key[:16], prompt=prompt_text(request))
                records.append(record)
                done = self.journal.get("responses", request.key)
                # a recorded failure is retried by a resumed run, and scored as a failure by `avhb score`
                if done is not None and (done.get("error") is None or self.o.score_only):
                    self._apply_response(record, done)
                else:
                    pending.append((record, request))

        if pending and self.o.score_only:
            raise UserError(f"{len(pending)} responses of task {task.name!r} are not in {self.folder.root}'s journal "
                            "(the run is unfinished or failed there): resume it with its original command first; "
                            "avhb score makes no model calls")
        if pending:
            await self._generate(task, pending, media, caps)

        judges = self.judges.for_task(task.name, roles)
        if metrics:
            await self._score(task, records, metrics, judges)
        results, breakdowns = self._aggregate(task, records, metrics, judges)
        self.folder.write_samples(task.name, records)
        return results, breakdowns

    def _apply_response(self, record: SampleRecord, entry: dict[str, Any]) -> None:
        record.response = entry.get("response")
        record.error = entry.get("error")
        record.meta["media"] = entry.get("media")
        record.meta["adaptations"] = entry.get("adaptations", [])
        if entry.get("usage"):
            record.meta["usage"] = entry["usage"]
        if entry.get("response_meta"):
            record.meta["response"] = entry["response_meta"]

    async def _generate(self, task: Task, pending, media: dict, caps) -> None:
        limit = asyncio.Semaphore(max(1, int(getattr(self.backend, "concurrency", 1))))
        decode_limit = asyncio.Semaphore(2)
        with Progress(f"{task.name}: model", len(pending)) as bar:
            async def one(record: SampleRecord, request) -> None:
                media_log = None
                try:
                    if has_media(request):
                        async with decode_limit:
                            media_log = await asyncio.to_thread(materialize, request, media, caps, self.o.ablations,
                                                                record.doc, task.name)
                except SampleError as exc:
                    response = Response(text="", error=f"media: {exc}")
                else:
                    async with limit:
                        try:
                            response = await self.backend.generate(request)
                        except UserError:
                            raise
                        except SampleError as exc:
                            response = Response(text="", error=str(exc))
                        except Exception as exc:  # a backend bug fails this sample, not the run
                            response = Response(text="", error=f"{type(exc).__name__}: {exc}")
                entry = {"task": task.name, "id": record.id, "repeat": record.repeat, "response": response.text,
                         "error": response.error, "usage": response.usage, "cost": response.cost,
                         "media": media_log, "adaptations": list(request.adaptations),
                         "response_meta": response.meta or None}
                self.journal.put("responses", request.key, entry)
                self._apply_response(record, entry)
                request.messages = []  # decoded frames/audio are not kept past their request
                bar.update(1, error=response.error is not None, cost=response.cost)

            await _all(one(r, q) for r, q in pending)

    async def _score(self, task: Task, records: list[SampleRecord], metrics, judges: TaskJudges) -> None:
        ctx = ScoreContext(judges=judges, task=task.name)
        filters = task.filters()
        limit = asyncio.Semaphore(64)
        crashed: list[str] = []
        with Progress(f"{task.name}: scoring", len(records)) as bar:
            async def one(record: SampleRecord) -> None:
                async with limit:
                    if record.error is None:
                        try:
                            value: Any = record.response
                            for f in filters:
                                value = await f.apply(value, record, ctx)
                            record.extracted = value
                            for m in metrics:
                                record.scores.update(await m.score(record, ctx))
                        except SampleError as exc:  # e.g. a sample whose target is not among its options
                            record.error = f"scoring: {exc}"
                            record.scores = {}
                        except (UserError, AssertionError):
                            raise
                        except Exception as exc:  # a metric/filter bug fails this sample, not the run
                            record.error = f"scoring failed: {type(exc).__name__}: {exc}"
                            record.scores = {}
                            crashed.append(record.error)
                spent = self.judges.usage.cost - seen_cost[0]
                seen_cost[0] += spent
                bar.update(1, error=record.error is not None, cost=spent)

            seen_cost = [self.judges.usage.cost]
            await _all(one(r) for r in records)
        if crashed:
            print(f"avhb: warning: {task.name}: scoring failed on {len(crashed)} samples (recorded as errors); "
                  f"first: {crashed[0]}", file=sys.stderr)

    def _aggregate(self, task: Task, records: list[SampleRecord], metrics, judges: TaskJudges) -> tuple[dict[str, Any], dict[str, Any]]:
        errors = sum(1 for r in records if r.error)
        out: dict[str, Any] = {}
        for m in metrics:
            for name, agg in m.aggregate(records).items():
                out.update(_flat(name, agg))
        out["samples"] = len(records)
        out["errors"] = errors
        out["judge_failures"] = sum(judges.failures.values())
        breakdowns: dict[str, Any] = {}
        if metrics:
            for dim in task.breakdown:
                values: dict[str, list[SampleRecord]] = {}
                for r in records:
                    key = r.doc.get(dim)
                    values.setdefault("(none)" if key is None else str(key), []).append(r)
                breakdowns[dim] = {}
                for value, subset in sorted(values.items()):
                    cell: dict[str, Any] = {}
                    for m in metrics:
                        for name, agg in m.aggregate(subset).items():
                            cell.update(_flat(name, agg))
                    breakdowns[dim][value] = cell
        return out, breakdowns

    def _aggregate_groups(self) -> None:
        for group, info in self.index.groups.items():
            all_members = self.index.group_members(group)
            members = [t for t in all_members if t in self.results["results"]]
            if not members:
                continue
            if len(members) < len(all_members):  # a group score from a subset of its tasks would mislead
                self.results.setdefault("partial_groups", {})[group] = f"{len(members)}/{len(all_members)} tasks run"
                self.results["groups"].pop(group, None)
                continue
            self.results.get("partial_groups", {}).pop(group, None)
            cell: dict[str, Any] = {}
            for spec in info.get("aggregate") or []:
                metric = spec["metric"]
                parts = []
                for t in members:
                    res = self.results["results"][t]
                    if res.get(metric) is None:
                        continue
                    n = res.get(f"{metric}_n") or 0
                    weight = n if spec.get("weight_by_size", False) else 1.0
                    parts.append((Aggregate(res[metric], res.get(f"{metric}_stderr"), n), weight))
                cell.update(_flat(metric, weighted_mean(parts)))
            self.results["groups"][group] = cell

    # ------------------------------------------------------------------
    def _write_results(self) -> None:
        usage = self.judges.usage
        self.results["model"] = self.o.model.label if self.o.model else None
        self.results["judge_usage"] = {"calls": usage.calls, "cached": usage.cached, "prompt_tokens": usage.prompt_tokens,
                                       "completion_tokens": usage.completion_tokens, "cost": round(usage.cost, 6)}
        self.folder.write_results(self.results)

    def _write_run_json(self, tasks: list[Task], sources: dict[str, DataSource]) -> None:
        import hashlib
        import json

        existing = self.folder.read_json("run.json")
        judges = {}
        for t in tasks:
            try:
                judges.update(self.judges.describe(t.judge_roles()))
            except UserError:
                if not self.o.predict_only:
                    raise
        info = {
            "command": self.o.command,
            "created": (existing or {}).get("created") or datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "updated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "avhb_version": __version__,
            "model": ({**self.backend.describe(), "identity": self.backend.identity} if not self.o.score_only
                      else (existing or {}).get("model")),
            "judges": judges,
            "judge_args": self.o.judge_args,
            "tasks": {t.name: {"hash": hashlib.sha256(json.dumps(t.cfg.config, sort_keys=True, default=str).encode()).hexdigest()[:16],
                               "file": str(t.cfg.file), "data": {"kind": sources[t.name].kind, "root": str(sources[t.name].root),
                                                                 "revision": sources[t.name].revision},
                               "config": t.cfg.config} for t in tasks},
            "plugins": self.registry.versions(),
            "versions": _versions(),
            "seed": self.o.seed, "limit": self.o.limit, "samples": self.o.samples, "repeats": self.o.repeats,
            "ablations": list(self.o.ablations), "predict_only": self.o.predict_only,
            "media": self.o.media, "gen_kwargs": self.o.gen_kwargs,
            "data": {k: str(v) for k, v in self.o.data.items()}, "sample_data": self.o.sample_data,
            "notes": list(getattr(self.backend, "notes", []) or []),
        }
        if existing and existing.get("model") and not self.o.score_only:
            if existing["model"].get("kind") != info["model"].get("kind") or existing["model"].get("name") != info["model"].get("name"):
                raise UserError(f"{self.folder.root} holds a run of {existing['model'].get('kind')}:{existing['model'].get('name')}; "
                                "use another --output-dir")
        self.folder.write_run(info)

    def _write_report(self) -> None:
        try:
            from .report.html import write_report
        except ImportError:
            return
        try:
            write_report(self.folder.root)
        except Exception as exc:  # a report bug must not lose a finished run
            print(f"avhb: warning: report.html not written: {exc}", file=sys.stderr)


async def _all(coroutines) -> None:
    """Run concurrently; the first failure cancels the others (so nothing is
    still running when the run cleans up) and is raised as itself."""
    try:
        async with asyncio.TaskGroup() as group:
            for coroutine in coroutines:
                group.create_task(coroutine)
    except BaseExceptionGroup as failures:
        raise failures.exceptions[0] from None


def _flat(name: str, agg: Aggregate) -> dict[str, Any]:
    return {name: agg.value, f"{name}_stderr": agg.stderr, f"{name}_n": agg.n}


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for pkg in ("numpy", "av", "decord", "datasets", "openai", "litellm", "vllm", "faster-whisper", "torch"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def evaluate(options: RunOptions) -> dict[str, Any]:
    return asyncio.run(Evaluator(options).run())
