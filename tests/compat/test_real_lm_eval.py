"""Differential test over the task folders lm-eval 0.4.13 ships, as shipped:
each row of tests/compat/real/lm_eval_rows.py (a task, tag or group and its
top-level folder) is run by lm-eval from its installed package
and by avhb from an unmodified copy of that folder (``--include_path``),
over synthetic Hub data in the real repos' layouts (FakeHub), against one
logging scripted model (tests/compat/real/lm_eval_harness.py).

A row passes when both exit 0, the requests are equal document by
document (chat messages with images, stop, max tokens, temperature; the
token prompts of log-likelihood requests) and every number lm-eval reports
(``metric,filter``) equals avhb's to 1e-9.  A row listed in
``EXPECTED_TO_FAIL_UNTIL_FIXED`` (with its cause) must still differ: when
it stops differing the test fails, asking for the entry to be removed.

All rows run once per session (one lm-eval process per model type; avhb
prepare and run per row); ``scripts/real_tasks_table.py`` prints the same
table in Markdown.  lm-eval lives in its own venv (scripts/peer_envs.sh);
without it the module is skipped, saying how to build it.
"""
from __future__ import annotations

import pytest

from tests.compat.real.lm_eval_harness import VENV, markdown_table, run_differential
from tests.compat.real.lm_eval_rows import EXPECTED_TO_FAIL_UNTIL_FIXED, HUB_CACHE_ROWS, ROWS

pytestmark = [pytest.mark.slow,  # lm-eval (its own venv) and avhb over every row: minutes
              pytest.mark.skipif(not (VENV / "bin" / "lm_eval").exists(),
                                 reason=f"lm-eval is not installed in {VENV}: run scripts/peer_envs.sh lmeval")]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    results = run_differential(tmp_path_factory.mktemp("real-lm-eval"), hub_cache_rows=HUB_CACHE_ROWS)
    print("\n" + markdown_table(results, EXPECTED_TO_FAIL_UNTIL_FIXED))
    return results


def test_the_rows_cover_what_the_issue_names():
    names = {r.name for r in ROWS}
    assert len(ROWS) >= 25 and len({r.folder for r in ROWS}) >= 25
    assert {"gsm8k", "gsm8k_cot", "bbh_cot_fewshot_boolean_expressions", "arc_easy", "ai2_arc", "boolq",
            "lambada_openai", "hellaswag", "winogrande", "truthfulqa_mc1", "truthfulqa_mc2", "wikitext",
            "mmlu_stem", "mmlu", "bbh", "arc_challenge_chat", "mmmu_val_accounting",
            "discrim_eval_explicit"} <= names
    assert set(EXPECTED_TO_FAIL_UNTIL_FIXED) <= names
    assert set(HUB_CACHE_ROWS) <= names


def _check(result, name: str) -> None:
    assert result.peer_exit == 0, f"{name}: lm-eval itself fails: {result.peer_error}"
    cause = EXPECTED_TO_FAIL_UNTIL_FIXED.get(name)
    if cause is not None:
        assert not result.identical, (f"{name} now runs as lm-eval does: remove it from "
                                      f"EXPECTED_TO_FAIL_UNTIL_FIXED (was: {cause})")
        return
    assert result.identical, f"{name} ({result.row.folder}, data from {result.data}): {result.what_differs()}"


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_row(table, row):
    _check(table[row.id], row.id)


@pytest.mark.parametrize("name", HUB_CACHE_ROWS)
def test_row_read_from_lm_evals_hub_cache(table, name):
    """avhb, offline and without ``avhb prepare``, reads the datasets
    lm-eval's ``datasets`` fetched (the hub cache, the Arrow cache) and
    runs the row as from its own snapshot."""
    result = table[f"{name}@hub-cache"]
    kinds = result.avhb.data_kinds()
    assert result.avhb.exit != 0 or kinds <= {"hub-cache", "datasets-cache"} and kinds, kinds
    _check(result, name)


def test_scores_are_not_trivial(table):
    """lm-eval's own numbers vary over the rows (a broken scorer giving all
    0 or all 1 would otherwise agree with a broken one)."""
    values = [p.peer for r in table.values() for p in r.metrics if "_stderr" not in p.key]
    assert len({round(v, 6) for v in values}) >= 20
    # a row whose numbers are all 0 or 1 (or a perplexity) tests little: most have a fraction
    strictly_between = {r.row.id for r in table.values() for p in r.metrics if 0 < p.peer < 1}
    assert len(strictly_between) >= 3 * len(ROWS) // 4, sorted(set(table) - strictly_between)
