"""Mutated recorded sessions against the real agents (test support for ``tests/test_judge_fuzz.py``).

The fuzz test (``tests/test_fuzz.py``) checks ctxtool against itself: no crash, and what repair
writes passes validate and repair --check. This one asks the owning agent. Each case is a session
its agent wrote (or one repair wrote and the agent loads), changed by the fuzz mutations
(``tests/support/fuzz.py``: flipped bytes, truncation, lines deleted, duplicated or swapped,
values replaced by odd ones), and then:

- the view of the damaged file is what the agent sends for it (when the agent resumes it at all);
- the file repair writes is resumed by the agent, well paired, its view again what the agent
  sends, and every tool result the agent sent for the damaged file (with its call) is still sent.

``problems(agent, path)`` returns what is wrong (empty: nothing). Known differences that are
not ctxtool's reading are left out, each said where it is.
"""

from __future__ import annotations

import json
import os
import re
import random
import shutil

from ctxtool import codex_rules
from ctxtool.claude_chain import MISSING_RESULT
from ctxtool.errors import InputError
from ctxtool.repair import repair_file
from ctxtool.transcript import scan
from ctxtool.view import context_entries, sent_messages

from . import fuzz

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
AGENTS = ("pi", "claude", "codex")
REFUSED = "refused"


# recordings added after the judge fuzz began, with the first seed whose cases draw on them: a seed always gives
# the same cases (the seeds and cases named in the docs and commits stay reproducible)
JOINED_AT = {"rewound_sdk.jsonl": 800, "workday.jsonl": 827, "interrupted_by_user.jsonl": 837, "hooks.jsonl": 861, "media.jsonl": 861, "compacted_twice.jsonl": 869,
             "project_docs.jsonl": 1038, "commands.jsonl": 1038, "mcp.jsonl": 1046,
             "image_mention.jsonl": 1101, "mention_kinds.jsonl": 1101, "citations_text.jsonl": 1101,
             "path_inputs.jsonl": 1104, "subagent_fg_parallel.jsonl": 1104, "instructions_changed.jsonl": 1104,
             "sonnet_session.jsonl": 1118, "model_switch.jsonl": 1118}
# sessions the client recorded under models that take no system messages (Sonnet 4.6, Haiku 4.5): the judge resumes
# them with the model it restores (docs/claude-code-rules.md rule 57)
OTHER_MODELS = ("sonnet_session.jsonl", "model_switch.jsonl")


# the first seed whose cases draw on ``fuzz.EXTENDED`` too (a key left out, an id relinked, a torn line, NULs)
EXTENDED_FROM = 1000


def sources(agent: str, seed: int | None = None) -> list[str]:
    """The agent's own files: recorded by the real client (Claude Code, Codex; pi's own SessionManager),
    and for pi the repair cases and what repair made of them (each judged by the real pi in
    ``test_repair_pi.py``). ``seed``: those the judge fuzz draws on at that seed (``JOINED_AT``; None: all)."""
    if agent == "claude":
        d = os.path.join(FIXTURES, "claude-recorded")
        return [os.path.join(d, n) for n in sorted(os.listdir(d))
                if n.endswith(".jsonl") and ".agent-" not in n and not n.startswith("subagent")
                and (seed is None or seed >= JOINED_AT.get(n, 0))] + [
            os.path.join(FIXTURES, "claude-models", n) for n in OTHER_MODELS if seed is None or seed >= JOINED_AT[n]]
    if agent == "codex":
        d = os.path.join(FIXTURES, "codex-recorded")
        return [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.endswith(".jsonl") and not n.startswith("forked")]
    d = os.path.join(FIXTURES, "repair")
    rec = os.path.join(FIXTURES, "pi-recorded")  # written by pi's own SessionManager
    return [os.path.join(rec, n) for n in sorted(os.listdir(rec)) if n.endswith(".jsonl")] + \
        [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.startswith("pi-") and n.endswith(".jsonl")]


def source_of(agent: str, name: str) -> str:
    """The path of the agent's file named ``name`` that ``cases`` draws on."""
    return next(p for p in sources(agent) if os.path.basename(p) == name)


def cases(agent: str, seed: int, n: int):
    """``(name, source file name, bytes)``: the same seed always gives the same cases."""
    srcs = sources(agent, seed)
    data = [open(p, "rb").read() for p in srcs]
    r = random.Random(seed)
    for i in range(n):
        k = i % len(srcs)
        out = data[k]
        for _ in range(r.choice((1, 1, 2))):
            out = fuzz.mutate(r, out, extended=seed >= EXTENDED_FROM)
        yield f"{agent}-{seed}-{i:04d}", os.path.basename(srcs[k]), out


# ----------------------------------------------------------------------------- each agent's reading

def _pi_judge(path: str):
    from .pi_agent import load_with_pi

    r = load_with_pi(path, check=False)
    if not r.get("ok") or (r.get("rewritten") and not r.get("llmMessages") and _wiped(path, r.get("fileAfter"))):
        return REFUSED  # pi could not load it, or wiped it (a torn header: what repair is for)
    out = []
    for m in r["llmMessages"]:
        c = m.get("content")
        # an id of another type (a damaged line): ctxtool keys such a call as "" (its view prints the value)
        calls = [_str_or_empty(b.get("id")) for b in c if isinstance(b, dict) and b.get("type") == "toolCall"] if isinstance(c, list) else []
        tid = m.get("toolCallId")
        out.append((m["role"], tid if isinstance(tid, str) else ("" if m["role"] == "toolResult" else None), calls,
                    m.get("stopReason") if m["role"] == "assistant" and isinstance(m.get("stopReason"), str) else None))
    return out


def _entries(lines) -> int:
    """How many of ``lines`` (text) are lines besides a session header (a file of a header alone, which pi loads as an
    empty session, is not a refusal)."""
    return sum(1 for line in lines if line.strip(_ASCII_SPACE) and '"type":"session"' not in line.replace(" ", ""))


_ASCII_SPACE = " \t\n\r\x0b\x0c"  # (what bytes.strip() strips: a line of other white space is a line)


def _wiped(path: str, after) -> bool:
    """Whether pi, rewriting the file as it loaded it, left out lines it held besides its header (a torn header: pi
    starts the session again). A file pi rewrote whole (its migration of an older version: every line kept, ids
    given), whose lines give no message, is no refusal (judge fuzz seed 1127 of pi's, case 0086: repair dropped the
    only message, an orphan result, and left a line of an unknown type, which pi kept)."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        held = _entries(f)
    if not held:
        return False
    return not isinstance(after, str) or _entries(after.splitlines()) < held


def _str_or_empty(v):
    return v if isinstance(v, str) else ""


def _pi_view(path: str):
    out = []
    for e in context_entries("pi", scan(path).entries):
        rid = e.results[0].id if e.role == "toolResult" and e.results else None
        out.append((e.role, rid, [c.id for c in e.calls], e.stop if e.role == "assistant" else None))
    return out


def _pi_results(sent) -> set:
    # pi-ai leaves out an errored or aborted turn when it sends (below llmMessages): so are its results
    calls = {c for role, _, cs, stop in sent if role == "assistant" and stop not in ("error", "aborted") for c in cs}
    return {rid for role, rid, _, _ in sent if role == "toolResult" and rid in calls}


class _Conversation(list):
    """``claude_agent.conversation``'s messages, and the ``<system-reminder>`` texts it leaves out, sorted (their
    placement is not imitated, their text is: a task notification's framing, judge finding of 2026-11-28), or None
    where they are not compared (a compaction request; a history ending with a user message: ``reminder_texts``)."""

    reminders: list | None = None


def _claude_judge(path: str):
    from .claude_agent import conversation, reminder_texts, resume_payload

    try:
        r = resume_payload(path)
    except (AssertionError, RecursionError):
        return REFUSED
    conv = _Conversation(conversation(r["messages"]))
    if r["compacting"] and conv and conv[-1][0] == "user":
        # a file past the auto-compact threshold: the client's first request summarizes it, with its
        # instruction in place of the reply "No response requested." it sends on an ordinary resume
        conv.append(["assistant", [("text", "No response requested.")]])
    conv.reminders = None if r["compacting"] or _rendered_otherwise(path) else reminder_texts(r["messages"])
    return conv


# the attachment kinds the client renders from their data when the recorded rendering fails its check (probed on every
# kind recorded, each rendering made []: the attribution, judge fuzz seed 562, case 0070: its content made ""; the file
# attachment, recorded later, with [], [""], ["", ""] and ["x", ""], 2026-11-29; the model's, recorded later still,
# judge fuzz seed 1158, case 0046, not imitated: docs/claude-code-rules.md)
RENDERED_FROM_DATA = frozenset({"remote_session_change", "file", "model"})


def _rendered_otherwise(path: str) -> bool:
    """An attachment line whose recorded rendering is there but no list of objects with a string ``content``, or one
    of ``RENDERED_FROM_DATA`` whose rendering gives no text: the client renders such an attachment from its data,
    which ctxtool does not imitate (docs/claude-code-rules.md)."""
    with open(path, "rb") as f:
        for line in f:
            if b'"rendered"' not in line and b'"remote_session_change"' not in line:
                continue
            try:
                obj = json.loads(line.decode("utf-8", "replace"))  # (as Node reads the file: judge fuzz seed 896, a key's byte flipped)
            except ValueError:
                continue
            except RecursionError:  # (nested past the stack: a rendering nested so deep is no string, judge fuzz seed 286)
                return True
            if not isinstance(obj, dict) or obj.get("type") != "attachment":
                continue
            r = obj.get("rendered")
            if r is not None and not (isinstance(r, list) and all(isinstance(x, dict) and isinstance(x.get("content"), str)
                                                                    for x in r)):
                return True
            att = obj.get("attachment")
            # (the client's check of a rendering wants a list of one or more, each content non-empty: one that fails it
            # is rendered from the data of these kinds)
            if isinstance(att, dict) and isinstance(att.get("type"), str) and att["type"] in RENDERED_FROM_DATA and \
                    not (isinstance(r, list) and r and all(x["content"] for x in r)):
                return True
    return False


def _claude_view(path: str):
    from .claude_agent import conversation, reminder_texts

    # (the judge's client talks to a local server: it drops the thinking other models wrote, claude_models)
    sent = sent_messages(scan(path), foreign_thinking=True)
    conv = _Conversation(conversation(sent))
    conv.reminders = reminder_texts(sent)
    return conv


def _claude_results(sent) -> set:
    calls = {_hashable(b[1]) for _, blocks in sent for b in blocks if b[0] == "tool_use"}
    return {(_hashable(b[1]), b[2]) for _, blocks in sent for b in blocks
            if b[0] == "tool_result" and _hashable(b[1]) in calls}


def _hashable(v):
    """A tool id as a set member: an id written as an object or a list (judge fuzz seed 720) by its JSON."""
    return ("json", json.dumps(v, sort_keys=True)) if isinstance(v, (dict, list)) else v


def _claude_paired(sent) -> list:
    from .claude_agent import well_paired

    return well_paired([{"role": role, "content": [_claude_block(b) for b in blocks]} for role, blocks in sent])


def _claude_block(b) -> dict:
    if b[0] == "tool_use":
        return {"type": "tool_use", "id": b[1], "name": b[2]}
    if b[0] == "tool_result":
        return {"type": "tool_result", "tool_use_id": b[1]}
    return {"type": "text", "text": "x"}


def _codex_judge(path: str):
    from .codex_agent import resume_payload

    try:
        return resume_payload(path)["history"]
    except (AssertionError, RecursionError):
        return REFUSED


def _codex_view(path: str):
    return [it for it, _ in codex_rules.sent_items(scan(path))]


def _codex_results(sent) -> set:
    calls = {it.get("call_id") for it in sent if it.get("type") in ("function_call", "custom_tool_call", "local_shell_call")}
    return {(it["call_id"], repr(it.get("output"))) for it in sent
            if it.get("type") in ("function_call_output", "custom_tool_call_output") and it.get("call_id") in calls}


def _differ(agent: str, view, sent) -> list[str]:
    if agent == "codex":
        from .codex_agent import _turn_context_item, compare

        # the judge takes every context item at the end of the request for the new turn's fresh
        # context (``strip_turn``): a file whose own items end with such context is read the same way
        end = len(view)
        while end > 0 and _turn_context_item(view[end - 1]):
            end -= 1
        return compare(view[:end], sent)
    out = []
    if agent == "claude" and sent.reminders is not None and view.reminders != sent.reminders:
        ours, theirs = set(view.reminders or ()), set(sent.reminders)
        out.append(f"reminder text: view only {sorted(ours - theirs)[:1]!s:.300} != sent only {sorted(theirs - ours)[:1]!s:.300}")
    if view != sent:
        k = next((k for k, (a, b) in enumerate(zip(view, sent)) if a != b), min(len(view), len(sent)))
        out.append(f"message {k}: view {str(view[k:k + 1])[:300]} != sent {str(sent[k:k + 1])[:300]}")
    return out


def _paired(agent: str, sent) -> list:
    if agent == "codex":
        from .codex_agent import well_paired

        return well_paired(sent)
    if agent == "claude":
        return _claude_paired(sent)
    return []  # pi: the repaired file's view is checked by validate in the fuzz test


READERS = {
    "pi": (_pi_judge, _pi_view, _pi_results),
    "claude": (_claude_judge, _claude_view, _claude_results),
    "codex": (_codex_judge, _codex_view, _codex_results),
}


CODEX_DEPTH = 128  # serde_json refuses a line nested this deep (docs/codex-rules.md, known differences)


def nesting(line: bytes) -> int:
    """How deep the containers of a JSON line nest (brackets inside strings not counted)."""
    depth = most = 0
    in_string = escaped = False
    for ch in line.decode("utf-8", "replace"):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            most = max(most, depth)
        elif ch in "]}":
            depth -= 1
    return most


def known_difference(agent: str, path: str) -> str | None:
    """A documented difference ctxtool does not imitate, met in ``path`` (the case is then not judged)."""
    if agent == "codex":
        with open(path, "rb") as f:
            for line in f:
                if line.count(b"[") + line.count(b"{") >= CODEX_DEPTH and nesting(line) >= CODEX_DEPTH:
                    return "a line nested 128 levels deep, which Codex skips"
                if _INT_TAG.search(line):
                    return "a tag written as a number, which serde reads as the variant of that index"
    if agent == "pi" and _links_by_a_value(path, "id", "parentId"):
        return "a parentId naming another line's id written as a number or true, which pi's Map links"
    if agent == "claude" and _links_by_a_value(path, "uuid", "parentUuid"):
        return "a parentUuid naming another line's uuid written as a number or true, which the client's Map links"
    return None


def _links_by_a_value(path: str, id_key: str, parent_key: str) -> bool:
    """A line whose parent (``parent_key``) is a number (not 0) or ``true`` that another line has as its id
    (``id_key``): the agent's map of ids links them (SameValueZero: ``5`` is ``5.0``, 39 nines are ``1e39``; 0 is
    no parent, an array only itself); ctxtool reads an id that is no string as none, so that line's parent as lost
    (pi: README, repair's "Structure", judge fuzz seed 723, case 0007; Claude Code: docs/claude-code-rules.md,
    not imitated, seed 835, case 0028; both probed with the agent)."""
    ids, parents = set(), set()
    with open(path, "rb") as f:
        for line in f:
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(obj, dict):
                for field, into in ((id_key, ids), (parent_key, parents)):
                    v = obj.get(field)
                    if v is True or (type(v) in (int, float) and v != 0):
                        into.add(True if v is True else _js_number(v))
    return bool(ids & parents)


def _js_number(v) -> float:
    try:
        return float(v)
    except OverflowError:  # past a double: JavaScript reads it as Infinity
        return float("inf") if v > 0 else float("-inf")


_INT_TAG = re.compile(rb'"type":\s*-?\d')  # docs/codex-rules.md, known differences (judge fuzz, seeds 58, 88)


def problems(agent: str, path: str, workdir: str, source: str | None = None) -> list[str]:
    """What is wrong with ctxtool's reading and repair of ``path`` as its agent judges it. ``source``: the agent's own
    file the case was made from (the recording), when there is one: a repaired file the agent reads as it reads
    that file lost nothing, whatever the agent made of the damage."""
    judge, view, results = READERS[agent]
    out: list[str] = []
    if known_difference(agent, path):
        return out
    before = judge(path)
    if before != REFUSED:
        try:
            out += [f"damaged file: {d}" for d in _differ(agent, view(path), before)]
        except InputError:
            pass  # ctxtool refuses a file the agent resumes: a finding of its own kind, not judged here
    repaired = os.path.join(workdir, "repaired", os.path.basename(path))
    os.makedirs(os.path.dirname(repaired), exist_ok=True)
    try:
        report = repair_file(path, output=repaired)
    except InputError:
        return out
    if not report.written:
        return out
    after = judge(repaired)
    if after == REFUSED:
        if before != REFUSED:
            out.append("the agent resumed the damaged file but not the repaired one")
        return out
    out += [f"repaired file: {d}" for d in _differ(agent, view(repaired), after)]
    out += [f"repaired file not well paired: {p}" for p in _paired(agent, after)[:3]]
    if before != REFUSED:
        lost = results(before) - results(after)
        if any(c.kind == "tool-call" for c in report.changes):
            # OpenClaw's rules, which repair follows: an unusable tool call is dropped (a turn with signed
            # thinking whole, as it cannot be edited), and with it the results that answered it
            gone = {c.id for c in report.changes if c.kind in ("tool-call", "orphan-result", "errored-turn-result")}
            lost = {r for r in lost if (r[0] if isinstance(r, tuple) else r) not in gone}  # (id, content) or id
            if None in gone:  # a call dropped for an id that is no string (an object: judge fuzz seed 720; a number:
                # seed 828, case 0014, whose result was the client's "interrupted" one), its result too
                lost = {r for r in lost if not (isinstance(r, tuple) and not isinstance(r[0], str))}
        if agent == "codex" and any(c.kind == "duplicate-result" for c in report.changes):
            # a second output for a call, which Codex sends as written and the API refuses: repair keeps the first and
            # drops the later one, named in its report and kept in the backup (rule 12). Its text is lost from what
            # Codex sends where it differs from the first's (judge fuzz seed 1082, case 0084: another call's output
            # given this call's id)
            twice = {c.id for c in report.changes if c.kind == "duplicate-result"}
            lost = {r for r in lost if r[0] not in twice}
        if agent == "codex":
            # Codex's own "aborted" for an output it could not read, where repair restored the real one
            answered = {cid for cid, _ in results(after)}
            lost = {r for r in lost if not (r[1] == repr("aborted") and r[0] in answered)}
        if agent == "pi" and any(c.kind == "header" and "read by pi as version 1" in c.detail for c in report.changes):
            # the header's version restored (repair._restore_version): pi walks the tree the entries form instead of
            # every line in file order, so a result on another branch is no longer sent; its line stays in the file
            kept = open(repaired, "rb").read()
            lost = {r for r in lost if json.dumps(r[0] if isinstance(r, tuple) else r).encode() not in kept}
        if agent == "claude":
            # a result the client made up for a call (its "missing" one), where repair gave the call one of its own
            # (repair_pairing._answered_only_later: judge fuzz seed 1011, case 0115): no result was lost
            answered = {r[0] for r in results(after)}
            lost = {r for r in lost if not (r[1] == json.dumps(MISSING_RESULT) and r[0] in answered)}
        if agent == "codex" and any(c.kind == "line-envelope" and c.detail.startswith("compacted ") for c in report.changes):
            # a compaction Codex skipped for its envelope alone, mended (repair.fix_envelopes): Codex sends its summary
            # in place of the history before it again, as when it wrote it (judge fuzz seed 1015, case 0009: the
            # ordinal made []); the lines of that history stay in the file
            kept = open(repaired, "rb").read()
            lost = {r for r in lost if json.dumps(r[0]).encode() not in kept}
        if lost and source is not None and after == judge(source):
            # repair restored the recorded history as the agent reads it: what the agent sent for the damage and not
            # for the recording was the damage's (judge fuzz seed 1023, case 0026: a line given an earlier line's
            # uuid, which the client's walk took into the branch the user had rewound away from)
            lost = set()
        if lost:
            out.append(f"tool results the agent sent before repair and not after: {sorted(map(str, lost))[:3]}")
    return out


def write(tmp: str, source_name: str, data: bytes) -> str:
    d = os.path.join(tmp, "case")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    p = os.path.join(d, source_name)
    with open(p, "wb") as f:
        f.write(data)
    return p
