"""A judge that needs no LLM: it rates the response 1-5 by the share of the
reference's words it contains, and replies in the rubric's JSON format."""
from avhb import Backend, Capabilities, Response

from .metrics import normalize


class OverlapJudge(Backend):
    capabilities = Capabilities(multi_turn=False)
    concurrency = 16

    async def generate(self, request):
        fields = request.fields
        ref = set(normalize(fields.get("reference", "")))
        got = set(normalize(fields.get("response", "")))
        share = len(ref & got) / len(ref) if ref else 0.0
        rating = 1 + round(4 * share)
        return Response(text=f'{{"rating": {rating}}}')
