"""The context window of a session: one rule for every command (estimate, profile, prune, compact).

Order (the first that applies wins; ``source`` says which one did):

1. ``--window`` (forced);
2. the OpenClaw config (``--config``): the model's ``contextWindow`` under
   ``models.providers.<provider>.models``, capped by ``agents.defaults.contextTokens``
   (OpenClaw's context-window guard);
3. a ``contextWindow`` the file records (e.g. a pi ``model_change``/custom entry);
4. the model the session last used, from the known-model table. A 1M window is never
   assumed from a Claude model name alone: only a ``[1m]``/``-1m`` name or recorded usage
   above 200K (a request the provider accepted, so the window must be larger) proves it;
5. 200,000 (OpenClaw's default).

Recorded usage above the chosen window is reported in ``source`` when it does not decide it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .view import MainThread

DEFAULT_WINDOW = 200_000
CLAUDE_1M = 1_000_000

# Context windows of models, matched against the model name the file records.
KNOWN_WINDOWS: list[tuple[re.Pattern, int, str]] = [
    (re.compile(r"\[1m\]|[-_]1m\b|context-1m", re.I), CLAUDE_1M, "1M context variant"),
    (re.compile(r"(^|/)claude", re.I), 200_000, "Claude models: 200K"),
    (re.compile(r"(^|/)gpt-4\.1", re.I), 1_047_576, "GPT-4.1: 1,047,576"),
    (re.compile(r"(^|/)gpt-5", re.I), 400_000, "GPT-5: 400K"),
    (re.compile(r"(^|/)gpt-4o", re.I), 128_000, "GPT-4o: 128K"),
    (re.compile(r"(^|/)o[134](-|$)", re.I), 200_000, "o-series: 200K"),
    (re.compile(r"(^|/)gemini-(1\.5|2)", re.I), 1_048_576, "Gemini 1.5/2.x: 1,048,576"),
]

MODELS_PATH = "models.providers"
CONTEXT_TOKENS_PATH = "agents.defaults.contextTokens"


@dataclass
class Evidence:
    """What a file says about its window, gathered entry by entry (``add``) during a scan."""

    last_model: str | None = None  # the model of the last assistant message
    model_hint: str | None = None  # a modelId recorded by a meta entry
    recorded: int | None = None  # a contextWindow recorded by a meta entry
    recorded_line: int | None = None
    peaks: dict = field(default_factory=dict)  # model -> (peak recorded context tokens, line)
    main: MainThread = field(default_factory=MainThread)  # Claude Code: a subagent's lines are another context

    def add(self, e) -> None:
        """Feed one entry (called for every entry of a scan: keep the common path short)."""
        kind = e.kind
        if kind == "message":
            if not self.main.keeps(e) or (e.extra is not None and e.extra.get("api_error")):
                return  # a subagent's lines in a main file, or Claude Code's own error line: never sent
            if e.role != "assistant":
                return
            m = e.model
            if m and m != "<synthetic>":
                self.last_model = m
            u = e.usage
            if u is not None:
                c = u.input + u.cache_read + u.cache_write
                best = self.peaks.get(m)
                if best is None or c > best[0]:
                    self.peaks[m] = (c, e.lineno)
        elif kind == "meta":
            found = _meta_values(e)
            if found is None:
                return
            w, mid = found
            if isinstance(w, int) and not isinstance(w, bool) and w > 0:
                self.recorded, self.recorded_line = w, e.lineno
            if isinstance(mid, str) and mid:
                self.model_hint = mid

    def add_messages(self, entries) -> None:
        """``add`` for the message entries of an index, after the scan (cheaper than a callback
        per entry: only assistants and lines with flags go through ``add``)."""
        add, main = self.add, self.main
        for e in entries:
            if e.kind != "message":
                continue
            if e.role == "assistant" or e.extra is not None:
                add(e)
            else:
                main.seen = True  # MainThread.keeps for a plain line

    @classmethod
    def of(cls, entries) -> "Evidence":
        """Evidence from an index: meta entries from their objects when kept, else from what the
        format recorded in ``extra`` (pi's model_change/custom modelId and contextWindow). What
        meta entries say is the last one's that says it: read from the end, until both are found."""
        ev = cls()
        need_window = need_model = True
        for e in reversed(entries):
            if e.kind != "meta" or (e.obj is None and e.extra is None):
                continue
            found = _meta_values(e)
            if found is None:
                continue
            w, mid = found
            if need_window and isinstance(w, int) and not isinstance(w, bool) and w > 0:
                ev.recorded, ev.recorded_line = w, e.lineno
                need_window = False
            if need_model and isinstance(mid, str) and mid:
                ev.model_hint = mid
                need_model = False
            if not (need_window or need_model):
                break
        ev.add_messages(entries)
        return ev

    @property
    def model(self) -> str | None:
        return self.last_model or self.model_hint

    def peak(self, model: str | None) -> tuple[int, int]:
        """Peak recorded context for ``model`` (and for entries that name no model)."""
        best = (0, 0)
        for m, v in self.peaks.items():
            if m is None or model is None or m == model:
                best = max(best, v)
        return best


def _meta_values(e) -> tuple | None:
    """(context window, model id) a meta entry records, either possibly None; None when it
    records nothing: what the format kept in the index (pi: model_change, custom; Codex:
    token_count's model_context_window, turn_context's model), whether or not the line is
    released, else its object when kept."""
    x = e.extra
    if x and ("context_window" in x or "model" in x):
        return x.get("context_window"), x.get("model")
    obj = e.obj
    if obj is None:
        return None
    data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    return obj.get("contextWindow") or data.get("contextWindow"), obj.get("modelId") or data.get("modelId")


@dataclass
class Window:
    tokens: int
    source: str  # human-readable: where the figure came from
    basis: str  # forced | configured | recorded | usage | model | default

    def __iter__(self):  # unpacks as (tokens, source)
        return iter((self.tokens, self.source))


def _positive_int(v) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return v if isinstance(v, int) and v > 0 else None


def configured_window(cfg: dict | None, model: str | None) -> tuple[int, str] | None:
    """The window an OpenClaw config gives ``model``: ``models.providers.*.models[].contextWindow``
    for the model's id, capped by ``agents.defaults.contextTokens``; None when it says nothing."""
    if not isinstance(cfg, dict):
        return None
    found: tuple[int, str] | None = None
    providers = cfg.get("models", {}).get("providers") if isinstance(cfg.get("models"), dict) else None
    if model and isinstance(providers, dict):
        bare = model.split("/")[-1]
        for pname, p in providers.items():
            models = p.get("models") if isinstance(p, dict) else None
            for i, m in enumerate(models if isinstance(models, list) else []):
                if isinstance(m, dict) and m.get("id") in (model, bare):
                    w = _positive_int(m.get("contextWindow"))
                    if w:
                        found = (w, f"{MODELS_PATH}.{pname}.models[{i}].contextWindow")
                        break
            if found:
                break
    cap = None
    agents = cfg.get("agents")
    if isinstance(agents, dict) and isinstance(agents.get("defaults"), dict):
        cap = _positive_int(agents["defaults"].get("contextTokens"))
    if cap and (found is None or cap < found[0]):
        return cap, CONTEXT_TOKENS_PATH + (f" (caps {found[0]:,} from {found[1]})" if found else "")
    return found


def resolve_window(ev: Evidence | None = None, *, override: int | None = None, model: str | None = None,
                   configured: tuple[int, str] | None = None) -> Window:
    """The context window for a session, and where it came from (see the module's rule)."""
    ev = ev or Evidence()
    model = model or ev.model
    if override:
        return Window(int(override), "--window", "forced")
    if configured:
        return Window(int(configured[0]), f"configured: {configured[1]}", "configured")
    peak, line = ev.peak(model)
    if ev.recorded:
        return Window(ev.recorded, f"contextWindow recorded in the file (line {ev.recorded_line})", "recorded")
    if model:
        for pat, window, why in KNOWN_WINDOWS:
            if pat.search(model):
                if window == DEFAULT_WINDOW and "claude" in model.lower() and peak > DEFAULT_WINDOW:
                    return Window(CLAUDE_1M, f"{model}: recorded usage {peak:,} (line {line}) > 200K proves the "
                                             f"1M context variant", "usage")
                return Window(window, f"{model} ({why})" + _over(peak, line, window), "model")
        return Window(DEFAULT_WINDOW, f"{model} not in the known-model table: default 200,000"
                      + _over(peak, line, DEFAULT_WINDOW), "default")
    return Window(DEFAULT_WINDOW, "no model named in the file: default 200,000" + _over(peak, line, DEFAULT_WINDOW),
                  "default")


def _over(peak: int, line: int, window: int) -> str:
    return (f"; recorded usage {peak:,} (line {line}) exceeds it: pass --window" if peak > window else "")
