"""vLLM request format for every preset (no engine needed): engine
arguments, capabilities, and the prompt/multi_modal_data built from a
request with video frames, an image and audio."""
from __future__ import annotations

import numpy as np
import pytest

from avhb.backend import BackendSpec
from avhb.messages import AudioPart, ImagePart, Message, Request, TextPart, VideoPart
from avhb.model_backends.vllm_backend import build_inputs, resolve_model, sampling_kwargs
from avhb.presets import load_presets


def fake_template(conversation):
    """Renders placeholders the way Qwen-style chat templates do."""
    out = []
    for m in conversation:
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        body = "".join({"video": "<|video_pad|>", "image": "<|image_pad|>", "audio": "<|audio_pad|>"}.get(c["type"], c.get("text", ""))
                       for c in content)
        out.append(f"<|im_start|>{m['role']}\n{body}<|im_end|>\n")
    return "".join(out) + "<|im_start|>assistant\n"


def request_with_media():
    frames = [np.full((28, 28, 3), i, np.uint8) for i in range(4)]
    video = VideoPart(path="v.mp4", frames=frames, timestamps=[0.0, 1.0, 2.0, 3.0], frame_indices=[0, 30, 60, 90], fps=30.0)
    image = ImagePart(array=np.zeros((10, 12, 3), np.uint8), label="[1]")
    audio = AudioPart(array=np.zeros(16000, np.float32), rate=16000)
    return Request(messages=[Message("system", [TextPart("Be brief.")]),
                             Message("user", [video, image, audio, TextPart("What happens?")])],
                   generation={"max_tokens": 32, "temperature": 0.3})


VLLM_PRESETS = sorted(n for n, p in load_presets().items() if p.get("backend") == "vllm")


def test_presets_catalogue_lists_the_headline_models():
    assert {"Qwen3-VL", "Qwen2.5-Omni", "Qwen3-Omni", "InternVL3.5", "LLaVA-OneVision", "Kimi-VL"} <= set(VLLM_PRESETS)


@pytest.mark.parametrize("name", VLLM_PRESETS)
def test_preset_resolves_engine_args_and_request_format(name):
    preset = load_presets()[name]
    model, engine, caps = resolve_model(BackendSpec("vllm", name, {"tensor_parallel_size": 2}))
    assert model == preset["hub_id"] and engine["tensor_parallel_size"] == 2
    assert engine["limit_mm_per_prompt"] == preset["vllm"]["limit_mm_per_prompt"]
    assert caps.max_context == preset["vllm"]["max_model_len"]  # the engine's window, not the model's maximum
    assert caps.audio == preset["capabilities"]["audio"] and caps.video == preset["capabilities"]["video"]
    req = request_with_media()
    if not caps.audio:  # the evaluator turns audio into a transcript first
        req.messages[1].parts[2] = AudioPart(transcript="hello there")
    inputs = build_inputs(req, fake_template)
    mm = inputs["multi_modal_data"]
    frames, meta = mm["video"]
    assert frames.shape == (4, 28, 28, 3) and meta["frames_indices"] == [0, 30, 60, 90] and meta["fps"] == 30.0
    assert mm["image"].size == (12, 10)
    if caps.audio:
        wave, rate = mm["audio"]
        assert rate == 16000 and wave.shape == (16000,)
        assert inputs["prompt"].count("<|audio_pad|>") == 1
    else:
        assert "audio" not in mm and "Audio transcript: hello there" in inputs["prompt"]
    # placeholders in the same order as the parts
    p = inputs["prompt"]
    assert p.index("<|video_pad|>") < p.index("[1]") < p.index("<|image_pad|>") < p.index("What happens?")
    assert p.startswith("<|im_start|>system\nBe brief.") and p.endswith("<|im_start|>assistant\n")


def test_text_only_request_has_no_media_and_sampling_maps():
    req = Request(messages=[Message("user", [TextPart("hi")])], generation={"max_new_tokens": 7, "seed": 3, "stop": ["\n"]})
    inputs = build_inputs(req, fake_template)
    assert "multi_modal_data" not in inputs
    assert sampling_kwargs(req.generation) == {"max_tokens": 7, "temperature": 0.0, "seed": 3, "stop": ["\n"]}


def test_unsampled_video_is_a_sample_error():
    from avhb.errors import SampleError

    req = Request(messages=[Message("user", [VideoPart(path="x.mp4"), TextPart("?")])])
    with pytest.raises(SampleError, match="x.mp4"):
        build_inputs(req, fake_template)


def test_free_model_path_and_overrides():
    model, engine, caps = resolve_model(BackendSpec("vllm", "/models/tiny-qwen2-vl", {"max_model_len": 2048, "audio": True}))
    assert model == "/models/tiny-qwen2-vl" and engine == {"max_model_len": 2048}
    assert caps.max_context == 2048 and caps.audio is True
