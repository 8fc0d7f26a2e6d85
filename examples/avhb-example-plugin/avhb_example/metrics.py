"""Token F1 between the (filtered) response and the target, SQuAD-style:
lower-case, punctuation and articles removed, bag-of-words overlap."""
import string
from collections import Counter

from avhb import Metric


def normalize(text: str) -> list[str]:
    text = "".join(ch for ch in str(text).lower() if ch not in string.punctuation)
    return [w for w in text.split() if w not in ("a", "an", "the")]


def token_f1(prediction: str, reference: str) -> float:
    pred, ref = normalize(prediction), normalize(reference)
    if not pred and not ref:
        return 1.0
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


class TokenF1(Metric):
    name = "token_f1"
    description = "SQuAD-style token F1 between the answer and the reference"

    async def score(self, record, ctx):
        value = record.extracted if record.extracted is not None else record.response
        return {self.name: token_f1(value or "", record.target or "")}
