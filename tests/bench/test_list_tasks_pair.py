"""benchmarks/list_tasks_pair.py's checks of what each listing printed: the
rows of each table ``lm_eval ls tasks`` prints, and the tasks of the
included folder in ``avhb list tasks``.  A listing that printed too little
must fail its run, so the counts must be right."""
from __future__ import annotations

from benchmarks.list_tasks_pair import avhb_listed, lm_eval_tables
from benchmarks.pairing import Run

LM_EVAL_LS = """
|  Group  |  Config Location  |
|---------|-------------------|
|aclue    |lm_eval/tasks/aclue/_aclue.yaml|
|mmlu     |lm_eval/tasks/mmlu/default/_mmlu.yaml|


|  Tag  |
|-------|
|ai2_arc|


|   Task   |  Config Location  |  Output Type  |
|----------|-------------------|---------------|
|arc_easy  |lm_eval/tasks/arc/arc_easy.yaml|multiple_choice|
|gsm8k     |lm_eval/tasks/gsm8k/gsm8k.yaml|generate_until|
|hellaswag |lm_eval/tasks/hellaswag/hellaswag.yaml|multiple_choice|

"""


def test_each_table_of_lm_evals_listing_is_counted_by_its_header():
    assert lm_eval_tables(LM_EVAL_LS) == {"Group": 2, "Tag": 1, "Task": 3}


def test_a_listing_without_tables_counts_nothing():
    assert lm_eval_tables("Traceback (most recent call last):\nValueError: Tasks not found: list\n") == {}


def test_avhb_counts_only_the_included_folders_tasks():
    out = "anchor\tanchor\t\ntasks/arc_easy\tarc\tai2_arc\ntasks/gsm8k\tgsm8k\t\ntasksx/other\t\t\n"
    run = Run(wall=0.0, cpu=0.0, peak_mb=0.0, rc=0, stdout=out)
    assert avhb_listed(run, "tasks") == 2
