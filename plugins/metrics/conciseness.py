"""Conciseness from output length (no judge).

Definitions
-----------
* token count = number of ``cl100k_base`` tokens (tiktoken) of the model's
  raw output (option ``source``, default ``response``);
* cut points p20, p40, p60, p80 = ``numpy.percentile(counts, [20, 40, 60,
  80])`` (default linear interpolation) over the counts of one run;
* score = 5 if count <= p20, 4 if <= p40, 3 if <= p60, 2 if <= p80, else 1;
* ``pooled_conciseness(runs)`` takes the cut points from all runs' counts
  together (every model's outputs pooled) and scores each run against them.

Cut points belong to the model's whole output, not to a breakdown cell.
The evaluator calls ``aggregate(all_records)`` first and then
``aggregate(subset)`` for each breakdown value on the same metric instance,
so ``Conciseness.aggregate`` remembers the cut points of the largest record
list it has seen, together with that list's sample keys
``(id, repeat, token count)``.  A later call whose keys are all among the
remembered ones (a subset of that run) is scored against the remembered cut
points; any other call computes its own cut points from its own counts
(and is remembered if it is at least as large).

tiktoken is used offline: unless ``TIKTOKEN_CACHE_DIR`` is already set, it
is pointed at the tokenizer files shipped inside the litellm package
(located without importing litellm).

Private to avhb: a pack imports what it builds on from ``avhb.plugins.metrics``
(its package-level names); importing this module from outside avhb is
deprecated (it still works, but its layout may change).
"""
from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from avhb import COUNT, DIAGNOSTIC, HEADLINE, Aggregate, Metric, SampleRecord, ScoreContext, mean_stderr
from avhb.score.metric_helpers import count, resolve, usable


PERCENTILES = (20, 40, 60, 80)


def ensure_tiktoken_cache() -> str | None:
    """Set ``TIKTOKEN_CACHE_DIR`` to litellm's bundled tokenizer folder if
    unset and that folder exists; return the directory in effect."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return os.environ["TIKTOKEN_CACHE_DIR"]
    spec = importlib.util.find_spec("litellm")
    for root in (spec.submodule_search_locations or []) if spec else []:
        folder = os.path.join(root, "litellm_core_utils", "tokenizers")
        if os.path.isdir(folder):
            os.environ["TIKTOKEN_CACHE_DIR"] = folder
            return folder
    return None


@lru_cache(maxsize=1)
def _encoding() -> Any:
    ensure_tiktoken_cache()
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    """cl100k_base token count (special-token text is counted as text)."""
    return len(_encoding().encode(text, disallowed_special=()))


def cut_points(counts: Sequence[float]) -> list[float]:
    """p20, p40, p60, p80 of the counts (numpy's default linear method)."""
    if len(counts) == 0:
        raise ValueError("no token counts")
    return [float(x) for x in np.percentile(np.asarray(counts, dtype=float), PERCENTILES)]


def score_against(c: float, cuts: Sequence[float]) -> int:
    """5 if c <= p20, 4 if <= p40, 3 if <= p60, 2 if <= p80, else 1."""
    for score, cut in zip((5, 4, 3, 2), cuts):
        if c <= cut:
            return score
    return 1


def conciseness_scores(counts: Sequence[float]) -> list[int]:
    """Scores 1-5 of one run's counts against that run's own cut points."""
    if len(counts) == 0:
        return []
    cuts = cut_points(counts)
    return [score_against(c, cuts) for c in counts]


def pooled_conciseness(runs: Sequence[Sequence[float]]) -> list[list[int]]:
    """Scores of every run against cut points of all runs pooled."""
    pooled = [c for run in runs for c in run]
    if not pooled:
        return [[] for _ in runs]
    cuts = cut_points(pooled)
    return [[score_against(c, cuts) for c in run] for run in runs]


class Conciseness(Metric):
    """Per sample: ``<name>_tokens``; aggregate: ``<name>`` = mean score
    (1-5) against the run's cut points (remembered across breakdown cells,
    see module docstring) and ``<name>_tokens`` = mean token count.
    Samples without output are excluded and counted (``<name>_missing``).
    Option ``source`` (field spec, default "response")."""
    reads = frozenset()  # what aggregate() reads (Metric.reads)

    requires = (("tiktoken", "tiktoken"),)

    name = "conciseness"
    description = "conciseness 1-5: the answer's token count against the run's p20/40/60/80 cut points"
    accepts = {"source": "field spec of the text counted (default response)"}
    outputs = {"tokens": (DIAGNOSTIC, "mean answer length in tokens"), "missing": COUNT,
               "pooled": (HEADLINE, "conciseness with cut points pooled over every run")}

    def __init__(self, name: str | None = None, **options: Any):
        super().__init__(name, **options)
        self._cuts: list[float] | None = None
        self._cut_keys: frozenset[tuple[str, int, int]] = frozenset()
        self._cut_size = 0

    def cut_points_for(self, records: Sequence[SampleRecord]) -> list[float] | None:
        """Cut points for these records: the remembered ones when every
        record is part of the remembered run, else their own (see module
        docstring); None when no record has a token count."""
        present = self._present(records)
        if not present:
            return None
        keys = set(present)
        if self._cuts is not None and keys <= self._cut_keys:
            return self._cuts
        cuts = cut_points([k[2] for k in present])
        if len(present) >= self._cut_size:
            self._cuts, self._cut_keys, self._cut_size = cuts, frozenset(keys), len(present)
        return cuts

    def _present(self, records: Sequence[SampleRecord]) -> list[tuple[str, int, int]]:
        return [(str(r.id), int(r.repeat), int(c)) for r in usable(records)
                if (c := r.scores.get(f"{self.name}_tokens")) is not None]

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        text = resolve(record, self.options.get("source", "response"))
        return {f"{self.name}_tokens": None if text is None else count_tokens(str(text))}

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        counts = [r.scores.get(f"{self.name}_tokens") for r in usable(records)]
        present = [c for c in counts if c is not None]
        cuts = self.cut_points_for(records)
        return {
            self.name: mean_stderr([score_against(c, cuts) for c in present] if cuts else []),
            f"{self.name}_tokens": mean_stderr(present),
            f"{self.name}_missing": count(len(records) - len(present), len(records)),
        }

    def pool(self, runs: list[list[SampleRecord]]) -> list[dict[str, Aggregate]]:
        """Each run's mean score against cut points pooled over all runs
        (ANCHOR's global conciseness), as ``<name>_pooled``."""
        counts = [[c for r in usable(records) if (c := r.scores.get(f"{self.name}_tokens")) is not None]
                  for records in runs]
        return [{f"{self.name}_pooled": mean_stderr(scores)} for scores in pooled_conciseness(counts)]
