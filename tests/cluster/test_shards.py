"""Shards and their merge (issue 17).

* the slice: deterministic, order-free, pairs and repeats kept together;
* ``avhb merge``: a run sharded 4 ways and merged equals the unsharded run
  (``samples/``, ``results.json`` with groups, breakdowns and judge usage)
  on VidPair-Halluc (pair-scored binary and MCQ metrics, bootstrap stderrs,
  and a judge *panel* of two scorers on the open task) and on the test
  pack's conciseness task (run-wide cut points) and group, there with
  ``report.html`` and pooled conciseness too; a missing, duplicate,
  mismatched or unfinished shard is named and refused.

Runs go through ``avhb.cli.main`` in this process (one interpreter start
saved per run); the backend is a tiny replay plugin installed as a real
distribution.
"""
from __future__ import annotations

import json
import random
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from avhb.cli import main
from avhb.errors import UserError
from avhb.cluster.shard import Shard, shard_of
from avhb.run.usage import without_timings
from avhb.score.metric import Metric, SampleRecord
from tests.tasks.test_vidpair_e2e import BINARY, JUDGE, MCQ, OPEN

N = 4

PLUGIN = '''
import json
from avhb.hookspecs import hookimpl
from avhb.model.backend import Backend
from avhb.model.messages import Response


class Table(Backend):
    """Model: the reply for request.fields["sample_id"]; judge: the reply
    for (role, response).  ``member=2`` (a second panel member) rates one
    point lower where it can.  Text only: videos are not sent."""

    concurrency = 4

    def __init__(self, spec):
        super().__init__(spec)
        with open(spec.args["replies"]) as fh:
            self.table = json.load(fh)

    async def generate(self, request):
        f = request.fields
        if "role" in f:
            reply = self.table["judges"][f["role"]].get(f.get("response"))
            if reply in ("1", "2") and self.spec.args.get("member") == 2:
                reply = str(int(reply) - 1)
        else:
            reply = self.table["model"].get(f.get("sample_id"))
        if reply is None:
            return Response(text="", error=f"no scripted reply for {f}")
        return Response(text=reply, usage={"prompt_tokens": 3, "completion_tokens": len(reply.split())})


@hookimpl
def avhb_backends():
    return {"table": "shard_table:Table"}
'''


@pytest.fixture
def table(tmp_path, monkeypatch):
    """``--model`` / ``--judge`` flags for the table backend (a plugin
    distribution on sys.path), with a two-member scorer panel."""
    from tests.conftest import _clear_registry

    site = tmp_path / "site"
    (site / "shard_table-0.1.dist-info").mkdir(parents=True)
    (site / "shard_table.py").write_text(textwrap.dedent(PLUGIN))
    (site / "shard_table-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: shard-table\nVersion: 0.1\n")
    (site / "shard_table-0.1.dist-info" / "entry_points.txt").write_text("[avhb]\nshardtest = shard_table\n")
    monkeypatch.syspath_prepend(str(site))
    _clear_registry()
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({"model": {**BINARY, **MCQ, **OPEN}, "judges": JUDGE}))
    spec = f"shardtest/table,replies={replies}"
    yield ["--model", spec, "--judge", f"answer_matcher={spec}", "--judge", f"scorer={spec}",
           "--judge", f"scorer={spec},member=2"]
    _clear_registry()


def _avhb(*args: str) -> None:
    assert main(list(args)) == 0


def _files(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run / "samples").glob("*.jsonl"))}


def _report_body(run: Path) -> str:
    """report.html without what names the run itself (when and how it was
    made, its folder, the fingerprint of its files)."""
    html = re.sub(r'<meta name="avhb-inputs" content="[0-9a-f]+">', "", (run / "report.html").read_text(encoding="utf-8"))
    run_info = json.loads((run / "run.json").read_text())
    for text in (run_info.get("created"), " ".join(run_info.get("command") or []), str(run), run.name):
        if text:
            html = html.replace(text, "")
            html = html.replace(json.dumps(text)[1:-1], "")
    html = re.sub(r'"latency_s": \{[^}]*\}', "", html)  # measured (results.json usage): the run's own
    html = re.sub(r'<td class="num latency">[^<]*</td>', "", html)  # the Usage section's p50/p95, measured too
    return re.sub(r"<code>avhb [^<]*</code>", "", html)


def _shard_and_merge(tmp_path: Path, flags: list[str], report: bool = False) -> tuple[Path, Path, list[Path]]:
    quiet = [] if report else ["--no-report"]
    full = tmp_path / "unsharded"  # a name no page text contains: _report_body removes it
    _avhb(*flags, *quiet, "--output-dir", str(full))
    shards = [tmp_path / f"shard{i}" for i in range(N)]
    for i, out in enumerate(shards):
        _avhb(*flags, "--shard", f"{i}/{N}", "--output-dir", str(out), "--no-report")
    merged = tmp_path / "merged"
    _avhb("merge", str(merged), *map(str, reversed(shards)), *quiet)
    return full, merged, shards


# ---------------------------------------------------------------- the slice

def _records(ids, repeats=1, **doc):
    return [SampleRecord(id=i, doc={"pair": i.split("-")[0], **doc}, repeat=r) for i in ids for r in range(repeats)]


class PairKey(Metric):
    name = "pairs"

    def group_key(self, record):
        return record.doc["pair"]


def test_shards_partition_keep_pairs_and_repeats_and_ignore_order():
    ids = [f"p{k}-{side}" for k in range(40) for side in ("a", "b")]
    records = _records(ids, repeats=3)
    slices = [Shard(i, N).select(records, [PairKey()]) for i in range(N)]
    seen = [(r.id, r.repeat) for s in slices for r in s]
    assert sorted(seen) == sorted((r.id, r.repeat) for r in records)  # every record in exactly one shard
    assert all(len(s) > 0 for s in slices)
    owner = {(r.id, r.repeat): i for i, s in enumerate(slices) for r in s}
    for k in range(40):  # both sides of a pair, every repeat: one shard
        assert len({owner[(f"p{k}-{side}", rep)] for side in "ab" for rep in range(3)}) == 1
    shuffled = list(records)
    random.Random(7).shuffle(shuffled)
    again = [Shard(i, N).select(shuffled, [PairKey()]) for i in range(N)]
    assert [sorted((r.id, r.repeat) for r in s) for s in again] == [sorted((r.id, r.repeat) for r in s) for s in slices]
    # a unit goes where the hash of its grouping key says; an ungrouped sample, of its id
    assert owner[("p3-b", 0)] == shard_of("key:'p3'", N)
    assert [r.id for r in Shard(shard_of("id:solo", N), N).select(_records(["solo"]), [])] == ["solo"]
    # without a grouping key, sides of a pair may part
    alone = [Shard(i, N).select(records, []) for i in range(N)]
    parted = sum(len({i for i, s in enumerate(alone) for r in s if r.id in (f"p{k}-a", f"p{k}-b")}) > 1
                 for k in range(40))
    assert parted > 0


def test_shard_flag_and_key_errors():
    assert Shard.parse("3/4") == Shard(3, 4)
    for bad in ("4/4", "1", "a/b", "-1/2", "0/0"):
        with pytest.raises(UserError, match="--shard"):
            Shard.parse(bad)
    from avhb.plugins.metrics.pairs import UnitAccuracy

    late = UnitAccuracy(key=["doc.pair", "scores.exact"])
    with pytest.raises(UserError, match="scores.exact.*known only after the model answers"):
        Shard(0, 2).select(_records(["p1-a", "p1-b"]), [late], "t")
    early = UnitAccuracy(key=["doc.pair"])
    halves = [Shard(i, 2).select(_records(["p1-a", "p1-b", "p2-a", "p2-b"]), [early]) for i in range(2)]
    assert sorted(len(h) for h in halves) in ([0, 4], [2, 2]) and all(
        len({r.doc["pair"] for r in h}) == len(h) // 2 for h in halves)


# ---------------------------------------------------------------- merge = unsharded

def test_vidpair_sharded_four_ways_merges_into_the_unsharded_run(tmp_path, table):
    flags = ["--tasks", "vidpair_halluc", *table, "--sample-data"]
    full, merged, shards = _shard_and_merge(tmp_path, flags)
    # each shard is a real slice that keeps VidPair's pairs whole
    def pairs(shard: Path, task: str) -> set[str]:
        return {json.loads(l)["doc"]["pair_id"] for l in (shard / "samples" / f"{task}.jsonl").read_text().splitlines()}

    per_shard = [pairs(s, "vidpair_binary") for s in shards]
    assert sum(len(p) for p in per_shard) == 4 and len(set().union(*per_shard)) == 4
    # one pair, one shard, across the three tasks (its videos decoded on one machine)
    assert all(pairs(s, "vidpair_mcq") <= p and pairs(s, "vidpair_open") <= p for s, p in zip(shards, per_shard))
    assert json.loads((shards[0] / "results.json").read_text())["shard"] == f"0/{N}"
    # samples/, results.json (pairs, groups, breakdowns, stderrs, judge panel, judge usage) and the report
    assert _files(merged) == _files(full) and len(_files(full)) == 3
    assert without_timings(json.loads((merged / "results.json").read_text())) == without_timings(
        json.loads((full / "results.json").read_text()))  # latencies are measured: the shards' are not the run's
    res = json.loads((merged / "results.json").read_text())
    assert res["results"]["vidpair_open"]["open_score_n"] == 7 and res["groups"]["vidpair_halluc"]["wAcc"] is not None
    line = next(json.loads(l) for l in (merged / "samples" / "vidpair_open.jsonl").read_text().splitlines())
    assert len(line["judgements"]["scorer"]["per_judge"]) == 2  # a panel of two
    run = json.loads((merged / "run.json").read_text())
    assert "shard" not in run and len(run["merged_from"]) == N and run["command"][:2] == ["avhb", "merge"]
    # merging again rebuilds the same folder
    _avhb("merge", str(merged), *map(str, shards), "--no-report")
    assert _files(merged) == _files(full)


def _concise_data(root: Path) -> Path:
    """Answers of 1..12 words: conciseness cut points that depend on every sample."""
    root.mkdir()
    rows = [{"id": f"c{i:02d}", "q": f"question {i}", "a": "-".join(["word"] * (1 + (i * 5) % 12)), "kind": "xy"[i % 2]}
            for i in range(12)]
    (root / "easy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_conciseness_and_groups_merge_and_pool_like_the_unsharded_run(tmp_path, testpack):
    data = _concise_data(tmp_path / "data")
    flags = ["--tasks", "testpack/qa_concise,testpack/qa_all", "--model", "testpack/echo", "--sample-data",
             "--data", f"testpack/qa_concise={data}"]
    full, merged, shards = _shard_and_merge(tmp_path, flags, report=True)
    assert _files(merged) == _files(full)
    assert _report_body(merged) == _report_body(full)
    full_res, merged_res = (json.loads((d / "results.json").read_text()) for d in (full, merged))
    assert without_timings(merged_res) == without_timings(full_res)
    c = full_res["results"]["testpack/qa_concise"]
    assert c["conciseness_n"] == 12 and 1 < c["conciseness"] < 5  # cut points from all 12 samples
    # a shard's own conciseness uses its own cut points: the merge does not average shards
    shard_values = [json.loads((s / "results.json").read_text())["results"]["testpack/qa_concise"] for s in shards]
    assert sum(v["conciseness_n"] for v in shard_values) == 12
    # pooled conciseness (cut points over several runs' outputs): the merged run pools as the unsharded one
    other = tmp_path / "other"
    _avhb(*flags[:3], "testpack/echo,repeat_words=3", *flags[4:], "--no-report", "--output-dir", str(other))
    _avhb("score", str(full), "--pool", str(other))
    _avhb("score", str(merged), "--pool", str(other))
    pooled = [list(json.loads((d / "pooled.json").read_text())["results"]["testpack/qa_concise"].values())
              for d in (full, merged)]  # labelled by run folder; the cells in run order
    assert pooled[0] == pooled[1] and len(pooled[0]) == 2
    assert pooled[0][0]["conciseness_pooled_n"] == 12 and pooled[0][0]["conciseness_pooled"] != c["conciseness"]


def test_score_of_a_shard_folder_scores_its_slice_again(tmp_path, testpack):
    """``avhb score`` of a shard's folder reads the ``--shard`` its run.json
    recorded and scores that slice again: the same samples and results."""
    shard = tmp_path / "s1"
    _avhb("--tasks", "testpack/qa_all", "--model", "testpack/echo", "--sample-data", "--no-report",
          "--shard", "1/2", "--output-dir", str(shard))
    before = (_files(shard), json.loads((shard / "results.json").read_text()))
    _avhb("score", str(shard), "--no-report")
    after = (_files(shard), json.loads((shard / "results.json").read_text()))
    assert after == before and after[1]["shard"] == "1/2" and after[0]

def test_merge_refuses_missing_duplicate_mismatched_and_unfinished_shards(tmp_path, testpack, capsys):
    flags = ["--tasks", "testpack/qa_all", "--model", "testpack/echo", "--sample-data", "--no-report"]
    shards = [tmp_path / f"s{i}" for i in range(3)]
    for i, out in enumerate(shards):
        _avhb(*flags, "--shard", f"{i}/3", "--output-dir", str(out))
    out = tmp_path / "merged"

    def refused(*folders: Path) -> str:
        capsys.readouterr()
        assert main(["merge", str(out), *map(str, folders)]) == 2
        assert not (out / "results.json").exists()
        return capsys.readouterr().err

    assert f"shard 1/3 missing (given: 0/3 ({shards[0]}), 2/3 ({shards[2]}))" in refused(shards[0], shards[2])
    assert "shard 2/3 is given twice" in refused(*shards, shards[2])
    plain = tmp_path / "plain"
    _avhb(*flags, "--output-dir", str(plain))
    assert f"{plain} is not a shard" in refused(*shards, plain)
    other = tmp_path / "other"
    _avhb(*flags, "--seed", "7", "--shard", "1/3", "--output-dir", str(other))
    assert f"shard 1/3 ({other}) differs from shard 0/3 ({shards[0]}) in run.json 'seed'" in refused(
        shards[0], other, shards[2])
    # an unfinished shard: killed after its first task (the second has no results yet)
    broken = tmp_path / "broken"
    shutil.copytree(shards[1], broken)
    res = json.loads((broken / "results.json").read_text())
    del res["results"]["testpack/qa_hard"]
    (broken / "results.json").write_text(json.dumps(res))
    err = refused(shards[0], broken, shards[2])
    assert f"shard 1/3 ({broken}) is unfinished: task 'testpack/qa_hard' has no results" in err
    (broken / "results.json").unlink()
    assert f"shard 1/3 ({broken}) is unfinished: no readable results.json" in refused(shards[0], broken, shards[2])
    # a shard whose samples file holds a line that is not a sample (corrupt, torn), or lacks one, or lost its file
    shutil.rmtree(broken)
    shutil.copytree(shards[1], broken)
    samples = broken / "samples" / "testpack__qa_easy.jsonl"
    lines = samples.read_text().splitlines(keepends=True)
    samples.write_text(lines[0] + '["not", "a", "sample"]\n' + "".join(lines[1:]))
    assert f"shard 1/3 ({broken}) has a corrupt samples file: {samples} line 2: not an object; resume it with " \
           "its original command (it writes the file again; the merge refuses partial numbers)" in refused(
               shards[0], broken, shards[2])
    _avhb(*flags, "--shard", "1/3", "--output-dir", str(broken))  # the hint holds: resumed, the file is written again
    assert samples.read_text().splitlines(keepends=True) == lines
    samples.write_text("".join(lines[1:]))
    assert f"shard 1/3 ({broken}) is unfinished: {samples} has {len(lines) - 1} samples, its results say " \
           f"{len(lines)}" in refused(shards[0], broken, shards[2])
    samples.unlink()
    assert f"shard 1/3 ({broken}) is unfinished: {samples} is missing, its results say {len(lines)} samples" in \
        refused(shards[0], broken, shards[2])
    # a shard folder is not resumed as another shard or as an unsharded run
    capsys.readouterr()
    assert main([*flags, "--shard", "2/3", "--output-dir", str(shards[0])]) == 2
    assert "holds shard 0/3, not shard 2/3" in capsys.readouterr().err
    _avhb("merge", str(out), *map(str, shards))  # the complete set merges
    assert json.loads((out / "results.json").read_text())["results"]["testpack/qa_easy"]["samples"] == 6


_HOLD = ("import sys, time\nfrom avhb.runfolder.lock import RunLock\nRunLock(sys.argv[1]).acquire()\n"
         "print('held', flush=True)\ntime.sleep(120)\n")


class _Holder:
    """Another live process holding a run folder's lock (as a running shard would)."""

    def __init__(self, folder: Path):
        import subprocess
        import sys

        self.proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(folder)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "held"
        self.pid = self.proc.pid

    def __enter__(self) -> "_Holder":
        return self

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()


def test_merge_holds_the_locks_and_refuses_folders_in_use(tmp_path, testpack, capsys, monkeypatch):
    from avhb.cluster import merge as merge_module
    from avhb.runfolder.lock import RunFolderLocked, RunLock, holder

    flags = ["--tasks", "testpack/qa_all", "--model", "testpack/echo", "--sample-data", "--no-report"]
    shards = [tmp_path / f"s{i}" for i in range(2)]
    for i, out in enumerate(shards):
        _avhb(*flags, "--shard", f"{i}/2", "--output-dir", str(out))
    out = tmp_path / "merged"

    def refused() -> str:
        capsys.readouterr()
        assert main(["merge", str(out), *map(str, shards)]) == 2
        assert not (out / "results.json").exists()
        return capsys.readouterr().err

    # a shard still running (a live process holds its folder) is named with that process, and refused
    with _Holder(shards[1]) as running:
        err = refused()
    assert f"shard 1/2 ({shards[1]}) is still running: pid {running.pid} on " in err
    assert "the merge refuses partial numbers" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()  # refused before OUT was touched
    # OUT in use (another merge, a run) is refused, naming the holder; the shards' locks are let go
    out.mkdir()
    with _Holder(out) as other:
        err = refused()
    assert f"the output folder {out} is in use by pid {other.pid} on " in err
    for shard in shards:
        with RunLock(shard):
            pass
    # while the merge reads the shards and writes OUT, every one of those folders is locked
    seen = []
    real = merge_module.merge_journals

    def checked(target, folders):
        for folder in [target, *shards]:
            with pytest.raises(RunFolderLocked):
                RunLock(folder).acquire()
            seen.append(holder(folder).pid)
        return real(target, folders)

    monkeypatch.setattr(merge_module, "merge_journals", checked)
    capsys.readouterr()
    assert main(["merge", str(out), *map(str, shards)]) == 0
    assert "took over the lock" in capsys.readouterr().err  # the killed holder's stale lock on OUT
    import os

    assert seen == [os.getpid()] * 3
    # ... and released after it
    assert all(holder(f) is None for f in [out, *shards])
    assert json.loads((out / "results.json").read_text())["results"]["testpack/qa_easy"]["samples"] == 6


def test_merged_journal_keeps_a_retried_calls_last_line(tmp_path):
    """A call that failed and was retried on resume has two lines under one
    key; the shard reads the last one, and so must the merged run."""
    from avhb.runfolder.journal import Journal
    from avhb.cluster.merge import merge_journals

    shard = tmp_path / "shard-0"
    (shard / "journal").mkdir(parents=True)
    lines = [{"key": "k1", "response": "", "error": "HTTP 503"}, {"key": "k2", "response": "b", "error": None},
             {"key": "k1", "response": "a", "error": None}]
    (shard / "journal" / "responses.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "out"
    assert merge_journals(out, [shard]).entries == {"responses.jsonl": 2}
    merged = Journal(out / "journal").all("responses")
    assert merged["k1"]["response"] == "a" and merged["k1"]["error"] is None and merged["k2"]["response"] == "b"
