"""A task's reduced records held as columns, for a long task's summary.

When every aggregate of a task reads nothing of a record but its id,
repeat, error, scores and breakdown fields (``Metric.reads`` empty, the
default ``aggregate``), what :func:`avhb.run.stream.slim` keeps of a written
record is stored compactly in :class:`Reduced`: ids once per sample in one
byte string, the repeat and error by record, and the scores and breakdown
fields as an index into a table of the distinct values (a binary metric's
records share two).  About 20 bytes a record, where a reduced
``SampleRecord`` object and its id cost about 190.  Items are
``SampleRecord``s built when read, equal to the reduced records stored.

:class:`Interned` is the table of distinct read-only mappings both use.
"""
from __future__ import annotations

from array import array
from math import copysign
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Sequence, overload

from avhb.score.metric import SampleRecord

NOTHING: Any = MappingProxyType({})  # a dropped mapping: read-only, so a late write fails loudly
SHARED = 1024  # distinct mappings a table keeps
_OTHER = 0xFFFF  # a column value: the mapping is kept by record, not in the table


_SCALARS = frozenset({bool, int, float, str, type(None)})


def content_key(mapping: Any) -> tuple[Any, ...]:
    """A key equal for equal mappings only: 1, 1.0 and True, or 0.0 and
    -0.0, are told apart.  TypeError for a value that is not a plain
    scalar (a tuple, a list, a numpy number: such mappings are not shared)."""
    key = []
    for k, v in mapping.items():
        kind = v.__class__
        if kind not in _SCALARS or k.__class__ is not str:
            raise TypeError("not a plain scalar")
        key.append((k, kind, copysign(1.0, v) if kind is float else None, v))
    return tuple(key)


class Interned:
    """Equal mappings kept once, read-only, at most ``cap`` of them."""

    def __init__(self, cap: int = SHARED):
        self.cap = cap
        self.items: list[Any] = []  # index -> read-only mapping
        self._index: dict[tuple[Any, ...], int] = {}

    def index(self, mapping: Any) -> int | None:
        """Its index in :attr:`items`; None when a value is not a plain
        scalar or the table is full."""
        try:
            key = content_key(mapping)
        except TypeError:
            return None
        found = self._index.get(key)
        if found is None and len(self.items) < self.cap:
            found = self._index[key] = len(self.items)
            self.items.append(mapping if type(mapping) is MappingProxyType else MappingProxyType(mapping))
        return found

    def shared(self, mapping: dict[str, Any]) -> Any:
        """The table's read-only mapping equal to ``mapping``; ``mapping``
        itself when a value is not a plain scalar, read-only when the table
        is full."""
        found = self.index(mapping)
        if found is not None:
            return self.items[found]
        try:
            content_key(mapping)
        except TypeError:
            return mapping
        return MappingProxyType(mapping)


class _Records(Sequence[SampleRecord]):
    """A sequence of the records of a :class:`Reduced` at ``_positions``."""

    _store: "Reduced"
    _positions: Sequence[int]

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, index: int) -> SampleRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[SampleRecord]: ...

    def __getitem__(self, index: int | slice) -> SampleRecord | list[SampleRecord]:
        if isinstance(index, slice):
            return [self._store._record(i) for i in self._positions[index]]
        return self._store._record(self._positions[index])  # an index out of range: IndexError

    def __iter__(self) -> Iterator[SampleRecord]:
        return map(self._store._record, self._positions)

    def subset(self, indices: Sequence[int]) -> "Subset":
        """The records at ``indices``, as a sequence that holds the indices only."""
        return Subset(self._store, array("q", (self._positions[i] for i in indices)))


class Reduced(_Records):
    """Reduced records (module docstring), appended in order; an item is a
    new ``SampleRecord`` each time it is read.  A record appended whole
    keeps what :func:`avhb.run.stream.slim` would keep of it (its
    document's ``breakdown`` fields), so a run appends its windows as they
    are."""

    def __init__(self, records: Iterable[SampleRecord] = (), breakdown: Iterable[str] = ()):
        self._store = self
        self._axes = tuple(breakdown)  # the document's fields kept (avhb.run.stream.slim keeps the same)
        self._id_bytes = bytearray()  # every sample's id, UTF-8, one after the other
        self._id_ends = array("I")  # sample -> where its id ends in _id_bytes (widened: _appended)
        self._odd_ids: dict[int, Any] = {}  # sample -> an id that is not a str
        self._sample = array("i")  # record -> its sample
        self._repeat = array("B")  # widened past 255 repeats
        self._scores = array("H")  # record -> index in _score_table, or _OTHER
        self._docs = array("H")
        self._score_table, self._doc_table = Interned(), Interned()
        self._other: dict[tuple[str, int], Any] = {}  # ("scores" | "doc", record) -> a mapping not in the table
        self._errors: dict[int, str] = {}
        self._last: Any = object()
        self._cached: tuple[int, Any] = (-1, None)  # the last id read (a sample's repeats ask it in turn)
        self.extend(records)

    def extend(self, records: Iterable[SampleRecord]) -> None:
        for r in records:
            self.append(r)

    def append(self, r: SampleRecord) -> None:
        i = len(self._sample)
        if r.id != self._last or type(r.id) is not type(self._last):
            self._last = r.id
            if type(r.id) is str:
                self._id_bytes += r.id.encode("utf-8", "surrogatepass")
            else:
                self._odd_ids[len(self._id_ends)] = r.id
            self._id_ends = _appended(self._id_ends, len(self._id_bytes))
        self._sample.append(len(self._id_ends) - 1)
        self._repeat = _appended(self._repeat, r.repeat)
        if r.error is not None:
            self._errors[i] = r.error
        doc, axes = r.doc, self._axes
        for name, column, table, value in (("scores", self._scores, self._score_table, r.scores),
                                           ("doc", self._docs, self._doc_table,
                                            {k: doc[k] for k in axes if k in doc} if axes else NOTHING)):
            found = table.index(value)
            if found is None:
                self._other[(name, i)] = value
            column.append(_OTHER if found is None else found)

    @property
    def _positions(self) -> range:  # type: ignore[override]
        return range(len(self._sample))

    def _id(self, sample: int) -> Any:
        assert sample >= 0, "a record without its sample"
        if self._cached[0] == sample:
            return self._cached[1]
        if sample in self._odd_ids:
            value = self._odd_ids[sample]
        else:
            start = self._id_ends[sample - 1] if sample else 0
            value = self._id_bytes[start:self._id_ends[sample]].decode("utf-8", "surrogatepass")
        self._cached = (sample, value)
        return value

    def _mapping(self, name: str, column: array, table: Interned, i: int) -> Any:
        found = column[i]
        return self._other[(name, i)] if found == _OTHER else table.items[found]

    def _record(self, i: int) -> SampleRecord:
        return SampleRecord(id=self._id(self._sample[i]), doc=self._mapping("doc", self._docs, self._doc_table, i),
                            repeat=self._repeat[i], error=self._errors.get(i),
                            scores=self._mapping("scores", self._scores, self._score_table, i),
                            judgements=NOTHING, meta=NOTHING, trajectory=(),  # type: ignore[arg-type]
                            outputs=NOTHING)


def _appended(column: array, value: int) -> array:
    """``column`` with ``value`` appended: the same array, or a copy of
    it in 8-byte items when ``value`` does not fit its items."""
    try:
        column.append(value)
    except OverflowError:
        column = array("q", column)
        column.append(value)
    return column


class Subset(_Records):
    """Some of a :class:`Reduced`'s records, by index."""

    def __init__(self, store: Reduced, positions: Sequence[int]):
        self._store = store
        self._positions = positions


def take(records: Sequence[SampleRecord], indices: Sequence[int]) -> Sequence[SampleRecord]:
    """The records at ``indices``: a view of reduced records, else a list."""
    if isinstance(records, (Reduced, Subset)):
        return records.subset(indices)
    return [records[i] for i in indices]
