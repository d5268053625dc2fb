"""Summarizers and the staged summarization around them.

Three summarizers:

* ``extractive`` (default): offline and deterministic. A structured summary under pi's
  headings built from the Phase 0 extraction (requests, files, commands, errors,
  identifiers); stacks onto a previous summary section by section (Spacebot-style).
* ``anthropic``: the real ``anthropic`` SDK (``max_retries=0``; the retry policy is
  ours: 3 attempts, 500 ms to 5 s exponential backoff with jitter on 429/5xx/529,
  connection errors, timeouts and malformed bodies; never on other 4xx), per-call and
  overall timeouts, ``ANTHROPIC_BASE_URL`` for compatible servers. The key is never
  put in a message.
* ``command``: any command; the prompt on stdin, the summary on stdout.

LLM summarizers go through OpenClaw's ``summarizeInStages`` (split by token share,
summarize each part, merge under the MERGE instructions) and ``summarizeWithFallback``
(everything; then without oversized messages plus a note for each; then the fixed
fallback text, to which ctxtool adds the extractive summary so nothing useful is lost).
"""

from __future__ import annotations

import math
import os
import signal
import random
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field

from .compact import (
    DEFAULT_PARTS,
    DEFAULT_RESERVE_TOKENS,
    DEFAULT_WINDOW,
    MIN_MESSAGES_FOR_SPLIT,
    NO_HISTORY,
    Extraction,
    Plan,
    Unit,
    chunk_by_max_tokens,
    extract,
    finalize_summary,
    is_oversized,
    max_chunk_tokens,
    serialize,
    split_by_token_share,
    strip_summary_suffix,
    units_tokens,
)
from .errors import SummarizerError

DEFAULT_MODEL = "claude-haiku-4-5"
DEFAULT_CALL_TIMEOUT = 120.0
DEFAULT_OVERALL_TIMEOUT = 600.0
ATTEMPTS = 3
MIN_DELAY = 0.5
MAX_DELAY = 5.0
JITTER = 0.2
RETRY_STATUS = {429, 500, 502, 503, 504, 529}

# ---------------------------------------------------------------- prompts

SYSTEM_PROMPT = (
    "You are a context summarization assistant. You read a conversation between a user and an AI "
    "coding assistant and write a structured summary in exactly the format you are given.\n\n"
    "Do NOT continue the conversation. Do NOT answer questions asked in it. Output ONLY the structured summary."
)

FORMAT = """## Goal
[What the user is trying to accomplish; several items if the session covers several tasks.]

## Constraints & Preferences
- [Constraints, preferences and requirements the user stated, or "(none)"]

## Progress
### Done
- [x] [Completed tasks and changes]

### In Progress
- [ ] [Current work]

### Blocked
- [What prevents progress, if anything]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [What should happen next, in order]

## Critical Context
- [Data, examples and references needed to continue, or "(none)"]"""

IDENTIFIERS_RULE = ("Preserve all opaque identifiers exactly as written (no shortening or reconstruction): UUIDs, "
                    "hashes, IDs, hostnames, IPs, ports, URLs, file paths and file names, function names and error messages.")

INITIAL_PROMPT = (
    "The messages above are a conversation to summarize. Write a structured context checkpoint summary "
    "that another LLM will use to continue the work.\n\nUse this EXACT format:\n\n" + FORMAT
    + "\n\nKeep each section concise. " + IDENTIFIERS_RULE
)

UPDATE_PROMPT = (
    "The messages above are NEW conversation messages to fold into the existing summary given in "
    "<previous-summary> tags. Update that structured summary with the new information.\n\n"
    "RULES:\n"
    "- PRESERVE all information from the previous summary\n"
    "- ADD new progress, decisions and context from the new messages\n"
    "- UPDATE Progress: move items from \"In Progress\" to \"Done\" when they were completed\n"
    "- UPDATE \"Next Steps\" according to what was accomplished\n"
    "- PRESERVE exact file paths, function names and error messages\n"
    "- You may remove what is clearly no longer relevant\n\n"
    "Use this EXACT format:\n\n" + FORMAT + "\n\nKeep each section concise. " + IDENTIFIERS_RULE
)

TURN_PREFIX_PROMPT = (
    "This is the PREFIX of a turn that was too large to keep. The SUFFIX (the recent work) is kept verbatim.\n\n"
    "Summarize the prefix so the kept suffix makes sense:\n\n"
    "## Original Request\n[What the user asked for in this turn]\n\n"
    "## Early Progress\n- [Decisions and work done in the prefix]\n\n"
    "## Context for Suffix\n- [What is needed to understand the kept suffix]\n\n"
    "Be concise. " + IDENTIFIERS_RULE
)

MERGE_INSTRUCTIONS = (
    "Merge these partial summaries into a single cohesive summary.\n\n"
    "MUST PRESERVE:\n"
    "- Active tasks and their current status (in progress, blocked, pending)\n"
    "- Batch operation progress (e.g. \"5/17 items completed\")\n"
    "- The last thing the user requested and what was being done about it\n"
    "- Decisions made and their rationale\n"
    "- TODOs, open questions and constraints\n"
    "- Any commitments or follow-ups promised\n\n"
    "PRIORITIZE recent context over older history: the agent needs to know what it was doing, not just what was discussed."
)

SPLIT_TURN_JOIN = "\n\n---\n\n**Turn Context (split turn):**\n\n"


def build_prompt(conversation: str, *, previous: str | None = None, kind: str = "chunk",
                 focus: str | None = None) -> str:
    """The user message sent to an LLM summarizer (pi's generateSummary layout)."""
    text = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if previous:
        text += f"<previous-summary>\n{previous}\n</previous-summary>\n\n"
    if kind == "prefix":
        text += TURN_PREFIX_PROMPT
    else:
        text += UPDATE_PROMPT if previous else INITIAL_PROMPT
    if focus:
        text += f"\n\nAdditional focus:\n{focus}"
    return text


# ---------------------------------------------------------------- settings / results


@dataclass
class Settings:
    window: int = DEFAULT_WINDOW
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    parts: int = DEFAULT_PARTS
    min_messages: int = MIN_MESSAGES_FOR_SPLIT
    overall_timeout: float = DEFAULT_OVERALL_TIMEOUT

    @property
    def max_tokens(self) -> int:
        return max(256, math.floor(0.8 * self.reserve_tokens))

    @property
    def prefix_max_tokens(self) -> int:
        return max(256, math.floor(0.5 * self.reserve_tokens))


@dataclass
class SummaryResult:
    text: str
    calls: int = 0
    fallback: str = "none"  # none | partial | text
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class OverallTimeout(SummarizerError):
    """The per-file overall time limit ran out; no further calls are made."""


class Stopped(OverallTimeout):
    """The run was stopped (Ctrl-C or SIGTERM in a batch): no further calls are made, as after a timeout."""


class _Run:
    """Per-file state: deadline, call count, errors seen."""

    def __init__(self, summarizer, settings: Settings, stop=None):
        self.s = summarizer
        self.settings = settings
        self.stop = stop
        self.deadline = time.monotonic() + settings.overall_timeout
        self.calls = 0
        self.errors: list[str] = []

    def call(self, prompt: str, max_tokens: int) -> str:
        if self.stop is not None and self.stop.is_set():
            raise Stopped("the run was stopped")
        if time.monotonic() >= self.deadline:
            raise OverallTimeout(f"overall timeout of {self.settings.overall_timeout:g}s exceeded")
        self.calls += 1
        return self.s.call(SYSTEM_PROMPT, prompt, max_tokens=max_tokens, deadline=self.deadline)


# ---------------------------------------------------------------- staged summarization (OpenClaw)


def _chunks(run: _Run, units: list[Unit], previous: str | None) -> str:
    """summarizeChunks: chunks in order, each summary the previous summary of the next."""
    summary = previous
    for chunk in chunk_by_max_tokens(units, max_chunk_tokens(units, run.settings.window)):
        summary = run.call(build_prompt(serialize(chunk), previous=summary), run.settings.max_tokens)
    return summary or NO_HISTORY


def _with_fallback(run: _Run, units: list[Unit], previous: str | None) -> tuple[str, str]:
    """summarizeWithFallback -> (summary, fallback level)."""
    if not units:
        return previous or NO_HISTORY, "none"
    try:
        return _chunks(run, units, previous), "none"
    except OverallTimeout:
        raise
    except SummarizerError as e:
        run.errors.append(str(e))
    window = run.settings.window
    small = [u for u in units if not is_oversized(u, window)]
    notes = [f"[Large {u.role} (~{round(u.tokens / 1000)}K tokens) omitted from summary]" for u in units if is_oversized(u, window)]
    if notes and small:
        try:
            return _chunks(run, small, previous) + "\n\n" + "\n".join(notes), "partial"
        except OverallTimeout:
            raise
        except SummarizerError as e:
            run.errors.append(str(e))
    return (f"Context contained {len(units)} messages ({len(notes)} oversized). "
            "Summary unavailable due to size limits."), "text"


def _in_stages(run: _Run, units: list[Unit], previous: str | None) -> tuple[str, str]:
    """summarizeInStages: split by token share, summarize parts, merge them."""
    st = run.settings
    if not units:
        return previous or NO_HISTORY, "none"
    max_chunk = max_chunk_tokens(units, st.window)
    if st.parts <= 1 or len(units) < max(2, st.min_messages) or units_tokens(units) <= max_chunk:
        return _with_fallback(run, units, previous)
    parts = split_by_token_share(units, st.parts)
    if len(parts) <= 1:
        return _with_fallback(run, units, previous)
    partials = [_with_fallback(run, p, None) for p in parts]
    good = [(s, lvl) for s, lvl in partials if lvl != "text"]
    if not good:
        return partials[0][0].replace(f"{len(parts[0])} messages", f"{len(units)} messages"), "text"
    level = "partial" if len(good) < len(partials) or any(lvl == "partial" for _, lvl in partials) else "none"
    conversation = "\n\n".join(f"[Partial summary {i + 1} of {len(partials)}]:\n{s}" for i, (s, _) in enumerate(partials))
    try:
        merged = run.call(build_prompt(conversation, previous=previous, focus=MERGE_INSTRUCTIONS), st.max_tokens)
        return merged, level
    except OverallTimeout:
        raise
    except SummarizerError as e:
        run.errors.append(f"merge: {e}")
        return "\n\n---\n\n".join(s for s, _ in good), "partial"


def summarize_plan(plan: Plan, summarizer, settings: Settings | None = None, stop=None) -> SummaryResult:
    """The finished summary text for ``plan`` (file lists appended, capped at 16,000 chars). ``stop`` (a
    ``threading.Event``): once set, no further call is made (as after the overall timeout)."""
    settings = settings or Settings()
    ex = plan.extraction
    previous = strip_summary_suffix(plan.previous_summary) if plan.previous_summary else None
    if getattr(summarizer, "offline", False):
        body = extractive_body(plan, previous)
        return SummaryResult(finalize_summary(body, read=ex.read_files, modified=ex.modified_files))
    run = _Run(summarizer, settings, stop)
    level = "none"
    try:
        history, level = _in_stages(run, plan.to_summarize, previous)
        if plan.turn_prefix:
            try:
                prefix = run.call(build_prompt(serialize(plan.turn_prefix), kind="prefix"), settings.prefix_max_tokens)
            except OverallTimeout:
                raise
            except SummarizerError as e:
                run.errors.append(f"turn prefix: {e}")
                prefix = _extractive_prefix(extract(plan.turn_prefix))
                level = "partial" if level == "none" else level
            history = history + SPLIT_TURN_JOIN + prefix
    except OverallTimeout as e:
        run.errors.append(str(e))
        level = "text"
        history = (f"Context contained {plan.messages_to_summarize} messages (0 oversized). "
                   "Summary unavailable due to size limits.")
    if level == "text":
        # OpenClaw's fixed text, plus the offline summary so the compaction still carries the essentials.
        history = history + "\n\n" + extractive_body(plan, previous)
    text = finalize_summary(history, read=ex.read_files, modified=ex.modified_files, errors=ex.errors)
    return SummaryResult(text, run.calls, level, run.errors)


# ---------------------------------------------------------------- extractive


_CONSTRAINT_RE = re.compile(r"\b(don'?t|do not|never|always|must|make sure|prefer|instead|without|avoid|keep|"
                            r"only|should ?n[o']?t|no need|use the|wait)\b", re.I)
_DECISION_RE = re.compile(r"\b(I'll|I will|I'm going to|decided|instead of|switch(?:ed)? to|we should|rather than|"
                          r"the fix is|root cause|because|the problem is|the issue is)\b", re.I)
_SENT_RE = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _sentences(texts, pattern, limit: int, cap: int) -> list[str]:
    out: list[str] = []
    for t in texts:
        for s in _SENT_RE.split(t):
            s = s.strip(" -*#>\t")
            if 12 <= len(s) and pattern.search(s):
                c = _clip(s, limit)
                if c not in out:
                    out.append(c)
    return out[-cap:]


def _md_code(s: str) -> str:
    s = _clip(s, 160)
    return f"`{s}`" if "`" not in s else s


def _sections(summary: str) -> dict[str, list[str]]:
    """Parse a summary in pi's format into {heading: [lines]} (### under Progress included)."""
    out: dict[str, list[str]] = {}
    cur = None
    for line in summary.splitlines():
        m = re.match(r"^(#{2,3})\s+(.*\S)\s*$", line)
        if m:
            cur = m.group(2)
            out.setdefault(cur, [])
            continue
        if cur is not None and line.strip() and line.strip() not in ("(none)", "- (none)"):
            out[cur].append(line.rstrip())
    return out


HEADINGS = ("Goal", "Constraints & Preferences", "Progress", "Done", "In Progress", "Blocked",
            "Key Decisions", "Next Steps", "Critical Context")


def _merge(prev: list[str], new: list[str], cap: int, keep: str = "newest") -> list[str]:
    out: list[str] = []
    for x in prev + new:
        if x not in out:
            out.append(x)
    if len(out) > cap:
        out = out[-cap:] if keep == "newest" else out[:cap]
    return out


def _extractive_prefix(ex: Extraction) -> str:
    req = ex.user_requests[-1] if ex.user_requests else "(not recorded)"
    early = [f"- Modified {_md_code(p)}" for p in ex.modified_counts] + [f"- Ran {_md_code(c)}" for c in ex.commands[-5:]]
    early += [f"- {e.name} failed: {_clip(e.text, 200)}" for e in ex.errors[-3:]]
    ctx = [f"- {_clip(t, 300)}" for t in ex.assistant_texts[-2:]]
    return ("## Original Request\n" + _clip(req, 600) + "\n\n## Early Progress\n" + ("\n".join(early) or "- (none)")
            + "\n\n## Context for Suffix\n" + ("\n".join(ctx) or "- (none)"))


def extractive_body(plan: Plan, previous: str | None) -> str:
    """The offline summary: pi's headings filled from the extraction, stacked on ``previous``."""
    ex = extract(plan.to_summarize, previous_read=plan.context.previous_read,
                 previous_modified=plan.context.previous_modified)
    prev = _sections(previous) if previous else {}
    foreign = bool(previous) and not any(h in prev for h in ("Goal", "Progress", "Next Steps"))
    reqs = ex.user_requests
    goal: list[str] = []
    if reqs:
        goal.append(f"- {_clip(reqs[0], 400)}")
        if len(reqs) > 1:
            goal.append(f"- Latest request: {_clip(reqs[-1], 400)}")
    goal = _merge([x for x in prev.get("Goal", []) if not x.startswith("- Latest request:")], goal, 8, "oldest")
    if reqs and len(reqs) == 1 and prev.get("Goal"):
        goal = [x for x in goal if x != f"- {_clip(reqs[0], 400)}"] + [f"- Latest request: {_clip(reqs[0], 400)}"]
    constraints = _merge(prev.get("Constraints & Preferences", []),
                         [f"- {s}" for s in _sentences(reqs, _CONSTRAINT_RE, 220, 8)], 10)
    done = [f"- [x] Modified {_md_code(p)}" + (f" ({n} edits)" if n > 1 else "") for p, n in ex.modified_counts.items()]
    done += [f"- [x] Ran {_md_code(c)}" for c in ex.commands[-10:]]
    new_reads = [p for p in ex.read_files if p not in plan.context.previous_read]
    if new_reads:
        shown = ", ".join(_md_code(p) for p in new_reads[:8]) + (f" and {len(new_reads) - 8} more" if len(new_reads) > 8 else "")
        done.append(f"- [x] Read {len(new_reads)} file(s): {shown}")
    done = _merge(prev.get("Done", []), done, 30)
    in_progress = [f"- [ ] {_clip(reqs[-1], 300)}"] if reqs else []
    in_progress = _merge(prev.get("In Progress", [])[-2:], in_progress, 3)
    blocked = [f"- {e.name}: {_clip(e.text, 240)}" for e in ex.errors[-5:]]
    blocked = _merge(prev.get("Blocked", []), blocked, 8)
    decisions = _merge(prev.get("Key Decisions", []),
                       [f"- {s}" for s in _sentences(ex.assistant_texts, _DECISION_RE, 220, 6)], 12)
    steps = []
    if reqs:
        steps.append(f"Continue with the latest request: {_clip(reqs[-1], 300)}")
    if ex.errors:
        steps.append(f"Check the last tool failure ({ex.errors[-1].name}): {_clip(ex.errors[-1].text, 160)}")
    if ex.modified_counts:
        steps.append("Verify the modified files: " + ", ".join(_md_code(p) for p in list(ex.modified_counts)[-5:]))
    if not steps:
        steps = [re.sub(r"^\d+\.\s*", "", x) for x in prev.get("Next Steps", [])]
    critical = [f"- Summarized {plan.messages_to_summarize} messages ({ex.tool_calls} tool calls, "
                f"{len(ex.errors)} tool errors, ~{plan.tokens_to_summarize:,} tokens)."]
    files = set(ex.read_files) | set(ex.modified_files)
    idents = [i for i in ex.identifiers if i not in files]
    if idents:
        critical.append("- Identifiers: " + ", ".join(_md_code(i) for i in idents[:30]))
    if ex.assistant_texts:
        critical.append(f"- Last assistant message: {_clip(ex.assistant_texts[-1], 400)}")
    critical = _merge([x for x in prev.get("Critical Context", []) if not x.startswith("- Summarized ")], critical, 24)
    if len(prev.get("Critical Context", [])) and any(x.startswith("- Summarized ") for x in prev.get("Critical Context", [])):
        critical.insert(0, next(x for x in prev["Critical Context"] if x.startswith("- Summarized ")).replace("- Summarized", "- Earlier: summarized", 1))

    def block(lines):
        return "\n".join(lines) if lines else "- (none)"

    body = (
        "## Goal\n" + block(goal)
        + "\n\n## Constraints & Preferences\n" + block(constraints)
        + "\n\n## Progress\n### Done\n" + block(done)
        + "\n\n### In Progress\n" + block(in_progress)
        + "\n\n### Blocked\n" + block(blocked)
        + "\n\n## Key Decisions\n" + block(decisions)
        + "\n\n## Next Steps\n" + ("\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps)) or "1. (none)")
        + "\n\n## Critical Context\n" + block(critical)
    )
    if foreign:
        body += "\n\n### Earlier summary\n" + _clip_block(previous, 6000)
    if plan.turn_prefix:
        body += SPLIT_TURN_JOIN + _extractive_prefix(extract(plan.turn_prefix))
    return body


def _clip_block(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class ExtractiveSummarizer:
    name = "extractive"
    offline = True

    def close(self) -> None:
        pass


class PlanOnly:
    """Stands in for an LLM summarizer in a dry run: the writer plans its calls, none is made
    (no client, so no key is needed)."""

    name = "plan-only"
    offline = False

    def close(self) -> None:
        pass


# ---------------------------------------------------------------- anthropic



class AnthropicSummarizer:
    """Messages API summarizer with its own retry policy (the SDK's retries are off)."""

    name = "anthropic"
    offline = False

    def __init__(self, model: str = DEFAULT_MODEL, *, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = DEFAULT_CALL_TIMEOUT, attempts: int = ATTEMPTS, min_delay: float = MIN_DELAY,
                 max_delay: float = MAX_DELAY, jitter: float = JITTER, seed: int | None = None):
        try:
            import anthropic
        except ImportError as e:  # pragma: no cover
            raise SummarizerError(f"the anthropic package is not installed ({e}); pip install anthropic") from None
        self._anthropic = anthropic
        self.model = model
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        token = None if key else os.environ.get("ANTHROPIC_AUTH_TOKEN")
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        if not key and not token:
            raise SummarizerError("no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) for --summarizer anthropic")
        self._secrets = [s for s in (key, token) if s]
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self.min_delay = min_delay
        self.max_delay = max_delay
        self.jitter = jitter
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        kw = {"api_key": key} if key else {"auth_token": token}
        try:
            self.client = anthropic.Anthropic(base_url=self.base_url, max_retries=0, timeout=timeout, **kw)
        except Exception as e:  # never echo constructor args (the key)
            raise SummarizerError(self._clean(f"cannot create the Anthropic client: {type(e).__name__}: {e}")) from None

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:
            pass

    def _clean(self, msg: str) -> str:
        for s in self._secrets:
            if s and s in msg:
                msg = msg.replace(s, "***")
        return msg

    def backoff(self, attempt: int, retry_after: float | None = None) -> float:
        """Delay before attempt ``attempt + 1``: 0.5 s x 2^(n-1), +-20 % jitter, within 0.5-5 s."""
        base = min(self.max_delay, self.min_delay * (2 ** (attempt - 1)))
        with self._rng_lock:
            j = 1 + self._rng.uniform(-self.jitter, self.jitter)
        delay = min(self.max_delay, max(self.min_delay, base * j))
        if retry_after is not None and retry_after > delay:
            delay = min(self.max_delay, retry_after)
        return delay

    def _classify(self, e: BaseException) -> tuple[bool, str, float | None]:
        """(retryable, message, retry-after seconds)."""
        a = self._anthropic
        if isinstance(e, a.APITimeoutError):
            return True, "request timed out", None
        if isinstance(e, a.APIConnectionError):
            cause = e.__cause__
            return True, f"connection error ({type(cause).__name__ if cause else 'no response'})", None
        if isinstance(e, a.APIStatusError):
            status = e.status_code
            etype = msg = None
            body = e.body if isinstance(e.body, dict) else None
            if body and isinstance(body.get("error"), dict):
                etype = body["error"].get("type")
                msg = body["error"].get("message")
            retry_after = None
            try:
                h = e.response.headers
                if h.get("retry-after-ms"):
                    retry_after = float(h["retry-after-ms"]) / 1000
                elif h.get("retry-after"):
                    retry_after = float(h["retry-after"])
            except (TypeError, ValueError, AttributeError):
                pass
            text = f"HTTP {status}" + (f" {etype}" if etype else "") + (f": {msg}" if msg else "")
            return status in RETRY_STATUS, text, retry_after
        if isinstance(e, ValueError):  # json.JSONDecodeError: the SDK does not wrap a malformed body
            return True, f"malformed response body ({type(e).__name__})", None
        return False, f"{type(e).__name__}: {e}", None

    def params(self, system: str, prompt: str, max_tokens: int) -> dict:
        """The Messages API request for one summarizer call (the same for a direct call and a batch)."""
        return {"model": self.model, "max_tokens": max_tokens, "system": system,
                "messages": [{"role": "user", "content": prompt}]}

    def _retrying(self, op, *, deadline: float | None = None, retry_ambiguous: bool = True):
        """``op(timeout)`` under our retry policy. ``retry_ambiguous=False``: a timeout or a dropped
        connection (the request may have been accepted) is raised as ``AmbiguousRequest``, not retried."""
        last = "no attempt made"
        for attempt in range(1, self.attempts + 1):
            timeout = self.timeout
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise OverallTimeout(self._clean(f"anthropic: overall timeout reached after {attempt - 1} attempt(s); last error: {last}"))
                timeout = min(timeout, left)
            try:
                return op(timeout)
            except Exception as e:  # classified below; anything unknown is not retried
                retry, last, retry_after = self._classify(e)
                last = self._clean(last)
                if not retry_ambiguous and isinstance(e, self._anthropic.APIConnectionError):  # timeouts included
                    raise AmbiguousRequest(f"anthropic: {last}: the API may or may not have received the request") from None
                if not retry:
                    raise SummarizerError(f"anthropic: {last} (not retried)") from None
                if attempt >= self.attempts:
                    break
                delay = self.backoff(attempt, retry_after)
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise OverallTimeout(f"anthropic: overall timeout reached after {attempt} attempt(s); last error: {last}") from None
                time.sleep(delay)
        raise SummarizerError(f"anthropic: {last} (gave up after {self.attempts} attempts)")

    def call(self, system: str, prompt: str, *, max_tokens: int, deadline: float | None = None) -> str:
        req = self.params(system, prompt, max_tokens)
        msg = self._retrying(lambda timeout: self.client.messages.create(**req, timeout=timeout), deadline=deadline)
        return reply_text(msg.content)

    # ------------------------------------------------------------ Message Batches (ctxtool.batch_compact)

    def batch_create(self, requests: list[dict]) -> dict:
        """Submit ``[{"custom_id", "params"}]`` as one Message Batch -> the batch as a dict.
        Never retried after a timeout or a dropped connection (``AmbiguousRequest``): a retry
        could create the batch twice."""
        b = self._retrying(lambda timeout: self.client.messages.batches.create(requests=requests, timeout=timeout),
                           retry_ambiguous=False)
        return _batch_dict(b)

    def batch_retrieve(self, batch_id: str) -> dict:
        return _batch_dict(self._retrying(lambda timeout: self.client.messages.batches.retrieve(batch_id, timeout=timeout)))

    def batch_list(self, since: float) -> list[dict]:
        """Batches created at or after ``since`` (epoch seconds), newest first."""
        def op(timeout):
            out = []
            for b in self.client.messages.batches.list(limit=100, timeout=timeout):
                d = _batch_dict(b)
                if d["created_at"] is not None and d["created_at"] < since:
                    break
                out.append(d)
            return out
        return self._retrying(op)

    def batch_results(self, batch_id: str):
        """The results of an ended batch: ``(custom_id, text | None, error | None)`` per line, streamed.
        ``error`` says why there is no text (errored, expired, canceled, empty reply)."""
        decoder = self._retrying(lambda timeout: self.client.messages.batches.results(batch_id, timeout=timeout))
        try:
            for line in decoder:
                result = line.result
                kind = getattr(result, "type", None)
                if kind == "succeeded":
                    try:
                        yield line.custom_id, reply_text(result.message.content), None
                    except SummarizerError as e:
                        yield line.custom_id, None, e.reason
                elif kind == "errored":
                    err = getattr(getattr(result, "error", None), "error", None)
                    etype, emsg = getattr(err, "type", None) or "error", getattr(err, "message", None)
                    yield line.custom_id, None, self._clean(f"anthropic batch {batch_id}: request errored: {etype}" + (f": {emsg}" if emsg else ""))
                elif kind == "expired":
                    yield line.custom_id, None, f"anthropic batch {batch_id}: request expired (the batch ended before processing it)"
                elif kind == "canceled":
                    yield line.custom_id, None, f"anthropic batch {batch_id}: request canceled"
                else:
                    yield line.custom_id, None, f"anthropic batch {batch_id}: unknown result type {kind!r}"
        except Exception as e:  # a connection lost mid-stream, a malformed line
            _retry, why, _after = self._classify(e)
            raise SummarizerError(self._clean(f"anthropic: reading the results of batch {batch_id} failed: {why}")) from None
        finally:
            try:
                decoder.close()
            except Exception:
                pass


class AmbiguousRequest(SummarizerError):
    """A request timed out or lost its connection after being sent: the API may have acted on it."""


def reply_text(content) -> str:
    """The summary in a Messages API reply: its text blocks (a ``<summary>`` element if there is one)."""
    text = "\n".join(getattr(b, "text", "") for b in (content or []) if getattr(b, "type", None) == "text").strip()
    m = re.search(r"<summary>(.*?)</summary>", text, re.S)
    if m:
        text = m.group(1).strip()
    if not text:
        raise SummarizerError("anthropic: empty summary (the response had no text content)")
    return text


def _epoch(dt) -> float | None:
    return dt.timestamp() if dt is not None else None


def _batch_dict(b) -> dict:
    """The fields of an SDK ``MessageBatch`` ctxtool uses, as plain data."""
    counts = b.request_counts
    return {"id": b.id, "status": b.processing_status, "created_at": _epoch(b.created_at), "ended_at": _epoch(b.ended_at),
            "results_url": b.results_url,
            "counts": {k: getattr(counts, k, 0) for k in ("processing", "succeeded", "errored", "canceled", "expired")}}


# ---------------------------------------------------------------- command


def _kill_group(proc) -> None:
    """Stop a summarizer command and whatever it started (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        proc.kill()
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass


class CommandSummarizer:
    """Pipe the prompt to a shell command; its stdout is the summary."""

    name = "command"
    offline = False

    def __init__(self, command: str, *, timeout: float = DEFAULT_CALL_TIMEOUT):
        if not command or not command.strip():
            raise SummarizerError("--summarizer command needs --summarizer-command")
        self.command = command
        self.timeout = timeout

    def close(self) -> None:
        pass

    def call(self, system: str, prompt: str, *, max_tokens: int, deadline: float | None = None) -> str:
        timeout = self.timeout
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise OverallTimeout("command: overall timeout reached")
            timeout = min(timeout, left)
        env = dict(os.environ, CTXTOOL_SUMMARY_MAX_TOKENS=str(max_tokens))
        try:
            # a session of its own: on a timeout the whole group goes, not only the shell (its child stayed)
            proc = subprocess.Popen(self.command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, start_new_session=True)
        except OSError as e:
            raise SummarizerError(f"cannot run summarizer command {self.command!r}: {e.strerror or e}") from None
        try:
            stdout, stderr_b = proc.communicate((system + "\n\n" + prompt).encode("utf-8"), timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise SummarizerError(f"summarizer command timed out after {timeout:g}s: {self.command}") from None
        except BaseException:
            _kill_group(proc)
            raise
        stderr = stderr_b.decode("utf-8", "replace").strip()
        tail = _clip(stderr[-600:], 600) if stderr else "(no stderr)"
        if proc.returncode != 0:
            raise SummarizerError(f"summarizer command exited with status {proc.returncode}: {tail}")
        if b"\0" in stdout:
            raise SummarizerError("summarizer command wrote NUL bytes: not a summary (is it a text command?)")
        try:
            out = stdout.decode("utf-8").strip()
        except UnicodeDecodeError as e:
            raise SummarizerError(f"summarizer command wrote bytes that are not UTF-8 (at byte {e.start}): "
                                  "not a summary (is it a text command?)") from None
        if not out:
            raise SummarizerError(f"summarizer command produced no output: {tail}")
        return out


def make_summarizer(kind: str, *, model: str = DEFAULT_MODEL, command: str | None = None,
                    timeout: float = DEFAULT_CALL_TIMEOUT, **kw):
    if kind == "extractive":
        return ExtractiveSummarizer()
    if kind == "anthropic":
        return AnthropicSummarizer(model, timeout=timeout, **kw)
    if kind == "command":
        return CommandSummarizer(command or "", timeout=timeout)
    raise SummarizerError(f"unknown summarizer {kind!r} (extractive, anthropic, command)")
