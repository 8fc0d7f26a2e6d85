"""A long task's reduced records held as columns (avhb.run.reduced): every
item equals the reduced record stored (id, repeat, error, scores, breakdown
fields), across repeats, odd ids, unhashable and overflowing scores; views
by index; columns that widen when a value does not fit; and about 10 bytes
a record (a sample's id and a byte or two), not a record object's 190."""
from __future__ import annotations

import dataclasses
import tracemalloc

import pytest

from avhb.run.reduced import SHARED, Reduced, take
from avhb.run.stream import slim
from avhb.score.metric import Metric, SampleRecord


def _fields(r: SampleRecord) -> tuple:
    return (r.id, type(r.id), dict(r.doc), r.repeat, r.error, {k: (type(v), v) for k, v in r.scores.items()},
            r.target, r.response, r.extracted, dict(r.judgements), dict(r.meta), list(r.trajectory), dict(r.outputs))


def _records() -> list[SampleRecord]:
    out = []
    for i in range(40):
        for rep in range(3):
            scores = {"m": [1.0, 0.0, True, 1][(i + rep) % 4], "aux": i % 2}
            if i == 7:
                scores = {"m": [i, rep]}  # unhashable: kept by record
            out.append(SampleRecord(id=f"s{i}é" if i != 5 else 5, doc={"kind": f"k{i % 3}", "q": "long"}, repeat=rep,
                                    scores=scores, error="failed" if (i, rep) == (3, 1) else None,
                                    meta={"prompt": "p"}, response="r", target="t"))
    return out


def test_every_item_is_the_reduced_record_stored():
    whole = _records()
    records = [dataclasses.replace(r) for r in whole]
    slim(records, frozenset(), ["kind"])
    reduced = Reduced(records, breakdown=["kind"])
    # a run appends its records whole: the columns keep what slim keeps
    assert [_fields(r) for r in Reduced(whole, breakdown=["kind"])] == [_fields(r) for r in records]
    assert len(reduced) == len(records) == 120
    assert [_fields(r) for r in reduced] == [_fields(r) for r in records]
    assert _fields(reduced[-1]) == _fields(records[-1]) and _fields(reduced[16]) == _fields(records[16])
    assert [_fields(r) for r in reduced[10:14]] == [_fields(r) for r in records[10:14]]
    with pytest.raises(IndexError):
        reduced[120]
    with pytest.raises(TypeError):  # read-only, as the reduced record's
        reduced[0].scores["m"] = 2


def test_views_by_index_and_more_distinct_scores_than_the_table_holds():
    records = [SampleRecord(id=str(i), doc={}, scores={"m": i / 7}) for i in range(SHARED + 50)]
    slim(records, frozenset(), [])
    reduced = Reduced(records)
    assert [r.scores["m"] for r in reduced] == [i / 7 for i in range(SHARED + 50)]
    assert len(reduced._score_table.items) == SHARED  # the table stops growing: the rest kept by record
    view = take(reduced, [3, SHARED + 10, 0])
    assert [r.id for r in view] == ["3", str(SHARED + 10), "0"] and len(view) == 3 and view[1].id == str(SHARED + 10)
    assert [r.id for r in take(view, [2, 0])] == ["0", "3"]
    assert take(records, [1, 0]) == [records[1], records[0]]  # a list stays a list


def test_the_default_aggregate_gives_the_same_numbers_over_columns():
    records = [r for r in _records() if not isinstance(r.scores["m"], list)]
    slim(records, frozenset(), ["kind"])
    m = Metric("m", outputs=("aux",))
    assert repr(m.aggregate(Reduced(records, breakdown=["kind"]))) == repr(m.aggregate([dataclasses.replace(r) for r in records]))


def test_a_record_costs_about_ten_bytes():
    n = 50_000
    records = [SampleRecord(id=f"q{i:07d}", doc={"id": i}, scores={"exact_match": float(i % 2)}) for i in range(n)]
    slim(records, frozenset(), [])
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        reduced = Reduced(records)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(reduced) == n
    assert held / n < 11, held / n  # 8 id bytes, 1 id length, 1 score index; a reduced SampleRecord and its id:
    # about 190


def test_a_field_spec_reads_a_reduced_records_read_only_scores():
    from avhb.score.metric_helpers import resolve

    records = [SampleRecord(id="a", doc={}, scores={"m": {"part": 0.5}})]
    slim(records, frozenset(), [])
    assert resolve(records[0], "scores.m") == {"part": 0.5}
    plain = Reduced([SampleRecord(id="b", doc={}, scores={"m": 1.0})])[0]
    assert type(plain.scores).__name__ == "mappingproxy" and resolve(plain, "scores.m") == 1.0


def test_columns_widen_when_a_value_does_not_fit(monkeypatch):
    """Repeats past 255 (a 1-byte column) and id ends past 4 GiB (a 4-byte
    one) widen their column: a value is never wrapped or refused."""
    from avhb.run import reduced as reduced_module

    records = [SampleRecord(id="s", doc={}, repeat=rep, scores={"m": 1.0}) for rep in range(300)]
    reduced = Reduced(records)
    assert [r.repeat for r in reduced] == list(range(300)) and {r.id for r in reduced} == {"s"}
    column = reduced_module._appended(reduced_module.array("I", [7]), (1 << 32) + 3)
    assert list(column) == [7, (1 << 32) + 3]


@pytest.mark.parametrize("order", ["regular", "repeats out of order", "a short sample", "a long sample",
                                   "an id again later", "one sample only", "a short last sample"])
def test_records_in_any_order_read_back_as_stored(order):
    """A run appends each sample's repeats in order, the same number for
    every sample: then a record's sample and repeat are its position, kept
    in no column.  Any other order keeps them in columns, from the record
    where the order stops being that one."""
    ids = {"regular": [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0), ("c", 1)],
           "repeats out of order": [("a", 0), ("a", 1), ("b", 1), ("b", 0)],
           "a short sample": [("a", 0), ("a", 1), ("b", 0), ("c", 0), ("c", 1)],
           "a long sample": [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)],
           "an id again later": [("a", 0), ("b", 0), ("a", 1)],
           "one sample only": [("a", r) for r in range(5)],
           "a short last sample": [("a", 0), ("a", 1), ("b", 0)]}[order]
    records = [SampleRecord(id=i, doc={}, repeat=rep, scores={"m": float(n)}) for n, (i, rep) in enumerate(ids)]
    reduced = Reduced(records)
    assert [(r.id, r.repeat, r.scores["m"]) for r in reduced] == [(r.id, r.repeat, r.scores["m"]) for r in records]
    assert [(r.id, r.repeat) for r in take(reduced, list(range(len(ids)))[::-1])] == ids[::-1]
    regular = order in ("regular", "one sample only", "a short last sample")
    assert (reduced._sample is None) == regular


def test_ids_of_every_length_read_in_any_order():
    """More samples than an id mark spans, ids of 0 to 300 UTF-8 bytes (a
    length past one byte kept aside), ids that are not str, read in order,
    backwards and at random."""
    ids = [("é" * (i % 160)) + str(i) if i % 17 else i for i in range(3 * 64 + 5)]
    reduced = Reduced(SampleRecord(id=i, doc={}, scores={"m": 1.0}) for i in ids)
    assert [r.id for r in reduced] == ids and [type(r.id) for r in reduced] == [type(i) for i in ids]
    order = list(range(len(ids)))[::-1] + [130, 0, 64, 63, 65, 194, 1]
    assert [r.id for r in take(reduced, order)] == [ids[i] for i in order]
    assert max(len(str(i).encode()) for i in ids) > 255


def test_the_default_aggregate_reads_the_columns_and_holds_no_values(monkeypatch):
    """Over columns the default aggregate builds no record and no list of
    values (at a million samples, 8 MB of the run's peak): its passes read
    the scores from the columns again."""
    n = 200_000
    reduced = Reduced(SampleRecord(id=f"q{i}", doc={}, scores={"m": float(i % 3 == 0), "m_n": 1},
                                   error="failed" if i % 7 == 0 else None) for i in range(n))
    plain = [dataclasses.replace(r) for r in reduced]
    m = Metric("m", outputs=("n",))
    want = m.aggregate(plain)
    monkeypatch.setattr(Reduced, "_record", lambda self, i: pytest.fail("a record was built"))
    aggregate = getattr(Metric.aggregate, "__wrapped__", Metric.aggregate)  # not the suite's check (conftest.py),
    tracemalloc.start()  # which asks again over the records as a list
    try:
        got = aggregate(m, reduced)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert repr(got) == repr(want) and got["m"].n == n - len(range(0, n, 7))
    assert peak < 200_000, peak  # a list of the values: 8 bytes each, 1.4 MB
