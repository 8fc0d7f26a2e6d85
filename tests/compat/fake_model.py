"""The scripted model both harnesses talk to in the differential tests: a
local OpenAI-compatible server (tests/servers/openai_server.py) whose chat
replies are a pure function of the request's text, and whose text
completions come from its deterministic character-level model.

Chat reply: the text after the last ``Hint:`` in the last user message, up
to the end of that line (so a task's documents decide what the "model"
answers: right, wrong, or in a format a filter must dig out), else ``"no
hint"``.  The reply never depends on the seed, so lm-eval's repeats (the
same seed) and avhb's (seed + repeat) get the same answers.

Run standalone: ``python -m tests.compat.fake_model LOG.jsonl`` prints
``PORT <n>`` and serves until killed, logging every request.
"""
from __future__ import annotations

import sys

from tests.servers.openai_server import ScriptedServer, echo_last_user


def reply(body: dict) -> str:
    text = echo_last_user(body) if "messages" in body else str(body.get("prompt", ""))
    if "Hint:" not in text:
        return "no hint"
    return text.rsplit("Hint:", 1)[1].split("\n", 1)[0].strip()


def serve(log_path: str, port: int = 0) -> ScriptedServer:
    return ScriptedServer(reply=reply, record=False, log_path=log_path, port=port)


if __name__ == "__main__":
    server = serve(sys.argv[1])
    print(f"PORT {server.port}", flush=True)
    try:
        server._httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
