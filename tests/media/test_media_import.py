import subprocess
import sys


def test_import_is_light():
    code = ("import sys, avhb.media as m; m.MediaSpec; m.check_budget; "
            "print(sorted(k for k in sys.modules if k.split('.')[0] in "
            "('av', 'decord', 'torch', 'PIL')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
