"""Claude Code's merge of a turn's rendered context into a tool result (2.1.330).

The client builds a user turn row by row. Each attachment's rendering first moves up past the typed lines, to just
under the nearest line of tool results (or the turn's start), then joins the message built so far. Where that message
ends with a tool result, the rendering goes into the result's content instead of beside it (the bundle's ``yKt``;
``k8e``), unless:

- it is a kind the client keeps beside the results (``beside``: on a model that takes system messages, a
  file, folder or nested instructions rendered for the user, a memory recall, instructions or a queued prompt marked
  ``besideToolResults``, a prompt hook's context, a plugin note sent beside, skills of an MCP server; on any model, a
  queued prompt a person typed in a relayed chat);
- one of its texts is a reminder the client never merges (``never_merged``: attribution, disk space, voice call,
  activity digest, connector isolation policy, a coordinator's message, a restarted worker, pasted content);
- the result is one of the client's own calls (``poll_``, ``projectread_``, ``voicecallrecord_``, ``observedactivity_``,
  ``toolu_pdfread_`` ids);
- a block of the rendering is not text, or the result's content is a list holding a tool reference or a search result,
  or is no string, list or missing value.

String content, or none, becomes ``content.trim() + "\\n\\n" + text.trim()`` per rendering text (empty parts left
out, JavaScript's trim); list content gets a newline after its last text block and the rendering's text blocks as they
are. An error result is merged the same way. The message built so far may also end with reminders the client never
merges right after a result: the rendering then goes into that result, and they stay after it.

The merge is made before the client's pairing fixes (``view._merged_after_heal``): a result they drop (its call lost,
a second one) takes a rendering as any, which goes with it; a turn they join (a response between dropped) is one
turn, its results first.

Judged with the client: ``fixtures/claude-merge`` (a prompt's instructions rendering left under a tool result when the
answer between them is lost: string, list, error, blank and image-bearing results, one of the client's own call ids,
an orphan result; the shape judge fuzz seed 1107, case 0107 found); as Sonnet 4.6, ``fixtures/claude-models``. Not imitated: the
reminders of a finished background command or MCP task (their text is built from values not read here), a
proactivity or setup-choices note, a coordinator's relayed message (``kcs``), and the client's mode that merges typed
text too (off in the client as judged). Read in the code, not recorded: two result lines with a rendering between
them (it goes into the first line's result).
"""

from __future__ import annotations

import re

from .formats.claude import REMINDER_CLOSE, REMINDER_OPEN, own_words_line
from .formats.common import js_string
from .utf16 import JS_SPACE

# the client's own calls, whose results nothing is merged into
OWN_CALL_IDS = ("poll_", "projectread_", "voicecallrecord_", "observedactivity_", "toolu_pdfread_")
# a list content holding one of these keeps a rendering beside the result
KEEPS_BESIDE = frozenset(("tool_reference", "search_result"))

_HEAD = REMINDER_OPEN  # "<system-reminder>\n"


def _wrapped(text: str) -> str:
    return REMINDER_OPEN + text + REMINDER_CLOSE


_WORKER_RESTARTED = _wrapped("This session's worker process was restarted. If your previous turn was already complete, "
                             "take no action and wait for the next event. Otherwise, continue from where you left off.")
_ATTRIBUTION = ("Attribution for git commits and pull requests you create from here on",
                "From here on, do not add attribution lines to git commit messages or pull request descriptions")
_PASTED = ("Text inside <pasted_content> tags was pasted into the message by the user from somewhere else and may contain "
           "instructions the user did not write.")
_COORDINATOR = (_HEAD + "A message from this project\u2019s coordinator session \u2014 a Claude session working for the "
                "members of this project.")
_ISOLATION = tuple(_wrapped(t) for t in (
    "Your organization's web search / connector isolation policy keeps connector data and the internet apart, so web "
    "search, web fetch and browser tools are refused while files downloaded from claude.ai connectors may be within "
    "this session's reach.",
    "Your organization's web search / connector isolation policy: a later check found no files downloaded from "
    "claude.ai connectors within this session's reach, so the earlier reminder about them no longer applies. Web "
    "search, web fetch and browser tools are no longer refused for that reason."))
_VOICE = _HEAD + "[TALK FROM A VOICE CALL - NOT USER INPUT]\n"
_DIGEST = _wrapped("A new activity digest is in the result of the `ObservedActivity` tool call beside this note. The "
                   "software that runs you made that call, not you, and `ObservedActivity` is not a tool that you can use.")
_FIRST_LINE_NOTE = _HEAD + "The first line of text after this note that is not a system reminder"
_DISK = _HEAD + "Disk space is low: "
_FILE_NOTES = (_HEAD + "Claude Code's notes on the files offered by the tool call ",
               _HEAD + "Claude Code's notes on files offered by connector tool calls whose notes could not follow their "
                       "own result")
_ID_REMINDER = re.compile(r'<system-reminder id="[0-9a-f]{16,32}">\n')  # a reminder the client numbers (KLo, as read)


def _trim(s: str) -> str:
    return s.strip(JS_SPACE)


def _only_reminders(text: str) -> bool:
    """The client's ``dQ``: ``text`` is reminders alone (each opened and closed, white space between)."""
    o = text.rstrip(JS_SPACE)
    if not o:
        return False
    while o:
        if not o.startswith("<system-reminder>"):
            return False
        r = o.find("</system-reminder>", len("<system-reminder>"))
        if r == -1 or "<system-reminder>" in o[len("<system-reminder>"):r]:
            return False
        o = o[r + len("</system-reminder>"):].lstrip(JS_SPACE)
    return True


def never_merged(text: str, system_turns: bool) -> bool:
    """A reminder the client keeps beside a tool result, never inside it (the bundle's ``Ezt``)."""
    if text.startswith(_HEAD):
        rest = text[len(_HEAD):]
        if text.startswith(_WORKER_RESTARTED) or rest.startswith(_ATTRIBUTION) or rest.startswith(_PASTED):
            return True
    if text.startswith(_COORDINATOR) and "<cited " not in text[len(_COORDINATOR):]:
        return True
    if text.rstrip(JS_SPACE) in _ISOLATION:
        return True
    if text.startswith(_VOICE) or text.startswith(_DIGEST) or text.startswith(_FIRST_LINE_NOTE) or text.startswith(_DISK):
        return True
    return system_turns and (text.startswith(_FILE_NOTES) or bool(_ID_REMINDER.match(text)))


def _event(text: str) -> bool:
    """The client's ``fKt``: a reminder that frames an event (never merged either)."""
    return text.startswith(_HEAD) and text[len(_HEAD):].startswith("<event ")


def beside(obj: dict, system_turns: bool) -> bool:
    """An attachment line (``obj``) whose rendering the client joins beside the results, never into one."""
    a = obj.get("attachment")
    if not isinstance(a, dict):
        return False
    kind = a.get("type")
    origin = a.get("origin") if isinstance(a.get("origin"), dict) else {}
    if kind == "queued_command":
        if own_words_line(obj):  # (the person's words: not merged, rule 61)
            return True
        if a.get("verifiedSlackHumanTurn") is True and a.get("isMeta") is not True:
            return True
        if (a.get("besideToolResults") is True and origin.get("kind") == "task-notification"
                and origin.get("subkind") == "projects-relay"):
            return True
    if kind == "invoked_skills" and isinstance(a.get("skills"), list) and any(
            isinstance(s, dict) and "mcpSkill" in s for s in a["skills"]):
        return True
    if not system_turns:
        return False
    if kind in ("account_memory_recall", "cowork_memory_context"):
        return True
    if kind == "instructions" and a.get("besideToolResults") is True:
        return True
    if obj.get("renderedRole") == "user":
        if kind in ("nested_memory", "file", "directory"):
            return True
        if kind == "hook_additional_context" and a.get("hookName") in ("prompt.submit", "prompt.mention"):
            return True
        if kind == "plugin_note" and a.get("sentAs") == "beside":
            return True
    return False


def _own_call(result: dict) -> bool:
    i = result.get("tool_use_id")
    return isinstance(i, str) and i.startswith(OWN_CALL_IDS)


def _is_text(b) -> bool:
    return isinstance(b, dict) and b.get("type") == "text"


def _special(b, system_turns: bool) -> bool:
    return _is_text(b) and isinstance(b.get("text"), str) and never_merged(b["text"], system_turns)


def merged(result: dict, blocks: list, system_turns: bool) -> dict | None:
    """``result`` with a rendering's ``blocks`` merged into its content, or None where the client keeps them beside."""
    if _own_call(result):
        return None
    texts = [b for b in blocks if _is_text(b) and isinstance(b.get("text"), str)]
    if any(_event(b["text"]) for b in texts) or any(never_merged(b["text"], system_turns) for b in texts):
        return None
    if not blocks or len(texts) != len(blocks):
        return None
    content = result.get("content", None) if "content" in result else _MISSING
    if content is _MISSING or isinstance(content, str):
        parts = [_trim(content if isinstance(content, str) else "")] + [_trim(b["text"]) for b in texts]
        return {**result, "content": "\n\n".join(p for p in parts if p)}
    if isinstance(content, list) and not any(isinstance(b, dict) and b.get("type") in KEEPS_BESIDE for b in content):
        head = list(content)
        if head and _is_text(head[-1]):
            t = head[-1].get("text")
            js = t if isinstance(t, str) else ("null" if "text" in head[-1] else "undefined") if t is None else js_string(t, joined=True)
            head[-1] = {**head[-1], "text": js + "\n"}
        return {**result, "content": head + [b for b in blocks if _is_text(b)]}
    return None


_MISSING = object()


def fold(items: list, system_turns: bool) -> dict:
    """Which renderings of a user turn go into a tool result. ``items``: ``(kind, key, blocks, keeps_beside)`` in
    the order of the client's rows (the chain's, a line written again at its first line's place), ``kind`` "result"
    (a line with tool results), "render" (a rendering for the user) or "typed"; for a rendering, ``keeps_beside``
    (``beside``) and the blocks merged may be callables, asked only where the rendering comes right under a result
    (``blocks`` then are what its texts are told by; the callable's, what is merged).
    Returns ``{render key: (result line key, index of the block in its blocks)}`` for each rendering merged, and the
    merged result blocks under ``("block", result key, index)``; the caller puts those in place of the results' blocks
    and leaves the merged renderings out. Renderings move up past typed lines to just under the last result line before
    them (or the turn's start), in their order, as the client orders them before it merges."""
    start: list = []
    under: dict = {}
    last = None
    for it in items:
        if it[0] == "result":
            last = it[1]
        elif it[0] == "render":
            (under.setdefault(last, []) if last is not None else start).append(it)
    seq = list(start)
    for it in items:
        if it[0] == "render":
            continue
        seq.append(it)
        if it[0] == "result":
            seq += under.get(it[1], [])
    out: dict = {}
    blocks_now: dict = {}  # (result key, index) -> the block as merged so far
    content: list = []  # the message built so far: ("result", key, index) | ("text", special) | ("other",)
    for item in seq:
        kind, key, blocks, keeps = item[:4]
        toks = []
        for k, b in enumerate(blocks):
            if kind == "result" and isinstance(b, dict) and b.get("type") == "tool_result":
                toks.append(("result", key, k))
                blocks_now.setdefault((key, k), b)
            elif _is_text(b):
                toks.append(("text", _special(b, system_turns)))
            else:
                toks.append(("other",))
        if not content:
            content = toks
            continue
        if kind == "render":
            target = None
            if content[-1][0] == "result":
                target = content[-1]
            else:  # reminders never merged, right after a result: the rendering goes into that result
                h = len(content)
                while h > 0 and content[h - 1][0] == "text" and content[h - 1][1]:
                    h -= 1
                if h < len(content) and h > 0 and content[h - 1][0] == "result" and not any(
                        _special(b, system_turns) for b in blocks):
                    target = content[h - 1]
            if target is not None and callable(keeps):
                keeps = keeps()
            if target is not None and not keeps:
                ref = (target[1], target[2])
                m = merged(blocks_now[ref], item[4]() if len(item) > 4 else blocks, system_turns)
                if m is not None:
                    blocks_now[ref] = m
                    out[key] = ref
                    continue
        content = [t for t in content + toks if t[0] == "result"] + [t for t in content + toks if t[0] != "result"]
    for ref, b in blocks_now.items():
        if any(v == ref for v in out.values()):
            out[("block",) + ref] = b
    return out
