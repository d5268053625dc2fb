"""Write a compaction back in each format's own record, and compact one file end to end.

* pi/OpenClaw: a ``compaction`` entry is appended (``summary``, ``firstKeptEntryId``,
  ``tokensBefore``, ``details{readFiles, modifiedFiles}``, fresh 8-hex ``id``, ``parentId``
  = the current leaf); every original line stays byte for byte. ``truncate=True`` also
  removes the summarized ``message`` entries on the branch (and labels / branch summaries
  that pointed at them) and re-links what stays to its nearest kept ancestor, as
  OpenClaw's ``truncateAfterCompaction`` does.
* Claude Code: a ``system``/``compact_boundary`` line (``parentUuid`` null,
  ``logicalParentUuid`` = the last uuid, ``compactMetadata{trigger:"manual", preTokens,
  preservedSegment, preservedMessages}``) naming the kept messages by uuid, as the client
  records them, then the ``isCompactSummary`` user line. The client sends the summary and
  then each kept message once (judged); every original line stays byte for byte.
* Codex: a ``compacted`` line in Codex's own form is appended: ``message`` (Codex's summary
  prefix and the summary) and ``replacement_history`` (the summary as a user message, then the
  kept items as they are in the file); Codex resumes with that list in place of everything
  before it, and injects its context (instructions, environment) again. Original lines are
  untouched; in a paginated rollout the new line gets the next ``ordinal``.
* Messages JSONL: rewritten as one summary user message followed by the kept lines.

The summarizer runs without the lock; the lock is taken for the write only, which goes
through the commit protocol (``ctxtool.commit``): lines the agent appended while it was
summarized or written are carried over after the new records, the first re-linked under
the compaction (pi) or the summary line (Claude Code); a file replaced,
shrunk or rewritten meanwhile is refused. Backup only when written, as ``repair``.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace

from . import codex_rules, commit
from . import compact as cp
from .errors import CtxError, InputError, unexpected
from .formats import claude as claude_fmt
from .formats import codex as codex_fmt
from .formats import pi as pi_fmt
from .jsonl import READ_BUFFER, dumps
from .lock import DEFAULT_TIMEOUT, SessionLocks, clear_stale
from .model import js_len
from .repair import plan_repair
from .summarize import Settings, SummaryResult, summarize_plan
from .transcript import Transcript, scan


@dataclass
class Options:
    fmt: str | None = None
    keep_recent_tokens: int = cp.DEFAULT_KEEP_RECENT_TOKENS
    settings: Settings = field(default_factory=Settings)
    if_over: float | None = None
    dry_run: bool = False
    truncate: bool = False
    backup: bool = True
    lock_timeout: float = DEFAULT_TIMEOUT
    break_stale_lock: bool = False
    on_error: str = "fallback"  # fallback: write OpenClaw's fallback text (+ extractive); skip: leave the file
    window: int | None = None  # forced context window (--window); None: the session's own (ctxtool.window)


@dataclass
class FileResult:
    path: str
    format: str | None = None
    status: str = "failed"  # compacted | fallback | skipped | planned | failed
    reason: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    messages_summarized: int = 0
    tokens_summarized: int = 0
    messages_kept: int = 0
    tokens_kept: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    summary_chars: int = 0
    seconds: float = 0.0
    error: str | None = None
    errors: list = field(default_factory=list)
    fallback: str = "none"
    split_turn: bool = False
    previous_summary: bool = False
    first_kept: str | None = None
    removed_entries: int = 0
    backup: str | None = None
    summary: str | None = None
    window: int = 0
    window_source: str | None = None
    carried: int = 0  # lines the agent appended meanwhile, copied after the new records
    notices: list = field(default_factory=list)  # one line each: lock taken over, leftovers removed, late writes

    @property
    def ok(self) -> bool:
        return self.status in ("compacted", "skipped", "planned")

    def to_dict(self, with_summary: bool = False) -> dict:
        d = asdict(self)
        d["seconds"] = round(self.seconds, 3)
        if not with_summary:
            d.pop("summary")
        return d


# ---------------------------------------------------------------- helpers


def _copy_file(t: Transcript):
    """The bytes of ``t`` that were read (lines appended later are the commit's to carry), with a
    newline added to a last record missing it (compact refuses torn lines)."""
    size, add_eol = t.size, t.eol if t.last_eol == b"" else None
    with open(t.path, "rb") as f:
        while size > 0:
            block = f.read(min(READ_BUFFER, size))
            if not block:
                break
            size -= len(block)
            yield block
    if add_eol:
        yield add_eol


def summary_tokens(fmt: str, summary: str) -> int:
    """Heuristic tokens of the summary message as the agent will send it."""
    if fmt == "pi":
        return math.ceil(js_len(summary) / 4)
    if fmt == "codex":
        return math.ceil(js_len(codex_rules.SUMMARY_TEXT + "\n" + summary) / 4)
    return math.ceil(js_len(cp.CONTINUATION_PREFIX + summary) / 4)


def _now_iso() -> str:
    return pi_fmt.iso(time.time())


# ---------------------------------------------------------------- pi


def pi_compaction_entry(plan: cp.Plan, summary: str, taken: set, rng=None) -> dict:
    ex = plan.extraction
    return {
        "type": "compaction",
        "id": pi_fmt.new_id(taken, rng),
        "parentId": plan.context.leaf.id if plan.context.leaf is not None else None,
        "timestamp": _now_iso(),
        "summary": summary,
        "firstKeptEntryId": plan.first_kept_entry.id,
        "tokensBefore": plan.tokens_before,
        "details": {"readFiles": ex.read_files, "modifiedFiles": ex.modified_files},
    }


def pi_chunks(t: Transcript, plan: cp.Plan, summary: str, *, truncate: bool = False, rng=None) -> tuple[list, set, commit.Relink]:
    """(chunks of the new file, ids of the entries removed, how lines appended meanwhile hang on)."""
    taken = {e.id for e in t.entries if e.id}
    entry = pi_compaction_entry(plan, summary, taken, rng)
    line = dumps(entry) + t.eol
    relink = commit.relink_for("pi", entry["parentId"], entry["id"])
    if not truncate:
        return [_copy_file(t), [line]], set(), relink
    path = plan.context.path
    pos = next(i for i, e in enumerate(path) if e.index == plan.first_kept_entry.index)
    removed = {e.id for e in path[:pos] if e.type == "message" and e.id}
    by_id = {e.id: e for e in t.entries if e.id}
    with open(t.path, "rb") as f:
        for e in t.entries:
            if e.type == "label" and e.id not in removed:
                target = t.load(e, f).get("targetId")
                if target in removed:
                    removed.add(e.id)
            elif e.type == "branch_summary" and e.parent in removed:
                removed.add(e.id)

    def kept_ancestor(pid):
        seen = set()
        while pid is not None and pid in removed and pid not in seen:
            seen.add(pid)
            p = by_id.get(pid)
            pid = p.parent if p is not None else None
        return pid

    def gen():
        with open(t.path, "rb") as f:
            for e in t.entries:
                if e.id in removed:
                    continue
                if e.parent is not None and e.parent in removed:
                    obj = dict(t.load(e, f))
                    obj["parentId"] = kept_ancestor(e.parent)
                    yield dumps(obj) + t.eol
                else:
                    yield t.raw(e, f) + (e.eol or t.eol)
        yield line

    return [gen()], removed, replace(relink, gone=frozenset(removed))


# ---------------------------------------------------------------- claude


def claude_lines(t: Transcript, plan: cp.Plan, summary: str, rng=None) -> list[dict]:
    """Claude Code's own compaction record: a ``compact_boundary`` (a new root) whose
    ``compactMetadata`` names the kept messages (``preservedMessages``/``preservedSegment``, as the
    client writes them), then the summary. The kept lines stay where they are, byte for byte:
    the client sends the summary and then the preserved messages, each once (judged)."""
    taken = {e.id for e in t.entries if e.id}
    last = next((e for e in reversed(t.entries) if e.id), None)
    env: dict = {}
    with open(t.path, "rb") as f:
        # the envelope of the main conversation: a trailing subagent line must not make the
        # boundary and the summary sidechain lines, which Claude Code would skip
        src = next((e for e in reversed(t.entries) if e.id and e.kind == "message" and not e.get("sidechain")), None) \
            or next((e for e in reversed(t.entries) if e.id and e.kind == "message"), last)
        if src is not None:
            obj = t.load(src, f)
            env = {k: obj[k] for k in claude_fmt.ENVELOPE if k in obj}
    now = _now_iso()
    kept = [e.id for u in plan.kept for e in u.entries if e.id]
    boundary_id = claude_fmt.new_id(taken, rng)
    summary_id = claude_fmt.new_id(taken, rng)
    meta: dict = {"trigger": "manual", "preTokens": plan.tokens_before}
    if kept:
        meta["preservedSegment"] = {"headUuid": kept[0], "anchorUuid": summary_id, "tailUuid": kept[-1]}
        meta["preservedMessages"] = {"anchorUuid": summary_id, "uuids": kept, "allUuids": kept}
    boundary = {"parentUuid": None, "logicalParentUuid": last.id if last is not None else None, **env,
                "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                "isMeta": False, "timestamp": now, "uuid": boundary_id, "level": "info", "compactMetadata": meta}
    summ = {"parentUuid": boundary_id, **env, "type": "user",
            "message": {"role": "user", "content": cp.CONTINUATION_PREFIX + summary},
            "isVisibleInTranscriptOnly": True, "isCompactSummary": True,
            "uuid": summary_id, "timestamp": now}
    return [boundary, summ]


def claude_chunks(t: Transcript, plan: cp.Plan, summary: str, rng=None) -> tuple[list, commit.Relink]:
    objs = claude_lines(t, plan, summary, rng)
    lines = [dumps(o) + t.eol for o in objs]
    relink = commit.relink_for("claude", objs[0]["logicalParentUuid"], objs[-1]["uuid"])
    return [_copy_file(t), lines], relink


# ---------------------------------------------------------------- codex


def codex_line(t: Transcript, plan: cp.Plan, summary: str) -> dict:
    """Codex's own compaction record (``compacted`` with ``replacement_history``): the summary as
    the user message Codex writes for one (its prefix, a newline, the summary), then the kept
    items, read from the file as Codex reads them (its internal fields left out)."""
    text = codex_rules.SUMMARY_TEXT + "\n" + summary
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}]
    cache: dict = {}
    with open(t.path, "rb") as f:
        for u in plan.kept:
            for e in u.entries:
                it = codex_rules.item_of(t, e, f, cache)
                if it is not None:
                    items.append(it)
    ordinal = None
    head = next((e for e in t.entries if e.kind == "header"), None)
    if head is not None and head.get("paginated") and t.entries:
        last = t.load(t.entries[-1]).get("ordinal")
        ordinal = last + 1 if isinstance(last, int) else None
    return codex_fmt.line(_now_iso(), "compacted", {"message": text, "replacement_history": items}, ordinal)


def codex_chunks(t: Transcript, plan: cp.Plan, summary: str) -> list:
    return [_copy_file(t), [dumps(codex_line(t, plan, summary)) + t.eol]]


# ---------------------------------------------------------------- messages


def messages_chunks(t: Transcript, plan: cp.Plan, summary: str) -> list:
    first = plan.kept[0].first.index

    def gen():
        yield dumps({"role": "user", "content": cp.CONTINUATION_PREFIX + summary}) + t.eol
        with open(t.path, "rb") as f:
            for e in t.entries:
                if e.index >= first:
                    yield t.raw(e, f) + t.eol

    return [gen()]


def write_chunks(t: Transcript, plan: cp.Plan, summary: str, *, truncate: bool = False,
                 rng=None) -> tuple[list, int, commit.Relink | None]:
    """(chunks of the new file, entries removed, how lines appended meanwhile hang on)."""
    if plan.format == "pi":
        chunks, removed, relink = pi_chunks(t, plan, summary, truncate=truncate, rng=rng)
        return chunks, len(removed), relink
    if plan.format == "claude":
        chunks, relink = claude_chunks(t, plan, summary, rng)
        return chunks, 0, relink
    if plan.format == "codex":
        return codex_chunks(t, plan, summary), 0, None
    return messages_chunks(t, plan, summary), 0, None


def _flatten(chunks):
    for c in chunks:
        yield from c


# ---------------------------------------------------------------- one file


def compact_file(path: str, summarizer, opts: Options | None = None, *, stop=None) -> FileResult:
    """Plan, summarize and write one file. Never raises for per-file problems: the result says. ``stop`` (a
    ``threading.Event``): once set, the file is left as it is where it is not being written yet ("skipped")."""
    opts = opts or Options()
    res = FileResult(path)
    t0 = time.monotonic()
    try:
        _compact(path, summarizer, opts, res, stop)
    except CtxError as e:
        res.status = "failed"
        res.error = e.reason
    except OSError as e:
        res.status = "failed"
        res.error = f"{type(e).__name__}: {e.strerror or e}"
    except Exception as e:  # a bug met on this file: its result says so, the batch goes on
        res.status = "failed"
        res.error = str(unexpected(e))
    res.seconds = time.monotonic() - t0
    return res


# A live session's last line can be met half-written (an agent's append is copied a page at a time): the read sees a
# torn last line. Compaction needs every line whole, so it reads again a moment later, this many times at most; a line
# still torn then is damage (``repair`` first), as before.
TORN_READS = 6
TORN_WAIT = 0.02


def _being_appended(bad: list, snap) -> bool:
    """The only unreadable line is the last one, torn where the read ended (the snapshot's pending line)."""
    return len(bad) == 1 and snap.start < snap.size and bad[0].offset >= snap.start


def _compact(path: str, summarizer, opts: Options, res: FileResult, stop=None) -> None:
    if not os.path.exists(path):
        raise InputError("no such file", path=path)
    if not opts.dry_run:  # what a killed run left: its lock, temp file, pending backup
        res.notices += clear_stale(path) + commit.clean_leftovers(path)
    res.notices += commit.late_writes(path)
    ident = commit.identity(path)
    commit.phase("before-read", path)
    for attempt in range(TORN_READS):
        t = scan(path, opts.fmt)
        snap = commit.snapshot(path, t.size, expect=ident)
        bad = [b for b in t.bad if not b.blank]
        if not (bad and _being_appended(bad, snap)) or attempt == TORN_READS - 1:
            break
        time.sleep(TORN_WAIT)  # a line met half-written: its writer finishes it in a moment, read again
    res.format = t.format_name
    if bad:
        raise InputError(f"{len(bad)} unparseable line(s) (first: line {bad[0].lineno}, {bad[0].reason}); "
                         "run `ctxtool repair` first", path=path)
    _refuse_damaged(path, t.format_name)
    plan = cp.plan_compaction(t, keep_recent_tokens=opts.keep_recent_tokens, window=opts.window)
    st = replace(opts.settings, window=plan.window)  # --if-over, chunk sizes, oversized messages
    res.window, res.window_source = plan.window, plan.window_source
    res.tokens_before = res.tokens_after = plan.tokens_before
    res.previous_summary = plan.previous_summary is not None
    if opts.if_over is not None and plan.tokens_before <= opts.if_over * st.window:
        res.status, res.reason = "skipped", f"{plan.tokens_before:,} tokens, not over {opts.if_over:g} of the {st.window:,}-token window"
        return
    if plan.skip:
        res.status, res.reason = "skipped", plan.skip
        return
    res.messages_summarized = plan.messages_to_summarize
    res.tokens_summarized = plan.tokens_to_summarize
    res.messages_kept = len(plan.kept)
    res.tokens_kept = plan.tokens_kept
    res.split_turn = bool(plan.cut and plan.cut.split_turn)
    res.first_kept = plan.first_kept_entry.id if plan.first_kept_entry is not None else None
    if not getattr(summarizer, "offline", False):
        res.calls, res.prompt_tokens = cp.planned_calls(plan, window=st.window, parts=st.parts, min_messages=st.min_messages)
    if opts.dry_run:
        if getattr(summarizer, "offline", False):
            summ = summarize_plan(plan, summarizer, st)
            res.summary_chars = len(summ.text)
            res.tokens_after = summary_tokens(plan.format, summ.text) + plan.tokens_kept
        else:  # estimate: the summary at its cap, never more than what it replaces
            est = min(cp.MAX_SUMMARY_CHARS // 4, st.max_tokens, plan.tokens_to_summarize)
            res.tokens_after = est + plan.tokens_kept
        res.status = "planned"
        return
    # an agent that keeps the file open (Codex) would write on into the replaced file: waited for (up to the lock's
    # timeout) before anything is summarized, and looked for again just before the rename (commit)
    commit.wait_unheld(path, opts.lock_timeout)
    summ: SummaryResult = summarize_plan(plan, summarizer, st, stop)
    res.calls = summ.calls
    res.errors = summ.errors
    res.fallback = summ.fallback
    res.summary = summ.text
    res.summary_chars = len(summ.text)
    if summ.fallback == "text" and opts.on_error == "skip":
        res.status = "failed"
        res.error = "summarizer failed: " + (summ.errors[-1] if summ.errors else "no summary") + " (file left unchanged)"
        return
    if stop is not None and stop.is_set():  # (a batch stopped by Ctrl-C or SIGTERM while this file was summarized)
        res.status, res.reason = "skipped", "the run was stopped before this file was written (file left unchanged)"
        return
    commit.phase("planned", path)
    rng = random.Random()
    chunks, removed, relink = write_chunks(t, plan, summ.text, truncate=opts.truncate and plan.format == "pi", rng=rng)
    lock = SessionLocks(path, timeout=opts.lock_timeout, break_stale=opts.break_stale_lock)
    with lock:
        res.notices += lock.notices
        done = commit.commit(snap, _flatten(chunks), relink=relink, backup=opts.backup)
    res.backup, res.carried = done.backup, done.carried + done.carried_late
    res.notices += done.notices
    res.removed_entries = removed
    res.tokens_after = summary_tokens(plan.format, summ.text) + plan.tokens_kept
    if summ.fallback == "text":
        res.status = "fallback"
        res.error = "summarizer failed, fallback summary written: " + (summ.errors[-1] if summ.errors else "")
    else:
        res.status = "compacted"
        if summ.fallback == "partial":
            res.reason = "partial summary: " + "; ".join(summ.errors[-2:])


STRUCTURAL = {"header", "duplicate-id", "duplicate-line", "cycle", "dangling-parent", "malformed-entry"}  # not "parent": re-links that follow pairing fixes


def _refuse_damaged(path: str, fmt: str) -> None:
    """Compaction writes records that point at entry ids (``firstKeptEntryId``, parent links):
    refuse a file whose header, ids or links ``ctxtool repair`` would fix, since the new records
    would point into the damage. Pairing problems are left as they are (the agent already sends
    them; summarizing can only remove some). Costs one structure-only scan."""
    changes = [c for c in plan_repair(scan(path, fmt, stats=False)).changes if c.kind in STRUCTURAL]
    if changes:
        kinds = Counter(c.kind for c in changes)
        first = next((c for c in changes if c.line), None)
        what = ", ".join(f"{k} {n}" for k, n in kinds.most_common())
        raise InputError(f"broken structure ({what}); run `ctxtool repair` first",
                         path=path, line=first.line if first else None)


# ---------------------------------------------------------------- batch


def compact_batch(files: list[str], summarizer, opts: Options | None = None, *, jobs: int = 1,
                  on_done=None) -> list[FileResult]:
    """Compact ``files`` with ``jobs`` threads (concurrent summarizations); results in input order.

    ``on_done(result)`` is called as each file finishes (from the worker's thread).
    """
    opts = opts or Options()
    results: list[FileResult | None] = [None] * len(files)
    import threading

    stop = threading.Event()  # Ctrl-C or SIGTERM in this thread: files not started are not, files summarized not written

    def one(i: int) -> None:
        r = compact_file(files[i], summarizer, opts, stop=stop)
        results[i] = r
        if on_done is not None:
            on_done(r)

    if jobs <= 1 or len(files) <= 1:
        for i in range(len(files)):
            one(i)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(jobs, len(files)), thread_name_prefix="ctxtool-compact") as ex:
            futures = [ex.submit(one, i) for i in range(len(files))]
            try:
                for fut in futures:
                    fut.result()
            except BaseException:
                stop.set()
                for fut in futures:
                    fut.cancel()
                raise
    return [r for r in results if r is not None]
