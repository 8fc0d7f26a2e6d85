"""The comparison the differentials over real task folders make
(tests/compat/real/compare.py), on requests and results written here: a
comparator that let a difference through would pass every row."""
from __future__ import annotations

import base64
import io

from PIL import Image

from tests.compat.real.compare import compare_requests, describe_metrics, group_names_of, metric_pairs


def _png(color: tuple[int, int, int], level: int = 6, size: tuple[int, int] = (6, 4)) -> str:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG", compress_level=level)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _chat(content, **settings) -> dict:
    return {"model": "x", "messages": [{"role": "user", "content": content}],
            **{"stop": ["\n"], "max_tokens": 8, "temperature": 0, **settings}}


def test_chat_requests_compare_text_settings_and_image_pixels():
    image = [{"type": "image_url", "image_url": {"url": _png((9, 9, 9))}}, {"type": "text", "text": "Q"}]
    same_pixels = [{"type": "image_url", "image_url": {"url": _png((9, 9, 9), level=1)}}, {"type": "text", "text": "Q"}]
    assert compare_requests([_chat(image)], [_chat(same_pixels)]).equal  # another encoding of one picture
    assert compare_requests([_chat("Q")], [_chat([{"type": "text", "text": "Q"}])]).equal  # one text part = a string
    for other in (_chat([{"type": "image_url", "image_url": {"url": _png((9, 9, 8))}}, {"type": "text", "text": "Q"}]),
                  _chat([{"type": "text", "text": "Q"}]), _chat(image, stop=["\n\n"]), _chat(image, max_tokens=9),
                  _chat(image, temperature=0.5)):
        diff = compare_requests([_chat(image)], [other])
        assert not diff.equal and diff.missing and diff.extra and "first:" in diff.describe()
    assert compare_requests([_chat(image), _chat(image)], [_chat(image)]).describe().startswith("1 of the peer's 2")


def test_completion_prompts_count_once_each_batched_or_not():
    one = {"prompt": [1, 2, 3], "echo": True, "logprobs": 1, "max_tokens": 1, "temperature": 0}
    two = dict(one, prompt=[4, 5])
    batched = dict(one, prompt=[[1, 2, 3], [4, 5]])
    assert compare_requests([one, two], [batched]).equal
    assert not compare_requests([one, two], [dict(batched, prompt=[[1, 2, 3], [4, 6]])]).equal
    assert not compare_requests([one], [dict(one, echo=False)]).equal
    assert not compare_requests([one], []).equal and "avhb sent no requests" in compare_requests([one], []).describe()


def test_every_number_the_peer_reports_is_read_under_either_spelling():
    peer = {"results": {"t": {"alias": "t", "acc,none": 0.5, "acc_stderr,none": 0.25, "mcc,none": 0.1,
                              "mcc_stderr,none": 0.3, "exact_match,strict-match": 0.2,
                              "exact_match_stderr,strict-match": "N/A"},
                        "g": {"acc,none": 0.4, "acc_stderr,none": 0.1}},
            "groups": {"g": {"acc,none": 0.4, "acc_stderr,none": 0.1}},
            "group_subtasks": {"g": ["t"], "t": []}}
    old = {"results": {"ns/t": {"acc": 0.5, "acc_stderr": 0.25, "mcc": 0.1, "exact_match,strict-match": 0.2}},
           "groups": {"ns/g": {"acc": 0.4, "acc_stderr": 0.05}}}
    new = {"results": {"ns/t": {"acc,none": 0.5, "acc_stderr,none": 0.25, "mcc,none": 0.1,
                                "exact_match,strict-match": 0.2}},
           "groups": {"ns/g": {"acc,none": 0.4}}}
    groups = group_names_of(peer)
    assert groups == {"g"}
    for ours in (old, new):
        pairs = metric_pairs(peer, ours, lambda n: f"ns/{n}", groups)
        # mcc's stderr is bootstrapped and a group's pooled differently: neither compared; "N/A" is no number
        assert sorted((p.name, p.key) for p in pairs) == [
            ("g", "acc,none"), ("t", "acc,none"), ("t", "acc_stderr,none"), ("t", "exact_match,strict-match"),
            ("t", "mcc,none")]
        assert all(p.equal for p in pairs) and describe_metrics(pairs) == ""
    off = {"results": {"ns/t": dict(new["results"]["ns/t"], **{"acc,none": 0.5 + 2e-9})}, "groups": new["groups"]}
    pairs = metric_pairs(peer, off, lambda n: f"ns/{n}", groups)
    assert "t acc,none: peer 0.5" in describe_metrics(pairs)
    missing = metric_pairs(peer, {"results": {}}, lambda n: f"ns/{n}", groups)
    assert missing and all(p.avhb is None for p in missing) and "missing in avhb" in describe_metrics(missing)
