"""lm-eval's CLI habits (issue 24, items 5-7): the lm-eval-shaped files read
back by lm-eval's own code, one test per lm-eval flag, the estimate printed
before the first call and ``--max-cost``."""
from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.servers.openai_server import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
LMEVAL_PY = Path(os.environ.get("AVHB_LMEVAL_VENV", ROOT / ".venv-lmeval")) / "bin" / "python"
COLOURS = {"circle": "red", "square": "blue", "triangle": "green", "star": "red", "moon": "blue", "heart": "green"}


def lmeval_python() -> Path:
    """lm-eval 0.4.13's venv (scripts/peer_envs.sh lmeval; scripts/test.sh builds it)."""
    if not LMEVAL_PY.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{LMEVAL_PY} missing: scripts/test.sh builds it with scripts/peer_envs.sh lmeval")
        pytest.skip("lm-eval's venv is not built (bash scripts/peer_envs.sh lmeval)")
    return LMEVAL_PY


@pytest.fixture
def shapes(tmp_path) -> Path:
    """Two tasks and a group in a folder (lm-eval habits: --include_path)."""
    folder = tmp_path / "shapes"
    (folder / "sample").mkdir(parents=True)
    rows = [{"id": f"s{i}", "shape": s, "answer": c} for i, (s, c) in enumerate(COLOURS.items())]
    (folder / "sample" / "shapes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    common = textwrap.dedent('''
        sample_data: sample
        dataset_kwargs: {data_files: shapes.jsonl}
        doc_id: id
        doc_to_target: answer
        system_prompt: "Answer with one word."
        generation_kwargs: {max_tokens: 8}
        metric_list:
          - metric: exact_match
        ''')
    (folder / "colour.yaml").write_text("task: colour\ntag: shape_tasks\nmetadata: {version: 2}\n"
                                        'doc_to_text: "What colour is the {{shape}}?"\n' + common)
    (folder / "hue.yaml").write_text("task: hue\ntag: shape_tasks\n"
                                     'doc_to_text: "Name the hue of the {{shape}}."\n' + common)
    (folder / "group.yaml").write_text("group: shape_group\ntask: [colour, hue]\n"
                                       "aggregate_metric_list:\n  - {metric: exact_match, weight_by_size: true}\n")
    return folder


def answer(body: dict) -> str:
    """Right for every shape but the moon."""
    text = body["messages"][-1]["content"]
    text = text if isinstance(text, str) else " ".join(p.get("text", "") for p in text)
    shape = next(s for s in COLOURS if s in text)
    return "grey" if shape == "moon" else COLOURS[shape]


def _run(shapes: Path, srv: ScriptedServer, *args: str, env: dict | None = None):
    return run_cli("--tasks", "shapes/shape_group", "--include_path", str(shapes), "--model",
                   f"openai:tiny-model,base_url={srv.base_url}", "--sample_data", "--no_report", *args,
                   env={"OPENAI_API_KEY": "", **(env or {})})


# ------------------------------------------------------------ item 5: the files lm-eval reads
@pytest.mark.slow  # lm-eval's venv reads the files back
def test_lm_eval_files_are_read_back_by_lm_eval(shapes, tmp_path):
    py = lmeval_python()
    out = tmp_path / "run"
    with ScriptedServer(reply=answer) as srv:
        proc = _run(shapes, srv, "--output_path", str(out), "--limit", "5")
    assert proc.returncode == 0, proc.stderr
    assert sum("--output_path" in n for n in json.loads((out / "run.json").read_text())["notes"]) == 1
    ours = json.loads((out / "results.json").read_text())
    read = subprocess.run([str(py), str(ROOT / "tests" / "run" / "lmeval_readback.py"), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert read.returncode == 0, read.stderr[-3000:]
    back = json.loads(read.stdout)
    assert back["problems"] == [] and back["model_dir"] == "tiny-model"
    for task in ("colour", "hue"):
        key = f"shapes__{task}"
        block = back["results"][key]
        assert block["alias"] == f"shapes/{task}" and block["sample_len"] == 5
        assert block["exact_match,none"] == ours["results"][f"shapes/{task}"]["exact_match"] == 0.8
        assert block["exact_match_stderr,none"] == pytest.approx(ours["results"][f"shapes/{task}"]["exact_match_stderr"])
        assert back["n-samples"][key] == {"original": 6, "effective": 5}
        assert back["higher_is_better"][key] == {"exact_match": True}
        samples = back["samples"][key]
        assert samples["rows"] == 5 and samples["doc_id"] == [0, 1, 2, 3, 4]
        assert samples["metrics"]["exact_match"] == [1.0, 1.0, 1.0, 1.0, 0.0]  # the moon is wrong
        assert samples["output"][4] == "grey" and samples["target"][4] == "blue"
        assert all("Answer with one word." in p for p in samples["prompt"])
    assert back["versions"]["shapes__colour"] == 2
    group = back["groups"]["shapes__shape_group"]
    assert group["exact_match,none"] == ours["groups"]["shapes/shape_group"]["exact_match"] == 0.8
    assert back["group_subtasks"] == {"shapes__shape_group": ["shapes__colour", "shapes__hue"]}
    assert back["loaded_results"]["shapes__colour"]["exact_match,none"] == 0.8  # through datasets' json loader
    # lm-eval's table nests the group's members under it
    assert re.search(r"\| - shapes/colour\s*\|\s*2\|none\s*\|\s*0\|exact_match\|↑\s*\|\s*0\.8\|±\s*\|0\.2000\|",
                     back["table"]), back["table"]
    assert "shapes/shape_group" in back["group_table"]
    # avhb export writes the same document elsewhere; inside the run folder it replaces the earlier export
    other = tmp_path / "elsewhere"
    exported = run_cli("export", str(out), "--format", "lm-eval", "--output", str(other))
    assert exported.returncode == 0, exported.stderr
    first = sorted((out / "tiny-model").iterdir())
    assert [p.name for p in sorted((other / "tiny-model").iterdir())] == [p.name for p in first]
    assert json.loads((other / "tiny-model" / first[0].name).read_text()) == json.loads(first[0].read_text())
    assert run_cli("export", str(out)).returncode == 0 and sorted((out / "tiny-model").iterdir()) == first


# ------------------------------------------------------------ item 6: one test per flag
@pytest.mark.slow  # lm-eval's venv lists its tasks
def test_tasks_list_forms_list_what_avhb_list_does(shapes):
    for form, what in (("list", "tasks"), ("list_groups", "groups"), ("list_tags", "tags")):
        proc = run_cli("--tasks", form, "--include_path", str(shapes))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == run_cli("list", what, "--include_path", str(shapes)).stdout and proc.stdout
    assert "shapes/shape_tasks\t2 tasks" in run_cli("--tasks", "list_tags", "--include_path", str(shapes)).stdout


def _lm_eval_run_flags() -> list[str]:
    """Every option string of lm-eval 0.4.13's own `run` parser."""
    code = ("import argparse; from lm_eval._cli.run import Run; sp = argparse.ArgumentParser().add_subparsers(); "
            "r = Run(sp); print('\\n'.join(o for a in r._parser._actions for o in a.option_strings))")
    proc = subprocess.run([str(lmeval_python()), "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [f for f in proc.stdout.split() if f not in ("-h", "--help")]


def test_no_lm_eval_flag_is_answered_with_another_flags_name():
    flags = _lm_eval_run_flags()
    assert "--verbosity" in flags and "--num_fewshot" in flags and len(flags) > 40
    from avhb.cli import build_parser

    parser = build_parser()
    for flag in flags:
        msg = _parse_error(parser, ["run", "--tasks", "x", flag])
        if "expected" in msg:  # the flag takes a value
            msg = _parse_error(parser, ["run", "--tasks", "x", flag, "INFO" if flag in ("--verbosity", "-v") else "1"])
        assert "did you mean" not in msg, (flag, msg)
        assert not msg or "is lm-eval's; avhb has no such flag: " in msg or "invalid" in msg, (flag, msg)
    assert "did you mean --version" not in run_cli("--tasks", "x", "--verbosity", "INFO", "--model", "nope").stderr
    typo = run_cli("--taks", "x")
    assert typo.returncode == 2 and "unknown flag --taks; did you mean --tasks?" in typo.stderr, typo.stderr
    missing = run_cli("--model", "scripted")
    assert missing.returncode == 2 and "--tasks is required" in missing.stderr
    told = run_cli("--tasks", "x", "--device", "cuda:0")
    assert told.returncode == 2 and "--device is lm-eval's; avhb has no such flag: the backend places" in told.stderr


def _parse_error(parser, argv: list[str]) -> str:
    """The message argparse would exit with ("" when it parses)."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            parser.parse_args(argv)
        except SystemExit:
            pass
    return err.getvalue()


def test_verbosity_sets_the_log_level_and_error_hides_progress(shapes, tmp_path):
    with ScriptedServer(reply=answer) as srv:
        loud = _run(shapes, srv, "--output-dir", str(tmp_path / "a"), "--verbosity", "info")
        quiet = _run(shapes, srv, "--output-dir", str(tmp_path / "b"), "-v", "ERROR")
    assert loud.returncode == 0 and quiet.returncode == 0, quiet.stderr
    assert "[shapes/colour: model]" in loud.stderr and "[shapes/colour: model]" not in quiet.stderr
    assert quiet.stderr.count("avhb: note: --verbosity ERROR: the log level of the libraries avhb uses; progress "
                              "lines hidden") == 1
    assert "avhb: estimate:" in quiet.stderr  # avhb's own lines stay
    bad = run_cli("--tasks", "x", "--verbosity", "LOUD")
    assert bad.returncode == 2 and "--verbosity" in bad.stderr


def test_write_out_show_config_system_instruction_seed_and_use_cache(shapes, tmp_path):
    out = tmp_path / "run"
    with ScriptedServer(reply=answer) as srv:
        proc = _run(shapes, srv, "--output-dir", str(out), "--limit", "2", "-w", "--show_config",
                    "--system_instruction", "Be brief.", "--seed", "1,2,3,4", "--use_cache", str(tmp_path / "c"))
        bodies = [r.body for r in srv.completions()]
        srv.reset_counters()
        again = _run(shapes, srv, "--output-dir", str(out), "--limit", "2", "--system_instruction", "Be brief.",
                     "--seed", "1,2,3,4", "--use_cache", str(tmp_path / "c"))
        assert again.returncode == 0 and srv.count == 0, again.stderr  # the same command again: nothing re-sent
    assert proc.returncode == 0, proc.stderr
    # --write_out: each task's first prompt and target, as lm-eval prints them
    assert ("Task: shapes/colour; document s0; context prompt (starting on next line):\n[system] Be brief.\n\n"
            "Answer with one word.\n[user] What colour is the circle?\n(end of prompt on previous line)\n"
            "target string or answer choice index (starting on next line):\nred\n") in proc.stderr
    # --system_instruction: lm-eval's placement, before the task's system prompt
    assert {b["messages"][0]["content"] for b in bodies} == {"Be brief.\n\nAnswer with one word."}
    # --seed python,numpy,torch,fewshot: the torch slot is the model's sampling seed
    assert {b.get("seed") for b in bodies} == {3}
    run = json.loads((out / "run.json").read_text())
    assert run["seeds"] == [1, 2, 3, 4] and run["seed"] == 3 and run["system_instruction"] == "Be brief."
    # --use_cache: said once; the journal is the cache
    assert sum(n.startswith("--use_cache ") and "journal" in n for n in run["notes"]) == 1
    assert not (tmp_path / "c").exists()
    # --show_config: lm-eval's results document, every task's configuration in it, on stdout
    shown = json.loads(proc.stdout[proc.stdout.index("{\n"):])
    assert shown["configs"]["shapes__colour"]["system_prompt"] == "Answer with one word."
    assert shown["system_instruction"] == "Be brief." and shown["config"]["torch_seed"] == 3
    assert run_cli("--tasks", "x", "--seed", "1,2").returncode == 2


def test_seed_none_slot_and_single_seed(shapes, tmp_path):
    with ScriptedServer(reply=answer) as srv:
        proc = _run(shapes, srv, "--output-dir", str(tmp_path / "a"), "--limit", "1", "--seed", "0,None,None,7")
        seeds = {r.body.get("seed") for r in srv.completions()}
    assert proc.returncode == 0, proc.stderr
    assert seeds == {1234} and "(None: avhb always seeds, so a rerun replays)" in proc.stderr
    with ScriptedServer(reply=answer) as srv:
        assert _run(shapes, srv, "--output-dir", str(tmp_path / "b"), "--limit", "1", "--seed", "42").returncode == 0
        assert {r.body.get("seed") for r in srv.completions()} == {42}


def test_predict_only_generates_and_scores_nothing(shapes, tmp_path):
    out = tmp_path / "run"
    with ScriptedServer(reply=answer) as srv:
        proc = _run(shapes, srv, "--output_path", str(out), "--limit", "2", "-x")
    assert proc.returncode == 0, proc.stderr
    results = json.loads((out / "results.json").read_text())["results"]["shapes/colour"]
    assert "exact_match" not in results and results["samples"] == 2
    rows = [json.loads(line) for line in (out / "samples" / "shapes__colour.jsonl").read_text().splitlines()]
    assert [r["response"] for r in rows] == ["red", "blue"] and all(not r["scores"] for r in rows)


def test_wandb_logs_results_and_report_offline(shapes, tmp_path):
    from tests.run.wandb_records import records

    out = tmp_path / "run"
    env = {"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path / "wb"), "WANDB_SILENT": "true"}
    with ScriptedServer(reply=answer) as srv:
        proc = run_cli("--tasks", "shapes/shape_group", "--include_path", str(shapes), "--model",
                       f"openai:tiny-model,base_url={srv.base_url}", "--sample_data", "--output-dir", str(out),
                       "--limit", "5", "--wandb_args", "project=avhb-test", "name=shapes-run",
                       "--wandb_config_args", "team=vision", env={"OPENAI_API_KEY": "", **env})
    assert proc.returncode == 0, proc.stderr
    (run_folder,) = (tmp_path / "wb" / "wandb").glob("offline-run-*")
    summary, config, project = {}, {}, None
    for record in records(next(run_folder.glob("*.wandb"))):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            project, name = record.run.project, record.run.display_name
            config.update({i.key: json.loads(i.value_json) for i in record.run.config.update})
        elif kind == "summary":
            summary.update({i.key: json.loads(i.value_json) for i in record.summary.update if i.key})
        elif kind == "config":
            config.update({i.key: json.loads(i.value_json) for i in record.config.update})
    ours = json.loads((out / "results.json").read_text())
    assert project == "avhb-test" and name == "shapes-run"
    assert config["team"] == "vision" and config["model_name"] == "tiny-model"
    assert summary["shapes__colour/exact_match,none"] == ours["results"]["shapes/colour"]["exact_match"]
    assert summary["shapes__shape_group/exact_match,none"] == ours["groups"]["shapes/shape_group"]["exact_match"]
    (table,) = (run_folder / "files" / "media" / "table" / "evaluation").glob("eval_results_*.table.json")
    rows = json.loads(table.read_text())["data"]
    assert ["shapes__colour", "2", "none", 0, "exact_match", 0.8] == rows[0][:6]
    (html,) = (run_folder / "files" / "media" / "html" / "evaluation").glob("report_*.html")
    assert html.read_text(encoding="utf-8") == (out / "report.html").read_text(encoding="utf-8")


def test_wandb_args_without_wandb_installed_fail_before_the_run(monkeypatch):
    import importlib.util

    from avhb.errors import UserError
    from avhb.report.wandb_log import check_wandb

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    with pytest.raises(UserError, match="--wandb_args needs the wandb package"):
        check_wandb()


@pytest.mark.slow  # lm-eval's venv reads the pushed files
def test_hf_hub_log_args_push_to_a_hub_dataset_repo(shapes, tmp_path):
    from tests.servers.hub_server import FakeHub

    hub = FakeHub()
    hub.tokens.add("hf_secret_token_1234")
    out = tmp_path / "run"
    args = ["--hf_hub_log_args", "push_results_to_hub=True,push_samples_to_hub=True,details_repo_name=avhb-details"]
    with hub.serve() as url, ScriptedServer(reply=answer) as srv:
        refused = _run(shapes, srv, "--output-dir", str(tmp_path / "no"), *args, env={"HF_ENDPOINT": url, "HF_TOKEN": ""})
        assert refused.returncode == 2 and "needs a token: set HF_TOKEN" in refused.stderr and srv.count == 0
        proc = _run(shapes, srv, "--output-dir", str(out), "--limit", "3", *args,
                    env={"HF_ENDPOINT": url, "HF_TOKEN": "hf_secret_token_1234", "HF_HUB_OFFLINE": "0"})
        assert proc.returncode == 0, proc.stderr
        local = {p.name: p.read_bytes() for p in (out / "tiny-model").iterdir()}
        details = hub.repos[("datasets", "avhb-tester/avhb-details-private")]
        tree = details.commits[details.refs["main"]]
        assert {p: b.data for p, b in tree.items()} == {f"tiny-model/{n}": data for n, data in local.items()}
        results = hub.repos[("datasets", "avhb-tester/avhb-details-private")]  # results_repo defaults to details
        assert any(p.startswith("tiny-model/results_") for p in results.commits[results.refs["main"]])
        assert hub.private["avhb-tester/avhb-details-private"] is True
        assert {c["token"] for c in hub.commits} == {"hf_secret_token_1234"}
        # lm-eval's own reader of a pushed results file (EvaluationTracker.recreate_metadata_card)
        name = next(n for n in local if n.startswith("results_"))
        code = ("import sys; from datasets import load_dataset; from huggingface_hub import hf_hub_url; "
                "u = hf_hub_url(repo_id='avhb-tester/avhb-details-private', filename='tiny-model/' + sys.argv[1], "
                "repo_type='dataset'); print(load_dataset('json', data_files=u, split='train')['results'][0]"
                "['shapes__colour']['exact_match,none'])")
        read = subprocess.run([str(lmeval_python()), "-c", code, name], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "HF_ENDPOINT": url, "HF_HUB_OFFLINE": "0",
                                   "HF_DATASETS_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf")})
        assert read.returncode == 0, read.stderr[-3000:]
        assert float(read.stdout.split()[-1]) == json.loads((out / "results.json").read_text())["results"][
            "shapes/colour"]["exact_match"]
    for path in out.rglob("*"):
        if path.is_file():
            assert b"hf_secret_token_1234" not in path.read_bytes(), path


# ------------------------------------------------------------ item 7: said before it costs money
def priced_reply(prompt_tokens: int):
    def reply(body: dict) -> dict:
        return {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer(body)},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1}}
    return reply


def _priced(shapes, srv, out, *args):
    return run_cli("--tasks", "shapes/colour", "--include_path", str(shapes), "--model",
                   f"litellm:openai/gpt-4o-mini,api_base={srv.base_url},concurrency=1",
                   "--sample_data", "--output-dir", str(out), "--no_report", *args, env={"OPENAI_API_KEY": "sk-test"})


@pytest.mark.slow  # three runs importing litellm: about 40 s
def test_estimate_before_the_first_call_and_max_cost(shapes, tmp_path):
    from avhb.model.prices import litellm_map_prices

    prices = litellm_map_prices("openai/gpt-4o-mini")
    assert prices is not None and prices.input > 0
    out = tmp_path / "run"
    with ScriptedServer(reply=priced_reply(10)) as srv:
        refused = _priced(shapes, srv, out, "--max-cost", "0.0000001")
        assert refused.returncode == 2 and srv.count == 0, refused.stderr
        assert "--max-cost 1e-07: the estimated cost is" in refused.stderr
        line = next(line for line in refused.stderr.splitlines() if line.startswith("avhb: estimate:"))
        prompt = int(re.search(r"~([\d,]+) prompt tokens", line).group(1).replace(",", ""))
        assert "6 model calls to litellm:openai/gpt-4o-mini" in line and "<= 48 completion tokens" in line
        assert "(LiteLLM's price map for openai/gpt-4o-mini)" in line
        shown = float(re.search(r"cost <= ([\d.]+) USD", line).group(1))
        assert shown == pytest.approx(prices.cost(prompt, 48), abs=1e-6) and shown > 0
        # within the estimate, but the server bills 1M prompt tokens a call: stops once 0.3 USD is spent
        srv.set_reply(priced_reply(1_000_000))
        stopped = _priced(shapes, srv, out, "--max-cost", "0.3")
        sent = srv.count
        assert stopped.returncode == 1 and "--max-cost 0.3 USD reached" in stopped.stderr, stopped.stderr
        assert sent == 2  # 0.15 USD a call, one at a time
        srv.set_reply(priced_reply(10))
        srv.reset_counters()
        resumed = _priced(shapes, srv, out)  # the resume estimates, and sends, only what is left
        assert resumed.returncode == 0 and srv.count == 6 - sent, resumed.stderr
    assert f"{6 - sent} model calls to litellm:openai/gpt-4o-mini ({sent} more answered in the journal, free)" in \
        resumed.stderr


def test_an_unpriced_backend_under_max_cost_is_refused(shapes, tmp_path):
    with ScriptedServer(reply=answer) as srv:
        proc = _run(shapes, srv, "--output-dir", str(tmp_path / "run"), "--max-cost", "5")
        assert proc.returncode == 2 and srv.count == 0
    assert "cost unknown (openai:tiny-model: no prices known)" in proc.stderr
    assert "--max-cost 5: the cost cannot be estimated" in proc.stderr
    assert not (tmp_path / "run").exists()
