"""The judge-reply parsers' pieces (avhb/score/judge_replies.py), each a case its
mutation run left open: how candidates decide and merge, the JSON
readers (``first_json_value`` is public: CURVE's diagnosis reads its
hints with it), line offsets, labels and their lookbehind, repeated group
names, whole numbers written ``k/N``, and the first and last lines a
number may stand on."""
from __future__ import annotations

import pytest

from avhb.score import judge_replies as P
from avhb.score.judge_replies import BARE, FINAL, INVALID, LABELLED, Candidate, decide, first_json_value, json_objects

A, B = "A", "B"


def test_every_earlier_candidate_as_strong_must_agree():
    assert decide([Candidate(0, 1, LABELLED, A), Candidate(2, 3, LABELLED, B), Candidate(4, 5, LABELLED, A)]) is None
    assert decide([Candidate(0, 1, BARE, B), Candidate(2, 3, LABELLED, A)]) == A  # a weaker one is overruled
    assert decide([Candidate(0, 1, LABELLED, INVALID), Candidate(2, 3, LABELLED, A)]) is None
    assert decide([Candidate(0, 1, LABELLED, A), Candidate(2, 3, LABELLED, INVALID)]) is None
    assert decide([]) is None


def test_only_overlapping_forms_merge():
    # adjacent forms (one ends where the next starts) stay two: a weaker one that disagrees is overruled
    assert decide([Candidate(0, 3, BARE, B), Candidate(3, 5, FINAL, A)]) == A
    # overlapping forms are one, the strongest; reading different values (or one invalid) they are invalid
    assert P._merge([Candidate(0, 5, BARE, A), Candidate(2, 4, FINAL, A)]) == [Candidate(0, 5, FINAL, A)]
    assert P._merge([Candidate(0, 5, LABELLED, A), Candidate(2, 4, LABELLED, INVALID)])[0].value is INVALID
    assert P._merge([Candidate(0, 5, LABELLED, INVALID), Candidate(2, 4, LABELLED, A)])[0].value is INVALID
    assert P._merge([Candidate(0, 5, LABELLED, A), Candidate(2, 4, LABELLED, B)])[0].value is INVALID


def test_json_objects_and_the_first_value_of_a_key():
    text = 'x {"a": 1, "in": {"Hint": "h2"}} {bad} [[[' + "[" * 3000 + ' {"HINT": "h3", "hint2": 0} [1]'
    assert list(json_objects(text)) == [{"a": 1, "in": {"Hint": "h2"}}, {"Hint": "h2"}, {"HINT": "h3", "hint2": 0}]
    assert first_json_value(text, ("hint",)) == (True, "h2")  # the first object holding one, keys in any case
    assert first_json_value('{"b": 2, "a": 1}', ("a", "b")) == (True, 1)  # the first listed key wins in one object
    assert first_json_value("no json here", ("hint",)) == (False, None)
    assert first_json_value('{"other": 1}', ("hint",)) == (False, None)


def test_json_spans_are_outermost_and_every_one_is_found():
    text = 'a {"x": {"y": 1}} b [{"z": 2}] c {"w": 3} [1, 2]'
    assert [v for _, _, v in P.json_spans(text)] == [{"x": {"y": 1}}, [{"z": 2}], {"w": 3}]


def test_line_offsets_and_the_edge_lines():
    reply = P._Reply("first\n\n  \nsecond\nthird")
    assert reply.lines() == [(0, "first"), (10, "second"), (17, "third")]
    assert reply.edge_lines() == [(0, "first"), (17, "third")]
    assert P._Reply("only").edge_lines() == [(0, "only")]
    assert P._Reply("  \n").edge_lines() == []


def test_a_latin_label_needs_a_word_boundary_before_it_and_a_cjk_one_does_not():
    latin = P.label_regex(["answer"], r"(?P<l>[A-D])")
    assert latin.search("Answer: B") and not latin.search("Nonanswer: B")
    cjk = P.label_regex(["答案"], r"(?P<l>[A-D])")
    assert cjk.search("最后的答案：B")


def test_repeated_group_names_are_numbered():
    assert P._uniquify("(?P<v>a)|(?P<v>b)|(?P<v>c)|(?P<w>d)") == "(?P<v>a)|(?P<v_2>b)|(?P<v_3>c)|(?P<w>d)"


@pytest.mark.parametrize("value, denominator, expected", [
    ("4/5", None, 4), ("4 out of 5", None, 4), ("4/10", None, None), ("4", "5", 4), ("4", "10", None),
    ("6/5", None, None), (" **3** ", None, 3), ("3.0", None, 3), ("3,0", None, 3), ("3.5", None, None),
    (True, None, None), (None, None, None), (float("nan"), None, None), ("x", None, None),
])
def test_whole_numbers_on_a_1_to_5_scale(value, denominator, expected):
    assert P.whole_number(value, {"min": 1, "max": 5}, denominator) == expected
    assert P.whole_number("4/5", {"min": 1}) is None  # k/N needs the scale's maximum
