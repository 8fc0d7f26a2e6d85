"""HTML building blocks shared by the single-run and comparison reports:
escaping, JSON safe inside ``<script>``, and the page shell with inline CSS
and JS (no external resources of any kind)."""
from __future__ import annotations

import base64
import hashlib
import html
import json
from typing import Any

from avhb.report.numbers import fmt_number
from avhb.score.aggregate import Aggregate


_SPECIAL = __import__("re").compile(r"[&<>\"']")


def esc(value: Any) -> str:
    """HTML-escape any value's text (quotes included); None becomes ''."""
    if value is None:
        return ""
    text = value if type(value) is str else str(value)
    if not _SPECIAL.search(text):
        return text
    return html.escape(text, quote=True)


def json_for_script(data: Any) -> str:
    """JSON text safe inside ``<script type="application/json">``: every
    ``<``, ``>`` and ``&`` becomes a ``\\u00XX`` escape, so neither ``</script``
    nor ``<!--`` can appear, and ``json.loads`` still returns ``data``."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def pretty_json(data: Any) -> str:
    """Indented JSON for display inside ``<pre>`` (escape it before use)."""
    return json.dumps(data, ensure_ascii=False, indent=2, sort_keys=False, default=str)


def num_td(c: Aggregate) -> str:
    """Value, stderr and n as three right-aligned table cells."""
    value = fmt_number(c.value)
    stderr = f"± {fmt_number(c.stderr)}" if c.stderr is not None else ""
    n = "" if c.n is None else str(c.n)
    return f'<td class="num">{value}</td><td class="num se">{stderr}</td><td class="num">{n}</td>'


CSS = """
:root{--fg:#1d232b;--muted:#5f6b7a;--line:#d9dee5;--bg:#fff;--soft:#f4f6f9;--bad:#b42318;--good:#067647}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
header{padding:18px 28px;background:#1f2a37;color:#fff}
header h1{margin:0 0 4px;font-size:20px}
header .meta{color:#c8d1dc;font-size:13px}
header code{color:#fff}
nav{position:sticky;top:0;background:#fff;border-bottom:1px solid var(--line);padding:6px 28px;z-index:2}
nav a{margin-right:14px;color:#2454a6;text-decoration:none;font-size:13px}
main{padding:8px 28px 40px;max-width:1500px}
h2{font-size:17px;margin:26px 0 8px;border-bottom:2px solid var(--line);padding-bottom:4px}
h3{font-size:14px;margin:16px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:4px 10px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.se{color:var(--muted)}
tr.first td{border-top:1px solid #aab3bf}
.pending{color:var(--muted);font-style:italic}
.bad{color:var(--bad);font-weight:600}
.good{color:var(--good)}
.muted{color:var(--muted)}
.note{border-left:3px solid var(--muted);padding-left:.5em}
.charts{display:flex;flex-wrap:wrap;gap:14px}
figure.chart{margin:0;padding:8px;border:1px solid var(--line);border-radius:6px;background:#fff;max-width:100%}
figure.chart svg{display:block;max-width:100%;height:auto}
figure.chart figcaption{font-size:12px;color:var(--muted)}
pre{background:var(--soft);padding:8px 10px;border-radius:4px;white-space:pre-wrap;word-break:break-word;margin:4px 0;font-size:12.5px;max-height:420px;overflow:auto}
details>summary{cursor:pointer}
tr.diag td{color:var(--muted)}
td.about{color:var(--muted);font-size:12.5px;max-width:360px}
.tag{font-size:10.5px;padding:0 5px;border-radius:8px;background:var(--soft);border:1px solid var(--line);color:var(--muted)}
.notes{background:#eef4ff;border:1px solid #b7c9ee;padding:8px 12px;border-radius:4px;margin:10px 0}
.notes ul{margin:4px 0 0;padding-left:20px}
.problems{background:#fff4e5;border:1px solid #f5c27a;padding:8px 12px;border-radius:4px}
.controls{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin:8px 0}
.controls input[type=search]{width:320px;padding:5px 8px;font-size:14px}
.sample{border:1px solid var(--line);border-radius:5px;margin:5px 0;background:#fff}
.sample>summary{padding:5px 10px;display:flex;gap:12px;flex-wrap:wrap;align-items:baseline}
.sample>summary .sid{font-family:ui-monospace,monospace;font-size:12.5px}
.sample .body{padding:4px 12px 10px}
.sample.err{border-color:#f0a39b;background:#fffafa}
.badge{font-size:11px;padding:1px 6px;border-radius:9px;background:var(--soft);border:1px solid var(--line)}
.badge.bad{background:#fde8e6;border-color:#f0a39b}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:4px 0}
dl.kv dt{color:var(--muted);font-weight:600}
dl.kv dd{margin:0;word-break:break-word}
.sig-better{color:var(--good);font-weight:600}
.sig-worse{color:var(--bad);font-weight:600}
.sig-changed{font-weight:600}
td.best{font-weight:700}
.scroll{overflow-x:auto;max-width:100%}
"""

BROWSER_JS = """
(function(){
  var box=document.getElementById('samples'); if(!box) return;
  var rows=Array.prototype.slice.call(box.querySelectorAll('.sample'));
  var text=rows.map(function(r){return r.textContent.toLowerCase();});
  var q=document.getElementById('s-query'), err=document.getElementById('s-errors'),
      jf=document.getElementById('s-judge'), task=document.getElementById('s-task'),
      more=document.getElementById('s-more'), info=document.getElementById('s-count');
  var PAGE=100, limit=PAGE;
  function apply(){
    var terms=q.value.toLowerCase().split(/\\s+/).filter(Boolean), matched=0, shown=0;
    rows.forEach(function(r,i){
      var ok=(!err.checked||r.getAttribute('data-error')==='1')
        &&(!jf.checked||r.getAttribute('data-judgefail')==='1')
        &&(!task.value||r.getAttribute('data-task')===task.value)
        &&terms.every(function(t){return text[i].indexOf(t)>=0;});
      if(ok) matched++;
      var vis=ok&&matched<=limit; r.hidden=!vis; if(vis) shown++;
    });
    info.textContent=matched+' of '+rows.length+' samples match'+(shown<matched?' (showing '+shown+')':'');
    more.hidden=shown>=matched;
  }
  function reset(){limit=PAGE; apply();}
  // filters can be preset by the URL: report.html?q=words&task=NAME&errors=1&judge=1
  var params=new URLSearchParams(location.search);
  if(params.get('q')) q.value=params.get('q');
  if(params.get('task')) task.value=params.get('task');
  err.checked=params.get('errors')==='1'; jf.checked=params.get('judge')==='1';
  q.addEventListener('input',reset); err.addEventListener('change',reset);
  jf.addEventListener('change',reset); task.addEventListener('change',reset);
  more.addEventListener('click',function(){limit+=PAGE; apply();});
  apply();
})();
"""


def _script_hash(script: str) -> str:
    if not script:
        return "'none'"
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def page(title: str, body: str, data: Any | None = None, script: str = "") -> str:
    """A complete HTML document; ``title`` is escaped here, ``body`` must be
    built escaped. ``data`` is embedded as JSON (id ``avhb-data``)."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # no network fetch of any kind; only our own inline script may run
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        f"style-src 'unsafe-inline'; script-src {_script_hash(script)}; img-src data:\">",
        f"<title>{esc(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        body,
    ]
    if data is not None:
        parts.append(f'<script type="application/json" id="avhb-data">{json_for_script(data)}</script>')
    if script:
        parts.append(f"<script>{script}</script>")
    parts.append("</body></html>")
    return "\n".join(parts)
