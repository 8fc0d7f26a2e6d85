"""The built-in metrics and filters, and what a pack may build on them.

Its package-level names are public API (``from avhb.plugins.metrics import
ChoiceAccuracy``); the modules inside are not: their layout may change, and
importing one (``avhb.plugins.metrics.choice``) from outside avhb is
deprecated (it still works).  What is public, and why those:

* metric classes a pack subclasses or wraps: the choice scorers
  (``ExactMatch``, ``ChoiceAccuracy``), the judge-rated scales
  (``LikertFacet``, ``Judge012``) and the grouped scorers
  (``UnitAccuracy``, ``PairAccuracy``, ``MacroF1``);
* the rules those scorers are made of, for a pack that scores its own way
  by the same rule: choice options read from a sample (``options_from``,
  ``inline_options``), a reply resolved to a letter, by rule then judge
  (``resolve_choice``, ``ChoiceResolution``, ``check_parser``), a judge's
  rating checked against its scale (``valid_rating``), pair statistics
  (``unit_accuracy``, ``UnitStats``, ``macro_f1``), citation marks
  (``strip_citations``) and a yes/no verdict (``parse_yes_no``), the
  final-answer marker (``FINAL_ANSWER``, ``final_answer``).

Every other built-in (citation, grounding, conciseness, agreement, the
log-likelihood metrics, Hugging Face evaluate, the filters) is used by its
registered name in a task's YAML (``metric: citation``); its class is
private.  The modules: ``choice``, ``likert``, ``citation``, ``grounding``,
``conciseness``, ``agreement``, ``pairs``, ``loglik``, ``hf_evaluate``,
``filters`` (answer extraction) and ``registry`` (registered names ->
import paths).

Names load lazily, so importing ``avhb.plugins.metrics.registry`` (to list
what is registered) imports no metric; ``tests/test_types.py`` holds the
``TYPE_CHECKING`` imports (what mypy sees) equal to ``_EXPORTS``, and
``tests/test_import_graph.py`` holds avhb's packs and the examples to
these names.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from avhb.lazy_exports import lazy_exports

# public name -> the module (in this package) that defines it
_EXPORTS = {
    "ExactMatch": "choice", "ChoiceAccuracy": "choice", "ChoiceResolution": "choice", "resolve_choice": "choice",
    "check_parser": "choice", "options_from": "choice", "inline_options": "choice",
    "LikertFacet": "likert", "Judge012": "likert", "valid_rating": "likert",
    "UnitAccuracy": "pairs", "PairAccuracy": "pairs", "MacroF1": "pairs", "UnitStats": "pairs",
    "unit_accuracy": "pairs", "macro_f1": "pairs",
    "strip_citations": "citation", "parse_yes_no": "citation",
    "FINAL_ANSWER": "filters", "final_answer": "filters",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # the same names for a type checker, which does not run __getattr__ (tests/test_types.py
    # holds them equal to _EXPORTS)
    from avhb.plugins.metrics.choice import (
        ChoiceAccuracy as ChoiceAccuracy, ChoiceResolution as ChoiceResolution, ExactMatch as ExactMatch,
        check_parser as check_parser, inline_options as inline_options, options_from as options_from,
        resolve_choice as resolve_choice)
    from avhb.plugins.metrics.citation import parse_yes_no as parse_yes_no, strip_citations as strip_citations
    from avhb.plugins.metrics.filters import FINAL_ANSWER as FINAL_ANSWER, final_answer as final_answer
    from avhb.plugins.metrics.likert import Judge012 as Judge012, LikertFacet as LikertFacet, valid_rating as valid_rating
    from avhb.plugins.metrics.pairs import (
        MacroF1 as MacroF1, PairAccuracy as PairAccuracy, UnitAccuracy as UnitAccuracy, UnitStats as UnitStats,
        macro_f1 as macro_f1, unit_accuracy as unit_accuracy)


if not TYPE_CHECKING:  # hidden from a type checker, so a name missing above is an error, not Any
    __getattr__ = lazy_exports(globals(), _EXPORTS, prefix="avhb.plugins.metrics.")


def __dir__() -> list[str]:
    return __all__
