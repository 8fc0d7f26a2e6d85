"""avhb.lazy_exports: the one module ``__getattr__`` of the lazily
exporting packages (avhb, avhb.media, avhb.report, avhb.plugins.metrics)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from avhb.lazy_exports import lazy_exports


def test_a_name_loads_from_its_module_once_and_an_unknown_one_is_an_attribute_error():
    namespace = {"__name__": "pkg"}
    getattr_ = lazy_exports(namespace, {"join": "os.path", "sep": "path:sep", "dumps": "json"}, prefix="")
    import json
    import os.path

    assert getattr_("join") is os.path.join and namespace["join"] is os.path.join  # bound: the next lookup is plain
    assert getattr_("dumps") is json.dumps
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'nope'"):
        getattr_("nope")


def test_module_attr_and_prefix():
    namespace = {"__name__": "pkg"}
    getattr_ = lazy_exports(namespace, {"separator": "path:sep"}, prefix="os.")
    import os

    assert getattr_("separator") == os.sep and namespace["separator"] == os.sep


@pytest.mark.parametrize("package, name, heavy", [
    ("avhb", "Caller", "avhb.call.caller"),
    ("avhb.media", "sample_frames", "avhb.media.frames"),
    ("avhb.report", "write_report", "avhb.report.html"),
    ("avhb.plugins.metrics", "ChoiceAccuracy", "avhb.plugins.metrics.choice"),
])
def test_the_packages_load_a_name_only_when_it_is_used(package, name, heavy):
    code = (f"import sys, {package} as p\nbefore = {heavy!r} in sys.modules\n"
            f"value = p.{name}\nprint(before, {heavy!r} in sys.modules, type(value).__name__ != 'module')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "True"]
