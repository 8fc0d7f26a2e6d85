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


def uncertainty_td(c: Aggregate) -> str:
    """The 95 % interval and the clustered standard error (with its
    clusters) as two table cells; the interval's method is its title."""
    from avhb.score.stats import INTERVALS

    ci = f"[{fmt_number(c.ci[0])}, {fmt_number(c.ci[1])}]" if c.ci is not None else ""
    how = INTERVALS.get(c.ci_method or "", "")
    clustered = ""
    if c.clusters is not None:
        se = f"± {fmt_number(c.stderr_clustered)}" if c.stderr_clustered is not None else "-"
        clustered = f"{se} ({c.clusters} clusters)"
    return (f'<td class="num ci" title="{esc(how)}">{esc(ci)}</td>'
            f'<td class="num se">{esc(clustered)}</td>')


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
pre{background:var(--soft);padding:8px 10px;border-radius:4px;white-space:pre-wrap;word-break:break-word;margin:4px 0;
    font-size:12.5px;max-height:420px;overflow:auto}
details>summary{cursor:pointer}
tr.diag td{color:var(--muted)}
td.about{color:var(--muted);font-size:12.5px;max-width:360px}
.tag{font-size:10.5px;padding:0 5px;border-radius:8px;background:var(--soft);border:1px solid var(--line);color:var(--muted)}
.notes{background:#eef4ff;border:1px solid #b7c9ee;padding:8px 12px;border-radius:4px;margin:10px 0}
.notes ul{margin:4px 0 0;padding-left:20px}
.problems{background:#fff4e5;border:1px solid #f5c27a;padding:8px 12px;border-radius:4px}
.controls{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin:8px 0}
.controls input[type=search]{width:320px;padding:5px 8px;font-size:14px}
.pager{display:flex;gap:12px;align-items:center;margin:6px 0}
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
table.trajectory{width:100%}
table.trajectory td pre{max-height:200px;margin:0}
table.trajectory tr.turn td{border-top:2px solid #aab3bf}
table.trajectory td.step{font-family:ui-monospace,monospace;font-size:12.5px}
table.trajectory th,table.trajectory td.step,table.trajectory td.kind,table.trajectory td.role,table.trajectory td.verdict{white-space:nowrap}
table.mini{margin:0;font-size:12px}
table.mini th,table.mini td{padding:1px 6px}
ul.counts{margin:0;padding-left:18px}
"""

BROWSER_JS = r"""
(function(){
  var box=document.getElementById('samples'), src=document.getElementById('avhb-samples');
  if(!box||!src) return;
  var q=document.getElementById('s-query'), err=document.getElementById('s-errors'),
      jf=document.getElementById('s-judge'), task=document.getElementById('s-task'),
      info=document.getElementById('s-count'), prev=document.getElementById('s-prev'),
      next=document.getElementById('s-next'), pageInfo=document.getElementById('s-page');
  var PAGE=100, MAX_DOC=2000, MAX_TEXT=20000, page=1, rows=[], matches=[];
  function el(tag, cls, text){var e=document.createElement(tag); if(cls) e.className=cls;
    if(text!==undefined&&text!==null) e.textContent=text; return e;}
  function txt(v){return v===null||v===undefined?'null':(typeof v==='string'?v:JSON.stringify(v));}
  function truthy(v){return !!v&&!(typeof v==='object'&&Object.keys(v).length===0);}
  function cut(v,limit,tail,row){var t=txt(v); if(row.report_capped||t.length<=limit) return t;
    return t.slice(0,limit)+'… ['+(t.length-limit)+' more characters'+tail+']';}
  function short(v,row){return cut(v,MAX_DOC,'',row);}
  function capped(v,row){return cut(v,MAX_TEXT,': the full text is in samples/<task>.jsonl',row);}
  function g3(x){if(typeof x!=='number') return String(x); if(Number.isInteger(x)) return String(x);
    if(!isFinite(x)) return String(x); var p=x.toExponential(2).split('e'), e=Number(p[1]);
    if(e<-4||e>=3) return p[0].replace(/\.?0+$/,'')+'e'+(e<0?'-':'+')+(Math.abs(e)<10?'0':'')+Math.abs(e);
    return x.toFixed(Math.max(0,2-e)).replace(/(\.\d*?)0+$/,'$1').replace(/\.$/,'');}
  function scoreText(s){if(!s||typeof s!=='object'||Array.isArray(s)) return '';
    return Object.keys(s).map(function(k){var v=s[k]; return k+'='+(v===null?'–':g3(v));}).join(' · ');}
  function times(ts){if(!Array.isArray(ts)||!ts.length) return '';
    return ts.map(function(t){return typeof t==='number'?t.toFixed(2)+'s':String(t);}).join(' ');}
  function judgeFailed(r){var j=r.judgements; if(!j||typeof j!=='object'||Array.isArray(j)) return false;
    return Object.keys(j).some(function(k){var v=j[k]; return !(v&&typeof v==='object'&&v.ok===true);});}
  function videoText(v){if(typeof v==='string') return 'video '+v; if(!v||typeof v!=='object') return '';
    var parts=['video '+(v.path===undefined?'?':txt(v.path))]; if(v.sent===false) parts.push('not sent');
    if(Array.isArray(v.frame_indices)&&v.frame_indices.length) parts.push(v.frame_indices.length+' frames');
    var t=times(v.timestamps); if(t) parts.push('at '+t); return parts.join(' ');}
  function imagesText(ims){if(!Array.isArray(ims)||!ims.length) return '';
    var sizes=ims.filter(function(im){return im&&typeof im==='object';}).map(function(im){
      var size=im.size||im.source_size, t=Array.isArray(size)&&size.length===2?size[0]+'x'+size[1]:'?';
      if(im.source_size&&im.size&&JSON.stringify(im.source_size)!==JSON.stringify(im.size))
        t+=' (from '+im.source_size[0]+'x'+im.source_size[1]+')';
      if(im.sent===false) t+=' not sent';
      return (im.label||String(im.path||'').split('/').pop())+' '+t;});
    return ims.length+' image'+(ims.length!==1?'s':'')+': '+sizes.join(', ');}
  function mediaText(m){if(!m||typeof m!=='object') return ''; var parts=[];
    (Array.isArray(m.video)?m.video:[m.video]).forEach(function(v){var t=videoText(v); if(t) parts.push(t);});
    if(Array.isArray(m.frame_indices)&&m.frame_indices.length) parts.push(m.frame_indices.length+' frames');
    var t=times(m.timestamps); if(t) parts.push('at '+t);
    var ims=imagesText(m.images); if(ims) parts.push(ims);
    function clip(a){return (a.seconds===undefined?'?':a.seconds)+' s at '+(a.rate===undefined?'?':a.rate)+' Hz';}
    var a=m.audio; if(a&&typeof a==='object'&&!Array.isArray(a)) parts.push('audio '+clip(a));
    else if(Array.isArray(a)&&a.length&&a.every(function(x){return x&&typeof x==='object';}))
      parts.push(a.length+' audio clip'+(a.length!==1?'s':'')+': '+a.map(function(x){
        return String(x.path||'').split('/').pop()+' '+clip(x);}).join(', '));
    else if(truthy(a)) parts.push('audio '+txt(a));
    return parts.join('; ');}
  function adaptText(a){return Array.isArray(a)?a.map(txt).join('; '):txt(a);}
  function field(dl,name,body){dl.appendChild(el('dt',null,name)); var dd=el('dd');
    if(typeof body==='string') dd.textContent=body; else dd.appendChild(body); dl.appendChild(dd);}
  function pre(text,cls){return el('pre',cls,text);}
  function fold(summary,body){var d=el('details'); d.appendChild(el('summary',null,summary)); d.appendChild(body); return d;}
  function okSpan(ok){return el('span',ok?'good':'bad',ok?'ok':'unparsable');}
  function judgeTable(j,row){var t=el('table','judgements'), h=el('tr');
    ['Metric','Role','Verdict','Parsed','Raw reply'].forEach(function(x){h.appendChild(el('th',null,x));}); t.appendChild(h);
    Object.keys(j).forEach(function(metric){var v=j[metric]; if(!v||typeof v!=='object') v={value:v};
      var tr=el('tr'); tr.appendChild(el('td',null,metric));
      tr.appendChild(el('td','role',typeof v.role==='string'&&v.role?v.role:'–'));
      tr.appendChild(el('td','verdict',txt(v.value)));
      var st=el('td'); st.appendChild(okSpan(v.ok===true)); tr.appendChild(st);
      var raw=el('td'); if(v.raw) raw.appendChild(pre(capped(v.raw,row))); tr.appendChild(raw); t.appendChild(tr);});
    return t;}
  // a multi-step sample's trajectory: one row per step (model turn, judge verdict, or what the driver logged)
  var STEP_SHOWN=['step','kind','role','prompt','response','error','value','ok','report_omitted'];
  function plain(v){return v===null||typeof v!=='object';}
  function flat(x){return !!x&&typeof x==='object'&&!Array.isArray(x)&&Object.keys(x).every(function(k){return plain(x[k]);});}
  // a list of flat objects is a table; texts after them (the report's "… [n more items]") follow it
  function valueNode(v,row){
    var n=Array.isArray(v)?v.filter(flat).length:0;
    if(n&&v.slice(0,n).every(flat)&&v.slice(n).every(function(x){return typeof x==='string';})){
      var objs=v.slice(0,n), keys=[], box=document.createDocumentFragment();
      objs.forEach(function(x){Object.keys(x).forEach(function(k){if(keys.indexOf(k)<0) keys.push(k);});});
      var t=el('table','mini'), h=el('tr'); keys.forEach(function(k){h.appendChild(el('th',null,k));}); t.appendChild(h);
      objs.forEach(function(x){var tr=el('tr'); keys.forEach(function(k){tr.appendChild(el('td',null,k in x?txt(x[k]):''));});
        t.appendChild(tr);}); box.appendChild(t);
      v.slice(n).forEach(function(x){box.appendChild(el('div','muted',x));}); return box;}
    if(Array.isArray(v)&&v.every(plain)) return document.createTextNode(v.map(txt).join(', '));
    return document.createTextNode(short(v,row));}
  function stepRole(s){if(s.kind==='model') return 'model';
    return typeof s.role==='string'&&s.role?s.role:(s.kind==='judge'?'judge':'');}
  function trajectoryTable(steps,row,task){var t=el('table','trajectory'), h=el('tr'), group=null;
    ['Step','Kind','Role','Prompt / answer','Verdict','Details'].forEach(function(x){h.appendChild(el('th',null,x));});
    t.appendChild(h);
    steps.forEach(function(s){var tr=el('tr');
      if(!s||typeof s!=='object'||Array.isArray(s)) s={value:s};
      if(typeof s.report_omitted==='number'){var td=el('td','pending',s.report_omitted+' step'
          +(s.report_omitted!==1?'s':'')+' left out here (the report keeps the first and last steps of a long '
          +'trajectory); every step is in samples/'+task+'.jsonl');
        td.colSpan=6; tr.appendChild(td); t.appendChild(tr); return;}
      var name=s.step===undefined||s.step===null?'':txt(s.step), top=name.split('.')[0];
      if(top!==group){tr.className='turn'; group=top;}
      tr.appendChild(el('td','step',name)); tr.appendChild(el('td','kind muted',s.kind===undefined?'log':txt(s.kind)));
      tr.appendChild(el('td','role',stepRole(s)));
      var said=el('td');
      if(s.prompt!==undefined&&s.prompt!==null) said.appendChild(fold('prompt',pre(capped(s.prompt,row))));
      if(s.response!==undefined&&s.response!==null) said.appendChild(pre(capped(s.response,row),'answer'));
      if(s.error) said.appendChild(pre(capped(s.error,row),'bad'));
      tr.appendChild(said);
      var verdict=el('td','verdict');
      if(s.kind==='judge'||'ok' in s){verdict.appendChild(document.createTextNode(txt(s.value)+' '));
        verdict.appendChild(okSpan(s.ok===true));}
      else if(s.value!==undefined) verdict.textContent=txt(s.value);
      tr.appendChild(verdict);
      var more=Object.keys(s).filter(function(k){return STEP_SHOWN.indexOf(k)<0;}), details=el('td');
      if(more.length){var kv=el('dl','kv'); more.forEach(function(k){kv.appendChild(el('dt',null,k));
        var dd=el('dd'); dd.appendChild(valueNode(s[k],row)); kv.appendChild(dd);}); details.appendChild(kv);}
      tr.appendChild(details); t.appendChild(tr);});
    return t;}
  function stepCounts(steps){var m=0, j=0; steps.forEach(function(s){if(s&&s.kind==='model') m++;
      else if(s&&s.kind==='judge') j++;});
    return m+' model step'+(m!==1?'s':'')+(j?', '+j+' verdict'+(j!==1?'s':''):'');}
  function outputsList(o,row){var kv=el('dl','kv'); Object.keys(o).forEach(function(k){kv.appendChild(el('dt',null,k));
      var dd=el('dd'); dd.appendChild(valueNode(o[k],row)); kv.appendChild(dd);}); return kv;}
  function render(s){var r=s.row, d=el('details',s.error||s.jfail?'sample err':'sample'), head=el('summary');
    d.setAttribute('data-task',s.task); d.setAttribute('data-id',txt(r.id));
    d.setAttribute('data-error',s.error?'1':'0'); d.setAttribute('data-judgefail',s.jfail?'1':'0');
    head.appendChild(el('span','badge',s.task));
    head.appendChild(el('span','sid',txt(r.id===undefined?'?':r.id)+(typeof r.repeat==='number'&&r.repeat?' #'+r.repeat:'')));
    head.appendChild(el('span','muted',scoreText(r.scores)));
    var steps=Array.isArray(r.trajectory)&&r.trajectory.length>1?r.trajectory:null;  // one step: the response says it
    if(steps) head.appendChild(el('span','badge',stepCounts(steps)));
    if(s.error) head.appendChild(el('span','badge bad','error'));
    if(s.jfail) head.appendChild(el('span','badge bad','judge failure'));
    d.appendChild(head); var body=el('div','body'), dl=el('dl','kv'); body.appendChild(dl); d.appendChild(body);
    if(s.error) field(dl,'error',pre(capped(r.error,r),'bad'));
    var doc=r.doc; if(doc&&typeof doc==='object'&&!Array.isArray(doc)&&Object.keys(doc).length){
      if(doc.question!==undefined) field(dl,'question',pre(short(doc.question,r)));
      var rest=Object.keys(doc).filter(function(k){return k!=='question';});
      if(rest.length){var kv=el('dl','kv'); rest.forEach(function(k){kv.appendChild(el('dt',null,k));
        kv.appendChild(el('dd',null,short(doc[k],r)));}); field(dl,'doc',fold('fields',kv));}}
    if(truthy(r.prompt)) field(dl,'prompt',fold('text sent',pre(capped(r.prompt,r))));
    var m=mediaText(r.media); if(m) field(dl,'media',m);
    if(truthy(r.adaptations)) field(dl,'adaptations',adaptText(r.adaptations));
    field(dl,'target',pre(capped(r.target,r))); field(dl,'response',pre(capped(r.response,r)));
    field(dl,'extracted',pre(capped(r.extracted,r)));
    var sc=scoreText(r.scores); if(sc) field(dl,'scores',sc);
    var o=r.outputs; if(o&&typeof o==='object'&&!Array.isArray(o)&&Object.keys(o).length) field(dl,'outputs',outputsList(o,r));
    if(steps) field(dl,'trajectory',trajectoryTable(steps,r,s.task));
    var j=r.judgements; if(j&&typeof j==='object'&&!Array.isArray(j)&&Object.keys(j).length) field(dl,'judgements',judgeTable(j,r));
    if(r.prompt_hash) field(dl,'prompt hash',el('code',null,txt(r.prompt_hash)));
    return d;}
  function searchText(s){if(s.text===undefined){var r=s.row, j=r.judgements||{}, doc=r.doc||{};
    var parts=[s.task,txt(r.id),typeof r.repeat==='number'&&r.repeat?'#'+r.repeat:'',scoreText(r.scores),r.error?txt(r.error):'',mediaText(r.media),
      r.prompt?txt(r.prompt):'',r.adaptations?adaptText(r.adaptations):'',txt(r.target),txt(r.response),
      txt(r.extracted),r.prompt_hash?txt(r.prompt_hash):''];
    if(typeof doc==='object') Object.keys(doc).forEach(function(k){parts.push(k,txt(doc[k]));});
    if(Array.isArray(r.trajectory)) r.trajectory.forEach(function(st){if(st&&typeof st==='object'){
      if(st.response!==undefined&&st.response!==null) parts.push(txt(st.response));
      if(st.role) parts.push(txt(st.role)); if(st.value!==undefined) parts.push(txt(st.value));}});
    if(typeof j==='object') Object.keys(j).forEach(function(k){var v=j[k]; parts.push(k);
      if(v&&typeof v==='object'&&v.role) parts.push(txt(v.role));
      if(v&&typeof v==='object'){parts.push(txt(v.value),v.ok===true?'ok':'unparsable'); if(v.raw) parts.push(txt(v.raw));}
      else parts.push(txt(v));});
    s.text=parts.join('\n').toLowerCase();} return s.text;}
  function apply(keepPage){
    var terms=q.value.toLowerCase().split(/\s+/).filter(Boolean);
    matches=rows.filter(function(s){return (!err.checked||s.error)&&(!jf.checked||s.jfail)
      &&(!task.value||s.task===task.value)&&terms.every(function(t){return searchText(s).indexOf(t)>=0;});});
    var pages=Math.max(1,Math.ceil(matches.length/PAGE)); if(!keepPage) page=1; page=Math.min(Math.max(page,1),pages);
    var start=(page-1)*PAGE, shown=matches.slice(start,start+PAGE), frag=document.createDocumentFragment();
    shown.forEach(function(s){var d=render(s); if(matches.length===1) d.open=true; frag.appendChild(d);});
    box.textContent=''; box.appendChild(frag);
    info.textContent=matches.length+' of '+rows.length+' samples match'
      +(matches.length>PAGE?' (showing '+(start+1)+'–'+(start+shown.length)+')':'');
    pageInfo.textContent=pages>1?'page '+page+' of '+pages:'';
    prev.hidden=page<=1; next.hidden=page>=pages;}
  function start(data){
    data.tasks.forEach(function(t,i){data.rows[i].forEach(function(r){
      rows.push({task:t,row:r,error:truthy(r.error),jfail:judgeFailed(r)});});});
    // filters and the page can be preset by the URL: report.html?q=words&task=NAME&errors=1&judge=1&page=2
    var params=new URLSearchParams(location.search);
    if(params.get('q')) q.value=params.get('q');
    if(params.get('task')) task.value=params.get('task');
    err.checked=params.get('errors')==='1'; jf.checked=params.get('judge')==='1';
    page=parseInt(params.get('page')||'1',10)||1;
    function reset(){apply(false);}
    q.addEventListener('input',reset); err.addEventListener('change',reset);
    jf.addEventListener('change',reset); task.addEventListener('change',reset);
    prev.addEventListener('click',function(){page-=1; apply(true); box.scrollIntoView();});
    next.addEventListener('click',function(){page+=1; apply(true); box.scrollIntoView();});
    apply(true);}
  function fail(e){info.textContent='the embedded samples could not be read ('+e+'); they are in samples/<task>.jsonl';}
  var text=src.textContent;
  if(src.getAttribute('data-encoding')!=='gzip+base64'){try{start(JSON.parse(text));}catch(e){fail(e);} return;}
  if(typeof DecompressionStream==='undefined'){fail('this browser has no DecompressionStream'); return;}
  var bytes;
  if(Uint8Array.fromBase64) bytes=Uint8Array.fromBase64(text);
  else {var bin=atob(text); bytes=new Uint8Array(bin.length); for(var i=0;i<bin.length;i++) bytes[i]=bin.charCodeAt(i);}
  new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).text()
    .then(function(t){start(JSON.parse(t));}).catch(fail);
})();
"""


def _script_hash(script: str) -> str:
    if not script:
        return "'none'"
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def page(title: str, body: str, data: Any | None = None, script: str = "", digest: str | None = None) -> str:
    """A complete HTML document; ``title`` is escaped here, ``body`` must be
    built escaped. ``data`` is embedded as JSON (id ``avhb-data``);
    ``digest`` (hex) names the inputs the page was made from."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        *([f'<meta name="avhb-inputs" content="{esc(digest)}">'] if digest else []),
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
