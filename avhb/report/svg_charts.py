"""Bar charts with error bars, written as inline SVG by hand (no plotting
library: a 2,000-sample report is written in well under a second).

A chart is a figure of one or more panels side by side (wrapping after
``max_cols``); a panel plots one or more series of horizontal bars over the
same category labels, each bar with its standard error as a whisker and
its value and count written beside it.  A chart with several series has a
legend under its panels, laid out in as many rows as its entries need (it
is never cut).  Text is SVG ``<text>`` in the page's sans-serif font.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

PALETTE = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C")
FONT = 'font-family="system-ui,-apple-system,Segoe UI,Roboto,DejaVu Sans,sans-serif"'
CHAR_W = 6.2  # average width of a 11px character, for layout
BAR_H = 13
ROW_GAP = 7
PANEL_W = 380
TITLE_H = 22
AXIS_H = 22


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


def _finite(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else x


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)


def _fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1e4 else f"{v:.0f}"


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    start = math.ceil(lo / step) * step
    out, t = [], start
    while t <= hi + 1e-12:
        out.append(round(t, 12))
        t += step
    return out


def _panel_svg(panel: Panel, labels: list[str], x0: float, y0: float, label_w: float, show_labels: bool) -> tuple[str, float]:
    """One panel's SVG at (x0, y0); returns (svg, height)."""
    k = max(len(panel.series), 1)
    row_h = BAR_H * k + ROW_GAP
    plot_x = x0 + (label_w if show_labels else 8)
    plot_w = PANEL_W - (label_w if show_labels else 8) - 8
    lows, highs = [0.0], [0.0]
    for s in panel.series:
        for v, e in zip(s.values, s.stderrs):
            v, e = _finite(v), _finite(e) or 0.0
            if v is not None:
                lows.append(v - e)
                highs.append(v + e)
    lo, hi = min(lows), max(highs)
    span = (hi - lo) or 1.0
    # room beside the bars for the "value (n=...)" text
    hi_room, lo_room = (hi + 0.45 * span, lo - (0.45 * span if lo < 0 else 0.0))
    scale = plot_w / (hi_room - lo_room)

    def X(v: float) -> float:
        return plot_x + (v - lo_room) * scale

    out = []
    if panel.title:
        out.append(f'<text x="{x0 + PANEL_W / 2:.1f}" y="{y0 + 15:.1f}" text-anchor="middle" font-size="12" '
                   f'font-weight="600" {FONT}>{_e(panel.title)}</text>')
    top = y0 + TITLE_H
    bottom = top + row_h * len(labels)
    for t in _ticks(lo, hi):
        x = X(t)
        out.append(f'<line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{bottom:.1f}" stroke="#e3e6ea"/>')
        out.append(f'<text x="{x:.1f}" y="{bottom + 13:.1f}" text-anchor="middle" font-size="10" fill="#555" '
                   f'{FONT}>{_fmt(t)}</text>')
    zero = X(0.0)
    out.append(f'<line x1="{zero:.1f}" y1="{top:.1f}" x2="{zero:.1f}" y2="{bottom:.1f}" stroke="#888"/>')
    for i, label in enumerate(labels):
        ry = top + i * row_h + ROW_GAP / 2
        if show_labels:
            shown = label if len(label) * CHAR_W <= label_w - 10 else label[: max(1, int((label_w - 16) / CHAR_W))] + "…"
            out.append(f'<text x="{plot_x - 6:.1f}" y="{ry + row_h / 2 - 1:.1f}" text-anchor="end" font-size="11" '
                       f'dominant-baseline="middle" {FONT}><title>{_e(label)}</title>{_e(shown)}</text>')
        for j, s in enumerate(panel.series):
            by = ry + j * BAR_H
            color = PALETTE[j % len(PALETTE)]
            v = _finite(s.values[i]) if i < len(s.values) else None
            e = _finite(s.stderrs[i]) if i < len(s.stderrs) else None
            n = s.ns[i] if i < len(s.ns) else None
            if v is None:
                out.append(f'<text x="{zero + 3:.1f}" y="{by + BAR_H / 2:.1f}" font-size="10" fill="#777" '
                           f'dominant-baseline="middle" {FONT}>n/a</text>')
                continue
            x1, x2 = sorted((X(0.0), X(v)))
            out.append(f'<rect x="{x1:.1f}" y="{by + 1:.1f}" width="{max(x2 - x1, 0.5):.1f}" height="{BAR_H - 2}" '
                       f'fill="{color}"><title>{_e(s.name)}: {_fmt(v)}'
                       f'{f" ± {_fmt(e)}" if e is not None else ""}{f" (n={n})" if n is not None else ""}</title></rect>')
            end = v
            if e:
                a, b = X(v - e), X(v + e)
                cy = by + BAR_H / 2
                out.append(f'<path d="M{a:.1f} {cy:.1f}H{b:.1f}M{a:.1f} {cy - 3:.1f}V{cy + 3:.1f}'
                           f'M{b:.1f} {cy - 3:.1f}V{cy + 3:.1f}" stroke="#222" fill="none"/>')
                end = v + e if v >= 0 else v - e
            text = _fmt(v) + (f" (n={n})" if n is not None else "")
            tx = X(end) + (4 if v >= 0 else -4)
            out.append(f'<text x="{tx:.1f}" y="{by + BAR_H / 2:.1f}" text-anchor="{"start" if v >= 0 else "end"}" '
                       f'font-size="10" fill="#333" dominant-baseline="middle" {FONT}>{_e(text)}</text>')
    return "".join(out), TITLE_H + row_h * len(labels) + AXIS_H


def _legend(names: list[str], width: float, y0: float) -> tuple[str, float]:
    """Swatch + name entries wrapped into rows that fit ``width``."""
    out, x, y, row_h = [], 10.0, y0 + 4, 18
    for j, name in enumerate(names):
        w = 16 + len(name) * CHAR_W + 18
        if x + w > width and x > 10:
            x, y = 10.0, y + row_h
        out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="11" height="11" fill="{PALETTE[j % len(PALETTE)]}"/>'
                   f'<text x="{x + 15:.1f}" y="{y + 9:.1f}" font-size="11" {FONT}>{_e(name)}</text>')
        x += w
    return "".join(out), y + row_h - y0 + 4


def render_svg(chart: Chart, max_cols: int = 3, id_prefix: str = "") -> str:
    """The chart as an ``<svg>`` element string (``id_prefix`` is kept for
    callers; the SVG defines no ids)."""
    panels = chart.panels or [Panel("", [])]
    cols = min(len(panels), max_cols)
    rows = math.ceil(len(panels) / cols)
    longest = max((len(str(label)) for label in chart.labels), default=4)
    label_w = min(200.0, max(60.0, longest * CHAR_W + 14))
    head = 26 if chart.title else 6
    side = 16 if chart.axis_label else 0
    width = side + cols * PANEL_W + (cols - 1) * 10 + (label_w - 8) * 0
    parts, y, heights = [], float(head), []
    for r in range(rows):
        row_h = 0.0
        for c in range(cols):
            idx = r * cols + c
            if idx >= len(panels):
                break
            svg, h = _panel_svg(panels[idx], [str(x) for x in chart.labels], side + c * (PANEL_W + 10), y, label_w,
                                show_labels=True)
            parts.append(svg)
            row_h = max(row_h, h)
        y += row_h + 6
        heights.append(row_h)
    names = list(dict.fromkeys(s.name for p in panels for s in p.series))
    if any(len(p.series) > 1 for p in panels):  # one series per panel: its title names it
        legend, h = _legend(names, width, y)
        parts.append(legend)
        y += h
    title = (f'<text x="{width / 2:.1f}" y="17" text-anchor="middle" font-size="13" font-weight="700" {FONT}>'
             f'{_e(chart.title)}</text>') if chart.title else ""
    axis = (f'<text transform="translate(11 {(head + y) / 2:.1f}) rotate(-90)" text-anchor="middle" font-size="11" '
            f'fill="#555" {FONT}>{_e(chart.axis_label)}</text>') if chart.axis_label else ""
    height = y + 4
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
            f'height="{height:.0f}" role="img" aria-label="{_e(chart.title)}">{title}{axis}{"".join(parts)}</svg>')
