"""lm-eval's spelling of an unfiltered metric, ``acc,none``, where a user
names a metric (a group's ``aggregate_metric_list``), is avhb's ``acc``:
results.json keys ``metric`` for the unfiltered pipeline and
``metric,filter`` for a named one (docs/task-yaml-reference.md)."""
from __future__ import annotations

import json
import textwrap

import pytest

from avhb.taskdef.config import resolve_file
from avhb.taskdef.metric_keys import avhb_metric
from tests.conftest import run_cli


@pytest.mark.parametrize("name, key", [
    ("acc,none", "acc"), ("acc", "acc"), ("exact_match,strict-match", "exact_match,strict-match"),
    ("acc_norm,none", "acc_norm"), ("none", "none"),
])
def test_lm_evals_none_filter_is_the_unfiltered_metric(name, key):
    assert avhb_metric(name) == key


def test_a_groups_aggregate_metric_list_reads_lm_evals_spelling(tmp_path):
    group = tmp_path / "_g.yaml"
    group.write_text(textwrap.dedent("""\
        group: g
        task: [a, b]
        aggregate_metric_list:
          - metric: exact_match,none
            weight_by_size: true
          - metric: exact_match,strict-match
          - metric: acc
            filter_list: [none]
        """))
    _, (config,) = resolve_file(group, tmp_path, "pack", "")
    assert config.aggregate == [{"metric": "exact_match", "weight_by_size": True},
                                {"metric": "exact_match,strict-match"}, {"metric": "acc", "filter_list": ["none"]}]


def test_a_group_named_with_none_scores_its_members_unfiltered_metric(tmp_path):
    folder = tmp_path / "grp"
    folder.mkdir()
    for name, rows in (("a", ["x", "y"]), ("b", ["z", "w"])):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps({"q": f"{name}{i}", "t": t}) + "\n"
                                                      for i, t in enumerate(rows)))
        (folder / f"{name}.yaml").write_text(
            f"task: {name}\ndataset_path: json\ndataset_kwargs: {{data_files: {folder / name}.jsonl}}\n"
            "test_split: train\ndoc_to_text: \"{{q}}\"\ndoc_to_target: t\nmetric_list: [{metric: exact_match}]\n")
    (folder / "_g.yaml").write_text("group: g\ntask: [a, b]\naggregate_metric_list:\n  - metric: exact_match,none\n")
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({"a0": "x", "a1": "no", "b0": "z", "b1": "w"}))  # a: 1/2, b: 2/2
    proc = run_cli("--tasks", "grp/g", "--include_path", str(folder), "--model", "scripted", "--model_args",
                   f"replies={replies}", "--no_report", "--output_path", str(tmp_path / "out"),
                   env={"AVHB_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["results"]["grp/a"]["exact_match"] == 0.5 and results["results"]["grp/b"]["exact_match"] == 1.0
    assert results["groups"]["grp/g"]["exact_match"] == pytest.approx(0.75)
    assert "exact_match,none" not in results["groups"]["grp/g"]
