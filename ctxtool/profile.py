"""Profile a session: work style, what eats the context, compaction history, timeline.

One streaming pass over the transcript (``transcript.scan(..., keep_index=False)``): every
figure is aggregated in ``on_entry`` from the entry's counts (no blocks are built), nothing
per entry is kept except a small (id, category, chars) record for the entries since
the last compaction (needed to know what a compaction kept) and one int per model
request for the timeline.

Token figures are pi's heuristic (chars/4) unless recorded usage is used; every
estimate carries a range ``low..high`` = chars/4 .. chars/3.5 (chars/4 is known to
under-count code and non-English text).

Classification rules (the constants below; documented in ``ctxtool profile --help``):

1. **bursty**: at least ``BURSTY_MIN_IDLE_GAPS`` idle gaps of >= ``IDLE_GAP_MIN``
   minutes between consecutive messages, idle time >= ``BURSTY_MIN_IDLE_SHARE`` of the
   wall-clock duration, >= ``BURSTY_MIN_BURST_CALL_SHARE`` of the tool calls inside
   bursts (activity periods between idle gaps holding >= ``BURST_MIN_CALLS`` calls)
   and a coefficient of variation of the inter-message gaps >= ``BURSTY_MIN_GAP_CV``.
2. **tool-heavy**: tool results >= ``TOOL_HEAVY_MIN_SHARE`` of the conversation
   tokens (user + assistant + tool results) and >= ``TOOL_HEAVY_MIN_CALLS_PER_TURN``
   tool calls per user turn, or tool results >= ``TOOL_HEAVY_SOLO_SHARE`` alone.
3. **conversational**: tool results < ``CONVERSATIONAL_MAX_SHARE`` and
   < ``CONVERSATIONAL_MAX_CALLS_PER_TURN`` calls per user turn.
4. **mixed**: everything else.
"""

from __future__ import annotations

import math
from array import array

from . import agents, retained, skill
from .formats.common import ignored_notes
from .model import BOUNDARY, COMPACTION, EMPTY, MESSAGE, META, PLAIN, Call, FullEntry, Kinds, Result, Usage
from .scanloop import index_passes, native_made
from .tokens import CHARS_PER_TOKEN
from .transcript import scan
from .view import UNSENT_STOPS, MainThread, merges
from .window import DEFAULT_WINDOW as WINDOW_DEFAULT
from .window import Evidence, configured_window, resolve_window

# ------------------------------------------------------------------ thresholds
IDLE_GAP_MIN = 10.0  # minutes of silence that make an idle gap
BURST_MIN_CALLS = 5  # an activity period with at least this many tool calls is a burst
BURSTY_MIN_IDLE_GAPS = 3
BURSTY_MIN_IDLE_SHARE = 0.60
BURSTY_MIN_BURST_CALL_SHARE = 0.70
BURSTY_MIN_GAP_CV = 2.0
TOOL_HEAVY_MIN_SHARE = 0.60
TOOL_HEAVY_MIN_CALLS_PER_TURN = 3.0
TOOL_HEAVY_SOLO_SHARE = 0.80
CONVERSATIONAL_MAX_SHARE = 0.30
CONVERSATIONAL_MAX_CALLS_PER_TURN = 1.5
BORDERLINE_REL = 0.10  # a figure within 10% of a threshold makes the verdict borderline
LONG_SESSION_HOURS = 2.0
PRESSURE_LEVELS = (0.50, 0.70, 0.85)
DEFAULT_WINDOW = WINDOW_DEFAULT  # 200,000: the one default (ctxtool.window)
HIGH_DIVISOR = 3.5  # upper end of token ranges: chars/3.5
LOW_CONFIDENCE_TURNS = 3
TIMELINE_POINTS = 120  # downsampled series length in the JSON
PATTERNS = ("tool-heavy", "conversational", "mixed", "bursty")

RULES = {
    "bursty": (f">= {BURSTY_MIN_IDLE_GAPS} idle gaps >= {IDLE_GAP_MIN:g} min, idle >= {BURSTY_MIN_IDLE_SHARE:.0%} of wall time, "
               f">= {BURSTY_MIN_BURST_CALL_SHARE:.0%} of tool calls in bursts (>= {BURST_MIN_CALLS} calls between idle gaps), "
               f"gap CV >= {BURSTY_MIN_GAP_CV:g}"),
    "tool-heavy": (f"tool results >= {TOOL_HEAVY_MIN_SHARE:.0%} of conversation tokens and >= {TOOL_HEAVY_MIN_CALLS_PER_TURN:g} "
                   f"tool calls per user turn, or tool results >= {TOOL_HEAVY_SOLO_SHARE:.0%}"),
    "conversational": f"tool results < {CONVERSATIONAL_MAX_SHARE:.0%} and < {CONVERSATIONAL_MAX_CALLS_PER_TURN:g} tool calls per user turn",
    "mixed": "none of the above (roughly even split between tool output and conversation)",
}


def tokens_range(chars: int) -> tuple[int, int, int]:
    """(heuristic, low, high) tokens for ``chars``: pi's chars/4 and the chars/4..chars/3.5 range."""
    if chars <= 0:
        return 0, 0, 0
    return math.ceil(chars / CHARS_PER_TOKEN), math.ceil(chars / CHARS_PER_TOKEN), math.ceil(chars / HIGH_DIVISOR)


def _share(a, b):
    return (a / b) if b else 0.0


# ------------------------------------------------------------------ classification


def classify(fig: dict) -> dict:
    """Verdict from the figures (``tool_share``, ``calls_per_turn``, ``idle_gaps``, ``idle_share``,
    ``burst_call_share``, ``gap_cv``, ``user_turns``, ``timestamps``)."""
    ts = fig.get("timestamps", True)
    share = fig["tool_share"]
    cpt = fig["calls_per_turn"]
    checks = {
        "bursty": ts and fig["idle_gaps"] >= BURSTY_MIN_IDLE_GAPS and fig["idle_share"] >= BURSTY_MIN_IDLE_SHARE
        and fig["burst_call_share"] >= BURSTY_MIN_BURST_CALL_SHARE and fig["gap_cv"] >= BURSTY_MIN_GAP_CV,
        "tool-heavy": (share >= TOOL_HEAVY_MIN_SHARE and cpt >= TOOL_HEAVY_MIN_CALLS_PER_TURN) or share >= TOOL_HEAVY_SOLO_SHARE,
        "conversational": share < CONVERSATIONAL_MAX_SHARE and cpt < CONVERSATIONAL_MAX_CALLS_PER_TURN,
    }
    pattern = next((p for p in ("bursty", "tool-heavy", "conversational") if checks[p]), "mixed")
    near = []

    def close(name, value, threshold):
        if threshold and abs(value - threshold) <= BORDERLINE_REL * threshold:
            near.append(f"{name} {value:.3g} vs {threshold:g}")

    close("tool_share", share, TOOL_HEAVY_MIN_SHARE)
    close("tool_share", share, CONVERSATIONAL_MAX_SHARE)
    close("tool_share", share, TOOL_HEAVY_SOLO_SHARE)
    close("calls_per_turn", cpt, TOOL_HEAVY_MIN_CALLS_PER_TURN)
    close("calls_per_turn", cpt, CONVERSATIONAL_MAX_CALLS_PER_TURN)
    if ts and fig["idle_gaps"] == BURSTY_MIN_IDLE_GAPS - 1 and pattern != "bursty":
        near.append(f"idle_gaps {fig['idle_gaps']} vs {BURSTY_MIN_IDLE_GAPS}")
    if ts and fig["idle_gaps"] >= BURSTY_MIN_IDLE_GAPS - 1:
        close("idle_share", fig["idle_share"], BURSTY_MIN_IDLE_SHARE)
        close("burst_call_share", fig["burst_call_share"], BURSTY_MIN_BURST_CALL_SHARE)
        close("gap_cv", fig["gap_cv"], BURSTY_MIN_GAP_CV)
    confidence = "low" if fig.get("user_turns", 0) < LOW_CONFIDENCE_TURNS or not ts else ("medium" if near else "high")
    return {"pattern": pattern, "rule": RULES[pattern], "borderline": bool(near), "near": near, "confidence": confidence}


# ------------------------------------------------------------------ the streaming profiler


class _Welford:
    __slots__ = ("n", "mean", "m2")

    def __init__(self, n=0, mean=0.0, m2=0.0):
        self.n, self.mean, self.m2 = n, mean, m2

    def add(self, x: float) -> None:
        self.n += 1
        d = x - self.mean
        self.mean += d / self.n
        self.m2 += d * (x - self.mean)

    def merge(self, o: "_Welford") -> None:
        if o.n == 0:
            return
        n = self.n + o.n
        d = o.mean - self.mean
        self.mean += d * o.n / n
        self.m2 += o.m2 + d * d * self.n * o.n / n
        self.n = n

    @property
    def cv(self) -> float:
        if self.n < 2 or self.mean <= 0:
            return 0.0
        return math.sqrt(self.m2 / self.n) / self.mean


class SessionProfiler:
    """Feed it entries in file order (``on_entry``); ``result()`` gives the profile dict."""

    PENDING_CAP = 10_000
    # slots: the C part's Profile reads and writes them (``_native_message``)
    __slots__ = ("fmt", "session", "kinds", "tools", "cur", "records", "pending", "messages", "user_turns",
                 "assistant_turns", "calls", "api_messages", "api_role", "first_ts", "last_ts", "prev_ts", "gaps",
                 "idle_gaps", "idle_time", "period_calls", "burst_calls", "bursts", "periods", "ts_messages", "baseline",
                 "points", "recorded", "last_key", "anchor", "since_chars", "compactions", "await_summary", "last_usage",
                 "main", "response_chars", "prev_role", "chars_after_response")

    def __init__(self, fmt_name: str | None = None):
        self.fmt = fmt_name
        self.session = {}  # whole session chars by category
        self.kinds = {}  # assistant chars by block kind
        self.tools = {}  # name -> [calls, result chars]
        self.cur = {}  # current context chars by category
        self.records: list = []  # (id, index, pairs) since the last compaction
        self.pending: dict = {}  # tool_use id -> name
        self.messages = self.user_turns = self.assistant_turns = self.calls = 0
        self.api_messages = 0  # messages as the Messages API sees them (consecutive same-role turns combined)
        self.api_role = None
        self.first_ts = self.last_ts = None
        self.prev_ts = None
        self.gaps = _Welford()
        self.idle_gaps = 0
        self.idle_time = 0.0
        self.period_calls = 0
        self.burst_calls = 0
        self.bursts = 0
        self.periods = 0
        self.ts_messages = 0
        self.baseline = None  # (tokens, low, high, line)
        self.points = array("l")
        self.recorded = bytearray()
        self.last_key = None
        self.anchor = None  # last recorded context (+ output) tokens
        self.since_chars = 0
        self.compactions: list[dict] = []
        self.await_summary = None  # Claude: the boundary whose summary message follows
        self.last_usage = None
        self.main = MainThread()  # Claude: a subagent's lines in a main file are another conversation
        self.response_chars = 0  # Claude: characters of the current response's lines so far
        self.prev_role = None  # Codex: the items of one response (reasoning, text, calls) follow each other
        self.chars_after_response = 0  # Codex: characters of the items since the last response item

    # -- helpers
    def _add(self, pairs: tuple, e) -> None:
        session, cur = self.session, self.cur
        total = 0
        for cat, n in pairs:
            if n > 0:
                session[cat] = session.get(cat, 0) + n
                cur[cat] = cur.get(cat, 0) + n
                total += n
        self.records.append((e.id, e.index, pairs))
        self.since_chars += total

    def _pairs(self, e) -> tuple:
        """(category, characters) of one message, as a tuple (``records`` keeps it)."""
        role = e.role
        if role == "assistant":
            kinds = self.kinds
            for k, v in (e.kinds or {}).items():
                kinds[k] = kinds.get(k, 0) + v
            return (("assistant", e.chars),)
        if role == "toolResult" and e.tool_chars:
            out = []
            for name, n in e.tool_chars.items():
                self.tools.setdefault(name, [0, 0])[1] += n
                out.append(("tool:" + name, n))
            for r in e.results:
                self.pending.pop(r.id, None)
            return tuple(out)
        if role == "bashExecution":
            self.tools.setdefault("bashExecution", [0, 0])[1] += e.chars
            return (("tool:bashExecution", e.chars),)
        if role in ("compactionSummary", "branchSummary") or e.get("compact_summary"):
            return (("summary", e.chars),)
        if e.results:
            out = []
            used = 0
            for r in e.results:  # each result's own characters, counted while the line was read
                name = self.pending.pop(r.id, None) or r.name or "unknown"
                self.tools.setdefault(name, [0, 0])[1] += r.chars
                out.append(("tool:" + name, r.chars))
                used += r.chars
            rest = e.chars - used
            if rest > 0:
                out.append(("user", rest))
            return tuple(out)
        if role == "user":
            return (("user", e.chars),)
        return (("other", e.chars),)

    def _close_period(self) -> None:
        self.periods += 1
        if self.period_calls >= BURST_MIN_CALLS:
            self.bursts += 1
            self.burst_calls += self.period_calls
        self.period_calls = 0

    def _cur_total(self) -> int:
        return sum(self.cur.values())

    def _compaction(self, e, summary_chars: int | None, tokens_before: int) -> None:
        kept = []
        first = e.get("first_kept")
        first_idx = e.get("first_kept_index")
        if self.fmt == "pi":
            start = None
            for i, (rid, ridx, _pairs) in enumerate(self.records):
                if (first is not None and rid == first) or (first is None and first_idx is not None and ridx in (first_idx, first_idx + 1)):
                    start = i
                    break
            if start is not None:
                kept = self.records[start:]
        self.records = kept
        self.cur = {}
        for _rid, _ridx, pairs in kept:
            for cat, n in pairs:
                self.cur[cat] = self.cur.get(cat, 0) + n
        item = {"n": len(self.compactions) + 1, "line": e.lineno, "ts": e.ts, "tokens_before": tokens_before or None,
                "summary_chars": summary_chars, "point": len(self.points), "kept_chars": self._cur_total()}
        self.compactions.append(item)
        if summary_chars is not None:
            self.session["summary"] = self.session.get("summary", 0) + summary_chars
            self.cur["summary"] = self.cur.get("summary", 0) + summary_chars
        self.anchor = None
        self.since_chars = self._cur_total()

    # -- the callback
    def __call__(self, e) -> None:
        kind = e.kind
        if kind == MESSAGE:
            self._message(e)
            return
        if kind in (COMPACTION, BOUNDARY):
            self.api_role = None  # a new context starts
        if kind == COMPACTION:
            if e.ts is not None:
                self._ts_minmax(e.ts)
            self._compaction(e, e.chars, e.get("tokens_before") or 0)
            if self.fmt == "codex" and e.get("replacement") is not None:
                self._codex_replacement(e)
            return
        if e.kind == BOUNDARY:
            self._compaction(e, None, e.get("tokens_before") or 0)
            self.await_summary = self.compactions[-1]
            return
        if e.usage is not None and self.fmt == "codex" and e.get("event") == "token_count":
            self._codex_usage(e)

    def _message(self, e) -> None:
        x = e.extra or None  # (its flags: ``e.get(key)`` reads them, None when there are none)
        if x is None:
            self.main.seen = True  # (MainThread.keeps of a line with no flags)
        elif not self.main.keeps(e) or x.get("api_error"):
            # a subagent's lines in the main file are another conversation, and Claude Code
            # never sends its own API error messages (the view drops both)
            return
        self.messages += 1
        role = e.role
        if x is None or not x.get("exclude"):  # API messages, as view.message_groups combines them
            if role == "assistant":
                if not (e.empty or e.stop in UNSENT_STOPS) and not (self.api_role == "assistant"
                                                                   and merges(self.fmt or "", "assistant")):
                    self.api_role = "assistant"
                    self.api_messages += 1
            elif self.api_role != "user":
                self.api_role = "user"
                self.api_messages += 1
        ts = e.ts
        if ts is not None:  # the span and the gaps between messages
            self.ts_messages += 1
            if self.first_ts is None or ts < self.first_ts:
                self.first_ts = ts
            if self.last_ts is None or ts > self.last_ts:
                self.last_ts = ts
            prev = self.prev_ts
            if prev is not None:
                gap = ts - prev if ts > prev else 0.0
                self.gaps.add(gap)
                if gap >= IDLE_GAP_MIN * 60:
                    self.idle_gaps += 1
                    self.idle_time += gap
                    self._close_period()
            self.prev_ts = ts
        if x is not None and x.get("compact_summary") and self.await_summary is not None:
            self.await_summary["summary_chars"] = e.chars
            self.await_summary = None
        if role == "assistant":
            self._assistant(e)
            self.prev_role = "assistant"
            self.chars_after_response = 0
            return
        self.prev_role = role
        self.chars_after_response += e.chars
        if role == "user" and not e.results and (x is None or not (x.get("compact_summary") or x.get("is_meta")
                                                                 or x.get("interrupt") or x.get("context"))):
            self.user_turns += 1
        self._add(self._pairs(e), e)

    def _ts_minmax(self, ts):
        if self.first_ts is None or ts < self.first_ts:
            self.first_ts = ts
        if self.last_ts is None or ts > self.last_ts:
            self.last_ts = ts

    def _assistant(self, e) -> None:
        for c in e.calls:
            self.calls += 1
            self.period_calls += 1
            name = c.name or "unknown"
            self.tools.setdefault(name, [0, 0])[0] += 1
            if c.id:
                self.pending[c.id] = name
                if len(self.pending) > self.PENDING_CAP:
                    self.pending.pop(next(iter(self.pending)))
        u = e.usage
        context = 0 if u is None else u.context  # (read once)
        if context <= 0:
            u = None
        same = (self.fmt == "claude" and e.msg_key is not None and e.msg_key == self.last_key and len(self.points)) or \
            (self.fmt == "codex" and self.prev_role == "assistant" and len(self.points))
        if not same:
            self.assistant_turns += 1
            self.response_chars = 0
        self.response_chars += e.chars
        if u is not None:
            if self.baseline is None:
                covered = self._cur_total()
                tok, low, high = tokens_range(covered)
                self.baseline = (max(0, context - tok), max(0, context - high), max(0, context - low), e.lineno, context, covered)
            value, rec = context, 1
            self.last_usage = context
        else:
            value = (self.anchor + math.ceil(self.since_chars / CHARS_PER_TOKEN)) if self.anchor is not None else \
                ((self.baseline[0] if self.baseline else 0) + math.ceil(self._cur_total() / CHARS_PER_TOKEN))
            rec = 0
        if same:
            if rec or not self.recorded[-1]:
                self.points[-1] = value
                self.recorded[-1] = rec
        else:
            self.points.append(value)
            self.recorded.append(rec)
        self.last_key = e.msg_key
        self._add(self._pairs(e), e)
        if u is not None:
            if u.placeholder:  # a streaming record: its output_tokens is no count; chars/4 of the response is
                self.anchor = context
                self.since_chars = self.response_chars
            else:
                self.anchor = context + u.output
                self.since_chars = 0

    def _codex_usage(self, e) -> None:
        """Codex: a ``token_count`` after a response records that request's usage (``last_token_usage``):
        the input, cached included, and the output the history now holds; the items written after the
        response (its tool outputs) are not in it."""
        u = e.usage
        if not self.points or u.context <= 0:
            return
        if self.baseline is None:
            covered = self._cur_total() - self.chars_after_response
            tok, low, high = tokens_range(covered)
            self.baseline = (max(0, u.context - tok), max(0, u.context - high), max(0, u.context - low), e.lineno,
                             u.context, covered)
        self.points[-1] = u.context
        self.recorded[-1] = 1
        self.last_usage = u.context
        self.anchor = u.context + u.output
        self.since_chars = self.chars_after_response

    def _codex_replacement(self, comp) -> None:
        """Codex: after a compaction the context is its replacement history (the summary, counted as
        the compaction's summary, and the items it keeps)."""
        from .codex_rules import expand

        skipped = False
        for sub in expand(comp):
            if not skipped and sub.role == "user" and sub.chars == comp.chars:
                skipped = True  # the summary message: counted from the compacted line's message
                continue
            self._add(self._pairs(sub), sub)
        self.since_chars = self._cur_total()

    # -- the result
    def result(self, *, window: int | None = None, window_source: str | None = None) -> dict:
        if self.prev_ts is not None:
            self._close_period()
        window = window or DEFAULT_WINDOW
        s = self.session
        tool_chars = sum(v for k, v in s.items() if k.startswith("tool:"))
        conv = tool_chars + s.get("user", 0) + s.get("assistant", 0)
        duration = (self.last_ts - self.first_ts) if self.first_ts is not None else None
        fig = {
            "tool_share": round(_share(tool_chars, conv), 4),
            "calls_per_turn": round(self.calls / max(1, self.user_turns), 3),
            "idle_gaps": self.idle_gaps,
            "idle_share": round(_share(self.idle_time, duration or 0), 4),
            "burst_call_share": round(_share(self.burst_calls, self.calls), 4),
            "bursts": self.bursts,
            "gap_cv": round(self.gaps.cv, 3),
            "user_turns": self.user_turns,
            "timestamps": self.ts_messages >= 2,
            "_gaps": [self.gaps.n, self.gaps.mean, self.gaps.m2],
            "_raw": {"tool_chars": tool_chars, "conv_chars": conv, "calls": self.calls, "idle_time": self.idle_time,
                     "burst_calls": self.burst_calls, "duration": duration or 0.0},
        }
        verdict = classify(fig)
        # what is in the context now
        cur_chars = self._cur_total()
        baseline = None
        if self.baseline is not None:
            b = self.baseline
            baseline = {"status": "measured", "tokens": b[0], "low": b[1], "high": b[2], "line": b[3],
                        "first_usage": b[4], "covered_chars": b[5],
                        "method": "first recorded usage minus chars/4..chars/3.5 of the messages it covered"}
        else:
            baseline = {"status": "unknown", "tokens": None, "low": None, "high": None,
                        "method": "no recorded usage in the transcript"}
        if self.last_usage is not None and self.anchor is not None:
            now = self.anchor + math.ceil(self.since_chars / CHARS_PER_TOKEN)
            now_src = "recorded usage of the last request + chars/4 of the messages after it"
        elif self.last_usage is not None and self.points:
            now = (baseline["tokens"] or 0) + math.ceil(cur_chars / CHARS_PER_TOKEN)
            now_src = "baseline + chars/4 since the last compaction"
        else:
            now = math.ceil(cur_chars / CHARS_PER_TOKEN) + (baseline["tokens"] or 0)
            now_src = "chars/4 of the messages in context (baseline unknown)"
        summary_now = tokens_range(self.cur.get("summary", 0))[0]
        comps = []
        for c in self.compactions:
            st = tokens_range(c["summary_chars"])[0] if c["summary_chars"] is not None else None
            comps.append({**c, "summary_tokens": st})
        sizes = [c["summary_tokens"] for c in comps if c["summary_tokens"] is not None]
        stacking = len(sizes) >= 2 and (all(b >= a for a, b in zip(sizes, sizes[1:])) and sizes[-1] > sizes[0]
                                        or sizes[-1] >= 1.5 * sizes[0])
        pts = self.points
        series, rec_series = _downsample(pts, self.recorded, TIMELINE_POINTS)
        peak = max(pts) if len(pts) else 0
        over = {f"{int(p * 100)}": sum(1 for v in pts if v >= p * window) for p in PRESSURE_LEVELS}
        tools = []
        for name, (calls, chars) in sorted(self.tools.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0])):
            t, lo, hi = tokens_range(chars)
            tools.append({"name": name, "calls": calls, "result_chars": chars, "tokens": t, "low": lo, "high": hi,
                          "share_of_tool_results": round(_share(chars, tool_chars), 4),
                          "now_chars": self.cur.get("tool:" + name, 0)})
        return {
            "format": self.fmt,
            "messages": self.messages,  # transcript message entries (pi agent messages, Claude Code lines)
            "transcript_messages": self.messages,
            "api_messages": self.api_messages,
            "user_turns": self.user_turns,
            "requests": self.assistant_turns,
            "tool_calls": self.calls,
            "started": self.first_ts,
            "ended": self.last_ts,
            "duration_s": round(duration, 1) if duration is not None else None,
            "long_session": bool(duration is not None and duration > LONG_SESSION_HOURS * 3600),
            "window": window,
            "window_source": window_source or "default",
            "figures": fig,
            "classification": verdict,
            "tokens": {
                "method": "heuristic chars/4 (pi estimateTokens), range chars/4..chars/3.5",
                "baseline": baseline,
                "context_now": now,
                "context_now_source": now_src,
                "context_now_share": round(now / window, 4) if window else None,
                "now": _categories(self.cur, now, baseline),
                "session": _categories(s, None, None),
                "assistant_kinds": dict(self.kinds),
            },
            "tools": tools,
            "skill": skill.advise(now, window, tool_calls=sum(x["calls"] for x in tools),
                                  tool_tokens=sum(x["tokens"] for x in tools)) if window else None,
            "compactions": {
                "count": len(comps),
                "items": comps,
                "stacking": stacking,
                "summary_tokens_now": summary_now,
                "summary_share_now": round(_share(summary_now, now), 4),
            },
            "timeline": {
                "points": len(pts),
                "recorded_points": int(sum(self.recorded)),
                "peak": peak,
                "peak_share": round(peak / window, 4) if window else None,
                "thresholds": {f"{int(p * 100)}": int(p * window) for p in PRESSURE_LEVELS},
                "points_over": over,
                "series": series,
                "series_recorded": rec_series,
                "bucket": max(1, math.ceil(len(pts) / TIMELINE_POINTS)) if len(pts) else 1,
                "compaction_points": [c["point"] for c in comps],
            },
        }


def _categories(chars: dict, total_now: int | None, baseline: dict | None) -> list[dict]:
    rows = []
    groups = [("user", "user messages"), ("assistant", "assistant replies"), ("tools", "tool results"),
              ("summary", "compaction summaries"), ("other", "other (custom messages)")]
    tool_total = sum(v for k, v in chars.items() if k.startswith("tool:"))
    values = {"user": chars.get("user", 0), "assistant": chars.get("assistant", 0), "tools": tool_total,
              "summary": chars.get("summary", 0), "other": chars.get("other", 0)}
    denom_chars = sum(values.values())
    if baseline is not None:
        rows.append({"category": "baseline", "label": "fixed baseline (system prompt + tools)", "chars": None,
                     "tokens": baseline["tokens"], "low": baseline["low"], "high": baseline["high"],
                     "share": round(baseline["tokens"] / total_now, 4) if baseline["tokens"] is not None and total_now else None})
    for key, label in groups:
        n = values[key]
        if not n and key == "other":
            continue
        t, lo, hi = tokens_range(n)
        share = (t / total_now) if total_now else _share(n, denom_chars)
        rows.append({"category": key, "label": label, "chars": n, "tokens": t, "low": lo, "high": hi, "share": round(share, 4)})
        if key == "tools":
            for name, v in sorted(((k[5:], v) for k, v in chars.items() if k.startswith("tool:")), key=lambda kv: -kv[1]):
                t2, lo2, hi2 = tokens_range(v)
                rows.append({"category": "tool:" + name, "label": "  " + name, "chars": v, "tokens": t2, "low": lo2, "high": hi2,
                             "share": round((t2 / total_now) if total_now else _share(v, denom_chars), 4)})
    return rows


def _downsample(points, recorded, n: int) -> tuple[list[int], list[int]]:
    if len(points) <= n:
        return list(points), list(recorded)
    step = math.ceil(len(points) / n)
    out, rec = [], []
    for i in range(0, len(points), step):
        out.append(max(points[i:i + step]))
        rec.append(1 if any(recorded[i:i + step]) else 0)
    return out, rec


# ------------------------------------------------------------------ entry points


def profile_session(path: str, fmt: str | None = None, *, window: int | None = None, cfg: dict | None = None) -> dict:
    """Profile one session file in a single streaming pass.

    The window follows the rule every command shares (``ctxtool.window``): ``window``
    (--window), the OpenClaw config ``cfg``, a contextWindow the file records, the model
    plus recorded usage (1M only when usage above 200K proves it), else 200,000."""
    prof = SessionProfiler()
    feed = Feed(prof, _native_message())
    t = _scan(path, fmt, feed.on_entry, prof)
    models, ev, flagged = feed.models, feed.ev, feed.flagged
    model = max(models, key=models.get) if models else None
    win = resolve_window(ev, override=window, configured=configured_window(cfg, ev.model))
    out = prof.result(window=win.tokens, window_source=win.source)
    out["window_basis"] = win.basis
    out = {"path": path, "size": t.size, "lines": t.lines, "bad_lines": len(t.bad), "model": model, **out}
    out["format"] = t.format_name
    out["notes"] = ignored_notes(flagged)
    name, basis = agents.detect(t.format_name, path, feed.openclaw_marks)
    out["agent"] = {"name": name, "label": agents.AGENTS[name].label, "basis": basis}
    retained.keep(prof)  # (a run over one file leaves the profiler's records for the process's end to drop)
    return out


class Feed:
    """``profile_session``'s callback (``on_entry``): each entry of the scan, in file order, to the profiler, and
    what else the session says: the models its messages name (``models``), the window's evidence (``ev``), the
    entries with absurd numbers read as missing (``flagged``) and OpenClaw's marks. ``fast``: the C part's
    ``Profile.message`` (``_native_message``), which takes most pi and Claude Code lines, or None."""

    __slots__ = ("prof", "models", "ev", "flagged", "openclaw_marks", "on_entry")

    def __init__(self, prof: SessionProfiler, fast=None):
        self.prof = prof
        self.models: dict = {}
        self.ev = Evidence()
        self.flagged: list = []
        self.openclaw_marks = 0
        models, ev, flagged, ev_main = self.models, self.ev, self.flagged, self.ev.main
        message = prof._message  # (what ``prof(e)`` does with a message)

        def on_entry(e):  # (a closure: its names are read as fast as locals)
            kind = e.kind
            if kind == META and e._m is PLAIN:  # (obj is None there: it lives in PLAIN too)
                return  # a metadata line with nothing set (most lines of a Claude Code file): nothing below reads it
            if fast is not None and fast(prof, e, models, ev, ev_main):
                return  # a message without flags, or a line that says a model: all that follows, done in C
            m = e.model
            if m:
                models[m] = models.get(m, 0) + 1
            x = e.extra
            if x is not None:
                if "ignored" in x:
                    flagged.append(e)
                ct = x.get("custom_type")
                if isinstance(ct, str) and ct.startswith("openclaw."):
                    self.openclaw_marks += 1
            elif kind == MESSAGE and e.role != "assistant":
                ev_main.seen = True  # all ev.add(e) does with it (MainThread.keeps of a line with no flags)
                message(e)
                return
            ev.add(e)
            if kind == MESSAGE:
                message(e)
            else:
                prof(e)

        self.on_entry = on_entry


def _native_message():
    """The C part's ``Profile.message(prof, e, models, ev, ev_main) -> bool``: what ``Feed``'s ``on_entry`` does with
    a pi or Claude Code message line without flags or with only an attachment's (the model's count, ``Evidence.add``,
    ``SessionProfiler._message``) and with a metadata line that says a model or a window (the count and
    ``Evidence.add``), True when it did it; False, with nothing changed, for any other entry (``_scan_profile.c``).
    None where the part is not built."""
    rows = index_passes()
    made = None if rows is None else native_made("profile", lambda c: c.Profile(
        SessionProfiler, _Welford, MainThread, FullEntry, Kinds, Call, Result, Usage, rows, EMPTY, UNSENT_STOPS,
        SessionProfiler.PENDING_CAP))
    return None if made is None else made.message


def profile_file(path: str, fmt: str | None, window: int | None, cfg: dict | None) -> dict:
    """``profile_session`` with its options in order: what a folder's workers run (``pool.each``)."""
    return profile_session(path, fmt, window=window, cfg=cfg)


def _scan(path, fmt, on_entry, prof):
    def on_format(module) -> None:  # the profiler needs the format from the first entry on
        prof.fmt = module.NAME

    # lazy: the profiler reads entries, never their parsed objects (so only the fields normalize reads are decoded);
    # plain=False: nor a metadata entry with nothing set (``Feed``'s first test)
    return scan(path, fmt, on_entry=on_entry, keep_index=False, blocks=False, on_format=on_format, lazy=True,
                plain=False)


FOLDER_RULE = ("each session is classified on its own; the folder's style is the one whose sessions carry the most "
               "conversation tokens (user + assistant + tool results, chars/4), ties broken by the number of sessions")


def distribution(profiles: list[dict]) -> dict:
    """Per style: the sessions classified so and the conversation tokens they carry."""
    out = {p: {"sessions": 0, "tokens": 0, "token_share": 0.0, "session_share": 0.0} for p in PATTERNS}
    for p in profiles:
        d = out[p["classification"]["pattern"]]
        d["sessions"] += 1
        d["tokens"] += math.ceil(p["figures"]["_raw"]["conv_chars"] / CHARS_PER_TOKEN)
    total = sum(d["tokens"] for d in out.values())
    for d in out.values():
        d["token_share"] = round(_share(d["tokens"], total), 4)
        d["session_share"] = round(_share(d["sessions"], len(profiles)), 4)
    return out


def folder_verdict(dist: dict, pooled: dict) -> dict:
    """The folder's style from its sessions' verdicts (``FOLDER_RULE``), not from pooled wall-time
    figures, which one long idle session can dominate."""
    order = {p: i for i, p in enumerate(PATTERNS)}
    ranked = sorted((p for p in PATTERNS if dist[p]["sessions"]),
                    key=lambda p: (-dist[p]["tokens"], -dist[p]["sessions"], order[p]))
    if not ranked:
        return {**pooled, "basis": "pooled figures (no session could be classified)"}
    win = ranked[0]
    most_sessions = max(dist[p]["sessions"] for p in PATTERNS)
    near = []
    if len(ranked) > 1:
        second = ranked[1]
        if dist[second]["tokens"] >= (1 - BORDERLINE_REL) * dist[win]["tokens"]:
            near.append(f"{second} carries {dist[second]['token_share']:.0%} of the tokens vs {dist[win]['token_share']:.0%}")
    if dist[win]["sessions"] < most_sessions:
        near.append(f"{win} has the most tokens but not the most sessions")
    confidence = ("high" if not near and dist[win]["token_share"] >= 0.5 and dist[win]["sessions"] == most_sessions
                  else "medium" if not near or dist[win]["token_share"] >= 0.5 else "low")
    return {"pattern": win, "rule": FOLDER_RULE, "session_rule": RULES[win], "borderline": bool(near), "near": near,
            "confidence": confidence, "basis": "sessions' verdicts weighted by conversation tokens"}


def aggregate(profiles: list[dict]) -> dict:
    """Several sessions: pooled figures (token-weighted, for reference), the verdict counts and
    token distribution, and the folder's verdict (``FOLDER_RULE``: the style carrying the most
    conversation tokens across its sessions)."""
    raw = {"tool_chars": 0, "conv_chars": 0, "calls": 0, "idle_time": 0.0, "burst_calls": 0, "duration": 0.0}
    gaps = _Welford()
    turns = idle_gaps = bursts = 0
    ts = False
    counts = {p: 0 for p in PATTERNS}
    long_n = 0
    for p in profiles:
        f = p["figures"]
        for k in raw:
            raw[k] += f["_raw"][k]
        gaps.merge(_Welford(*f["_gaps"]))
        turns += f["user_turns"]
        idle_gaps += f["idle_gaps"]
        bursts += f["bursts"]
        ts = ts or f["timestamps"]
        counts[p["classification"]["pattern"]] += 1
        long_n += 1 if p["long_session"] else 0
    fig = {
        "tool_share": round(_share(raw["tool_chars"], raw["conv_chars"]), 4),
        "calls_per_turn": round(raw["calls"] / max(1, turns), 3),
        "idle_gaps": idle_gaps,
        "idle_share": round(_share(raw["idle_time"], raw["duration"]), 4),
        "burst_call_share": round(_share(raw["burst_calls"], raw["calls"]), 4),
        "bursts": bursts,
        "gap_cv": round(gaps.cv, 3),
        "user_turns": turns,
        "timestamps": ts,
    }
    pooled = classify(fig)
    dist = distribution(profiles)
    verdict = folder_verdict(dist, pooled)
    return {
        "sessions": len(profiles),
        "figures": fig,
        "classification": verdict,
        "pooled_classification": pooled,
        "distribution": dist,
        "patterns": counts,
        "long_sessions": long_n,
        "long_session": bool(profiles) and long_n * 2 >= len(profiles),
        "long_rule": f"at least half of the sessions ran longer than {LONG_SESSION_HOURS:g} h",
        "duration_s": round(raw["duration"], 1),
    }

