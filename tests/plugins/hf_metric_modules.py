"""Small Hugging Face ``evaluate`` metric modules the tests write to disk
(the Hub's metric scripts are not reachable here).  Each is a real
``evaluate.Metric`` subclass loaded by ``evaluate.load(path)``.

- ``EXACT_MATCH``: the interface of the Hub's ``exact_match`` (features
  ``predictions``/``references`` strings; options ``regexes_to_ignore``,
  ``ignore_case``, ``ignore_punctuation``, ``ignore_numbers``, all off by
  default; result ``{"exact_match": share of equal pairs}``), written here.
- ``TOKEN_F1``: a corpus-level metric: micro-averaged token F1 over the whole
  corpus (true positives, predicted and reference tokens summed over samples
  before dividing), which is not the mean of per-sample F1s; results
  ``precision``, ``recall``, ``f1``; option ``lowercase``.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

EXACT_MATCH = '''
import re
import string

import datasets
import evaluate


class ExactMatch(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="share of predictions equal to their reference", citation="", inputs_description="",
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}))

    def _compute(self, predictions, references, regexes_to_ignore=None, ignore_case=False,
                 ignore_punctuation=False, ignore_numbers=False):
        def norm(text):
            for pattern in regexes_to_ignore or []:
                text = re.sub(pattern, "", text)
            if ignore_case:
                text = text.lower()
            if ignore_punctuation:
                text = text.translate(str.maketrans("", "", string.punctuation))
            if ignore_numbers:
                text = text.translate(str.maketrans("", "", string.digits))
            return text

        same = [norm(p) == norm(r) for p, r in zip(predictions, references)]
        return {"exact_match": sum(same) / len(same)}
'''

TOKEN_F1 = '''
from collections import Counter

import datasets
import evaluate


class TokenF1(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="corpus micro token F1", citation="", inputs_description="",
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}))

    def _compute(self, predictions, references, lowercase=False):
        tp = n_pred = n_ref = 0
        for p, r in zip(predictions, references):
            if lowercase:
                p, r = p.lower(), r.lower()
            pc, rc = Counter(p.split()), Counter(r.split())
            tp += sum((pc & rc).values())
            n_pred += sum(pc.values())
            n_ref += sum(rc.values())
        precision = tp / n_pred if n_pred else 0.0
        recall = tp / n_ref if n_ref else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"precision": precision, "recall": recall, "f1": f1, "note": "micro"}
'''


def write_modules(folder: Path) -> Path:
    """``folder/metrics/exact_match/exact_match.py`` (a module folder, as
    the Hub lays them out) and ``folder/metrics/token_f1.py``."""
    (folder / "metrics" / "exact_match").mkdir(parents=True, exist_ok=True)
    (folder / "metrics" / "exact_match" / "exact_match.py").write_text(EXACT_MATCH)
    (folder / "metrics" / "token_f1.py").write_text(TOKEN_F1)
    return folder / "metrics"


def token_f1(pairs: list[tuple[str, str]], lowercase: bool = False) -> dict[str, float]:
    """The same definition in plain Python, for hand checks and bootstraps."""
    tp = n_pred = n_ref = 0
    for p, r in pairs:
        if lowercase:
            p, r = p.lower(), r.lower()
        pc, rc = Counter(p.split()), Counter(r.split())
        tp += sum((pc & rc).values())
        n_pred += sum(pc.values())
        n_ref += sum(rc.values())
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_ref if n_ref else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}
