"""What both differential tests do with the tools they run side by side:
run one to completion (its output in the failure message), and read the
logging server's request log."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path


def run_tool(cmd: list[str], work: Path, env: dict[str, str], timeout: float = 900) -> None:
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd[:3])} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"


def read_log(path: Path) -> list[dict]:
    """The requests the server logged (one JSON object a line), none before the first."""
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
