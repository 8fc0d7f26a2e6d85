"""Entry point of the plugin: names and import paths only (nothing heavy is
imported when avhb lists or discovers plugins)."""
from avhb import hookimpl


@hookimpl
def avhb_judges():
    return {"minilm": "avhb_embedding_judge.judge:MiniLMJudge"}
