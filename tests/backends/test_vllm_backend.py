"""vLLM request format for every preset (no engine needed): engine
arguments, capabilities, and the prompt/multi_modal_data built from a
request with video frames, an image and audio."""
from __future__ import annotations

import numpy as np
import pytest

from avhb.model.backend import BackendSpec
from avhb.model.messages import AudioPart, ImagePart, Message, Request, TextPart, VideoPart
from avhb.model_backends.vllm_backend import VLLMBackend, build_inputs, resolve_model, sampling_kwargs
from avhb.model.presets import load_presets


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
    assert sampling_kwargs(req.generation) == ({"max_tokens": 7, "temperature": 0.0, "seed": 3, "stop": ["\n"]}, [])


@pytest.mark.parametrize("key", ["max_tokens", "max_new_tokens", "max_gen_toks", "max_completion_tokens"])
def test_every_max_tokens_name_maps(key):
    assert sampling_kwargs({key: 9})[0]["max_tokens"] == 9


def test_sampling_defaults_until_do_sample_and_ignored_keys():
    assert sampling_kwargs({}) == ({"max_tokens": 512, "temperature": 0.0}, [])
    kw, ignored = sampling_kwargs({"until": ["a", "b", "c", "d", "e", ""], "do_sample": False, "top_k": 5,
                                   "min_p": 0.1, "response_format": {"type": "json_object"}, "logprobs": True,
                                   "num_beams": 4, "temperature": None})
    # all five stops (vLLM has no limit of 4), empty ones dropped; do_sample=False -> greedy
    assert kw == {"max_tokens": 512, "temperature": 0.0, "stop": ["a", "b", "c", "d", "e"], "top_k": 5, "min_p": 0.1}
    assert sorted(ignored) == ["logprobs", "num_beams", "response_format"]
    assert sampling_kwargs({"until": "\n\n", "temperature": 1})[0] == {"max_tokens": 512, "temperature": 1.0,
                                                                      "stop": ["\n\n"]}


def test_unsampled_video_is_a_sample_error():
    from avhb.errors import SampleError

    req = Request(messages=[Message("user", [VideoPart(path="x.mp4"), TextPart("?")])])
    with pytest.raises(SampleError, match="x.mp4"):
        build_inputs(req, fake_template)


def test_an_image_without_pixels_or_a_file_is_a_sample_error():
    from avhb.errors import SampleError

    req = Request(messages=[Message("user", [ImagePart(), TextPart("?")])])
    with pytest.raises(SampleError, match="^image part has neither pixels nor a file$"):
        build_inputs(req, fake_template)


def test_free_model_path_and_overrides():
    model, engine, caps = resolve_model(BackendSpec("vllm", "/models/tiny-qwen2-vl", {"max_model_len": 2048, "audio": True}))
    assert model == "/models/tiny-qwen2-vl" and engine == {"max_model_len": 2048}
    assert caps.max_context == 2048 and caps.audio is True


def test_unknown_arguments_are_refused():
    from avhb.errors import UserError

    with pytest.raises(UserError, match="max_model_length"):
        VLLMBackend(BackendSpec("vllm", "Qwen3-VL", {"max_model_length": 4096}))
    with pytest.raises(UserError, match="frames"):
        VLLMBackend(BackendSpec("vllm", "Qwen3-VL", {"frames": 0}))
    with pytest.raises(UserError, match="batch_size"):
        VLLMBackend(BackendSpec("vllm", "Qwen3-VL", {"batch_size": 0}))


def test_default_frames_from_preset_or_argument():
    assert VLLMBackend(BackendSpec("vllm", "Qwen3-VL")).capabilities.default_frames == load_presets()["Qwen3-VL"]["frames"] == 64
    assert VLLMBackend(BackendSpec("vllm", "qwen2.5-omni")).capabilities.default_frames == 32
    assert VLLMBackend(BackendSpec("vllm", "Qwen3-VL", {"frames": 16})).capabilities.default_frames == 16
    assert VLLMBackend(BackendSpec("vllm", "/models/x")).capabilities.default_frames is None


def test_identity_shape():
    ident = VLLMBackend(BackendSpec("vllm", "Qwen3-VL", {"tensor_parallel_size": 2, "dtype": "bfloat16"})).identity
    assert ident["kind"] == "vllm" and ident["name"] == "Qwen3-VL" and ident["model"] == "Qwen/Qwen3-VL-8B-Instruct"
    assert ident["args"]["dtype"] == "bfloat16" and "tensor_parallel_size" not in ident["args"]


# -- the batching loop, with no engine or a fake one --------------------------

def _text(prompt="hi", **generation):
    from avhb.model.messages import text_request

    return text_request(prompt, **generation)


async def test_missing_vllm_raises_user_error_promptly(monkeypatch):
    import asyncio
    import sys

    from avhb.errors import UserError

    monkeypatch.setitem(sys.modules, "vllm", None)  # "not installed", even where it is
    backend = VLLMBackend(BackendSpec("vllm", "Qwen3-VL", {"batch_size": 2}))
    with pytest.raises(UserError, match="vllm is not installed"):
        await asyncio.wait_for(backend.generate(_text()), 5)
    # a batch of three: every caller gets the error, none is left waiting
    results = await asyncio.wait_for(asyncio.gather(*(backend.generate(_text(str(i))) for i in range(3)),
                                                    return_exceptions=True), 5)
    assert [type(r) for r in results] == [UserError] * 3
    assert backend._queue == []


class _Completion:
    def __init__(self, text):
        self.text, self.token_ids, self.finish_reason = text, [1] * len(text.split()), "stop"


class _Result:
    def __init__(self, text):
        self.prompt_token_ids = [1, 2, 3]
        self.outputs = [_Completion(text)]


class _Tokenizer:
    bos_token, bos_token_id = None, None

    def apply_chat_template(self, conversation, tokenize=False, add_generation_prompt=True):
        return fake_template(conversation)


def fake_vllm(monkeypatch, generate):
    """A stand-in ``vllm`` module: records engine kwargs, SamplingParams and
    generate calls; ``generate(prompts, params)`` decides the outcome."""
    import sys
    import types

    mod = types.ModuleType("vllm")
    mod.calls = []

    class SamplingParams:
        def __init__(self, **kw):
            if kw.get("temperature", 0) < 0:
                raise ValueError(f"temperature must be non-negative, got {kw['temperature']}")
            self.kw = kw

    class LLM:
        def __init__(self, model, **engine):
            mod.engine = (model, engine)

        def get_tokenizer(self):
            return _Tokenizer()

        def generate(self, prompts, params, use_tqdm=False):
            mod.calls.append((list(prompts), [p.kw for p in params]))
            return generate(prompts, params)

    mod.LLM, mod.SamplingParams = LLM, SamplingParams
    monkeypatch.setitem(sys.modules, "vllm", mod)
    return mod


async def test_engine_failure_becomes_error_responses_not_a_hang(monkeypatch):
    import asyncio

    def boom(prompts, params):
        raise ValueError("prompt too long for max_model_len")

    mod = fake_vllm(monkeypatch, boom)
    backend = VLLMBackend(BackendSpec("vllm", "/models/tiny", {"batch_size": 2, "max_model_len": 64}))
    responses = await asyncio.wait_for(asyncio.gather(*(backend.generate(_text(str(i))) for i in range(3))), 5)
    assert [r.error for r in responses] == ["vllm: ValueError: prompt too long for max_model_len"] * 3
    assert [len(c[0]) for c in mod.calls] == [2, 1]  # both batches tried
    assert mod.engine == ("/models/tiny", {"max_model_len": 64})
    # the backend still works afterwards
    mod.calls.clear()
    monkeypatch.setattr(mod.LLM, "generate", lambda self, prompts, params, use_tqdm=False:
                        [_Result(f"echo {i}") for i in range(len(prompts))])
    ok = await asyncio.wait_for(backend.generate(_text()), 5)
    assert ok.error is None and ok.text == "echo 0"


async def test_batch_settings_reach_sampling_params_and_bad_ones_fail_one_sample(monkeypatch):
    import asyncio

    mod = fake_vllm(monkeypatch, lambda prompts, params: [_Result(f"r{i}") for i in range(len(prompts))])
    backend = VLLMBackend(BackendSpec("vllm", "/models/tiny"))
    reqs = [_text("a", max_gen_toks=5, until=["\n"], seed=1, logprobs=True),
            _text("b", temperature=-1.0),
            _text("c", max_completion_tokens=3)]
    out = await asyncio.wait_for(asyncio.gather(*(backend.generate(r) for r in reqs)), 5)
    assert out[0].text == "r0" and out[0].meta["ignored_generation_keys"] == ["logprobs"]
    assert out[0].usage == {"prompt_tokens": 3, "completion_tokens": 1}
    assert out[1].error == "vllm: temperature must be non-negative, got -1.0"
    assert out[2].text == "r1" and "ignored_generation_keys" not in out[2].meta
    assert len(mod.calls) == 1  # one engine call for the batch
    prompts, params = mod.calls[0]
    assert params == [{"max_tokens": 5, "temperature": 0.0, "stop": ["\n"], "seed": 1},
                      {"max_tokens": 3, "temperature": 0.0}]
    assert prompts[0]["prompt"].startswith("<|im_start|>user\na")


# -- parallelism and limits, checked before any model loads (issue 17) --------

def _vllm(monkeypatch, gpus: str | None = "0,1,2,3", **args):
    from avhb.model_backends import vllm_backend

    monkeypatch.setattr(vllm_backend, "_cpu_build", lambda: False)
    if gpus is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", gpus)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return VLLMBackend(BackendSpec("vllm", "Qwen3-VL", args))


def test_tensor_times_pipeline_parallel_must_fit_the_visible_gpus(monkeypatch):
    from avhb.errors import UserError

    b = _vllm(monkeypatch, tensor_parallel_size=2, pipeline_parallel_size=2)
    assert b.engine_args["pipeline_parallel_size"] == 2 and b.resources() == {"num_cpus": 1, "num_gpus": 4}
    assert "pipeline_parallel_size" not in b.identity["args"]  # where it runs, not what it answers
    with pytest.raises(UserError, match=r"tensor_parallel_size 4 x pipeline_parallel_size 2 = 8 GPUs per engine, "
                                        r"but 4 are visible \(CUDA_VISIBLE_DEVICES='0,1,2,3'\)"):
        _vllm(monkeypatch, tensor_parallel_size=4, pipeline_parallel_size=2)
    with pytest.raises(UserError, match="1 GPUs per engine, but 0 are visible"):
        _vllm(monkeypatch, gpus="")
    # a multi-node engine (vLLM places it on the Ray cluster): no local count, no GPUs of the actor's own
    multi = _vllm(monkeypatch, gpus="0", tensor_parallel_size=8, pipeline_parallel_size=2,
                  distributed_executor_backend="ray")
    assert multi.resources()["num_gpus"] == 0
    for bad, pattern in [({"tensor_parallel_size": 0}, "tensor_parallel_size=0 must be a positive integer"),
                         ({"pipeline_parallel_size": "two"}, "pipeline_parallel_size='two'"),
                         ({"distributed_executor_backend": "slurm"}, "distributed_executor_backend='slurm' must be"),
                         ({"gpu_memory_utilization": 1.5}, r"gpu_memory_utilization=1.5 must be a fraction in \(0, 1\]"),
                         ({"max_model_len": 0}, "max_model_len=0 must be a positive integer"),
                         ({"data_parallel_size": 0}, "data_parallel_size=0 must be a positive integer"),
                         ({"limit_mm_per_prompt": {"vidio": 1}}, "unknown modality 'vidio'"),
                         ({"limit_mm_per_prompt": {"video": {"count": 1, "frames": 8}}}, "unknown key"),
                         ({"limit_mm_per_prompt": {"image": -1}}, "image count=-1")]:
        with pytest.raises(UserError, match=pattern):
            _vllm(monkeypatch, **bad)


def test_data_parallel_is_engines_not_an_engine_argument(monkeypatch):
    b = _vllm(monkeypatch, data_parallel_size=4)
    assert b.replicas == 4 and "data_parallel_size" not in b.engine_args  # vLLM's offline LLM refuses DP > 1
    assert "data_parallel_size" not in b.identity["args"]


def test_limits_set_images_per_request_and_refuse_tasks_before_any_call(monkeypatch, capsys):
    from avhb.errors import UserError
    from avhb.media.spec import MediaSpec

    b = _vllm(monkeypatch, max_model_len=8192,
              limit_mm_per_prompt={"image": 2, "video": {"count": 1, "num_frames": 16}})
    assert b.capabilities.images == 2 and b.capabilities.max_context == 8192
    b.check_media(MediaSpec.from_dict({"video": "{{v}}", "frames": 16}), "t")
    with pytest.raises(UserError, match="task t: 32 frames per video, but vllm limit_mm_per_prompt video num_frames is 16"):
        b.check_media(MediaSpec.from_dict({"video": "{{v}}", "frames": 32}), "t")
    no_video = _vllm(monkeypatch, limit_mm_per_prompt={"video": 0, "image": 4})
    assert no_video.capabilities.video is False
    with pytest.raises(UserError, match="task t: sends video, but vllm limit_mm_per_prompt gives video 0"):
        no_video.check_media(MediaSpec.from_dict({"video": "{{v}}"}), "t")
    no_video.check_media(MediaSpec.from_dict({}), "t")  # a text task is fine
    # context vs frames x tokens per frame: 64 x 256 = 16384 >= 8192
    wide = _vllm(monkeypatch, max_model_len=8192)
    with pytest.raises(UserError, match=r"64 frames x 256 tokens per frame = 16384 tokens >= max_model_len 8192: "
                                        r"every sample would fail under budget: refuse \(about 31 frames fit"):
        wide.check_media(MediaSpec.from_dict({"video": "{{v}}", "frames": 64, "budget": "refuse"}), "t")
    wide.check_media(MediaSpec.from_dict({"video": "{{v}}", "frames": 64}), "t")
    assert "frames are clamped per sample" in capsys.readouterr().err
    # the preset's default frame budget (64) counts when the task names none
    with pytest.raises(UserError, match="64 frames x 256"):
        wide.check_media(MediaSpec.from_dict({"video": "{{v}}", "budget": "refuse"}), "t")


async def test_loglikelihood_requests_share_the_batch_and_sum_prompt_logprobs(monkeypatch):
    """lm-eval's log-likelihood through the engine's prompt log-probabilities
    (a stand-in engine and tokenizer: one token per character, log-probs of
    tests/servers/completions.py's model), batched with a generation."""
    import asyncio

    from tests.servers import completions as model

    class Logprob:
        def __init__(self, value):
            self.logprob = value

    class Scored:
        def __init__(self, tokens):
            self.prompt_token_ids, self.outputs = tokens, [_Completion("")]
            self.prompt_logprobs = [None] + [
                {tokens[i]: Logprob(model.logprob(tokens[:i], tokens[i])),
                 model.greedy(tokens[:i]): Logprob(model.logprob(tokens[:i], model.greedy(tokens[:i])))}
                for i in range(1, len(tokens))]

    def generate(prompts, params):
        return [Scored(p["prompt_token_ids"]) if isinstance(p, dict) and "prompt_token_ids" in p else _Result("gen")
                for p in prompts]

    mod = fake_vllm(monkeypatch, generate)

    class CharTokenizer(_Tokenizer):
        bos_token_id, eos_token_id = model.BOS, model.EOS

        def __call__(self, text, add_special_tokens=False):
            class Out:
                input_ids = model.tokenize(text)
            return Out()

    monkeypatch.setattr(mod.LLM, "get_tokenizer", lambda self: CharTokenizer())
    backend = VLLMBackend(BackendSpec("vllm", "/models/tiny", {"max_model_len": 64}))
    ll = Request(messages=[Message("user", [TextPart("Q")])],
                 loglikelihood=[("The sky is ", "blue"), ("The sky is ", "green"), ("", "aa aa")])
    rolled = Request(messages=[Message("user", [TextPart("Q")])], loglikelihood=[("", "aa aa")], rolling=True)
    text, scored, rolling = await asyncio.wait_for(asyncio.gather(backend.generate(_text("x")), backend.generate(ll),
                                                                  backend.generate(rolled)), 5)
    assert text.text == "gen" and len(mod.calls) == 1  # one engine call for the whole batch
    prompts, params = mod.calls[0]
    assert params[1] == {"max_tokens": 1, "temperature": 0.0, "prompt_logprobs": 1}

    def expected(context, continuation):  # the context's trailing space is scored with the continuation
        head = context.rstrip()
        prefix = model.tokenize(head) if head else [model.BOS]
        tokens = prefix + model.tokenize(context[len(head):] + continuation)
        return (sum(model.logprob(tokens[:i], tokens[i]) for i in range(len(prefix), len(tokens))),
                all(tokens[i] == model.greedy(tokens[:i]) for i in range(len(prefix), len(tokens))))

    got = scored.meta["loglikelihoods"]
    for (ctx, cont), (value, greedy) in zip(ll.loglikelihood, got):
        want = expected(ctx, cont)
        assert abs(value - want[0]) < 1e-9 and greedy == want[1]
    assert prompts[1]["prompt_token_ids"] == model.tokenize("The sky is blue")
    assert prompts[3]["prompt_token_ids"] == [model.BOS] + model.tokenize("aa aa")
    assert abs(rolling.meta["loglikelihoods"][0][0] - expected("", "aa aa")[0]) < 1e-9
    assert got[2][1] is False and expected("", "aa aa")[1] is False
