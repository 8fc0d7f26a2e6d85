"""Audio and video columns of a ``datasets.Dataset``, decoded by avhb.

``datasets`` 4 and 5 decode an ``Audio`` or ``Video`` feature through
torchcodec, which avhb does not need (it has PyAV).  A dataset whose
features hold such columns (at the top level, or as a list of them) is
cast to the same feature with ``decode=False`` -- the stored ``{"bytes",
"path"}``, nothing decoded -- and each row, when it is read, gets in
place of each stored value what ``datasets``' decoded feature hands a
hook:

* ``Audio``: an :class:`AudioDecoder`, as ``datasets`` 5's (named alike,
  as hooks test for it): ``value["array"]`` is the waveform, float32 and
  mono (the mean of the decoded channels, as ``datasets`` computes it),
  ``value["sampling_rate"]`` the feature's ``sampling_rate`` (the track
  resampled to it) or the track's own, ``value["path"]`` the stored path
  (``datasets`` 3's key); ``get_all_samples()`` gives every channel,
  ``(num_channels or the track's, samples)``, with ``data`` and
  ``sample_rate``; ``metadata`` the track's header.  The decode is
  :func:`avhb.media.audio.decode_waveform`, which gives torchcodec's
  samples bit for bit.
* ``Video``: a :class:`VideoDecoder`: ``path`` (``value["path"]``) is a
  file on this machine -- the stored path, or embedded bytes written
  once to avhb's built-media folder under their SHA-256 -- and
  ``metadata`` the stream's header (:func:`avhb.media.probe`).

Decoding is lazy, as ``datasets``' own: building a row costs nothing
beyond reading its stored bytes; a waveform is decoded each time
``["array"]`` or ``get_all_samples()`` is read, and not kept.  A
``process_docs`` hook receives the dataset with these rows (its
``filter`` and ``map`` see them); a ``map`` that returns a decoder value
cannot write it back (return the other columns only).  The rows reach
the run through :class:`DatasetRows`, a sequence that reads a row when
it is used, so a 10,000-clip set is never decoded, nor held, up front.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence, overload

from avhb.errors import SampleError

if TYPE_CHECKING:
    import numpy as np

KINDS = ("Audio", "Video")


@dataclass(frozen=True)
class MediaColumn:
    """One media column: its name, ``datasets``' feature (``Audio`` or
    ``Video``, as the data declares it) and whether the column holds a
    list of such values."""

    name: str
    feature: Any
    listed: bool = False

    @property
    def kind(self) -> str:
        return type(self.feature).__name__


def media_columns(features: Any) -> list[MediaColumn]:
    """The ``Audio`` / ``Video`` columns of ``features`` (a ``datasets.Features``)."""
    out = []
    for name, feature in (features or {}).items():
        inner = getattr(feature, "feature", None)  # List / LargeList / Sequence of a feature
        if type(feature).__name__ in KINDS:
            out.append(MediaColumn(name, feature))
        elif inner is not None and type(inner).__name__ in KINDS:
            out.append(MediaColumn(name, inner, listed=True))
    return out


def undecoded(dataset: Any) -> Any:
    """``dataset`` with its media columns stored undecoded and its rows
    giving avhb's decoders (module docstring); ``dataset`` itself when it
    has no media column."""
    columns = media_columns(getattr(dataset, "features", None))
    if not columns:
        return dataset
    import datasets

    for col in columns:
        raw = _without_decode(col.feature)
        dataset = dataset.cast_column(col.name, datasets.List(raw) if col.listed else raw)
    return dataset.with_transform(_Rows(tuple(columns)))


def _without_decode(feature: Any) -> Any:
    import dataclasses

    return dataclasses.replace(feature, decode=False)


@dataclass(frozen=True)
class _Rows:
    """The transform that puts avhb's decoders in a batch's media columns."""

    columns: tuple[MediaColumn, ...]

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for col in self.columns:
            if col.name not in batch:
                continue
            make = _decoder_for(col.feature)
            if col.listed:
                batch[col.name] = [None if v is None else [make(x) for x in v] for v in batch[col.name]]
            else:
                batch[col.name] = [make(v) for v in batch[col.name]]
        return batch


def _decoder_for(feature: Any):
    kind = type(feature).__name__

    def make(stored: Any) -> Any:
        if stored is None:
            return None
        if kind == "Audio":
            return AudioDecoder(stored.get("path"), stored.get("bytes"), feature.sampling_rate,
                                feature.num_channels, getattr(feature, "stream_index", None))
        return VideoDecoder(stored.get("path"), stored.get("bytes"))
    return make


def is_media_dataset(docs: Any) -> bool:
    """Whether ``docs`` is a ``datasets.Dataset`` read through :func:`undecoded`."""
    fmt = getattr(docs, "format", None)
    return isinstance(fmt, dict) and isinstance((fmt.get("format_kwargs") or {}).get("transform"), _Rows)


# ------------------------------------------------------------------ audio


@dataclass(frozen=True)
class AudioSamples:
    """What ``get_all_samples()`` gives (torchcodec's ``AudioSamples``, as
    numpy): ``data`` float32 ``(channels, samples)``."""

    data: np.ndarray
    sample_rate: int
    pts_seconds: float = 0.0

    @property
    def duration_seconds(self) -> float:
        return self.data.shape[-1] / self.sample_rate if self.sample_rate else 0.0


@dataclass(frozen=True)
class AudioMetadata:
    """The track's header: its own rate and channels, and the stored path."""

    path: str | None
    sample_rate: int
    num_channels: int


class AudioDecoder:
    """One stored audio value, decoded when it is read (module docstring)."""

    def __init__(self, path: str | None, data: bytes | None, sampling_rate: int | None = None,
                 num_channels: int | None = None, stream_index: int | None = None):
        if path is None and data is None:
            raise SampleError("an audio value has neither 'path' nor 'bytes'")
        self.path, self._bytes = path, data
        self._rate, self._channels, self._stream = sampling_rate, num_channels, stream_index

    def _source(self) -> str | bytes:
        if self._bytes is not None:
            return self._bytes
        assert self.path is not None
        return self.path

    def _name(self) -> str:
        return self.path or "<embedded audio>"

    def get_all_samples(self) -> AudioSamples:
        from avhb.media.audio import decode_waveform

        wave, rate = decode_waveform(self._source(), self._rate, self._channels, self._stream, self._name())
        return AudioSamples(wave, rate)

    @property
    def metadata(self) -> AudioMetadata:
        from avhb.media.audio import audio_header

        rate, channels = audio_header(self._source(), self._name(), self._stream)
        return AudioMetadata(self.path, rate, channels)

    def __getitem__(self, key: str) -> Any:
        if key == "array":
            wave = self.get_all_samples().data
            return wave.mean(axis=0) if wave.shape[0] > 1 else wave[0]  # datasets: the mean of the channels
        if key == "sampling_rate":
            return self._rate or self.metadata.sample_rate
        if key == "path":
            return self.path
        raise KeyError(key)

    def keys(self) -> tuple[str, ...]:
        return ("path", "array", "sampling_rate")

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self.keys() else default

    def __repr__(self) -> str:
        rate = f", sampling_rate={self._rate}" if self._rate else ""
        return f"<AudioDecoder {self._name()}{rate}>"

    __str__ = __repr__


# ------------------------------------------------------------------ video


class VideoDecoder:
    """One stored video value as a file on this machine (module docstring)."""

    def __init__(self, path: str | None, data: bytes | None):
        if path is None and data is None:
            raise SampleError("a video value has neither 'path' nor 'bytes'")
        self.stored_path, self._bytes = path, data

    @property
    def path(self) -> str:
        """The video's file: the stored path, or the embedded bytes written
        under ``built_media_dir()/video-columns/<sha256><ext>``."""
        if self._bytes is None:
            assert self.stored_path is not None
            return self.stored_path
        return str(_written(self._bytes, Path(self.stored_path or "").suffix or ".mp4"))

    @property
    def metadata(self) -> Any:
        from avhb.media import probe

        return probe(self.path)

    def __getitem__(self, key: str) -> Any:
        if key == "path":
            return self.path
        raise KeyError(key)

    def __repr__(self) -> str:
        return f"<VideoDecoder {self.stored_path or '<embedded video>'}>"

    __str__ = __repr__


def _written(data: bytes, suffix: str) -> Path:
    """Embedded media bytes as a file, written once under their SHA-256."""
    from avhb.atomic import write_atomic
    from avhb.paths import built_media_dir

    digest = hashlib.sha256(data).hexdigest()
    path = built_media_dir() / "video-columns" / f"{digest}{suffix}"
    if not (path.is_file() and path.stat().st_size == len(data)):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, lambda fh: fh.write(data), binary=True)
    return path


# ------------------------------------------------------------------- rows


class DatasetRows(Sequence[dict[str, Any]]):
    """A ``datasets.Dataset``'s rows as a sequence, each read when it is
    used (a media dataset's rows are not held: :func:`undecoded`)."""

    def __init__(self, dataset: Any):
        self.dataset = dataset

    def __len__(self) -> int:
        return int(self.dataset.num_rows)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self.dataset[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"row {index} of {n}")
        return self.dataset[index % n]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch in self.dataset.iter(batch_size=64):
            names = list(batch)
            for values in zip(*(batch[k] for k in names)):
                yield dict(zip(names, values))
