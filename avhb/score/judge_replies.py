"""Strict parsers for judge replies.  Each returns the parsed value or None;
None means 'unparsable' (the judge is re-asked with the parser's
``format_hint``, then the failure is counted).  Nothing here guesses.

A reply is read as a careful human reads it: by its *verdict*, wherever it
stands, not by the first word or number that looks like one.

Verdicts
--------
Every parser collects the reply's verdict forms, each with its position and
a strength:

* **final** (3): a double-bracket tag (``[[8]]``, ``Rating: [[8]]``,
  ``I would rate it a [[10]]``, ``[[Yes]]``, ``[[A>B]]``), ``\\boxed{...}``,
  ``[RESULT] 4`` (Prometheus), or a label marked final (``Final verdict:``,
  ``Overall score:``, ``最终答案：``, ``réponse finale :``);
* **labelled** (2): a verdict label and its value (``Verdict: Yes``,
  ``**Answer:** Yes``, ``## Rating`` over ``**4**``, ``> Judgement: 4``,
  ``GRADE: C``, ``Output (a)``, ``The answer is B``, ``评分：8分``), a JSON
  object holding one of the parser's keys (fenced or bare, anywhere), the
  reply's leading word or value when it is the verdict (``Yes, ...``,
  ``2 - correct``, ``(B) blue``), or a line that is nothing but a value
  (``**No**`` as the last line);
* **bare** (1): ``rating_json``'s numbered first line (``4. Faithful``, as
  ANCHOR's upstream reads a leading digit; as often a list item).

The last verdict decides.  An earlier verdict at least as strong that
disagrees with it makes the reply ambiguous (None): ``Verdict: Yes`` then
``Verdict: No``, ``[[A>B]] ... [[B>A]]``, ``{"rating": 2} {"rating": 5}``.
A weaker earlier one is overridden: a JSON example quoted in the reasoning
(``{"rating": 5}``) before the final ``Rating: [[8]]`` reads 8.  A verdict
whose value is not valid (off the scale, fractional, a range ``4-5``, a
hedge ``Yes and no``, a letter whose option text names another option)
counts as a verdict that agrees with nothing.  Text inside a JSON object is
data: labels inside its strings are not verdicts.

Markdown (bold, italics, code, headings, quotes), full-width forms
(``：``, ``［［８］］``) and quotes around a label or a value are read
through.  A leading yes/no is a verdict only as a verdict: not as a
determiner or an idiom (``No doubt, ...``, ``No contradiction found``,
``No, wait``), not as a hedge (``Yes and no``, ``Yes, partially``).  Labels
name verdicts, not arbitrary properties: ``Contradiction: No`` is no
verdict (it would read backwards).

Languages: verdict labels and yes/no words are read in English, Chinese,
Japanese, Korean, French, Spanish, Portuguese, Italian, German and Russian
(``答案：是``, ``はい``, ``예``, ``Oui``, ``Sí``, ``Sim``, ``Sì``, ``Ja``,
``Да``...).  ``si`` without its accent (Spanish *if*) is read only alone on
a line or after a label; the French/Spanish/Portuguese ``Note:``/``Nota:``
are remarks in English, so they are no score labels.

Values
------
Scale parsers (``rating_json``, ``integer``, ``score_0_2``): a whole number
on the scale: ``0.5``, ``4.5`` or ``7`` on a 1-5 scale is a failure, never
truncated or clipped; ``4.0`` is 4; ``k/N`` and ``k out of N`` are read
only when ``N`` is the scale's maximum; a JSON value may be a number or a
string holding one; booleans are not numbers.  ``score_0_2`` and
``integer`` do not read a first line such as ``1. The response ...``.

Every parser receives the task's option texts, when it has them, as
``options["option_texts"]`` (``{"A": "increase", "B": "decrease"}``): the
``letter`` parser refuses a reply whose letter has text beside it other
than its option's (normalised: ``(A) decrease`` when A is increase, ``(D)
4√3`` when D is 6; re-asked, then counted) and reads a reply that is
exactly one option's text as that option.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Iterable

# --------------------------------------------------------------- verdict core

BARE, LABELLED, FINAL = 1, 2, 3


class _Invalid:
    """A verdict form whose value is not a valid answer (agrees with nothing)."""

    def __repr__(self) -> str:
        return "INVALID"


INVALID: Any = _Invalid()


@dataclass(frozen=True)
class Candidate:
    """One verdict form in a reply: the span of its value, its strength
    (``BARE``/``LABELLED``/``FINAL``) and its value (``INVALID`` when the
    form is there but its value is not an answer)."""

    start: int
    end: int
    level: int
    value: Any


def decide(candidates: Iterable[Candidate]) -> Any:
    """The reply's verdict (module docstring): the last candidate's value,
    unless it is invalid or an earlier candidate at least as strong
    disagrees; None when there is no candidate."""
    merged = _merge(candidates)
    if not merged:
        return None
    last = merged[-1]
    if last.value is INVALID:
        return None
    for c in merged[:-1]:
        if c.level >= last.level and (c.value is INVALID or c.value != last.value):
            return None
    return last.value


def _merge(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Candidates in reply order, forms that overlap (``Rating: [[8]]`` is
    a label and a tag) merged into the strongest; overlapping forms that
    read different values are one invalid candidate."""
    out: list[Candidate] = []
    for c in sorted(candidates, key=lambda c: (c.start, -c.end)):
        if out and c.start < out[-1].end:
            prev = out[-1]
            value = prev.value if (prev.value is not INVALID and c.value is not INVALID and prev.value == c.value) \
                else INVALID
            out[-1] = Candidate(prev.start, max(prev.end, c.end), max(prev.level, c.level), value)
        else:
            out.append(c)
    return out


def normalize(reply: str | None) -> str:
    """NFKC (full-width ``：［］８`` become ``:[]8``), unified line ends."""
    text = unicodedata.normalize("NFKC", reply or "")
    return text.replace("\r\n", "\n").replace("\r", "\n")


# --------------------------------------------------------------- JSON

def json_objects(text: str) -> Iterable[dict[str, Any]]:
    """Every JSON object in ``text``, in order of its opening brace (nested
    objects too, after the object that holds them)."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested past the decoder's depth
            continue
        if isinstance(obj, dict):
            yield obj


def first_json_value(text: str, keys: Iterable[str]) -> tuple[bool, Any]:
    """(found, value) of the first JSON object in ``text`` that has one of
    ``keys`` (case-insensitive); the first listed key wins inside it."""
    wanted = [k.lower() for k in keys]
    for obj in json_objects(text):
        lowered = {str(k).lower(): v for k, v in obj.items()}
        for k in wanted:
            if k in lowered:
                return True, lowered[k]
    return False, None


def json_spans(text: str) -> list[tuple[int, int, Any]]:
    """The outermost JSON objects and arrays of objects in ``text``:
    (start, end, value), in order, never overlapping."""
    decoder = json.JSONDecoder()
    out: list[tuple[int, int, Any]] = []
    pos = 0
    for m in re.finditer(r"\{|\[(?=\s*\{)", text):  # objects, and arrays that open with one
        if m.start() < pos:
            continue
        try:
            obj, end = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) or (isinstance(obj, list) and any(isinstance(o, dict) for o in obj)):
            out.append((m.start(), end, obj))
            pos = end
    return out


def _find_key(obj: Any, wanted: tuple[str, ...]) -> tuple[bool, Any]:
    """The first of ``wanted`` (case-insensitive) in ``obj`` or the objects
    inside it, breadth first; the first listed key wins in one object."""
    queue = [obj]
    while queue:
        cur = queue.pop(0)
        if isinstance(cur, dict):
            lowered = {str(k).lower(): v for k, v in cur.items()}
            for k in wanted:
                if k in lowered:
                    return True, lowered[k]
            queue.extend(v for v in cur.values() if isinstance(v, (dict, list)))
        elif isinstance(cur, list):
            queue.extend(v for v in cur if isinstance(v, (dict, list)))
    return False, None


class _Reply:
    """A reply prepared for reading: normalised text, its JSON objects, and
    the text with them blanked (labels inside JSON strings are data)."""

    def __init__(self, reply: str | None):
        self.text = normalize(reply)
        self.json = json_spans(self.text)
        chars = list(self.text)
        for start, end, _ in self.json:
            for i in range(start, end):
                if chars[i] != "\n":
                    chars[i] = " "
        self.masked = "".join(chars)

    def json_candidates(self, keys: tuple[str, ...], read: Callable[[Any], Any]) -> list[Candidate]:
        out = []
        for start, end, obj in self.json:
            found, value = _find_key(obj, keys)
            if found:
                got = read(value)
                out.append(Candidate(start, end, LABELLED, INVALID if got is None else got))
        return out

    def lines(self) -> list[tuple[int, str]]:
        """(offset, line) of the masked text's non-blank lines."""
        out, pos = [], 0
        for line in self.masked.split("\n"):
            if line.strip():
                out.append((pos, line))
            pos += len(line) + 1
        return out

    def edge_lines(self) -> list[tuple[int, str]]:
        """The first and the last non-blank line (one when they are the same)."""
        lines = self.lines()
        if not lines:
            return []
        return [lines[0]] if len(lines) == 1 else [lines[0], lines[-1]]


# --------------------------------------------------------------- labels

_DECOR = r"[\s*_`\"'>#\u201c\u201d\u2018\u2019]*"  # markdown and quotes around labels and values
_LEAD = r"[ \t*_`\"'>#\u201c\u201d\u2018\u2019]*"  # the same at a line's start, within the line
_OPEN = r"[\s*_`\"'\[(\u201c\u2018]*"  # before a value (blank lines included)
_FINAL_PREFIX = r"(?:(?:my|the|your)\s+)?(?:final|overall|ultimate)\s+|最终|最終|최종|総合|综合|итоговый\s+|окончательный\s+" \
                r"|endgültige[rs]?\s+|finale[rs]?\s+"
_FINAL_SUFFIX = r"\s+(?:final(?:e|es)?|finaux|definitiva?)"
# between a label and its value; spaces are bounded so that a run of white space costs linear time
# 答案是B, 答案：B (a full-width colon)
_SEP = r"[*_]*[ \t]{0,4}(?:\([^)\n]{0,40}\))?[*_\"']*[ \t]{0,4}(?:[:=\uff1a\uff1d]|[-\u2013\u2014](?=\s)|[是为為は](?![否]))"

# labels of a yes/no verdict ("response" is not one: a judge quoting the response would give a verdict)
VERDICT_LABELS = (
    "verdict", "answer", "judgement", "judgment", "decision", "conclusion", "result",
    "答案", "回答", "结论", "結論", "判断", "判斷", "判定", "裁决", "结果", "答え", "解答", "정답", "답변", "답",
    "결론", "판정", "판단", "réponse", "reponse", "décision", "jugement", "veredicto", "respuesta", "conclusión",
    "decisión", "juicio", "veredito", "resposta", "conclusão", "decisão", "verdetto", "risposta", "conclusione",
    "decisione", "giudizio", "urteil", "antwort", "entscheidung", "fazit", "ergebnis", "вердикт", "ответ",
    "решение", "вывод", "заключение",
)
# labels of a score
SCALE_LABELS = (
    "rating", "score", "grade", "judgement", "judgment",
    "评分", "評分", "分数", "分數", "得分", "打分", "评价", "評價", "总分", "評価", "評点", "点数", "スコア", "得点",
    "점수", "평가", "평점", "évaluation", "puntuación", "puntuacion", "calificación", "calificacion", "puntaje",
    "bewertung", "punktzahl", "pontuação", "pontuacao", "avaliação", "punteggio", "valutazione", "voto",
    "оценка", "балл",
)
LETTER_LABELS = ("answer", "option", "letter", "choice", "selection", "grade", "output", "extracted answer",
                 "correct option", "correct answer", "best option", "best answer", "答案", "选项", "選項", "回答",
                 "答え", "選択肢", "정답", "답", "선택", "réponse", "respuesta", "opción", "resposta", "opção",
                 "risposta", "opzione", "antwort", "ответ", "вариант")


def _alternation(labels: Iterable[str]) -> str:
    """Labels as one regex alternation, longest first; a label that starts
    with an ASCII letter must not follow one (``rating`` in ``overrating``)."""
    alts = []
    for label in sorted(set(labels), key=len, reverse=True):
        body = r"\s+".join(re.escape(w) for w in label.split())
        alts.append(rf"(?<![A-Za-z]){body}" if label[0].isascii() and label[0].isalpha() else body)
    return "|".join(alts)


def _uniquify(pattern: str) -> str:
    """Python regexes refuse a group name twice: number the repeats."""
    seen: dict[str, int] = {}

    def rename(m: re.Match[str]) -> str:
        name = m.group(1)
        seen[name] = seen.get(name, 0) + 1
        return f"(?P<{name}>" if seen[name] == 1 else f"(?P<{name}_{seen[name]}>"

    return re.sub(r"\(\?P<([a-z]+)>", rename, pattern)


def label_regex(labels: Iterable[str], value: str, phrase: bool = True) -> re.Pattern[str]:
    """One verdict label's forms: ``LABEL: VALUE`` (``=``, a spaced dash or
    a CJK copula also separate; a parenthesis such as ``(0-2)`` may follow
    the label), ``LABEL`` alone on its line (a heading, a bold line) with the
    value on the next non-blank line, and, with ``phrase``, ``the LABEL is
    VALUE``.  Named groups (numbered from the second form on, see
    :func:`_matched`): ``final`` / ``suffix`` (marked final) and ``value``'s
    own groups."""
    alts = _alternation(labels)
    label = rf"(?P<final>{_FINAL_PREFIX})?(?:{alts})(?P<suffix>{_FINAL_SUFFIX})?"
    inline = rf"{label}{_SEP}{_OPEN}(?P<v>{value})"
    heading = rf"^{_LEAD}{label}[*_: \t]*\n{_OPEN}(?P<v>{value})"
    forms = [heading, inline]
    if phrase:
        forms.append(rf"(?<![A-Za-z])(?:the|my|your)\s+{label}\s+(?:is|would\s+be|will\s+be):?{_OPEN}(?P<v>{value})")
    return re.compile(_uniquify("|".join(f"(?:{f})" for f in forms)), re.IGNORECASE | re.MULTILINE)


# --------------------------------------------------------------- numbers

_NUM = r"[-+]?\d+(?:[.,]\d+)?"
_SCALE_VALUE = rf"(?P<n>{_NUM})(?:\s*(?:/|out\s+of)\s*(?P<d>\d+))?"
_RANGE_AFTER = re.compile(r"^\s*(?:-|\u2013|\u2014|to|or|~)\s*\d|^[^\n]*?\bor\s+(?:a\s+)?\d")  # 4-5, 4 to 5, "5 (...) or 3"
_MORE_DIGITS = re.compile(r"^[\d.,]*\d")


def _in_range(value: int, options: dict[str, Any]) -> int | None:
    lo, hi = options.get("min"), options.get("max")
    if lo is not None and value < lo:
        return None
    if hi is not None and value > hi:
        return None
    return value


def whole_number(value: Any, options: dict[str, Any], denominator: Any = None) -> int | None:
    """``value`` (a number, or a string holding one) as an int on the scale
    ``options`` (``min``/``max``); None when it is fractional, off the
    scale, a boolean, not a number, or written ``k/N`` with ``N`` other than
    the scale's maximum."""
    if isinstance(value, bool) or value is None:
        return None
    if denominator is not None and (options.get("max") is None or int(denominator) != int(options["max"])):
        return None
    if isinstance(value, str):
        text = value.strip().strip("*_` ")
        m = re.fullmatch(rf"({_NUM})\s*(?:/|out\s+of)\s*(\d+)", text, re.IGNORECASE)
        if m and denominator is None:
            return whole_number(m.group(1), options, m.group(2))
        if not re.fullmatch(_NUM, text):
            return None
        value = float(text.replace(",", "."))
    if not isinstance(value, (int, float)) or value != value:  # NaN
        return None
    if float(value) != int(value):
        return None
    return _in_range(int(value), options)


def _scale_at(text: str, m: re.Match[str], options: dict[str, Any], group: str = "v") -> tuple[Any, int]:
    """(value or INVALID, end) of a scale value matched by ``_SCALE_VALUE``
    inside ``m``'s group ``group``."""
    start, end = m.span(group)
    inner = re.match(_SCALE_VALUE, text[start:end], re.IGNORECASE)
    assert inner is not None
    after = text[end:]
    if _MORE_DIGITS.match(after) or _RANGE_AFTER.match(after):
        return INVALID, end  # 4.5 split oddly, 4-5, 4 or 5: a hedge
    got = whole_number(inner.group("n"), options, inner.group("d"))
    return (INVALID if got is None else got), end


_TAG_NUMBER = re.compile(rf"\[\[\s*[*_]*(?P<v>{_SCALE_VALUE})[*_]*\s*\]\]", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{\s*(?P<v>[^{}\n]{1,40}?)\s*\}")
_RESULT = re.compile(rf"\[RESULT\]\s*(?P<v>{_SCALE_VALUE})", re.IGNORECASE)
_LEADING = re.compile(rf"^{_OPEN}(?P<v>{_SCALE_VALUE})[*_`\"'\])]*(?P<rest>.*)$", re.IGNORECASE)

_SCALE_LABEL = label_regex(SCALE_LABELS, _SCALE_VALUE)


def _scale_candidates(r: _Reply, options: dict[str, Any], keys: tuple[str, ...], numbered_ok: bool) -> list[Candidate]:
    text = r.masked
    out = r.json_candidates(keys, lambda v: whole_number(v, options))
    m: re.Match[str] | None  # a match in the loops below, a line's match (or none) after
    for pattern in (_TAG_NUMBER, _RESULT):
        for m in pattern.finditer(text):
            value, end = _scale_at(text, m, options)
            out.append(Candidate(m.start(), m.end(), FINAL, value))
    for m in _BOXED.finditer(text):
        got = whole_number(m.group("v"), options)
        out.append(Candidate(m.start(), m.end(), FINAL, INVALID if got is None else got))
    for m in _SCALE_LABEL.finditer(text):
        g = _matched(m, "v")
        assert g is not None  # the pattern matched one of its v groups
        final = bool(_matched(m, "final") or _matched(m, "suffix"))
        value, end = _scale_at(text, m, options, g)
        out.append(Candidate(m.start(g), end, FINAL if final else LABELLED, value))
    for offset, line in r.edge_lines():
        m = _LEADING.match(line)
        if not m:
            continue
        first = offset == r.lines()[0][0]
        rest = m.group("rest")
        value, _ = _scale_at(line, m, options)
        whole = not rest.strip(" *_`.!\"')]")
        of = re.match(r"^\s*(?:out\s+of|of)\s+(\d+)\s*[.!*_]*\s*$", rest, re.IGNORECASE)
        if of and m.group("d") is None:
            got = whole_number(m.group("n"), options, of.group(1))
            out.append(Candidate(offset + m.start("v"), offset + m.end(), LABELLED, INVALID if got is None else got))
        elif whole:
            out.append(Candidate(offset + m.start("v"), offset + m.end("v"), LABELLED, value))
        elif not first:
            continue  # a last line with text after its number is prose
        elif rest[:1].isalnum() or re.match(r"^[.,]\d", rest) or rest[:1] in "%":
            continue  # "2nd", "3 issues", "50%"
        elif re.match(r"^[*_`]*\s*[.)]\s*\S", rest):
            if numbered_ok:  # "4. Faithful": ANCHOR's upstream reads the leading digit
                out.append(Candidate(offset + m.start("v"), offset + m.end("v"), BARE, value))
        elif re.match(r"^[*_`]*\s*(?:[-\u2013\u2014:,;(]|(?:because|since|as|given|points?|pts|stars?)\b)", rest,
                      re.IGNORECASE):  # "2 - correct", "**2** because ...", not "3 issues found"
            out.append(Candidate(offset + m.start("v"), offset + m.end("v"), LABELLED, value))
    return out


def _matched(m: re.Match[str], base: str) -> str | None:
    """The name of the group ``base`` (or a numbered repeat) that took part in ``m``."""
    for name in m.re.groupindex:
        if (name == base or re.fullmatch(rf"{base}_\d+", name)) and m.group(name) is not None:
            return name
    return None


def read_scale(reply: str, options: dict[str, Any], keys: tuple[str, ...], labels: tuple[str, ...] = (),
               numbered_ok: bool = False) -> int | None:
    """A whole number on the scale (module docstring); ``keys``: the JSON
    keys read; ``numbered_ok``: a first line ``4. text`` reads as 4."""
    return decide(_scale_candidates(_Reply(reply), options, keys, numbered_ok))


def rating_json(reply: str, options: dict[str, Any]) -> int | None:
    """ANCHOR's judge reply: JSON ``{"rating": k}`` (anywhere; upstream
    anchors it at the start), a rating label (``Rating: k``, ``[[k]]``...),
    or a leading ``k`` on the first line (``4``, ``**4**``, ``4. Faithful``,
    as upstream's leading digit).  ``min``/``max`` bound k (default 1..5)."""
    return read_scale(reply, {"min": 1, "max": 5, **options}, ("rating",), numbered_ok=True)


def integer(reply: str, options: dict[str, Any]) -> int | None:
    """A whole number: JSON ``{"score": k}`` / ``{"rating": k}``, a score
    label (``Score: k``, ``Judgement: k``, ``[[k]]``...), or a bare ``k``
    on the first or last line; ``min``/``max`` bound it when given."""
    return read_scale(reply, options, ("score", "rating", "grade"))


def score_0_2(reply: str, options: dict[str, Any]) -> int | None:
    """A 0/1/2 score: JSON ``{"score": k}``, a score label (``Score: k``,
    ``Rating``, ``Grade``...), ``[[k]]``, or a bare digit on the first or
    last line."""
    return read_scale(reply, {"min": 0, "max": 2}, ("score", "rating", "grade"))


# --------------------------------------------------------------- tags

_TAG = re.compile(r"\[\[\s*([^\[\]\n]{1,60}?)\s*\]\]")


def _tag_key(raw: str) -> str:
    return " ".join(raw.strip().strip("*_`\"'").split()).lower()


def tag(reply: str, options: dict[str, Any]) -> Any:
    """``[[Fully supported]]``-style tags; ``values`` maps a tag (lower-case)
    to its value, and only listed tags are verdicts (others are ignored);
    without ``values`` any tag is, its text lower-cased."""
    values = {_tag_key(str(k)): v for k, v in (options.get("values") or {}).items()}
    r = _Reply(reply)
    out = []
    for m in _TAG.finditer(r.masked):
        key = _tag_key(m.group(1))
        if not values:
            out.append(Candidate(m.start(), m.end(), FINAL, key))
        elif key in values:
            out.append(Candidate(m.start(), m.end(), FINAL, values[key]))
    return decide(out)


# --------------------------------------------------------------- pairwise

_PAIR_CANON = {"A>>B": "A>>B", "B<<A": "A>>B", "A>B": "A>B", "B<A": "A>B", "A=B": "A=B", "B=A": "A=B",
               "A==B": "A=B", "TIE": "A=B", "C": "A=B", "B>A": "B>A", "A<B": "B>A", "B>>A": "B>>A", "A<<B": "B>>A",
               "A": "A>B", "B": "B>A"}
PAIRWISE_VERDICTS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
_LLMBAR = re.compile(rf"^{_LEAD}output[ \t]*[:\-]?[ \t]*\([ \t]*([ab])[ \t]*\)[*_`.! \t]*$", re.IGNORECASE | re.MULTILINE)


def pairwise(reply: str, options: dict[str, Any]) -> Any:
    """A pairwise verdict: ``[[A>>B]]``, ``[[A>B]]``, ``[[A=B]]``,
    ``[[B>A]]``, ``[[B>>A]]`` (arena-hard; ``<`` forms and ``B=A`` read the
    same way), MT-bench's ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (tie), or
    LLMBar's ``Output (a)`` / ``Output (b)`` on a line of its own (an
    explanation naming both outputs is no verdict).  Returns the canonical form
    (one of ``PAIRWISE_VERDICTS``), or ``values[form]`` when ``values``
    maps them.  Tags that disagree are ambiguous (None)."""
    values = options.get("values") or {}
    r = _Reply(reply)
    out = []
    for m in _TAG.finditer(r.masked):
        key = re.sub(r"\s+", "", m.group(1).strip("*_`\"'")).upper()
        canon = _PAIR_CANON.get(key)
        out.append(Candidate(m.start(), m.end(), FINAL, canon if canon else INVALID))
    for m in _LLMBAR.finditer(r.masked):
        out.append(Candidate(m.start(), m.end(), LABELLED, "A>B" if m.group(1).lower() == "a" else "B>A"))
    got = decide(out)
    if got is None or not values:
        return got
    return values.get(got)


# --------------------------------------------------------------- yes / no

YES_WORDS = ("yes", "yeah", "yep", "是的", "是", "对", "對", "はい", "예", "네", "oui", "sí", "sim", "sì", "ja",
             "да", "correct")
NO_WORDS = ("no", "nope", "不是", "否", "不对", "不對", "不", "いいえ", "아니요", "아니오", "아니", "non", "não",
            "nao", "nein", "нет", "incorrect")
_WORD_VALUE = {**{w: "yes" for w in YES_WORDS}, **{w: "no" for w in NO_WORDS}}
_ACCENTLESS = ("si",)  # Spanish "if": read only alone or after a label
_YN = "|".join(re.escape(w) for w in sorted((*_WORD_VALUE, *_ACCENTLESS), key=len, reverse=True))
_YN_VALUE = rf"(?P<w>{_YN})"
_NOT_A_VERDICT_AFTER = re.compile(r"^[*_\"']*\s*,?\s*(?:wait|actually|hold on|hmm|let me|let's|sorry|well)\b",
                                  re.IGNORECASE)
_HEDGE_AFTER = re.compile(rf"^[*_\"']*\s*(?:(?:and|or|&)\s+[*_]*(?:{_YN})\b|/\s*(?:{_YN})\b)", re.IGNORECASE)
_HEDGES = re.compile(r"\b(?:partially|partly|somewhat|sort\s+of|kind\s+of|maybe|perhaps|possibly|probably|"
                     r"mostly|in\s+part|not\s+(?:entirely|fully|completely|sure|certain)|unclear|uncertain)\b",
                     re.IGNORECASE)
# after a leading "No", words that make it a verdict ("No it is not"); any other word makes it a determiner
_NO_PRONOUNS = frozenset("it its it's the this that they there i not he she we you".split())
_YES_NO_LABEL = label_regex(VERDICT_LABELS, _YN_VALUE)
_YES_NO_JSON = ("verdict", "answer", "final_answer", "final answer", "judgement", "judgment", "decision",
                "conclusion", "result", "label")
_TAG_YN = re.compile(rf"\[\[\s*[*_]*(?P<w>{_YN})[*_.!]*\s*\]\]", re.IGNORECASE)
_LINE_YN = re.compile(rf"^{_DECOR}[\[(]*(?P<w>{_YN})[\])*_`\"'.!\u3002\uff01\s]*$", re.IGNORECASE)
_LEADING_YN = re.compile(rf"^{_DECOR}[\[(]*(?P<w>{_YN})", re.IGNORECASE)
_ANSWERED_YN = re.compile(rf"\?[*_]*{_OPEN}(?P<w>{_YN})", re.IGNORECASE)  # "Is it supported? Yes."


def _yes_no_word(word: str, after: str, labelled: bool) -> Any:
    """The value of a yes/no word followed by ``after`` (its line's rest):
    'yes'/'no', None when the word is no verdict there (a determiner, an
    idiom, a self-correction), INVALID for a hedge."""
    low = word.lower()
    value = _WORD_VALUE.get(low)
    if low in _ACCENTLESS:
        value = "yes"
        if not labelled and after.strip(" *_`\"'.!"):
            return None  # "Si la respuesta ..." is "If the answer ..."
    if value is None:
        return None
    if word[-1].isascii() and re.match(r"^[A-Za-z0-9]", after):
        return None  # part of a longer word ("Nothing", "Yesterday")
    if not word[0].isascii() and low not in ("sí", "sì", "não", "да", "нет") and re.match(r"^[^\s\W]", after) \
            and not after.startswith(("的",)):
        return None  # "是否", "예를": a word that goes on
    if _HEDGE_AFTER.match(after):
        return INVALID  # "Yes and no", "Yes/No"
    if _NOT_A_VERDICT_AFTER.match(after):
        return None  # "No, wait"
    if low in ("correct", "incorrect") and not labelled:
        return None  # a leading "Correct" may start a sentence about something else
    clause = re.split(r"[.;!?\n\u3002]", after, maxsplit=1)[0]
    if value == "no" and word[0].isascii():
        nxt = re.match(r"^\s+([A-Za-z][A-Za-z']*)", after)
        if nxt and nxt.group(1).lower() not in _NO_PRONOUNS:
            return INVALID if labelled else None  # "No doubt", "No contradiction found"
    if _HEDGES.search(clause):
        return INVALID  # "Yes, partially"
    return value


def yes_no(reply: str, options: dict[str, Any]) -> str | None:
    """'yes' or 'no' (module docstring): a verdict label (``Verdict: Yes``,
    ``**Answer:** No``, ``## Final Answer`` over ``Yes``, ``答案：是``,
    ``The answer is no``), ``[[Yes]]``, a JSON ``{"verdict": "yes"}`` (also
    ``answer``, ``decision``...; true/false too), the leading word when it
    is the verdict (``Yes, ...``, ``No.``), or a line that is only Yes or
    No.  The last verdict decides; verdicts that disagree, hedges and
    idioms are unparsable."""
    r = _Reply(reply)
    text = r.masked

    def from_json(value: Any) -> Any:
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, str):
            m = re.match(rf"^\s*[*_\"'`]*({_YN})", normalize(value), re.IGNORECASE)
            if m:
                got = _yes_no_word(m.group(1), value[m.end():].lstrip("*_`\"'"), labelled=True)
                return None if got is INVALID else got
        return None

    out = r.json_candidates(_YES_NO_JSON, from_json)
    m: re.Match[str] | None  # a match in the loops below, a line's match (or none) after
    for m in _TAG_YN.finditer(text):
        got = _yes_no_word(m.group("w"), "", labelled=True)
        out.append(Candidate(m.start(), m.end(), FINAL, INVALID if got is None else got))
    for m in _YES_NO_LABEL.finditer(text):
        g = _matched(m, "w")
        assert g is not None  # the pattern matched one of its w groups
        after = text[m.end(g):].split("\n", 1)[0]
        got = _yes_no_word(m.group(g), after.lstrip("*_`\"')]"), labelled=True)
        if got is None:
            continue
        final = bool(_matched(m, "final") or _matched(m, "suffix"))
        out.append(Candidate(m.start(g), m.end(g), FINAL if final else LABELLED, got))
    for m in _ANSWERED_YN.finditer(text):
        after = text[m.end("w"):].split("\n", 1)[0]
        got = _yes_no_word(m.group("w"), after.lstrip("*_`\"')]"), labelled=False)
        if got is not None:
            out.append(Candidate(m.start("w"), m.end("w"), LABELLED, got))
    lines = r.lines()
    for offset, line in lines:
        m = _LINE_YN.match(line)
        if m:
            got = _yes_no_word(m.group("w"), "", labelled=True)
            if got is not None:
                out.append(Candidate(offset + m.start("w"), offset + m.end("w"), LABELLED, got))
    if lines:
        offset, line = lines[0]
        m = _LEADING_YN.match(line)
        if m:
            got = _yes_no_word(m.group("w"), line[m.end("w"):].lstrip("*_`\"')]"), labelled=False)
            if got is not None:
                out.append(Candidate(offset + m.start("w"), offset + m.end("w"), LABELLED, got))
    return decide(out)


# --------------------------------------------------------------- letters

_LETTER_TAIL = r"(?=[*_`\"'\u201d]*(?:\s*$|[.):\],;!]|\s+[-\u2013\u2014]\s)|[*_`\"'\u201d]*\s*\n)"
_LETTER_VALUE = rf"(?P<l>[A-Za-z]){_LETTER_TAIL}"
_LETTER_LABEL = label_regex(LETTER_LABELS, _LETTER_VALUE)
_OUTPUT_PAREN = re.compile(r"(?<![A-Za-z])(?:output|option|answer|choice)\s+\(\s*(?P<l>[A-Za-z])\s*\)",
                           re.IGNORECASE)
_TAG_LETTER = re.compile(r"\[\[\s*[*_]*\(?(?P<l>[A-Za-z])\)?[*_.]*\s*\]\]")
_BOXED_LETTER = re.compile(r"\\boxed\{\s*(?:\\text\{)?\(?(?P<l>[A-Za-z])\)?\}?\s*\}")
_LINE_LETTER = re.compile(rf"^{_DECOR}[\[(]*(?P<l>[A-Za-z])[\])*_`\"'\u201d]*(?P<rest>(?:[.):\]][*_`]*|\s+[-\u2013\u2014]\s)"
                          rf"(?:\s*\S.*)?|[.!\s]*)$")
_LETTER_JSON = ("answer", "letter", "choice", "option", "final_answer", "final answer")


_OPTION_EDGE = " .,:;!?()[]-"


def _option_norm(text: str) -> str:
    """An option's text for comparing: lower case, without quotes and
    emphasis marks, punctuation and brackets at either end dropped; a minus
    sign or a decimal point before a number is the number's (``(-1, 0)`` is
    not ``(1, 0)``, ``.5`` is not ``5``)."""
    text = normalize(text).lower().strip()
    text = re.sub(r"[*_`\"'\u201c\u201d\u2018\u2019]", "", text)
    core = text.strip(_OPTION_EDGE)
    lead = text[:len(text) - len(text.lstrip(_OPTION_EDGE))]
    if lead[-1:] in ("-", ".") and core[:1].isdigit():
        core = lead[-1] + core
    return " ".join(core.split())


def _check_letter(letter: str, tail: str, options: dict[str, Any], remark: bool = False) -> Any:
    """``letter`` (upper case) if it is allowed and the text beside it (the
    rest of its line, ``tail``) agrees with its option; INVALID otherwise.
    With the option texts known, a text beside a letter that has one is
    that option's text as the reply gives it, and must be it (normalised:
    ``(D) 4√3`` when D is 6, ``(B) ... would decrease`` when B is
    "skyrocket", are no answer); beside a letter without a text of its own
    (the ``none`` letter), and a ``remark`` (what follows LLMBar's
    ``Output (a)``: "is better"), the text only may not name another
    option."""
    got = letter.upper()
    allowed = options.get("letters")
    if allowed and got not in allowed and got != options.get("none"):
        return INVALID
    texts = {str(k).upper(): _option_norm(str(v)) for k, v in (options.get("option_texts") or {}).items()}
    said = _option_norm(tail)
    if not said or not texts:
        return got
    own = texts.get(got, "")
    if own and not remark:
        return got if said == own else INVALID

    def names(option: str) -> bool:
        return bool(option) and (said == option or said.startswith(option + " ") or said.startswith(option + ","))

    if not names(own) and any(names(t) for k, t in texts.items() if k != got):
        return INVALID  # "Output (a) decrease" when decrease is option B
    return got


def _text_option(value: str, options: dict[str, Any]) -> str | None:
    """The option whose text ``value`` is, exactly (normalised); None when
    none or several are."""
    said = _option_norm(value)
    hits = [str(k).upper() for k, v in (options.get("option_texts") or {}).items() if said and _option_norm(str(v)) == said]
    return hits[0] if len(hits) == 1 else None


def letter(reply: str, options: dict[str, Any]) -> str | None:
    """One option letter: alone on the first or last line (``B``, ``(B)``,
    ``[B]``, ``**B**``, ``B.``, ``B. blue car``), after a label (``Answer:
    B``, ``The answer is **B**``, ``Extracted answer: B``, ``GRADE: C``,
    ``Output (a)``, ``答案：B``), ``[[B]]``, ``\\boxed{B}``, or a JSON
    ``{"answer": "B"}`` (also ``letter``/``choice``/``option``); with
    ``option_texts``, also a reply that is exactly one option's text.
    ``letters`` restricts the allowed set (default A-Z); ``none`` names the
    'no option matches' letter (e.g. Z), returned as is.  With
    ``option_texts``, a letter with text beside it that is not its option's
    text (:func:`_check_letter`), and letters that disagree, are
    unparsable."""
    r = _Reply(reply)
    text = r.masked

    def from_json(value: Any) -> Any:
        if not isinstance(value, str):
            return None
        m = re.fullmatch(r"\s*[(\[*]*([A-Za-z])[)\]*.]*(?:\s+(.*))?", value, re.DOTALL)
        if m:
            got = _check_letter(m.group(1), m.group(2) or "", options)
            return None if got is INVALID else got
        return _text_option(value, options)

    out = r.json_candidates(_LETTER_JSON, from_json)
    m: re.Match[str] | None  # a match in the loops below, a line's match (or none) after
    for pattern in (_TAG_LETTER, _BOXED_LETTER):
        for m in pattern.finditer(text):
            out.append(Candidate(m.start(), m.end(), FINAL, _check_letter(m.group("l"), "", options)))
    for m in _LETTER_LABEL.finditer(text):
        g = _matched(m, "l")
        assert g is not None  # the pattern matched one of its l groups
        tail = text[m.end(g):].split("\n", 1)[0]
        final = bool(_matched(m, "final") or _matched(m, "suffix"))
        out.append(Candidate(m.start(g), m.end(g), FINAL if final else LABELLED,
                             _check_letter(m.group(g), _strip_tail(tail), options)))
    for m in _OUTPUT_PAREN.finditer(text):
        tail = text[m.end():].split("\n", 1)[0]
        out.append(Candidate(m.start("l"), m.end("l"), LABELLED,
                             _check_letter(m.group("l"), tail, options, remark=True)))
    for offset, line in r.edge_lines():
        m = _LINE_LETTER.match(line)
        if m:
            tail = _strip_tail(m.group("rest"))
            # "B" alone, or with its own option's text, is an answer; "(A) is wrong" may be a remark on A
            level = LABELLED if not tail or _text_option(tail, options) == m.group("l").upper() else BARE
            out.append(Candidate(offset + m.start("l"), offset + m.end("l"), level,
                                 _check_letter(m.group("l"), tail, options)))
        elif options.get("option_texts"):
            got = _text_option(line, options)
            if got is not None:
                out.append(Candidate(offset, offset + len(line), LABELLED, got))
    return decide(out)


def _strip_tail(tail: str) -> str:
    """The text after a letter, without its closing marks (``) decrease`` -> ``decrease``); a
    minus sign or decimal point before a digit is the value's (``) -4`` -> ``-4``)."""
    return re.sub(r"^[\])*_`\"'\u201d]*\s*(?:[):\]]|[.\-\u2013\u2014](?!\d))?[*_`]*\s*", "", tail)


# --------------------------------------------------------------- registry

BUILTIN: dict[str, Callable[[str, dict[str, Any]], Any]] = {
    "rating_json": rating_json,
    "integer": integer,
    "score_0_2": score_0_2,
    "tag": tag,
    "yes_no": yes_no,
    "letter": letter,
    "pairwise": pairwise,
}

# the re-ask lines, as attributes of the parser functions (the hook's contract); mypy allows no attribute on a function
rating_json.format_hint = ('Reply with the JSON object {"rating": k}, where k is a whole number '  # type: ignore[attr-defined]
                           'on the scale you were given (no fractions).')
integer.format_hint = "Reply with one whole number on the scale you were given, first, on its own line."  # type: ignore[attr-defined]
score_0_2.format_hint = "Reply with a single digit, 0, 1 or 2, on the first line (no fractions)."  # type: ignore[attr-defined]
tag.format_hint = "Reply with your verdict in double brackets, e.g. [[Yes]]."  # type: ignore[attr-defined]
yes_no.format_hint = "Reply with Yes or No first."  # type: ignore[attr-defined]
letter.format_hint = "Reply with the option letter only, on the first line."  # type: ignore[attr-defined]
pairwise.format_hint = ("End your reply with one verdict in double brackets: [[A>>B]], [[A>B]], [[A=B]], "  # type: ignore[attr-defined]
                        "[[B>A]] or [[B>>A]].")


def get_parser(name: str) -> Callable[[str, dict[str, Any]], Any]:
    """A built-in parser, or one a plugin registers (``avhb_judge_parsers``)."""
    if name in BUILTIN:
        return BUILTIN[name]
    from avhb.registry import get_registry

    return get_registry().load("judge_parsers", name)


def parser_names() -> list[str]:
    from avhb.registry import get_registry

    return sorted(set(BUILTIN) | set(get_registry().names("judge_parsers")))


def format_hint(name: str) -> str:
    return getattr(get_parser(name), "format_hint", None) or "Reply in the format the instructions ask for."


def parse_json_lenient(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def answer_space(parser: str, options: dict[str, Any]) -> list[str] | None:
    """The closed set of valid replies for a parser, when it has one.  Sent as
    ``Request.choices`` so that option-scoring judges (log-likelihood models,
    baselines) pick a valid reply; chat APIs ignore it.  A plugin parser may
    define ``answer_space(options)``."""
    if parser not in BUILTIN:
        own = getattr(get_parser(parser), "answer_space", None)
        return own(options) if own else None
    if parser == "score_0_2":
        return ["0", "1", "2"]
    if parser == "yes_no":
        return ["Yes", "No"]
    if parser == "rating_json":
        lo, hi = options.get("min", 1), options.get("max", 5)
        return [f'{{"rating": {k}}}' for k in range(lo, hi + 1)]
    if parser == "integer" and options.get("min") is not None and options.get("max") is not None:
        return [str(k) for k in range(options["min"], options["max"] + 1)]
    if parser == "letter" and options.get("letters"):
        return list(options["letters"]) + ([options["none"]] if options.get("none") else [])
    if parser == "tag" and options.get("values"):
        return [f"[[{k}]]" for k in options["values"]]
    if parser == "pairwise":
        return [f"[[{k}]]" for k in PAIRWISE_VERDICTS]
    return None
