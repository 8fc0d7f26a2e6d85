"""The one call session (avhb/run/session.py): a journal, the judges and the
model's caller, set up together, sharing --max-cost, closed together."""
from __future__ import annotations

import json

import pytest

from avhb.model.backend import Backend, BackendSpec
from avhb.model.messages import Response, text_request
from avhb.run.session import CallSession
from avhb.score.judges import JudgeRole


class Priced(Backend):
    closed = 0

    def __init__(self, spec):
        super().__init__(spec)

    async def generate(self, request):
        return Response(text="yes", cost=0.5)

    async def aclose(self):
        type(self).closed += 1


async def test_one_session_journals_shares_the_spend_limit_and_closes_everything(tmp_path):
    Priced.closed = 0
    session = CallSession(tmp_path / "journal", {"*": [BackendSpec("priced", "j")]}, Priced)
    role = JudgeRole("check", "Is it {{x}}?")
    session.judges.prepare({"check": role})
    model = session.model_caller(Priced(BackendSpec("priced", "m")), label="priced:m")
    limit = session.limit_spend(0.5)
    assert model.spend is limit and all(c.spend is limit for c in session.judges.callers())
    assert len(session.judges.callers()) == 1
    first = await model.call(text_request("q1"))
    assert first.text == "yes" and limit.reached  # 0.5 USD spent: nothing more is sent
    second = await model.call(text_request("q2"))
    assert second.not_attempted and "--max-cost 0.5 USD reached" in second.error
    judge = session.judges.callers()[0]
    assert (await judge.call(text_request("j1"))).not_attempted  # the judges see the model's spending
    await session.aclose()
    assert Priced.closed == 2  # the judge's backend and the model's
    lines = (tmp_path / "journal" / "responses.jsonl").read_text().splitlines()
    assert [json.loads(x)["response"] for x in lines] == ["yes"]  # synced and closed: on disk


async def test_a_failing_close_still_closes_the_rest(tmp_path):
    Priced.closed = 0
    session = CallSession(tmp_path / "journal", {})
    session.model_caller(Priced(BackendSpec("priced", "m")))

    async def broken():
        raise RuntimeError("a judge backend failed to close")

    session.judges.close = broken
    with pytest.raises(RuntimeError):
        await session.aclose()
    assert Priced.closed == 1 and all(f.closed for f in session.journal._files.values())
