from avhb import Metric


class OverlapRating(Metric):
    """Mean 1-5 rating from the 'overlap' judge role."""

    async def score(self, record, ctx):
        question = f"What is the capital of {record.doc['country']}?"
        verdict = await ctx.judges.ask("overlap", {"question": question, "reference": record.target,
                                                    "response": record.response or ""})
        record.judgements["overlap"] = {"value": verdict.value, "ok": verdict.ok, "raw": verdict.raw}
        return {self.name: verdict.value if verdict.ok else None}
