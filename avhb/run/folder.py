"""The run folder: run.json, journal/, samples/<task>.jsonl, results.json,
report.html.  Every file but the journal is rewritten atomically (temp file +
rename), so a crash never leaves a half-written results file."""
from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from avhb.score.metric import SampleRecord
from avhb.redact import redact


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(redact(data), fh, indent=2, ensure_ascii=False, default=_default)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "__dataclass_fields__"):
        return asdict(obj)
    return str(obj)


class RunFolder:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    @property
    def journal_dir(self) -> Path:
        return self.root / "journal"

    def read_json(self, name: str) -> dict[str, Any] | None:
        path = self.root / name
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            return None

    def write_run(self, info: dict[str, Any]) -> None:
        write_json_atomic(self.root / "run.json", info)

    def write_results(self, results: dict[str, Any]) -> None:
        write_json_atomic(self.root / "results.json", results)

    def samples_path(self, task: str) -> Path:
        return self.root / "samples" / f"{task.replace('/', '__')}.jsonl"

    def write_samples(self, task: str, records: list[SampleRecord]) -> Path:
        path = self.samples_path(task)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            for r in records:
                line = {
                    "id": r.id, "repeat": r.repeat, "doc": _public_doc(r.doc), "prompt_hash": r.meta.get("prompt_hash"),
                    "prompt": r.meta.get("prompt"), "media": r.meta.get("media"), "adaptations": r.meta.get("adaptations", []),
                    "target": r.target, "response": r.response, "extracted": r.extracted, "scores": r.scores,
                    "judgements": r.judgements, "error": r.error,
                    **({"trajectory": r.trajectory} if r.trajectory else {}),
                    **({"outputs": r.outputs} if r.outputs else {}),
                    "flags": {k: v for k, v in r.meta.items() if k not in _LOGGED_ELSEWHERE},
                }
                fh.write(json.dumps(redact(line), ensure_ascii=False, default=_default) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        return path


_LOGGED_ELSEWHERE = ("prompt", "prompt_hash", "media", "adaptations")


def _public_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """The sample's fields, without bulky or binary values (no base64 media)."""
    out = {}
    for k, v in doc.items():
        if isinstance(v, (bytes, bytearray)) or hasattr(v, "shape"):
            continue
        if isinstance(v, str) and len(v) > 20000:
            v = v[:20000] + "…"
        out[k] = v
    return out
