"""results.json's ``usage["model"]`` (avhb.run.usage): checked against the
journal the run wrote, again after a resume, split per task, the quantiles
by hand, and the printed line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from avhb.report.table import format_results_table
from avhb.run.usage import model_usage, nearest_rank, usage_line, without_timings
from tests.conftest import run_cli


# ------------------------------------------------------------ nearest rank, by hand
@pytest.mark.parametrize("values, q, expected", [
    ([7.0], 0.50, 7.0), ([7.0], 0.95, 7.0),            # one value: every quantile is it
    ([4.0, 1.0, 3.0, 2.0], 0.50, 2.0),                 # ceil(0.5 * 4) = 2nd of 1,2,3,4
    ([4.0, 1.0, 3.0, 2.0], 0.95, 4.0),                 # ceil(3.8) = 4th
    ([float(i) for i in range(1, 21)], 0.95, 19.0),    # ceil(0.95 * 20) = 19 exactly (not 20: float 19.000000000000004)
    ([float(i) for i in range(1, 21)], 0.50, 10.0),
    ([1.0, 2.0, 3.0], 0.50, 2.0),                      # ceil(1.5) = 2nd
    ([5.0, 5.0, 5.0, 9.0], 0.50, 5.0),                 # ties
    ([5.0, 5.0, 5.0, 9.0], 0.95, 9.0),
    ([2.0, 2.0], 0.95, 2.0),
])
def test_nearest_rank_by_hand(values, q, expected):
    assert nearest_rank(values, q) == expected


def test_nearest_rank_of_nothing_and_bad_q():
    assert nearest_rank([], 0.5) is None
    with pytest.raises(ValueError):
        nearest_rank([1.0], 0)


# ------------------------------------------------------------ the counting rules, on a hand-written journal
def _line(key, task, sid, *, error=None, p=10, c=2, cost=0.0, latency=None, priced=None, repeat=0):
    entry = {"key": key, "task": task, "id": sid, "repeat": repeat, "response": "" if error else "x", "error": error,
             "usage": {"prompt_tokens": p, "completion_tokens": c}, "cost": cost}
    if latency is not None:
        entry["latency_s"] = latency
    if priced is not None:
        entry["priced"] = priced
    return json.dumps(entry) + "\n"


def test_newest_entry_per_key_of_the_results_samples(tmp_path):
    samples = {"a": tmp_path / "a.jsonl", "b": tmp_path / "b.jsonl"}
    samples["a"].write_text("".join(json.dumps({"id": i, "repeat": 0}) + "\n" for i in ("s1", "s2")))
    samples["b"].write_text(json.dumps({"id": "t1", "repeat": 0}) + "\n")
    journal = tmp_path / "responses.jsonl"
    journal.write_text("".join([
        _line("k1", "a", "s1", latency=1.0, cost=0.5, priced=True),
        _line("k2", "a", "s2", error="HTTP 500", p=0, c=0, latency=9.0),   # failed, then answered on a re-run
        _line("k3", "a", "gone", latency=50.0),                               # a sample no longer in the results
        _line("k4", "other", "s1", latency=50.0),                             # a task without results here
        _line("k5", "b", "t1", error="HTTP 400", p=3, c=0, latency=2.0),     # failed, never answered: counts
        "{torn\n",  # a killed write (the journal starts the next entry on a new line)
        _line("k2", "a", "s2", latency=3.0, cost=0.25, priced=True),
    ]))
    usage = model_usage(journal, samples)
    a, b = usage["tasks"]["a"], usage["tasks"]["b"]
    assert a == {"calls": 2, "failed": 0, "prompt_tokens": 20, "completion_tokens": 4, "cost_usd": 0.75,
                 "latency_s": {"p50": 1.0, "p95": 3.0, "n": 2}}
    assert b == {"calls": 0, "failed": 1, "prompt_tokens": 3, "completion_tokens": 0, "cost_usd": None,
                 "latency_s": {"p50": 2.0, "p95": 2.0, "n": 1}}
    assert usage["total"] == {"calls": 2, "failed": 1, "prompt_tokens": 23, "completion_tokens": 4, "cost_usd": 0.75,
                              "latency_s": {"p50": 2.0, "p95": 3.0, "n": 3}}


def test_old_entries_without_latency_or_priced(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "s1", "repeat": 0}) + "\n")
    (tmp_path / "r.jsonl").write_text(_line("k1", "a", "s1", cost=0.0))
    cell = model_usage(tmp_path / "r.jsonl", {"a": tmp_path / "a.jsonl"})["total"]
    assert cell["cost_usd"] is None and cell["latency_s"] is None and cell["calls"] == 1
    (tmp_path / "r.jsonl").write_text(_line("k1", "a", "s1", cost=0.125))  # a cost above 0: priced
    assert model_usage(tmp_path / "r.jsonl", {"a": tmp_path / "a.jsonl"})["total"]["cost_usd"] == 0.125
    assert model_usage(tmp_path / "none.jsonl", {"a": tmp_path / "a.jsonl"})["tasks"]["a"]["calls"] == 0


# ------------------------------------------------------------ a real run, from the journal it wrote
def _journal_sums(run: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in (run / "journal" / "responses.jsonl").read_text().splitlines():
        e = json.loads(line)
        cell = out.setdefault(e["task"], {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "latencies": []})
        cell["calls"] += 1
        cell["prompt_tokens"] += e["usage"]["prompt_tokens"]
        cell["completion_tokens"] += e["usage"]["completion_tokens"]
        cell["latencies"].append(e["latency_s"])
    return out


def test_a_run_reports_its_journal_per_task_and_the_same_after_a_resume(tmp_path, testpack):
    out = tmp_path / "run"
    command = ["--tasks", "testpack/qa_easy,testpack/qa_hard", "--model", "testpack/echo", "--sample-data",
               "--output-dir", str(out)]
    first = run_cli(*command)
    assert first.returncode == 0, first.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    usage = results["usage"]["model"]
    sums = _journal_sums(out)
    assert set(usage["tasks"]) == set(sums) == {"testpack/qa_easy", "testpack/qa_hard"}
    for task, cell in usage["tasks"].items():
        want = sums[task]
        assert (cell["calls"], cell["prompt_tokens"], cell["completion_tokens"]) == (
            want["calls"], want["prompt_tokens"], want["completion_tokens"])
        assert cell["calls"] == results["results"][task]["samples"] and cell["failed"] == 0
        assert cell["latency_s"] == {"p50": nearest_rank(want["latencies"], 0.5),
                                     "p95": nearest_rank(want["latencies"], 0.95), "n": want["calls"]}
        assert cell["cost_usd"] is None  # testpack/echo has no prices
    assert usage["total"]["calls"] == 9 == sum(c["calls"] for c in usage["tasks"].values())
    assert usage["total"]["prompt_tokens"] == sum(c["prompt_tokens"] for c in sums.values())
    every = [x for c in sums.values() for x in c["latencies"]]
    assert usage["total"]["latency_s"]["p95"] == nearest_rank(every, 0.95)
    assert usage["total"]["latency_s"]["p50"] <= usage["total"]["latency_s"]["p95"]
    # the printed table's line
    line = usage_line(usage)
    assert line is not None and line.startswith("model usage: 9 calls, ")
    assert f"{usage['total']['prompt_tokens']} prompt + 9 completion tokens, cost unknown" in line
    assert line in first.stdout and line in format_results_table(results)

    again = run_cli(*command)  # nothing to do: every call answered by the journal, the same usage
    assert again.returncode == 0, again.stderr[-3000:]
    assert "results kept" in again.stderr
    assert json.loads((out / "results.json").read_text())["usage"] == results["usage"]


def test_a_resume_that_keeps_every_task_reuses_the_usage_without_reading_the_journal(tmp_path, testpack,
                                                                                    monkeypatch):
    """Every task finished with the same settings: the calls its results rest
    on are those the previous results.json counted, so the journal is not read
    again (at 20,000 samples that read was most of a finished rerun's CPU)."""
    import avhb
    import avhb.run.usage
    from avhb.model.backend import parse_backend_spec

    def options(tasks):
        return avhb.RunOptions(tasks=tasks, model=parse_backend_spec("testpack/echo"), output_dir=tmp_path / "run",
                               sample_data=True, write_report=False)

    first = avhb.evaluate(options(["testpack/qa_easy", "testpack/qa_hard"]))

    def no_journal_read(*args, **kwargs):
        raise AssertionError("the journal was read for usage")

    monkeypatch.setattr(avhb.run.usage, "model_usage", no_journal_read)
    again = avhb.evaluate(options(["testpack/qa_easy", "testpack/qa_hard"]))
    assert again["usage"] == first["usage"] and set(again["usage"]["model"]["tasks"]) == {
        "testpack/qa_easy", "testpack/qa_hard"}
    with pytest.raises(AssertionError, match="journal was read"):  # fewer tasks: the usage is read again
        avhb.evaluate(options(["testpack/qa_easy"]))


def test_a_resumed_rerun_through_the_journal_counts_its_calls(tmp_path, testpack):
    """A task that runs again (results.json gone) is answered by the journal: its calls still count."""
    out = tmp_path / "run"
    command = ["--tasks", "testpack/qa_easy", "--model", "testpack/echo", "--sample-data", "--no-report",
               "--output-dir", str(out)]
    assert run_cli(*command).returncode == 0
    before = json.loads((out / "results.json").read_text())["usage"]
    (out / "results.json").unlink()
    lines = len((out / "journal" / "responses.jsonl").read_text().splitlines())
    assert run_cli(*command).returncode == 0
    assert len((out / "journal" / "responses.jsonl").read_text().splitlines()) == lines  # no new call
    assert json.loads((out / "results.json").read_text())["usage"] == before


def test_without_timings_keeps_everything_else():
    doc = {"results": {"t": {"x": 1}}, "usage": {"model": {
        "total": {"calls": 2, "latency_s": {"p50": 1, "p95": 2, "n": 2}},
        "tasks": {"t": {"calls": 2, "latency_s": {"p50": 1, "p95": 2, "n": 2}}}}}}
    assert without_timings(doc) == {"results": {"t": {"x": 1}}, "usage": {"model": {
        "total": {"calls": 2}, "tasks": {"t": {"calls": 2}}}}}
    assert doc["usage"]["model"]["total"]["latency_s"]["n"] == 2  # not changed in place
