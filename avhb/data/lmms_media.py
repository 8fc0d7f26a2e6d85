"""lmms-eval's media archives: the videos a task's hooks read from
``$HF_HOME/<cache_dir>``.

An lmms-eval video task declares ``dataset_kwargs: {video: True,
cache_dir: NAME}`` (with ``create_link``, ``force_unzip``,
``From_YouTube``): lmms-eval downloads the dataset repo and unpacks its
``.zip`` and ``.tar*`` archives under ``$HF_HOME/NAME`` (``HF_HOME``
defaulting to ``~/.cache/huggingface``; an absolute ``NAME`` or one with
``~``/``$VAR`` is used as it expands), where the task's own hooks look
for the videos.  :func:`unpack` does the same from avhb's verified
snapshot of the repo (``avhb prepare``):

* the folder is made only when it does not exist (or ``force_unzip``),
  as lmms-eval makes it; every zip is extracted into it, and each group of
  tar parts (the files named ``BASE[_N].tar*``, in name order) is read as
  one stream and extracted -- every member, where lmms-eval's
  concatenation stops at the first part's end marker;
* members that would land outside the folder (absolute paths, ``..``,
  links out of it) are refused;
* the archives are extracted into ``NAME.avhb-partial`` and renamed into
  place when every member is there, so an existing folder is a finished
  one; an interrupted unpack resumes (members already extracted with
  their size are kept);
* ``create_link`` with no archive: the folder is a link to the snapshot
  (lmms-eval links its hub-cache snapshot).

``From_YouTube`` tasks fetch videos with ``yt-dlp`` into
``$HF_HOME/<task>``; avhb does not download from YouTube, and says where
the videos go.  :func:`missing_media` is the pre-run check: what is
missing, and the command that fetches it."""
from __future__ import annotations

import os
import re
import shutil
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterator

from avhb.errors import UserError


@dataclass(frozen=True)
class MediaArchives:
    """Where a task's hooks read its media (module docstring)."""

    folder: Path
    written: str  # as the task file names it: dataset_kwargs.cache_dir, or the task (From_YouTube)
    link: bool = False
    force_unzip: bool = False
    youtube: bool = False


def hf_home() -> Path:
    """``$HF_HOME`` as lmms-eval reads it (default ``~/.cache/huggingface``)."""
    return Path(os.path.expanduser(os.environ.get("HF_HOME", "~/.cache/huggingface/")))


def media_spec(config: dict[str, Any]) -> MediaArchives | None:
    """The media folder of a task config, or None when it declares none."""
    kwargs = config.get("dataset_kwargs")
    if not isinstance(kwargs, dict):
        return None
    if kwargs.get("From_YouTube"):
        task = str(config.get("task"))
        return MediaArchives(hf_home() / task, task, youtube=True)
    if not kwargs.get("video"):
        return None
    cache_dir = kwargs.get("cache_dir")
    if not cache_dir:
        raise UserError(f"task {config.get('task')!r}: dataset_kwargs.video is set without cache_dir (the folder "
                        "under $HF_HOME its videos are unpacked into)")
    expanded = os.path.expanduser(os.path.expandvars(str(cache_dir)))
    folder = Path(expanded) if os.path.isabs(expanded) else hf_home() / expanded
    return MediaArchives(folder, str(cache_dir), link=bool(kwargs.get("create_link")),
                         force_unzip=bool(kwargs.get("force_unzip")))


def archives(snapshot: Path) -> tuple[list[Path], dict[str, list[Path]]]:
    """The repo's zip files and its tar parts grouped by base name, in name
    order (lmms-eval's grouping: ``BASE.tar*`` and ``BASE_N.tar*``).  Files
    under a hidden folder are not the repo's (huggingface_hub's
    ``.cache/huggingface/download/*.tar.lock``): lmms-eval's recursive glob
    does not see them either."""
    def found(pattern: str) -> list[Path]:
        return sorted(p for p in snapshot.rglob(pattern) if p.is_file()
                      and not any(part.startswith(".") for part in p.relative_to(snapshot).parts))

    zips = found("*.zip")
    groups: dict[str, list[Path]] = {}
    for part in found("*.tar*"):
        base = re.sub(r"_\d+$", "", str(part).split(".tar")[0])
        groups.setdefault(base, []).append(part)
    return zips, groups


def missing_media(task_name: str, config: dict[str, Any], snapshot: Path | None) -> str | None:
    """Why a task's media is not where its hooks read it, with the command
    that puts it there; None when it is there (or the task reads none)."""
    spec = media_spec(config)
    if spec is None or spec.folder.exists():
        return None
    if spec.youtube:
        return (f"task {task_name!r}: its videos are not on this machine: lmms-eval downloads them from YouTube "
                f"(yt-dlp) into $HF_HOME/{spec.written} ({spec.folder}), which avhb does not do; put each video "
                "there as <videoID>.mp4")
    if snapshot is not None and snapshot.is_dir():
        zips, tars = archives(snapshot)
        if not zips and not tars and not spec.link:
            return None  # lmms-eval makes no folder either: the hooks find their media themselves
        what = f"{len(zips)} zip and {sum(map(len, tars.values()))} tar archive(s)" if zips or tars \
            else "a link to the dataset's snapshot"
    else:
        what = "the archives of its dataset repo"
    return (f"task {task_name!r}: its videos are not on this machine: its hooks read them from "
            f"$HF_HOME/{spec.written} ({spec.folder}), made from {what}; fetch and unpack them with "
            f"`avhb prepare {task_name}`")


def unpack(spec: MediaArchives, snapshot: Path) -> str:
    """Make ``spec.folder`` from the repo files in ``snapshot`` (module
    docstring); returns what was done, in one line."""
    if spec.youtube:
        raise UserError(f"its videos come from YouTube (yt-dlp), which avhb does not download: put each one in "
                        f"{spec.folder} as <videoID>.mp4")
    if spec.folder.exists() and not spec.force_unzip and not (spec.link and spec.folder.is_symlink()):
        return f"{spec.folder} is there"
    zips, tars = archives(snapshot)
    if not zips and not tars:
        if not spec.link:
            return f"no archive in {snapshot}: nothing to unpack"
        if spec.folder.is_symlink():
            spec.folder.unlink()
        spec.folder.parent.mkdir(parents=True, exist_ok=True)
        spec.folder.symlink_to(snapshot, target_is_directory=True)
        return f"{spec.folder} -> {snapshot}"
    into = spec.folder if spec.folder.exists() else spec.folder.with_name(spec.folder.name + ".avhb-partial")
    into.mkdir(parents=True, exist_ok=True)
    count = 0
    for path in zips:
        count += _unzip(path, into)
    for parts in tars.values():
        count += _untar(parts, into)
    if into != spec.folder:
        os.replace(into, spec.folder)
    return f"{spec.folder}: {count} file(s) from {len(zips)} zip and {sum(map(len, tars.values()))} tar archive(s)"


def _target(root: Path, name: str, archive: Path) -> Path:
    target = (root / name).resolve()
    if not target.is_relative_to(root.resolve()) or os.path.isabs(name):
        raise UserError(f"{archive}: member {name!r} would be written outside {root}; refusing the archive")
    return target


def _unzip(path: Path, into: Path) -> int:
    """Extract ``path`` into ``into``; members already there with their size are kept."""
    written = 0
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                target = _target(into, info.filename, path)
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                if target.is_file() and target.stat().st_size == info.file_size:
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                written += 1
    except (zipfile.BadZipFile, EOFError) as exc:
        raise UserError(f"{path}: not a readable zip archive ({exc}); rerun `avhb prepare` to fetch it again") from None
    return written


class _Chained:
    """The bytes of several files read as one stream (tar parts)."""

    def __init__(self, parts: list[Path]):
        self._files: Iterator[Path] = iter(parts)
        self._current: IO[bytes] | None = None

    def read(self, size: int = -1) -> bytes:
        out = b""
        while size < 0 or len(out) < size:
            if self._current is None:
                nxt = next(self._files, None)
                if nxt is None:
                    break
                self._current = open(nxt, "rb")
            chunk = self._current.read(-1 if size < 0 else size - len(out))
            if not chunk:
                self._current.close()
                self._current = None
                continue
            out += chunk
        return out

    def close(self) -> None:
        if self._current is not None:
            self._current.close()


def _untar(parts: list[Path], into: Path) -> int:
    """Extract the tar that ``parts`` make, in order, into ``into``."""
    stream = _Chained(parts)
    written = 0
    try:
        with tarfile.open(fileobj=stream, mode="r|*", ignore_zeros=True) as tf:  # type: ignore[call-overload]
            for member in tf:
                target = _target(into, member.name, parts[0])
                if member.isfile() and target.is_file() and target.stat().st_size == member.size:
                    continue
                tf.extract(member, into, filter="data")
                written += member.isfile()
    except tarfile.FilterError as exc:
        raise UserError(f"{parts[0]}: {exc}; refusing the archive") from None
    except tarfile.TarError as exc:
        raise UserError(f"{parts[0]}: not a readable tar archive ({exc}); rerun `avhb prepare` to fetch it "
                        "again") from None
    finally:
        stream.close()
    return written
