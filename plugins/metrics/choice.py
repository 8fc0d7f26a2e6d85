"""Multiple-choice answer matching and exact match.

Definitions
-----------
Two rule parsers map a free-text reply to an option letter; neither guesses.

``parse_choice(reply, options)`` — the default (``parser: single``) — commits
only when the reply indicates exactly one option:

1. the reply is NFKC-normalised (full-width ``Ｂ``/``（Ｂ）`` become ASCII);
2. a *letter mention* is an option letter (upper case) standing alone:
   not next to another ASCII letter or digit, nor followed by an apostrophe
   (``(B)``, ``[B]``, ``**B**``, ``B.``, ``B)``, ``Answer: B``,
   ``答案是B``, ``B. blue`` all mention B; ``Bob`` and ``I'm`` do not);
   options keyed by anything but a single letter are matched by their text
   only (rule 5);
3. ``A`` and ``I`` are also English words: a mention followed by a space and
   a lower-case word is the article / pronoun ("A square that is blue.",
   "I think ...") unless that word is one that follows an option name
   (``or``, ``and``, ``is``, ``seems`` ... see ``LETTER_FOLLOWERS``) or the
   text after the letter is that option's own text ("A red car" for
   ``A = red car``);
4. the distinct letters mentioned: exactly one -> that letter; two or more
   ("A or B", "A and B", "A B C D", "I think it's (B), not (A)") -> no
   letter, the reply is *ambiguous*;
5. no letter mentioned and the reply has more than 5 whitespace tokens (as
   MMMU): the options whose text occurs in the reply (case-insensitive, not
   inside a longer word; an option text inside another matched option's
   occurrence does not count): exactly one -> it, several -> ambiguous;
6. otherwise no letter.

``parse_choice_mmmu(reply, options)`` (``parser: mmmu``) is MMMU's
``parse_multi_choice_response`` rule, for reproducing published numbers,
minus its random fallback:

1. strip each of ``, . ! ? ; : '`` once from both ends (in that order) and
   pad the reply with one space on each side;
2. candidates = letters L whose ``"(L)"`` occurs in the reply (case-sensitive);
3. if none: letters whose ``" L "`` occurs;
4. if none and the reply has more than 5 whitespace tokens: letters whose
   option text occurs in the reply (case-insensitive; empty texts ignored);
5. several candidates: the one whose match starts last wins (``rfind`` of the
   form that produced the candidates); a tie goes to the earlier option;
6. no candidate: ``None``.

``resolve_choice`` applies the chosen rule and, when it yields no letter
(ambiguous or none), asks the ``answer_matcher`` judge role with fields
``question``, ``options`` (``"A. text"`` lines) and ``response``, its
parser given the option texts (``option_texts``: a judge reply whose letter
and option text disagree, ``(A) decrease`` when decrease is B, is
unparsable and re-asked); the judge's value must be one of the option
letters, anything else (``None``, ``"Z"``, an unknown letter) leaves the
reply unparsed.  A judge reply that
never parsed (``ok`` False) is a judge failure, also unparsed.  Without a
bound judge (``use_judge: false``) such replies are unparsed.  Unparsed
replies score 0 and are counted.

``exact_match(pred, gold)``: lm-eval's definition: 1.0 iff the strings are
equal after the asked removals (patterns, case, punctuation, digits; white
space is kept); a list of golds matches if any does; ``None`` never matches.

Private to avhb: a pack imports what it builds on from ``avhb.plugins.metrics``
(its package-level names); importing this module from outside avhb is
deprecated (it still works, but its layout may change).
"""
from __future__ import annotations

import json
import re
import string
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Sequence

from avhb import COUNT, Aggregate, Metric, SampleError, SampleRecord, ScoreContext
from avhb.score.metric_helpers import as_text, count, usable, verdict_log


_EDGE_PUNCT = [",", ".", "!", "?", ";", ":", "'"]
PARSERS = ("single", "mmmu")
# Words after which a capital "A" / "I" still names an option ("A or B", "A is right").
LETTER_FOLLOWERS = frozenset("""
or and nor but vs versus then than is was are were be being been seems seem seemed appears appear looks look
would could should might must may can will shall has had have does did do not also alone only either neither
because since as so if when while though although which that with without to through over instead rather
""".split())
_INLINE_OPTION = re.compile(r"^\s*\(?([A-Z])\s*[\).:]\.?\s+(\S.*?)\s*$")


# ---------------------------------------------------------------- options

def options_from(value: Any) -> dict[str, str]:
    """Normalise options given as a dict ``{letter: text}``, a list of texts
    (letters A, B, ... in order) or a JSON string of either."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return inline_options(value)
    if isinstance(value, dict):
        return {str(k).strip(): as_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return {chr(ord("A") + i): as_text(v) for i, v in enumerate(value)}
    return {}


def inline_options(text: str) -> dict[str, str]:
    """Options written one per line inside a question: ``A. x``, ``(A) x``,
    ``(A). x``, ``A) x`` or ``A: x``.  Needs at least two consecutive letters
    starting at A, otherwise returns ``{}``."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        m = _INLINE_OPTION.match(line)
        if m and m.group(1) not in found:
            found[m.group(1)] = m.group(2)
    letters = sorted(found)
    expected = [chr(ord("A") + i) for i in range(len(letters))]
    if len(letters) < 2 or letters != expected:
        return {}
    return found


def format_options(options: dict[str, str]) -> str:
    """``"A. text"`` lines, as sent to the ``answer_matcher`` judge."""
    return "\n".join(f"{k}. {v}" for k, v in options.items())


def gold_letter(target: Any, options: dict[str, str]) -> str | None:
    """The option letter a target names: the letter itself (any case) or
    the exact option text (case-insensitive)."""
    if target is None:
        return None
    text = str(target).strip()
    by_upper = {k.upper(): k for k in options}
    if text.upper() in by_upper:
        return by_upper[text.upper()]
    for k, v in options.items():
        if v.strip().lower() == text.lower() and text:
            return k
    return None


# ---------------------------------------------------------------- parsing

@dataclass
class ChoiceParse:
    """What a rule parser read: ``letter`` (None unless exactly one option
    was indicated) and the distinct ``candidates`` it saw (two or more:
    the reply is ambiguous)."""

    letter: str | None
    candidates: list[str] = field(default_factory=list)

    @property
    def ambiguous(self) -> bool:
        return self.letter is None and len(self.candidates) > 1


def _starts_with_option(text: str, option: str) -> bool:
    """True when ``text`` begins with the option's text as whole words."""
    opt = " ".join(option.lower().split())
    low = " ".join(text.lower().split())
    return bool(opt) and low.startswith(opt) and not low[len(opt):len(opt) + 1].isalnum()


def letter_mentions(reply: str, options: dict[str, str]) -> list[str]:
    """The distinct option letters a reply mentions, in order of first
    mention (rules 1-3 of the module docstring)."""
    text = unicodedata.normalize("NFKC", reply)
    found: list[tuple[int, str]] = []  # (where the letter is first mentioned, the letter)
    for L in options:
        if len(L) != 1 or not L.isalpha():
            continue
        for m in re.finditer(rf"(?<![A-Za-z0-9]){re.escape(L)}(?![A-Za-z0-9'\u2019])", text):
            after = text[m.end():]
            if L in ("A", "I"):
                word = re.match(r"\s+([a-z][a-z\-]*)", after)
                if word and word.group(1) not in LETTER_FOLLOWERS and not _starts_with_option(after.strip(), options[L]):
                    continue  # the article "A ..." / the pronoun "I ..."
            found.append((m.start(), L))
            break
    return [L for _, L in sorted(found)]


def _option_text_matches(reply: str, options: dict[str, str]) -> list[str]:
    """Options whose text occurs in the reply as a phrase (rule 5)."""
    low = unicodedata.normalize("NFKC", reply).lower()
    spans: dict[str, list[tuple[int, int]]] = {}
    for L, text in options.items():
        opt = " ".join(text.strip().lower().split())
        if not opt:
            continue
        head = r"(?<![a-z0-9])" if opt[0].isascii() and opt[0].isalnum() else ""
        tail = r"(?![a-z0-9])" if opt[-1].isascii() and opt[-1].isalnum() else ""
        pattern = head + r"\s+".join(re.escape(w) for w in opt.split()) + tail
        found = [(m.start(), m.end()) for m in re.finditer(pattern, low)]
        if found:
            spans[L] = found
    out = []
    for L, own in spans.items():
        inside = all(any(o0 <= a and b <= o1 and (o1 - o0) > (b - a) for K, theirs in spans.items() if K != L
                         for o0, o1 in theirs) for a, b in own)
        if not inside:
            out.append(L)
    return out


def parse_choice_detail(reply: str | None, options: dict[str, str]) -> ChoiceParse:
    """The default rule (module docstring) with the candidates it saw."""
    if not reply or not options or not reply.strip():
        return ChoiceParse(None)
    letters = letter_mentions(reply, options)
    if not letters and len(reply.split()) > 5:
        letters = _option_text_matches(reply, options)
    return ChoiceParse(letters[0] if len(letters) == 1 else None, letters)


def parse_choice(reply: str | None, options: dict[str, str]) -> str | None:
    """The default rule: the option letter when exactly one option is
    indicated, else None (module docstring)."""
    return parse_choice_detail(reply, options).letter


def parse_choice_mmmu(reply: str | None, options: dict[str, str]) -> str | None:
    """MMMU rule parser without a random fallback (see module docstring)."""
    if not reply or not options:
        return None
    text = reply
    for ch in _EDGE_PUNCT:
        text = text.strip(ch)
    text = f" {text} "
    letters = list(options)
    cands = [L for L in letters if f"({L})" in text]
    form = "bracket"
    if not cands:
        cands = [L for L in letters if f" {L} " in text]
        form = "bare"
    if not cands and len(text.split()) > 5:
        low = text.lower()
        cands = [L for L in letters if options[L].strip() and options[L].strip().lower() in low]
        form = "content"
    if not cands:
        return None
    if len(cands) == 1:
        return cands[0]

    def start(L: str) -> int:
        if form == "bracket":
            return text.rfind(f"({L})")
        if form == "bare":
            return text.rfind(f" {L} ")
        return text.lower().rfind(options[L].strip().lower())

    best = max(range(len(cands)), key=lambda i: (start(cands[i]), -i))
    return cands[best]


def check_parser(name: Any) -> str:
    """The rule parser's name (``single`` or ``mmmu``); anything else is a ``ValueError``."""
    if name not in PARSERS:
        raise ValueError(f"choice parser must be one of {', '.join(PARSERS)}, not {name!r}")
    return name


def rule_parse(reply: str | None, options: dict[str, str], parser: str = "single") -> ChoiceParse:
    """The named rule parser's reading of a reply."""
    if check_parser(parser) == "mmmu":
        return ChoiceParse(parse_choice_mmmu(reply, options))
    return parse_choice_detail(reply, options)


@dataclass
class ChoiceResolution:
    letter: str | None
    by: str | None  # "rules" | "judge" | None
    judge_failed: bool = False
    judgement: dict[str, Any] | None = None
    ambiguous: list[str] | None = None  # the candidates of an ambiguous reply (default parser)

    def as_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"letter": self.letter, "by": self.by, "judge_failed": self.judge_failed}
        if self.ambiguous:
            meta["ambiguous"] = list(self.ambiguous)
        return meta


async def resolve_choice(
    reply: str | None,
    options: dict[str, str],
    question: str,
    ctx: ScoreContext | None,
    use_judge: bool = True,
    role: str = "answer_matcher",
    parser: str = "single",
) -> ChoiceResolution:
    """Rules first (``parser``: ``single`` or ``mmmu``); then the matcher
    judge (when enabled and the reply is not blank); else unparsed."""
    parsed = rule_parse(reply, options, parser)
    if parsed.letter is not None:
        return ChoiceResolution(parsed.letter, "rules")
    ambiguous = parsed.candidates if parsed.ambiguous else None
    judges = getattr(ctx, "judges", None)
    if not use_judge or judges is None or not reply or not reply.strip():
        return ChoiceResolution(None, None, ambiguous=ambiguous)
    verdict = await judges.ask(role, {"question": question, "options": format_options(options), "response": reply},
                               option_texts=options)
    log = verdict_log(role, verdict)
    if not verdict.ok:
        return ChoiceResolution(None, "judge", judge_failed=True, judgement=log, ambiguous=ambiguous)
    picked = gold_letter(verdict.value, options) if isinstance(verdict.value, str) and len(verdict.value.strip()) == 1 else None
    return ChoiceResolution(picked, "judge" if picked else None, judgement=log, ambiguous=ambiguous)


def record_options(record: SampleRecord, options_field: str = "options", question_field: str = "question") -> dict[str, str]:
    """Options of a record: ``meta["options"]`` (set by a task hook), else
    ``doc[options_field]``, else options written inline in the question."""
    for value in (record.meta.get("options"), record.doc.get(options_field)):
        opts = options_from(value)
        if opts:
            return opts
    return inline_options(as_text(record.doc.get(question_field)))


# ---------------------------------------------------------------- exact match

def normalize_text(text: str, ignore_case: bool = True, ignore_punctuation: bool = False) -> str:
    """White space collapsed, lower-cased, optionally punctuation removed
    (the answer normalisation of ``pairs``' default correctness rule)."""
    out = " ".join(text.split())
    if ignore_case:
        out = out.lower()
    if ignore_punctuation:
        out = out.translate(str.maketrans("", "", string.punctuation)).strip()
        out = " ".join(out.split())
    return out


def exact_match(pred: Any, gold: Any, ignore_case: bool = False, ignore_punctuation: bool = False,
                regexes_to_ignore: list[str] | None = None, ignore_numbers: bool = False) -> float:
    """lm-eval's ``exact_match``: 1.0 iff ``pred`` equals ``gold`` (or any
    gold of a list) after, in this order, every pattern of
    ``regexes_to_ignore`` is removed from both, both are lower-cased
    (``ignore_case``), ASCII punctuation is removed (``ignore_punctuation``)
    and digits are removed (``ignore_numbers``).  White space is kept: " Paris"
    is not "Paris" unless a filter strips it.  None never matches."""
    if pred is None or gold is None:
        return 0.0
    golds = gold if isinstance(gold, (list, tuple)) else [gold]

    def norm(text: Any) -> str:
        out = str(text)
        for pattern in regexes_to_ignore or ():
            out = re.sub(pattern, "", out)
        if ignore_case:
            out = out.lower()
        if ignore_punctuation:
            out = out.translate(str.maketrans("", "", string.punctuation))
        if ignore_numbers:
            out = out.translate(str.maketrans("", "", string.digits))
        return out

    p = norm(pred)
    return float(any(p == norm(g) for g in golds if g is not None))


# ---------------------------------------------------------------- metrics

class ExactMatch(Metric):
    """1 when the answer equals the target (lm-eval's exact_match), else 0.

    Options (lm-eval's, with its defaults; see :func:`exact_match`): the
    ones in ``accepts`` (defaults in ``option_defaults``).  Case-sensitive unless ``ignore_case:
    true``.  Compares ``record.extracted`` (or the raw response when no
    filter ran) with ``record.target``."""

    name = "exact_match"
    description = "1 when the answer equals the target (lm-eval's exact_match: case-sensitive, white space kept, " \
        "unless the options say otherwise), else 0"
    accepts = {"ignore_case": "compare without case (default false, as lm-eval)",
               "ignore_punctuation": "drop punctuation before comparing (default false)",
               "regexes_to_ignore": "a list of regular expressions removed from both sides before comparing",
               "ignore_numbers": "drop digits before comparing (default false)"}
    option_defaults = {"ignore_case": False, "ignore_punctuation": False, "regexes_to_ignore": None,
                       "ignore_numbers": False}

    def __init__(self, name: str | None = None, **options: Any):
        super().__init__(name, **options)  # an option not in ``accepts`` is refused there
        self.settings = {**self.option_defaults, **options}
        ignore = self.settings["regexes_to_ignore"]
        if ignore is not None and (not isinstance(ignore, list) or not all(isinstance(x, str) for x in ignore)):
            raise ValueError("regexes_to_ignore must be a list of regular expressions")

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        if record.outputs.get("choices") and "loglikelihoods" in record.outputs:  # multiple_choice: lm-eval's is_greedy
            from .loglik import choice_results

            _, greedy, _, gold, _ = choice_results(record, self.name)
            golds = gold if isinstance(gold, list) else [gold]
            return {self.name: float(any(greedy[g] for g in golds))}
        pred = record.extracted if record.extracted is not None else record.response
        return {self.name: exact_match(pred, record.target, **self.settings)}


class ChoiceAccuracy(Metric):
    """Accuracy of a multiple-choice answer.

    Options: ``options_field`` ("options"), ``question_field`` ("question"),
    ``use_judge`` (True), ``role`` ("answer_matcher"), ``parser``
    ("single", the default rule; "mmmu" for MMMU's rule).  Uses the letter the
    ``choice_letter`` filter already resolved (``record.meta["choice"]``)
    when present, else resolves ``record.extracted`` (a string) or the raw
    response.  Unparsed replies score 0, get ``meta["unparsed"] = True`` and
    are counted in ``<name>_unparsed``; judge failures additionally in
    ``<name>_judge_failures``.  A target that is not an option is a
    :class:`SampleError`.
    """
    reads = frozenset({"meta"})  # what aggregate() reads (Metric.reads)

    name = "choice_accuracy"
    description = "share of answers naming the right option (rules, then the answer_matcher judge; never a guess)"
    accepts = {"options_field": "the doc field holding the options (default options)",
               "question_field": "the doc field holding the question (default question)",
               "use_judge": "ask the matcher judge when the rules find no letter (default true)",
               "role": "the matcher judge role (default answer_matcher)",
               "parser": "the rule parser: single (default) or mmmu"}
    outputs = {"unparsed": (COUNT, "replies no rule or judge could map to an option (scored 0)"),
               "judge_failures": (COUNT, "answer_matcher replies that never parsed")}

    def __init__(self, name: str | None = None, **options: Any):
        super().__init__(name, **options)
        check_parser(options.get("parser", "single"))

    @property
    def needs_judges(self) -> tuple[str, ...]:  # type: ignore[override]  # over Metric's attribute: roles from the options
        return (self.options.get("role", "answer_matcher"),) if self.options.get("use_judge", True) else ()

    async def score(self, record: SampleRecord, ctx: ScoreContext) -> dict[str, Any]:
        o = self.options
        options = record_options(record, o.get("options_field", "options"), o.get("question_field", "question"))
        if not options:
            raise SampleError(f"sample {record.id}: no answer options found")
        gold = gold_letter(record.target, options)
        if gold is None:
            raise SampleError(f"sample {record.id}: target {record.target!r} is not one of the options {sorted(options)}")
        prior = record.meta.get("choice")
        if isinstance(prior, dict) and "letter" in prior:
            letter = prior["letter"]
        else:
            text = record.extracted if isinstance(record.extracted, str) and record.extracted.strip() else record.response
            question = as_text(record.doc.get(o.get("question_field", "question")))
            res = await resolve_choice(text, options, question, ctx, o.get("use_judge", True), o.get("role", "answer_matcher"),
                                       o.get("parser", "single"))
            record.meta["choice"] = res.as_meta()
            if res.judgement is not None:
                record.judgements[self.name] = res.judgement
            letter = res.letter
        if letter is None:
            record.meta["unparsed"] = True
        return {self.name: float(letter == gold)}

    takes_aggregation = True  # its own value is Metric.aggregate's

    def aggregate(self, records: Sequence[SampleRecord]) -> dict[str, Aggregate]:
        out = super().aggregate(records)
        ok = usable(records)
        out[f"{self.name}_unparsed"] = count(sum(bool(r.meta.get("unparsed")) for r in ok), len(ok))
        out[f"{self.name}_judge_failures"] = count(
            sum(bool((r.meta.get("choice") or {}).get("judge_failed")) for r in ok), len(ok))
        return out
