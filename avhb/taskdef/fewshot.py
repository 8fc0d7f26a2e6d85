"""Few-shot examples, with lm-eval's semantics.

Settings (:func:`settings`): ``num_fewshot`` (``--num_fewshot`` overrides it,
except a task that sets ``num_fewshot: 0``, as lm-eval), and
``fewshot_config``: ``sampler`` (``default``: seeded random, ``first_n``:
the pool's first n), ``split`` (else the task's ``fewshot_split``),
``samples`` (a list of docs inline, or a hook returning one),
``fewshot_indices`` (the pool restricted to these positions, default
sampler), ``doc_to_text`` / ``doc_to_target`` / ``doc_to_choice`` (how an
example is written; default the task's), ``fewshot_delimiter`` /
``target_delimiter`` (default the task's: ``"\\n\\n"`` and ``" "``) and
``process_docs`` (default the task's).

The pool (lm-eval's order): the few-shot split (with process_docs), else
``samples``, else the ``training_split``, else the ``validation_split``,
else the evaluated split.

The draw (:class:`Sampler`) reproduces lm-eval's exactly: one
``random.Random(seed)`` per task (``--seed``, lm-eval's few-shot seed
1234 by default), drawn once per sample in the order of the task's samples;
when the evaluated doc may be in the pool (lm-eval's test: the few-shot
split *is* the ``test_split``, both as written in the YAML, unset counting
as equal) it draws n + 1 and drops the evaluated doc (every copy of it),
redrawing n from the pool without it should fewer than n remain;
``first_n`` takes the first n of the pool without the evaluated doc.

One difference, on purpose: the draws are made for every sample of the
task in order, whatever ``--limit``, ``--samples`` or ``--shard`` keep, so a
sample's examples do not depend on which others run (lm-eval's ``--limit``
keeps the first samples, so its draws agree; its ``--samples`` redraws
over the kept ones and so does not).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Sequence

from avhb.errors import UserError

SAMPLERS = ("default", "first_n")


@dataclass
class FewshotSettings:
    num: int = 0
    sampler: str = "default"
    split: str | None = None
    samples: Any = None  # a list of docs, or a hook {"function": dotted}
    indices: list[int] | None = None
    overrides: dict[str, Any] = field(default_factory=dict)  # doc_to_text / doc_to_target / doc_to_choice / gen_prefix
    fewshot_delimiter: str = "\n\n"
    target_delimiter: str = " "
    process_docs: Any = None  # a hook {"function": dotted}, or None
    excludes_eval_doc: bool = False


def settings(cfg: Any, num_fewshot: int | None = None) -> FewshotSettings:
    """A task's few-shot settings (module docstring); ``num_fewshot``: the
    ``--num_fewshot`` flag (None: not given)."""
    own = cfg.get("num_fewshot")
    num = own if (num_fewshot is None or own == 0) else num_fewshot
    fc = dict(cfg.get("fewshot_config") or {})
    sampler = fc.get("sampler", "default")
    if sampler not in SAMPLERS:
        raise UserError(f"task {cfg.name!r}: fewshot_config.sampler {sampler!r} is not one of {', '.join(SAMPLERS)}")
    split = fc.get("split", cfg.get("fewshot_split"))
    return FewshotSettings(
        num=int(num or 0), sampler=sampler, split=split, samples=fc.get("samples"),
        indices=fc.get("fewshot_indices"),
        overrides={k: fc[k] for k in ("doc_to_text", "doc_to_target", "doc_to_choice", "gen_prefix")
                   if fc.get(k) is not None},
        fewshot_delimiter=fc.get("fewshot_delimiter", cfg.get("fewshot_delimiter", "\n\n")),
        target_delimiter=fc.get("target_delimiter", cfg.get("target_delimiter", " ")),
        process_docs=fc.get("process_docs", cfg.get("process_docs")),
        excludes_eval_doc=split == cfg.get("test_split"))


class Sampler:
    """lm-eval's samplers (module docstring)."""

    def __init__(self, name: str, pool: Sequence[dict[str, Any]], seed: int, indices: list[int] | None = None):
        self.name = name
        self.pool = list(pool)
        if indices and name == "default":  # lm-eval restricts the default sampler's pool, not first_n's
            self.pool = [self.pool[i] for i in indices]
        self.rnd = random.Random(seed)

    def draw(self, n: int, eval_doc: dict[str, Any] | None) -> list[dict[str, Any]]:
        if n <= 0:
            return []
        if not self.pool:
            raise UserError("few-shot: the pool of examples is empty")
        if self.name == "first_n":
            pool = [d for d in self.pool if d != eval_doc] if eval_doc is not None else self.pool
            if n > len(pool):
                raise UserError(f"few-shot: {n} examples asked, the pool has {len(pool)}")
            return pool[:n]
        if eval_doc is None:
            return self._sample(self.pool, n)
        drawn = [d for d in self._sample(self.pool, n + 1) if d != eval_doc][:n]
        if len(drawn) < n:  # the pool holds copies of the evaluated doc: draw again without any of them
            drawn = self._sample([d for d in self.pool if d != eval_doc], n)
        return drawn

    def _sample(self, pool: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
        if k > len(pool):
            raise UserError(f"few-shot: {k} examples to draw (with the evaluated doc's headroom), the pool has "
                            f"{len(pool)}")
        return self.rnd.sample(pool, k)


def examples_for(docs: Sequence[dict[str, Any]], pool: Sequence[dict[str, Any]], fs: FewshotSettings,
                 seed: int) -> list[list[dict[str, Any]]]:
    """Every doc's examples, drawn in the docs' order (module docstring)."""
    if fs.num <= 0:
        return [[] for _ in docs]
    sampler = Sampler(fs.sampler, pool, seed, fs.indices)
    return [sampler.draw(fs.num, doc if fs.excludes_eval_doc else None) for doc in docs]
