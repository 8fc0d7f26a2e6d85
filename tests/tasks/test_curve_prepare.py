"""``prepare.fetch`` for CURVE against a local HTTP server: the JSON through
fetch_http, videos through yt-dlp's generic extractor (and an injected
fetcher), resume, and the manifest of what could not be fetched."""
from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from avhb.errors import UserError
from avhb.tasks.curve import hooks, prepare

VIDEO = (Path(hooks.__file__).resolve().parent / "sample" / "videos" / "avhbTamil01.mp4").read_bytes()
GOOD, GONE = ("AAAAAAAAAA1", "BBBBBBBBBB2"), "CCCCCCCCCC3"


@pytest.fixture
def server():
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            url = urlparse(self.path)
            hits.append(self.path)
            if url.path == "/curve.json":
                body, ctype = json.dumps(self.server.records).encode(), "application/json"
            elif url.path == "/watch" and parse_qs(url.query).get("v", [""])[0] in GOOD:
                body, ctype = VIDEO, "video/mp4"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    base = f"http://127.0.0.1:{srv.server_port}"
    srv.records = [
        {"key": "ta-IN_0001", "video_id": f"{base}/watch?v={GOOD[0]}", "locale": "ta-IN", "question": "q", "answer": "a"},
        {"key": "ta-IN_0002", "video_id": f"{base}/watch?v={GOOD[0]}", "locale": "ta-IN", "question": "q", "answer": "a"},
        {"key": "ta-IN_0003", "video_id": f"{base}/watch?v={GONE}", "locale": "ta-IN", "question": "q", "answer": "a"},
        {"key": "ko-KR_0001", "video_id": f"{base}/watch?v={GOOD[1]}", "locale": "ko-KR", "question": "q", "answer": "a"},
    ]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield base, hits
    srv.shutdown()
    srv.server_close()


def test_fetch_with_ytdlp_manifest_and_resume(server, tmp_path):
    pytest.importorskip("yt_dlp")  # the optional extra; the default fetcher
    base, hits = server
    dest = tmp_path / "curve"
    result = prepare.fetch(dest, locales=["ta_IN"], url=f"{base}/curve.json")
    assert (dest / "curve.json").is_file() and (dest / "videos" / f"{GOOD[0]}.mp4").read_bytes() == VIDEO
    assert not (dest / "videos" / f"{GOOD[1]}.mp4").exists()  # ko-KR not asked for
    assert result.ok == ["json:curve.json", f"video:{GOOD[0]}"]
    assert [item for item, _ in result.failed] == [f"video:{GONE}"] and "404" in result.failed[0][1]
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["complete"] is False and manifest["locales"] == ["ta-IN"]
    assert manifest["videos"] == {"wanted": 2, "ok": 1, "failed": 1}
    assert manifest["failed"][0]["keys"] == ["ta-IN_0003"] and manifest["failed"][0]["url"].endswith(GONE)
    assert not (dest / "videos" / ".partial").exists()
    # the loader reads the result; the missing video stays a visible sample
    docs = hooks.load(dest, {"dataset_kwargs": {"locale": "ta-IN"}})
    assert [d["key"] for d in docs] == ["ta-IN_0001", "ta-IN_0002", "ta-IN_0003"]
    # resume: the JSON and the fetched video are not requested again
    hits.clear()
    again = prepare.fetch(dest, locales=["ta-IN"], url=f"{base}/curve.json")
    assert not any(h.endswith(GOOD[0]) or h == "/curve.json" for h in hits)
    assert any(h.endswith(GONE) for h in hits) and f"video:{GOOD[0]}" in again.ok


def test_injected_fetcher_all_locales_and_max_videos(server, tmp_path):
    base, _ = server
    calls: list[str] = []

    def fetcher(url: str, out: Path) -> None:
        calls.append(url)
        if url.endswith(GONE):
            raise UserError("Video unavailable")
        out.write_bytes(b"mp4")

    dest = tmp_path / "c"
    result = prepare.fetch(dest, url=f"{base}/curve.json", video_fetcher=fetcher)
    assert len(calls) == 3 and len(result.ok) == 3 and result.failed == [(f"video:{GONE}", "Video unavailable")]
    calls.clear()
    prepare.fetch(dest, url=f"{base}/curve.json", video_fetcher=fetcher)
    assert calls == [f"{base}/watch?v={GONE}"]  # only what is still missing
    limited = prepare.fetch(tmp_path / "d", url=f"{base}/curve.json", video_fetcher=fetcher, max_videos=1)
    assert limited.ok == ["json:curve.json", f"video:{GOOD[0]}"]


def test_unreachable_json_is_a_user_error(server, tmp_path):
    base, _ = server
    with pytest.raises(UserError, match="404"):
        prepare.fetch(tmp_path / "x", url=f"{base}/missing.json", video_fetcher=lambda u, p: None)
