"""`avhb export --format lm-eval` keeps lm-eval's shape when results.json
carries the uncertainty keys (clustered stderr, clusters, intervals, the
power and group_members blocks): none of them reaches lm-eval's results."""
import json

from avhb.report.lmeval import build_export
from paired_fixtures import lines_of, write_run


def test_the_lm_eval_export_has_no_uncertainty_key(tmp_path):
    docs = [{"video": f"v{i // 4}"} for i in range(40)]
    scores = {"acc": [float(i % 3 == 0) for i in range(40)], "rating": [i / 40 for i in range(40)]}
    run = write_run(tmp_path / "r", "m", {"qa": lines_of(scores, docs), "qb": lines_of(scores, docs)},
                    configs={"qa": {"cluster_key": "video"}, "qb": {"cluster_key": "video"}},
                    groups={"g": (["qa", "qb"], ["acc"], True)})
    flat = json.loads((run / "results.json").read_text())
    assert "acc_stderr_clustered" in flat["results"]["qa"] and "acc_ci" in flat["groups"]["g"]
    export = build_export(run, with_samples=False).results
    assert set(export["results"]["qa"]) == {"alias", "name", "sample_len", "acc,none", "acc_stderr,none",
                                            "rating,none", "rating_stderr,none"}
    assert export["results"]["qa"]["acc,none"] == flat["results"]["qa"]["acc"]
    assert {k for k in export["results"]["g"] if "," in k} == {"acc,none", "acc_stderr,none"}
    text = json.dumps(export)
    assert "clustered" not in text and "_ci" not in text and "group_members" not in text and "power" not in text


def test_a_corrupt_samples_line_refuses_the_export_and_a_rerun_writes_the_file_again(testpack, tmp_path):
    """The export names the file and line; the hint holds: the run's
    command again rewrites the samples file (a finished task whose samples
    file changed runs again, its calls answered by the journal)."""
    from tests.conftest import run_cli

    out = tmp_path / "run"
    cmd = ("--tasks", "testpack/qa_concise", "--model", "testpack/echo", "--sample-data", "--output-dir", str(out),
           "--no-report")
    assert run_cli(*cmd).returncode == 0
    path = out / "samples" / "testpack__qa_concise.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2][:15] + "\n" + "".join(lines[3:]))
    refused = run_cli("export", str(out))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert f"{path} line 3: not JSON (the lm-eval files would leave that sample out; rerun the run's command" \
           in refused.stderr
    again = run_cli(*cmd)
    assert again.returncode == 0, again.stderr
    assert path.read_text().splitlines(keepends=True) == lines
    assert run_cli("export", str(out)).returncode == 0
