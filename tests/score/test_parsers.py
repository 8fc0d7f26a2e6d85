"""Judge-reply parsers read the forms judges write (JSON anywhere, markdown
emphasis, ``Label: value``), by the verdict's position (the last verdict
decides; verdicts that disagree are unparsable), and never truncate, clip
or guess a value.  The breadth of styles is the corpus
(``test_judge_reply_corpus.py``)."""
import pytest

from avhb.score.judge_replies import (format_hint, integer, letter, rating_json, score_0_2, whole_number,
                                yes_no)


@pytest.mark.parametrize("reply,expected", [
    ('{"rating": 4}', 4),
    ('{\n  "rating": 4\n}', 4),  # spread over lines (ANCHOR's upstream extract_score accepts it)
    ('```json\n{"rating": 3}\n```', 3),
    ('Here is my rating: {"rating": 5} -- it is faithful.', 5),  # anywhere in the reply
    ('{"Rating": "2"}', 2),  # key case and a string value
    ('{"reason": "close paraphrase"}\n{"rating": 2}', 2),  # the first object that has the key
    ('{"rating": 2}\n{"rating": 5}', None),  # two verdicts that disagree: ambiguous, re-asked
    ('{"rating": 4.0}', 4),
    ('Rating: 4', 4), ('**Rating:** 4', 4), ('"rating": 4,', 4),  # label forms, broken JSON
    ('4', 4), ('**4**', 4), ('4 - faithful', 4), ('4/5', 4), ('3 out of 5', 3),
    ('4. The answer matches the reference.', 4),  # a leading digit, as ANCHOR's upstream reads it
    # failures: fractional, off the scale, wrong denominator, numbered list, no number, booleans
    ('{"rating": 4.5}', None), ('{"rating": 7}', None), ('{"rating": 0}', None), ('{"rating": true}', None),
    ('{"rating": "good"}', None), ('4.5', None), ('Rating: 3.5', None), ('4/10', None), ('3 out of 10', None),
    ('4.5. Mostly faithful.', None), ('2nd attempt', None), ('The answer is faithful.', None), ('', None),
])
def test_rating_json(reply, expected):
    assert rating_json(reply, {}) == expected


def test_rating_json_scale_options():
    assert rating_json('{"rating": 7}', {"min": 1, "max": 10}) == 7
    assert rating_json("7/10", {"min": 1, "max": 10}) == 7
    assert rating_json('{"rating": 0}', {"min": 0, "max": 3}) == 0


@pytest.mark.parametrize("reply,expected", [
    ("2", 2), ("0", 0), ("**2**", 2), ("**Score:** 2", 2), ("Rating: 2", 2), ("Score: 1", 1), ("Score = 0", 0),
    ("Final score: 2", 2), ("Score (0-2): 1", 1), ("2/2", 2), ("2 - correct, same answer", 2), ("2.", 2),
    ('{"score": 1}', 1), ('The grade follows.\n```json\n{"score": 2, "why": "same"}\n```', 2),
    ("The response names the same festival.\nScore: 2", 2),
    # failures: fractional (never truncated), off the scale, numbered lists, prose
    ("0.5", None), ("1.5", None), ("Score: 0.5", None), ('{"score": 1.5}', None), ("3", None), ("-1", None),
    ("Score: 3", None), ("2/5", None), ("1. The response ...", None), ("I cannot decide", None), ("", None),
])
def test_score_0_2(reply, expected):
    assert score_0_2(reply, {}) == expected


def test_integer():
    assert integer('{"score": 12}', {"min": 0, "max": 100}) == 12
    assert integer("Score: 12.5", {}) is None
    assert integer("**7**", {}) == 7
    assert integer("7", {"min": 1, "max": 5}) is None


@pytest.mark.parametrize("reply,expected", [
    ("B", "B"), ("(B)", "B"), ("[B]", "B"), ("**B**", "B"), ("B.", "B"), ("b", "B"), ("Answer: B", "B"),
    ("The answer is **B**", "B"), ("B. blue car", "B"), ('{"answer": "C"}', "C"), ("Z", "Z"),
    ("I think B", None), ("A cat", None), ('{"answer": "BC"}', None), ("", None),
])
def test_letter(reply, expected):
    assert letter(reply, {}) == expected


def test_letter_allowed_set():
    assert letter("E", {"letters": "ABCD", "none": "Z"}) is None
    assert letter("Z", {"letters": "ABCD", "none": "Z"}) == "Z"


@pytest.mark.parametrize("reply,expected", [
    ("Yes", "yes"), ("**No**", "no"), ("Answer: Yes", "yes"), ("**Verdict:** no", "no"), ("[[yes]]", "yes"),
    ("Maybe", None), ("", None),
])
def test_yes_no(reply, expected):
    assert yes_no(reply, {}) == expected


# issue 23: the first "Label: yes|no" used to decide (main read all three as "no")
@pytest.mark.parametrize("reply,expected", [
    ("Explanation: no contradiction found.\n\nVerdict: Yes", "yes"),
    ("**Reasoning:** No contradiction: the evidence says 1999, as claimed.\n\n**Answer:** Yes", "yes"),
    ("No doubt, it is entailed.", None),  # an idiom, not a verdict: re-asked
])
def test_yes_no_reads_the_verdict_not_the_first_yes_or_no(reply, expected):
    assert yes_no(reply, {}) == expected


def test_a_json_example_before_the_verdict_does_not_decide():
    reply = 'An answer worth {"rating": 5} would name the year.\n\nRating: [[8]]'
    assert rating_json(reply, {"min": 1, "max": 10}) == 8 and integer(reply, {}) == 8
    assert rating_json('{"rating": 5}\n\nRating: 8', {"min": 1, "max": 10}) is None  # equally strong, disagree


def test_letter_and_option_text_must_agree():
    texts = {"option_texts": {"A": "increase", "B": "decrease"}}
    assert letter("(A) decrease", texts) is None
    assert letter("(B) decrease", texts) == "B" and letter("decrease", texts) == "B"
    assert letter("(A) decrease", {}) == "A"  # without the texts nothing contradicts it


def test_pairwise_parser_and_its_answer_space():
    from avhb.score.judge_replies import answer_space, pairwise

    assert pairwise("My final verdict is: [[B>>A]]", {}) == "B>>A"
    assert pairwise("[[A>B]] ... [[B>A]]", {}) is None
    assert answer_space("pairwise", {}) == ["[[A>>B]]", "[[A>B]]", "[[A=B]]", "[[B>A]]", "[[B>>A]]"]
    assert all(pairwise(r, {}) is not None for r in answer_space("pairwise", {}))


def test_whole_number():
    assert whole_number("4", {"min": 1, "max": 5}) == 4
    assert whole_number(4.0, {"min": 1, "max": 5}) == 4
    assert whole_number(4.5, {"min": 1, "max": 5}) is None
    assert whole_number("4,5", {"min": 1, "max": 5}) is None
    assert whole_number(True, {"min": 0, "max": 2}) is None
    assert whole_number(float("nan"), {}) is None
    assert whole_number("4", {"min": 1, "max": 5}, denominator="5") == 4
    assert whole_number("4", {"min": 1, "max": 5}, denominator="10") is None


def test_format_hints_name_the_forms_that_parse():
    # each re-ask hint describes a reply its parser accepts
    assert "JSON" in format_hint("rating_json") and rating_json('{"rating": 3}', {}) == 3
    assert "0, 1 or 2" in format_hint("score_0_2") and score_0_2("1", {}) == 1
    assert "letter" in format_hint("letter")
    assert "fraction" in format_hint("rating_json") and "fraction" in format_hint("score_0_2")


@pytest.mark.parametrize("parser,options", [
    ("score_0_2", {}), ("yes_no", {}), ("rating_json", {}), ("rating_json", {"min": 1, "max": 10}),
    ("integer", {"min": 0, "max": 3}), ("letter", {"letters": "ABCD", "none": "Z"}),
    ("tag", {"values": {"match": 1, "divergence": 0}}), ("pairwise", {}),
])
def test_every_reply_of_an_answer_space_parses(parser, options):
    # option-scoring judges answer from Request.choices: each choice must be a verdict its parser reads
    from avhb.score.judge_replies import answer_space, get_parser

    space = answer_space(parser, options)
    assert space and all(get_parser(parser)(reply, options) is not None for reply in space)


def test_replies_built_to_make_regexes_backtrack_cost_linear_time():
    # a judge can answer anything: white-space runs after a label, thousands of markdown marks or nested
    # brackets must not stall scoring (a label separator with two unbounded \s* runs took 6.6 s on one reply)
    import time

    from avhb.score.judge_replies import BUILTIN

    replies = ["Verdict" + " " * 20000 + ":", "[[" * 2000, "{" * 4000, ("Answer: " + "**" * 2000 + "\n") * 5,
               "# " * 3000, "Rating\n" * 5000, "Is it? " + " " * 20000 + "x", "the answer is" + " " * 20000,
               "Output" + " " * 20000 + "(a" + "\n" * 5000]
    start = time.process_time()
    for reply in replies:
        for parser in BUILTIN.values():
            assert parser(reply, {}) is None
    assert time.process_time() - start < 3.0


def test_the_old_module_name_is_the_judge_replies_module():
    """``avhb.score.parsers`` (the name before ``judge_replies``) still imports, as the same module."""
    import avhb.score.judge_replies as now
    from avhb.score.parsers import answer_space, get_parser

    assert answer_space is now.answer_space and get_parser is now.get_parser
