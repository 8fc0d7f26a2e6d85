"""What lmms-eval 0.7.3 would send for each document of some tasks, built
by lmms-eval's own objects (its TaskManager, its chat task's
``doc_to_messages``, its ``ChatMessages.to_openai_messages``, its openai
model's max-tokens rule) without a model call: for the tasks on which
``lmms-eval eval --model openai`` itself fails, so that what can be compared
still is (the prompt text, the visuals, the generation settings) and the
failure is named per document.

Run with lmms-eval's interpreter, in the environment of the eval run
(``HF_HOME``, ``HF_ENDPOINT``...)::

    .venv-lmms/bin/python tests/compat/real_lmms/peer_requests.py TASK,TASK OUT.json FRAMES [-- LMMS-EVAL ARGS]

With ``-- eval ...`` it first runs lmms-eval's own command line in this
process (what the ``lmms-eval`` console script runs), then builds the
requests from the modules and data that run loaded, and exits with that
run's exit status: one import of lmms-eval instead of two.
"""
import json
import sys


def _kind(visual) -> dict:
    from PIL import Image

    if isinstance(visual, Image.Image):
        return {"type": "image", "size": list(visual.size)}
    if isinstance(visual, str):
        return {"type": "path", "path": visual}
    return {"type": type(visual).__name__}


def main(names: list[str], out_path: str, frames: int) -> None:
    from lmms_eval.models.simple.openai import _get_max_new_tokens
    from lmms_eval.protocol import ChatMessages
    from lmms_eval.tasks import TaskManager, get_task_dict

    task_dict = get_task_dict(names, TaskManager("WARNING", model_name="openai"), "chat")
    out = []
    for name, task in sorted(task_dict.items()):
        docs = task.test_docs() if task.has_test_docs() else task.validation_docs()
        gen = dict(task.config.generation_kwargs or {})
        for doc_id, doc in enumerate(docs):
            rec = {"task": name, "doc_id": doc_id, "max_tokens": _get_max_new_tokens(dict(gen)),
                   "temperature": gen.get("temperature", 0)}
            try:
                rec["text"] = task.doc_to_text(doc)
                rec["visuals"] = [_kind(v) for v in task.doc_to_visual(doc)]
                messages = ChatMessages(messages=task.doc_to_messages(doc))
                rec["messages"] = messages.to_openai_messages(video_kwargs={"nframes": frames})
            except Exception as exc:  # the failure lmms-eval's openai model meets on this document
                rec["error"] = f"{type(exc).__name__}: {exc}"
            out.append(rec)
    with open(out_path, "w") as fh:
        json.dump(out, fh, default=str)


def run_cli(args: list[str]) -> int:
    """lmms-eval's command line (its console script's ``dispatch.main``) on
    ``args``; its exit status."""
    from lmms_eval.cli.dispatch import main as cli_main

    saved, sys.argv = sys.argv, ["lmms-eval", *args]
    try:
        code = cli_main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        sys.argv = saved
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    cli = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    status = run_cli(cli) if cli else 0
    sys.stdout.flush()
    main(sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]))
    sys.exit(status)
