"""What the differentials over real task folders compare, row by row: the
requests each tool sent to the logging server, and the metrics the peer
reports against avhb's results.json.  Shared by the lm-eval and lmms-eval
halves.

Requests, as multisets (each document's requests once; order is free):

* chat: the messages (roles; text; an image as its size, mode and a hash
  of its pixels, so two encodings of one picture are equal), stop
  sequences, max tokens and temperature;
* text completions: each prompt's tokens, echo, logprobs, max tokens and
  temperature (a batched request counts once per prompt).

Metrics: every number the peer reports under ``metric,filter`` for the
row's tasks and groups, equal to 1e-9 (``ABS_TOL``), read from avhb under
the same key or its older spelling (``acc`` for ``acc,none``, ``acc,flt``
for a filter; ``acc_stderr`` / ``acc,flt_stderr`` for standard errors).
Standard errors are compared where the peer computes them in closed form
(a mean aggregation) for a task; bootstrapped ones and a group's (pooled
differently on purpose, docs/design.md "Group numbers") are not.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

ABS_TOL = 1e-9
MEAN_AGGREGATED = {"acc", "acc_norm", "exact_match", "acc_mutual_info", "acc_bytes", "contains", "f1_abstractive"}


# ------------------------------------------------------------------ requests


def _image_key(url: str) -> dict:
    from PIL import Image

    head, _, data = url.partition(",")
    raw = base64.b64decode(data)
    with Image.open(io.BytesIO(raw)) as img:
        img.load()
        return {"image": list(img.size), "mode": img.mode, "pixels": hashlib.sha256(img.tobytes()).hexdigest()[:16],
                "format": head.split(";")[0].removeprefix("data:")}


def _content_key(content: Any) -> Any:
    if not isinstance(content, list):
        return content
    parts = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            parts.append({"text": part.get("text")})
        elif kind == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            parts.append(_image_key(url) if url.startswith("data:") else {"image_url": url})
        else:
            parts.append({k: v for k, v in part.items() if k != "type"} | {"kind": kind})
    if len(parts) == 1 and set(parts[0]) == {"text"}:
        return parts[0]["text"]  # one text part is the same request as a plain string
    return parts


def chat_key(body: dict) -> str:
    messages = [{"role": m.get("role"), "content": _content_key(m.get("content"))} for m in body.get("messages", [])]
    temperature = body.get("temperature")
    return json.dumps({"messages": messages, "stop": body.get("stop"), "max_tokens": body.get("max_tokens"),
                       "temperature": None if temperature is None else float(temperature)}, sort_keys=True)


def prompt_keys(body: dict) -> list[str]:
    prompts = body.get("prompt")
    if isinstance(prompts, str) or (prompts and isinstance(prompts[0], int)):
        prompts = [prompts]
    temperature = body.get("temperature")
    return [json.dumps({"tokens": p, "echo": body.get("echo"), "logprobs": body.get("logprobs"),
                        "max_tokens": body.get("max_tokens"),
                        "temperature": None if temperature is None else float(temperature)})
            for p in prompts or []]


def request_keys(bodies: Iterable[dict]) -> list[str]:
    """Every request's comparison key (chat and text completions)."""
    out: list[str] = []
    for body in bodies:
        if "messages" in body:
            out.append(chat_key(body))
        elif "prompt" in body:
            out.extend(prompt_keys(body))
    return out


def _first_difference(a: str, b: str) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    lo = max(0, at - 120)
    return f"at character {at}: peer …{a[lo:at + 160]!r}… / avhb …{b[lo:at + 160]!r}…"


@dataclass
class RequestDiff:
    peer: int
    avhb: int
    missing: list[str] = field(default_factory=list)  # the peer's requests avhb did not send
    extra: list[str] = field(default_factory=list)  # avhb's requests the peer did not send

    @property
    def equal(self) -> bool:
        return self.peer > 0 and not self.missing and not self.extra

    def describe(self) -> str:
        if self.equal:
            return ""
        if not self.peer:
            return f"the peer sent no requests (avhb sent {self.avhb})"
        if not self.avhb:
            return f"avhb sent no requests (the peer sent {self.peer})"
        head = f"{len(self.missing)} of the peer's {self.peer} requests not sent by avhb, {len(self.extra)} of " \
               f"avhb's {self.avhb} not sent by the peer"
        if self.missing and self.extra:
            theirs = self.missing[0]
            ours = max(self.extra, key=lambda k: len(_common_prefix(theirs, k)))
            return f"{head}; first: {_first_difference(theirs, ours)}"
        return f"{head}; first: {(self.missing or self.extra)[0][:400]}"


def _common_prefix(a: str, b: str) -> str:
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return a[:n]


def compare_requests(peer: Iterable[dict], avhb: Iterable[dict]) -> RequestDiff:
    theirs, ours = Counter(request_keys(peer)), Counter(request_keys(avhb))
    missing, extra = theirs - ours, ours - theirs
    return RequestDiff(sum(theirs.values()), sum(ours.values()), sorted(missing.elements()), sorted(extra.elements()))


# ------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class MetricPair:
    name: str  # task or group, as the peer names it
    key: str  # the peer's "metric,filter"
    peer: float
    avhb: float | None  # None: avhb reports no such number

    @property
    def equal(self) -> bool:
        return self.avhb is not None and math.isclose(self.peer, self.avhb, rel_tol=0, abs_tol=ABS_TOL)


def _avhb_spellings(key: str) -> list[str]:
    metric, _, filt = key.partition(",")
    if metric.endswith("_stderr"):
        base = metric[: -len("_stderr")]
        return [key, f"{base}_stderr" if filt == "none" else f"{base},{filt}_stderr"]
    return [key, metric if filt == "none" else f"{metric},{filt}"]


def metric_pairs(peer_results: dict, avhb_results: dict, avhb_name: "Any", group_names: set[str]) -> list[MetricPair]:
    """A pair for every number the peer reports (module docstring);
    ``avhb_name(name)`` is avhb's name of the peer's task or group."""
    pairs: list[MetricPair] = []
    seen: set[tuple[str, str]] = set()
    for block in ("groups", "results"):
        for name, row in (peer_results.get(block) or {}).items():
            is_group = name in group_names or block == "groups"
            mine_name = avhb_name(name)
            ours = (avhb_results.get("groups") or {}).get(mine_name) or \
                (avhb_results.get("results") or {}).get(mine_name) or {}
            for key, value in row.items():
                if "," not in key or isinstance(value, bool) or not isinstance(value, (int, float)) \
                        or (name, key) in seen:
                    continue
                metric = key.partition(",")[0]
                if metric.endswith("_stderr") and (is_group or metric[: -len("_stderr")] not in MEAN_AGGREGATED):
                    continue
                seen.add((name, key))
                found = next((ours[k] for k in _avhb_spellings(key) if isinstance(ours.get(k), (int, float))), None)
                pairs.append(MetricPair(name, key, float(value), None if found is None else float(found)))
    return pairs


def group_names_of(peer_results: dict) -> set[str]:
    """The groups of a peer results file (a task's ``group_subtasks`` entry is empty)."""
    subtasks = peer_results.get("group_subtasks") or {}
    return set(peer_results.get("groups") or {}) | {name for name, members in subtasks.items() if members}


def describe_metrics(pairs: list[MetricPair]) -> str:
    if not pairs:
        return "the peer reported no metrics"
    bad = [p for p in pairs if not p.equal]
    if not bad:
        return ""
    first = bad[0]
    what = "missing in avhb" if first.avhb is None else f"avhb {first.avhb!r}"
    return f"{len(bad)} of {len(pairs)} numbers differ; first: {first.name} {first.key}: peer {first.peer!r}, {what}"
