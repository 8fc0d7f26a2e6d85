"""Public names of the built-in metrics and filters -> "module:Class"."""

_M = "avhb.plugins.metrics"

METRICS: dict[str, str] = {
    "exact_match": f"{_M}.choice:ExactMatch",
    "choice_accuracy": f"{_M}.choice:ChoiceAccuracy",
    "likert": f"{_M}.likert:LikertFacet",
    "judge_012": f"{_M}.likert:Judge012",
    "citation": f"{_M}.citation:Citation",
    "temporal": f"{_M}.grounding:TemporalGrounding",
    "temporal_iou": f"{_M}.grounding:TemporalIoU",
    "box_iou": f"{_M}.grounding:BoxIoU",
    "conciseness": f"{_M}.conciseness:Conciseness",
    "agreement": f"{_M}.agreement:JudgeAgreement",
    "unit_accuracy": f"{_M}.pairs:UnitAccuracy",
    "pair_accuracy": f"{_M}.pairs:PairAccuracy",
    "macro_f1": f"{_M}.pairs:MacroF1",
    # Hugging Face evaluate modules; also what names avhb does not register resolve to (Task.metrics)
    "evaluate": f"{_M}.hf_evaluate:EvaluateMetric",
}

FILTERS: dict[str, str] = {
    "strip": f"{_M}.filters:Strip",
    "lowercase": f"{_M}.filters:Lowercase",
    "regex": f"{_M}.filters:Regex",
    "final_answer": f"{_M}.filters:FinalAnswer",
    "choice_letter": f"{_M}.filters:ChoiceLetter",
}
