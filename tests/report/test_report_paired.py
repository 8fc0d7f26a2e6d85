"""`avhb report A B` compares runs on the samples both scored: McNemar on
0/1 scores (checked against scipy's binomtest on the discordant pairs the
test counts itself), a paired t otherwise (scipy's ttest_rel), the
cluster-robust paired standard error when the task declares clusters,
Holm over a run's tests, the samples left out when the runs scored
different sets, the comparison document, and --baseline as lmms-eval
spells it (a run folder, or an lmms-eval samples file)."""
import csv
import io
import json

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from avhb.errors import UserError
from avhb.report.compare import Column, compare_runs
from avhb.score.aggregate import Aggregate
from avhb.score.stats import CLUSTER_PAIRED_T, MCNEMAR, PAIRED_T, UNPAIRED_Z, cluster_se
from paired_fixtures import lines_of, write_run
from tests.conftest import run_cli

N = 200


def _columns(seed=5):
    """The baseline's and the run's scores: ``acc`` (0/1; the run fixes 30
    answers and breaks 5), ``stable`` (0/1; 6 and 5), ``rating`` (in [0, 1],
    no real change)."""
    rng = np.random.default_rng(seed)
    base_acc = (rng.random(N) < 0.55).astype(float)
    run_acc = base_acc.copy()
    wrong, right = np.flatnonzero(base_acc == 0), np.flatnonzero(base_acc == 1)
    run_acc[wrong[np.linspace(0, len(wrong) - 1, 30).astype(int)]] = 1.0  # spread over the samples (and videos)
    run_acc[right[np.linspace(0, len(right) - 1, 5).astype(int)]] = 0.0
    base_stable = (rng.random(N) < 0.7).astype(float)
    run_stable = base_stable.copy()
    run_stable[np.flatnonzero(base_stable == 0)[:6]] = 1.0
    run_stable[np.flatnonzero(base_stable == 1)[:5]] = 0.0
    base_rating = rng.random(N)
    run_rating = np.clip(base_rating + rng.normal(0, 0.1, N), 0, 1)
    return ({"acc": base_acc.tolist(), "stable": base_stable.tolist(), "rating": base_rating.tolist()},
            {"acc": run_acc.tolist(), "stable": run_stable.tolist(), "rating": run_rating.tolist()})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("paired")
    base, run = _columns()
    a = write_run(root / "a", "model-a", {"qa": lines_of(base)})
    b = write_run(root / "b", "model-b", {"qa": lines_of(run)})
    return a, b, base, run


def test_a_0_1_metric_is_tested_by_mcnemar_on_its_discordant_pairs(runs):
    a, b, base, run = runs
    table = compare_runs([a, b])
    acc = table.pairing(1, table.columns.index(Column("qa", "acc")))
    up = sum(1 for x, y in zip(run["acc"], base["acc"]) if x == 1 and y == 0)
    down = sum(1 for x, y in zip(run["acc"], base["acc"]) if x == 0 and y == 1)
    assert (up, down) == (30, 5) and acc.test.method == MCNEMAR and acc.test.discordant == (30, 5)
    assert acc.test.p == pytest.approx(sps.binomtest(up, up + down, 0.5).pvalue, rel=1e-10)
    assert acc.test.difference == pytest.approx(25 / N) and acc.paired == N
    assert (acc.left_out_run, acc.left_out_base) == (0, 0)
    rating = table.pairing(1, table.columns.index(Column("qa", "rating")))
    ref = sps.ttest_rel(run["rating"], base["rating"])
    assert rating.test.method == PAIRED_T and rating.test.p == pytest.approx(ref.pvalue, rel=1e-9)
    assert rating.test.correlation == pytest.approx(np.corrcoef(run["rating"], base["rating"])[0, 1])


def test_marks_come_from_the_holm_adjusted_tests(runs):
    a, b, _, _ = runs
    table = compare_runs([a, b])
    cols = [table.columns.index(Column("qa", m)) for m in ("acc", "stable", "rating")]
    ps = [table.pairing(1, i).test.p for i in cols]
    assert [table.p_holm(1, i) for i in cols] == pytest.approx(list(multipletests(ps, method="holm")[1]))
    assert table.family(1) == 3
    assert [table.mark(1, i) for i in cols] == [1, 0, 0]
    assert table.cell_text(1, cols[0]).endswith("▲") and not table.cell_text(1, cols[1]).endswith("▲")
    md = table.to_markdown()
    assert "model-b vs model-a (3 tests, Holm-adjusted):" in md
    assert "mcnemar_exact: McNemar's exact test" in md and "paired_t: paired t test" in md


def test_runs_of_different_sample_sets_are_compared_on_their_intersection(tmp_path):
    base, run = _columns()
    ids = [f"s{i:03d}" for i in range(N)]
    a = write_run(tmp_path / "a", "model-a", {"qa": lines_of(base)})
    # b scored the first 180 samples of a, and 7 that a never saw; one of a's failed in b
    keep = {m: col[:180] + [1.0] * 7 for m, col in run.items()}
    lines = lines_of(keep, ids=ids[:180] + [f"x{i}" for i in range(7)])
    lines[3] = {**lines[3], "scores": {}, "error": "SampleError: video missing"}
    b = write_run(tmp_path / "b", "model-b", {"qa": lines})
    table = compare_runs([a, b])
    acc = table.pairing(1, table.columns.index(Column("qa", "acc")))
    assert acc.paired == 179 and acc.left_out_run == 7 and acc.left_out_base == 21
    pairs = [i for i in range(180) if i != 3]
    expect = sps.binomtest(sum(1 for i in pairs if run["acc"][i] == 1 and base["acc"][i] == 0),
                           sum(1 for i in pairs if run["acc"][i] != base["acc"][i]), 0.5).pvalue
    assert acc.test.p == pytest.approx(expect, rel=1e-10)
    assert any("compared on the 179 samples both scored" in n and "left out 7 scored only by model-b and 21 only "
               "by model-a" in n for n in table.notes)
    assert "left out 7 scored only by model-b" in table.to_markdown()
    assert "Samples left out" in table.to_html()
    doc = table.comparison
    test = next(t for t in doc["tests"] if t["metric"] == "acc")
    assert test["paired"] == 179 and test["left_out"] == {"run": 7, "baseline": 21}


def test_a_clustered_task_gets_the_cluster_robust_paired_standard_error(tmp_path):
    base, run = _columns()
    docs = [{"video": f"v{i // 8}"} for i in range(N)]  # 25 videos, 8 questions each
    config = {"qa": {"cluster_key": "video"}}
    a = write_run(tmp_path / "a", "model-a", {"qa": lines_of(base, docs)}, configs=config)
    b = write_run(tmp_path / "b", "model-b", {"qa": lines_of(run, docs)}, configs=config)
    table = compare_runs([a, b])
    acc = table.pairing(1, table.columns.index(Column("qa", "acc")))
    diffs = [x - y for x, y in zip(run["acc"], base["acc"])]
    se, g = cluster_se(diffs, [d["video"] for d in docs])
    assert acc.test.method == CLUSTER_PAIRED_T and acc.test.clusters == g == 25 and acc.test.df == 24
    assert acc.test.stderr == pytest.approx(se) and acc.clusters_by == "cluster_key 'video'"
    assert acc.test.p == pytest.approx(2 * sps.t.sf(abs(acc.test.difference / se), 24))
    assert acc.mde == pytest.approx((1.959964 + 0.841621) * se, rel=1e-5)
    results = json.loads((a / "results.json").read_text())["results"]["qa"]
    assert results["acc_clusters"] == 25 and results["acc_stderr_clustered"] > results["acc_stderr"]


def test_a_number_without_per_sample_scores_is_compared_through_its_standard_errors(tmp_path):
    base, run = _columns()
    a = write_run(tmp_path / "a", "model-a", {"qa": lines_of(base)}, extra={"qa": {"pair_acc": Aggregate(0.5, 0.03, 100)}})
    b = write_run(tmp_path / "b", "model-b", {"qa": lines_of(run)}, extra={"qa": {"pair_acc": Aggregate(0.6, 0.04, 100)}})
    table = compare_runs([a, b])
    p = table.pairing(1, table.columns.index(Column("qa", "pair_acc")))
    assert p.test.method == UNPAIRED_Z and p.test.p == pytest.approx(2 * sps.norm.sf(0.1 / 0.05))
    assert p.paired == 0
    rows = list(csv.reader(io.StringIO(table.to_csv())))
    j = rows[0].index("qa / pair_acc test")
    assert rows[2][j] == UNPAIRED_Z


def test_cli_report_writes_the_comparison_document_and_takes_baseline(runs, tmp_path):
    a, b, _, _ = runs
    out = tmp_path / "cmp.json"
    proc = run_cli("report", str(b), "--baseline", str(a), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["baseline"] == "model-a" and [r["label"] for r in doc["runs"]] == ["model-a", "model-b"]
    acc = next(t for t in doc["tests"] if t["metric"] == "acc")
    assert acc["test"] == MCNEMAR and acc["significant"] is True and acc["discordant"] == [30, 5]
    assert doc["adjustment"].startswith("holm")
    assert "| qa / acc | +0.1250 |" in proc.stdout  # the Markdown tests table is printed
    # a listed run as the baseline: the other is tested against it
    proc = run_cli("report", str(a), str(b), "--baseline", str(b), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["baseline"] == "model-b" and next(t for t in doc["tests"] if t["metric"] == "acc")["difference"] < 0
    bad = run_cli("report", str(a), "--baseline", str(tmp_path / "nowhere"))
    assert bad.returncode == 2 and "--baseline" in bad.stderr and "no such run folder or file" in bad.stderr


def _lmms_samples(path, scores: list[float], videos: list[str]) -> None:
    """An lmms-eval --log_samples file: one line per document, the metric's
    per-sample dict holding its score and its cluster (videomme's shape)."""
    with path.open("w") as fh:
        for i, (x, v) in enumerate(zip(scores, videos)):
            fh.write(json.dumps({"doc_id": i, "target": "A", "filtered_resps": ["A" if x else "B"], "doc_hash": "h",
                                 "acc": {"question_id": i, "score": x, "videoID": v}}) + "\n")


def test_an_lmms_eval_samples_file_as_the_baseline(tmp_path):
    base, run = _columns()
    videos = [f"v{i // 8}" for i in range(N)]
    config = {"qa": {"cluster_key": "videoID"}}
    lines = lines_of({"acc": run["acc"]}, [{"videoID": v} for v in videos], ids=[str(i) for i in range(N)])
    b = write_run(tmp_path / "b", "model-b", {"qa": lines}, configs=config)
    lmms = tmp_path / "2025-01-02T03-04-05_samples_qa.jsonl"
    _lmms_samples(lmms, base["acc"][:190], videos[:190])
    table = compare_runs([b], lmms_baseline=lmms)
    assert table.baseline == 0 and table.labels[0].startswith("2025-01-02T03-04-05_samples_qa")
    i = table.columns.index(Column("qa", "acc"))
    assert table.cells[0][i].value == pytest.approx(sum(base["acc"][:190]) / 190)
    acc = table.pairing(1, i)
    assert acc.paired == 190 and acc.left_out_run == 10 and acc.left_out_base == 0
    assert acc.test.method == CLUSTER_PAIRED_T and acc.test.clusters == 24  # videos of the 190 paired samples
    diffs = [x - y for x, y in zip(run["acc"][:190], base["acc"][:190])]
    assert acc.test.stderr == pytest.approx(cluster_se(diffs, videos[:190])[0])
    proc = run_cli("report", str(b), "--baseline", str(lmms), "--output", str(tmp_path / "cmp.md"))
    assert proc.returncode == 0, proc.stderr
    assert "cluster_paired_t" in (tmp_path / "cmp.md").read_text()
    wrong = tmp_path / "results_2025.json"
    wrong.write_text("{}")
    bad = run_cli("report", str(b), "--baseline", str(wrong))
    assert bad.returncode == 2 and "not a run folder nor an lmms-eval samples file" in bad.stderr
    other = tmp_path / "2025_samples_other.jsonl"
    other.write_text(lmms.read_text())
    with pytest.raises(UserError, match="its task 'other' is in none of the runs"):
        compare_runs([b], lmms_baseline=other)


def test_a_corrupt_samples_line_is_named(runs, tmp_path):
    a, _, base, run = runs
    b = write_run(tmp_path / "b", "model-b", {"qa": lines_of(run)})
    path = b / "samples" / "qa.jsonl"
    text = path.read_text().splitlines()
    text[4] = text[4][:20]
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(UserError, match=r"qa.jsonl line 5: not JSON \(a samples file half written"):
        compare_runs([a, b])
    text[4] = "[1, 2]"  # JSON, but not a sample; and bytes that are not UTF-8 further on
    path.write_bytes(("\n".join(text) + "\n").encode() + b'{"id": "\xff"}\n')
    with pytest.raises(UserError, match=r"qa.jsonl line 5: not an object, and 1 more bad line \("):
        compare_runs([a, b])


def test_a_group_is_compared_on_its_members_samples_together(tmp_path):
    base, run = _columns()
    half = 60  # members of different sizes: the mean of their means is not their samples' pooled mean
    split = lambda cols, part: {m: c[:half] if part == 0 else c[half:] for m, c in cols.items()}  # noqa: E731
    groups = {"both": (["qa_1", "qa_2"], ["acc", "rating"], True), "means": (["qa_1", "qa_2"], ["acc"], False)}
    a = write_run(tmp_path / "a", "model-a", {f"qa_{k + 1}": lines_of(split(base, k)) for k in (0, 1)}, groups=groups)
    b = write_run(tmp_path / "b", "model-b", {f"qa_{k + 1}": lines_of(split(run, k)) for k in (0, 1)}, groups=groups)
    assert json.loads((a / "results.json").read_text())["group_members"]["both"] == ["qa_1", "qa_2"]
    table = compare_runs([a, b])
    acc = table.pairing(1, table.columns.index(Column("both", "acc", group=True)))
    assert acc.test.method == MCNEMAR and acc.paired == N and acc.test.discordant == (30, 5)
    assert acc.test.p == pytest.approx(sps.binomtest(30, 35, 0.5).pvalue, rel=1e-10)
    rating = table.pairing(1, table.columns.index(Column("both", "rating", group=True)))
    assert rating.test.method == PAIRED_T
    assert rating.test.p == pytest.approx(sps.ttest_rel(run["rating"], base["rating"]).pvalue, rel=1e-9)
    # the mean of the members' means is not the mean of the pooled samples: compared through its standard error
    means = table.pairing(1, table.columns.index(Column("means", "acc", group=True)))
    assert means.test.method == UNPAIRED_Z


def test_a_samples_file_that_is_not_there_is_refused_not_read_as_empty(tmp_path):
    """read_samples_file of a missing file is one UserError naming it: an
    empty file's lines would compare as a run with no samples."""
    from avhb.report.paired import read_samples_file

    with pytest.raises(UserError, match=r"gone\.jsonl: no such samples file"):
        read_samples_file(tmp_path / "gone.jsonl")
