"""lm-eval's log-likelihood output types in real runs (issue 24, item 3):
``multiple_choice`` (with acc_mutual_info), ``loglikelihood`` and
``loglikelihood_rolling`` through ``openai-completions`` against the local
server's deterministic character-level model, the numbers checked against
that model directly; and the one-line refusal on a backend without token
log-probabilities."""
from __future__ import annotations

import json
import math
import re
import textwrap
from pathlib import Path

from tests.conftest import run_cli
from tests.servers import completions as model
from tests.servers.openai_server import ScriptedServer

DOCS = [{"q": "Sky colour?", "choices": ["blue", "green", "red"], "label": 0, "answer": "blue"},
        {"q": "Grass colour?", "choices": ["green", "purple"], "label": 0, "answer": "green"},
        {"q": "Snow colour?", "choices": ["black", "white"], "label": 1, "answer": "white"}]


def ll(context: str, continuation: str) -> tuple[float, bool]:
    """The server model's log-likelihood of continuation after context,
    computed here from its definition (context's trailing spaces scored with
    the continuation, as lm-eval splits them; an empty context is BOS)."""
    head = context.rstrip()
    cont = context[len(head):] + continuation
    prefix = model.tokenize(head) if head else [model.BOS]
    tokens = prefix + model.tokenize(cont)
    total, greedy = 0.0, True
    for i in range(len(prefix), len(tokens)):
        total += model.logprob(tokens[:i], tokens[i])
        greedy = greedy and tokens[i] == model.greedy(tokens[:i])
    return total, greedy


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "ll"
    folder.mkdir()
    (folder / "test.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    common = f"""\
        dataset_path: json
        dataset_kwargs: {{data_files: {folder / 'test.jsonl'}}}
        test_split: train
        doc_to_text: "Question: {{{{q}}}}\\nAnswer:"
        """
    (folder / "mc.yaml").write_text(textwrap.dedent(common) + textwrap.dedent("""\
        task: mc
        output_type: multiple_choice
        doc_to_choice: choices
        doc_to_target: label
        metric_list:
          - metric: acc
          - metric: acc_norm
          - metric: acc_mutual_info
          - metric: exact_match
        """))
    (folder / "target.yaml").write_text(textwrap.dedent(common) + textwrap.dedent("""\
        task: target
        output_type: loglikelihood
        doc_to_target: " {{answer}}"
        """))
    (folder / "roll.yaml").write_text(textwrap.dedent(common) + textwrap.dedent("""\
        task: roll
        output_type: loglikelihood_rolling
        doc_to_target: "{{q}} It is {{answer}}, {{answer}}."
        """))
    return folder


def test_loglikelihood_output_types_through_openai_completions(tmp_path):
    folder = _folder(tmp_path)
    out = tmp_path / "run"
    with ScriptedServer() as srv:
        proc = run_cli("--tasks", "ll/mc,ll/target,ll/roll", "--include_path", str(folder), "--model",
                       f"openai-completions:fake,base_url={srv.base_url}", "--output_path", str(out), "--no_report")
        assert proc.returncode == 0, proc.stderr
        sent = [r.body for r in srv.completions()]
    results = json.loads((out / "results.json").read_text())["results"]
    acc, norm, mi, em = [], [], [], []
    for d in DOCS:
        context = f"Question: {d['q']}\nAnswer:"
        scored = [ll(context, " " + c) for c in d["choices"]]
        free = [ll("", " " + c)[0] for c in d["choices"]]
        lls = [s[0] for s in scored]
        best = max(range(len(lls)), key=lambda i: (lls[i], -i))
        acc.append(float(best == d["label"]))
        per = [x / len(c) for x, c in zip(lls, d["choices"])]
        norm.append(float(max(range(len(per)), key=lambda i: (per[i], -i)) == d["label"]))
        gain = [c - u for c, u in zip(lls, free)]
        mi.append(float(max(range(len(gain)), key=lambda i: (gain[i], -i)) == d["label"]))
        em.append(float(scored[d["label"]][1]))
    mc = results["ll/mc"]
    assert math.isclose(mc["acc"], sum(acc) / 3, abs_tol=1e-12) and math.isclose(mc["acc_norm"], sum(norm) / 3)
    assert math.isclose(mc["acc_mutual_info"], sum(mi) / 3) and math.isclose(mc["exact_match"], sum(em) / 3)
    target = results["ll/target"]
    targets = [ll(f"Question: {d['q']}\nAnswer:", f" {d['answer']}") for d in DOCS]
    assert math.isclose(target["perplexity"], math.exp(-sum(t[0] for t in targets) / 3), rel_tol=1e-12)
    assert math.isclose(target["acc"], sum(float(t[1]) for t in targets) / 3)
    texts = [f"{d['q']} It is {d['answer']}, {d['answer']}." for d in DOCS]
    rolled = [ll("", t)[0] for t in texts]
    roll = results["ll/roll"]
    words = sum(len(re.split(r"\s+", t)) for t in texts)
    nbytes = sum(len(t.encode()) for t in texts)
    assert math.isclose(roll["word_perplexity"], math.exp(-sum(rolled) / words), rel_tol=1e-12)
    assert math.isclose(roll["byte_perplexity"], math.exp(-sum(rolled) / nbytes), rel_tol=1e-12)
    assert math.isclose(roll["bits_per_byte"], -sum(rolled) / nbytes / math.log(2), rel_tol=1e-12)
    # every request was a token prompt with echo, one request per sample holding all its continuations
    assert all(b["echo"] is True and b["logprobs"] == 1 and b["max_tokens"] == 1 and b["temperature"] == 0
               for b in sent)
    first = next(b for b in sent if len(b["prompt"]) == 6)  # 3 choices + 3 context-free ones
    assert first["prompt"][0] == model.tokenize("Question: Sky colour?\nAnswer: blue")
    assert first["prompt"][3] == [model.BOS] + model.tokenize(" blue")
    sample = json.loads((out / "samples" / "ll__mc.jsonl").read_text().splitlines()[0])
    assert sample["outputs"]["gold"] == 0 and len(sample["outputs"]["loglikelihoods"]) == 6


def test_a_backend_without_log_probabilities_is_refused_in_one_line(tmp_path):
    folder = _folder(tmp_path)
    with ScriptedServer() as srv:
        proc = run_cli("--tasks", "ll/mc", "--include_path", str(folder), "--model",
                       f"openai:fake,base_url={srv.base_url}", "--output_path", str(tmp_path / "r"), "--no_report")
        assert srv.count == 0
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1
    assert line.startswith("avhb: error: task 'll/mc' (output_type multiple_choice) needs token log-probabilities, "
                           "which openai:fake does not give; backends that do: ")
    for name in ("local", "openai-completions", "vllm"):
        assert name in line
