import pytest

from avhb.errors import SampleError, UserError
from avhb.media import check_budget


def test_fits():
    assert check_budget("t", 32, 256, 1000, 16384) == 32  # 9192 <= 16384
    assert check_budget("t", 60, 256, 1024, 16384) == 60  # exactly 16384


def test_clamp():
    # (16384 - 1200) // 258 = 58
    assert check_budget("t", 64, 258, 1200, 16384) == 58
    assert check_budget("t", 64, 258, 1200, 16384, reserve_tokens=4096) == 42


def test_refuse_names_task_and_numbers():
    with pytest.raises(SampleError) as ei:  # the sample fails alone, the run goes on
        check_budget("videomme", 64, 258, 1200, 16384, policy="refuse")
    msg = str(ei.value)
    assert msg.startswith("task videomme: 64 frames x 258 tokens + 1200 text tokens = 17712")
    assert "16384" in msg and "at most 58 frames" in msg


def test_nothing_fits():
    with pytest.raises(SampleError, match="not even one frame"):
        check_budget("t", 8, 1000, 16000, 16384)
    with pytest.raises(UserError, match="policy"):
        check_budget("t", 8, 1, 1, 100, policy="drop")  # type: ignore[arg-type]
