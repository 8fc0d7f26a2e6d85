"""What docs/plugins.md says a judge author does, in the example packages:
a judge that calls no model is priced ``FREE`` (the estimate counts its
calls at 0 USD), and ``example/overlap_judge`` answers in the role's own
answer space (``Request.choices``), refusing one it cannot answer in."""
from __future__ import annotations

import asyncio

from avhb import FREE, BackendSpec, Message, Request, TextPart

RATINGS = [f'{{"rating": {k}}}' for k in range(1, 6)]


def _ask(choices, response: str = "Paris", reference: str = "Paris"):
    from avhb_example.judge import OverlapJudge

    judge = OverlapJudge(BackendSpec("example/overlap_judge", ""))
    request = Request(messages=[Message("user", [TextPart("grade it")])], choices=choices,
                      fields={"reference": reference, "response": response})
    return asyncio.run(judge.generate(request))


def test_the_overlap_judge_answers_in_the_roles_answer_space():
    assert _ask(RATINGS).text == '{"rating": 5}' and _ask(RATINGS, response="Lyon").text == '{"rating": 1}'
    refused = _ask(["0", "1", "2"])
    assert refused.text == "" and "rating_json" in refused.error


def test_judges_that_call_no_model_are_free():
    from avhb_embedding_judge.judge import MiniLMJudge
    from avhb_example.judge import OverlapJudge

    assert OverlapJudge.prices is FREE and MiniLMJudge.prices is FREE

