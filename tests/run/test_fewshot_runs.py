"""--num_fewshot and --fewshot_as_multiturn in real runs against a local
OpenAI-compatible server (issue 24, items 2 and 6): the seeded draw per
sample, examples that do not depend on --limit/--samples, a task's
num_fewshot: 0 kept, and examples with their own images."""
from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.servers.openai_server import ScriptedServer

TEST = [{"q": f"test{i}", "a": f"A{i}", "img": f"t{i}.png"} for i in range(5)]
TRAIN = [{"q": f"train{i}", "a": f"B{i}", "img": f"s{i}.png"} for i in range(4)]


def _folder(tmp_path: Path) -> Path:
    from PIL import Image

    folder = tmp_path / "fs"
    folder.mkdir()
    for name, rows in (("test", TEST), ("train", TRAIN)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        for i, r in enumerate(rows):
            Image.new("RGB", (8, 8), (40 * i, 0, 0)).save(folder / r["img"])
    common = f"""\
        dataset_path: json
        dataset_kwargs: {{data_files: {{test: {folder / 'test.jsonl'}, train: {folder / 'train.jsonl'}}}}}
        test_split: test
        fewshot_split: train
        doc_to_text: "Q: {{{{q}}}}\\nA:"
        doc_to_target: "{{{{a}}}}"
        generation_kwargs: {{until: ["\\n"], max_gen_toks: 8}}
        metric_list: [{{metric: exact_match}}]
        """
    (folder / "text.yaml").write_text(textwrap.dedent(common) + "task: text\n")
    (folder / "zero.yaml").write_text(textwrap.dedent(common) + "task: zero\nnum_fewshot: 0\n")
    (folder / "pics.yaml").write_text(textwrap.dedent(common) + textwrap.dedent("""\
        task: pics
        num_fewshot: 1
        description: "Name the {{q}} colour."
        media: {images: img}
        """))
    return folder


def _run(srv, folder: Path, out: Path, tasks: str, *extra: str):
    srv.reset_counters()
    proc = run_cli("--tasks", tasks, "--include_path", str(folder), "--model",
                   f"openai:fake,base_url={srv.base_url},images_per_request=8", "--output_path", str(out),
                   "--no_report", *extra)
    assert proc.returncode == 0, proc.stderr
    return {_question(r.body): r.body for r in srv.completions()}


def _question(body: dict) -> str:
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content if p["type"] == "text")
    return text.rsplit("Q: ", 1)[1].split("\n")[0]


@pytest.mark.slow  # one run through the CLI per setting: about 23 s
def test_num_fewshot_draws_as_lm_eval_and_keeps_a_samples_examples(tmp_path):
    folder = _folder(tmp_path)
    rnd = random.Random(1234)
    expected = [rnd.sample(TRAIN, 2) for _ in TEST]  # one draw per test doc, in order (the split differs: no exclusion)
    with ScriptedServer(reply=lambda body: "A0") as srv:
        sent = _run(srv, folder, tmp_path / "r1", "fs/text", "--num_fewshot", "2")
        for i, doc in enumerate(TEST):
            messages = sent[doc["q"]]["messages"]
            assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
            assert [m["content"] for m in messages] == [
                f"Q: {expected[i][0]['q']}\nA:", expected[i][0]["a"], f"Q: {expected[i][1]['q']}\nA:",
                expected[i][1]["a"], f"Q: {doc['q']}\nA:"]
        run = json.loads((tmp_path / "r1" / "run.json").read_text())
        assert run["num_fewshot"] == 2 and run["fewshot_as_multiturn"] is True
        # one user message; and sample 3 alone gets the examples it got in the full run
        one = _run(srv, folder, tmp_path / "r2", "fs/text", "--num_fewshot", "2", "--fewshot_as_multiturn", "false",
                   "--samples", "3")
        assert list(one) == ["test3"]
        (message,) = one["test3"]["messages"]
        assert message == {"role": "user", "content": f"Q: {expected[3][0]['q']}\nA: {expected[3][0]['a']}\n\n"
                                                      f"Q: {expected[3][1]['q']}\nA: {expected[3][1]['a']}\n\n"
                                                      "Q: test3\nA:"}
        # a task that sets num_fewshot: 0 keeps it, as lm-eval
        zero = _run(srv, folder, tmp_path / "r3", "fs/zero", "--num_fewshot", "3")
        assert all(len(body["messages"]) == 1 for body in zero.values())
        # a different seed, a different draw
        seeded = _run(srv, folder, tmp_path / "r4", "fs/text", "--num_fewshot", "2", "--seed", "7")
        other = random.Random(7)
        assert [m["content"] for m in seeded["test0"]["messages"][:3:2]] == \
            [f"Q: {d['q']}\nA:" for d in other.sample(TRAIN, 2)]


def test_multimodal_examples_send_their_own_images(tmp_path):
    folder = _folder(tmp_path)
    rnd = random.Random(1234)
    shots = [rnd.sample(TRAIN, 1)[0] for _ in TEST]
    with ScriptedServer(reply=lambda body: "x") as srv:
        sent = _run(srv, folder, tmp_path / "r", "fs/pics")
        body = sent["test2"]
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["system", "user", "assistant", "user"]
        assert body["messages"][0]["content"] == "Name the test2 colour."  # the description, over the sample
        example, question = body["messages"][1]["content"], body["messages"][3]["content"]
        assert [p["type"] for p in example] == ["image_url", "text"] == [p["type"] for p in question]
        assert example[1]["text"] == f"Q: {shots[2]['q']}\nA:" and body["messages"][2]["content"] == shots[2]["a"]
        # the example's own image, not the sample's: the pixels differ (red 40 x index)
        import base64
        import io

        from PIL import Image

        def red(part):
            raw = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
            return Image.open(io.BytesIO(raw)).convert("RGB").getpixel((4, 4))[0]

        assert abs(red(example[0]) - 40 * int(shots[2]["img"][1])) <= 2 and abs(red(question[0]) - 80) <= 2
