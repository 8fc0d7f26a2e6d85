"""A scripted OpenAI-compatible chat-completions server for tests.

Standard library only: ``ThreadingHTTPServer`` on 127.0.0.1, an ephemeral
port, HTTP/1.1 keep-alive, Nagle disabled (without it every keep-alive
request stalls ~40 ms on the delayed-ACK timer).

    with ScriptedServer(reply=lambda body: "B") as srv:
        srv.fail_next(2, status=429, retry_after="0.05")
        ...  # point a client at srv.base_url (".../v1")
        assert srv.count == 3

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models``, ``POST
/v1/completions`` (text completions; with ``echo`` and ``logprobs``, a
deterministic character-level language model: tests/servers/completions.py)
and vLLM's tokenizer endpoints ``GET /tokenizer_info``, ``POST /tokenize``,
``POST /detokenize`` at the server's root; and Azure
OpenAI's shape, ``POST /openai/deployments/<deployment>/chat/completions
?api-version=...``, answered as Azure answers: 404 without ``api-version``,
401 without an ``api-key`` (or ``Authorization``) header.

Scripting:
- ``reply(body) -> str | dict``: a string becomes the assistant message; a
  dict is sent as the whole JSON reply.  Default: ``"ok"``.
- ``fail_next(n, status=..., retry_after=..., body=...)``: the next ``n``
  completion requests get that HTTP error.
- ``hang_next(n, seconds)``: the next ``n`` requests sleep before replying
  (a client with a shorter timeout sees a timeout).
- ``malformed_next(n)``: the next ``n`` replies are 200 with invalid JSON.
- ``Fault(empty=True)``: 200 with an empty body; ``Fault(drop=True)``: the
  connection is closed with no reply at all.
- ``fault(index, body) -> Fault | None``: a function deciding per request
  (``index`` counts completion requests from 0); consulted after the queue.
- ``delay``: seconds every completion waits (to measure concurrency).
- ``refuse_settings(pattern)``: a ``fault`` that answers, for models whose
  name matches ``pattern``, as OpenAI answers its reasoning models: HTTP 400
  with OpenAI's own error objects for ``max_tokens`` (``Use
  'max_completion_tokens' instead``) and for a temperature other than 1
  (``Only the default (1) value is supported``).

Observation: ``count``, ``requests`` (``Recorded``: path, headers, body,
status, query, deployment), ``max_in_flight``, and ``log_path`` (one JSON line per request,
written only if given).

Run standalone (benchmarks): ``python -m tests.servers.openai_server
--port 0 [--fast]`` prints ``PORT <n>`` and serves until killed; ``--fast``
is a single-threaded asyncio server that answers every completion at once.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

_AZURE_PATH = re.compile(r"^/openai/deployments/([^/]+)/chat/completions/?$")


@dataclass
class Fault:
    """What to do instead of a normal reply.  ``status`` 0 = no error."""

    status: int = 0
    retry_after: str | None = None
    body: str | None = None
    sleep: float = 0.0  # seconds before answering (timeouts)
    malformed: bool = False  # 200 with a body that is not JSON
    empty: bool = False  # 200 with an empty body
    drop: bool = False  # close the connection without any reply


def _openai_error(message: str, param: str, code: str) -> Fault:
    return Fault(status=400, body=json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                                        "param": param, "code": code}}))


def refuse_settings(pattern: str) -> Callable[[int, dict], Fault | None]:
    """A ``fault`` refusing settings as OpenAI does for reasoning models
    (module docstring), for model names matching ``pattern``."""
    names = re.compile(pattern)

    def fault(index: int, body: dict) -> Fault | None:
        if not names.search(str(body.get("model", ""))):
            return None
        if "max_tokens" in body:
            return _openai_error("Unsupported parameter: 'max_tokens' is not supported with this model. "
                                 "Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
        t = body.get("temperature")
        if t is not None and t != 1:
            shown = int(t) if float(t).is_integer() else t
            return _openai_error(f"Unsupported value: 'temperature' does not support {shown} with this model. "
                                 "Only the default (1) value is supported.", "temperature", "unsupported_value")
        return None

    return fault


class Headers(dict):
    """Header names compared case-insensitively (stored lower-case)."""

    def __init__(self, items: Any = ()):
        super().__init__((k.lower(), v) for k, v in dict(items).items())

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


@dataclass
class Recorded:
    path: str
    headers: Headers
    body: Any
    status: int = 0
    method: str = "POST"
    query: dict[str, str] = field(default_factory=dict)
    deployment: str | None = None  # Azure's URL shape: the deployment named in the path


def echo_last_user(body: dict) -> str:
    """Reply with the text of the last user message (string or parts)."""
    for msg in reversed(body.get("messages", [])):
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    return ""


@dataclass
class _State:
    reply: Callable[[dict], Any]
    fault: Callable[[int, dict], Fault | None] | None
    delay: float
    record: bool
    log_path: str | None
    queue: deque = field(default_factory=deque)
    lock: threading.Lock = field(default_factory=threading.Lock)
    count: int = 0
    model_count: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    requests: list[Recorded] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "ScriptedOpenAI/1"
    state: _State  # set on the per-server subclass

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None

    # -- plumbing -----------------------------------------------------------
    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None,
              ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def _record(self, rec: Recorded) -> None:
        st = self.state
        if st.record:
            with st.lock:
                st.requests.append(rec)
        if st.log_path:
            line = json.dumps({"method": rec.method, "path": rec.path, "headers": rec.headers,
                               "body": rec.body, "status": rec.status, "query": rec.query,
                               "deployment": rec.deployment})
            with st.lock, open(st.log_path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    # -- endpoints ----------------------------------------------------------
    def do_GET(self) -> None:
        st = self.state
        if self.path.rstrip("/") == "/tokenizer_info":
            from tests.servers.completions import TOKENIZER_INFO

            self._record(Recorded(self.path, Headers(self.headers.items()), None, 200, "GET"))
            self._send(200, json.dumps(TOKENIZER_INFO).encode())
        elif self.path.rstrip("/").endswith("/models"):
            with st.lock:
                st.model_count += 1
            data = {"object": "list", "data": [{"id": "fake", "object": "model", "created": 0, "owned_by": "test"}]}
            self._record(Recorded(self.path, Headers(self.headers.items()), None, 200, "GET"))
            self._send(200, json.dumps(data).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        st = self.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        azure = _AZURE_PATH.match(url.path)
        deployment = azure.group(1) if azure else None
        if azure:  # as Azure OpenAI answers
            if "api-version" not in query:
                self._send(404, b'{"error": {"code": "404", "message": "Resource not found (no api-version)"}}')
                return
            if "api-key" not in self.headers and "Authorization" not in self.headers:
                self._send(401, b'{"error": {"code": "401", "message": "Access denied due to missing '
                                b'subscription key."}}')
                return
        elif url.path.rstrip("/") in ("/tokenize", "/detokenize"):
            self._tokenizer(url.path.rstrip("/"), raw)
            return
        elif not url.path.rstrip("/").endswith("/completions") or url.path.startswith("/openai/"):
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            self._send(400, b'{"error": {"message": "request body is not JSON"}}')
            return
        with st.lock:
            index = st.count
            st.count += 1
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
            fault = st.queue.popleft() if st.queue else None
        try:
            if fault is None and st.fault is not None:
                fault = st.fault(index, body)
            if st.delay:
                time.sleep(st.delay)
            status, payload, headers = self._answer(index, body, fault,
                                                    text=not url.path.rstrip("/").endswith("/chat/completions"))
            # recorded before the reply leaves, so a client that has its
            # answer always finds its request in the log
            self._record(Recorded(self.path, Headers(self.headers.items()), body, status, query=query,
                                  deployment=deployment))
        finally:
            with st.lock:
                st.in_flight -= 1
        if status is None:  # a dropped connection
            self.close_connection = True
            return
        self._send(status, payload, headers)

    def _tokenizer(self, path: str, raw: bytes) -> None:
        from tests.servers.completions import detokenize, tokenize

        body = json.loads(raw) if raw else {}
        self._record(Recorded(path, Headers(self.headers.items()), body, 200))
        if path == "/tokenize":
            tokens = tokenize(str(body.get("prompt", "")))
            self._send(200, json.dumps({"tokens": tokens, "count": len(tokens), "max_model_len": 4096}).encode())
        else:
            self._send(200, json.dumps({"prompt": detokenize(list(body.get("tokens") or []))}).encode())

    def _answer(self, index: int, body: dict, fault: Fault | None,
                text: bool = False) -> tuple[int, bytes, dict[str, str]]:
        """(status, body, extra headers) for one completion request
        (``text``: a text completion, /v1/completions)."""
        if fault is not None:
            if fault.sleep:
                time.sleep(fault.sleep)
            if fault.drop:
                return None, b"", {}  # type: ignore[return-value]
            if fault.empty:
                return 200, b"", {}
            if fault.malformed:
                return 200, b'{"id": "x", "choices": [ {"mess', {}
            if fault.status and fault.status != 200:
                headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
                payload = fault.body or json.dumps({"error": {"message": f"scripted {fault.status}",
                                                               "type": "scripted", "code": fault.status}})
                return fault.status, payload.encode(), headers
        out = self.state.reply(body)
        if isinstance(out, dict):
            return 200, json.dumps(out).encode(), {}
        if text:
            from tests.servers.completions import completion

            return 200, json.dumps(completion(body, str(out))).encode(), {}
        text = str(out)
        prompt_tokens = len(json.dumps(body.get("messages", ""))) // 4
        completion_tokens = max(1, len(text.split()))
        data = {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }
        return 200, json.dumps(data).encode(), {}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # many clients connect at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that timed out and hung up is part of the script
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class ScriptedServer:
    """See the module docstring.  Usable as a context manager."""

    def __init__(self, reply: Callable[[dict], Any] | None = None, *,
                 fault: Callable[[int, dict], Fault | None] | None = None,
                 delay: float = 0.0, record: bool = True, log_path: str | None = None,
                 port: int = 0):
        self.state = _State(reply=reply or (lambda body: "ok"), fault=fault, delay=delay,
                            record=record, log_path=log_path)
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._httpd = _Server(("127.0.0.1", port), handler)
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def endpoint(self) -> str:
        """The server's root, as an Azure resource endpoint is given."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "ScriptedServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- scripting ----------------------------------------------------------
    def fail_next(self, n: int, status: int = 500, retry_after: str | float | None = None,
                  body: str | None = None) -> None:
        ra = None if retry_after is None else str(retry_after)
        self._push(n, Fault(status=status, retry_after=ra, body=body))

    def hang_next(self, n: int, seconds: float) -> None:
        self._push(n, Fault(sleep=seconds))

    def malformed_next(self, n: int) -> None:
        self._push(n, Fault(malformed=True))

    def _push(self, n: int, fault: Fault) -> None:
        with self.state.lock:
            self.state.queue.extend([fault] * n)

    def set_reply(self, reply: Callable[[dict], Any]) -> None:
        self.state.reply = reply

    def set_fault(self, fault: Callable[[int, dict], Fault | None] | None) -> None:
        self.state.fault = fault

    # -- observation --------------------------------------------------------
    @property
    def count(self) -> int:
        """Completion requests received (faulted ones included)."""
        return self.state.count

    @property
    def max_in_flight(self) -> int:
        return self.state.max_in_flight

    @property
    def requests(self) -> list[Recorded]:
        with self.state.lock:
            return list(self.state.requests)

    def completions(self) -> list[Recorded]:
        """The completion requests (chat or text; not the tokenizer's)."""
        return [r for r in self.requests if r.method == "POST" and not r.path.rstrip("/").endswith("tokenize")]

    def reset_counters(self) -> None:
        with self.state.lock:
            self.state.count = 0
            self.state.max_in_flight = 0
            self.state.requests.clear()


try:  # a fixture other test modules can import by name
    import pytest

    @pytest.fixture
    def scripted_server():
        with ScriptedServer() as srv:
            yield srv
except ImportError:  # pragma: no cover - the standalone server needs no pytest
    pass


async def serve_fast(port: int, reply: str, ready: Callable[[int], None]) -> None:
    """An asyncio server for benchmarks: one thread, keep-alive, every
    completion answered at once with ``reply`` (request JSON still parsed);
    ``GET /v1/stats`` says how many completions it has answered.
    Much cheaper per request than the threaded server, so a benchmark
    measures the client, not the server."""
    import asyncio

    served = [0]  # completions answered, all connections (GET /v1/stats)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            import socket

            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        count = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = json.loads(await reader.readexactly(length)) if length else {}
                request_line = head.split(b"\r\n", 1)[0]
                if request_line.startswith(b"GET") and b"/models" in request_line:
                    payload = json.dumps({"object": "list", "data": [{"id": "fake", "object": "model"}]}).encode()
                elif request_line.startswith(b"GET") and b"/stats" in request_line:
                    payload = json.dumps({"completions": served[0]}).encode()
                else:
                    count += 1
                    served[0] += 1
                    payload = json.dumps({
                        "id": f"chatcmpl-{count}", "object": "chat.completion", "created": 0,
                        "model": body.get("model", "fake"),
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
                    }).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    ready(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="instant OpenAI-compatible server")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--reply", default="A", help="fixed reply text")
    ap.add_argument("--fast", action="store_true", help="asyncio server (benchmarks) instead of threads")
    args = ap.parse_args(argv)
    if args.fast:
        import asyncio

        try:
            asyncio.run(serve_fast(args.port, args.reply, lambda port: print(f"PORT {port}", flush=True)))
        except KeyboardInterrupt:
            pass
        return
    srv = ScriptedServer(reply=lambda body: args.reply, record=False, port=args.port)
    print(f"PORT {srv.port}", flush=True)
    try:
        srv._httpd.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        srv._httpd.server_close()


if __name__ == "__main__":
    main(sys.argv[1:])


def unfence(text: str) -> str:
    """A judge prompt with avhb's data fences (``<data-B>``...``</data-B>``,
    avhb/score/judges.py) removed: what a scripted judge parses."""
    import re

    return re.sub(r"</?data-[0-9a-f]+>", "", text)
