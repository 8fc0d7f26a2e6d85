"""Reading a run's data into SampleRecords, before any model call: every
task's documents, their ids (unique), few-shot examples (drawn before
``--limit``, ``--samples`` and ``--shard`` keep some), repeats and
targets; tasks whose data has no samples are recorded as absent."""
from __future__ import annotations

from typing import Any

from avhb.data.sources import DataSource
from avhb.errors import SampleError, UserError
from avhb.run.options import RunOptions, limit_for
from avhb.run.task import Task
from avhb.score.metric import SampleRecord
from avhb.taskdef.fewshot import examples_for
from avhb.taskdef.index import TaskIndex


class SampleReader:
    """Reads the run's records (:meth:`read`); keeps what the later phases
    need of what it read: each task's document count, few-shot examples
    and the ``--samples`` ids it has.  ``absent`` (task -> why) is the
    run's ``RunResults.absent``, filled in place."""

    def __init__(self, options: RunOptions, index: TaskIndex, absent: dict[str, str]):
        self.o = options
        self.index = index
        self.absent = absent
        self.matched: dict[str, set[str]] = {}  # task -> the --samples ids it has
        self.docs: dict[str, int] = {}  # task -> its documents before --limit/--samples/--shard
        self.fewshot: dict[str, dict[str, list[dict[str, Any]]]] = {}  # task -> sample id -> few-shot examples

    def read(self, tasks: list[Task], sources: dict[str, DataSource]) -> tuple[dict[str, list[SampleRecord]],
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
                self.absent[t.name] = f"its data ({sources[t.name].root}) has no samples"
                empty.setdefault(str(sources[t.name].root), []).append(t.name)
                continue
            self.docs[t.name] = len(docs)  # lm-eval's n-samples "original" (avhb.report.lmeval)
            records[t.name] = self._records(t, sources[t.name], docs)
        if not records:
            raise UserError(f"no task of this run has samples: {', '.join(self.absent)} "
                            f"({'; '.join(self.absent.values())})")
        if not empty:
            return records, []
        groups = sorted({g for names in empty.values() for t in names for g in self.index.groups_of(t)})
        skipped = "; ".join(f"{', '.join(names)} (no samples in {root})" for root, names in empty.items())
        where = (f"; group(s) {', '.join(groups)} aggregate over the members with data (results.json "
                 "absent_members)") if groups else ""
        return records, [f"skipped {sum(map(len, empty.values()))} task(s) whose data has no samples: {skipped}{where}"]

    def _records(self, task: Task, source: DataSource, docs: list[dict[str, Any]]) -> list[SampleRecord]:
        pairs = [(task.doc_id(d, i), d) for i, d in enumerate(docs)]
        self.fewshot[task.name] = self._examples(task, source, docs, pairs)
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
            self.matched[task.name] = {i for i, _ in pairs}
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
