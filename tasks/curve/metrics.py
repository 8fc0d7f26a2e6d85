"""CURVE's accuracy: the 0/1/2 ``scorer`` judge, accuracy = mean(score)/2.

This is the built-in ``judge_012`` metric under the public name
``accuracy`` (a metric's name is the last part of its hook path).  Judge
replies that never parse are excluded from the mean and counted
(``accuracy_judge_failures``, and the task's ``judge_failures``); samples
whose model call or media failed are excluded and counted (``errors``,
``accuracy_errors``): a failure outside the model is not a wrong answer
(docs/errors.md).
"""
from __future__ import annotations

from avhb.plugins.metrics import Judge012


class CurveAccuracy(Judge012):
    name = "accuracy"
    default_role = "scorer"
    description = "mean 0/1/2 scorer rating / 2 (CURVE's accuracy)"


accuracy = CurveAccuracy
