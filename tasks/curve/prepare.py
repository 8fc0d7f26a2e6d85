"""``avhb prepare curve_<locale>``: fetch ``curve.json`` and the videos.

:func:`fetch` writes the layout the loader reads::

    DEST/curve.json
    DEST/videos/<YouTube id>.mp4
    DEST/manifest.json     what was fetched and what could not be, with why

It is resumable: the JSON goes through :func:`avhb.data.download.fetch_http`
(HTTP Range on a ``.part`` file); a video already in ``videos/`` is not
fetched again; yt-dlp continues its own ``.part`` files.  A video that
cannot be fetched (removed, private, region-locked) is listed in the
manifest with the question keys that need it, and the run reports those
samples as media errors.  yt-dlp is an optional extra (``pip install
yt-dlp``), imported only when a video is fetched.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from avhb import PrepareResult, UserError, fetch_http, run_items, write_atomic

from . import hooks

CURVE_JSON_URL = "https://storage.googleapis.com/neptunedata/curve.json"

VideoFetcher = Callable[[str, Path], None]  # (url, destination .mp4) -> None; raises on failure


@dataclass
class VideoJob:
    youtube_id: str
    url: str
    keys: list[str]


def video_jobs(records: Iterable[dict[str, Any]], locales: Iterable[str] | None = None) -> list[VideoJob]:
    """One job per distinct YouTube id, in first-seen order, for the
    records of ``locales`` (all when None)."""
    wanted = {loc.replace("_", "-") for loc in locales} if locales else None
    jobs: dict[str, VideoJob] = {}
    for r in records:
        if wanted is not None and str(r.get("locale", "")).replace("_", "-") not in wanted:
            continue
        vid = hooks.youtube_id(str(r.get("video_id", "")))
        if vid is None:
            continue  # the loader reports it by key
        job = jobs.setdefault(vid, VideoJob(vid, str(r["video_id"]), []))
        job.keys.append(str(r.get("key")))
    return list(jobs.values())


def ytdlp_fetcher(url: str, dest: Path) -> None:
    """Download one video with yt-dlp into ``dest`` (an .mp4).  Partial
    downloads live in ``videos/.partial/`` and are continued next time."""
    try:
        import yt_dlp
    except ImportError:
        raise UserError("fetching CURVE videos needs yt-dlp: pip install yt-dlp "
                        "(or place the files in videos/<YouTube id>.mp4 yourself)") from None
    work = dest.parent / ".partial"
    work.mkdir(parents=True, exist_ok=True)
    options = {
        "outtmpl": str(work / (dest.stem + ".%(ext)s")),
        "format": "bv*[ext=mp4]+ba[ext=m4a]/b[ext=mp4]/bv*+ba/b",
        "merge_output_format": "mp4",
        "continuedl": True,
        "retries": 3,
        "quiet": True,
        "no_warnings": True,
        "noprogress": True,
        "noplaylist": True,
    }
    try:
        with yt_dlp.YoutubeDL(options) as ydl:
            info = ydl.extract_info(url, download=True)
            got = Path(ydl.prepare_filename(info))
    except yt_dlp.utils.DownloadError as exc:
        raise UserError(" ".join(str(exc).split()).removeprefix("ERROR: ")) from None
    if got.suffix != ".mp4":
        alt = got.with_suffix(".mp4")
        got = alt if alt.is_file() else got
    if not got.is_file():
        raise UserError(f"yt-dlp reported success but wrote no file for {url}")
    os.replace(got, dest)


def fetch(dest: Path, *, locales: Iterable[str] | None = None, url: str = CURVE_JSON_URL,
          sha256: str | None = None, video_fetcher: VideoFetcher | None = None,
          json_fetcher: Callable[..., Path] = fetch_http, max_videos: int | None = None) -> PrepareResult:
    """Fetch CURVE into ``dest`` and write ``dest/manifest.json``.

    ``locales`` (``ta-IN`` or ``ta_IN``; None = all) selects whose videos
    are fetched; the JSON is always the whole file.  ``video_fetcher(url,
    path)`` defaults to yt-dlp; ``max_videos`` caps the videos attempted
    (for a quick partial copy).  Returns the :class:`PrepareResult`; items
    are ``json:curve.json`` and ``video:<id>``, failures carry one-line
    reasons.  Raises ``UserError`` only when the JSON itself cannot be had.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    json_path = dest / hooks.JSON_NAME
    json_fetcher(url, json_path, sha256)
    records = hooks.read_records(json_path)
    jobs = video_jobs(records, locales)
    if max_videos is not None:
        jobs = jobs[:max_videos]
    fetcher = video_fetcher or ytdlp_fetcher
    videos = dest / "videos"
    videos.mkdir(exist_ok=True)

    def one(job: VideoJob) -> Callable[[], None]:
        def run() -> None:
            out = videos / f"{job.youtube_id}.mp4"
            if out.is_file() and out.stat().st_size > 0:
                return  # resume: already here
            fetcher(job.url, out)
            if not out.is_file() or out.stat().st_size == 0:
                raise UserError(f"no file written for {job.url}")
        return run

    result = PrepareResult(ok=["json:" + hooks.JSON_NAME])
    result = result.merge(run_items((f"video:{j.youtube_id}", one(j)) for j in jobs))
    partial = videos / ".partial"
    if partial.is_dir() and not any(partial.iterdir()):
        shutil.rmtree(partial, ignore_errors=True)
    _write_manifest(dest / "manifest.json", result, jobs, locales)
    return result


def _write_manifest(path: Path, result: PrepareResult, jobs: list[VideoJob], locales) -> None:
    by_id = {j.youtube_id: j for j in jobs}
    data = result.to_json()
    data["locales"] = sorted({loc.replace("_", "-") for loc in locales}) if locales else "all"
    data["videos"] = {"wanted": len(jobs), "ok": sum(1 for x in result.ok if x.startswith("video:")),
                      "failed": len([f for f in result.failed if f[0].startswith("video:")])}
    data["failed"] = [{"item": item, "reason": reason,
                       "url": by_id[item[6:]].url if item[6:] in by_id else None,
                       "keys": by_id[item[6:]].keys if item[6:] in by_id else []}
                      for item, reason in result.failed]
    text = json.dumps(data, indent=1, ensure_ascii=False)
    write_atomic(path, lambda fh: fh.write(text))


def prepare_task(dest: Path, config: dict) -> PrepareResult:
    """The ``prepare`` hook ``avhb prepare curve_<locale>`` calls: the JSON
    plus the videos of the task's locale."""
    locale = (config.get("dataset_kwargs") or {}).get("locale")
    return fetch(Path(dest), locales=[locale] if locale else None)
