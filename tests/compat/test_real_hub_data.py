"""The Hub side of the differentials over real task folders, without any
peer: the synthetic repos of tests/compat/real/lm_eval_data.py, published
on the suite's FakeHub, read back by ``datasets.load_dataset(path, name)``
through ``HF_ENDPOINT`` as lm-eval reads them (README ``configs:``, parquet
shards with their features, JSON lines files, Image columns), and the
FakeHub's paths-info endpoint as ``HfApi`` and ``HfFileSystem`` call it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.compat.real.lm_eval_data import HUB_REPOS
from tests.servers.hub_server import FakeHub

LOAD = textwrap.dedent("""
    import json, sys
    import datasets
    datasets.disable_progress_bars()
    out = {}
    for repo, name, split in json.loads(sys.argv[1]):
        ds = datasets.load_dataset(repo, name, split=split)
        row = ds[0]
        out[f"{repo}:{name}:{split}"] = {
            "rows": len(ds), "columns": sorted(ds.column_names),
            "image": list(row["image_1"].size) if "image_1" in row else None,
            "first": {k: v for k, v in row.items() if isinstance(v, (str, int, float, list, dict)) and k != "image_1"},
        }
    print(json.dumps(out, default=str))
""")


def _load(url: str, tmp_path, wanted: list[tuple[str, str | None, str]]) -> dict:
    env = dict(os.environ, HF_ENDPOINT=url, HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="0")
    for name in ("HF_DATASETS_OFFLINE", "HF_TOKEN"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-c", LOAD, json.dumps(wanted)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_datasets_reads_the_repos_through_the_fake_hub(tmp_path):
    hub = FakeHub()
    wanted = [("openai/gsm8k", "main", "test"), ("allenai/ai2_arc", "ARC-Easy", "test"),
              ("Rowan/hellaswag", None, "validation"), ("Anthropic/discrim-eval", "explicit", "train"),
              ("MMMU/MMMU", "Accounting", "validation"), ("cais/mmlu", "anatomy", "dev")]
    made = {repo: HUB_REPOS[repo]() for repo in {w[0] for w in wanted}}
    for repo, files in made.items():
        hub.publish(repo, files)
    with hub.serve() as url:
        got = _load(url, tmp_path, wanted)
    gsm = got["openai/gsm8k:main:test"]
    assert gsm["rows"] == 6 and gsm["columns"] == ["answer", "question"] and "#### 18" in gsm["first"]["answer"]
    arc = got["allenai/ai2_arc:ARC-Easy:test"]
    assert arc["first"]["choices"]["label"] == ["A", "B", "C", "D"] and arc["first"]["answerKey"] == "B"
    assert got["Rowan/hellaswag:None:validation"]["first"]["label"] == "0"  # a string, as in the real data
    assert got["Anthropic/discrim-eval:explicit:train"]["rows"] == 60
    assert got["MMMU/MMMU:Accounting:validation"]["image"] == [49, 34]  # an Image column, decoded
    assert got["cais/mmlu:anatomy:dev"]["rows"] == 3
    served = {r.path for r in hub.requests if r.status == 200}
    assert any(p.endswith("/main/test-00000-of-00001.parquet") for p in served)
    assert any(p.endswith("/explicit.jsonl") for p in served)


def test_paths_info_answers_as_the_hub_does(monkeypatch):
    from huggingface_hub import HfApi, HfFileSystem, constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # read at import; the suite runs offline

    hub = FakeHub()
    sha = hub.publish("openai/gsm8k", HUB_REPOS["openai/gsm8k"]())
    with hub.serve() as url:
        api = HfApi(endpoint=url, token=False)
        infos = api.get_paths_info("openai/gsm8k", ["README.md", "main", "no/such/file"], repo_type="dataset",
                                   revision=sha)
        fs = HfFileSystem(endpoint=url, token=False)
        shard = fs.info("datasets/openai/gsm8k/main/test-00000-of-00001.parquet")
    kinds = {i.path: type(i).__name__ for i in infos}
    assert kinds == {"README.md": "RepoFile", "main": "RepoFolder"}
    readme = next(i for i in infos if i.path == "README.md")
    assert readme.size == len(HUB_REPOS["openai/gsm8k"]()["README.md"])
    assert shard["type"] == "file" and shard["size"] > 0
    assert any(r.method == "POST" and "/paths-info/" in r.path for r in hub.requests)
