"""Progress display: plain periodic lines off a TTY, tqdm on one."""
import io
import threading

from avhb.run.progress import Progress, fmt_duration


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_plain_lines_every_decile_or_interval():
    clock, out = Clock(), io.StringIO()
    with Progress("model", total=100, stream=out, interactive=False, interval_s=10.0, clock=clock) as p:
        clock.t = 101.0
        p.update(5)  # 5 %, 1 s: quiet
        assert out.getvalue() == ""
        clock.t = 102.0
        p.update(5, error=True)  # reaches 10 %: a line
        clock.t = 103.0
        p.update(1)  # 11 %, 1 s after the last line: quiet
        clock.t = 112.0
        p.update(1, cost=0.25)  # 12 %, 10 s after the last line: a line
    lines = out.getvalue().splitlines()
    assert lines == [
        "[model] 10/100 (10%) 5.00/s ETA 0:18 errors 5",
        "[model] 12/100 (12%) 1.00/s ETA 1:28 errors 5 cost 0.2500",
        "[model] 12/100 (12%) 1.00/s done in 0:12 errors 5 cost 0.2500",
    ]
    assert p.count == 12 and p.errors == 5 and p.cost == 0.25


def test_zero_total_and_no_time():
    clock, out = Clock(), io.StringIO()
    with Progress("judging", total=0, stream=out, interactive=False, clock=clock) as p:
        assert p.rate is None and p.eta is None
        p.update()  # no total: only the interval triggers lines
    assert out.getvalue().splitlines() == ["[judging] 1/? -/s done in 0:00 errors 0"]


def test_non_tty_stream_defaults_to_plain():
    p = Progress("decoding", total=3, stream=io.StringIO())
    assert p.interactive is False


def test_tqdm_on_interactive_stream():
    out = io.StringIO()
    with Progress("model", total=4, stream=out, interactive=True) as p:
        for i in range(4):
            p.update(error=i == 2, cost=0.5)
    text = out.getvalue()
    assert "model" in text and "4/4" in text and "errors=1" in text and "cost=2.0000" in text


def test_thread_safe_counts():
    p = Progress("model", total=8000, stream=io.StringIO(), interactive=False, interval_s=1e9)

    def work():
        for _ in range(1000):
            p.update(error=True, cost=0.001)

    with p:
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert p.count == 8000 and p.errors == 8000
    assert abs(p.cost - 8.0) < 1e-9
    assert len(p.stream.getvalue().splitlines()) == 11  # ten deciles + the final line


def test_fmt_duration():
    assert fmt_duration(None) == "?" and fmt_duration(float("inf")) == "?"
    assert fmt_duration(59.6) == "1:00"
    assert fmt_duration(3725) == "1:02:05"
