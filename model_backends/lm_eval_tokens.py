"""How lm-eval turns a log-likelihood request into tokens, shared by the
backends that score continuations (``openai-completions``, ``vllm``,
``local``), so each reproduces lm-eval's numbers:

* :func:`move_spaces` — the context's trailing white space belongs to the
  continuation (``TemplateLM._encode_pair``);
* :func:`encode_pair` — the continuation's tokens are those of
  context + continuation after the context's own; an empty context is the
  prefix token (BOS, else EOS), unless the continuation starts with it;
* :func:`truncated` — left-truncated to ``limit`` tokens, with the context
  length that remains;
* :func:`rolling_windows` — ``loglikelihood_rolling``: the whole text in
  windows of ``max_seq_len`` scored tokens, each after the one before it
  (``get_rolling_token_windows`` with a context of 1, made disjoint).
"""
from __future__ import annotations

from typing import Callable


def move_spaces(context: str, continuation: str) -> tuple[str, str]:
    spaces = len(context) - len(context.rstrip())
    if spaces:
        return context[:-spaces], context[-spaces:] + continuation
    return context, continuation


def encode_pair(encode: Callable[[str], list[int]], context: str, continuation: str,
                prefix: int | None) -> tuple[list[int], list[int]]:
    """(context tokens, continuation tokens) of one pair (module docstring)."""
    if context == "":
        cont = encode(continuation)
        if prefix is None:
            raise ValueError("the tokenizer has neither a BOS nor an EOS token to start an empty context")
        return ([prefix], cont) if not cont or prefix != cont[0] else (cont[:1], cont[1:])
    context, continuation = move_spaces(context, continuation)
    whole, ctx = encode(context + continuation), encode(context)
    return ctx, whole[len(ctx):]


def truncated(ctx: list[int], cont: list[int], limit: int) -> tuple[list[int], int]:
    """(the last ``limit`` tokens of context + continuation, the context's length among them)."""
    return (ctx + cont)[-limit:], len(ctx) - max(0, len(ctx) + len(cont) - limit)


def rolling_windows(tokens: list[int], prefix: int, max_seq_len: int) -> list[tuple[list[int], list[int]]]:
    """(context tokens, scored tokens) of each window (module docstring)."""
    if not tokens:
        return []
    first = min(max_seq_len, len(tokens))
    windows = [([prefix] + tokens[:first - 1], tokens[:first])]
    predicted = first
    while predicted < len(tokens):
        size = min(len(tokens) - predicted, max_seq_len)
        end = predicted + size
        windows.append((tokens[end - max_seq_len - 1:end - 1], tokens[end - size:end]))
        predicted += size
    return [(ctx[:len(ctx) - (len(scored) - 1)], scored) for ctx, scored in windows]
