"""Multi-run comparison: alignment, marks from the tests (here the
synthetic runs' VidPair numbers are aggregates without per-sample scores:
z tests on their standard errors, Holm-adjusted; the paired tests on
samples are tests/report/test_report_paired.py), renderers."""
import csv
import io

import pytest

from avhb.errors import UserError
from avhb.report.compare import COMPARE_NAME, Column, compare_runs, to_html, write_html
from avhb.score.aggregate import Aggregate as Cell
from avhb.score.stats import UNPAIRED_Z
from report_fixtures import make_run

SHIFT = 0.2  # VidPair's numbers move by 0.2: vAcc (se 0.05) and wAcc (se 0.03) significantly, after Holm


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp")
    a = make_run(root / "a", model="model-a")
    b = make_run(root / "b", model="model-b", shift=SHIFT)
    c = make_run(root / "c", model="model-a", complete=False)  # same label, missing tasks
    return compare_runs([a, b, c])


def test_alignment(table):
    assert table.labels == ["model-a (a)", "model-b", "model-a (c)"]
    assert table.columns[:3] == [Column("curve_ta_IN", "accuracy"), Column("curve_ko_KR", "accuracy"),
                                 Column("curve_de_DE", "accuracy")]
    assert Column("vidpair_binary", "FP_rate") in table.columns
    assert table.columns[-1] == Column("curve", "accuracy", group=True)
    i = table.columns.index(Column("vidpair_binary", "vAcc"))
    assert table.cells[1][i] == Cell(pytest.approx(0.4 + SHIFT), 0.05, 500)
    assert table.cells[2][i] is None


def test_marks(table):
    col = table.columns.index
    # the VidPair numbers are no means of the samples' scores: z tests on their standard errors
    wacc = table.pairing(1, col(Column("vidpair_binary", "wAcc")))
    assert wacc.test.method == UNPAIRED_Z and wacc.test.difference == pytest.approx(SHIFT)
    # vAcc .40 vs .60, se .05 each: z = 2.83, p = .0047; wAcc .475 vs .675, se .03: z = 4.7
    assert table.mark(1, col(Column("vidpair_binary", "vAcc"))) == 1
    assert table.mark(1, col(Column("vidpair_binary", "wAcc"))) == 1
    # mcq accuracy .62 vs .82, se .02: higher; FP_rate equal: none
    assert table.mark(1, col(Column("vidpair_mcq", "accuracy"))) == 1
    assert table.mark(1, col(Column("vidpair_binary", "FP_rate"))) == 0
    assert table.mark(0, col(Column("vidpair_mcq", "accuracy"))) == 0  # baseline itself
    assert table.mark(2, col(Column("vidpair_mcq", "accuracy"))) == 0  # missing cell
    # Holm over the run's tests: vAcc's p-value is multiplied by the tests with a smaller one and more
    i = col(Column("vidpair_binary", "vAcc"))
    assert table.p_holm(1, i) > table.pairing(1, i).test.p and table.family(1) >= 5


def test_a_difference_under_the_holm_threshold_is_not_marked(tmp_path):
    a = make_run(tmp_path / "a", model="A")
    b = make_run(tmp_path / "b", model="B", shift=0.06)  # vAcc: z = 0.85; wAcc: z = 1.41; mcq: z = 2.12
    t = compare_runs([a, b])
    i = t.columns.index(Column("vidpair_mcq", "accuracy"))
    assert t.pairing(1, i).test.p < 0.05 < t.p_holm(1, i)  # significant alone, not after Holm
    assert t.mark(1, i) == 0 and "▲" not in t.cell_text(1, i)


def test_lower_mark_with_other_baseline(tmp_path):
    a = make_run(tmp_path / "a", model="A")
    b = make_run(tmp_path / "b", model="B", shift=SHIFT)
    t = compare_runs([a, b], baseline=1)
    i = t.columns.index(Column("vidpair_binary", "wAcc"))
    assert t.mark(0, i) == -1 and t.cell_text(0, i) == "0.4750 ± 0.0300 ▼"
    with pytest.raises(UserError):
        compare_runs([a, b], baseline=2)
    with pytest.raises(UserError):
        compare_runs([])


def test_markdown(table):
    md = table.to_markdown().splitlines()
    assert md[0].startswith("| Model | curve_ta_IN / accuracy | curve_ko_KR / accuracy |")
    assert md[1].startswith("|---|---:|")
    row_b = md[3].split(" | ")
    assert row_b[0] == "| model-b"
    i = table.columns.index(Column("vidpair_binary", "wAcc")) + 1
    assert row_b[i] == "0.6750 ± 0.0300 ▲"
    assert "| model-a (c) |" in md[4] and " - |" in md[4]
    assert any("Holm-adjusted p-value under 0.05" in line for line in md)
    assert any(line.startswith("unpaired_z: z test on the two runs' standard errors") for line in md)


def test_csv(table):
    rows = list(csv.reader(io.StringIO(table.to_csv())))
    header = rows[0]
    assert header[:11] == ["model", "run_dir", "curve_ta_IN / accuracy", "curve_ta_IN / accuracy stderr",
                           "curve_ta_IN / accuracy n", "curve_ta_IN / accuracy vs baseline",
                           "curve_ta_IN / accuracy delta", "curve_ta_IN / accuracy p_holm",
                           "curve_ta_IN / accuracy test", "curve_ta_IN / accuracy paired",
                           "curve_ta_IN / accuracy left out"]
    j = header.index("vidpair_binary / wAcc")
    assert rows[2][j:j + 4] == [repr(0.475 + SHIFT), "0.03", "1000", "1"]
    assert rows[2][j + 4] == repr(table.pairing(1, table.columns.index(Column("vidpair_binary", "wAcc"))).test.difference)
    assert rows[2][j + 6:j + 9] == ["unpaired_z", "", ""]
    assert rows[1][j + 4:j + 9] == ["", "", "", "", ""]  # the baseline is not tested against itself
    assert rows[3][j:j + 9] == [""] * 9
    # the curve tasks' accuracy is its samples' mean in both runs: paired on them (the same samples here)
    k = header.index("curve_ta_IN / accuracy")
    assert rows[2][k + 6:k + 9] == ["paired_t", "4", "0/0"]
    assert len(rows) == 4


def test_html(table, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = table.write_html()
    assert out == tmp_path / COMPARE_NAME  # the current folder: never inside run A
    assert not any((d / COMPARE_NAME).exists() for d in table.run_dirs)
    text = out.read_text(encoding="utf-8")
    assert text == to_html(table)
    assert '<table id="compare-table">' in text and text.count("<svg") == 5  # accuracy, vAcc, qAcc, wAcc, FP_rate
    # the fixture's results.json has no metrics block: marked, but neither better nor worse
    assert '<td class="num sig-changed">0.6750 ± 0.0300 ▲</td>' in text
    assert '<section id="tests">' in text and '<table class="tests" id="tests-1">' in text
    other = write_html(table, tmp_path / "sub" / "cmp.html")
    assert other.is_file()
    assert not (table.run_dirs[0] / "report.html").exists()  # a run's own report is never overwritten


def test_markdown_tests_table(table):
    md = table.to_markdown().splitlines()
    start = next(i for i, line in enumerate(md) if line.startswith("model-b vs model-a (a) ("))
    assert md[start].endswith("tests, Holm-adjusted):")
    assert md[start + 2].startswith("| Task / metric | Δ | 95 % CI | p | p (Holm) | Test | Pairs |")
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in md[start + 4:] if line.startswith("| ")}
    wacc = rows["vidpair_binary / wAcc"]
    assert wacc[1] == f"{SHIFT:+.4f}" and wacc[5] == "unpaired_z" and wacc[6] == "-"
    i = table.columns.index(Column("vidpair_binary", "wAcc"))
    assert table.delta(1, i) == pytest.approx(SHIFT)
    assert table.delta(0, i) == 0.0 and table.delta(2, i) is None  # the baseline; a missing cell
    curve = rows["curve_ta_IN / accuracy"]
    assert curve[5] == "paired_t" and curve[6] == "4" and curve[7] == "0 / 0"
    # run c lacks the VidPair tasks: only what both runs have is tested
    start_c = next(i for i, line in enumerate(md) if line.startswith("model-a (c) vs model-a (a) ("))
    c_rows = [line for line in md[start_c + 4:] if line.startswith("| ")]
    assert c_rows and not any("vidpair" in line for line in c_rows[:6])


def test_differences_name_what_changed_and_label_the_runs(tmp_path):
    import json

    a = make_run(tmp_path / "a", model="model-a")
    b = make_run(tmp_path / "b", model="model-a", shift=0.06)
    run_b = json.loads((b / "run.json").read_text())
    run_b.update(ablations=["no_audio"], media={"frames": 64}, gen_kwargs={"temperature": 0.3})
    run_b["tasks"]["vidpair_binary"]["hash"] = "changed"
    (b / "run.json").write_text(json.dumps(run_b))
    table = compare_runs([a, b])
    diffs = dict(table.differences)
    assert diffs["ablations"] == ["-", "no_audio"] and diffs["media overrides"] == ["-", "frames=64"]
    assert diffs["gen kwargs"] == ["-", "temperature=0.3"] and diffs["task hash: vidpair_binary"] == ["h003", "changed"]
    assert "model" not in diffs and "seed" not in diffs  # the same in both runs
    assert table.labels == ["model-a · no ablations · no media overrides · no gen kwargs",
                            "model-a · ablate no_audio · frames=64 · temperature=0.3"]
    assert "sk-LEAKED-SECRET" not in table.to_html() and "What differs between the runs" in table.to_html()
    md = table.to_markdown()
    assert "| ablations | - | no_audio |" in md


def _set_directions(run_dir, directions: dict) -> None:
    """Give the run's results.json the metrics block a real run writes."""
    import json

    path = run_dir / "results.json"
    data = json.loads(path.read_text())
    data["metrics"] = {task: {m: {"kind": "headline", "higher_is_better": hib, "description": ""}
                              for m, hib in directions.items() if m in cells}
                       for task, cells in data["results"].items()}
    path.write_text(json.dumps(data))


def test_a_drop_in_a_lower_is_better_metric_is_an_improvement(tmp_path):
    import json

    a = make_run(tmp_path / "a", model="A")
    b = make_run(tmp_path / "b", model="B", shift=SHIFT)
    data = json.loads((b / "results.json").read_text())
    data["results"]["vidpair_binary"]["FP_rate"] = 0.10  # a: 0.21, se 0.01 each: significantly lower
    (b / "results.json").write_text(json.dumps(data))
    for run in (a, b):
        _set_directions(run, {"FP_rate": False, "wAcc": True, "vAcc": None})
    table = compare_runs([a, b])
    fp = table.columns.index(Column("vidpair_binary", "FP_rate"))
    wacc = table.columns.index(Column("vidpair_binary", "wAcc"))
    assert table.directions[fp] is False and table.directions[wacc] is True
    assert table.mark(1, fp) == -1 and table.judged(1, fp) == 1  # lower, and lower is better
    assert table.mark(1, wacc) == 1 and table.judged(1, wacc) == 1
    html = table.to_html()
    assert '<td class="num sig-better">0.1000 ± 0.0100 ▼</td>' in html
    assert '<td class="num sig-better">0.6750 ± 0.0300 ▲</td>' in html
    assert "sig-worse" not in html.split('<table id="compare-table">')[1].split("</table>")[0]
    back = compare_runs([b, a])  # from b's side, a's higher fp_rate is worse
    assert '<td class="num sig-worse">0.2100 ± 0.0100 ▲</td>' in back.to_html()


def test_judges_are_part_of_what_differs_and_labels_name_hosts_not_urls(tmp_path):
    import json

    a = make_run(tmp_path / "a", model="model-a")
    b = make_run(tmp_path / "b", model="model-a")
    run_b = json.loads((b / "run.json").read_text())
    run_b["judges"] = {"scorer": ["openai:gpt-4.1-mini"]}
    run_b["model"]["args"]["base_url"] = "http://10.0.0.7:8000/v1"
    (b / "run.json").write_text(json.dumps(run_b))
    table = compare_runs([a, b])
    diffs = dict(table.differences)
    assert diffs["judge: scorer"] == ["openai-compat:judge-a, openai-compat:judge-b", "openai:gpt-4.1-mini"]
    assert "| judge: scorer |" in table.to_markdown() and "judge: scorer" in table.to_html()
    assert any("http://10.0.0.7:8000/v1" in v for v in diffs["model args"])  # the table keeps the whole URL
    assert all("://" not in label for label in table.labels), table.labels
    assert "base_url=10.0.0.7:8000" in table.labels[1] and "base_url=127.0.0.1:8000" in table.labels[0]
