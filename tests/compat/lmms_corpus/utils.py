"""Hooks of the lmms-eval corpus, written as lmms-eval task folders write
them: doc_to_visual returns PIL images or paths, doc_to_text takes
lmms_eval_specific_kwargs, process_results returns per-sample dicts that a
!function aggregation reduces.  They import nothing from lmms_eval."""
from PIL import Image


def image_visual(doc):
    return [Image.open(doc["image"]).convert("RGB")]


def image_path_visual(doc):
    return [doc["image"]]


def two_images_visual(doc):
    return [Image.open(doc["image"]).convert("RGB"), Image.open(doc["mirror"]).convert("RGB")]


def video_visual(doc):
    return [doc["video"]]


def audio_visual(doc):
    return [doc["audio"]]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    kwargs = lmms_eval_specific_kwargs or {}
    return f"{kwargs.get('pre_prompt', '')}{doc['question']}\nHint: {doc['hint']}{kwargs.get('post_prompt', '')}"


def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    kwargs = lmms_eval_specific_kwargs or {}
    return [{"role": "system", "content": [{"type": "text", "text": "You name colours."}]},
            {"role": "user", "content": [{"type": "image", "url": Image.open(doc["image"]).convert("RGB")},
                                         {"type": "text", "text": doc_to_text(doc, kwargs)}]}]


def process_results(doc, results):
    pred = results[0].strip().lower().rstrip(".")
    return {"colour_acc": {"id": doc["id"], "category": doc["category"], "correct": pred == doc["answer"]}}


def colour_acc(results):
    return sum(1.0 for r in results if r["correct"]) / len(results)


def process_results_flat(doc, results):
    pred = results[0]
    return {"exact": float(pred == doc["answer"]), "reply_length": float(len(pred))}
