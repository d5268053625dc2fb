"""``profile --html``: one self-contained HTML file (no script, no network, no CDN).

The charts are inline SVG drawn here from the profile's figures: the context per request
with the pressure lines and compaction marks, the breakdown by category and by tool, and for a
folder one small chart per session. The verdict comes with its figures and the advice as a
before/after table in the agent's own key names. ``render(out)`` takes the dict ``ctxtool
profile --json`` prints and returns the page; ``write_report`` writes it atomically.
"""

from __future__ import annotations

import html
import os

from .jsonl import atomic_write
from .render import fmt_duration, fmt_int, fmt_pct
from .profile import (
    BURSTY_MIN_BURST_CALL_SHARE, BURSTY_MIN_GAP_CV, BURSTY_MIN_IDLE_GAPS, BURSTY_MIN_IDLE_SHARE,
    CONVERSATIONAL_MAX_CALLS_PER_TURN, CONVERSATIONAL_MAX_SHARE, IDLE_GAP_MIN, PRESSURE_LEVELS,
    TOOL_HEAVY_MIN_CALLS_PER_TURN, TOOL_HEAVY_MIN_SHARE, TOOL_HEAVY_SOLO_SHARE,
)

COLORS = {"recorded": "#2f6fb0", "estimated": "#9dbbe0", "pressure": "#c77d00", "critical": "#c0392b",
          "compaction": "#c0392b", "axis": "#666", "grid": "#e3e3e3", "tools": "#2f6fb0", "user": "#5a9e4b",
          "assistant": "#8e6bbf", "summary": "#c77d00", "baseline": "#999", "other": "#bbb"}
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1040px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#666;margin:0 0 12px}.verdict{font-size:20px;font-weight:600}.tag{display:inline-block;padding:1px 8px;
border-radius:10px;background:#eef3fa;color:#2f6fb0;font-size:12px;margin-left:6px;vertical-align:middle}
table{border-collapse:collapse;width:100%;margin:6px 0 10px}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eee;
vertical-align:top}th{background:#fafafa;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#2e7d32;font-weight:600}.chg{color:#c0392b;font-weight:600}code{background:#f4f4f4;padding:0 3px;border-radius:3px}
.why{color:#555;font-size:13px}svg text{font-family:inherit}.legend span{margin-right:14px;font-size:12px;color:#555}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
"""


def _e(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


_pct = fmt_pct
_tok = fmt_int
_dur = fmt_duration


def _val(v) -> str:
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "true" if v else "false"
    return f'"{v}"' if isinstance(v, str) else f"{v:,}" if isinstance(v, int) else str(v)


# ------------------------------------------------------------------ charts


def context_chart(tl: dict, window: int, *, width: int = 960, height: int = 280, small: bool = False) -> str:
    """Context tokens per request (bars: recorded usage dark, estimates light), the pressure
    lines (50/70/85% of the window) and the compaction marks."""
    series = tl.get("series") or []
    rec = tl.get("series_recorded") or [1] * len(series)
    left, right, top, bottom = (4, 4, 4, 4) if small else (64, 56, 14, 34)
    w, h = width - left - right, height - top - bottom
    ymax = max([max(series) if series else 0, int(max(PRESSURE_LEVELS) * window * 1.08)]) or 1
    n = max(1, len(series))
    bw = w / n
    out = [f'<svg class="context-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="context tokens per request">']
    if not small:
        for k in range(5):
            v = ymax * k / 4
            y = top + h - h * v / ymax
            out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + w}" y2="{y:.1f}" stroke="{COLORS["grid"]}"/>')
            out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end" fill="{COLORS["axis"]}">'
                       f'{int(v / 1000):,}K</text>')
    for i, v in enumerate(series):
        bh = h * v / ymax
        color = COLORS["recorded"] if (rec[i] if i < len(rec) else 1) else COLORS["estimated"]
        out.append(f'<rect class="bar" x="{left + i * bw:.2f}" y="{top + h - bh:.2f}" width="{max(bw - (0 if small else 1), 0.6):.2f}" '
                   f'height="{bh:.2f}" fill="{color}"><title>request {i * tl.get("bucket", 1) + 1}: {v:,} tokens</title></rect>')
    for p in PRESSURE_LEVELS:
        y = top + h - h * p * window / ymax
        color = COLORS["critical"] if p >= 0.85 else COLORS["pressure"]
        out.append(f'<line class="pressure" x1="{left}" y1="{y:.1f}" x2="{left + w}" y2="{y:.1f}" stroke="{color}" '
                   f'stroke-dasharray="5,4" stroke-width="{1 if small else 1.5}"/>')
        if not small:
            out.append(f'<text x="{left + w + 4}" y="{y + 4:.1f}" font-size="11" fill="{color}">{int(p * 100)}%</text>')
    bucket = max(1, tl.get("bucket", 1))
    for cp in tl.get("compaction_points", []):
        x = left + min(n - 1, cp // bucket) * bw
        out.append(f'<line class="compaction" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + h}" stroke="{COLORS["compaction"]}" '
                   f'stroke-width="2"><title>compaction before request {cp + 1}</title></line>')
        if not small:
            out.append(f'<text x="{x + 3:.1f}" y="{top + 12}" font-size="11" fill="{COLORS["compaction"]}">C</text>')
    if not small:
        out.append(f'<line x1="{left}" y1="{top + h}" x2="{left + w}" y2="{top + h}" stroke="{COLORS["axis"]}"/>')
        out.append(f'<text x="{left}" y="{height - 10}" font-size="11" fill="{COLORS["axis"]}">request 1</text>')
        out.append(f'<text x="{left + w}" y="{height - 10}" font-size="11" text-anchor="end" fill="{COLORS["axis"]}">'
                   f'request {len(series) * bucket:,} (window {window:,} tokens)</text>')
    out.append("</svg>")
    return "".join(out)


def bar_chart(rows: list[tuple[str, float, str]], *, width: int = 960, label_w: int = 290, css: str = "breakdown") -> str:
    """Horizontal bars: (label, value, colour); the value is shown beside its bar."""
    rows = [r for r in rows if r[1] is not None]
    if not rows:
        return ""
    bar_h, gap = 18, 6
    height = len(rows) * (bar_h + gap) + gap
    top = max(r[1] for r in rows) or 1
    w = width - label_w - 110
    out = [f'<svg class="{css}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">']
    for i, (label, value, color) in enumerate(rows):
        y = gap + i * (bar_h + gap)
        bw = max(1.0, w * value / top) if value else 0
        out.append(f'<text x="{label_w - 8}" y="{y + 13}" font-size="12" text-anchor="end">{_e(label)}</text>')
        out.append(f'<rect class="bar" x="{label_w}" y="{y}" width="{bw:.1f}" height="{bar_h}" fill="{color}"/>')
        out.append(f'<text x="{label_w + bw + 6:.1f}" y="{y + 13}" font-size="12" fill="#444">{int(value):,}</text>')
    out.append("</svg>")
    return "".join(out)


# ------------------------------------------------------------------ sections


def _figures_table(f: dict) -> str:
    rows = [
        ("tool-result share of conversation tokens", _pct(f["tool_share"]),
         f"tool-heavy ≥ {TOOL_HEAVY_MIN_SHARE:.0%} (alone ≥ {TOOL_HEAVY_SOLO_SHARE:.0%}); conversational < {CONVERSATIONAL_MAX_SHARE:.0%}"),
        ("tool calls per user turn", f"{f['calls_per_turn']:.2f}",
         f"tool-heavy ≥ {TOOL_HEAVY_MIN_CALLS_PER_TURN:g}; conversational < {CONVERSATIONAL_MAX_CALLS_PER_TURN:g}"),
        (f"idle gaps ≥ {IDLE_GAP_MIN:g} min", str(f["idle_gaps"]), f"bursty ≥ {BURSTY_MIN_IDLE_GAPS}"),
        ("idle share of wall time", _pct(f["idle_share"]), f"bursty ≥ {BURSTY_MIN_IDLE_SHARE:.0%}"),
        ("tool calls inside bursts", _pct(f["burst_call_share"]), f"bursty ≥ {BURSTY_MIN_BURST_CALL_SHARE:.0%}"),
        ("gap coefficient of variation", f"{f['gap_cv']:.2f}", f"bursty ≥ {BURSTY_MIN_GAP_CV:g}"),
    ]
    body = "".join(f"<tr><td>{_e(a)}</td><td class=n>{_e(b)}</td><td>{_e(c)}</td></tr>" for a, b, c in rows)
    return f"<table class=figures><tr><th>signature</th><th>value</th><th>thresholds</th></tr>{body}</table>"


def _verdict(c: dict, f: dict) -> str:
    tag = '<span class="tag">borderline</span>' if c.get("borderline") else ""
    near = f"<p class=sub>borderline: {_e('; '.join(c['near']))}</p>" if c.get("borderline") else ""
    return (f'<p class="verdict" id="verdict">{_e(c["pattern"].upper())}{tag}<span class="tag">confidence {_e(c["confidence"])}</span></p>'
            f"<p class=sub>rule: {_e(c['rule'])}</p>{near}{_figures_table(f)}")


def _session_sections(p: dict) -> str:
    t = p["tokens"]
    tl = p["timeline"]
    parts = [f"<h2>Verdict</h2>{_verdict(p['classification'], p['figures'])}"]
    parts.append(f"<h2>Context tokens per request</h2><p class=sub>{tl['points']:,} requests, {tl['recorded_points']:,} with "
                 f"recorded usage; peak {tl['peak']:,} = {_pct(tl['peak_share'])} of the {p['window']:,} window "
                 f"({_e(p['window_source'])}); requests at or over "
                 + ", ".join(f"{k}%: {v:,}" for k, v in tl["points_over"].items()) + "</p>")
    parts.append(context_chart(tl, p["window"]))
    parts.append('<p class="legend"><span><i style="background:%s"></i>recorded usage</span><span><i style="background:%s"></i>'
                 'estimated (chars/4)</span><span><i style="background:%s"></i>pressure lines 50/70%%</span><span><i style="background:%s">'
                 '</i>85%% and compaction (C)</span></p>' % (COLORS["recorded"], COLORS["estimated"], COLORS["pressure"], COLORS["critical"]))
    cats = []
    for r in t["now"]:
        if r["category"].startswith("tool:"):
            continue
        key = "tools" if r["category"] == "tools" else r["category"]
        cats.append((r["label"].strip(), r["tokens"], COLORS.get(key, COLORS["other"])))
    parts.append(f"<h2>What is eating the context</h2><p class=sub>~{t['context_now']:,} tokens now "
                 f"({_pct(t['context_now_share'])} of the window; {_e(t['context_now_source'])}); categories: {_e(t['method'])}</p>")
    parts.append(bar_chart(cats, css="breakdown categories"))
    tools = [(f"{x['name']} ({x['calls']} calls)", x["tokens"], COLORS["tools"]) for x in p["tools"] if x["tokens"]][:12]
    if tools:
        parts.append("<h3>Tool results by tool (whole session, tokens)</h3>" + bar_chart(tools, css="breakdown tools"))
    cp = p["compactions"]
    if cp["count"]:
        rows = "".join(f"<tr><td>#{i['n']}</td><td class=n>{i['line']}</td><td class=n>{_tok(i['tokens_before'])}</td>"
                       f"<td class=n>{_tok(i['summary_tokens'])}</td></tr>" for i in cp["items"])
        parts.append(f"<h2>Compactions: {cp['count']}</h2><table><tr><th>#</th><th>line</th><th>tokens before</th>"
                     f"<th>summary tokens</th></tr>{rows}</table><p class=sub>summaries now take {_pct(cp['summary_share_now'])} "
                     f"of the context{'; stacking' if cp['stacking'] else ''}</p>")
    return "".join(parts)


def _folder_sections(out: dict) -> str:
    agg = out["aggregate"]
    rows = []
    for p in out["sessions"]:
        f = p["figures"]
        c = p["classification"]
        rows.append(f"<tr><td>{_e(os.path.basename(p['path']))}</td><td>{_e(p['format'])}</td>"
                    f"<td>{_e(c['pattern'])}{'?' if c['borderline'] else ''}</td><td class=n>{_pct(f['tool_share'])}</td>"
                    f"<td class=n>{_dur(p['duration_s'])}</td><td class=n>{_tok(p['tokens']['context_now'])}</td>"
                    f"<td class=n>{p['compactions']['count']}</td>"
                    f"<td>{context_chart(p['timeline'], p['window'], width=220, height=44, small=True)}</td></tr>")
    table = ("<table class=sessions><tr><th>session</th><th>format</th><th>style</th><th>tool share</th><th>duration</th>"
             "<th>context now</th><th>compactions</th><th>context per request</th></tr>" + "".join(rows) + "</table>")
    dist = "".join(f"<tr><td>{_e(k)}</td><td class=n>{v['sessions']}</td><td class=n>{_tok(v['tokens'])}</td>"
                   f"<td class=n>{_pct(v['token_share'])}</td></tr>" for k, v in agg["distribution"].items() if v["sessions"])
    return (f"<h2>Verdict for {agg['sessions']} sessions</h2>{_verdict(agg['classification'], agg['figures'])}"
            f"<table><tr><th>style</th><th>sessions</th><th>conversation tokens</th><th>token share</th></tr>{dist}</table>"
            f"<h2>Sessions</h2>{table}")


def _advice_section(out: dict) -> str:
    ag = out["agent"]
    rec = out["recommendation"]
    conf = out["config"]
    where = conf["path"] or f"{ag['label']} defaults"
    rows = []
    for status, items in (("ok", out["already_right"]), ("change", out["changes"])):
        for it in items:
            before = _val(it["current"])
            if it["source"] == "default":
                before += f" (default: {it['default']})" if it["current"] is None else " (default)"
            mark = '<span class="ok">already right</span>' if status == "ok" else '<span class="chg">change</span>'
            rows.append(f"<tr><td>{_e(it['title'])}</td><td><code>{_e(it['path'])}</code></td><td>{_e(before)}</td>"
                        f"<td>{_e(_val(it['recommended']))}</td><td>{mark}</td><td class=why>{_e(it['why'])}</td></tr>")
    prac = "".join(f"<li><b>{_e(p['title'] if p['intent'] else 'Practice')}</b>"
                   f"{' (no ' + _e(ag['label']) + ' setting)' if p['intent'] else ''}: {_e(p['practice'])}</li>"
                   for p in out.get("practices", []))
    long = "; long session, compression trigger raised" if rec["adjustments"] else ""
    return (f"<h2>Advice: {_e(ag['label'])} settings for {_e(rec['pattern'])} work{_e(long)}</h2>"
            f"<p class=sub>agent: {_e(ag['label'])} ({_e(ag['basis'])}); compared with: {_e(where)}</p>"
            "<table class=advice><tr><th>setting</th><th>key</th><th>before</th><th>after</th><th></th><th>why</th></tr>"
            + "".join(rows) + "</table>" + (f"<ul class=practices>{prac}</ul>" if prac else ""))


def render(out: dict) -> str:
    """The report page for a ``profile --json`` result."""
    sessions = out["sessions"]
    if out.get("aggregate"):
        title = f"ctxtool profile: {len(sessions)} sessions"
        body = _folder_sections(out)
    else:
        p = sessions[0]
        title = f"ctxtool profile: {os.path.basename(p['path'])}"
        body = _session_sections(p)
    head = sessions[0] if len(sessions) == 1 else None
    sub = (f"{_e(head['format'])}, {head['size']:,} bytes, {head['requests']:,} requests, {head['tool_calls']:,} tool calls, "
           f"{_dur(head['duration_s'])}" if head else f"{len(sessions)} sessions")
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
            f"<h1>{_e(title)}</h1><p class=sub>{sub}</p>{body}{_advice_section(out)}"
            "<p class=sub>Generated by ctxtool profile --html: charts are inline SVG; the page loads nothing.</p>"
            "</body></html>\n")


def write_report(path: str, out: dict) -> None:
    """Write the page atomically; a new report is readable by others as the umask allows (it is
    meant to be opened in a browser or shared), an existing one keeps its mode."""
    mode = None
    if not os.path.exists(path):
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    atomic_write(path, [render(out).encode("utf-8")], mode=mode)
