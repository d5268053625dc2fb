"""What the Codex CLI sends for a rollout: its own rules, found with the real client as judge.

Each rule was established by resuming recorded and edited rollouts in the pinned client
(``tests/codex_harness``, ``@openai/codex`` 0.169.0) and reading the ``input`` of the first
``/v1/responses`` request it sent; ``docs/codex-rules.md`` has the table of rule, line pattern and
what the client sends, with the fixture or experiment for each.

1. The ``base_instructions`` of ``session_meta`` are sent first, as a developer message (a file
   with only the older ``instructions`` key, or none, gets the client's own instructions).
2. ``response_item`` lines are replayed in file order, as recorded, less the client's internal
   ``internal_chat_message_metadata_passthrough`` and any field Codex does not know (``SENT_FIELDS``).
   Not sent: ``system`` messages, ``ghost_snapshot``
   items, items Codex cannot read (a call or output without ``call_id``), unparseable lines.
3. A ``compacted`` line with ``replacement_history`` replaces everything before it by that list; one
   without it (older files) replaces it by the user messages so far (not the environment context
   Codex rendered, not earlier summaries) followed by its ``message`` as a user message.
4. ``event_msg`` ``thread_rolled_back`` drops the last ``num_turns`` user turns (from the n-th last
   message the user typed to the end). Other events, ``turn_context``, ``world_state`` and
   ``token_usage_record`` lines are never sent.
5. A turn interrupted by the user (SIGINT) is recorded by Codex itself: the call gets the output
   "aborted by user" and a ``<turn_aborted>`` user message follows; both are sent as recorded.
6. Pairing is healed on every request (``heal``): a call whose output is lost (the client was
   killed mid-tool) gets the output ``"aborted"`` right after it, with the id
   ``fco_``/``ctco_`` + uuid5 of the call's item id; an output whose call is not in the history is
   dropped. A call_id used by two calls, or two outputs for one call, are sent as they are: the
   API refuses such a request (repair renames or removes them).
7. Lines ctxtool writes into a paginated file (``history_mode: "paginated"``) keep an ``ordinal``
   on the last line: Codex refuses to resume a paginated rollout whose last record has none.
"""

from __future__ import annotations

import uuid

from .codex_models import original_detail
from .formats.codex import (CONTENT_TAGS, LOCAL_SHELL_ACTION, ROLLBACK_TRIM, SUMMARY_TAGS, output_items, reasoning_parts,
                            sent_content, web_search_action)
from .model import COMPACTION, HEADER, MESSAGE, Entry, entry_from_tuple

ABORTED = "aborted"
# the namespace of Codex's synthetic output ids (uuid5 of "<prefix>:<call item id>")
SYNTHETIC_OUTPUT_NAMESPACE = uuid.UUID(int=0x90d38d3e_6a5b_4d52_bfe2_2f1e634bfac4)
INTERNAL_FIELDS = ("internal_chat_message_metadata_passthrough",)
# call item type -> (the output type that answers it, the prefix of a synthetic output's id)
ANSWERED_BY = {"function_call": ("function_call_output", "fco"), "local_shell_call": ("function_call_output", "fco"),
               "custom_tool_call": ("custom_tool_call_output", "ctco"), "tool_search_call": ("tool_search_output", "tso")}
# output type -> the call types it may answer
ANSWERS = {"function_call_output": ("function_call", "local_shell_call"), "custom_tool_call_output": ("custom_tool_call",),
           "tool_search_output": ("tool_search_call",)}
SUMMARY_PREFIX = "Another language model started to solve this problem"
# the text Codex puts before a summary in the user message that carries it (as 0.169 writes it)
SUMMARY_TEXT = ("Another language model started to solve this problem and produced a summary of its thinking "
                "process. You also have access to the state of the tools that were used by that language model. "
                "Use this to build on the work that has already been done and avoid duplicating work. Here is the "
                "summary produced by the other language model, use the information in this summary to assist "
                "with your own analysis:")
USER_MESSAGE_BUDGET_CHARS = 20_000 * 4  # Codex keeps ~20,000 tokens of user messages in a rebuilt history


def synthetic_output_id(prefix: str, item_id: str | None) -> str | None:
    """The id Codex gives the output it sends for a call whose output is lost (none when the
    call item has no id)."""
    if not item_id:
        return None
    return f"{prefix}_{uuid.uuid5(SYNTHETIC_OUTPUT_NAMESPACE, f'{prefix}:{item_id}')}"


def aborted_output(call: dict) -> dict | None:
    """The output item Codex sends for ``call`` (a call item) when its output is lost."""
    kind = ANSWERED_BY.get(call.get("type"))
    cid = call.get("call_id")
    if kind is None or not isinstance(cid, str):
        return None
    out_type, prefix = kind
    out: dict = {"type": out_type}
    sid = synthetic_output_id(prefix, call.get("id") if isinstance(call.get("id"), str) else None)
    if sid is not None:
        out["id"] = sid
    out["call_id"] = cid
    if out_type == "tool_search_output":
        out.update(status="completed", execution="client", tools=[])
    else:
        out["output"] = ABORTED
    return out


def expand(comp: Entry) -> list[Entry]:
    """The entries of a ``compacted`` line's replacement history (each placed at the line;
    ``Transcript.reload`` reads one back from the line by its ``sub`` position)."""
    out = []
    subs = comp.get("replacement") or ()
    for k, tup in enumerate(subs):
        s = entry_from_tuple(tup)
        if s.kind != MESSAGE:
            continue
        # placed at the line: an index between the line's and the next entry's, of its own
        s.index = comp.index + (k + 1) / (len(subs) + 1)
        s.lineno, s.offset, s.length, s.eol = comp.lineno, comp.offset, comp.length, comp.eol
        s.extra = dict(s.extra or {}, of=comp)  # the compacted line it is read from
        out.append(s)
    return out


def _typed(e: Entry) -> bool:
    """A message the user typed (a user turn's boundary), not context Codex rendered."""
    return e.role == "user" and e.kind == MESSAGE and not (e.extra and e.extra.get("context"))


def sent_entries(entries: list[Entry]) -> list[Entry]:
    """The entries Codex sends, in its order (rules 1-4): the base instructions, then the history
    after the latest compaction. Items of a replacement history are entries placed at the
    ``compacted`` line (``extra["sub"]`` is their position in it). Pairing is not healed here."""
    base = None
    history: list[Entry] = []
    for e in entries:
        k = e.kind
        if k == MESSAGE:
            history.append(e)
        elif k == HEADER:
            if base is None and e.extra and e.extra.get("base"):
                base = e
            elif base is not None and e is not base and history and e.id is not None and e.id == base.id:
                # the session's own session_meta line again (a fork's is another session's): Codex starts
                # the history over from it (judged)
                history = []
                if e.extra and e.extra.get("base"):
                    base = e
        elif k == COMPACTION:
            if e.get("replacement") is not None:
                history = expand(e)
            else:
                history = _rebuilt(history, e)
        elif e.extra is not None and e.extra.get("rollback"):
            history = _rolled_back(history, e.extra["rollback"])
    return ([base] if base is not None else []) + history


def _rebuilt(history: list[Entry], comp: Entry) -> list[Entry]:
    """An older ``compacted`` line (no replacement history): the user messages so far, newest
    kept within Codex's budget, then the summary."""
    users = [e for e in history if e.role == "user" and e.kind == MESSAGE
             and not (e.extra and e.extra.get("context") == "developer")
             and not _is_environment(e)]
    kept: list[Entry] = []
    budget = USER_MESSAGE_BUDGET_CHARS
    for e in reversed(users):
        if budget <= 0:
            break
        kept.append(e)
        budget -= e.chars
    kept.reverse()
    return kept + [comp]


def _is_environment(e: Entry) -> bool:
    x = e.extra
    return bool(x and x.get("context") == "user" and x.get("environment"))


def _rolled_back(history: list[Entry], n: int) -> list[Entry]:
    """``history`` less its last ``n`` user turns (rule 7), and the context updates right above the first of them:
    developer messages of ``TRIMMED_DEVELOPER`` and context the user did not type, back to the first turn (judged with
    Codex 0.169; its ``trim_pre_turn_context_updates``)."""
    turns = [k for k, e in enumerate(history) if _typed(e)]
    if not turns:
        return history
    cut = turns[0] if n >= len(turns) else turns[-n]
    while cut > turns[0] and _updates_context(history[cut - 1]):
        cut -= 1
    return history[:cut]


def _updates_context(e: Entry) -> bool:
    x = e.extra
    return e.kind == MESSAGE and x is not None and (x.get("context") == "user" or bool(x.get(ROLLBACK_TRIM)))


def heal(items: list[dict]) -> list[dict]:
    """Codex's pairing fixes on the Responses items it is about to send (rule 6): an output
    (``"aborted"``) right after each call whose output is missing, and outputs whose call is not
    in the list dropped."""
    outputs: dict[str, set] = {}
    calls: dict[str, set] = {}
    for it in items:
        t, cid = it.get("type"), it.get("call_id")
        t = t if isinstance(t, str) else None
        if not isinstance(cid, str):
            continue
        if t in ANSWERS:
            outputs.setdefault(t, set()).add(cid)
        elif t in ANSWERED_BY:
            calls.setdefault(t, set()).add(cid)
    out = []
    for it in items:
        t, cid = it.get("type"), it.get("call_id")
        t = t if isinstance(t, str) else None
        if t in ANSWERS and isinstance(cid, str) and not any(cid in calls.get(c, ()) for c in ANSWERS[t]):
            continue  # an orphan output
        out.append(it)
        if t in ANSWERED_BY and isinstance(cid, str) and cid not in outputs.get(ANSWERED_BY[t][0], ()):
            synth = aborted_output(it)
            if synth is not None:
                out.append(synth)
    return out


def item_of(t, e: Entry, f=None, cache: dict | None = None, *, original: bool = True) -> dict | None:
    """The Responses item Codex sends for entry ``e`` of transcript ``t`` (loaded again from the
    file by offset), or None for an entry that is not an item. ``cache`` keeps the last
    ``compacted`` line read, whose replacement items come one after another. ``original``: whether the model Codex is
    run with takes an image's ``original`` detail (``codex_models.original_detail``)."""
    if e.kind == HEADER:
        obj = t.load(e, f)
        text = obj["payload"]["base_instructions"]["text"]
        return {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": text}]}
    if e.index < 0 or (e.extra and "synthetic" in e.extra):
        obj = e.obj if e.obj is not None else None
        p = obj.get("payload") if isinstance(obj, dict) else None
        return _clean(p, original) if isinstance(p, dict) else None
    sub = e.get("sub")
    if sub is not None and cache is not None:
        if cache.get("offset") != e.offset:
            cache["offset"], cache["obj"] = e.offset, t.load(e, f)
        obj = cache["obj"]
    else:
        obj = t.load(e, f)
    p = obj.get("payload")
    if e.kind == COMPACTION:
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": p.get("message") or ""}]}
    if sub is not None:
        p = p["replacement_history"][sub]
    return _clean(p, original)


# the fields Codex sends of the items it knows (it reads an item into its own type and writes that
# again: a field it does not know is left out; judged field by field, rule 3)
SENT_FIELDS = {
    "message": frozenset(("type", "id", "role", "content", "status", "phase")),
    "reasoning": frozenset(("type", "id", "summary", "content", "encrypted_content")),
    "function_call": frozenset(("type", "id", "status", "name", "namespace", "arguments", "call_id")),
    "function_call_output": frozenset(("type", "id", "call_id", "namespace", "output")),
    "custom_tool_call": frozenset(("type", "id", "status", "call_id", "name", "namespace", "input")),
    "custom_tool_call_output": frozenset(("type", "id", "call_id", "name", "output")),
}


# fields Codex leaves out of what it sends when they are null (judged; the others it sends as null): a call_id only
# an output can lack and still be sent (rule 4m)
NULL_LEFT_OUT = frozenset(("namespace", "phase", "call_id"))


def _clean(p: dict, original: bool = True) -> dict:
    """An item as Codex sends it: the fields it knows of the item's type (an item of another type: all
    but its internal ones); its images as ``_image_again`` (``original``: as there)."""
    if p.get("type") == "reasoning":
        return _reasoning(p)
    if p.get("type") == "web_search_call":  # its action as Codex reads it (formats.codex.web_search_action)
        out = {k: p[k] for k in ("type", "id", "status") if p.get(k) is not None}
        action = web_search_action(p.get("action"))
        if action is not None:
            out["action"] = action
        return out
    if p.get("type") == "local_shell_call" and type(p.get("action")) is dict:
        return _local_shell(p)
    if p.get("type") in TOOL_SEARCH:
        return _tool_search(p)
    if p.get("type") == "image_generation_call":  # (judged: another field left out, a null id or revised prompt too)
        return {"type": "image_generation_call", **{k: p[k] for k in ("id", "status", "revised_prompt", "result")
                                                    if p.get(k) is not None}}
    if p.get("type") in ("compaction", "compaction_summary"):  # (judged: sent as a compaction, its encrypted content alone)
        return {"type": "compaction", "encrypted_content": p.get("encrypted_content")}
    keep = SENT_FIELDS.get(p.get("type")) if type(p.get("type")) is str else None
    if keep is not None:
        if not (keep.issuperset(p) and not any(p.get(k, 0) is None for k in NULL_LEFT_OUT)):
            p = {k: v for k, v in p.items() if k in keep and not (v is None and k in NULL_LEFT_OUT)}
        key = "content" if p.get("type") == "message" else "output" if p.get("type") in OUTPUT_ITEMS else None
        items = p.get(key) if key else None
        if type(items) is list:
            if key == "output":
                items = output_items(items) or items
            if not all(_written_again(c, original) is c for c in items) or items is not p[key]:
                p = {**p, key: [_written_again(c, original) for c in items]}
        return p
    if any(k in p for k in INTERNAL_FIELDS):
        return {k: v for k, v in p.items() if k not in INTERNAL_FIELDS}
    return p


def _local_shell(p: dict) -> dict:
    """A local shell call as Codex writes it again (judged with 0.169): its id when it has one, its ``call_id`` (null
    when missing), its status, and its action's fields alone, each null when missing."""
    a = p["action"]
    out = {"type": "local_shell_call"}
    if p.get("id") is not None:
        out["id"] = p["id"]
    out["call_id"], out["status"] = p.get("call_id"), p.get("status")
    out["action"] = {"type": a.get("type"), **{k: a.get(k) for k in LOCAL_SHELL_ACTION}}
    return out


# a tool search call's fields and its output's as Codex writes them again (judged with 0.169: another field is left out;
# an id or a status that is null or missing is left out, a call_id null or missing is sent as null)
TOOL_SEARCH = {"tool_search_call": ("execution", "arguments"), "tool_search_output": ("execution", "tools")}


def _tool_search(p: dict) -> dict:
    """A tool search call or output as Codex writes it again."""
    out = {"type": p["type"]}
    if p.get("id") is not None:
        out["id"] = p["id"]
    out["call_id"] = p.get("call_id")
    if p.get("status") is not None:
        out["status"] = p["status"]
    for k in TOOL_SEARCH[p["type"]]:
        out[k] = p.get(k)
    return out


# the fields of a message's text items, and of a call output's, Codex sends (it writes each item again: another field
# is left out, and a null annotations or logprobs; judged)
OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output")
CONTENT_FIELDS = {"input_text": frozenset(("type", "text")),
                  "output_text": frozenset(("type", "text", "annotations", "logprobs"))}


def _written_again(c, original: bool = True):
    """A message's content item, or a call output's, as Codex sends it (``c`` itself when that is what it sends)."""
    if type(c) is dict and c.get("type") == "input_image" and type(c.get("image_url")) is str:
        return _image_again(c, original)
    keep = CONTENT_FIELDS.get(c.get("type")) if type(c) is dict and type(c.get("type")) is str else None
    if keep is None or (keep.issuperset(c) and c.get("annotations", 0) is not None and c.get("logprobs", 0) is not None):
        return c
    return {k: v for k, v in c.items() if k in keep and (v is not None or k == "text")}


# what Codex sends in place of an image it does not send (its own words, 0.169)
REMOTE_IMAGE = "image content omitted because remote image URLs are not supported"
LOW_DETAIL = "image content omitted because detail 'low' is not supported; use 'high', 'original', or 'auto'"
IMAGE_FIELDS = frozenset(("type", "image_url", "detail"))


def _remote(url: str) -> bool:
    """An image URL Codex takes for a remote one: its scheme http or https, in any case (judged: ``https:x`` too)."""
    scheme, colon, _ = url.partition(":")
    return bool(colon) and scheme.lower() in ("http", "https")


def _image_again(c: dict, original: bool):
    """An ``input_image`` as Codex sends it (judged with 0.169, in a message and in a call output): a remote URL, or the
    ``low`` detail of a ``data:`` picture, as Codex's text in its place; else its ``image_url`` and ``detail`` alone (a
    null detail left out, ``original`` sent as ``high`` to a model that does not take it). (An image's data Codex
    decodes and may write again, or refuses as text: not imitated, docs/codex-rules.md.)"""
    url, d = c["image_url"], c.get("detail")
    if _remote(url):
        return {"type": "input_text", "text": REMOTE_IMAGE}
    if d == "low" and url[:5].lower() == "data:":  # (a picture Codex reads: another URL it sends as written, judged)
        return {"type": "input_text", "text": LOW_DETAIL}
    if d == "original" and not original:
        d = "high"
    elif IMAGE_FIELDS.issuperset(c) and (d is not None or "detail" not in c):
        return c  # (as written)
    out = {"type": "input_image", "image_url": url}
    if d is not None:
        out["detail"] = d
    return out


def _reasoning(p: dict) -> dict:
    """A reasoning item as Codex writes it again (judged): its id when it has one; its summary's and content's entries
    as tagged texts, nothing else of them; the content left out when no entry of it is a ``reasoning_text`` (an empty
    one too), null when missing; ``encrypted_content`` null when missing. (The scan refused any other shape.)"""
    summary, more = p.get("summary"), p.get("content")
    parts = reasoning_parts(summary, SUMMARY_TAGS) if type(summary) is list else None
    extra = reasoning_parts(more, CONTENT_TAGS) if type(more) is list else None
    if parts is None or (more is not None and extra is None):  # (not read so: the fields it knows, as written)
        return {k: v for k, v in p.items() if k in SENT_FIELDS["reasoning"]}
    out = {"type": "reasoning"}
    if p.get("id") is not None:
        out["id"] = p["id"]
    out["summary"] = [{"type": tag, "text": text} for tag, text in parts]
    if more is None:
        out["content"] = None
    elif sent_content(extra):
        out["content"] = [{"type": tag, "text": text} for tag, text in extra]
    out["encrypted_content"] = p.get("encrypted_content")
    return out


def sent_items(t, entries: list[Entry] | None = None, *, chain: bool = True,
               model: str | None = None) -> list[tuple[dict, list[int]]]:
    """What Codex sends for the file: ``(item, lines)`` per Responses item, healed as the
    client heals it (an inserted ``"aborted"`` output has no line). A fork (rule 8) starts with
    its parent's history up to the fork point, read from the parent rollout when it is found
    beside the file (its items have no line of this file); ``chain=False``: the file's own items only. ``model``: the
    model Codex is run with (None: its default; ``codex_models``)."""
    original = original_detail(model)  # (codex_models)
    entries = t.entries if entries is None else entries
    own = {id(e) for e in entries}
    files = {}
    combined: list[Entry] = []
    for pt, pentries in (fork_chain(t, entries) if chain else [(t, entries)]):
        for e in pentries:
            files[id(e)] = pt
        combined += pentries
    header = next((e for e in entries if e.kind == HEADER), None)
    if header is not None and combined and combined[0] is not header:
        combined.insert(0, header)  # the fork's own base instructions come first
    cache: dict = {}
    raw: list[dict] = []
    lines: dict[int, list[int]] = {}
    handles: dict = {}
    try:
        for e in sent_entries(combined):
            src = files.get(id(e)) or files[id(e.get("of"))]
            f = handles.get(src.path)
            if f is None:
                f = handles[src.path] = open(src.path, "rb")
            it = item_of(src, e, f, cache, original=original)
            if it is None:
                continue
            lines[id(it)] = [e.lineno] if e.lineno and (id(e) in own or id(e.get("of")) in own) else []
            raw.append(it)
    finally:
        for f in handles.values():
            f.close()
    return [(it, lines.get(id(it), [])) for it in heal(raw)]


def fork_chain(t, entries: list[Entry]) -> list[tuple]:
    """``[(transcript, entries)]`` from the oldest ancestor a fork's history starts in to ``t``:
    a fork's ``session_meta`` names the parent thread and the byte offset its history ends at
    (``history_base``); the parent is looked for under the same ``sessions`` tree."""
    from .transcript import scan

    chain = [(t, entries)]
    seen = {t.path}
    cur = entries
    while True:
        header = next((e for e in cur if e.kind == HEADER), None)
        base = header.get("history_base") if header is not None else None
        if not base:
            break
        parent = find_rollout(chain[0][0].path, base["thread_id"])
        if parent is None or parent in seen:
            break
        seen.add(parent)
        pt = scan(parent, "codex", stats=False)
        end = base.get("end_byte_offset")
        # the lines whose JSON ends by the cut (Codex reads the parent up to that byte: a line cut in two there is not
        # one of the fork's; judged: review of 2026-11-30, finding 7)
        cur = [e for e in pt.entries if end is None or e.offset + e.length <= end]
        chain.insert(0, (pt, [e for e in cur if e.kind != HEADER]))
        cur = [e for e in pt.entries if e.kind == HEADER][:1]
    return chain


FORKS_TTL = 30.0  # seconds a tree's index of forks is reused (a batch repair of a whole tree builds it once)
_FORKS: dict = {}  # tree root -> (when built, {parent thread id: [(fork path, end byte offset)]})


def forks_of(path: str, thread_id: str | None) -> list[tuple[str, int]]:
    """The rollouts that fork ``thread_id`` (the rollout at ``path``) and read it up to a byte offset:
    ``[(fork path, end_byte_offset)]``, from the other rollouts beside it, under the ``sessions`` directory it sits in
    and among the archived ones beside that (where ``find_rollout`` finds a parent). The tree's forks are indexed once
    (every rollout's first line read) and the index reused for ``FORKS_TTL`` seconds: a batch repair of thousands of
    rollouts does not list them for each one it writes."""
    import glob
    import os
    import time

    if not thread_id:
        return []
    here = os.path.dirname(os.path.abspath(path))
    trees = _trees(here)
    root = trees[0] if trees else here
    got = _FORKS.get(root)
    if got is None or time.monotonic() - got[0] > FORKS_TTL:
        files = [f for tree in trees for f in glob.glob(os.path.join(glob.escape(tree), "**", "*.jsonl"), recursive=True)]
        if not trees:
            files = glob.glob(os.path.join(glob.escape(here), "*.jsonl"))
        index: dict = {}
        for f in files:
            base = _fork_base(f)
            if base is not None and base[1] is not None:
                index.setdefault(base[0], []).append((f, base[1]))
        got = _FORKS[root] = (time.monotonic(), index)
    me = os.path.abspath(path)
    return sorted(x for x in got[1].get(thread_id, ()) if os.path.abspath(x[0]) != me)


def _fork_base(path: str) -> tuple | None:
    """(the parent thread id, the end byte offset) a rollout's first line names, when it is a fork's session_meta."""
    from .jsonl import loads

    try:
        with open(path, "rb") as f:
            first = f.readline(1 << 24)
    except OSError:
        return None
    if b'"history_base"' not in first:
        return None
    try:
        obj = loads(first)
        base = obj["payload"]["history_base"]
        end = base.get("end_byte_offset")
        return (base["thread_id"], end if type(end) is int else None)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def find_rollout(near: str, thread_id: str) -> str | None:
    """The rollout of ``thread_id``: beside ``near``, anywhere under the ``sessions`` directory
    ``near`` sits in (Codex's ``sessions/YYYY/MM/DD/rollout-<ts>-<id>.jsonl``), or among the archived ones beside that
    directory (``archived_sessions/rollout-<ts>-<id>.jsonl``, where ``codex archive`` moves a rollout: Codex still
    reads a fork's parent there, judged)."""
    import glob
    import os

    here = os.path.dirname(os.path.abspath(near))
    found = glob.glob(os.path.join(glob.escape(here), f"*{thread_id}*.jsonl"))
    trees = _trees(here) if not found else ()
    for tree in trees:
        found = glob.glob(os.path.join(glob.escape(tree), "**", f"rollout-*{thread_id}.jsonl"), recursive=True)
        if found:
            break
    found = [p for p in found if os.path.abspath(p) != os.path.abspath(near)]
    return sorted(found)[0] if found else None


def _trees(here: str) -> tuple:
    """The ``sessions`` directory ``here`` is in and the ``archived_sessions`` beside it (Codex's home), or ()."""
    import os

    root = here
    while os.path.basename(root) != "sessions" and os.path.dirname(root) != root:
        root = os.path.dirname(root)
    if os.path.basename(root) != "sessions":
        return ()
    return root, os.path.join(os.path.dirname(root), "archived_sessions")
