"""Built-in metrics and filters.

Modules (one job each): ``choice`` (MMMU rule parser, exact match, choice
accuracy), ``likert`` (judge-rated Likert facets and the 0/1/2 scorer),
``citation`` (citation recall/precision/F1 by leave-one-out entailment),
``grounding`` (temporal and box IoU, temporal precision/recall/F1),
``conciseness`` (cl100k_base token counts scored by percentiles),
``agreement`` (weighted Cohen's kappa, Krippendorff's alpha), ``pairs``
(all-members-right unit accuracy, macro F1), ``filters`` (answer
extraction), ``registry`` (public names -> import paths), ``testing`` (a
scripted stand-in for the judges, for tests).

Nothing is imported here, so listing the registry stays cheap.
"""
