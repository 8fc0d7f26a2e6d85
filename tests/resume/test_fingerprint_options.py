"""A finished task's digest moves with every option that changes its
results (avhb/resume/finished.py, its ``options`` part derived from
avhb/resume/setting_kinds.py's table): an option that changes calls, scoring or
selection and no other part holds is in it by construction, and a run
folder resumed under ``--allow-config-change`` with another few-shot
setting sends the calls again (it used to keep the 1-shot results under a
``num_fewshot: 2`` run.json, sending nothing)."""
from __future__ import annotations

import dataclasses
import json
import random
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from avhb.resume.finished import PARTS, task_digest, inputs, options_part
from avhb.options import RunOptions, media_plan
from avhb.resume.setting_kinds import CALLS, FINGERPRINT_ELSEWHERE, OPTION_KINDS, SCORING, SELECTION, fingerprinted_options
from tests.conftest import run_cli
from tests.servers.openai_server import ScriptedServer

# another value for each option the options part holds (a new option that decides results needs one here:
# the completeness test below names it)
OTHER: dict[str, object] = {
    "gen_kwargs": {"temperature": 0.5}, "seed": 7, "repeats": 3, "seeds": (1, 2, 3, 4),
    "system_instruction": "Be brief.", "num_fewshot": 2, "fewshot_as_multiturn": False, "fewshot_seed": 99,
    "predict_only": True, "limit": 5, "samples": ["a", "b"], "shard": SimpleNamespace(to_json=lambda: {"i": 1}),
}


class _Cfg(dict):
    config = {"task": "t"}

    def get(self, key, default=None):
        return super().get(key, default)


def _world(tmp_path: Path):
    pack, data = tmp_path / "pack", tmp_path / "data"
    if not data.exists():  # made once: the data part holds the files' times
        pack.mkdir()
        data.mkdir()
        (data / "items.jsonl").write_text('{"id": 1}\n')
    task = SimpleNamespace(name="t", cfg=_Cfg({"media": {"frames": 4}}), pack_dir=pack)
    source = SimpleNamespace(media_root=str(data), kind="local", root=str(data), revision=None)
    return task, source


def _options(tmp_path: Path, **over) -> RunOptions:
    return RunOptions(tasks=["t"], model=None, output_dir=tmp_path / "run", **over)


def _parts(tmp_path: Path, options: RunOptions) -> dict[str, str]:
    task, source = _world(tmp_path)
    parts = inputs(task, source, media_plan(task, options), options, {"kind": "m"}, {}, {})
    assert parts is not None
    return parts


def test_every_option_deciding_results_has_a_part():
    kinds = {f.name: OPTION_KINDS[f.name] for f in dataclasses.fields(RunOptions)}
    deciding = {name for name, kind in kinds.items() if kind in (CALLS, SCORING, SELECTION)}
    assert set(fingerprinted_options()) == deciding - set(FINGERPRINT_ELSEWHERE)
    assert set(FINGERPRINT_ELSEWHERE) <= deciding and set(FINGERPRINT_ELSEWHERE.values()) <= set(PARTS)
    assert set(OTHER) == set(fingerprinted_options()), "give the new option another value in OTHER"


@pytest.mark.parametrize("name", fingerprinted_options())
def test_each_option_moves_the_options_part_alone(tmp_path, name):
    base = _parts(tmp_path, _options(tmp_path))
    changed = _options(tmp_path, **{name: OTHER[name]})
    assert options_part(changed) and not options_part(_options(tmp_path))
    after = _parts(tmp_path, changed)
    assert {part for part in base if base[part] != after[part]} == {"options"}, name
    assert task_digest(after) != task_digest(base)


@pytest.mark.parametrize("name, value", [("media", {"frames": 8}), ("ablations", ("no_audio",))])
def test_media_options_move_the_media_part(tmp_path, name, value):
    base = _parts(tmp_path, _options(tmp_path))
    after = _parts(tmp_path, _options(tmp_path, **{name: value}))
    assert {part for part in base if base[part] != after[part]} == {"media"}


# ---------------------------------------------------------------- the run that kept stale results

TEST = [{"q": f"test{i}", "a": f"A{i}"} for i in range(4)]
TRAIN = [{"q": f"train{i}", "a": f"B{i}"} for i in range(5)]


def _pack(tmp_path: Path) -> Path:
    folder = tmp_path / "fs"
    folder.mkdir()
    for name, rows in (("test", TEST), ("train", TRAIN)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "text.yaml").write_text(textwrap.dedent(f"""\
        task: text
        dataset_path: json
        dataset_kwargs: {{data_files: {{test: {folder / 'test.jsonl'}, train: {folder / 'train.jsonl'}}}}}
        test_split: test
        fewshot_split: train
        doc_to_text: "Q: {{{{q}}}}\\nA:"
        doc_to_target: "{{{{a}}}}"
        generation_kwargs: {{until: ["\\n"], max_gen_toks: 8}}
        metric_list: [{{metric: exact_match}}]
        """))
    return folder


def test_a_changed_fewshot_setting_runs_the_task_again(tmp_path):
    folder, out = _pack(tmp_path), tmp_path / "run"

    def run(srv, *extra):
        srv.reset_counters()
        proc = run_cli("--tasks", "fs/text", "--include_path", str(folder), "--model",
                       f"openai:fake,base_url={srv.base_url}", "--output-dir", str(out), "--no-report",
                       "--allow-config-change", *extra)
        assert proc.returncode == 0, proc.stderr
        return [r.body["messages"] for r in srv.completions()]

    def prompts():
        return [json.loads(line)["prompt"] for line in (out / "samples" / "fs__text.jsonl").read_text().splitlines()]

    with ScriptedServer(reply=lambda body: "A0") as srv:
        one = run(srv, "--num_fewshot", "1")
        assert len(one) == 4 and all(len(m) == 3 for m in one)  # example question, its answer, the question
        assert run(srv, "--num_fewshot", "1") == []  # the same settings: finished, nothing sent
        two = run(srv, "--num_fewshot", "2")
        assert len(two) == 4 and all(len(m) == 5 for m in two)
        assert json.loads((out / "run.json").read_text())["num_fewshot"] == 2
        assert all(p.count("Q: train") == 2 for p in prompts())  # the samples hold the 2-shot prompts
        single = run(srv, "--num_fewshot", "2", "--fewshot_as_multiturn", "false")
        assert len(single) == 4 and all(len(m) == 1 for m in single)
        rnd = random.Random(7)  # the few-shot seed alone (--seed python,numpy,torch,few-shot)
        drawn = run(srv, "--num_fewshot", "2", "--fewshot_as_multiturn", "false", "--seed", "1234,1234,1234,7")
        assert len(drawn) == 4
        first = {m[0]["content"].rsplit("Q: ", 1)[1].split("\n")[0]: m[0]["content"] for m in drawn}["test0"]
        assert [line[3:] for line in first.splitlines() if line.startswith("Q: train")] == \
            [d["q"] for d in rnd.sample(TRAIN, 2)]
