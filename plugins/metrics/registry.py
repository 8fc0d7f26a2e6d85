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
    "remove_whitespace": f"{_M}.filters:RemoveWhitespace",  # lm-eval's name for strip
    "lowercase": f"{_M}.filters:Lowercase",
    "uppercase": f"{_M}.filters:Uppercase",
    "regex": f"{_M}.filters:Regex",
    "map": f"{_M}.filters:Map",
    "take_first": f"{_M}.filters:TakeFirst",
    "take_first_k": f"{_M}.filters:TakeFirstK",
    "majority_vote": f"{_M}.filters:MajorityVote",
    "custom": f"{_M}.filters:Custom",
    "final_answer": f"{_M}.filters:FinalAnswer",
    "choice_letter": f"{_M}.filters:ChoiceLetter",
}
