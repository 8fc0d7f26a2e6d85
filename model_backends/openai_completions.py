"""OpenAI-compatible text completions (``/v1/completions``) with token
log-probabilities: ``openai-completions:MODEL,base_url=http://host:8000/v1``
(vLLM serve, llama.cpp's server, OpenAI's legacy completion models).  What
lm-eval's ``local-completions`` model does, through avhb's call path.

Generation: the request's plain-text prompt (lm-eval's rendering of its
turns) as ``prompt``, the generation settings as the chat backend maps them
(every stop sequence kept: the completions API has no limit of 4).

Log-likelihood (``Request.loglikelihood``): each (context, continuation)
pair is scored as lm-eval scores it:

* with the server's tokenizer (vLLM's ``/tokenize``, ``/detokenize`` and
  ``/tokenizer_info``, next to ``/v1``; ``tokenizer=remote``, or ``auto``,
  the default, when the server has them): the context's trailing white
  space moves to the continuation, the pair is tokenized as context + continuation
  with the context's own tokens first, an empty context is the tokenizer's
  BOS token (else its EOS), the tokens are left-truncated to
  ``max_length - 1`` (``max_length`` 2048, lm-eval's), and every pair of
  a sample goes in one request as a token prompt with ``echo``,
  ``logprobs: 1``, ``max_tokens: 1``, ``temperature: 0``; the
  continuation's log-likelihood is the sum of its tokens' ``token_logprobs``
  and ``is_greedy`` whether each is its position's top log-probability.
  ``loglikelihood_rolling`` scores the whole text in lm-eval's rolling
  windows of ``max_length - 1`` tokens after the prefix token;
* without one (``tokenizer=none``, or ``auto`` on a server that has none):
  the text itself, split at the context's end by ``text_offset`` (a token
  that starts before the end is the context's); an empty context (rolling,
  ``acc_mutual_info``) needs a tokenizer and fails its sample saying so.

Arguments: those of the ``openai`` backend, plus ``tokenizer`` (auto,
remote, none) and ``max_length`` (2048).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from avhb import (Argument, BackendSpec, Capabilities, MalformedReply, Request, Response, SampleError, UserError,
                  prompt_text)

from .lm_eval_tokens import encode_pair, move_spaces, rolling_windows, truncated
from .openai_backend import OPENAI_ARGUMENTS, OpenAIBackend, map_generation

TOKENIZERS = ("auto", "remote", "none")
_TEXT_ONLY = "ignored: /v1/completions takes a text prompt only (taken so an openai spec works here unchanged)"
ARGUMENTS = {
    **OPENAI_ARGUMENTS,
    **{k: dataclasses.replace(OPENAI_ARGUMENTS[k], help=_TEXT_ONLY, ignored=True)
       for k in ("images_per_request", "video", "audio", "tokens_per_frame")},
    "tokenizer": Argument("auto | remote | none", "auto", "how log-likelihood pairs are tokenized: the server's "
                          "tokenizer (remote; auto when the server has one) or text offsets (none)"),
    "max_length": Argument("int >= 3", "2048", "tokens a log-likelihood request holds (left-truncated to "
                           "max_length - 1, as lm-eval does)"),
}


class OpenAICompletionsBackend(OpenAIBackend):
    """See the module docstring."""

    capabilities = Capabilities(text=True, images=0, video=False, audio=False, multi_turn=True, sees_pixels=False,
                                loglikelihood=True)
    arguments = ARGUMENTS
    usage = "openai-completions:MODEL,base_url=http://HOST:PORT/v1"

    def __init__(self, spec: BackendSpec):
        super().__init__(spec)
        self.capabilities = Capabilities(text=True, images=0, video=False, audio=False, multi_turn=True,
                                         max_context=self.settings.capabilities.max_context, sees_pixels=False,
                                         loglikelihood=True)
        self.tokenizer_mode = str(spec.args.get("tokenizer", "auto"))
        if self.tokenizer_mode not in TOKENIZERS:
            raise UserError(f"openai-completions backend: tokenizer must be one of {', '.join(TOKENIZERS)}, "
                            f"not {self.tokenizer_mode!r}")
        try:
            self.max_length = int(spec.args.get("max_length", 2048))
        except (TypeError, ValueError):
            raise UserError("openai-completions backend: max_length must be a whole number") from None
        if self.max_length < 3:
            raise UserError("openai-completions backend: max_length must be 3 or more")
        self.server_root = self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url
        self._tokenizer: dict[str, Any] | None = None  # {"bos": id | None, "eos": id | None}; {} when none
        self._encoded: dict[str, list[int]] = {}

    def _endpoint(self) -> str:
        return self.base_url + "/completions"

    @property
    def identity(self) -> dict[str, Any]:
        ident = super().identity
        ident["endpoint"] = "completions"
        return ident

    # -- generation ---------------------------------------------------------
    async def generate(self, request: Request) -> Response:
        if request.loglikelihood is not None:
            return await self._loglikelihood(request)
        params, dropped = map_generation(request.generation, self.max_tokens_param, max_stops=None)
        prompt = request.prompt if request.prompt is not None else prompt_text(request)
        body = {"model": self.spec.name, "prompt": prompt, **params, **self.extra_body}
        return await self._send(body, lambda data: _text_reply(data, dropped))

    async def _send(self, body: dict[str, Any], parse) -> Response:
        """One attempt (the caller retries and redacts: ``OpenAIBackend.classify``)."""
        return parse(await self._post(body, json.dumps(body).encode()))

    # -- log-likelihood -----------------------------------------------------
    async def _loglikelihood(self, request: Request) -> Response:
        seed = request.generation.get("seed")
        extra = {"seed": seed} if seed is not None else {}
        tokenizer = await self._tokenizer_info()  # a SampleError fails the sample (the caller: not retried)
        if tokenizer:
            return await self._by_tokens(request, tokenizer, extra)
        return await self._by_text(request, extra)

    async def _tokenizer_info(self) -> dict[str, Any]:
        if self._tokenizer is not None:
            return self._tokenizer
        if self.tokenizer_mode == "none":
            self._tokenizer = {}
            return self._tokenizer
        session = await self._client()
        info: dict[str, Any] | None = None
        try:
            async with session.get(self.server_root + "/tokenizer_info") as resp:
                if resp.status < 300:
                    info = json.loads(await resp.read())
        except Exception as exc:  # no such endpoint, or the server is not there
            if self.tokenizer_mode == "remote":
                raise UserError(f"openai-completions backend: {self.server_root}/tokenizer_info: {exc}") from None
        if not isinstance(info, dict) or "eos_token" not in info:
            if self.tokenizer_mode == "remote":
                raise UserError(f"openai-completions backend: tokenizer=remote, but {self.server_root} has no "
                                "/tokenizer_info (vLLM's); use tokenizer=none")
            self._tokenizer = {}
            return self._tokenizer
        bos = (await self._encode(info["bos_token"]))[0] if info.get("bos_token") else None
        eos = (await self._encode(info["eos_token"]))[0] if info.get("eos_token") else None
        self._tokenizer = {"bos": bos, "eos": eos}
        return self._tokenizer

    async def _encode(self, text: str) -> list[int]:
        if text in self._encoded:
            return self._encoded[text]
        session = await self._client()
        body = json.dumps({"prompt": text, "add_special_tokens": False}).encode()
        async with session.post(self.server_root + "/tokenize", data=body) as resp:
            raw = await resp.read()
            if resp.status >= 300:
                raise SampleError(f"{self.server_root}/tokenize answered {resp.status}: {raw[:200]!r}")
        tokens = json.loads(raw).get("tokens")
        if not isinstance(tokens, list):
            raise SampleError(f"{self.server_root}/tokenize gave no token list")
        if len(self._encoded) < 4096:  # contexts repeat across a sample's choices
            self._encoded[text] = tokens
        return tokens

    async def _by_tokens(self, request: Request, tokenizer: dict[str, Any], extra: dict[str, Any]) -> Response:
        prefix = tokenizer["bos"] if tokenizer["bos"] is not None else tokenizer["eos"]
        limit = self.max_length - 1
        windows: list[tuple[int, list[int], int]] = []  # (pair index, prompt tokens, context length)
        for i, (context, continuation) in enumerate(request.loglikelihood or []):
            if request.rolling:
                if prefix is None:
                    raise SampleError("rolling log-likelihood needs the tokenizer's BOS or EOS token")
                for ctx, cont in rolling_windows(await self._encode(continuation), prefix, limit - 1):
                    windows.append((i, ctx + cont, len(ctx)))
                continue
            if context == "" and prefix is None:
                raise SampleError("the server's tokenizer has neither a BOS nor an EOS token to start from")
            pieces = {text: await self._encode(text) for text in _texts(context, continuation)}
            ctx, cont = encode_pair(pieces.__getitem__, context, continuation, prefix)
            windows.append((i, *truncated(ctx, cont, limit)))
        body = {"model": self.spec.name, "prompt": [w[1] for w in windows], "temperature": 0, "max_tokens": 1,
                "logprobs": 1, **extra, "echo": True, **self.extra_body}

        def parse(data: Any) -> Response:
            choices = _choices(data, len(windows))
            results = [[0.0, True] for _ in request.loglikelihood or []]
            for (i, _, ctxlen), choice in zip(windows, choices):
                lps = choice.get("logprobs") or {}
                token_lps, tops = lps.get("token_logprobs") or [], lps.get("top_logprobs") or []
                cont_lps, cont_tops = token_lps[ctxlen:-1], tops[ctxlen:-1]
                if any(v is None for v in cont_lps):
                    raise MalformedReply("a continuation token without a log-probability")
                results[i][0] += sum(cont_lps)
                results[i][1] = results[i][1] and all(t == max(top.values()) for t, top in zip(cont_lps, cont_tops))
            return Response(text="", meta={"loglikelihoods": results, "tokenized": "remote"})

        return await self._send(body, parse)

    async def _by_text(self, request: Request, extra: dict[str, Any]) -> Response:
        if request.rolling or any(c == "" for c, _ in request.loglikelihood or []):
            raise SampleError(f"an empty context (loglikelihood_rolling, acc_mutual_info) needs the server's "
                              f"tokenizer for its BOS token; {self.server_root} has no /tokenizer_info "
                              "(tokenizer=none or not vLLM)")
        splits = []
        prompts = []
        for context, continuation in request.loglikelihood or []:
            splits.append(len(move_spaces(context, continuation)[0]))
            prompts.append(context + continuation)
        body = {"model": self.spec.name, "prompt": prompts, "temperature": 0, "max_tokens": 1, "logprobs": 1,
                **extra, "echo": True, **self.extra_body}

        def parse(data: Any) -> Response:
            results = []
            for choice, split, prompt in zip(_choices(data, len(prompts)), splits, prompts):
                lps = choice.get("logprobs") or {}
                offsets, token_lps, tops = lps.get("text_offset"), lps.get("token_logprobs"), lps.get("top_logprobs")
                if not isinstance(offsets, list) or not isinstance(token_lps, list):
                    raise MalformedReply("echo reply without text_offset and token_logprobs")
                total, greedy = 0.0, True
                for j, (offset, lp) in enumerate(zip(offsets, token_lps)):
                    if offset < split or offset >= len(prompt):  # the context's, or the generated token
                        continue
                    if lp is None:
                        raise MalformedReply("a continuation token without a log-probability")
                    total += lp
                    top = (tops or [None] * len(token_lps))[j]
                    greedy = greedy and bool(top) and lp == max(top.values())
                results.append([total, greedy])
            return Response(text="", meta={"loglikelihoods": results, "tokenized": "text offsets"})

        return await self._send(body, parse)


def _texts(context: str, continuation: str) -> list[str]:
    """The strings lm-eval tokenizes for one pair."""
    if context == "":
        return [continuation]
    head, tail = move_spaces(context, continuation)
    return [head + tail, head]


def _choices(data: Any, n: int) -> list[dict[str, Any]]:
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        err = data.get("error") if isinstance(data, dict) else None
        raise MalformedReply(f"reply without choices{': ' + str(err)[:300] if err else ''}")
    choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
    if len(choices) != n:
        raise MalformedReply(f"{len(choices)} choices for {n} prompts")
    return choices


def _text_reply(data: Any, dropped: list[str]) -> Response:
    (choice,) = _choices(data, 1)
    usage = data.get("usage") or {}
    meta: dict[str, Any] = {"finish_reason": choice.get("finish_reason")}
    if dropped:
        meta["ignored_generation_keys"] = dropped
    return Response(text=choice.get("text") or "", meta=meta,
                    usage={k: int(usage[k]) for k in ("prompt_tokens", "completion_tokens")
                           if isinstance(usage.get(k), (int, float))})
