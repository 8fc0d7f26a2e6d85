"""The packs' cluster keys through a real run (the sample packs, the
offline ``random`` backend, the CLI): the summary sees each sample's
cluster although the records were reduced after scoring (the run keeps the
fields ``cluster_key`` reads with the breakdown fields), results.json
carries the clustered numbers, and --repeats makes a sample's repeats one
cluster."""
import json

from tests.conftest import run_cli


def test_pack_cluster_keys_reach_results_json(tmp_path):
    out = tmp_path / "run"
    proc = run_cli("--tasks", "vidpair_open,anchor,have_math", "--model", "random,seed=0", "--judge", "*=random",
                   "--sample-data", "--output-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "not found in" not in proc.stderr  # every sample had its cluster (no warning)
    results = json.loads((out / "results.json").read_text())["results"]
    samples = {t: [json.loads(line) for line in (out / "samples" / f"{t}.jsonl").read_text().splitlines()]
               for t in ("vidpair_open", "anchor", "have_math")}
    pairs = {row["doc"]["pair_id"] for row in samples["vidpair_open"]}
    assert results["vidpair_open"]["open_score_clusters"] == len(pairs) < results["vidpair_open"]["open_score_n"]
    clips = {row["doc"]["video"] for row in samples["anchor"]}
    assert results["anchor"]["answer_acc_clusters"] == len(clips) < results["anchor"]["answer_acc_n"]
    items = {row["id"] for row in samples["have_math"]}  # 3 repeats each
    assert results["have_math"]["score_clusters"] == len(items) and results["have_math"]["score_n"] == 3 * len(items)
    for task in results.values():
        for key, value in task.items():
            if key.endswith("_ci"):
                assert isinstance(value, list) and len(value) == 2 and value[0] <= value[1]
    power = json.loads((out / "results.json").read_text())["power"]
    assert power["have_math"]["score"]["repeats"]["repeats"] == 3
    assert power["vidpair_open"]["open_score"]["unit"] == "points"
