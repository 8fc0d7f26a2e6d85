"""The ``local`` backend's llama.cpp model is freed before the interpreter
tears llama_cpp down: by the backend's ``aclose`` (the run's end) when no
other backend holds it, else at interpreter exit.  A model freed after
llama_cpp's module teardown fails inside llama_cpp (``free_model``:
"'NoneType' object is not callable") and prints a traceback as the
process's last words."""
from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from avhb.model.backend import parse_backend_spec
from avhb.model.messages import text_request

# The model is held past the interpreter's first teardown pass as a pytest
# process holds it: a module that references it stays reachable (here from a
# daemon thread), so it is released only when that module is wiped -- after
# llama_cpp's modules, which were imported later.
HELD_AT_EXIT = textwrap.dedent("""
    import asyncio, threading, time
    from avhb.model.backend import parse_backend_spec
    from avhb.model.messages import text_request
    from avhb.model_backends import local
    backend = local.LocalBackend(parse_backend_spec("local,max_tokens=4"))
    response = asyncio.run(backend.generate(text_request("The capital of France is")))
    keeper = threading.Thread(target=time.sleep, args=(1000,), daemon=True)
    keeper.holds = local
    keeper.start()
    print("answered:", response.error is None and bool(response.text))
""")


@pytest.mark.slow
def test_a_model_still_held_at_exit_is_freed_before_llama_cpp_is_torn_down():
    proc = subprocess.run([sys.executable, "-c", HELD_AT_EXIT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "answered: True"
    assert "Traceback" not in proc.stderr and "free_model" not in proc.stderr, proc.stderr[-3000:]


@pytest.mark.slow
def test_closing_the_backends_frees_the_model_they_share():
    from avhb.model_backends import local

    async def use(backend):
        return await backend.generate(text_request("The capital of France is"))

    first = local.LocalBackend(parse_backend_spec("local,max_tokens=2"))
    second = local.LocalBackend(parse_backend_spec("local,max_tokens=2"))
    assert asyncio.run(use(first)).error is None and asyncio.run(use(second)).error is None
    shared = first.lm()
    assert second.lm() is shared and not shared.closed
    asyncio.run(first.aclose())
    assert not shared.closed  # the second backend still holds it
    assert asyncio.run(use(second)).error is None
    asyncio.run(second.aclose())
    assert shared.closed and not any(lm is shared for lm, _ in local._OPEN.values())
    again = asyncio.run(use(second))  # a closed backend loads it again when it is used
    assert again.error is None and second.lm() is not shared and not second.lm().closed
    asyncio.run(second.aclose())
    assert second.lm().closed is False  # lm() reloads after a close, too
    asyncio.run(second.aclose())


@pytest.mark.slow
def test_a_run_closes_the_model_at_its_end(tmp_path):
    """Through the CLI, in one process: once the run returns, no model is
    open (the run's session closed the backend)."""
    script = textwrap.dedent(f"""
        from avhb.cli import main
        from avhb.model_backends import local
        rc = main(["--tasks", "vidpair_binary", "--model", "local", "--sample-data", "--limit", "2",
                   "--predict-only", "--output-dir", {str(tmp_path / "run")!r}, "--no-report"])
        print("rc", rc, "open", len(local._OPEN))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "rc 0 open 0", proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
