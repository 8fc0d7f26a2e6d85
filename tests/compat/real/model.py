"""The scripted model both tools talk to in the differentials over real task
folders: one local OpenAI-compatible server (tests/servers/openai_server.py)
that logs every request.

A request's ``model`` is ``<tool>.<row>`` (``peer.gsm8k``, ``avhb.gsm8k``):
the log is split by tool and row from it, so rows may run concurrently.

Chat reply: one of the row's answer forms, ``forms[crc32(text) % len(forms)]``
where ``text`` is every message's text in order (roles included), so the
same prompt gets the same reply from either tool, and different documents
get different replies (right for some, wrong for others).  A row without
answer forms gets ``"no answer"``.  Text completions with ``echo`` come
from the server's deterministic character model (tests/servers/
completions.py).
"""
from __future__ import annotations

import zlib
from typing import Callable, Mapping, Sequence

from tests.servers.openai_server import ScriptedServer


def model_name(tool: str, row: str) -> str:
    return f"{tool}.{row}"


def split_model(name: str) -> tuple[str, str]:
    """(tool, row) of a request's model name."""
    tool, _, row = str(name).partition(".")
    return tool, row


def prompt_text(body: dict) -> str:
    """Every message's role and text parts, in order (a completion
    request: its prompt)."""
    if "messages" not in body:
        return str(body.get("prompt", ""))
    parts = []
    for msg in body["messages"]:
        content = msg.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
        parts.append(f"{msg.get('role')}: {content}")
    return "\n".join(parts)


def reply_rule(forms: Mapping[str, Sequence[str]]) -> Callable[[dict], str]:
    """The chat reply (module docstring); ``forms``: row -> answer forms."""
    def reply(body: dict) -> str:
        options = forms.get(split_model(body.get("model", ""))[1]) or ()
        if not options:
            return "no answer"
        return options[zlib.crc32(prompt_text(body).encode("utf-8")) % len(options)]

    return reply


def serve(log_path: str, forms: Mapping[str, Sequence[str]]) -> ScriptedServer:
    return ScriptedServer(reply=reply_rule(forms), record=False, log_path=log_path)
