"""Shared fixtures: an isolated cache, and the test plugin installed as a
real distribution (a .dist-info folder on sys.path / PYTHONPATH)."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTPACK = ROOT / "tests" / "fixtures" / "testpack_src"


def pytest_configure(config):
    """Every ``aggregate`` the suite calls is asked again over the same
    records reduced to what its metric declares it reads (``Metric.reads``,
    as a run reduces a task's records once they are written:
    :func:`avhb.run.stream.slim`), and, when it reads none, over those
    records held as columns (:class:`avhb.run.reduced.Reduced`); an
    aggregate a run asks over columns is asked again over them as a list.
    A different answer fails the test.  So each hand-computed aggregate test
    also checks its metric's declaration and the columns."""
    from avhb.score.metric import Metric

    for klass in [Metric, *_subclasses(Metric)]:
        _check_reads(klass)
    previous = Metric.__dict__.get("__init_subclass__")

    def init_subclass(cls, **kwargs):
        if previous is not None:
            previous.__func__(cls, **kwargs)
        _check_reads(cls)

    Metric.__init_subclass__ = classmethod(init_subclass)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


_CHECKING = []  # an aggregate being checked: the calls within it are not checked again


def _check_reads(klass):
    import dataclasses
    import functools

    aggregate = vars(klass).get("aggregate")
    if aggregate is None or getattr(aggregate, "_checks_reads", False):
        return

    @functools.wraps(aggregate)
    def checked(self, records, *args, **kwargs):
        out = aggregate(self, records, *args, **kwargs)
        if _CHECKING or args or kwargs:
            return out
        from avhb.run.reduced import Reduced, Subset
        from avhb.run.stream import slim
        from avhb.score.metric import SampleRecord, reads_of

        if isinstance(records, (Reduced, Subset)):  # a run's columns: the same answer over them as a list
            forms = [("its reduced records as a list", [dataclasses.replace(r) for r in records])]
        elif isinstance(records, list) and all(type(r) is SampleRecord for r in records):
            keep = reads_of(self)
            if keep is None:
                return out
            copies = [dataclasses.replace(r) for r in records]
            slim(copies, keep, ())
            forms = [(f"records reduced to its reads {sorted(keep)}", copies)]
            if not keep:
                forms.append(("reduced records held as columns (avhb.run.reduced)", Reduced(copies)))
        else:
            return out
        for what, form in forms:
            _CHECKING.append(self)
            try:
                again = aggregate(self, form)
            except Exception as exc:
                raise AssertionError(f"{type(self).__qualname__}.aggregate fails on {what}: "
                                     f"{type(exc).__name__}: {exc}") from exc
            finally:
                _CHECKING.pop()
            assert repr(again) == repr(out), (f"{type(self).__qualname__}.aggregate differs on {what}: "
                                              f"{again!r} != {out!r}")
        return out

    checked._checks_reads = True
    klass.aggregate = checked


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory, monkeypatch):
    """Each test's own cache, the Hub off, and the environment as it was
    after the test: code run in-process (the offline model sets
    TRANSFORMERS_OFFLINE, ``datasets`` HF_DATASETS_OFFLINE) must not leak
    into a later test's subprocesses, which read every HF_* variable (the
    CI run of 2026-12 failed 30 Hub tests on a leaked TRANSFORMERS_OFFLINE)."""
    saved = dict(os.environ)
    cache = tmp_path_factory.mktemp("avhb-cache")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)  # huggingface_hub reads it as HF_HUB_OFFLINE
    monkeypatch.setenv("AVHB_CACHE_DIR", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield cache
    os.environ.clear()
    os.environ.update(saved)


def _clear_registry():
    from avhb import registry
    from avhb.model import presets
    from avhb.taskdef import schema_check

    registry.get_registry.cache_clear()
    presets._load.cache_clear()
    schema_check._validator.cache_clear()
    importlib.invalidate_caches()


@pytest.fixture
def testpack(monkeypatch):
    """The avhb-testpack plugin, discoverable through its entry point."""
    monkeypatch.syspath_prepend(str(TESTPACK))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTPACK), os.environ.get("PYTHONPATH", "")]))
    _clear_registry()
    yield TESTPACK
    _clear_registry()


@pytest.fixture
def testpack_copy(tmp_path, monkeypatch):
    """A private copy of the test plugin, installed instead of the source
    one: for tests that edit its files (a killed run cannot leave an edit
    behind in the repository)."""
    import shutil

    copy = tmp_path / "testpack_src"
    shutil.copytree(TESTPACK, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for name in [m for m in sys.modules if m == "avhb_testpack" or m.startswith("avhb_testpack.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(copy))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(copy), os.environ.get("PYTHONPATH", "")]))
    _clear_registry()
    yield copy
    for name in [m for m in sys.modules if m == "avhb_testpack" or m.startswith("avhb_testpack.")]:
        sys.modules.pop(name, None)
    _clear_registry()


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 300,
            unset: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run ``avhb`` in a fresh process (as a user would); ``unset`` names
    environment variables to remove."""
    full_env = dict(os.environ, **(env or {}))
    for name in unset:
        full_env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "avhb.cli", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=timeout)
