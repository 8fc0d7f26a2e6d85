"""Which charts a results document yields, and their SVG rendering."""
import math
import xml.etree.ElementTree as ET

from avhb.report.result_charts import breakdown_charts, families, family_charts
from avhb.runfolder.results import RunResults
from avhb.report.svg_charts import Chart, Panel, Series, render_svg


def _m(**metrics):
    out = {}
    for name, (v, se, n) in metrics.items():
        out.update({name: v, name + "_stderr": se, name + "_n": n})
    return out


def test_families_need_two_members():
    assert families(["curve_ta_IN", "curve_ko_KR", "vidpair_mcq", "solo", "x_"]) == {
        "curve": ["curve_ta_IN", "curve_ko_KR"]}


def test_family_chart_locales_group_and_shared_metrics():
    results = {
        "results": {
            "curve_ta_IN": {**_m(accuracy=(0.5, 0.1, 10), only_here=(1.0, None, 1)), "samples": 10},
            "curve_ko_KR": {**_m(accuracy=(0.75, None, 4)), "samples": 4},
            "curve_de_DE": {"samples": 0, "errors": 3},  # no metric yet: left out
        },
        "groups": {"curve": _m(accuracy=(0.6, 0.05, 14))},
    }
    # the locale labels and axis come from the tasks' YAML hints (report:), read from run.json
    hints = {t: {"family": "curve", "label": t[6:].replace("_", "-"), "axis": "locale"}
             for t in ("curve_ta_IN", "curve_ko_KR", "curve_de_DE")}
    [chart] = family_charts(RunResults.from_json(results), hints)
    assert chart.labels == ["ta-IN", "ko-KR", "curve (all)"]
    assert chart.axis_label == "locale"
    assert [p.title for p in chart.panels] == ["accuracy"]  # only_here is in one member only
    s = chart.panels[0].series[0]
    assert s.values == [0.5, 0.75, 0.6] and s.stderrs == [0.1, None, 0.05] and s.ns == [10, 4, 14]


def test_family_chart_non_locale_suffixes():
    results = {"results": {"vp_binary": _m(acc=(0.1, 0.01, 5)), "vp_mcq": _m(acc=(0.2, 0.02, 6))}}
    [chart] = family_charts(RunResults.from_json(results))
    assert chart.labels == ["binary", "mcq"] and chart.axis_label == "task"
    # without hints, locale-looking suffixes are just task labels
    loc = {"results": {"curve_ta_IN": _m(acc=(0.1, 0.01, 5)), "curve_ko_KR": _m(acc=(0.2, 0.02, 6))}}
    [chart] = family_charts(RunResults.from_json(loc))
    assert chart.labels == ["ta_IN", "ko_KR"] and chart.axis_label == "task"


def test_breakdown_chart_per_task_and_dimension():
    results = {"results": {"vidpair_binary": {"samples": 1}, "t2": {"samples": 1}}, "breakdowns": {
        "vidpair_binary": {
            "category": {"color": _m(vAcc=(0.4, 0.06, 100), wAcc=(0.5, 0.04, 200)),
                         "action": _m(vAcc=(0.6, 0.05, 90))},
            "level": {"video": _m(vAcc=(0.3, 0.1, 10))},
            "empty": {},
        },
        "t2": {"length_bucket": {"0-30s": _m(acc=(None, None, 0))}},  # nothing to draw
    }}
    charts = breakdown_charts(RunResults.from_json(results))
    assert [c.title for c in charts] == ["vidpair_binary by category", "vidpair_binary by level"]
    cat = charts[0]
    assert cat.labels == ["color", "action"]
    assert [p.title for p in cat.panels] == ["vAcc", "wAcc"]
    w = cat.panels[1].series[0]
    assert w.values == [0.5, None] and w.ns == [200, None]


def test_render_svg_is_inline_svg_with_error_bars():
    chart = Chart("t by category", ["a", "b", "c"], [
        Panel("acc", [Series("acc", [0.5, None, 0.25], [0.1, None, None], [10, None, 3])]),
        Panel("diff", [Series("run1", [-0.2, 0.1, 0.0], [0.05, 0.05, 0.05], [1, 2, 3]),
                       Series("run2", [0.1, 0.2, math.nan], [None, 0.01, None], [1, 2, 3])]),
    ])
    svg = render_svg(chart)
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<?xml" not in svg and "DOCTYPE" not in svg and "<metadata" not in svg
    root = ET.fromstring(svg)
    assert root.get("viewBox")
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text or "" for t in root.iter(f"{ns}text")]
    # one bar per value, one whisker per stderr (0.1; 0.05 x 3; 0.01), the value and n beside each bar
    assert len(root.findall(f"{ns}rect")) == 7 + 3  # 7 bars + a legend swatch per series (acc, run1, run2)
    assert len([p for p in root.iter(f"{ns}path")]) == 5
    assert "0.5 (n=10)" in texts and "-0.2 (n=1)" in texts and "n/a" in texts
    assert {"acc", "diff", "run1", "run2", "t by category"} <= set(texts)  # titles and the legend


def test_svg_escapes_labels_and_keeps_a_long_legend_whole():
    names = [f"run-{i} <b>&</b> with a long distinguishing label" for i in range(7)]
    chart = Chart("<script>x</script>", ["<i>a</i>"], [Panel("p", [Series(n, [0.1 * i], [None], [1])
                                                                     for i, n in enumerate(names)])])
    svg = render_svg(chart, max_cols=1)
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&lt;i&gt;a&lt;/i&gt;" in svg
    root = ET.fromstring(svg)
    height = float(root.get("viewBox").split()[3])
    legend_ys = [float(t.get("y")) for t in root.iter("{http://www.w3.org/2000/svg}text")
                 if (t.text or "").startswith("run-")]
    assert len(legend_ys) == 7 and max(legend_ys) < height  # every entry inside the picture
    assert len(set(legend_ys)) > 1  # wrapped onto several rows
