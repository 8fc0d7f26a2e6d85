"""Public names of the built-in metrics and filters -> "module:Class".

Private to avhb: a pack imports what it builds on from ``avhb.plugins.metrics``
(its package-level names); importing this module from outside avhb is
deprecated (it still works, but its layout may change).
"""

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
    # lm-eval's log-likelihood metrics (output_type multiple_choice, loglikelihood, loglikelihood_rolling)
    "acc": f"{_M}.loglik:Accuracy",
    "acc_norm": f"{_M}.loglik:AccNorm",
    "acc_bytes": f"{_M}.loglik:AccBytes",
    "acc_mutual_info": f"{_M}.loglik:AccMutualInfo",
    "brier_score": f"{_M}.loglik:BrierScore",
    "f1": f"{_M}.loglik:F1",
    "mcc": f"{_M}.loglik:MCC",
    "perplexity": f"{_M}.loglik:Perplexity",
    "word_perplexity": f"{_M}.loglik:WordPerplexity",
    "byte_perplexity": f"{_M}.loglik:BytePerplexity",
    "bits_per_byte": f"{_M}.loglik:BitsPerByte",
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
    "multi_choice_regex": f"{_M}.filters:MultiChoiceRegex",
    "regex_pos": f"{_M}.filters:RegexPos",
    "strip_thinking": f"{_M}.filters:StripThinking",
    "format_span": f"{_M}.filters:FormatSpan",
    "final_answer": f"{_M}.filters:FinalAnswer",
    "choice_letter": f"{_M}.filters:ChoiceLetter",
}
