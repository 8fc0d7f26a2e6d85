"""A task's audio that would become a transcript, with the transcriber's
package missing, stops the run before any call with one line that names
who would get the transcript (the model, or judge role R, with its spec)
and both ways on: ``audio=true`` on that spec (when its backend takes
that argument) or ``pip install 'avhb[asr]'`` (avhb/run/plan.py,
check_transcribers).  Every judge role the run binds is checked, a
driver's in-loop one (HAVE's ``edge_criterion``) too, also under
``--predict_only`` and in ``avhb score``."""
from __future__ import annotations

import json
import os
import wave

import pytest

from tests.conftest import run_cli

TRANSCRIBER_PLUGIN = '''
from avhb.hookspecs import hookimpl


def transcribe(array, rate=16000, language=None):
    raise AssertionError("never reached: the package check comes first")


transcribe.requires = (("avhb_no_such_asr_package", "asr"),)


@hookimpl
def avhb_transcribers():
    return {"faketx": "faketx_plugin:transcribe"}
'''

TASK = '''task: heard
data_loader: !function hooks.load
doc_id: id
doc_to_text: "{{q}}"
doc_to_target: t
metric_list:
  - metric: exact_match
media:
  audio: "{{a}}"
  transcriber: faketx/faketx
judges:
  listener:
    prompt: "Is {{response}} what the clip says?"
    parser: yes_no
    media: [audio]
'''
MISSING = ("transcriber 'faketx/faketx' needs the 'avhb_no_such_asr_package' package, which is not installed. ")
PIP = "pip install 'avhb[asr]'"


@pytest.fixture
def pack(tmp_path):
    """A plugin site with the ``faketx`` transcriber (its package missing),
    a task whose request and judge role carry audio, its data, and the
    scripted replies of a model and a judge."""
    site = tmp_path / "site"
    (site / "faketx_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "faketx_plugin.py").write_text(TRANSCRIBER_PLUGIN)
    (site / "faketx_plugin-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: faketx-plugin\n"
                                                                   "Version: 0.1\n")
    (site / "faketx_plugin-0.1.dist-info" / "entry_points.txt").write_text("[avhb]\nfaketx = faketx_plugin\n")
    tasks = tmp_path / "hearpack"
    tasks.mkdir()
    (tasks / "hooks.py").write_text("def load(root, config):\n    return [{'id': 's1', 'q': 'What is said?', "
                                    "'a': 'speech.wav', 't': 'yes'}]\n")
    (tasks / "heard.yaml").write_text(TASK)
    data = tmp_path / "data"
    data.mkdir()
    with wave.open(str(data / "speech.wav"), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000), w.writeframes(b"\x10\x00" * 8000)
    (tmp_path / "model.json").write_text(json.dumps({"What is said?": "yes"}))
    (tmp_path / "judge.json").write_text(json.dumps({"Is": "yes"}))
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return tmp_path, tasks, data, env


def _run(pack, model: str, *extra: str):
    root, tasks, data, env = pack
    return run_cli("--include_path", str(tasks), "--tasks", "hearpack/heard", "--model", model,
                   "--data", f"hearpack={data}", "--output-dir", str(root / "run"), "--no-report", *extra, env=env)


def test_a_model_that_hears_no_audio_is_named_with_both_ways(pack):
    root = pack[0]
    proc = _run(pack, f"scripted,replies={root / 'model.json'}",
                "--judge", f"listener=scripted,replies={root / 'judge.json'},audio=true")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line == ("avhb: error: task hearpack/heard: its audio becomes a transcript for the model (scripted, "
                    f"which hears no audio here); {MISSING}If scripted hears audio, add audio=true to its spec "
                    f"(--model scripted,audio=true); or for a transcript, install the transcriber: {PIP}"), line
    assert "judge role" not in line and not (root / "run" / "results.json").exists()


def test_a_judge_role_that_hears_no_audio_is_named_with_its_binding(pack):
    root = pack[0]
    proc = _run(pack, f"scripted,replies={root / 'model.json'},audio=true",
                "--judge", f"listener=scripted,replies={root / 'judge.json'}")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert ("its audio becomes a transcript for judge role 'listener' (scripted, which hears no audio here); "
            f"{MISSING}If scripted hears audio, add audio=true to its spec (--judge listener=scripted,audio=true); "
            f"or for a transcript, install the transcriber: {PIP}") in line, line
    assert "the model" not in line


def test_when_both_hear_the_run_goes_on_and_a_transcript_ablation_offers_only_the_package(pack):
    root = pack[0]
    proc = _run(pack, f"scripted,replies={root / 'model.json'},audio=true",
                "--judge", f"listener=scripted,replies={root / 'judge.json'},audio=true")
    assert proc.returncode == 0, proc.stderr
    assert "becomes a transcript" not in proc.stderr
    assert json.loads((root / "run" / "results.json").read_text())["results"]["hearpack/heard"]

    ablated = _run(pack, f"scripted,replies={root / 'model.json'},audio=true",
                   "--judge", f"listener=scripted,replies={root / 'judge.json'},audio=true",
                   "--ablate", "audio_as_transcript", "--output-dir", str(root / "ablated"))
    assert ablated.returncode == 2
    line = ablated.stderr.strip().splitlines()[-1]
    assert ("for the model (scripted, --ablate audio_as_transcript); "
            f"{MISSING}For a transcript, install the transcriber: {PIP}") in line, line


def test_avhb_score_checks_the_judges_it_asks_again(pack):
    """``avhb score`` replays the model's answers and asks its judges
    again: a rebound judge that hears no audio is stopped before it is asked."""
    root = pack[0]
    first = _run(pack, f"scripted,replies={root / 'model.json'},audio=true",
                 "--judge", f"listener=scripted,replies={root / 'judge.json'},audio=true")
    assert first.returncode == 0, first.stderr
    proc = run_cli("score", str(root / "run"), "--judge", f"listener=scripted,replies={root / 'judge.json'}",
                   "--no-report", env=pack[3])
    assert proc.returncode == 2, proc.stderr
    assert ("its audio becomes a transcript for judge role 'listener' (scripted, which hears no audio here)"
            in proc.stderr), proc.stderr


@pytest.mark.parametrize("predict_only", [False, True])
def test_haves_in_loop_edge_judge_is_checked_before_the_first_turn(pack, predict_only):
    """HAVE's music task: the driver asks ``edge_criterion`` with the
    observation's audio each turn; a judge bound to it that hears none,
    with the transcriber's package missing, stops the run before the
    model's first turn (also under --predict_only, which keeps in-loop
    roles)."""
    root, _, _, env = pack
    calls = root / "model.json"
    proc = run_cli("--tasks", "have_music_reproduction", "--sample-data", "--limit", "1",
                   "--model", f"scripted,replies={calls},audio=true",
                   "--judge", f"edge_criterion=scripted,replies={root / 'judge.json'}",
                   "--media", "transcriber=faketx/faketx", "--output-dir", str(root / "have"), "--no-report",
                   *(["--predict_only"] if predict_only else []), env=env)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert ("task have_music_reproduction: its audio becomes a transcript for judge role 'edge_criterion' "
            "(scripted, which hears no audio here)") in line, line
    assert "(--judge edge_criterion=scripted,audio=true)" in line and PIP in line
    assert not (root / "have" / "journal").exists() or not any((root / "have" / "journal").iterdir())


def test_audio_true_is_offered_only_where_the_backend_takes_it():
    from avhb.run.plan import _takes_audio_argument

    assert _takes_audio_argument("openai:gpt-4o-audio-preview") and _takes_audio_argument("litellm:gemini/x")
    assert _takes_audio_argument("vllm:Qwen2.5-Omni") and _takes_audio_argument("azure:d")
    assert not _takes_audio_argument("openai-completions:m")  # declared, but ignored: text prompts only
    assert not _takes_audio_argument("random") and not _takes_audio_argument("cascade:openai:m")
    assert not _takes_audio_argument("no-such-kind:x")


def test_list_models_says_which_presets_hear_audio():
    """Each preset's last column is what it takes besides text (its
    ``capabilities``): the Omni and Gemini presets hear audio."""
    from avhb.model.presets import load_presets

    proc = run_cli("list", "models")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("\t")[0]: line.split("\t") for line in proc.stdout.splitlines()}
    presets = load_presets()
    assert set(rows) == set(presets)
    for name, row in rows.items():
        assert row[-1].startswith("takes ")
        assert row[-1].endswith("audio") == bool(presets[name]["capabilities"].get("audio")), row
    assert {n for n, r in rows.items() if r[-1].endswith("audio")} >= {"Qwen2.5-Omni", "Qwen3-Omni", "Gemini-2.5-Flash"}
    assert rows["Qwen2.5-VL"][-1] == "takes images 64, video"
