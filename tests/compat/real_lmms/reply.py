"""The scripted model's reply to a request of a real lmms-eval task: a pure
function of the text of the last user message (all its text parts, in
order), so two tools that send the same text get the same reply.

Every decision is a SHA-256 of the document's tag (``[key#row]``, see
repos.py) when the text has one, else of the whole text; so the data
generators know the reply a document will get (:func:`planned_letter`...)
and set some gold answers to it and some not: every task scores strictly
between 0 and its maximum.

* The prompt lists options (``A. ...``, ``(B) ...``, ``C) ...``, ``D: ...``
  after a line start or a space): one of their letters, in one of a few
  shapes the tasks' parsers must handle (``B``, ``B.``, ``(B)``,
  ``The answer is B.``).
* Else a yes/no question (``Is``, ``Are``, ``Does``... first, or "yes or
  no" in it): ``Yes``, ``No``, ``yes`` or ``no.``.
* Else a word from :data:`WORDS`.
"""
from __future__ import annotations

import hashlib
import re

from tests.servers.openai_server import echo_last_user

_OPTION = re.compile(r"(?:^|(?<=\s))\(?([A-H])[.):]\s", re.M)
_YES_NO = re.compile(r"^\s*(is|are|does|do|can|was|were|has|have)\b|yes or no", re.I)
_TAG = re.compile(r"\[[a-z0-9_]+#\d+\]")
SHAPES = ("{}", "{}.", "({})", "The answer is {}.")
YES_NO = ("Yes", "No", "yes", "no.")
WORDS = ("yes", "no", "two", "water", "12", "dog", "3.5")


def _pick(seed: str, salt: str, n: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{salt}\0{seed}".encode()).digest()[:8], "big") % n


def _seed(text: str) -> str:
    found = _TAG.search(text)
    return found.group(0) if found else text


def reply_text(text: str) -> str:
    seed = _seed(text)
    letters = sorted(set(_OPTION.findall(text)))
    if len(letters) >= 2:
        return SHAPES[_pick(seed, "shape", len(SHAPES))].format(letters[_pick(seed, "letter", len(letters))])
    if _YES_NO.search(text):
        return YES_NO[_pick(seed, "yn", len(YES_NO))]
    return WORDS[_pick(seed, "word", len(WORDS))]


def reply(body: dict) -> str:
    return reply_text(echo_last_user(body))


# what a tagged document will be answered, for the data generators

def planned_index(tag: str, n_options: int) -> int:
    """The index of the option letter the reply names, for a prompt listing ``n_options`` letters."""
    return _pick(tag, "letter", n_options)


def planned_yes(tag: str) -> bool:
    return YES_NO[_pick(tag, "yn", len(YES_NO))].lower().startswith("yes")


def planned_word(tag: str) -> str:
    return WORDS[_pick(tag, "word", len(WORDS))]
