"""Reading a run's data before any model call: every task's documents
checked (ids unique, targets readable), few-shot examples drawn (before
``--limit``, ``--samples`` and ``--shard`` keep some), the documents kept
chosen; tasks whose data has no samples are recorded as absent.

A task's samples are a :class:`TaskSamples`: which documents, each with
its repeats.  Its records are built a window at a time
(:meth:`TaskSamples.windows`), each document read from the task's data when
its window comes (a .jsonl file's rows are decoded again from their lines:
:mod:`avhb.data.jsonl_rows`), so a task holds its documents' positions, not
its documents or records, until they run."""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from avhb.data.jsonl_rows import JsonlRows
from avhb.data.sources import DataSource
from avhb.errors import SampleError, UserError
from avhb.runfolder.hash_index import HashIndex
from avhb.options import RunOptions, limit_for
from avhb.run.task import Task
from avhb.score.metric import SampleRecord
from avhb.taskdef.fewshot import examples_for
from avhb.taskdef.index import TaskIndex


@dataclass
class TaskSamples:
    """A task's samples as this run takes them: the documents at
    ``picked`` (positions in ``docs``, in order, after ``--samples``,
    ``--limit`` and ``--shard``), each ``repeats`` times.  ``failed``:
    position -> why its target cannot be read (its records fail before any
    call)."""

    task: Task
    docs: Sequence[dict[str, Any]]
    picked: Sequence[int]
    repeats: int = 1
    failed: dict[int, str] = field(default_factory=dict)

    def __len__(self) -> int:
        """Records: every repeat of every sample."""
        return len(self.picked) * self.repeats

    @property
    def todo(self) -> int:
        """Records that have not failed already (the model is asked for each)."""
        return len(self) - len(self.failed) * self.repeats

    def windows(self, size: int) -> Iterator[list[SampleRecord]]:
        """The records, in consecutive windows of about ``size`` records
        (every repeat of a sample in the same window), each window built
        when it is asked for."""
        for documents in self.documents(size):
            yield self._records(documents)

    def documents(self, size: int) -> Iterator[list[tuple[int, str, dict[str, Any]]]]:
        """The samples' ``(position, sample id, document)``, in the windows
        of :meth:`windows`, each read when it is asked for (the estimate
        builds requests from them, no record)."""
        per = self._per_window(size)
        for start in range(0, len(self.picked), per):
            yield self._documents(self.picked[start:start + per])

    def _documents(self, positions: Sequence[int]) -> list[tuple[int, str, dict[str, Any]]]:
        docs = self.docs.take(positions) if isinstance(self.docs, JsonlRows) else [self.docs[p] for p in positions]
        task = self.task
        return [(p, task.doc_id(doc, p), doc) for p, doc in zip(positions, docs)]

    def keep(self, picked: Sequence[int]) -> "TaskSamples":
        """These samples at ``picked`` only (positions among
        :attr:`picked`), with their failures."""
        chosen = picked if isinstance(picked, range) else set(picked)
        return TaskSamples(self.task, self.docs, picked, self.repeats,
                           {p: why for p, why in self.failed.items() if p in chosen})

    def window_count(self, size: int) -> int:
        """How many windows :meth:`windows` gives for ``size``."""
        return -(-len(self.picked) // self._per_window(size))

    def _per_window(self, size: int) -> int:
        return max(1, -(-max(1, size) // self.repeats))  # samples a window: ceil(size / repeats)

    def records(self) -> list[SampleRecord]:
        """Every record at once (one window)."""
        return self._records(self._documents(self.picked))

    def first(self, ok: bool = False) -> SampleRecord | None:
        """The first record (``ok``: the first that has not failed
        already), or None."""
        for position in self.picked:
            if not ok or position not in self.failed:
                return self._records(self._documents([position]))[0]
        return None

    def _records(self, documents: list[tuple[int, str, dict[str, Any]]]) -> list[SampleRecord]:
        task, failed = self.task, self.failed
        out = []
        for position, sample_id, doc in documents:
            for rep in range(self.repeats):
                record = SampleRecord(id=sample_id, doc=doc, repeat=rep)
                if position in failed:
                    record.error = failed[position]
                else:
                    try:
                        record.target = task.target(doc, sample_id)
                    except SampleError as exc:  # read when the run started; a hook may answer otherwise now
                        record.error = str(exc)
                out.append(record)
        return out


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

    def read(self, tasks: list[Task], sources: dict[str, DataSource]) -> tuple[dict[str, TaskSamples], list[str]]:
        """Every task's records, and the note on the ones skipped.  A task
        reached through a group, tag or glob whose data has no samples (a
        locale the user's copy lacks) is skipped and recorded as absent
        (its groups aggregate over the members with data:
        ``RunResults.absent``); a task named in ``--tasks`` with no samples
        is an error, as is a run left with no task."""
        explicit = {n for n in self.o.tasks if n in self.index.tasks}
        records: dict[str, TaskSamples] = {}
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

    def _records(self, task: Task, source: DataSource, docs: Sequence[dict[str, Any]]) -> TaskSamples:
        if task.fewshot.num > 0 and isinstance(docs, JsonlRows):
            docs = list(docs)  # few-shot draws compare documents again and again: held decoded
        first = _FirstPass(task, docs, self.o.samples, self.o.limit)
        twice = _repeated(first)  # a missing doc_id, or a bad line of the data: said here
        if task.fewshot.num > 0:
            self.fewshot[task.name] = self._examples(task, source, docs, first.ids())
        _check_unique(task, source, first.ids, twice)
        picked: Sequence[int] = range(first.bound)
        if self.o.samples:
            self.matched[task.name] = first.matched_ids
            limit = limit_for(self.o.limit, len(first.matched))
            picked = first.matched if limit is None else first.matched[:limit]
        samples = TaskSamples(task, docs, range(len(docs)), self.o.repeats or task.repeats, first.failed).keep(picked)
        if first.raised is not None and first.raised[0] in samples.picked:  # a target hook that raised: after
            raise first.raised[1]  # after the checks above, for a picked document only (one past --limit is not run)
        if self.o.shard is not None:  # this shard's slice; pairs and groups stay whole
            samples = self._shard(samples)
        return samples

    def _shard(self, samples: TaskSamples) -> TaskSamples:
        """``samples`` cut to this shard's units (every member of a unit, every
        repeat of a sample): the units are found over every record at once."""
        assert self.o.shard is not None
        task = samples.task
        every = samples.records()
        kept = {r.id for r in self.o.shard.select(every, task.metrics(), task.name)}
        ids = [r.id for r in every[::samples.repeats]]
        return samples.keep(array("q", (p for p, sample_id in zip(samples.picked, ids) if sample_id in kept)))

    def _examples(self, task: Task, source: DataSource, docs: Sequence[dict[str, Any]],
                  ids: Iterator[str]) -> dict[str, list[dict[str, Any]]]:
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
        if isinstance(pool, JsonlRows):
            pool = list(pool)
        seed = self.o.fewshot_seed if self.o.fewshot_seed is not None else self.o.seed
        try:
            drawn = examples_for(docs, pool, fs, seed)
        except UserError as exc:
            raise UserError(f"task {task.name!r}: {exc}") from None
        return dict(zip(ids, drawn))


class _FirstPass:
    """One pass over a task's documents, yielding each sample id's hash
    (the documents are not held): the ``--samples`` it matches, and the
    target of each document this run may take (``--samples``' matches, or
    the first ``--limit``), a target that cannot be read kept as
    ``failed`` (position -> why).  ``ids()`` gives the ids again."""

    def __init__(self, task: Task, docs: Sequence[dict[str, Any]], samples: Sequence[str] | None,
                 limit: int | float | None):
        self.task, self.docs = task, docs
        self.wanted = set(samples) if samples else None
        bound = limit_for(limit, len(docs)) if self.wanted is None else None
        self.bound = len(docs) if bound is None else min(bound, len(docs))
        self.matched = array("q")  # positions of the --samples ids
        self.matched_ids: set[str] = set()
        self.failed: dict[int, str] = {}
        # the first error of a target other than a sample's (position, error); the documents after it are
        # after it among those taken, so a run that takes it raises it and one that does not takes none of them
        self.raised: tuple[int, Exception] | None = None

    def ids(self) -> Iterator[str]:
        return (self.task.doc_id(d, i) for i, d in enumerate(self.docs))

    def __iter__(self) -> Iterator[int]:
        task, wanted = self.task, self.wanted
        for i, doc in enumerate(self.docs):
            sample_id = task.doc_id(doc, i)
            if wanted is None:
                taken = i < self.bound
            elif sample_id in wanted:
                taken = True
                self.matched.append(i)
                self.matched_ids.add(sample_id)
            else:
                taken = False
            if taken and self.raised is None:
                try:
                    task.target(doc, sample_id)
                except SampleError as exc:
                    self.failed[i] = str(exc)
                except Exception as exc:  # e.g. a hook's UserError: raised once ids and few-shot are checked
                    self.raised = (i, exc)
            yield hash(sample_id) & _HASH_BITS


_HASH_BITS = (1 << 44) - 1  # what a HashIndex keeps of a hash


def _repeated(hashes: Iterable[int]) -> set[int]:
    """The hashes that occur more than once (about 8 bytes a hash while
    they are read: :class:`HashIndex`)."""
    seen, twice = HashIndex(), set()
    for h in hashes:
        if seen.values_of(h):
            twice.add(h)
        seen.add(h, 0)
    return twice


def _check_unique(task: Task, source: DataSource, ids: Callable[[], Iterator[str]], twice: set[int]) -> None:
    """The sample ids are unique, checked on their hashes (``twice``: the
    hashes seen more than once); the ids of a hash seen twice are compared
    again, in order, for the message naming the first id that repeats."""
    if not twice:
        return
    first: dict[str, int] = {}
    for i, sample_id in enumerate(ids()):
        if hash(sample_id) & _HASH_BITS not in twice:
            continue
        if sample_id in first:
            field = task.cfg.get("doc_id")
            raise UserError(f"task {task.name!r}: sample id {sample_id!r} appears twice in {source.root} "
                            f"(samples {first[sample_id]} and {i}"
                            + (f"; doc_id field {field!r} must be unique)" if field else ")"))
        first[sample_id] = i
