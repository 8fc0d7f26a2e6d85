"""A task's reduced records held as columns, for a long task's summary.

When every aggregate of a task reads nothing of a record but its id,
repeat, error, scores and breakdown fields (``Metric.reads`` empty, the
default ``aggregate``), what :func:`avhb.run.stream.slim` keeps of a written
record is stored compactly in :class:`Reduced`: ids once per sample in one
byte string (:class:`_Ids`), a record's sample and repeat by its position
(as a run appends them), errors by record, and the scores and breakdown
fields as an index into a table of the distinct values (a binary metric's
records share two).  About 10 bytes a record, where a reduced
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

    def usable_scores(self) -> Iterator[Any]:
        """The scores of the records that did not fail, in order, read from
        the columns (``avhb.score.metric.usable_scores``)."""
        store = self._store
        errors, column, items, other = store._errors, store._scores, store._score_table.items, store._other
        for i in self._positions:
            if i not in errors:
                found = column[i]
                yield items[found - 1] if found else other[("scores", i)]

    def subset(self, indices: Sequence[int]) -> "Subset":
        """The records at ``indices``, as a sequence that holds the indices only."""
        return Subset(self._store, array("q", (self._positions[i] for i in indices)))


class Reduced(_Records):
    """Reduced records (module docstring), appended in order; an item is a
    new ``SampleRecord`` each time it is read.  A record appended whole
    keeps what :func:`avhb.run.stream.slim` would keep of it (its
    document's ``breakdown`` fields), so a run appends its windows as they
    are.

    What a record costs, as a run appends them (each sample's repeats in
    order, the same number for every sample): its sample and repeat are
    its position (``_per`` records a sample), its scores one byte (an index
    into the table of distinct mappings), its breakdown fields one more
    byte when the task has a breakdown; a sample's id its UTF-8 bytes and
    one byte of length.  Records appended in any other order keep their
    sample and repeat in columns of their own; a column widens when a value
    does not fit it."""

    def __init__(self, records: Iterable[SampleRecord] = (), breakdown: Iterable[str] = ()):
        self._store = self
        self._axes = tuple(breakdown)  # the document's fields kept (avhb.run.stream.slim keeps the same)
        self._ids = _Ids()
        self._count = 0  # records
        self._per = 0  # records a sample while the layout is regular (0: the first sample is not complete yet)
        self._in_sample = 0  # records of the last sample so far
        self._sample: array | None = None  # record -> its sample, once the layout is not regular
        self._repeat: array | None = None  # record -> its repeat, likewise
        self._scores = array("B")  # record -> 1 + its index in _score_table, or 0: kept in _other
        self._docs: array | None = array("B") if self._axes else None  # likewise; None: no breakdown field
        self._score_table, self._doc_table = Interned(), Interned()
        self._other: dict[tuple[str, int], Any] = {}  # ("scores" | "doc", record) -> a mapping not in the table
        self._errors: dict[int, str] = {}
        self._last: Any = object()
        self.extend(records)

    def __len__(self) -> int:
        return self._count

    def extend(self, records: Iterable[SampleRecord]) -> None:
        for r in records:
            self.append(r)

    def append(self, r: SampleRecord) -> None:
        i = self._count
        new = r.id != self._last or type(r.id) is not type(self._last)
        if new:
            self._last = r.id
            self._ids.append(r.id)
        if self._sample is None and not self._regular(new, r.repeat):
            self._sample, self._repeat = self._columns()
        self._in_sample = 1 if new else self._in_sample + 1
        if self._sample is not None:
            self._sample = _appended(self._sample, len(self._ids) - 1)
            self._repeat = _appended(self._repeat, r.repeat)  # type: ignore[arg-type]
        if r.error is not None:
            self._errors[i] = r.error
        self._scores = self._indexed("scores", self._scores, self._score_table, r.scores, i)
        if self._docs is not None:
            doc = r.doc
            self._docs = self._indexed("doc", self._docs, self._doc_table, {k: doc[k] for k in self._axes if k in doc}, i)
        self._count += 1

    def _regular(self, new: bool, repeat: int) -> bool:
        """Whether the layout stays regular with this record (the class
        docstring); fixes ``_per`` when the first sample ends."""
        if not new:
            return repeat == self._in_sample and (not self._per or self._in_sample < self._per)
        if self._count and not self._per:
            self._per = self._in_sample  # the first sample's records: every sample's
        return repeat == 0 and (not self._count or self._in_sample == self._per)

    def _columns(self) -> tuple[array, array]:
        """The regular layout's samples and repeats so far, as columns."""
        per = self._per or self._count or 1
        return array("i", (i // per for i in range(self._count))), array("i", (i % per for i in range(self._count)))

    def _indexed(self, name: str, column: array, table: Interned, value: Any, i: int) -> array:
        found = table.index(value)
        if found is None:
            self._other[(name, i)] = value
        return _appended(column, 0 if found is None else found + 1)

    @property
    def _positions(self) -> range:  # type: ignore[override]
        return range(self._count)

    def _mapping(self, name: str, column: array, table: Interned, i: int) -> Any:
        found = column[i]
        return table.items[found - 1] if found else self._other[(name, i)]

    def _record(self, i: int) -> SampleRecord:
        if not 0 <= i < self._count:
            raise IndexError("record index out of range")
        if self._sample is not None:
            sample, repeat = self._sample[i], self._repeat[i]  # type: ignore[index]
        else:
            per = self._per or self._count
            sample, repeat = divmod(i, per)
        doc = NOTHING if self._docs is None else self._mapping("doc", self._docs, self._doc_table, i)
        return SampleRecord(id=self._ids[sample], doc=doc, repeat=repeat, error=self._errors.get(i),
                            scores=self._mapping("scores", self._scores, self._score_table, i),
                            judgements=NOTHING, meta=NOTHING, trajectory=(),  # type: ignore[arg-type]
                            outputs=NOTHING)


class _Ids:
    """Sample ids, about their UTF-8 bytes and one byte each: the bytes one
    after the other, each id's length in a byte (255: longer, its length
    kept aside), and where every 64th id starts; an id is found from the
    start before it (or from the last id read: a pass reads them in order).
    An id that is not a str is kept as it is."""

    MARK = 64

    def __init__(self) -> None:
        self._bytes = bytearray()
        self._lengths = bytearray()
        self._long: dict[int, int] = {}  # sample -> its id's length, when 255 bytes or more
        self._marks = array("Q")  # every MARK-th sample -> where its id starts
        self._odd: dict[int, Any] = {}  # sample -> an id that is not a str
        self._read: tuple[int, int, Any] = (-1, 0, None)  # the last id read: (sample, where it starts, the id)

    def __len__(self) -> int:
        return len(self._lengths)

    def append(self, value: Any) -> None:
        sample = len(self._lengths)
        if sample % self.MARK == 0:
            self._marks.append(len(self._bytes))
        data = b""
        if type(value) is str:
            data = value.encode("utf-8", "surrogatepass")
        else:
            self._odd[sample] = value
        self._bytes += data
        if len(data) >= 255:
            self._long[sample] = len(data)
        self._lengths.append(min(len(data), 255))

    def _length(self, sample: int) -> int:
        n = self._lengths[sample]
        return self._long[sample] if n == 255 else n

    def _start(self, sample: int) -> int:
        last, at, _ = self._read
        if last >= 0 and last + 1 == sample:
            return at + self._length(last)
        base = sample - sample % self.MARK
        at = self._marks[sample // self.MARK]
        for s in range(base, sample):
            at += self._length(s)
        return at

    def __getitem__(self, sample: int) -> Any:
        last, at, value = self._read
        if sample == last:
            return value
        start = self._start(sample)
        if sample in self._odd:
            value = self._odd[sample]
        else:
            value = self._bytes[start:start + self._length(sample)].decode("utf-8", "surrogatepass")
        self._read = (sample, start, value)
        return value


def _appended(column: array, value: int) -> array:
    """``column`` with ``value`` appended: the same array, or a copy of it
    in wider items when ``value`` does not fit its items."""
    try:
        column.append(value)
    except OverflowError:
        column = array(_WIDER.get(column.typecode, "q"), column)
        return _appended(column, value)
    return column


_WIDER = {"B": "H", "H": "I", "I": "q", "i": "q"}


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
