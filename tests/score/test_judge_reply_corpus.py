"""The judge-reply corpus (``judge_replies/*.yaml``): replies in the styles
judges write (reasoning then verdict, markdown, JSON fenced and bare, tags,
refusals, hedges, non-English verdicts, truncated replies, several verdicts
that disagree, JSON examples quoted before the verdict), each read by every
parser its file lists, against the expected parse (null: unparsable)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from avhb.score.judge_replies import BUILTIN

CORPUS = Path(__file__).parent / "judge_replies"


def _load() -> list[tuple[str, int, dict, list[str], dict]]:
    out = []
    for path in sorted(CORPUS.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for i, entry in enumerate(doc["replies"]):
            out.append((path.stem, i, entry, list(doc["parsers"]), dict(doc.get("defaults") or {})))
    return out


ENTRIES = _load()


def _options(parser: str, entry: dict, defaults: dict) -> dict:
    return {**(defaults.get(parser) or {}), **((entry.get("options") or {}).get(parser) or {})}


@pytest.mark.parametrize("name,index,entry,parsers,defaults", ENTRIES,
                         ids=[f"{n}-{i}" for n, i, *_ in ENTRIES])
def test_every_parser_reads_the_reply_as_expected(name, index, entry, parsers, defaults):
    expect = entry.get("expect") or {}
    assert set(expect) <= set(parsers), f"{name}[{index}] expects a parser its file does not run"
    got = {p: BUILTIN[p](entry["reply"], _options(p, entry, defaults)) for p in parsers}
    wanted = {p: expect.get(p) for p in parsers}
    assert got == wanted, f"{name}[{index}] {entry['reply']!r}"


def test_corpus_size_and_breadth():
    """At least 300 replies; every built-in parser receives many, and each
    parser meets both replies it reads and replies it must refuse."""
    assert len(ENTRIES) >= 300
    received: Counter[str] = Counter()
    parsed: Counter[str] = Counter()
    for _, _, entry, parsers, _ in ENTRIES:
        for p in parsers:
            received[p] += 1
            parsed[p] += (entry.get("expect") or {}).get(p) is not None
    assert set(received) == set(BUILTIN)
    for p in BUILTIN:
        assert parsed[p] >= 10 and received[p] - parsed[p] >= 10, (p, received[p], parsed[p])


def corpus_counts() -> dict[str, tuple[int, int]]:
    """parser -> (replies it receives, replies it must read); printed for reports."""
    received: Counter[str] = Counter()
    parsed: Counter[str] = Counter()
    for _, _, entry, parsers, _ in ENTRIES:
        for p in parsers:
            received[p] += 1
            parsed[p] += (entry.get("expect") or {}).get(p) is not None
    return {p: (received[p], parsed[p]) for p in sorted(received)}


if __name__ == "__main__":  # python -m tests.score.test_judge_reply_corpus: the counts
    print(f"{len(ENTRIES)} replies")
    for p, (n, k) in corpus_counts().items():
        print(f"{p:12} receives {n:4}  reads {k:4}  refuses {n - k:4}")
