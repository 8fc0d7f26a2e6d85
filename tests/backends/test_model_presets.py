"""Known models declare what they take (model_backends/presets.yaml), found
by one lookup (avhb.model.presets.find_preset) that every backend uses:
the API backends (openai, azure, litellm) take images per request, video,
audio and context from a matching preset where no argument gives them (an
argument always wins) and say once at the start of the run which preset
supplied them; vllm resolves its presets (and their Hub ids) the same way."""
from __future__ import annotations

import json

import pytest

from avhb import UserError, parse_backend_spec
from avhb.model.presets import find_preset, load_presets
from tests.conftest import run_cli
from tests.run.test_transcript_hint import MISSING, pack  # noqa: F401  (the fixture)
from tests.servers.openai_server import ScriptedServer

AUDIO_FAMILIES = {"Qwen2.5-Omni", "Qwen3-Omni", "MiniCPM-o", "GPT-4o-audio", "Gemini-2.0-Flash",
                  "Gemini-2.5-Flash", "Gemini-2.5-Pro", "Phi-4-multimodal"}


def _openai(spec: str, monkeypatch):
    from avhb.model_backends.openai_backend import OpenAIBackend

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return OpenAIBackend(parse_backend_spec(spec))


def _litellm(spec: str, monkeypatch):
    pytest.importorskip("litellm")
    from avhb.model_backends.litellm_backend import LiteLLMBackend

    monkeypatch.setenv("GEMINI_API_KEY", "AIzaFakeFakeFakeFakeFakeFakeFakeFake123")
    return LiteLLMBackend(parse_backend_spec(spec))


def test_every_preset_says_what_it_takes_and_the_audio_families_hear():
    presets = load_presets()
    assert AUDIO_FAMILIES <= set(presets)
    for name, entry in presets.items():
        caps = entry["capabilities"]
        assert set(caps) == {"images", "video", "audio"}, name
        assert isinstance(caps["images"], int) and isinstance(caps["video"], bool) and isinstance(caps["audio"], bool)
        for kind, route in (entry.get("backend_capabilities") or {}).items():
            assert set(route) <= {"images", "video", "audio"}, (name, kind)
    assert {n for n, e in presets.items() if e["capabilities"]["audio"]} == AUDIO_FAMILIES
    assert presets["GPT-4o-audio"]["capabilities"] == {"images": 0, "video": False, "audio": True}
    assert presets["Phi-4-multimodal"]["capabilities"]["video"] is False


@pytest.mark.parametrize("name, preset", [
    ("GPT-4o-audio", "GPT-4o-audio"), ("gpt-4o-audio-preview", "GPT-4o-audio"),
    ("GPT-4O-AUDIO-PREVIEW-2025-06-03", "GPT-4o-audio"), ("Qwen/Qwen2.5-Omni-7B", "Qwen2.5-Omni"),
    ("qwen2.5-omni", "Qwen2.5-Omni"), ("openbmb/MiniCPM-o-2_6", "MiniCPM-o"), ("gemini-2.5-flash", "Gemini-2.5-Flash"),
    ("Phi-4-multimodal-instruct", "Phi-4-multimodal"), ("no-such-model", None)])
def test_a_name_matches_by_preset_name_hub_id_or_alias(name, preset):
    found = find_preset(name)
    assert (found.name if found else None) == preset


def test_the_vllm_lookup_keeps_to_vllm_presets():
    assert find_preset("Qwen/Qwen2.5-Omni-7B", backend="vllm").name == "Qwen2.5-Omni"
    assert find_preset("microsoft/Phi-4-multimodal-instruct", backend="vllm") is None  # runs on a server
    with pytest.raises(UserError, match=r"'GPT-4o-audio' runs on the openai backend, not vllm: "
                                        r"--model openai:gpt-4o-audio-preview"):
        find_preset("GPT-4o-audio", backend="vllm")
    gemini = find_preset("Gemini-2.5-Flash")
    assert gemini.capabilities_for("litellm")["video"] and not gemini.capabilities_for("openai")["video"]


def test_vllm_takes_a_preset_by_its_hub_id_and_minicpm_o_hears():
    from avhb.model_backends.vllm_backend import resolve_model

    model, engine, caps = resolve_model(parse_backend_spec("vllm:Qwen/Qwen2.5-Omni-7B"))
    assert model == "Qwen/Qwen2.5-Omni-7B" and caps.audio and caps.video
    assert engine["limit_mm_per_prompt"] == {"video": 1, "image": 1, "audio": 1}
    model, engine, caps = resolve_model(parse_backend_spec("vllm:MiniCPM-o"))
    assert model == "openbmb/MiniCPM-o-2_6" and caps.audio and caps.video and engine["trust_remote_code"] is True
    assert caps.tokens_per_frame == 64 and caps.max_context == 32768
    with pytest.raises(UserError, match="runs on the openai backend"):
        resolve_model(parse_backend_spec("vllm:Phi-4-multimodal"))


def test_openai_takes_a_known_models_capabilities_and_says_which_preset(monkeypatch):
    b = _openai("openai:gpt-4o-audio-preview,base_url=http://127.0.0.1:9/v1", monkeypatch)
    caps = b.capabilities
    assert caps.audio and caps.images == 0 and not caps.video and not caps.sees_pixels and caps.max_context == 128000
    assert b.notes == ["openai:gpt-4o-audio-preview: what the model takes is model preset GPT-4o-audio's (images 0, "
                       "video no, audio yes, context 128000; avhb list models); an argument on the spec overrides it "
                       "(audio=, video=, images_per_request=)"]
    served = _openai("openai:Qwen/Qwen2.5-Omni-7B,base_url=http://127.0.0.1:9/v1", monkeypatch).capabilities
    assert served.audio and served.video and served.images == 8 and served.max_context == 32768
    # Gemini's OpenAI-compatible endpoint takes no video part: frames, and it still hears
    gemini = _openai("openai:gemini-2.5-flash,base_url=http://127.0.0.1:9/v1", monkeypatch).capabilities
    assert gemini.audio and not gemini.video and gemini.images == 3000


def test_an_argument_on_the_spec_always_wins(monkeypatch):
    b = _openai("openai:gpt-4o-audio-preview,base_url=http://127.0.0.1:9/v1,audio=false,images_per_request=4",
                monkeypatch)
    assert not b.capabilities.audio and b.capabilities.images == 4 and b.capabilities.sees_pixels
    assert b.notes == ["openai:gpt-4o-audio-preview: what the model takes is model preset GPT-4o-audio's (video no, "
                       "context 128000; avhb list models); an argument on the spec overrides it "
                       "(audio=, video=, images_per_request=)"]
    every = _openai("openai:gpt-4o-audio-preview,base_url=http://127.0.0.1:9/v1,audio=false,video=true,"
                    "images_per_request=2,max_context=999", monkeypatch)
    assert every.capabilities.video and every.capabilities.max_context == 999 and every.notes == []
    unknown = _openai("openai:my-model,base_url=http://127.0.0.1:9/v1", monkeypatch)
    assert not unknown.capabilities.audio and unknown.capabilities.images == 32 and unknown.notes == []


def test_litellm_takes_a_preset_by_the_name_without_its_provider(monkeypatch):
    b = _litellm("litellm:openai/gpt-4o-audio-preview,api_base=http://127.0.0.1:9/v1", monkeypatch)
    assert b.capabilities.audio and b.capabilities.images == 0 and "GPT-4o-audio" in b.notes[0]
    # a vLLM server behind LiteLLM's openai/ provider: the preset's audio, but a video goes as frames
    # (only a Gemini file part carries a whole video through LiteLLM)
    omni = _litellm("litellm:openai/Qwen/Qwen2.5-Omni-7B,api_base=http://127.0.0.1:9/v1", monkeypatch)
    assert omni.capabilities.audio and not omni.capabilities.video
    assert "(images 8, audio yes, context 32768, 256 tokens per frame;" in omni.notes[0]
    gemini = _litellm("litellm:gemini/gemini-2.5-flash,audio=false", monkeypatch)
    assert gemini.capabilities.video and not gemini.capabilities.audio
    assert "model preset Gemini-2.5-Flash's (images 3000, video yes, context 1048576, 258 tokens per frame;" \
        in gemini.notes[0]


def test_a_run_with_a_known_audio_model_needs_no_transcriber_and_says_the_preset_once(pack):  # noqa: F811
    """The issue's first hour: an API model that hears (gpt-4o-audio-preview)
    got no audio unless ``audio=true`` was found; now its preset says so:
    the audio goes as an input_audio part, no transcriber is asked for, and
    the run's notes name the preset once.  ``audio=false`` still wins."""
    root, tasks, data, env = pack
    with ScriptedServer(reply=lambda body: "yes") as srv:
        model = f"openai:gpt-4o-audio-preview,base_url={srv.base_url}"
        judge = f"listener=scripted,replies={root / 'judge.json'},audio=true"
        common = ("--include_path", str(tasks), "--tasks", "hearpack/heard", "--data", f"hearpack={data}",
                  "--no-report", "--judge", judge)
        proc = run_cli(*common, "--model", model, "--output-dir", str(root / "run"), env={**env, "OPENAI_API_KEY": ""})
        assert proc.returncode == 0, proc.stderr
        parts = [p["type"] for m in srv.requests[-1].body["messages"] for p in m["content"]
                 if isinstance(m["content"], list)]
        assert "input_audio" in parts, parts
        said = [line for line in proc.stderr.splitlines() if "model preset GPT-4o-audio's" in line]
        assert len(said) == 1 and said[0].startswith("avhb: note: openai:gpt-4o-audio-preview: "), proc.stderr
        assert any("GPT-4o-audio" in n for n in json.loads((root / "run" / "run.json").read_text())["notes"])

        deaf = run_cli(*common, "--model", model + ",audio=false", "--output-dir", str(root / "deaf"), env=env)
        assert deaf.returncode == 2 and MISSING in deaf.stderr, deaf.stderr
