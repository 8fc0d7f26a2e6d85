"""Task files in the shapes lm-eval 0.4.13 and lmms-eval 0.7.3 ship them
(issue 36's causes 1-4 and 6): each shape is accepted by ``avhb validate`` as
the peers accept it, and what avhb cannot decide or does not run is said in
one line.  The last tests validate real shipped folders when the peers' venvs
are there (scripts/peer_envs.sh)."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def validate(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "avhb.cli", "validate", *map(str, paths)], capture_output=True,
                          text=True, cwd=ROOT)


TASK = """
task: {name}
dataset_path: org/data
test_split: test
doc_to_text: "{{{{question}}}}"
doc_to_target: answer
{extra}
"""


def task(name: str, extra: str = "") -> str:
    return TASK.format(name=name, extra=textwrap.dedent(extra))


# -- cause 1: hooks that exist when the module is imported ---------------------------------------------------------

HOOKS = '''
import functools
from functools import partial
from .common import shared_docs
from common import *

def _filter(dataset, subject):
    return dataset

process_business = partial(_filter, subject="business")
process_law = functools.partial(_filter, subject="law")
first, (second, third) = _filter, (_filter, _filter)

def decorate(fn):
    return fn

@decorate
def decorated(doc):
    return doc

try:
    from somewhere_optional import thing
except ImportError:
    def thing(doc):
        return doc

if True:
    def in_a_branch(doc):
        return doc
'''


@pytest.mark.parametrize("hook", ["process_business", "process_law", "second", "decorated", "shared_docs",
                                  "from_star", "thing", "in_a_branch"])
def test_a_hook_defined_any_way_the_module_defines_it_is_found(tmp_path, hook):
    write(tmp_path, "utils.py", HOOKS)
    write(tmp_path, "common.py", "def shared_docs(ds):\n    return ds\n\n\ndef from_star(ds):\n    return ds\n")
    path = write(tmp_path, "t.yaml", task("t", f"process_docs: !function utils.{hook}\n"))
    proc = validate(path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_missing_hook_is_still_an_error(tmp_path):
    write(tmp_path, "utils.py", HOOKS)
    write(tmp_path, "common.py", "def shared_docs(ds):\n    return ds\n")
    path = write(tmp_path, "t.yaml", task("t", "process_docs: !function utils.nowhere\n"))
    proc = validate(path)
    assert proc.returncode == 1 and "process_docs: hook function 'nowhere' not defined in utils.py" in proc.stdout


def test_names_a_module_sets_dynamically_are_undecided_not_missing(tmp_path):
    """lm-eval's global_mmlu and openai-mmmlu make their process_* hooks with
    globals().update and globals()[name] = ...: a note, not an error; the run
    imports the module and checks."""
    write(tmp_path, "utils.py", '''
        from functools import partial
        def process_docs(dataset, category):
            return dataset
        globals().update({f"process_{c}": partial(process_docs, category=c) for c in ("stem", "law")})
        ''')
    path = write(tmp_path, "t.yaml", task("t", "process_docs: !function utils.process_stem\n"))
    proc = validate(path)
    assert proc.returncode == 0, proc.stdout
    assert "note: process_docs: cannot tell from utils.py's source whether it defines 'process_stem'" in proc.stdout
    assert "globals().update at line 4" in proc.stdout
    write(tmp_path, "utils.py", '''
        def _register():
            for name in ("a", "b"):
                globals()[f"process_{name}"] = lambda ds: ds
        _register()
        ''')
    proc = validate(path)
    assert proc.returncode == 0 and "globals()[...] = at line 3" in proc.stdout, proc.stdout


def test_a_hook_of_a_base_in_another_folder_resolves_next_to_that_base(tmp_path):
    """lm-eval's bigbench: ``include: ../multiple_choice_template_a_yaml`` whose
    ``process_docs: !function utils.x`` is bigbench/utils.py, not the child's folder."""
    write(tmp_path, "bench/utils.py", "def filter_mc(ds):\n    return ds\n")
    write(tmp_path, "bench/template_yaml", "process_docs: !function utils.filter_mc\ndataset_path: org/data\n"
                                           "test_split: test\ndoc_to_text: q\ndoc_to_target: a\n")
    path = write(tmp_path, "bench/mc/t.yaml", "include: ../template_yaml\ntask: t\n")
    proc = validate(path)
    assert proc.returncode == 0, proc.stdout
    from avhb.taskdef.config import resolve_file

    (cfg,), _ = resolve_file(path, tmp_path, "avhb_include.root", "")
    assert cfg.config["process_docs"] == {"function": "../utils.filter_mc"}
    assert cfg.hook_path("../utils.filter_mc") == "avhb_include.root.bench.utils:filter_mc"


def test_a_peer_module_named_by_its_absolute_path_is_found_in_the_peer_tree(tmp_path):
    """lmms-eval's openslr_librispeech: ``!function lmms_eval.tasks.librispeech.utils.f``."""
    write(tmp_path, "lmms_eval/tasks/librispeech/utils.py", "def doc_to_audio(doc):\n    return [doc]\n")
    path = write(tmp_path, "lmms_eval/tasks/openslr/t.yaml",
                 task("t", "doc_to_visual: !function lmms_eval.tasks.librispeech.utils.doc_to_audio\n"))
    proc = validate(path)
    assert proc.returncode == 0, proc.stdout
    from avhb.taskdef.config import resolve_file

    (cfg,), _ = resolve_file(path, tmp_path / "lmms_eval" / "tasks", "avhb_include.tasks", "")
    assert cfg.hook_path("lmms_eval.tasks.librispeech.utils.doc_to_audio") == \
        "avhb_include.tasks.librispeech.utils:doc_to_audio"
    elsewhere = write(tmp_path, "mine/t.yaml", task("t", "process_docs: !function numpy.linalg.norm\n"))
    proc = validate(elsewhere)
    assert proc.returncode == 1 and "hook module 'numpy.linalg' not found" in proc.stdout  # only the peers' packages


def test_a_hook_module_importing_a_package_this_machine_lacks_is_a_note_with_the_install_line(tmp_path):
    """Cause 7 at validation: egoschema's utils.py imports requests."""
    write(tmp_path, "utils.py", "import os\nimport surely_not_installed_pkg\nimport cv2\n"
                                "try:\n    import also_missing\nexcept ImportError:\n    also_missing = None\n"
                                "def doc_to_text(doc):\n    return doc['q']\n")
    path = write(tmp_path, "t.yaml", task("t", "").replace('doc_to_text: "{{question}}"',
                                                           "doc_to_text: !function utils.doc_to_text"))
    proc = validate(path)
    assert proc.returncode == 0, proc.stdout
    line = next(line for line in proc.stdout.splitlines() if "not installed here" in line)
    assert "utils.py imports surely_not_installed_pkg (line 2)" in line
    assert "pip install surely-not-installed-pkg" in line and "also_missing" not in line  # a guarded import is optional


# -- cause 2: null, integers, lists, dict members ------------------------------------------------------------------

def test_null_means_unset_over_a_base(tmp_path):
    write(tmp_path, "_base_yaml", "dataset_path: org/data\ntest_split: test\ntraining_split: train\n"
                                  "dataset_kwargs: {trust_remote_code: true}\ndoc_to_text: q\ndoc_to_target: a\n")
    path = write(tmp_path, "t.yaml", "include: _base_yaml\ntask: t\ntraining_split: null\nvalidation_split: null\n"
                                     "fewshot_split: null\ndataset_kwargs: null\nfewshot_config:\n  sampler: first_n\n"
                                     "  split: null\n")
    proc = validate(path)
    assert proc.returncode == 0, proc.stdout
    from avhb.taskdef.config import resolve_file

    (cfg,), _ = resolve_file(path, tmp_path, "pack", "")
    assert "training_split" not in cfg.config and "dataset_kwargs" not in cfg.config
    assert cfg.config["fewshot_config"] == {"sampler": "first_n"}


def test_targets_choices_metrics_and_group_members_in_the_peers_shapes(tmp_path):
    write(tmp_path, "utils.py", "def my_metric(references, predictions):\n    return 1.0\n")
    one = write(tmp_path, "mc1.yaml", task("mc1", """
        output_type: multiple_choice
        doc_to_choice: "{{choices}}"
        metadata: [{version: 0.0}]
        cluster_key: video_id
        model_specific_target_kwargs: {default: {pre_prompt: ""}}
        reasoning_tags: [["<think>", "</think>"]]
        full_docs: false
        """).replace("doc_to_target: answer", "doc_to_target: 0"))
    two = write(tmp_path, "gen.yaml", task("gen", """
        output_type: generate_until
        group: [old_style_tag]
        metric_list:
          - metric: !function utils.my_metric
            aggregation: mean
        """).replace("doc_to_target: answer", "doc_to_target: [a, b]"))
    group = write(tmp_path, "_group.yaml", """
        group: g
        task:
          - task: mc1
            task_alias: "first one"
          - task: gen
            num_fewshot: 2
          - group: sub
            task: [mc1]
            aggregate_metric_list: [{metric: acc}]
        aggregate_metric_list:
          metric: acc
          weight_by_size: "True"
        """)
    proc = validate(one, two, group)
    assert proc.returncode == 0, proc.stdout
    from avhb.taskdef.config import resolve_file

    _, groups = resolve_file(group, tmp_path, "pack", "ns")
    by_name = {g.name: g for g in groups}
    assert by_name["ns/g"].tasks == ["ns/mc1", "ns/gen", "ns/sub"]
    assert by_name["ns/g"].aliases == {"ns/mc1": "first one"} and by_name["ns/g"].overrides == {"ns/gen": {"num_fewshot": 2}}
    assert by_name["ns/g"].aggregate == [{"metric": "acc", "weight_by_size": "True"}]
    assert by_name["ns/sub"].tasks == ["ns/mc1"]
    (gen,), _ = resolve_file(two, tmp_path, "pack", "ns")
    assert gen.tags == ["ns/old_style_tag"] or "old_style_tag" in str(gen.config.get("group"))


@pytest.mark.parametrize("key, value, why", [
    ("class", "!function task.Python", "a Python task class (`class:`) is not supported"),
    ("unsafe_code", "true", "`unsafe_code: true` tasks execute model-written code"),
    ("use_prompt", "promptsource:*", "promptsource templates (`use_prompt:`) are not supported"),
])
def test_what_avhb_does_not_run_is_refused_in_one_line_saying_why(tmp_path, key, value, why):
    write(tmp_path, "task.py", "class Python:\n    pass\n")
    path = write(tmp_path, "t.yaml", task("t", f"{key}: {value}\nrecipe: card=x\n"))
    proc = validate(path)
    assert proc.returncode == 1
    errors = [line for line in proc.stdout.splitlines() if ".yaml:" in line]
    assert len(errors) == 1 and f"{key}: unsupported: {why}" in errors[0], proc.stdout  # not "unknown key 'recipe'"


UNRUNNABLE = [
    ("generate_until_multi_round", "output_type generate_until_multi_round: lmms-eval leaves the rounds to each "
                                   "model class"),
    ("generate_until_agentic", "output_type generate_until_agentic: lmms-eval's agentic loop lives in"),
    ("generate_visual_cot", "output_type generate_visual_cot: the model first generates an image"),
]


@pytest.mark.parametrize("kind, why", UNRUNNABLE)
def test_an_output_type_avhb_does_not_run_loads_with_a_note_saying_why(tmp_path, kind, why):
    """The file loads (a run of it refuses: tests/run/test_unrunnable_output_type.py)."""
    path = write(tmp_path, "t.yaml", task("t", f"output_type: {kind}\n"))
    proc = validate(path)
    assert proc.returncode == 0, proc.stdout
    notes = [line for line in proc.stdout.splitlines() if ": note: " in line]
    assert len(notes) == 1, proc.stdout
    assert notes[0].startswith(f"{path}:6: note: output_type: task 't' loads, but avhb cannot run it: {why}"), notes


def test_an_output_type_avhb_does_not_run_is_listed_and_shown(tmp_path, monkeypatch):
    folder = tmp_path / "unig2ulike"
    write(folder, "draw.yaml", task("draw_then_answer", "output_type: generate_visual_cot\n"))
    monkeypatch.setenv("AVHB_CACHE_DIR", str(tmp_path / "cache"))
    listed = subprocess.run([sys.executable, "-m", "avhb.cli", "list", "tasks", "--include_path", str(folder)],
                            capture_output=True, text=True, cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    assert "unig2ulike/draw_then_answer" in listed.stdout
    shown = subprocess.run([sys.executable, "-m", "avhb.cli", "show", "unig2ulike/draw_then_answer",
                            "--include_path", str(folder)], capture_output=True, text=True, cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    assert "output_type: generate_visual_cot" in shown.stdout


def test_a_group_member_setting_an_output_type_avhb_does_not_run_is_refused(tmp_path):
    """A group's member keys are recorded, not run: a member given an output type avhb does not run is refused
    where it is set."""
    write(tmp_path, "a.yaml", task("a"))
    group = write(tmp_path, "g.yaml", "group: g\ntask:\n  - task: a\n    output_type: generate_visual_cot\n")
    proc = validate(group)
    assert proc.returncode == 1
    errors = [line for line in proc.stdout.splitlines() if ".yaml:" in line and ": note: " not in line]
    assert len(errors) == 1 and "task: unsupported: output_type generate_visual_cot: the model first generates " \
        "an image" in errors[0] and "(a member of group 'g')" in errors[0], proc.stdout


# -- cause 4: group files named _*.yaml are groups -------------------------------------------------------------------

def test_a_group_in_an_underscore_file_is_indexed_and_runs_by_name(tmp_path, monkeypatch):
    folder = tmp_path / "mytasks"
    write(folder, "_base.yaml", "dataset_path: org/data\ntest_split: test\ndoc_to_text: q\ndoc_to_target: a\n")
    write(folder, "a.yaml", "include: _base.yaml\ntask: a\n")
    write(folder, "b.yaml", "include: _base.yaml\ntask: b\n")
    write(folder, "_mmlu_like.yaml", "group: both\ntask: [a, b]\naggregate_metric_list:\n  - metric: acc\n")
    monkeypatch.setenv("AVHB_CACHE_DIR", str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "avhb.cli", "list", "groups", "--include_path", str(folder)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "mytasks/both" in proc.stdout
    from avhb.taskdef.include_path import add_include_path, _ROOTS
    from avhb.taskdef.index import build_index

    add_include_path(folder)
    try:
        index = build_index(use_cache=False)
        assert index.resolve(["mytasks/both"]) == (["mytasks/a", "mytasks/b"], ["mytasks/both"])
        assert not [e for e in index.errors if "mytasks" in e], index.errors
    finally:
        _ROOTS.pop("mytasks", None)


# -- the real folders, as shipped ------------------------------------------------------------------------------------

def _peer_tasks(venv: str, package: str) -> Path | None:
    hits = sorted(glob.glob(str(ROOT / venv / "lib" / "python3*" / "site-packages" / package / "tasks")))
    return Path(hits[-1]) if hits else None


LM_EVAL = _peer_tasks(os.environ.get("AVHB_LMEVAL_VENV", ".venv-lmeval"), "lm_eval")
LMMS = _peer_tasks(os.environ.get("AVHB_LMMS_VENV", ".venv-lmms"), "lmms_eval")


@pytest.mark.slow  # the peers' shipped task folders, read from their venvs
@pytest.mark.skipif(LM_EVAL is None, reason="lm-eval is not installed: run scripts/peer_envs.sh lmeval")
@pytest.mark.parametrize("folder", ["global_mmlu/default/ar", "openai-mmmlu/default", "bigbench/multiple_choice",
                                    "mmlu/default", "bbh/cot_fewshot", "darija_bench/darija_translation",
                                    "truthfulqa", "winogrande", "wikitext", "acpbench/gen_2shot",
                                    "afrobench/masakhaner/prompt_1", "noreval/norsumm", "kmmlu/cot_hard",
                                    "model_written_evals/persona", "llama3/instruct/mmlu"])
def test_lm_eval_folders_as_shipped_validate(folder):
    proc = validate(LM_EVAL / folder)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow  # the peers' shipped task folders, read from their venvs
@pytest.mark.skipif(LMMS is None, reason="lmms-eval is not installed: run scripts/peer_envs.sh lmms")
@pytest.mark.parametrize("folder", ["mme", "ai2d", "videomme/_default_template_yaml", "egoschema", "clotho_aqa",
                                    "hd_epic/3d_perception", "openslr_librispeech", "mmupd", "tvbench", "jmmmu",
                                    "refcoco+", "gpqa/cot_n_shot", "mmsearch/mmsearch_rerank.yaml",
                                    "mmsearch/mmsearch_summarization.yaml"])
def test_lmms_eval_folders_as_shipped_validate(folder):
    target = LMMS / folder
    if not target.exists():
        pytest.skip(f"{folder} is not in this lmms-eval")
    proc = validate(target)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow  # the peers' shipped task folders, read from their venvs
@pytest.mark.skipif(LMMS is None, reason="lmms-eval is not installed: run scripts/peer_envs.sh lmms")
def test_lmms_evals_multi_round_task_loads_with_a_note_that_avhb_cannot_run_it():
    target = LMMS / "mmsearch"
    if not (target / "mmsearch_end2end.yaml").exists():
        pytest.skip("mmsearch is not in this lmms-eval")
    proc = validate(target)
    errors = [line for line in proc.stdout.splitlines() if ".yaml:" in line and ": note: " not in line]
    assert proc.returncode == 0 and not errors and "Traceback" not in proc.stderr, proc.stdout
    assert "mmsearch_end2end.yaml:9: note: output_type: task 'mmsearch_end2end' loads, but avhb cannot run it: " \
        "output_type generate_until_multi_round: lmms-eval leaves the rounds to each model class" in proc.stdout


@pytest.mark.slow  # the peers' shipped task folders, read from their venvs
@pytest.mark.skipif(LMMS is None, reason="lmms-eval is not installed: run scripts/peer_envs.sh lmms")
def test_lmms_evals_visual_cot_folder_loads_every_file_with_a_note():
    target = LMMS / "unig2u"
    if not target.exists():
        pytest.skip("unig2u is not in this lmms-eval")
    proc = validate(target)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout[-3000:]
    noted = {line.split(":", 1)[0] for line in proc.stdout.splitlines() if "loads, but avhb cannot run it: "
             "output_type generate_visual_cot: the model first generates an image" in line}
    declared = {str(f) for f in target.rglob("*.yaml") if re.search(r"^output_type: *generate_visual_cot",
                                                                    f.read_text(encoding="utf-8"), re.M)}
    assert declared and noted == declared, proc.stdout[-3000:]


def test_a_group_may_list_a_tag_as_lm_evals_mmlu_stem_does(tmp_path):
    """lm-eval's _mmlu_stem.yaml: ``group: mmlu_stem`` with ``task: [mmlu_stem_tasks]``, a tag its subjects carry."""
    from avhb.taskdef.include_path import _ROOTS, add_include_path
    from avhb.taskdef.index import build_index
    from avhb.errors import UserError

    folder = tmp_path / "mmluish"
    write(folder, "_base.yaml", "dataset_path: org/data\ntest_split: test\ndoc_to_text: q\ndoc_to_target: a\n")
    write(folder, "physics.yaml", "include: _base.yaml\ntask: physics\ntag: stem_tasks\n")
    write(folder, "algebra.yaml", "include: _base.yaml\ntask: algebra\ntag: stem_tasks\n")
    write(folder, "_stem.yaml", "group: stem\ntask: [stem_tasks]\n")
    write(folder, "_empty.yaml", "group: empty\ntask: [nothing_here]\n")
    add_include_path(folder)
    try:
        index = build_index(use_cache=False)
        assert index.resolve(["mmluish/stem"]) == (["mmluish/algebra", "mmluish/physics"], ["mmluish/stem"])
        assert index.group_entries("mmluish/stem") == [("task", "mmluish/algebra"), ("task", "mmluish/physics")]
        assert [e for e in index.errors if "mmluish" in e] == [
            f"{(folder / '_empty.yaml').resolve()}:1: group 'mmluish/empty' lists 'mmluish/nothing_here', which is no "
            "task, group or tag"]
        with pytest.raises(UserError, match=r"group 'mmluish/empty' \(.*_empty.yaml\) has no task to run: it lists "
                                            r"mmluish/nothing_here"):
            index.resolve(["mmluish/empty"])
    finally:
        _ROOTS.pop("mmluish", None)
