"""The export page's inline stylesheet and script (no external files: the page works offline)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from caddie.modes.theme_files import ExportColours

LIGHT_PALETTE = {
    "bg": "#f7f7f8", "card": "#fff", "fg": "#1d1d1f", "muted": "#6b6b76", "line": "#dedee3", "accent": "#3b6fd8",
    "user": "#eef3ff", "tool": "#f4f4f6", "code": "#f6f8fa", "err": "#b3261e", "warn": "#fff4d6",
    "hidden": "#fdecec", "shrunk": "#eef8ee",
}  # fmt: skip
DARK_PALETTE = {
    "bg": "#17171b", "card": "#202026", "fg": "#e6e6ea", "muted": "#9a9aa6", "line": "#34343c", "accent": "#7aa2f7",
    "user": "#222a3d", "tool": "#26262d", "code": "#16161b", "err": "#f28b82", "warn": "#3a3320",
    "hidden": "#3a2326", "shrunk": "#213326",
}  # fmt: skip
"""caddie's own page colours: the light ones, and the dark ones for a browser in a dark colour scheme."""


def _declarations(palette: dict[str, str]) -> str:
    return ";".join(f"--{name}:{value}" for name, value in palette.items())


def _is_dark(hex_colour: str) -> bool:
    digits = hex_colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    r, g, b = (int(digits[i : i + 2], 16) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.5 * 255


def theme_css(colours: ExportColours | None, token_rules: Callable[[bool], str]) -> str:
    """The stylesheet's end for a theme with Pi's ``export`` colours (``pageBg``, ``cardBg``, ``infoBg``):
    those backgrounds, over caddie's light or dark palette — whichever suits them, whatever the browser's
    colour scheme (dark text on a dark page would be unreadable) — and code colours to match
    (``token_rules(dark)``). Empty without such colours: the page keeps caddie's look."""
    if colours is None:
        return ""
    given = {"bg": colours.page, "card": colours.card, "warn": colours.info}
    dark = _is_dark(next(c for c in given.values() if c is not None))
    palette = {
        **(DARK_PALETTE if dark else LIGHT_PALETTE),
        **{k: v for k, v in given.items() if v is not None},
    }
    rules = f":root{{color-scheme:{'dark' if dark else 'light'};{_declarations(palette)}}}"
    return f"{rules}\n@media (prefers-color-scheme:dark){{{rules}}}\n{token_rules(dark)}"


CSS = (
    (
        f":root{{{_declarations(LIGHT_PALETTE)}}}\n"
        f"@media (prefers-color-scheme:dark){{:root{{{_declarations(DARK_PALETTE)}}}}}\n"
    )
    + """*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif;display:flex;min-height:100vh}
a{color:var(--accent)}
#sidebar{width:300px;flex:none;border-right:1px solid var(--line);padding:12px;position:sticky;top:0;
height:100vh;overflow:auto;font-size:12px}
.sidebar-title{font-weight:600;margin-bottom:8px}#tree ul{list-style:none;margin:0;padding-left:12px}
#tree>ul{padding-left:0}#tree li{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
#tree a{color:var(--muted);text-decoration:none}#tree li.on-path>a{color:var(--fg);font-weight:600}
#tree li.model-hidden>a{text-decoration:line-through}#tree li.model-replaced>a{font-style:italic}
#content{flex:1;min-width:0;padding:16px 24px;max-width:1100px}
h1{font-size:20px;margin:0 0 8px}.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;
margin:0 0 12px;color:var(--muted)}.facts dd{margin:0;color:var(--fg);word-break:break-all}
.controls{display:flex;flex-wrap:wrap;gap:6px 10px;align-items:center;position:sticky;top:0;z-index:2;
background:var(--bg);padding:6px 0;border-bottom:1px solid var(--line)}
.controls input[type=search]{flex:1 1 220px;min-width:180px;padding:4px 8px;border:1px solid var(--line);
border-radius:6px;background:var(--card);color:var(--fg);font:inherit}
.controls button,.controls .button{background:var(--card);color:var(--fg);border:1px solid var(--line);
border-radius:6px;padding:3px 10px;cursor:pointer;font:inherit;font-size:13px;text-decoration:none}
.controls label{font-size:13px;color:var(--muted);white-space:nowrap}
.entry{background:var(--card);border:1px solid var(--line);border-radius:8px;margin:8px 0;padding:8px 14px}
.entry:not(.on-path){opacity:.9}.entry:target,.entry.current{outline:2px solid var(--accent)}
.entry-head{display:flex;gap:10px;align-items:baseline;font-size:12px;color:var(--muted);flex-wrap:wrap}
.entry-head .kind{font-weight:600;color:var(--fg)}.anchor{color:var(--muted);text-decoration:none}
.entry-user{background:var(--user)}.entry-toolResult{background:var(--tool)}
.entry-label,.entry-model_change,.entry-thinking_level_change,.entry-session_info,.entry-custom{padding:4px 14px;
font-size:12px}
.md>:first-child{margin-top:4px}.md>:last-child{margin-bottom:4px}.md p{margin:6px 0}
.md h1,.md h2,.md h3,.md h4{margin:12px 0 6px;line-height:1.3}.md h1{font-size:18px}.md h2{font-size:16px}
.md h3,.md h4{font-size:14px}.md ul,.md ol{margin:4px 0;padding-left:24px}.md li{margin:2px 0}
.md blockquote{margin:6px 0;padding:0 10px;border-left:3px solid var(--line);color:var(--muted)}
.md table{border-collapse:collapse;margin:6px 0}.md th,.md td{border:1px solid var(--line);padding:3px 8px}
.md :not(pre)>code{background:var(--code);border-radius:4px;padding:1px 4px;
font:12.5px ui-monospace,SFMono-Regular,Menlo,monospace}
pre{white-space:pre-wrap;word-wrap:break-word;background:var(--code);border:1px solid var(--line);
border-radius:6px;padding:6px 10px;margin:6px 0;font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;
max-height:560px;overflow:auto}pre code{font:inherit}
.tool-call{border-left:3px solid var(--accent);padding:2px 0 2px 10px;margin:8px 0}
.tool-head{font-size:13px}.tool-name{font-weight:600;font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
.tool-path{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;color:var(--accent)}
.fields{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 12px;margin:4px 0;font-size:13px}
.fields dt{color:var(--muted);font-family:ui-monospace,SFMono-Regular,Menlo,monospace}.fields dd{margin:0}
.fields pre{margin:2px 0}.value.list{margin:0;padding-left:22px}code.value{font-size:12.5px}
.diff span{display:block;padding:0 4px;margin:0 -4px}.diff .d-add{background:rgba(46,160,67,.18)}
.diff .d-del{background:rgba(248,81,73,.18)}.diff .d-hunk,.diff .d-file{color:var(--muted)}
details>summary{cursor:pointer;color:var(--muted)}.tool-result.error .meta,.tool-result.error summary,
.error{color:var(--err)}.tool-result.error pre{border-color:var(--err)}
.meta{color:var(--muted);font-size:12px}.badge{border-radius:10px;padding:0 8px;font-size:11px}
.badge.label{background:var(--warn)}.badge.visibility{background:var(--hidden);color:var(--fg)}
.model-hidden{background:var(--hidden)}.model-hidden .msg{opacity:.6}
.model-hidden.compacted{background:var(--card);border-left:4px solid var(--line)}
.model-hidden.compacted .badge.visibility{background:var(--tool)}.model-hidden.compacted .msg{opacity:.75}
.model-replaced{background:var(--shrunk)}.model-replaced .badge.visibility{background:var(--shrunk);
border:1px solid var(--line)}.model-view{margin:4px 0}
.entry-compaction,.entry-branch_summary{border-style:dashed;background:var(--warn)}
.fork{border-left:2px solid var(--line);padding-left:10px;margin:8px 0}
.branch>summary{font-weight:600;color:var(--fg);margin:4px 0}.branch.active>summary{color:var(--accent)}
.image{max-width:100%;max-height:360px;border-radius:6px}.files ul{margin:0;padding-left:18px}
body:not(.show-bookkeeping) .bookkeeping{display:none}
body.hide-unseen .model-hidden{display:none}
.search-miss{display:none}
@media (max-width:800px){#sidebar{display:none}}
"""
)

JS = """
(function(){
  var body=document.body, params=new URLSearchParams(location.search);
  var articles=Array.prototype.slice.call(document.querySelectorAll('#conversation article.entry'));
  var outline={};
  document.querySelectorAll('#tree li[data-entry-id]').forEach(function(li){outline[li.getAttribute('data-entry-id')]=li;});
  var search=document.getElementById('search'), status=document.getElementById('search-status');
  var showBook=document.getElementById('show-bookkeeping'), hideUnseen=document.getElementById('hide-unseen');
  var texts=null, matches=[], current=-1;
  function openAncestors(el){for(var p=el&&el.parentElement;p;p=p.parentElement){
    if(p.tagName==='DETAILS'){p.open=true;}}}
  function shown(a){return getComputedStyle(a).display!=='none';}
  function updateStatus(){var n=articles.filter(shown).length;
    status.textContent=n+' of '+articles.length+' entries shown'+(search.value.trim()?' \\u00b7 '+matches.length+' matching':'');}
  function setBookkeeping(on){showBook.checked=on;body.classList.toggle('show-bookkeeping',on);}
  function reveal(el){
    if(el.classList.contains('bookkeeping')&&!showBook.checked){setBookkeeping(true);}
    if(el.classList.contains('model-hidden')&&hideUnseen.checked){hideUnseen.checked=false;body.classList.remove('hide-unseen');}
    if(el.classList.contains('search-miss')){search.value='';applySearch();}
    openAncestors(el);}
  function jump(){var id=decodeURIComponent(location.hash.slice(1));if(!id)return;
    var el=document.getElementById(id);if(el){reveal(el);el.scrollIntoView({block:'center'});updateStatus();}}
  function applySearch(){
    var tokens=search.value.toLowerCase().split(/\\s+/).filter(Boolean);
    if(!texts){texts=articles.map(function(a){return a.textContent.toLowerCase();});}
    matches=[];current=-1;
    articles.forEach(function(a,i){
      var miss=tokens.length>0&&!tokens.every(function(t){return texts[i].indexOf(t)>=0;});
      a.classList.toggle('search-miss',miss);
      var li=outline[a.getAttribute('data-entry-id')];if(li){li.classList.toggle('search-miss',miss);}
      if(tokens.length&&!miss){matches.push(a);openAncestors(a);
        a.querySelectorAll('details').forEach(function(d){var t=d.textContent.toLowerCase();
          if(tokens.some(function(k){return t.indexOf(k)>=0;})){d.open=true;}});}
    });
    updateStatus();}
  function next(step){var visible=matches.filter(shown);if(!visible.length)return;
    current=(current+step+visible.length)%visible.length;
    articles.forEach(function(a){a.classList.remove('current');});
    visible[current].classList.add('current');visible[current].scrollIntoView({block:'center'});}
  var timer=null;
  search.addEventListener('input',function(){clearTimeout(timer);timer=setTimeout(applySearch,120);});
  search.addEventListener('keydown',function(ev){
    if(ev.key==='Enter'){clearTimeout(timer);applySearch();next(ev.shiftKey?-1:1);ev.preventDefault();}
    else if(ev.key==='Escape'){search.value='';applySearch();search.blur();}});
  document.addEventListener('keydown',function(ev){
    if(ev.key==='/'&&document.activeElement!==search){search.focus();ev.preventDefault();}});
  showBook.addEventListener('change',function(){setBookkeeping(showBook.checked);updateStatus();});
  hideUnseen.addEventListener('change',function(){body.classList.toggle('hide-unseen',hideUnseen.checked);updateStatus();});
  document.querySelectorAll('button[data-action]').forEach(function(b){
    b.addEventListener('click',function(){var open=b.getAttribute('data-action')==='expand';
      document.querySelectorAll('#conversation details').forEach(function(d){d.open=open;});});});
  var link=document.getElementById('download-jsonl');
  function toBlob(){var href=link.getAttribute('href')||'';var at=href.indexOf('base64,');
    if(href.slice(0,5)!=='data:'||at<0)return;
    try{var raw=atob(href.slice(at+7)),bytes=new Uint8Array(raw.length);
      for(var i=0;i<raw.length;i++){bytes[i]=raw.charCodeAt(i);}
      link.href=URL.createObjectURL(new Blob([bytes],{type:'application/x-ndjson'}));
      link.setAttribute('data-size',String(bytes.length));}catch(err){}}
  setBookkeeping(params.get('bookkeeping')==='1'||showBook.checked);
  if(params.get('unseen')==='hide'){hideUnseen.checked=true;body.classList.add('hide-unseen');}
  if(params.get('q')){search.value=params.get('q');}
  applySearch();
  window.addEventListener('hashchange',jump);jump();
  setTimeout(toBlob,0);
})();
"""
