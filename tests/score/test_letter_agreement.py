"""A letter with text beside it, when the question's option texts are
known (avhb/score/judge_replies.py, ``letter``): the text must be that option's
(normalised), else the reply is unparsable -- re-asked, then counted --
never read by its letter.  The cases are MathVista answer extractions and
LLMBar's verdict line; each expected value is worked out by hand from the
options given."""
from __future__ import annotations

import pytest

from avhb.model.backend import Backend, BackendSpec
from avhb.model.messages import Response
from avhb.score.judges import JudgeRole, Judges
from avhb.score.judge_replies import letter

NUMBERS = {"A": "3", "B": "4", "C": "5", "D": "6"}
ROOTS = {"A": "\u221a2", "B": "2", "C": "2\u221a{2}", "D": "4"}
FISH = {"A": "decrease", "B": "skyrocket", "C": "stay the same", "D": "cannot be determined"}


def _read(reply: str, texts: dict[str, str] | None, letters: str = "ABCD") -> str | None:
    options = {"letters": letters, "none": "Z"}
    if texts is not None:
        options["option_texts"] = texts
    return letter(reply, options)


@pytest.mark.parametrize("reply, texts, expected", [
    # the text beside the letter is another value than the letter's option: no answer
    ("(D) 4\u221a3", NUMBERS, None),  # D is 6; 4√3 is none of 3/4/5/6
    ("Extracted answer: (D) 4\u221a3", NUMBERS, None),
    ("D. 4\u221a3", NUMBERS, None),
    ("(C) 2\u221a{5}", ROOTS, None),  # C is 2√{2}
    ("Answer: C) 2\u221a{5}", ROOTS, None),
    ("(B) The population of the fish would decrease", FISH, None),  # B is skyrocket
    ('{"answer": "B The population would decrease"}', FISH, None),
    ("(B) 4", NUMBERS, "B"),  # its own text: read
    ("(A) 4", NUMBERS, None),  # another option's text
    # the agreeing replies are still read
    ("(D) 6", NUMBERS, "D"),
    ("Extracted answer: (D) 6.", NUMBERS, "D"),
    ("(C) 2\u221a{2}", ROOTS, "C"),
    ("**C)** 2\u221a{2}", ROOTS, "C"),
    ("(B) Skyrocket.", FISH, "B"),
    ("The answer is (B) skyrocket", FISH, "B"),
    ("B", FISH, "B"),
    ("Answer: B", FISH, "B"),
    ("skyrocket", FISH, "B"),  # exactly an option's text
    ("6", NUMBERS, "D"),
    ("Z) none of the options", NUMBERS, "Z"),  # the none letter has no text to agree with
    # without the option texts nothing is held to them: the letter is read
    ("(D) 4\u221a3", None, "D"),
    ("(B) The population of the fish would decrease", None, "B"),
])
def test_a_letter_is_read_only_with_its_own_options_text(reply, texts, expected):
    assert _read(reply, texts) == expected


POINTS = {"A": "(0, 2)", "B": "(-3, 0)", "C": "(3, 1)"}
SIGNED = {"A": "4", "B": "-4", "C": "1.5", "D": ".5"}


@pytest.mark.parametrize("reply, texts, expected", [
    # a minus sign or a decimal point before a number is part of the value, not punctuation around it
    ("(3, 0)", POINTS, None),  # B is (-3, 0): no option's text
    ("(B) (3, 0)", POINTS, None),
    ("(B) (-3, 0)", POINTS, "B"),
    ("(-3, 0)", POINTS, "B"),
    ("[-3, 0]", POINTS, "B"),  # the sign is the one next to the number, whatever bracket is before it
    ("(A) -4", SIGNED, None),  # A is 4
    ("(B) 4", SIGNED, None),  # B is -4
    ("Answer: B) 4", SIGNED, None),
    ('{"answer": "B 4"}', SIGNED, None),
    ("(B) -4", SIGNED, "B"),
    ("B. -4.", SIGNED, "B"),
    ("-4", SIGNED, "B"),
    ("4", SIGNED, "A"),
    ("(D) 5", SIGNED, None),  # D is .5
    ("(D) .5", SIGNED, "D"),
    (".5", SIGNED, "D"),
    ("A - 4", SIGNED, "A"),  # a dash between the letter and its text is a separator
])
def test_a_sign_or_decimal_point_belongs_to_the_value(reply, texts, expected):
    assert _read(reply, texts) == expected


@pytest.mark.parametrize("texts", [None, {"A": "The capital of France is Paris.", "B": "Paris is in Italy."}])
def test_llmbar_output_verdicts_read_as_their_letter(texts):
    assert _read("Output (a) is better.", texts, letters="AB") == "A"
    assert _read("Output (b)", texts, letters="AB") == "B"
    assert _read("After weighing both, Output (b) is more helpful.", texts, letters="AB") == "B"


@pytest.mark.parametrize("reply, expected", [
    # what follows Output (x) is a remark; another option's text there, alone or leading it, contradicts it
    ("Output (a) Paris is in Italy.", None),
    ("Output (a) Paris is in Italy and nowhere else", None),
    ("Output (a) Paris is in Italy, it says", None),
    ("Output (b) Paris is in Italy.", "B"),  # its own text
    ("Output (a) is better than Paris is in Italy", "A"),  # a remark that only mentions it
    ("Output (a)\nParis is in Italy, it says", "A"),  # the remark is the rest of its line
])
def test_a_remark_after_output_x_may_not_lead_with_another_options_text(reply, expected):
    texts = {"A": "The capital of France is Paris.", "B": "Paris is in Italy."}
    assert _read(reply, texts, letters="AB") == expected


@pytest.mark.parametrize("reply, texts, expected", [
    ("Answer: B\nThe others are wrong.", FISH, "B"),  # the text beside a letter is the rest of its line
    ("Answer: (B)\nThe others are wrong.", FISH, "B"),
    ("Answer: A\nFinal answer: B", FISH, "B"),  # a final label outweighs an earlier one
    ("Answer: A\nFinal answer: B", None, "B"),
    ("Answer: A\n[[B]]", None, "B"),  # the last line's [[B]] (a tag and a line's letter) is one final form
    ("Answer: A\n**B**", None, None),  # a letter alone on the last line disagreeing with the label
])
def test_where_a_letter_and_its_text_are_read(reply, texts, expected):
    assert _read(reply, texts) == expected


class _Replies(Backend):
    """A judge that answers each question from a list, in order."""

    replies: list[str] = []
    asked: list = []

    async def generate(self, request):
        _Replies.asked.append(request.messages[-1].text)
        return Response(text=_Replies.replies[len(_Replies.asked) - 1])


class _Journal:
    def __init__(self):
        self.entries = {}

    def get(self, kind, key):
        return self.entries.get(key)

    def put(self, kind, key, record):
        self.entries[key] = record
        return record


async def _ask(replies: list[str]):
    _Replies.replies, _Replies.asked = replies, []
    role = JudgeRole("answer_matcher", "Which option does this answer? {{response}}", parser="letter",
                     parser_options={"letters": "ABCD", "none": "Z"}, retries=1)
    pool = Judges({"answer_matcher": [BackendSpec("replies", "j")]}, _Journal(), lambda spec: _Replies(spec))
    judges = pool.for_task("t", {"answer_matcher": role})
    verdict = await judges.ask("answer_matcher", {"response": "4 times the root of 3"}, option_texts=NUMBERS)
    return verdict, judges


async def test_a_contradicting_extraction_is_asked_again_then_counted():
    verdict, judges = await _ask(["(D) 4\u221a3", "(D) 4\u221a3"])
    assert len(_Replies.asked) == 2 and "option letter only" in _Replies.asked[1]  # re-asked with the format hint
    assert verdict.value is None and not verdict.ok and judges.failures["answer_matcher"] == 1
    verdict, judges = await _ask(["(D) 4\u221a3", "D"])  # the re-ask answered: read
    assert verdict.value == "D" and verdict.ok and judges.failures["answer_matcher"] == 0
