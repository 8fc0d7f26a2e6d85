"""The rows of the lm-eval differential: a task, tag or group lm-eval 0.4.13
ships, the top-level folder of ``lm_eval/tasks/`` it lives in (copied
unmodified for avhb), the model type it needs (``chat``: generation through
chat completions; ``ll``: log-likelihoods through text completions), what
it exercises, and for chat rows the answer forms the scripted model picks
from (tests/compat/real/model.py).

``HUB_CACHE_ROWS``: rows avhb runs a second time, offline and without
``avhb prepare``, from the caches lm-eval's ``datasets`` filled.

``EXPECTED_TO_FAIL_UNTIL_FIXED``: the rows avhb does not yet run as lm-eval
does, each with the cause found (avhb file and line where known).  The
test of such a row asserts it still differs, so a fix is noticed: remove the
row's entry when its feature lands.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    name: str  # lm-eval's task, tag or group name
    folder: str  # the top-level folder of lm_eval/tasks/ that ships it
    kind: str  # "chat" | "ll"
    exercises: str
    answers: tuple[str, ...] = ()  # chat rows: the replies the scripted model picks from
    peer_model_args: str = ""  # more of lm-eval's --model_args (a setting whose default differs on purpose)

    @property
    def id(self) -> str:
        return self.name


# the order decides which document gets which reply (crc32 of the prompt modulo the count): chosen so that
# some replies are right and some wrong
GSM8K_ANSWERS = ("The answer is 9.", "#### 5", "The answer is 18.", "Adding up, #### 18", "I am not sure, maybe 42",
                 "So 3 * 4 = 12. #### 12", "#### 1,000")
GSM8K_COT_ANSWERS = ("#### 5", "So 3 * 4 = 12. #### 12", "The answer is 9.", "#### 1,000", "Adding up, #### 18",
                     "The answer is 18.", "I am not sure, maybe 42")
BBH_ANSWERS = ("So the answer is True.", "So the answer is False.", "So the answer is Yes.",
               "So the answer is (A).", "So the answer is (B).", "Let's see. So the answer is valid.",
               "So the answer is 7.", "So the answer is (C).", "So the answer is no.",
               "So the answer is apple banana cherry.", "I cannot tell.")

ROWS: tuple[Row, ...] = (
    Row("gsm8k", "gsm8k", "chat", "regex filters, 5-shot from train, exact_match regexes_to_ignore", GSM8K_ANSWERS),
    Row("gsm8k_cot", "gsm8k", "chat", "fewshot_config samples (first_n), chain-of-thought filters",
        GSM8K_COT_ANSWERS),
    Row("bbh_cot_fewshot_boolean_expressions", "bbh", "chat", "a BBH CoT task: template include, 3-shot samples",
        BBH_ANSWERS),
    Row("bbh", "bbh", "chat", "the bbh group (27 CoT tasks, a _*.yaml group file, size-weighted filtered metric)",
        BBH_ANSWERS),
    Row("arc_challenge_chat", "arc", "chat", "gen_prefix (an assistant-turn prefix)",
        (" B", " A.", "C", " D", " (B)", "B because plants")),
    # lm-eval's API models send max_images=1 image per request unless told (they warn; a two-image question
    # loses its second); avhb sends every image: lm-eval runs with max_images=8 so that both send all
    Row("mmmu_val_accounting", "mmmu", "chat", "doc_to_image (images in the chat request, PNG), process_results",
        ("(B)", "The answer is A.", "B 42", "C", "D", "I think (A) is right"), peer_model_args="max_images=8"),
    Row("triviaqa", "triviaqa", "chat", "a list target (aliases), remove_whitespace filter",
        ("Blue whale", " Paris", " Shakespeare", "Jupiter", " Everest", "Au")),
    Row("nq_open", "nq_open", "chat", "a list target, description, regexes_to_ignore",
        (" 8", "Kyoto", "the Pacific Ocean", " Paris", "Fleming", "Leonardo da Vinci")),
    Row("truthfulqa_gen", "truthfulqa", "chat", "process_docs and process_results (BLEU and ROUGE)",
        ("Nothing in particular happens.", "You will get arthritis.", "The sky is blue.", "I have no comment.",
         "Buzz Aldrin was first.")),
    Row("arc_easy", "arc", "ll", "multiple_choice, acc and acc_norm"),
    Row("ai2_arc", "arc", "ll", "a tag (arc_easy and arc_challenge)"),
    Row("boolq", "super_glue", "ll", "a list doc_to_choice, an integer-column target"),
    Row("copa", "super_glue", "ll", "doc_to_text, doc_to_target and doc_to_choice hooks"),
    Row("lambada_openai", "lambada", "ll", "loglikelihood, the perplexity aggregation"),
    Row("lambada_standard", "lambada", "ll", "loglikelihood, dataset_name null"),
    Row("hellaswag", "hellaswag", "ll", "process_docs, test_split null"),
    Row("winogrande", "winogrande", "ll", "partial evaluation (the contexts are the choices)"),
    Row("xwinograd_en", "xwinograd", "ll", "partial evaluation, training and validation splits null"),
    Row("truthfulqa_mc1", "truthfulqa", "ll", "an integer doc_to_target (0), null splits"),
    Row("truthfulqa_mc2", "truthfulqa", "ll", "process_results over the choices' log-likelihoods"),
    Row("wikitext", "wikitext", "ll", "loglikelihood_rolling, process_results, registered default aggregations "
        "(weighted_perplexity, bits_per_byte)"),
    Row("mmlu_stem", "mmlu", "ll", "a group in a _*.yaml file over a tag of 19 tasks, size-weighted"),
    Row("mmlu", "mmlu", "ll", "the mmlu group (groups of groups, 57 tasks)"),
    Row("discrim_eval_explicit", "discrim_eval", "ll", "gen_prefix on multiple_choice, process_results with a "
        "!function aggregation (a mixed-effects regression)"),
    Row("sciq", "sciq", "ll", "an integer doc_to_target (3), a template list of choices"),
    Row("openbookqa", "openbookqa", "ll", "doc_to_text naming a column"),
    Row("piqa", "piqa", "ll", "dataset_name null, test_split null"),
    Row("cola", "glue", "ll", "mcc (a non-mean aggregation)"),
    Row("mrpc", "glue", "ll", "f1 (a non-mean aggregation) beside acc"),
    Row("rte", "glue", "ll", "a binary task with choices True/False"),
    Row("commonsense_qa", "commonsense_qa", "ll", "a letter target mapped through doc_to_choice"),
    Row("race", "race", "ll", "hooks over a string-encoded list of questions (an article's earlier answers in "
        "the prompt), test split only"),
    Row("social_iqa", "siqa", "ll", "a Jinja list as doc_to_choice, a string label cast with |int, no test split"),
    Row("mathqa", "mathqa", "ll", "a regex hook for the choices, list.index() in the target template, acc_norm"),
    Row("logiqa", "logiqa", "ll", "a list column as the choices template, hooks for text and target"),
    Row("anli", "anli", "ll", "a tag over three rounds (include), round-named splits, a ClassLabel indexing a "
        "literal list"),
    Row("pubmedqa", "pubmedqa", "ll", "a string-column target naming one of a literal choice list, a list column "
        "joined by a hook"),
    Row("headqa", "headqa", "ll", "a tag over two languages (include), a Jinja map filter over a list of structs"),
)

# rows avhb also runs from the hub cache and Arrow cache lm-eval's datasets filled (no avhb prepare):
# parquet with README configs, a process_docs hook, an Image column
HUB_CACHE_ROWS = ("gsm8k", "hellaswag", "mmmu_val_accounting")

# row -> why avhb does not (yet) run it as lm-eval does; the lead removes an entry when it is fixed.  Emptied
# when integer and literal targets (truthfulqa, sciq, discrim_eval), a tag as a group member (mmlu, mmlu_stem)
# and PIL images sent as PNG (mmmu) landed.
EXPECTED_TO_FAIL_UNTIL_FIXED: dict[str, str] = {}
