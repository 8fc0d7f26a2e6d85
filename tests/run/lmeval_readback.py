"""Run inside lm-eval 0.4.13's own venv (``scripts/peer_envs.sh lmeval``):
read an avhb run's lm-eval files back the way lm-eval's code and scripts do,
and print what was read as JSON for the test to compare.

    python lmeval_readback.py DATA_PATH

- find the model folders and the latest files with ``lm_eval.utils``'s
  ``get_results_filenames`` / ``get_sample_results_filenames`` /
  ``get_latest_filename`` / ``get_file_task_name`` / ``get_file_datetime``,
  as ``scripts/zeno_visualize.py`` and ``EvaluationTracker.recreate_metadata_card`` do;
- check every key against lm-eval's documented schema (``lm_eval.result_schema``);
- read ``config.model_args``, ``configs[task].metric_list`` / ``output_type``
  and each sample's ``doc_id``, ``target``, ``arguments.gen_args_0.arg_0``,
  ``filtered_resps[0]`` and metric columns, as the Zeno uploader reads them;
- render ``lm_eval.utils.make_table`` for results and groups (what the CLI prints);
- load both files with ``datasets.load_dataset("json", ...)`` (how Hub
  details are read, and why lm-eval's writer flattens ``arguments``);
- recompute ``doc_hash`` / ``prompt_hash`` / ``target_hash`` and
  ``task_hashes`` with lm-eval's ``hash_string`` and ``handle_non_serializable``.
"""
import json
import sys
from pathlib import Path

from datasets import load_dataset
from lm_eval.result_schema import EvalResults, SampleResult, _SampleCount, _TaskMetrics
from lm_eval.utils import (
    get_file_datetime,
    get_file_task_name,
    get_latest_filename,
    get_results_filenames,
    get_sample_results_filenames,
    handle_non_serializable,
    hash_string,
    make_table,
)


def keys_of(typed_dict) -> set:
    return set(typed_dict.__annotations__)


def main(data_path: str) -> None:
    root = Path(data_path)
    model_dirs = [d for d in [root, *sorted(p for p in root.rglob("*") if p.is_dir())]
                  if get_results_filenames([f.as_posix() for f in d.iterdir() if f.is_file()])]
    assert len(model_dirs) == 1, model_dirs
    model_dir = model_dirs[0]
    files = [f.as_posix() for f in model_dir.iterdir() if f.is_file()]
    latest = get_latest_filename(get_results_filenames(files))
    results = json.loads(Path(latest).read_text(encoding="utf-8"))

    problems = []
    extra = set(results) - keys_of(EvalResults)
    if extra:
        problems.append(f"keys outside EvalResults: {sorted(extra)}")
    for name, block in results["results"].items():
        for key in ("name", "alias", "sample_len"):
            if key not in block:
                problems.append(f"results[{name}] lacks {key}")
        for key, value in block.items():
            if key not in keys_of(_TaskMetrics) and "," not in key:
                problems.append(f"results[{name}][{key}]: not a metric,filter key")
            if "," in key and not isinstance(value, (int, float)) and value != "N/A":
                problems.append(f"results[{name}][{key}] = {value!r}")
    for name, counts in results["n-samples"].items():
        if set(counts) != keys_of(_SampleCount):
            problems.append(f"n-samples[{name}] = {counts}")

    model_args = results["config"]["model_args"]
    samples = {}
    for task, config in results["configs"].items():
        candidates = [f for f in get_sample_results_filenames(files) if get_file_task_name(Path(f).name) == task]
        path = get_latest_filename(candidates)
        # (lm-eval reads ".json" into the results file's datetime: compare the prefix)
        assert get_file_datetime(Path(latest).name).startswith(get_file_datetime(Path(path).name))
        lines = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
        metrics = [m["metric"] for m in config["metric_list"]]
        assert config["output_type"] == "generate_until"
        fixed = keys_of(SampleResult)
        for line in lines:
            missing = fixed - set(line)
            if missing:
                problems.append(f"{task} sample {line.get('doc_id')}: lacks {sorted(missing)}")
            for m in metrics:  # zeno_visualize: system_dict[m] = [x[m] for x in data]
                line[m]
            if line["doc_hash"] != hash_string(json.dumps(line["doc"], indent=2, default=handle_non_serializable,
                                                          ensure_ascii=False)):
                problems.append(f"{task} sample {line['doc_id']}: doc_hash")
            if line["prompt_hash"] != hash_string(line["arguments"]["gen_args_0"]["arg_0"]):
                problems.append(f"{task} sample {line['doc_id']}: prompt_hash")
            if line["target_hash"] != hash_string(str(line["target"])):
                problems.append(f"{task} sample {line['doc_id']}: target_hash")
        task_hash = hash_string("".join(s["doc_hash"] + s["prompt_hash"] + s["target_hash"] for s in lines))
        if results["task_hashes"].get(task) != task_hash:
            problems.append(f"task_hashes[{task}]")
        loaded = load_dataset("json", data_files=path, split="train")
        samples[task] = {
            "rows": len(loaded), "doc_id": list(loaded["doc_id"]), "target": list(loaded["target"]),
            "prompt": [x["arguments"]["gen_args_0"]["arg_0"] for x in lines],
            "output": [str(x["filtered_resps"][0]) for x in lines],
            "metrics": {m: [x[m] for x in lines] for m in metrics},
        }
    again = load_dataset("json", data_files=latest, split="train")["results"][0]
    print(json.dumps({
        "model_dir": model_dir.name, "latest": Path(latest).name, "problems": problems, "model_args": model_args,
        "results": results["results"], "groups": results.get("groups", {}), "loaded_results": again,
        "higher_is_better": results["higher_is_better"], "n-samples": results["n-samples"],
        "versions": results["versions"], "group_subtasks": results["group_subtasks"], "samples": samples,
        "table": make_table(results), "group_table": make_table(results, "groups") if "groups" in results else "",
    }))


if __name__ == "__main__":
    main(sys.argv[1])
