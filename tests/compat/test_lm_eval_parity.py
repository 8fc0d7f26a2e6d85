"""Differential test against lm-eval itself (issue 24, "Must show"): the
corpus tests/compat/lmeval_corpus (35 task files of our own in lm-eval's
format, 3 groups) is run by lm-eval 0.4.13 (``local-chat-completions``
for generation, ``local-completions`` for log-likelihoods) and by avhb
(``openai``, ``openai-completions``) against one local server that logs
every request (tests/compat/fake_model.py).  Then:

* the requests are the same: every chat request's messages, stop
  sequences, max tokens and temperature, and every log-likelihood prompt
  (its tokens), echo, logprobs, max tokens and temperature, as multisets;
  the seed is 1234 for both, except avhb's repeats (seed + repeat, on
  purpose: see the README);
* the scores are equal to 1e-9, every metric under lm-eval's
  ``metric,filter`` name, groups included; standard errors too where
  lm-eval computes them from the samples (mean aggregations), except a
  size-weighted group's: lm-eval pools the members' variances only, avhb
  adds the spread between the members' means (the stderr of the pooled
  mean; docs/design.md, "Group numbers").

One lm-eval process per model type runs every task (its start-up is the
cost).  lm-eval lives in its own venv (scripts/peer_envs.sh); without it
the test is skipped, saying how to build it.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.compat.corpus_data import make_lmeval_data
from tests.compat.fake_model import serve
from tests.compat.tools import read_log as _log, run_tool as _run

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).with_name("lmeval_corpus")
VENV = Path(os.environ.get("AVHB_LMEVAL_VENV", ROOT / ".venv-lmeval"))
NS = "lmeval_corpus"

pytestmark = [pytest.mark.slow,  # lm-eval runs in its own venv: about a minute before the first test
              pytest.mark.skipif(not (VENV / "bin" / "lm_eval").exists(),
                                 reason=f"lm-eval is not installed in {VENV}: run scripts/peer_envs.sh lmeval")]

GROUPS = {"avhbc_group_gen": ["avhbc_gen_basic", "avhbc_gen_csv", "avhbc_gen_parquet"],
          "avhbc_group_gen_unweighted": ["avhbc_gen_jinja", "avhbc_gen_validation_split"],
          "avhbc_group_ll": ["avhbc_ll_mc_basic", "avhbc_ll_mc_fewshot"]}
# mean-aggregated metrics: lm-eval's stderr is the samples' (the others it bootstraps)
MEAN_METRICS = {"exact_match", "acc", "acc_norm", "acc_bytes", "acc_mutual_info", "hit"}


def _tasks() -> tuple[list[str], list[str]]:
    import yaml

    chat, ll = [], []
    for path in sorted(CORPUS.glob("*.yaml")):
        if path.name.startswith("_"):
            continue
        text = path.read_text()
        data = yaml.safe_load(text.replace("!function", ""))
        if "group" in data:
            continue
        (ll if path.name.startswith("ll_") else chat).append(data["task"])
    return chat, ll


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ, HF_HOME=str(work / "hf"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", OPENAI_API_KEY="none")
    env.pop("PYTHONPATH", None)
    return env


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    work = tmp_path_factory.mktemp("lmeval-parity")
    shutil.copytree(CORPUS, work / NS, ignore=shutil.ignore_patterns("__pycache__"))
    make_lmeval_data(work / NS)
    chat, ll = _tasks()
    in_groups = {t for members in GROUPS.values() for t in members}
    names = {"chat": [t for t in chat if t not in in_groups] + [g for g in GROUPS if not g.endswith("_ll")],
             "ll": [t for t in ll if t not in in_groups] + ["avhbc_group_ll"]}
    log = work / "requests.jsonl"
    out: dict[str, dict] = {}
    server = serve(str(log))
    with server:
        lm_env, avhb_env = _env(work), dict(os.environ, HF_HOME=str(work / "hf"), HF_DATASETS_OFFLINE="1")
        for kind, model, endpoint in (("chat", "local-chat-completions", "chat/completions"),
                                      ("ll", "local-completions", "completions")):
            before = len(_log(log))
            cmd = [str(VENV / "bin" / "python"), str(Path(__file__).with_name("run_lm_eval.py")), "run", "--model",
                   model, "--model_args",
                   f"model=fake,base_url={server.base_url}/{endpoint},num_concurrent=1,max_retries=1",
                   "--tasks", ",".join(names[kind]), "--include_path", NS, "--output_path", f"lm_{kind}",
                   "--log_samples"]
            _run(cmd + (["--apply_chat_template"] if kind == "chat" else []), work, lm_env)
            out[f"lm_{kind}"] = {"requests": _log(log)[before:], "results": _lm_results(work / f"lm_{kind}")}
        for kind, backend in (("chat", "openai"), ("ll", "openai-completions")):
            before = len(_log(log))
            cmd = [sys.executable, "-m", "avhb.cli", "--tasks", ",".join(f"{NS}/{n}" for n in names[kind]),
                   "--include_path", NS, "--model", f"{backend}:fake,base_url={server.base_url}",
                   "--output_path", f"avhb_{kind}", "--no_report"]
            _run(cmd, work, avhb_env)
            results = json.loads((work / f"avhb_{kind}" / "results.json").read_text())
            out[f"avhb_{kind}"] = {"requests": _log(log)[before:], "results": results,
                                   "run": json.loads((work / f"avhb_{kind}" / "run.json").read_text())}
    return out


def _lm_results(folder: Path) -> dict:
    (path,) = folder.rglob("results_*.json")
    return json.loads(path.read_text())


def _chat_key(body: dict) -> str:
    return json.dumps({"messages": body["messages"], "stop": body.get("stop"), "max_tokens": body.get("max_tokens"),
                       "temperature": float(body.get("temperature", -1))}, sort_keys=True)


def _prompt_keys(body: dict) -> list[str]:
    prompts = body["prompt"]
    if prompts and isinstance(prompts[0], int):
        prompts = [prompts]
    return [json.dumps({"tokens": p, "echo": body.get("echo"), "logprobs": body.get("logprobs"),
                        "max_tokens": body.get("max_tokens"), "temperature": float(body.get("temperature", -1))})
            for p in prompts]


def _completion_requests(requests: list[dict], path: str) -> list[dict]:
    return [r["body"] for r in requests if r["path"].rstrip("/").endswith(path)]


def test_chat_requests_are_the_same(runs):
    lm = _completion_requests(runs["lm_chat"]["requests"], "/chat/completions")
    av = _completion_requests(runs["avhb_chat"]["requests"], "/chat/completions")
    assert len(lm) == len(av) > 200
    missing, extra = Counter(map(_chat_key, lm)) - Counter(map(_chat_key, av)), \
        Counter(map(_chat_key, av)) - Counter(map(_chat_key, lm))
    assert not missing and not extra, (list(missing)[:2], list(extra)[:2])
    assert {b["seed"] for b in lm} == {1234}
    assert {b["seed"] for b in av} == {1234, 1235, 1236}  # avhb: seed + repeat (the repeat tasks)


def test_loglikelihood_requests_are_the_same(runs):
    lm = [k for b in _completion_requests(runs["lm_ll"]["requests"], "/v1/completions") for k in _prompt_keys(b)]
    av = [k for b in _completion_requests(runs["avhb_ll"]["requests"], "/v1/completions") for k in _prompt_keys(b)]
    assert len(lm) == len(av) > 100
    assert Counter(lm) == Counter(av)
    assert {b.get("seed") for b in _completion_requests(runs["lm_ll"]["requests"], "/v1/completions")} == {1234}
    assert {b.get("seed") for b in _completion_requests(runs["avhb_ll"]["requests"], "/v1/completions")} == {1234}


def _pairs(lm_results: dict, avhb_results: dict) -> list[tuple[str, str, float, float]]:
    """(name, metric, lm-eval's value, avhb's) for every number lm-eval reports."""
    out = []
    for block in ("results", "groups"):
        for name, row in (lm_results.get(block) or {}).items():
            ours = avhb_results.get("groups" if name in GROUPS else "results", {}).get(f"{NS}/{name}")
            assert ours is not None, f"avhb has no results for {name}"
            for key, value in row.items():
                if "," not in key or not isinstance(value, (int, float)):
                    continue
                metric, filt = key.split(",", 1)
                if metric.endswith("_stderr"):
                    base = metric[: -len("_stderr")]
                    if base not in MEAN_METRICS or name in GROUPS:  # a group's: avhb's pooled stderr differs, on purpose
                        continue
                    mine = f"{base}_stderr" if filt == "none" else f"{base},{filt}_stderr"
                else:
                    mine = metric if filt == "none" else f"{metric},{filt}"
                assert mine in ours, f"{name}: avhb reports no {mine} (lm-eval's {key}); it has {sorted(ours)}"
                out.append((name, key, float(value), ours[mine]))
    return out


def test_scores_are_the_same(runs):
    compared = []
    for kind in ("chat", "ll"):
        for name, key, theirs, ours in _pairs(runs[f"lm_{kind}"]["results"], runs[f"avhb_{kind}"]["results"]):
            assert ours is not None and math.isclose(theirs, ours, rel_tol=0, abs_tol=1e-9), (name, key, theirs, ours)
            compared.append((name, key))
    tasks = {name for name, _ in compared}
    assert len(tasks) >= 38 and len(compared) >= 90, (len(tasks), len(compared))  # 35 tasks and 3 groups, every number


def test_scores_are_not_trivial(runs):
    """The corpus's numbers vary (a broken scorer giving all 0 or all 1 would
    otherwise agree with a broken one)."""
    values = [v for kind in ("chat", "ll") for _, _, v, _ in _pairs(runs[f"lm_{kind}"]["results"],
                                                                    runs[f"avhb_{kind}"]["results"])]
    assert len({round(v, 6) for v in values}) > 20
    assert any(0 < v < 1 for v in values)
