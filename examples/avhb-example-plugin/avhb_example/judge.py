"""A judge that needs no LLM: it rates the response 1-5 by the share of the
reference's words it contains, and replies with that rating as the role's
answer space spells it (``request.choices``; for a ``rating_json`` role
``['{"rating": 1}', ..., '{"rating": 5}']``).  It calls no model, so its
calls cost nothing (``prices = FREE``: the run's estimate and ``--max-cost``
count them as 0 USD)."""
import json

from avhb import FREE, Backend, Capabilities, Response

from .metrics import normalize


class OverlapJudge(Backend):
    capabilities = Capabilities(multi_turn=False)
    concurrency = 16
    prices = FREE

    async def generate(self, request):
        fields = request.fields
        ref = set(normalize(fields.get("reference", "")))
        got = set(normalize(fields.get("response", "")))
        share = len(ref & got) / len(ref) if ref else 0.0
        rating = 1 + round(4 * share)
        replies = {json.loads(c).get("rating"): c for c in request.choices or [] if c.startswith("{")}
        if rating not in replies:
            return Response(text="", error=f"example/overlap_judge answers rating_json roles (1-5), not "
                                           f"{request.choices}")
        return Response(text=replies[rating])
