"""A task's samples through generate -> score -> write a window at a time
(avhb.run.stream): windows never cut a sample's repeats, the samples file
grows window by window and appears whole, a written window keeps only what
the task's aggregates read, and the numbers are those of one window."""
from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

import avhb
from avhb.errors import UserError
from avhb.model.backend import parse_backend_spec
from avhb.run.stream import kept_fields, slim
from avhb.score.metric import Metric, SampleRecord, reads_of


def _rec(sample_id: str, repeat: int = 0, **kw) -> SampleRecord:
    return SampleRecord(id=sample_id, doc={"id": sample_id, "kind": "x", "q": "long text"}, repeat=repeat, **kw)


class _Ids:
    """A task as TaskSamples builds records for it: ids by position, no target."""

    cfg: dict = {}

    def doc_id(self, doc, index):
        return doc["id"]

    def target(self, doc, sample_id):
        return None


def test_windows_never_cut_the_repeats_of_a_sample():
    from avhb.run.records import TaskSamples

    docs = [{"id": name} for name in "abcd"]
    samples = TaskSamples(_Ids(), docs, range(4), repeats=3)
    assert [[(r.id, r.repeat) for r in w] for w in samples.windows(4)] == [
        [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2)],
        [("c", 0), ("c", 1), ("c", 2), ("d", 0), ("d", 1), ("d", 2)]]  # 4 records: 2 samples of 3 repeats
    assert [len(w) for w in samples.windows(1)] == [3, 3, 3, 3] and samples.window_count(1) == 4
    assert [len(w) for w in samples.windows(100)] == [12] and samples.window_count(100) == 1
    assert list(TaskSamples(_Ids(), docs, range(0), repeats=2).windows(4)) == []
    whole = [(r.id, r.repeat) for r in samples.records()]
    for size in range(1, 14):
        assert [(r.id, r.repeat) for w in samples.windows(size) for r in w] == whole
        assert samples.window_count(size) == len(list(samples.windows(size)))


def test_a_window_reads_its_documents_when_it_comes(tmp_path):
    """A .jsonl task's records are built from rows decoded when their window
    is asked for; a failed target is kept by position, not by record."""
    from avhb.data.jsonl_rows import JsonlRows
    from avhb.run.records import TaskSamples

    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"id": f"s{i}", "q": "x" * 50}) + "\n" for i in range(6)))
    rows = JsonlRows(path)
    read: list[list[int]] = []
    take = rows.take
    rows.take = lambda positions: read.append(list(positions)) or take(positions)  # type: ignore[method-assign]
    samples = TaskSamples(_Ids(), rows, range(1, 6), repeats=2, failed={3: "no target"})
    assert len(samples) == 10 and samples.todo == 8
    it = samples.windows(4)
    assert read == []  # nothing read before a window is asked for
    first = next(it)
    assert read == [[1, 2]] and [r.id for r in first] == ["s1", "s1", "s2", "s2"]
    second = next(it)
    assert read == [[1, 2], [3, 4]]
    assert [(r.id, r.error) for r in second] == [("s3", "no target"), ("s3", "no target"), ("s4", None), ("s4", None)]
    assert first[0].doc is not second[0].doc and first[0].doc == {"id": "s1", "q": "x" * 50}


class _Reads(Metric):
    reads = frozenset({"doc"})

    def aggregate(self, records):
        return super().aggregate(records)


class _Inherits(_Reads):
    pass


class _Overrides(_Reads):
    def aggregate(self, records):  # reads more than its base said: undeclared, so records stay whole
        return super().aggregate(records)


class _Typo(Metric):
    reads = frozenset({"docs"})


def test_reads_are_those_of_the_class_that_defines_aggregate():
    assert reads_of(Metric("m")) == frozenset()  # the mean of scores
    assert reads_of(_Reads("m")) == {"doc"}
    assert reads_of(_Inherits("m")) == {"doc"}
    assert reads_of(_Overrides("m")) is None
    assert kept_fields([Metric("a"), _Reads("b")]) == {"doc"}
    assert kept_fields([_Reads("b"), _Overrides("c")]) is None
    with pytest.raises(UserError, match="'docs', not record fields"):
        reads_of(_Typo("t"))


def test_slim_keeps_what_is_read_and_the_breakdown_fields():
    r = _rec("a", 1, target="t", response="long reply", extracted="x", error=None,
             scores={"m": 1.0}, judgements={"j": {}}, meta={"prompt": "p" * 100}, trajectory=[{"s": 1}],
             outputs={"o": 1})
    slim([r], frozenset({"target"}), ["kind"])
    assert (r.id, r.repeat, r.scores, r.target) == ("a", 1, {"m": 1.0}, "t")
    assert r.doc == {"kind": "x"} and r.response is None and r.extracted is None
    assert not r.meta and not r.judgements and not r.outputs and not r.trajectory
    with pytest.raises(TypeError):  # a dropped mapping is read-only: a late write fails loudly
        r.meta["x"] = 1
    whole = _rec("b", meta={"prompt": "p"}, response="reply")
    slim([whole], None, ["kind"])
    assert whole.meta == {"prompt": "p"} and whole.response == "reply" and whole.doc["q"] == "long text"
    kept = _rec("c")
    slim([kept], frozenset({"doc"}), [])
    assert kept.doc["q"] == "long text"


def test_slim_shares_one_read_only_mapping_for_equal_scores():
    records = [_rec(str(i), scores={"m": v}) for i, v in enumerate([1.0, 0.0, 1.0, True, 1, -0.0, 0.0])]
    listed = _rec("l", scores={"m": [1, 2]})
    slim(records + [listed], frozenset(), [])
    assert records[0].scores is records[2].scores and records[1].scores is records[6].scores
    # equal under ==, but not the same number: each keeps its own type and sign
    assert [type(r.scores["m"]) for r in records[2:5]] == [float, bool, int]
    assert len({id(r.scores) for r in records}) == 5 and str(records[5].scores["m"]) == "-0.0"
    with pytest.raises(TypeError):  # read-only: a late write fails loudly
        records[0].scores["m"] = 0.0
    assert listed.scores == {"m": [1, 2]} and type(listed.scores) is dict  # not a plain scalar: left as it is
    import numpy as np

    named = [_rec("n", scores={"a": 1.0}), _rec("o", scores={"b": 1.0}), _rec("p", scores={"a": 1.0, "b": 1.0}),
             _rec("q", scores={"m": np.float64(-0.0)}), _rec("r", scores={"m": (1.0, 2.0)}), _rec("s", scores={"m": (1, 2)})]
    slim(named, frozenset(), [])
    assert [dict(r.scores) for r in named[:3]] == [{"a": 1.0}, {"b": 1.0}, {"a": 1.0, "b": 1.0}]
    assert str(named[3].scores["m"]) == "-0.0" and named[4].scores["m"] == (1.0, 2.0)
    assert type(named[5].scores["m"][0]) is int  # a tuple is not shared with an equal one of floats


def _samples(run: Path, task: str) -> list[dict]:
    return [json.loads(line) for line in (run / "samples" / f"{task.replace('/', '__')}.jsonl").read_text().splitlines()]


def _run(tmp_path: Path, name: str, monkeypatch, size: int, seen: list | None = None) -> dict:
    from avhb_testpack.backends import EchoBackend

    monkeypatch.setattr("avhb.run.evaluator.window_size", lambda concurrency: size)
    answer = EchoBackend.generate
    out = tmp_path / name

    async def generate(self, request):
        if seen is not None:  # what the run holds and has written when this call is made
            gc.collect()
            held = [o for o in gc.get_objects() if type(o) is SampleRecord and o.id.startswith("e")
                    and "prompt" in o.meta]
            temp = list((out / "samples").glob(".*.tmp"))
            lines = len(temp[0].read_text().splitlines()) if temp else 0
            seen.append((lines, len(held), (out / "samples" / "testpack__qa_easy.jsonl").exists()))
        return await answer(self, request)

    monkeypatch.setattr(EchoBackend, "generate", generate)
    if seen is not None:
        from avhb.run.records import TaskSamples

        read = TaskSamples._documents

        def documents(self, positions):  # what is held when the next window's documents are read
            gc.collect()
            held = [o for o in gc.get_objects() if type(o) is SampleRecord and o.id.startswith("e") and "prompt" in o.meta]
            seen.append(("build", len(held), len(positions)))
            return read(self, positions)

        monkeypatch.setattr(TaskSamples, "_documents", documents)
    return avhb.evaluate(avhb.RunOptions(tasks=["testpack/qa_easy"], model=parse_backend_spec("testpack/echo"),
                                         output_dir=out, sample_data=True, write_report=False))


def test_a_task_is_written_and_reduced_window_by_window(testpack, tmp_path, monkeypatch):
    from avhb.run import evaluator

    seen: list = []
    summarized: list[str] = []
    summarize = evaluator.summarize
    monkeypatch.setattr(evaluator, "summarize", lambda task, records, *a: summarized.append(type(records).__name__)
                        or summarize(task, records, *a))
    windowed = _run(tmp_path, "windowed", monkeypatch, 2, seen)
    assert summarized == ["Reduced"]  # its metric reads no more than the summary keeps: held as columns
    # six samples in windows of two: each window's calls see the earlier windows written to the temp
    # file, none of their records still holding its prompt (at most one of this window's: the echo
    # answers at once), and no samples file in place yet
    calls = [entry for entry in seen if entry[0] != "build"]
    assert [lines for lines, _, _ in sorted(calls)] == [0, 0, 2, 2, 4, 4]
    assert all(held <= 1 and not placed for _, held, placed in calls)
    # and when a window's documents are read (the estimate's and the run's), no earlier window's record is held whole
    builds = [(held, size) for _, held, size in (e for e in seen if e[0] == "build")]
    # the first documents (the notes' first requests), the estimate's one window (8,192 samples), the run's three
    assert builds == [(0, 1), (0, 1), (0, 6), (0, 2), (0, 2), (0, 2)]
    whole = _run(tmp_path, "whole", monkeypatch, 10_000)
    assert windowed["results"] == whole["results"] and windowed["breakdowns"] == whole["breakdowns"]
    assert windowed["results"]["testpack/qa_easy"]["samples"] == 6
    lines = _samples(tmp_path / "windowed", "testpack/qa_easy")
    assert lines == _samples(tmp_path / "whole", "testpack/qa_easy")
    assert [l["id"] for l in lines] == [f"e{i}" for i in range(6)] and all(l["prompt"] for l in lines)
    assert not list((tmp_path / "windowed" / "samples").glob(".*.tmp"))


def test_a_replay_keeps_one_window_and_counts_every_missing_answer(testpack, tmp_path, monkeypatch):
    """``avhb score`` replays the task in one window: answers missing from
    two windows' worth of samples are all counted in the one error."""
    from avhb.run.evaluator import NotInRunJournal
    from avhb.runfolder.manifest import options_from_run

    _run(tmp_path, "run", monkeypatch, 10_000)
    journal = tmp_path / "run" / "journal" / "responses.jsonl"
    lines = journal.read_text().splitlines()
    assert len(lines) == 6
    journal.write_text("\n".join(lines[1:5]) + "\n")  # the first and the last sample's answers gone
    monkeypatch.setattr("avhb.run.evaluator.window_size", lambda concurrency: 2)
    with pytest.raises(NotInRunJournal, match="^2 responses of task 'testpack/qa_easy'") as err:
        avhb.evaluate(options_from_run(tmp_path / "run"))
    assert len(err.value.records) == 6


def test_a_window_is_large_beside_what_the_model_takes_at_once():
    from avhb.run.stream import WINDOW, window_size

    assert window_size(1) == WINDOW == 8192 and window_size(0) == WINDOW
    assert window_size(1000) == 32_000  # the drain between windows stays a small part of one


def test_a_record_has_no_instance_dict():
    assert not hasattr(_rec("a"), "__dict__")  # slotted: a run holds one per sample
