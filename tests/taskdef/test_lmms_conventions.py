"""lmms-eval's task conventions (issue 24, item 4): lmms_eval_specific_kwargs
resolved as lmms-eval resolves them, doc_to_visual's kinds of visuals as
message parts (PIL images, paths by extension, audio arrays with their
rate, datasets' audio decoder, lmms-eval's chat dicts), doc_to_messages in
lmms-eval's chat form, templates without their last newline, and a hook
that imports lmms_eval internals said in one line."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from avhb.errors import SampleError, UserError
from avhb.media.spec import MediaSpec
from avhb.model.messages import AudioPart, ImagePart, TextPart, VideoPart
from avhb.taskdef import include_path as include
from avhb.taskdef.config import TaskConfig
from avhb.taskdef.lmms import chat_messages, resolve_kwargs, visual_part, visual_parts
from avhb.taskdef.requests import build_request
from avhb.run.task import Task


def test_kwargs_resolve_as_lmms_eval():
    kwargs = {"default": {"pre_prompt": "D", "post_prompt": "d"}, "openai": {"pre_prompt": "O"}}
    assert resolve_kwargs(kwargs, "openai") == {"pre_prompt": "O"}  # the model's entry, alone
    merged = resolve_kwargs(kwargs, "vllm")  # else the default's keys merged over the mapping
    assert merged["pre_prompt"] == "D" and merged["post_prompt"] == "d" and "openai" in merged
    assert resolve_kwargs({"dataset": {"x": 1}}, None)["x"] == 1
    assert resolve_kwargs(None, "openai") is None
    assert resolve_kwargs({"pre_prompt": "p"}, None) == {"pre_prompt": "p"}


def test_visual_kinds(tmp_path):
    from PIL import Image

    pil = Image.new("RGB", (5, 3), (10, 20, 30))
    part = visual_part(pil, tmp_path, "s")
    assert isinstance(part, ImagePart) and part.array.shape == (3, 5, 3) and tuple(part.array[0, 0]) == (10, 20, 30)
    assert visual_part(Image.new("L", (2, 2)), tmp_path, "s").array.shape == (2, 2, 3)  # grey converted to RGB
    assert isinstance(visual_part("a/b.PNG", tmp_path, "s"), ImagePart)
    audio = visual_part("x.wav", tmp_path, "s")
    assert isinstance(audio, AudioPart) and audio.path == str(tmp_path / "x.wav")  # relative: under the data root
    video = visual_part("/abs/clip.mp4", tmp_path, "s")
    assert isinstance(video, VideoPart) and video.path == "/abs/clip.mp4" and video.labelled is False
    wave = visual_part({"array": np.ones(8) * 0.5, "sampling_rate": 8000, "path": None}, tmp_path, "s")
    assert isinstance(wave, AudioPart) and wave.rate == 8000 and wave.array.dtype == np.float32
    stereo = visual_part({"array": np.stack([np.ones(4), -np.ones(4)], axis=-1), "sampling_rate": 16000}, tmp_path, "s")
    assert stereo.array.shape == (4,) and float(stereo.array[0]) == 0.0

    class Decoder:  # datasets 4's AudioDecoder
        def get_all_samples(self):
            class S:
                data = np.ones((2, 6))
                sample_rate = 22050
            return S()

    decoded = visual_part(Decoder(), tmp_path, "s")
    assert decoded.rate == 22050 and decoded.array.shape == (6,)
    clip = visual_part({"type": "video", "url": "c.mp4", "video_start": 1.5, "video_end": 4}, tmp_path, "s")
    assert clip.segment == (1.5, 4.0) and clip.path == str(tmp_path / "c.mp4")
    assert isinstance(visual_part({"type": "image", "url": pil}, tmp_path, "s"), ImagePart)
    assert [type(p).__name__ for p in visual_parts([[pil, "v.mp4"], None, "s.mp3"], tmp_path, "s")] == \
        ["ImagePart", "VideoPart", "AudioPart"]  # one level flattened, None dropped
    with pytest.raises(SampleError, match="doc_to_visual gave int"):
        visual_part(7, tmp_path, "s")


def test_chat_messages_in_lmms_evals_form(tmp_path):
    messages = chat_messages([{"role": "system", "content": "Be brief."},
                              {"role": "user", "content": [{"type": "video", "url": "v.mp4"},
                                                           {"type": "text", "text": "What happens?"}]}], tmp_path, "s")
    assert [m.role for m in messages] == ["system", "user"]
    assert isinstance(messages[1].parts[0], VideoPart) and messages[1].parts[1] == TextPart("What happens?")
    with pytest.raises(SampleError, match="not a message"):
        chat_messages([{"role": "robot", "content": "x"}], tmp_path, "s")


def _folder(tmp_path: Path, yaml_text: str, hooks: str) -> Path:
    folder = tmp_path / "lmmsf"
    folder.mkdir()
    (folder / "t.yaml").write_text(textwrap.dedent(yaml_text))
    (folder / "utils.py").write_text(textwrap.dedent(hooks))
    return folder


def _task(folder: Path, config: dict, model: str | None = "openai") -> Task:
    include.add_include_path(folder)
    cfg = TaskConfig("lmmsf/t", folder / "t.yaml", include.package_of("lmmsf"), "", config)
    return Task(cfg, None).for_model(model)  # type: ignore[arg-type]


HOOKS = '''
    def visual(doc, lmms_eval_specific_kwargs):
        return [doc["img"]] * lmms_eval_specific_kwargs["copies"]

    def text(doc, lmms_eval_specific_kwargs=None):
        kw = lmms_eval_specific_kwargs or {}
        return f"{kw.get('pre_prompt', '')}{doc['q']}{kw.get('post_prompt', '')}"

    def messages(doc, lmms_eval_specific_kwargs=None):
        return [{"role": "user", "content": [{"type": "image", "url": doc["img"]},
                                             {"type": "text", "text": text(doc, lmms_eval_specific_kwargs)}]}]

    def avhb_messages(doc, ctx):
        from avhb.model.messages import Message, TextPart
        return [Message("user", [TextPart("avhb form " + doc["q"])])]
    '''


def test_hooks_get_the_kwargs_and_build_lmms_requests(tmp_path):
    folder = _folder(tmp_path, "task: t\ndoc_to_text: x\n", HOOKS)
    try:
        config = {"doc_to_visual": {"function": "utils.visual"}, "doc_to_text": {"function": "utils.text"},
                  "lmms_eval_specific_kwargs": {"default": {"pre_prompt": "P:", "post_prompt": ":Q", "copies": 2}}}
        task = _task(folder, config, model="vllm")
        doc = {"q": "what?", "img": "/data/a.png"}
        request = build_request(task, doc, tmp_path, "0", MediaSpec())
        (message,) = request.messages
        assert [type(p).__name__ for p in message.parts] == ["ImagePart", "ImagePart", "TextPart"]
        assert message.parts[-1].text == "P:what?:Q"
        assert request.generation == {"temperature": 0.0, "max_new_tokens": 1024}  # lmms-eval's OpenAI defaults
        lmms_messages = _task(folder, {**config, "doc_to_messages": {"function": "utils.messages"}})
        msg = build_request(lmms_messages, doc, tmp_path, "0", MediaSpec()).messages[0]
        assert isinstance(msg.parts[0], ImagePart) and msg.parts[1].text == "P:what?:Q"
        ours = _task(folder, {"doc_to_messages": {"function": "utils.avhb_messages"}})
        assert build_request(ours, doc, tmp_path, "0", MediaSpec()).messages[0].text == "avhb form what?"
    finally:
        include.clear()


def test_text_tasks_render_as_lmms_eval(tmp_path):
    folder = _folder(tmp_path, "task: t\ndoc_to_text: x\n", HOOKS)
    try:
        # lmms-eval's Jinja drops a template's last newline (lm-eval keeps it); its text tasks go in one user turn
        task = _task(folder, {"doc_to_text": "Q: {{q}}\n", "description": "About {{q}}.\n",
                              "lmms_eval_specific_kwargs": {"default": {}}})
        (message,) = build_request(task, {"q": "x"}, tmp_path, "0", MediaSpec()).messages
        assert message.role == "user" and message.text == "About x.Q: x"
        plain = _task(folder, {"doc_to_text": "Q: {{q}}\n", "description": "About {{q}}.\n"})
        system, user = build_request(plain, {"q": "x"}, tmp_path, "0", MediaSpec()).messages
        assert system.text == "About x.\n" and user.text == "Q: x\n"
    finally:
        include.clear()


def test_a_hook_importing_lmms_eval_says_so(tmp_path):
    folder = _folder(tmp_path, "task: t\ndoc_to_text: x\n",
                     "from lmms_eval.tasks._task_utils.file_utils import generate_submission_file\n"
                     "def text(doc):\n    return 'x'\n")
    try:
        task = _task(folder, {"doc_to_text": {"function": "utils.text"}})
        with pytest.raises(UserError, match=r"hook 'utils.text' imports lmms_eval, which is not installed here: "
                                            r"install lmms-eval next to avhb, or write the hook without it$"):
            task.text({"q": 1})
    finally:
        include.clear()


TARGET_HOOKS = '''
    import os

    def target(doc, model_specific_target_kwargs):
        return doc[model_specific_target_kwargs]

    def plain_target(doc):
        return doc["mcq"]

    def accuracy(items, args):
        path = os.path.join(args.output_path, "submissions", "sub.txt")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(str(len(items)))
        return sum(items) / len(items)

    def for_submission(items, args):
        return None

    def not_a_number(items):
        return "high"
    '''


def test_doc_to_target_gets_the_models_target_kwargs(tmp_path):
    """ai2d: ``model_specific_target_kwargs: {default: mcq, qwen_vl: qa}``;
    lmms-eval calls ``doc_to_target(doc, <the model's entry, else default>)``,
    and ``doc_to_target(doc)`` when the task names none."""
    folder = _folder(tmp_path, "task: t\ndoc_to_text: x\n", TARGET_HOOKS)
    try:
        config = {"doc_to_text": "{{q}}", "doc_to_target": {"function": "utils.target"},
                  "model_specific_target_kwargs": {"default": "mcq", "qwen_vl": "qa"}}
        doc = {"q": "?", "mcq": "B", "qa": "a cat"}
        assert _task(folder, config, model="openai").target(doc) == "B"
        assert _task(folder, config, model="qwen_vl").target(doc) == "a cat"
        plain = {"doc_to_text": "{{q}}", "doc_to_target": {"function": "utils.plain_target"}}
        assert _task(folder, plain).target(doc) == "B"
    finally:
        include.clear()


def test_an_aggregation_naming_args_gets_lmms_evals_namespace(tmp_path):
    """egoschema, perceptiontest: ``aggregate(results, args)``; lmms-eval
    passes ``args=`` its CLI namespace, whose ``output_path`` its
    ``generate_submission_file`` writes under: here the run folder."""
    folder = _folder(tmp_path, "task: t\ndoc_to_text: x\n", TARGET_HOOKS)
    try:
        task = _task(folder, {"doc_to_text": "{{q}}"}).in_folder(tmp_path / "run")
        aggregation = task._aggregation({"function": "utils.accuracy"})
        assert aggregation.aggregate([1, 0, 1, 1]).value == 0.75
        assert (tmp_path / "run" / "submissions" / "sub.txt").read_text() == "4"
        # air_bench's *_for_submission writes a file and returns nothing: no number, not an error
        none = task._aggregation({"function": "utils.for_submission"}).aggregate([1, 0])
        assert (none.value, none.n) == (None, 2)
        with pytest.raises(UserError, match="returned str 'high', not a number"):
            task._aggregation({"function": "utils.not_a_number"}).aggregate([1])
    finally:
        include.clear()


def test_a_hook_importing_a_package_not_installed_names_it(tmp_path):
    """egoschema's utils.py imports requests: the one line names the module and how to get it."""
    folder = _folder(tmp_path, "task: t\ndoc_to_text: x\n", "import avhb_no_such_package.sub\ndef text(doc):\n    return 'x'\n")
    try:
        task = _task(folder, {"doc_to_text": {"function": "utils.text"}})
        with pytest.raises(UserError, match=r"hook 'utils.text' imports avhb_no_such_package, which is not installed "
                                            r"here: install the package that provides 'avhb_no_such_package' next "
                                            r"to avhb \(pip install avhb-no-such-package\)$"):
            task.hook("utils.text")
    finally:
        include.clear()
