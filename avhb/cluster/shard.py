"""Shards: ``--shard I/N`` runs a deterministic slice of every task's
samples (``I`` counts from 0; ``N`` is fixed for the run: a SLURM array's
size is not, see ``docs/examples/avhb-shards.sbatch``).

Which shard a sample belongs to:

* its *unit* is the sample, joined with every other sample that shares a
  grouping key declared by one of the task's metrics
  (:meth:`avhb.score.metric.Metric.group_key`: VidPair's video pairs, a
  ``unit_accuracy`` key), so a pair or a group is never split;
* the unit is named by its smallest grouping key (as text) or, without
  one, by its smallest sample id; its shard is ``int(sha256(name)) mod N``.

The name depends on neither the order of the samples, the machine nor
Python's hash seed; every repeat of a sample has its id, so repeats stay
together; a pair that several tasks ask about (VidPair's binary, MCQ and
open questions on one video pair share the key) lands in one shard for all
of them, so its videos are decoded and cached on one machine.  The slice is
taken after ``--limit`` and ``--samples``, which every shard applies alike.

Each shard writes its own run folder (its own lock, journal and results);
``avhb merge`` (:mod:`avhb.cluster.merge`) combines them.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Sequence

from avhb.errors import UserError
from avhb.score.metric import Metric, SampleRecord

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    index: int  # 0 .. count-1
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        m = _SPEC.match(text or "")
        if not m:
            raise UserError(f"--shard {text!r}: expected I/N, e.g. 0/4 (shards count from 0)")
        index, count = int(m.group(1)), int(m.group(2))
        if count < 1 or index >= count:
            raise UserError(f"--shard {text!r}: I must be in 0..N-1 and N at least 1")
        return cls(index, count)

    @classmethod
    def from_json(cls, data: Any) -> "Shard | None":
        if not isinstance(data, dict):
            return None
        try:
            return cls(int(data["index"]), int(data["count"]))
        except (KeyError, TypeError, ValueError):
            return None

    def to_json(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def select(self, records: list[SampleRecord], metrics: Iterable[Metric], task: str = "") -> list[SampleRecord]:
        """The records of this shard (every repeat of a sample, every member
        of a unit), in their original order."""
        if self.count == 1:
            return list(records)
        unit_of = units(records, metrics, task)
        cache: dict[str, int] = {}
        out = []
        for r in records:
            head = unit_of[str(r.id)]
            if head not in cache:
                cache[head] = shard_of(head, self.count)
            if cache[head] == self.index:
                out.append(r)
        return out


def shard_of(name: str, count: int) -> int:
    """The shard of a unit by its name (module docstring)."""
    digest = hashlib.sha256(str(name).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count


def units(records: Sequence[SampleRecord], metrics: Iterable[Metric], task: str = "") -> dict[str, str]:
    """Sample id -> its unit's name: ``key:<smallest grouping key>``, or
    ``id:<sample id>`` for a sample no metric groups (union-find over the
    metrics' grouping keys; module docstring)."""
    parent: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # ("id", sample id) or ("key", metric, grouping key)

    def find(x: tuple[Any, ...]) -> tuple[Any, ...]:
        root = x
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    def union(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra

    ids: list[tuple[Any, ...]] = [("id", str(r.id)) for r in records]
    for node in ids:
        find(node)
    for i, metric in enumerate(metrics):
        for r in records:
            try:
                key = metric.group_key(r)
            except UserError as exc:
                raise UserError(f"task {task!r}: --shard: {exc}") from None
            if key is not None:
                union(("id", str(r.id)), ("key", i, _frozen(key)))
    name: dict[tuple[Any, ...], str] = {}
    for node in list(parent):
        if node[0] == "key":
            root, text = find(node), f"key:{node[2]!r}"
            if root not in name or text < name[root]:
                name[root] = text
    for _, sid in ids:
        root = find(("id", sid))
        name.setdefault(root, f"id:{sid}")
    return {sid: name[find(("id", sid))] for _, sid in ids}


def _frozen(value: Any) -> Hashable:
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    return value if isinstance(value, Hashable) else repr(value)

