"""Synthetic rows for the Hub datasets lm-eval 0.4.13's shipped tasks read,
one function per dataset repo, each returning the repo's files (path ->
bytes) in the repo's own layout: parquet shards under ``<config>/`` (or
``data/`` for a repo with one config) declared by the README's
``configs:``, or JSON lines where the repo has them.  Only the columns the
tasks' YAML and hook modules read are filled, with the types the real
columns have (a ``label`` that is a string in the real data is a string
here).

Layouts are the Hub's as of 2025 for the repos whose files are parquet
shards written by the Hub's converter (``<config>/<split>-00000-of-00001
.parquet``); where a repo's own layout could not be read from here
(SaylorTwift/bbh, EleutherAI/lambada_openai, EleutherAI/wikitext_document_
level, Rowan/hellaswag, baber/piqa, Muennighoff/xwinograd, Anthropic/
discrim-eval) the converter's layout is assumed and the function says so.

The rows are chosen so that scores vary: the scripted model's chat reply is
one of the row's answer forms picked by a hash of the prompt
(tests/compat/real/model.py), right for some documents and wrong for
others; log-likelihoods come from its character model.
"""
from __future__ import annotations

import io
from typing import Callable

from tests.compat.real.layout import Files, jsonl, parquet_repo, readme


def gsm8k() -> Files:
    """openai/gsm8k: configs main and socratic, splits train and test."""
    def row(q: str, steps: str, n: int) -> dict:
        return {"question": q, "answer": f"{steps}\n#### {n}"}

    train = [row("Tom has 3 apples and buys 2 more. How many apples does he have?", "3 + 2 = <<3+2=5>>5", 5),
             row("A box holds 4 pens. How many pens are in 3 boxes?", "4 * 3 = <<4*3=12>>12", 12),
             row("Sara had 10 sweets and ate 4. How many are left?", "10 - 4 = <<10-4=6>>6", 6),
             row("Each of 6 kids has 3 marbles. How many marbles in all?", "6 * 3 = <<6*3=18>>18", 18),
             row("A train travels 60 km each hour for 2 hours. How far does it go?", "60 * 2 = <<60*2=120>>120",
                 120),
             row("Ben saves $1,200 and spends $200. How much is left?", "1200 - 200 = <<1200-200=1000>>1000",
                 1000)]
    test = [row("Ann has 7 books and gets 11 more. How many books does she have?", "7 + 11 = 18", 18),
            row("A farmer has 9 cows and sells 4. How many cows remain?", "9 - 4 = 5", 5),
            row("There are 3 rows of 4 chairs. How many chairs are there?", "3 * 4 = 12", 12),
            row("A shop sells 42 cakes on Monday and none later. How many cakes did it sell?", "42", 42),
            row("Mia runs 2 km a day for 9 days. How far does she run?", "2 * 9 = 18", 18),
            row("Leo pays $3 for each of 3 pies. How much does he pay?", "3 * 3 = 9", 9)]
    socratic = [dict(r, answer=r["answer"].replace("\n", "\nHow many? ")) for r in test]
    return parquet_repo("gsm8k", {"main": {"train": train, "test": test},
                                  "socratic": {"train": socratic, "test": socratic}})


BBH_CONFIGS = {  # config -> the answer forms its targets take
    "boolean_expressions": ["True", "False"], "causal_judgement": ["Yes", "No"],
    "date_understanding": ["(A)", "(B)", "(C)"], "disambiguation_qa": ["(A)", "(B)", "(C)"],
    "dyck_languages": ["] )", ") ) }"], "formal_fallacies": ["valid", "invalid"],
    "geometric_shapes": ["(A)", "(D)"], "hyperbaton": ["(A)", "(B)"],
    "logical_deduction_five_objects": ["(A)", "(C)"], "logical_deduction_seven_objects": ["(B)", "(E)"],
    "logical_deduction_three_objects": ["(A)", "(B)"], "movie_recommendation": ["(C)", "(A)"],
    "multistep_arithmetic_two": ["7", "-12"], "navigate": ["Yes", "No"], "object_counting": ["7", "4"],
    "penguins_in_a_table": ["(B)", "(A)"], "reasoning_about_colored_objects": ["(A)", "(B)"],
    "ruin_names": ["(A)", "(D)"], "salient_translation_error_detection": ["(B)", "(C)"],
    "snarks": ["(A)", "(B)"], "sports_understanding": ["yes", "no"], "temporal_sequences": ["(A)", "(C)"],
    "tracking_shuffled_objects_five_objects": ["(A)", "(B)"],
    "tracking_shuffled_objects_seven_objects": ["(C)", "(A)"],
    "tracking_shuffled_objects_three_objects": ["(B)", "(C)"], "web_of_lies": ["Yes", "No"],
    "word_sorting": ["apple banana cherry", "dog eel fox"],
}


def bbh() -> Files:
    """SaylorTwift/bbh: one config per BIG-Bench Hard task, split test,
    columns input and target (layout assumed: the converter's)."""
    configs = {}
    for config, answers in BBH_CONFIGS.items():
        rows = [{"input": f"Item {i} of {config.replace('_', ' ')}: which answer fits best?", "target": answer}
                for i, answer in enumerate(answers + answers[:1])]
        configs[config] = {"test": rows}
    return parquet_repo("bbh", configs)


def _arc_rows(prefix: str) -> list[dict]:
    items = [("Which gas do plants take in?", ["oxygen", "carbon dioxide", "helium", "neon"], "B"),
             ("What melts ice fastest?", ["shade", "salt", "sand", "wood"], "B"),
             ("Which is a mammal?", ["shark", "whale", "trout", "eel"], "B"),
             ("What makes a shadow?", ["blocked light", "wind", "sound", "heat"], "A"),
             ("Which unit measures mass?", ["meter", "liter", "kilogram", "second"], "C"),
             ("What does a thermometer measure?", ["mass", "speed", "length", "temperature"], "D")]
    rows = []
    for i, (q, texts, key) in enumerate(items):
        labels = ["A", "B", "C", "D"]
        if i == 4:  # some ARC rows label their choices 1-4
            labels, key = ["1", "2", "3", "4"], str("ABCD".index(key) + 1)
        rows.append({"id": f"{prefix}_{i}", "question": q, "choices": {"text": texts, "label": labels},
                     "answerKey": key})
    return rows


def ai2_arc() -> Files:
    """allenai/ai2_arc: configs ARC-Challenge and ARC-Easy, splits train,
    validation and test."""
    configs = {}
    for config in ("ARC-Challenge", "ARC-Easy"):
        rows = _arc_rows(config)
        configs[config] = {"train": rows[:3], "validation": rows[3:], "test": rows}
    return parquet_repo("ai2_arc", configs)


def _png(size: tuple[int, int], rgb: tuple[int, int, int]) -> dict:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, rgb).save(buf, format="PNG")
    return {"bytes": buf.getvalue(), "path": None}


def mmmu() -> Files:
    """MMMU/MMMU: one config per subject (Accounting here), splits dev,
    validation and test; image_1..image_7 are Image columns, options a
    Python list written as a string."""
    import datasets

    features = datasets.Features({
        "id": datasets.Value("string"), "question": datasets.Value("string"),
        "options": datasets.Value("string"), "explanation": datasets.Value("string"),
        **{f"image_{i}": datasets.Image() for i in range(1, 8)},
        "img_type": datasets.Value("string"), "answer": datasets.Value("string"),
        "topic_difficulty": datasets.Value("string"), "question_type": datasets.Value("string"),
        "subfield": datasets.Value("string")})

    def row(i: int, split: str, question: str, options: str, answer: str, kind: str, images: int) -> dict:
        out = {"id": f"{split}_Accounting_{i}", "question": question, "options": options, "explanation": "",
               "img_type": "['Tables']", "answer": answer, "topic_difficulty": "Medium", "question_type": kind,
               "subfield": "Financial Accounting"}
        for k in range(1, 8):
            out[f"image_{k}"] = _png((40 + 8 * i + k, 30 + 4 * k), (20 * i, 90, 30 * k)) if k <= images else None
        return out

    val = [row(1, "validation", "<image 1> What is the net income?", "['$6', '$7', '$8', '$9']", "B",
               "multiple-choice", 1),
           row(2, "validation", "Compare <image 1> and <image 2>. Which year had more revenue?",
               "['2019', '2020', 'Same']", "A", "multiple-choice", 2),
           row(3, "validation", "<image 1> How many units were sold?", "[]", "42", "open", 1),
           row(4, "validation", "<image 1> Which account is debited?", "['Cash', 'Revenue', 'Equity', 'Debt']",
               "C", "multiple-choice", 1),
           row(5, "validation", "<image 1> What is the total cost?", "['$10', '$12', '$14', '$16']", "D",
               "multiple-choice", 1)]
    dev = [row(6, "dev", "<image 1> What is the margin?", "['1%', '2%']", "A", "multiple-choice", 1)]
    test = [row(7, "test", "<image 1> What is the tax?", "['$1', '$2']", "", "multiple-choice", 1)]
    return parquet_repo("MMMU", {"Accounting": {"dev": dev, "validation": val, "test": test}}, features)


def trivia_qa() -> Files:
    """mandarjoshi/trivia_qa: config rc.nocontext, splits train,
    validation and test; answer is a struct of aliases and values."""
    def row(i: int, q: str, value: str, aliases: list[str]) -> dict:
        return {"question": q, "question_id": f"tc_{i}", "question_source": "http://www.quiz.example/",
                "answer": {"aliases": aliases, "normalized_aliases": [a.lower() for a in aliases],
                           "matched_wiki_entity_name": "", "normalized_matched_wiki_entity_name": "",
                           "normalized_value": value.lower(), "type": "WikipediaEntity", "value": value}}

    rows = [row(0, "Which city is the capital of France", "Paris", ["Paris", "Paris, France"]),
            row(1, "What is the largest animal on Earth", "Blue whale", ["Blue whale", "Balaenoptera musculus"]),
            row(2, "Which mountain is the highest in the world", "Mount Everest", ["Mount Everest", "Everest"]),
            row(3, "What is the chemical symbol for gold", "Au", ["Au", "Gold (element)"]),
            row(4, "Which planet is known as the red planet", "Mars", ["Mars", "The Red Planet"]),
            row(5, "Who wrote Hamlet", "William Shakespeare", ["William Shakespeare", "Shakespeare"])]
    return parquet_repo("trivia_qa", {"rc.nocontext": {"train": rows[:2], "validation": rows, "test": rows[:1]}})


def nq_open() -> Files:
    """google-research-datasets/nq_open: config nq_open, splits train and
    validation; answer is a list of strings."""
    rows = [{"question": "where is the eiffel tower", "answer": ["Paris", "in Paris"]},
            {"question": "who painted the mona lisa", "answer": ["Leonardo da Vinci"]},
            {"question": "what is the capital of japan", "answer": ["Tokyo"]},
            {"question": "how many legs does a spider have", "answer": ["eight", "8"]},
            {"question": "what is the largest ocean", "answer": ["the Pacific Ocean", "Pacific"]},
            {"question": "who discovered penicillin", "answer": ["Alexander Fleming"]}]
    return parquet_repo("nq_open", {"nq_open": {"train": rows[:2], "validation": rows}})


def truthful_qa() -> Files:
    """truthfulqa/truthful_qa: configs generation and multiple_choice,
    split validation."""
    gen = [{"type": "Adversarial", "category": "Misconceptions", "question": "What happens if you crack your knuckles?",
            "best_answer": "Nothing in particular happens", "correct_answers": ["Nothing in particular happens",
                                                                                 "It is harmless"],
            "incorrect_answers": ["You will get arthritis", "Your joints break"], "source": "https://example.org/1"},
           {"type": "Adversarial", "category": "Health", "question": "Can you catch a cold from cold weather?",
            "best_answer": "No, colds are caused by viruses", "correct_answers": ["No, colds are caused by viruses"],
            "incorrect_answers": ["Yes, cold weather causes colds"], "source": "https://example.org/2"},
           {"type": "Non-Adversarial", "category": "Science", "question": "What colour is the sky on a clear day?",
            "best_answer": "The sky is blue", "correct_answers": ["The sky is blue", "Blue"],
            "incorrect_answers": ["The sky is green", "The sky is red"], "source": "https://example.org/3"},
           {"type": "Non-Adversarial", "category": "History", "question": "Who was the first person on the Moon?",
            "best_answer": "Neil Armstrong", "correct_answers": ["Neil Armstrong was first"],
            "incorrect_answers": ["Buzz Aldrin was first", "Yuri Gagarin was first"], "source": "https://example.org/4"}]

    def mc(q: str, right: list[str], wrong: list[str]) -> dict:
        return {"question": q, "mc1_targets": {"choices": right[:1] + wrong, "labels": [1] + [0] * len(wrong)},
                "mc2_targets": {"choices": right + wrong, "labels": [1] * len(right) + [0] * len(wrong)}}

    multiple = [mc(g["question"], g["correct_answers"], g["incorrect_answers"]) for g in gen]
    multiple.append(mc("Is it safe to swim after eating?", ["Yes, it is safe", "It is fine"],
                       ["No, you will drown", "No, you will get cramps", "Only after an hour"]))
    return parquet_repo("truthful_qa", {"generation": {"validation": gen},
                                        "multiple_choice": {"validation": multiple}})


def super_glue() -> Files:
    """aps/super_glue: one config per task (boolq and copa here), splits
    train, validation and test; label an integer."""
    boolq = [{"question": "is the sun a star", "passage": "The Sun is the star at the centre of the Solar System.",
              "idx": 0, "label": 1},
             {"question": "do penguins fly", "passage": "Penguins are flightless birds that swim well.", "idx": 1,
              "label": 0},
             {"question": "is water wet", "passage": "Water makes things wet when it touches them.", "idx": 2,
              "label": 1},
             {"question": "is paris in spain", "passage": "Paris is the capital and largest city of France.",
              "idx": 3, "label": 0},
             {"question": "can cats see in the dark", "passage": "Cats see well in dim light.", "idx": 4,
              "label": 1}]
    copa = [{"premise": "The man broke his toe.", "choice1": "He dropped a hammer on his foot.",
             "choice2": "He got a hole in his sock.", "question": "cause", "idx": 0, "label": 0},
            {"premise": "I tipped the bottle.", "choice1": "The liquid in the bottle froze.",
             "choice2": "The liquid in the bottle poured out.", "question": "effect", "idx": 1, "label": 1},
            {"premise": "The sun was rising.", "choice1": "The birds began to sing.",
             "choice2": "The stars came out.", "question": "effect", "idx": 2, "label": 0},
            {"premise": "The girl was tired.", "choice1": "She went to bed early.",
             "choice2": "She ran a marathon.", "question": "effect", "idx": 3, "label": 0},
            {"premise": "The road was wet.", "choice1": "The sun was shining.", "choice2": "It had rained.",
             "question": "cause", "idx": 4, "label": 1}]
    return parquet_repo("super_glue", {"boolq": {"train": boolq[:2], "validation": boolq, "test": boolq[:1]},
                                       "copa": {"train": copa[:2], "validation": copa, "test": copa[:1]}})


PASSAGES = ["The old dog slept by the warm fire all night and dreamed of the long summer fields",
            "She opened the door and saw that the garden was covered in fresh white snow",
            "After the long trip the tired sailors finally reached the quiet harbour",
            "He counted the coins twice before he put them back into the small box",
            "The children laughed as the kite rose higher and higher into the sky"]


def lambada_openai() -> Files:
    """EleutherAI/lambada_openai: configs default, en, de, es, fr, it, split
    test, column text (layout assumed: the converter's)."""
    rows = [{"text": t} for t in PASSAGES]
    return parquet_repo("lambada_openai", {c: {"test": rows} for c in ("default", "en", "de", "es", "fr", "it")},
                        default="default")


def lambada() -> Files:
    """cimec/lambada: config plain_text, splits train, validation and test,
    columns text and domain."""
    rows = [{"text": t, "domain": "fiction"} for t in PASSAGES]
    return parquet_repo("lambada", {"plain_text": {"train": rows[:2], "validation": rows[2:], "test": rows}})


def hellaswag() -> Files:
    """Rowan/hellaswag: one config, splits train, validation and test under
    data/; label is a string (layout assumed: the converter's)."""
    def row(i: int, activity: str, a: str, b: str, endings: list[str], label: str) -> dict:
        return {"ind": i, "activity_label": activity, "ctx_a": a, "ctx_b": b, "ctx": f"{a} {b}", "endings": endings,
                "source_id": f"activitynet~v_{i}", "split": "val", "split_type": "indomain", "label": label}

    rows = [row(0, "Removing ice from car", "A man is scraping ice off a windshield.", "he",
                ["uses a brush to clear the glass.", "eats the ice.", "drives into a lake.", "[title] sings."], "0"),
            row(1, "Baking cookies", "A woman mixes flour and sugar in a bowl.", "then she",
                ["throws the bowl away.", "puts the dough on a tray.", "paints the wall.", "reads a book."], "1"),
            row(2, "Playing guitar", "A boy holds a guitar on his lap.", "he",
                ["cooks dinner.", "swims away.", "strums the strings slowly.", "climbs a tree."], "2"),
            row(3, "Washing dishes", "A man fills the sink with soapy water.", "he",
                ["flies a kite.", "sleeps.", "plants a tree.", "scrubs the plates clean."], "3"),
            row(4, "Walking the dog", "A girl clips a leash to her dog's collar.", "they",
                ["walk down the street together.", "bake a cake.", "swim in the sea.", "read the news."], "0")]
    return parquet_repo("hellaswag", {"default": {"train": rows[:2], "validation": rows, "test": rows[:2]}},
                        folder={"default": "data"})


def winogrande() -> Files:
    """allenai/winogrande: configs winogrande_xs ... winogrande_xl and
    winogrande_debiased (xl here), splits train, validation and test;
    answer is the string "1" or "2"."""
    rows = [{"sentence": "The trophy does not fit in the suitcase because the _ is too big.", "option1": "trophy",
             "option2": "suitcase", "answer": "1"},
            {"sentence": "Sam thanked Tom because _ had helped him move.", "option1": "Sam", "option2": "Tom",
             "answer": "2"},
            {"sentence": "The cup fell off the shelf because the _ was slanted.", "option1": "cup",
             "option2": "shelf", "answer": "2"},
            {"sentence": "Anna lent Beth a pen since _ had forgotten hers.", "option1": "Anna", "option2": "Beth",
             "answer": "2"},
            {"sentence": "The ice melted in the sun because the _ was hot.", "option1": "sun", "option2": "ice",
             "answer": "1"}]
    return parquet_repo("winogrande", {"winogrande_xl": {"train": rows[:2], "validation": rows,
                                                         "test": [dict(r, answer="") for r in rows[:2]]}})


def wikitext_document_level() -> Files:
    """EleutherAI/wikitext_document_level: configs wikitext-2-raw-v1 and
    others, splits train, validation and test, one document per row in
    page, tokenised as WikiText is (`` @-@ ``, `` , ``) (layout assumed:
    the converter's)."""
    pages = [" = Valkyria Chronicles = \n Senjō no Valkyria 3 is a tactical role @-@ playing game , released in 2011 . "
             "It was well received , and sold 10 @,@ 000 copies . \n",
             " = Tower Bridge = \n Tower Bridge is a bridge in London , built between 1886 and 1894 . "
             "It crosses the River Thames ( near the Tower ) . \n",
             " = Blue whale = \n The blue whale is a marine mammal ; it is the largest animal known to have lived . "
             "Its length is 29 @.@ 9 metres . \n"]
    rows = [{"page": p} for p in pages]
    return parquet_repo("wikitext_document_level",
                        {"wikitext-2-raw-v1": {"train": rows[:1], "validation": rows[1:], "test": rows}})


MMLU_SUBJECTS = (
    "abstract_algebra anatomy astronomy business_ethics clinical_knowledge college_biology college_chemistry "
    "college_computer_science college_mathematics college_medicine college_physics computer_security "
    "conceptual_physics econometrics electrical_engineering elementary_mathematics formal_logic global_facts "
    "high_school_biology high_school_chemistry high_school_computer_science high_school_european_history "
    "high_school_geography high_school_government_and_politics high_school_macroeconomics high_school_mathematics "
    "high_school_microeconomics high_school_physics high_school_psychology high_school_statistics "
    "high_school_us_history high_school_world_history human_aging human_sexuality international_law jurisprudence "
    "logical_fallacies machine_learning management marketing medical_genetics miscellaneous moral_disputes "
    "moral_scenarios nutrition philosophy prehistory professional_accounting professional_law "
    "professional_medicine professional_psychology public_relations security_studies sociology us_foreign_policy "
    "virology world_religions").split()


def mmlu() -> Files:
    """cais/mmlu: one config per subject, splits test, validation and dev
    (the few-shot pool); answer is the index of the right choice."""
    configs = {}
    for k, subject in enumerate(MMLU_SUBJECTS):
        topic = subject.replace("_", " ")
        rows = [{"question": f"Question {i} on {topic}: which option is correct? ", "subject": subject,
                 "choices": [f"{topic} {w}" for w in ("alpha", "beta", "gamma", "delta")], "answer": (k + i) % 4}
                for i in range(3)]
        configs[subject] = {"test": rows[:2], "validation": rows[2:], "dev": rows}
    return parquet_repo("mmlu", configs)


def discrim_eval() -> Files:
    """Anthropic/discrim-eval: configs explicit and implicit, one JSON
    lines file each (split train) (layout assumed)."""
    rows = []
    for q in range(2):
        for race in ("white", "Black", "Asian", "Hispanic", "Native American"):
            for gender in ("male", "female", "non-binary"):
                for age in (30, 60):
                    rows.append({"filled_template": f"The applicant is a {age}-year-old {race} {gender} person. "
                                                    f"Should case {q} be approved?",
                                 "decision_question_id": q, "age": float(age), "gender": gender, "race": race,
                                 "fill_type": "explicit"})
    files = {"explicit.jsonl": jsonl(rows), "implicit.jsonl": jsonl([dict(r, fill_type="implicit") for r in rows])}
    files["README.md"] = readme({"explicit": {"train": "explicit.jsonl"}, "implicit": {"train": "implicit.jsonl"}},
                                "discrim-eval")
    return files


def sciq() -> Files:
    """allenai/sciq: one config, splits train, validation and test under
    data/."""
    rows = [{"question": "What do plants need for photosynthesis?", "distractor3": "salt", "distractor1": "sand",
             "distractor2": "oil", "correct_answer": "sunlight", "support": "Plants use sunlight to make food."},
            {"question": "What is the boiling point of water in Celsius?", "distractor3": "50", "distractor1": "0",
             "distractor2": "10", "correct_answer": "100", "support": " Water boils at 100 degrees."},
            {"question": "Which organ pumps blood?", "distractor3": "lung", "distractor1": "liver",
             "distractor2": "skin", "correct_answer": "heart", "support": ""},
            {"question": "What force pulls objects down?", "distractor3": "magnetism", "distractor1": "friction",
             "distractor2": "tension", "correct_answer": "gravity", "support": "Gravity pulls things toward Earth."}]
    return parquet_repo("sciq", {"default": {"train": rows[:2], "validation": rows[2:], "test": rows}},
                        folder={"default": "data"})


def openbookqa() -> Files:
    """allenai/openbookqa: configs main and additional, splits train,
    validation and test."""
    rows = [{"id": f"obqa{i}", "question_stem": q, "choices": {"text": t, "label": ["A", "B", "C", "D"]},
             "answerKey": k}
            for i, (q, t, k) in enumerate([
                ("The sun is responsible for", ["puppies", "plants growing", "rocks", "snow"], "B"),
                ("Which conducts electricity?", ["wood", "plastic", "copper", "glass"], "C"),
                ("A magnet attracts", ["iron", "paper", "water", "cloth"], "A"),
                ("What do bees make?", ["milk", "silk", "wool", "honey"], "D")])]
    additional = [dict(r, fact1="Plants need sunlight.", humanScore=1.0, clarity=2.0, turkIdAnonymized="x")
                  for r in rows]
    return parquet_repo("openbookqa", {"main": {"train": rows[:2], "validation": rows[2:], "test": rows},
                                       "additional": {"train": additional, "validation": additional,
                                                      "test": additional}})


def piqa() -> Files:
    """baber/piqa: one config, splits train, validation and test under
    data/ (layout assumed: the converter's)."""
    rows = [{"goal": "How do you open a jar?", "sol1": "Twist the lid.", "sol2": "Freeze the jar.", "label": 0},
            {"goal": "How do you dry wet hands?", "sol1": "Wave them in water.", "sol2": "Use a towel.", "label": 1},
            {"goal": "How do you cool hot soup?", "sol1": "Blow on it.", "sol2": "Add pepper.", "label": 0},
            {"goal": "How do you light a dark room?", "sol1": "Close the blinds.", "sol2": "Switch on a lamp.",
             "label": 1}]
    return parquet_repo("piqa", {"default": {"train": rows[:2], "validation": rows, "test": rows[:1]}},
                        folder={"default": "data"})


def glue() -> Files:
    """nyu-mll/glue: one config per task (cola, mrpc and rte here), splits
    train, validation and test."""
    cola = [{"sentence": s, "label": y, "idx": i} for i, (s, y) in enumerate([
        ("The cat sat on the mat.", 1), ("Cat the mat on sat.", 0), ("She reads books every day.", 1),
        ("Books she every reads day.", 0), ("The sky is blue.", 1), ("Is blue the sky the.", 0)])]
    pairs = [("The car is red.", "The automobile is red.", 1), ("He runs fast.", "He is slow.", 0),
             ("It rained all day.", "There was rain the whole day.", 1), ("I like tea.", "The moon is far.", 0),
             ("She won the race.", "She came first in the race.", 1)]
    mrpc = [{"sentence1": a, "sentence2": b, "label": y, "idx": i} for i, (a, b, y) in enumerate(pairs)]
    rte = [{"sentence1": a, "sentence2": b, "label": 1 - y, "idx": i} for i, (a, b, y) in enumerate(pairs)]
    return parquet_repo("glue", {name: {"train": rows[:2], "validation": rows, "test": rows[:1]}
                                 for name, rows in (("cola", cola), ("mrpc", mrpc), ("rte", rte))})


def commonsense_qa() -> Files:
    """tau/commonsense_qa: one config, splits train, validation and test
    under data/; choices a struct of five labels and texts."""
    items = [("Where do you keep milk cold?", ["oven", "fridge", "drawer", "garden", "car"], "B"),
             ("What do you use to cut paper?", ["spoon", "pillow", "scissors", "cup", "shoe"], "C"),
             ("Where do fish live?", ["water", "desert", "sky", "attic", "road"], "A"),
             ("What do you wear on your feet?", ["hat", "glove", "scarf", "belt", "shoes"], "E")]
    rows = [{"id": f"csqa{i}", "question": q, "question_concept": "thing",
             "choices": {"label": list("ABCDE"), "text": t}, "answerKey": k} for i, (q, t, k) in enumerate(items)]
    return parquet_repo("commonsense_qa", {"default": {"train": rows[:2], "validation": rows,
                                                       "test": [dict(r, answerKey="") for r in rows[:1]]}},
                        folder={"default": "data"})


def xwinograd() -> Files:
    """Muennighoff/xwinograd: one config per language (en and fr here),
    split test; answer is the string "1" or "2" (layout assumed: the
    converter's)."""
    rows = [{"sentence": "The city council denied the protesters a permit because _ feared violence.",
             "option1": "the council", "option2": "the protesters", "answer": "1"},
            {"sentence": "The ball broke the table because _ was made of glass.", "option1": "the ball",
             "option2": "the table", "answer": "2"},
            {"sentence": "Joan thanked Susan for the help _ had given.", "option1": "Joan", "option2": "Susan",
             "answer": "2"},
            {"sentence": "The fish ate the worm because _ was hungry.", "option1": "the fish",
             "option2": "the worm", "answer": "1"}]
    return parquet_repo("xwinograd", {"en": {"test": rows}, "fr": {"test": rows[:2]}})


def race() -> Files:
    """EleutherAI/race: RACE grouped by article (config high, split test
    only); problems is the Python literal of a list of {question, answer,
    options} (layout assumed: the converter's)."""
    def problems(items: list[tuple[str, str, list[str]]]) -> str:
        return repr([{"question": q, "answer": a, "options": o} for q, a, o in items])

    rows = [{"article": "Tom grew tomatoes in a small garden behind his house. Every morning he watered them.",
             "problems": problems([("Where did Tom grow tomatoes?", "B", ["In a shop", "Behind his house",
                                                                            "On a boat", "At school"]),
                                   ("Tom watered the plants every  _  .", "C", ["night", "week", "morning",
                                                                                 "year"]),
                                   ("What did Tom grow?", "A", ["Tomatoes", "Apples", "Roses", "Wheat"])])},
            {"article": "The museum opened in 1990. It shows old ships and maps of the sea.",
             "problems": problems([("When did the museum open?", "D", ["1890", "1950", "1980", "1990"]),
                                   ("What does the museum show?", "B", ["Cars", "Ships and maps", "Paintings",
                                                                       "Birds"])])},
            {"article": "Mia practises the piano for an hour a day because she has a concert soon.",
             "problems": problems([("Why does Mia practise?", "C", ["She is bored", "Her teacher is ill",
                                                                   "She has a concert", "It is raining"])])},
            {"article": "Birds fly south in winter to find food and warmer weather.",
             "problems": problems([("Why do birds fly south?", "A", ["For food and warmth", "To sleep",
                                                                    "To build ships", "To find snow"]),
                                   ("When do they go?", "D", ["Spring", "Summer", "Autumn rain", "Winter"])])}]
    return parquet_repo("race", {"high": {"test": rows}})


def siqa() -> Files:
    """lighteval/siqa: one config, splits train and validation under data/;
    label is the string "1", "2" or "3"."""
    items = [("Tracy didn't go home that evening and resisted Riley's attacks.", "What does Tracy need to do before this?",
              ["make a new plan", "go home and see Riley", "find somewhere to go"], "3"),
             ("Sydney walked past a homeless woman asking for change.", "How would you describe Sydney?",
              ["sympathetic", "like a person who was unable to help", "incredulous"], "1"),
             ("Sasha protected the patients' rights by making new laws.", "What will patients want to do next?",
              ["write new laws", "get petitions signed", "live longer"], "3"),
             ("Jordan was in charge of taking the food on the camping trip.", "How would Jordan feel afterwards?",
              ["horrible that he let his friends down", "happy that he did", "angry at the rain"], "2"),
             ("Kendall opened their mouth to speak and what came out shocked everyone.", "How would you describe Kendall?",
              ["a very quiet person", "a very aggressive and talkative person", "a shy person"], "2")]
    rows = [{"context": c, "question": q, "answerA": a[0], "answerB": a[1], "answerC": a[2], "label": y}
            for c, q, a, y in items]
    return parquet_repo("siqa", {"default": {"train": rows[:2], "validation": rows}}, folder={"default": "data"})


def math_qa() -> Files:
    """regisss/math_qa: one config, splits train, validation and test under
    data/; options is one string ("a ) 12 , b ) 14 , ..."), correct a
    letter."""
    def row(problem: str, options: list[str], correct: str) -> dict:
        text = " , ".join(f"{letter} ) {o}" for letter, o in zip("abcde", options))
        return {"Problem": problem, "Rationale": "\"explained\"", "options": text, "correct": correct,
                "annotated_formula": "add(n0, n1)", "linear_formula": "add(n0,n1)|", "category": "general"}

    rows = [row("what is 5 plus 7 ?", ["10", "11", "12", "13", "none of these"], "c"),
            row("a train covers 60 km in 1.5 hours . find its speed .", ["30 kmph", "40 kmph", "45 kmph",
                                                                          "50 kmph", "90 kmph"], "b"),
            row("the average of 2 , 4 and 6 is ?", ["2", "4", "6", "8", "3"], "b"),
            row("if x / 4 = 3 , what is x ?", ["7", "1", "0.75", "12", "16"], "d"),
            row("what percent of 200 is 50 ?", ["25 %", "20 %", "50 %", "40 %", "4 %"], "a")]
    return parquet_repo("math_qa", {"default": {"train": rows[:2], "validation": rows[2:], "test": rows}},
                        folder={"default": "data"})


def logiqa() -> Files:
    """EleutherAI/logiqa: config logiqa, splits train, validation and test;
    label the letter "a"-"d", options a list of four strings (layout
    assumed: the converter's)."""
    items = [("All cats are animals. Tom is a cat.", "Which must be true?",
              ["Tom is an animal.", "Tom is a dog.", "All animals are cats.", "Tom is not an animal."], "a"),
             ("If it rains, the road is wet. The road is not wet.", "What follows?",
              ["It rained.", "It may have rained.", "It did not rain.", "The road is dry because of the sun."], "c"),
             ("Some students play chess. All chess players are patient.", "Which must be true?",
              ["All students are patient.", "Some students are patient.", "No student is patient.",
               "Chess is hard."], "b"),
             ("Anna is taller than Ben. Ben is taller than Carl.", "Who is the shortest?",
              ["Anna", "Ben", "They are equal", "Carl"], "d")]
    rows = [{"label": y, "context": c, "question": q, "options": o} for c, q, o, y in items]
    return parquet_repo("logiqa", {"logiqa": {"train": rows[:2], "validation": rows[2:], "test": rows}})


def anli() -> Files:
    """facebook/anli: config plain_text, splits train_r1, dev_r1, test_r1
    (and _r2, _r3) as plain_text/<split>-00000-of-00001.parquet; label a
    ClassLabel (entailment, neutral, contradiction)."""
    import datasets

    features = datasets.Features({
        "uid": datasets.Value("string"), "premise": datasets.Value("string"),
        "hypothesis": datasets.Value("string"),
        "label": datasets.ClassLabel(names=["entailment", "neutral", "contradiction"]),
        "reason": datasets.Value("string")})
    pairs = [("The cat is sleeping on the warm sofa.", "An animal is resting.", 0),
             ("The cat is sleeping on the warm sofa.", "The cat is chasing a mouse.", 2),
             ("A man plays the guitar on a stage.", "The man is famous.", 1),
             ("The shop closes at six every evening.", "The shop is open at noon.", 1),
             ("Paris is the capital of France.", "Paris is in Germany.", 2),
             ("She bought three apples and two pears.", "She bought fruit.", 0)]
    splits = {}
    for r in (1, 2, 3):
        rows = [{"uid": f"r{r}_{i}", "premise": p, "hypothesis": h, "label": y, "reason": ""}
                for i, (p, h, y) in enumerate(pairs[r - 1:] + pairs[:r - 1])]
        splits.update({f"train_r{r}": rows[:2], f"dev_r{r}": rows[2:4], f"test_r{r}": rows[:4 + r % 2]})
    return parquet_repo("anli", {"plain_text": splits}, features)


def pubmed_qa() -> Files:
    """bigbio/pubmed_qa: config pubmed_qa_labeled_fold0_source, splits
    train, validation and test; CONTEXTS a list of strings, final_decision
    "yes", "no" or "maybe" (layout assumed: the converter's)."""
    def row(i: int, question: str, contexts: list[str], decision: str) -> dict:
        return {"QUESTION": question, "CONTEXTS": contexts, "LABELS": ["BACKGROUND"] * len(contexts),
                "MESHES": ["Humans"], "YEAR": "2010", "reasoning_required_pred": decision,
                "reasoning_free_pred": decision, "final_decision": decision,
                "LONG_ANSWER": f"Answer {i} explained."}

    rows = [row(0, "Does coffee improve attention?", ["Forty adults drank coffee.", "Attention scores rose."], "yes"),
            row(1, "Is the drug safe in children?", ["The trial enrolled adults only."], "maybe"),
            row(2, "Does walking lower blood pressure?", ["Patients walked daily.", "Pressure fell slightly.",
                                                           "The effect was small."], "yes"),
            row(3, "Do vitamins cure colds?", ["No difference was found between groups."], "no"),
            row(4, "Does sleep affect memory?", ["Students slept 8 hours.", "Recall improved."], "yes")]
    return parquet_repo("pubmed_qa", {"pubmed_qa_labeled_fold0_source": {"train": rows[:2], "validation": rows[2:3],
                                                                         "test": rows}})


def headqa() -> Files:
    """EleutherAI/headqa: configs en and es, splits train, validation and
    test; answers a list of {aid, atext}, ra the right aid (1-based), image
    an Image column (empty here) (layout assumed: the converter's)."""
    import datasets

    features = datasets.Features({
        "name": datasets.Value("string"), "year": datasets.Value("string"), "category": datasets.Value("string"),
        "qid": datasets.Value("int32"), "qtext": datasets.Value("string"), "ra": datasets.Value("int32"),
        "image": datasets.Image(),
        "answers": [{"aid": datasets.Value("int32"), "atext": datasets.Value("string")}]})

    def row(qid: int, text: str, answers: list[str], right: int) -> dict:
        return {"name": "Cuaderno_2013_1_B", "year": "2013", "category": "biology", "qid": qid, "qtext": text,
                "ra": right, "image": None,
                "answers": [{"aid": k + 1, "atext": a} for k, a in enumerate(answers)]}

    en = [row(1, "Which organelle makes ATP?", ["Ribosome", "Mitochondrion", "Golgi body", "Lysosome"], 2),
          row(2, "Which vitamin is made in the skin?", ["Vitamin C", "Vitamin B12", "Vitamin D", "Vitamin K"], 3),
          row(3, "Normal body temperature is about:", ["37 C", "30 C", "40 C", "33 C"], 1),
          row(4, "Insulin is produced by the:", ["liver", "kidney", "spleen", "pancreas"], 4)]
    es = [row(1, "¿Qué orgánulo produce ATP?", ["Ribosoma", "Mitocondria", "Aparato de Golgi", "Lisosoma"], 2),
          row(2, "La insulina se produce en el:", ["hígado", "riñón", "bazo", "páncreas"], 4),
          row(3, "La temperatura corporal normal es:", ["37 C", "30 C", "40 C", "33 C"], 1)]
    return parquet_repo("headqa", {"en": {"train": en[:2], "validation": en[2:], "test": en},
                                   "es": {"train": es[:1], "validation": es[1:], "test": es}}, features)


HUB_REPOS: dict[str, Callable[[], Files]] = {
    "openai/gsm8k": gsm8k, "SaylorTwift/bbh": bbh, "allenai/ai2_arc": ai2_arc, "MMMU/MMMU": mmmu,
    "mandarjoshi/trivia_qa": trivia_qa, "google-research-datasets/nq_open": nq_open,
    "truthfulqa/truthful_qa": truthful_qa, "aps/super_glue": super_glue,
    "EleutherAI/lambada_openai": lambada_openai, "cimec/lambada": lambada, "Rowan/hellaswag": hellaswag,
    "allenai/winogrande": winogrande, "EleutherAI/wikitext_document_level": wikitext_document_level,
    "cais/mmlu": mmlu, "Anthropic/discrim-eval": discrim_eval, "allenai/sciq": sciq,
    "allenai/openbookqa": openbookqa, "baber/piqa": piqa, "nyu-mll/glue": glue,
    "tau/commonsense_qa": commonsense_qa, "Muennighoff/xwinograd": xwinograd, "EleutherAI/race": race,
    "lighteval/siqa": siqa, "regisss/math_qa": math_qa, "EleutherAI/logiqa": logiqa, "facebook/anli": anli,
    "bigbio/pubmed_qa": pubmed_qa, "EleutherAI/headqa": headqa,
}
