"""The context-management skill's actions per pressure level and its warning (seed 004).

After tool-heavy work the skill checks how full the context is and acts:

* below 50%: continue normally;
* 50-70%: spawn sub-agents for the remaining tool-heavy work (more than 3 tool calls);
* 70-85%: spawn sub-agents for any tool work (more than 1 tool call) and warn the user;
* above 85%: write the checkpoint (``ctxtool checkpoint``), suggest ``/compact`` or ``/new``.

Above 65% it warns with its template, ``⚠️ Context: {pct}% ({used}k/{total}k). Estimated
remaining: ~{calls} tool calls. {recommendation}``, the recommendation by level (65%:
spawning, 75%: compact soon and checkpoint, 85%: critical). The remaining tool calls are the
free part of the window over the session's own tokens per tool call (call plus result), or
over the skill's midpoint of 500-5,000 tokens per tool result when the context holds none.
"""

from __future__ import annotations

WARN_FROM = 0.65
DEFAULT_TOKENS_PER_CALL = 2_750  # the skill's "500-5000 tokens" per tool call result, midpoint
ACTIONS = (
    (0.50, "low", "below 50%", "continue normally"),
    (0.70, "medium", "50-70%", "spawn sub-agents for the remaining tool-heavy work (more than 3 tool calls)"),
    (0.85, "high", "70-85%", "spawn sub-agents for any tool work (more than 1 tool call); warn the user"),
    (float("inf"), "critical", "above 85%", "write a checkpoint (ctxtool checkpoint) and compact: suggest /compact or /new"),
)
RECOMMENDATIONS = (
    (0.85, "Context critical. Writing checkpoint now. Suggest /compact or /new."),
    (0.75, "Recommend compacting soon. Writing checkpoint."),
    (WARN_FROM, "Spawning sub-agents for remaining tool-heavy work."),
)


def action(fraction: float) -> dict:
    """The level (as ``estimate.pressure`` names it: 85% exactly is still high) and what the skill does."""
    for upper, level, band, what in ACTIONS:
        if fraction < upper or (level == "high" and fraction == upper):
            return {"level": level, "band": band, "action": what}
    raise AssertionError("unreachable")


def advise(tokens: int, window: int, *, tool_calls: int = 0, tool_tokens: int = 0) -> dict:
    """The skill's action for a context of ``tokens`` in ``window``, and its warning when it gives one."""
    fraction = tokens / window if window else 0.0
    per_call = round(tool_tokens / tool_calls) if tool_calls and tool_tokens else DEFAULT_TOKENS_PER_CALL
    remaining = max(0, window - tokens) // max(1, per_call)
    out = {**action(fraction), "percent": round(fraction * 100, 1), "tokens_per_tool_call": per_call,
           "tokens_per_tool_call_source": "this session" if tool_calls and tool_tokens else "the skill's 500-5,000 midpoint",
           "remaining_tool_calls": remaining, "warning": None}
    rec = next((r for lim, r in RECOMMENDATIONS if fraction > lim), None)
    if rec is not None:
        out["warning"] = (f"⚠️ Context: {fraction * 100:.0f}% ({tokens / 1000:.0f}k/{window / 1000:.0f}k). "
                          f"Estimated remaining: ~{remaining} tool calls. {rec}")
    return out
