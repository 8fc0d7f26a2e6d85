"""Bar charts with error bars rendered by matplotlib (Agg canvas) to inline SVG.

A chart is a figure of one or more panels; a panel plots one or more series
of horizontal bars over the same category labels, each bar with its standard
error as an error bar and its count written beside it. Text is converted to
paths (``svg.fonttype = path``), so the SVG needs no font.
"""
from __future__ import annotations

import io
import math
import re
import warnings
from dataclasses import dataclass, field

PALETTE = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C")


@dataclass
class Series:
    """One bar per label: value (None = no bar), stderr (None = no error bar), n."""

    name: str
    values: list[float | None]
    stderrs: list[float | None]
    ns: list[int | None]


@dataclass
class Panel:
    title: str
    series: list[Series]


@dataclass
class Chart:
    """A figure: ``panels`` side by side (wrapping), all over ``labels``."""

    title: str
    labels: list[str]
    panels: list[Panel]
    axis_label: str = ""
    caption: str = field(default="")


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def _draw_panel(ax, labels: list[str], panel: Panel, show_legend: bool) -> None:
    k = len(panel.series)
    height = 0.8 / max(k, 1)
    ys = list(range(len(labels)))
    finite = []
    for j, s in enumerate(panel.series):
        offs = [y - 0.4 + height * (j + 0.5) for y in ys]
        vals = [_nan(v) for v in s.values]
        errs = [0.0 if e is None else float(e) for e in s.stderrs]
        color = PALETTE[j % len(PALETTE)]
        ax.barh(offs, [0.0 if math.isnan(v) else v for v in vals], height=height * 0.9,
                color=[color if not math.isnan(v) else "none" for v in vals], label=s.name)
        ok = [i for i, v in enumerate(vals) if not math.isnan(v)]
        if ok:
            ax.errorbar([vals[i] for i in ok], [offs[i] for i in ok], xerr=[errs[i] for i in ok],
                        fmt="none", ecolor="#222222", elinewidth=1, capsize=2.5)
        for i in ok:
            finite += [vals[i] - errs[i], vals[i] + errs[i], 0.0]
        for i, v in enumerate(vals):
            n = s.ns[i] if i < len(s.ns) else None
            if math.isnan(v):
                text, x = "n/a", 0.0
            else:
                text = f"{v:.3g}" + (f" (n={n})" if n is not None else "")
                x = v + errs[i] if v >= 0 else v - errs[i]
            ax.annotate(text, (x, offs[i]), xytext=(3 if x >= 0 else -3, 0), textcoords="offset points",
                        ha="left" if x >= 0 else "right", va="center", fontsize=7, color="#333333")
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    if panel.title:
        ax.set_title(panel.title, fontsize=9)
    ax.tick_params(axis="x", labelsize=7)
    ax.axvline(0, color="#888888", linewidth=0.6)
    ax.grid(axis="x", color="#dddddd", linewidth=0.5)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    if finite:
        lo, hi = min(finite), max(finite)
        span = (hi - lo) or 1.0
        # room on the right (left for negatives) for the value/n annotation
        ax.set_xlim(lo - (0.35 * span if lo < 0 else 0.0), hi + 0.35 * span)
    if show_legend and k > 1:
        # below the axes, so it never covers a bar
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=min(k, 3), frameon=False)


def prefix_ids(svg: str, prefix: str) -> str:
    """Prefix every ``id`` in ``svg`` and every in-document reference to it
    (``href="#id"``, ``url(#id)``), so several SVGs can share one page."""
    if not prefix:
        return svg
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', svg)
    return re.sub(r'(href="#|url\(#)([^")]+)',
                  lambda m: m.group(1) + prefix + m.group(2) if m.group(2) in ids else m.group(0), svg)


def render_svg(chart: Chart, max_cols: int = 3, id_prefix: str = "") -> str:
    """The chart as an ``<svg>`` element string (no XML prolog, no DOCTYPE);
    ``id_prefix`` keeps element ids unique when a page holds several charts."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n_panels = max(len(chart.panels), 1)
    cols = min(n_panels, max_cols)
    rows = math.ceil(n_panels / cols)
    n_series = max((len(p.series) for p in chart.panels), default=1)
    per_label = 0.22 + 0.12 * (n_series - 1)
    panel_h = max(1.6, 0.6 + per_label * len(chart.labels))
    # fixed salt: element ids depend only on content, so reports are reproducible
    with matplotlib.rc_context({"svg.fonttype": "path", "font.family": "DejaVu Sans", "svg.hashsalt": "avhb"}):
        fig = Figure(figsize=(3.9 * cols, panel_h * rows + 0.5), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(rows, cols, squeeze=False)
        for idx, ax in enumerate(axes.flat):
            if idx >= len(chart.panels):
                ax.set_visible(False)
                continue
            _draw_panel(ax, chart.labels, chart.panels[idx], show_legend=idx == 0)
            if idx % cols:
                ax.set_yticklabels([])
        if chart.axis_label:
            fig.supylabel(chart.axis_label, fontsize=8)
        fig.suptitle(chart.title, fontsize=10)
        buf = io.StringIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # missing glyphs for exotic labels
            fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    start = svg.find("<svg")
    svg = svg[start:]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, count=1, flags=re.S)
    return prefix_ids(svg, id_prefix)
