"""A deterministic language model behind ``/v1/completions`` (echo and
log-probabilities) and vLLM's tokenizer endpoints, for the scripted server.

Tokenizer: one token per character (id ``ord(c) + 3``), with the special
tokens ``<s>`` (BOS, 1) and ``</s>`` (EOS, 2) recognised in text; nothing is
added to a prompt (like GPT-2's tokenizer), so a text prompt and the token
prompt of the same text are the same tokens, and lm-eval's token requests
and avhb's agree on every boundary.

Model: the greedy next token after a prefix copies what followed the last
earlier occurrence of the prefix's last character (an induction head), else
a space; it has log-probability -0.05; any other token has
``-(1 + (crc32(last 4 chars + token) % 400) / 100)``.  A completion
request with ``echo`` returns every prompt token's log-probability (the
first ``None``), the top one as ``top_logprobs``, the character offsets,
then ``max_tokens`` greedy tokens; without ``echo`` the reply is the
scripted reply text.
"""
from __future__ import annotations

import zlib
from typing import Any

SPECIAL = {"<s>": 1, "</s>": 2}
BOS, EOS = 1, 2


def tokenize(text: str) -> list[int]:
    out, i = [], 0
    while i < len(text):
        for name, tid in SPECIAL.items():
            if text.startswith(name, i):
                out.append(tid)
                i += len(name)
                break
        else:
            out.append(ord(text[i]) + 3)
            i += 1
    return out


def piece(token: int) -> str:
    for name, tid in SPECIAL.items():
        if token == tid:
            return name
    return chr(token - 3)


def detokenize(tokens: list[int]) -> str:
    return "".join(piece(t) for t in tokens)


def greedy(prefix: list[int]) -> int:
    last = prefix[-1]
    for j in range(len(prefix) - 2, -1, -1):
        if prefix[j] == last:
            return prefix[j + 1]
    return ord(" ") + 3


def logprob(prefix: list[int], token: int) -> float:
    if token == greedy(prefix):
        return -0.05
    key = (detokenize(prefix[-4:]) + "|" + piece(token)).encode("utf-8")
    return -(1 + (zlib.crc32(key) % 400) / 100)


def _prompts(prompt: Any) -> list[list[int]]:
    """A completions ``prompt``: a string, a list of strings, a token list
    or a list of token lists."""
    if isinstance(prompt, str):
        return [tokenize(prompt)]
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return [list(prompt)]
    return [tokenize(p) if isinstance(p, str) else list(p) for p in prompt]


def completion(body: dict[str, Any], reply: str) -> dict[str, Any]:
    """The reply to one ``/v1/completions`` request (module docstring)."""
    choices = []
    for index, tokens in enumerate(_prompts(body.get("prompt", ""))):
        if not body.get("echo"):
            choices.append({"index": index, "text": reply, "logprobs": None, "finish_reason": "stop"})
            continue
        seq = list(tokens)
        for _ in range(int(body.get("max_tokens", 1) or 0)):
            seq.append(greedy(seq))
        lps: list[float | None] = [None] + [logprob(seq[:i], seq[i]) for i in range(1, len(seq))]
        tops: list[dict[str, float] | None] = [None]
        for i in range(1, len(seq)):
            g = greedy(seq[:i])
            top = {piece(g): logprob(seq[:i], g)}
            top.setdefault(piece(seq[i]), lps[i])  # vLLM lists the prompt's own token too
            tops.append(top)
        offsets, at = [], 0
        for t in seq:
            offsets.append(at)
            at += len(piece(t))
        choices.append({"index": index, "text": detokenize(seq), "finish_reason": "length",
                        "logprobs": {"tokens": [piece(t) for t in seq], "token_logprobs": lps, "top_logprobs": tops,
                                     "text_offset": offsets}})
    return {"id": "cmpl-0", "object": "text_completion", "created": 0, "model": body.get("model", "fake"),
            "choices": choices, "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


TOKENIZER_INFO = {"eos_token": "</s>", "bos_token": "<s>", "pad_token": None, "model_max_length": 4096,
                  "tokenizer_class": "CharTokenizer"}
