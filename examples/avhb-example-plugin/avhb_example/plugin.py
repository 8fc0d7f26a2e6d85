"""Entry point of the example plugin: names and import paths only."""
from avhb import hookimpl


@hookimpl
def avhb_task_packages():
    return ["avhb_example.tasks"]


@hookimpl
def avhb_metrics():
    return {"token_f1": "avhb_example.metrics:TokenF1"}


@hookimpl
def avhb_judges():
    return {"overlap_judge": "avhb_example.judge:OverlapJudge"}
