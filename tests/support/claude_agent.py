"""Run the real Claude Code client offline and record what it sends (test support).

The harness lives in ``tests/claude_harness`` (a pinned ``@anthropic-ai/claude-code``; its
native Linux binary ships inside the registry package ``@anthropic-ai/claude-code-linux-x64``,
so ``npm ci --ignore-scripts`` gets a working ``claude``). Install it with::

    make claude-harness

Every run happens in a sandbox: ``HOME`` and ``CLAUDE_CONFIG_DIR`` in a temporary directory,
``ANTHROPIC_BASE_URL`` pointing at :class:`tests.support.fake_anthropic.FakeAnthropic` on
127.0.0.1, telemetry, updates and other nonessential traffic off. Nothing leaves the machine.

Two uses:

- :func:`resume_payload` is the judge of a file: Claude Code resumes a copy of it and the
  ``messages`` of its first ``/v1/messages`` request are exactly what it sends for that file,
  less what the new prompt adds at the end (see :func:`strip_prompt`).
- :class:`ClaudeSandbox` drives the client through scripted model responses (parallel tool
  calls, thinking, errors), so it runs real tools and writes a genuine transcript: how the
  recorded fixtures in ``fixtures/claude-recorded/`` are made.

Standard library only (plus the fake server).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any, Iterable

from .fake_anthropic import MESSAGES_PATH, FakeAnthropic
from .sandbox import Run as BaseRun
from .sandbox import Sandbox, is_uuid, serving, unavailable_reason

HARNESS_DIR = Path(__file__).resolve().parent.parent / "claude_harness"
BINARY = HARNESS_DIR / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
PROMPT = "ctxtool-judge: reply with one word."
DEFAULT_TIMEOUT = 90.0


def claude_binary() -> str:
    return os.environ.get("CTXTOOL_CLAUDE_BIN") or str(BINARY)


@functools.lru_cache(maxsize=1)
def claude_unavailable_reason() -> str | None:
    """Why the Claude Code harness cannot run here, or None when it can."""
    return unavailable_reason(claude_binary(), "Claude Code", "claude-harness", "Claude Code")


def project_dir_name(cwd: str) -> str:
    """Claude Code's folder name for a working directory: every non-alphanumeric character becomes '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


class Run(BaseRun):
    """One Claude Code run (``messages_requests``: its ``/v1/messages`` calls; ``result``: its JSON output)."""

    @property
    def messages_requests(self) -> list:
        return [r for r in self.requests if r.path == MESSAGES_PATH and isinstance(r.body, dict)
                and isinstance(r.body.get("messages"), list)]

    @property
    def result(self) -> dict:
        try:
            return json.loads(self.stdout)
        except ValueError:
            return {}


class ClaudeSandbox(Sandbox):
    """A throwaway HOME + project directory in which the real client runs against the fake server."""

    prefix = "ctxtool-claude-"

    def __init__(self, root: str | None = None, *, cwd_name: str = "proj"):
        super().__init__(root, cwd_name=cwd_name)
        self.config = os.path.join(self.home, ".claude")
        os.makedirs(self.config, exist_ok=True)

    @property
    def project_dir(self) -> str:
        return os.path.join(self.config, "projects", project_dir_name(self.cwd))

    def session_path(self, session_id: str) -> str:
        return os.path.join(self.project_dir, f"{session_id}.jsonl")

    def install(self, path: str, session_id: str | None = None) -> str:
        """Copy a transcript where the client looks for it; returns its session id."""
        session_id = session_id or Path(path).stem
        os.makedirs(self.project_dir, exist_ok=True)
        shutil.copyfile(path, self.session_path(session_id))
        return session_id

    def sessions(self) -> list[str]:
        d = self.project_dir
        return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".jsonl")) if os.path.isdir(d) else []

    def env(self, base_url: str, extra: dict | None = None) -> dict:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.home,
            "CLAUDE_CONFIG_DIR": self.config,
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-ctxtool-test",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "IS_SANDBOX": "1",  # tests run as root in CI containers: lets --dangerously-skip-permissions run
        }
        if extra:
            env.update(extra)
        return env

    def run(self, prompt: str, *, resume: str | None = None, script: Iterable[Any] = (),
            args: Iterable[str] = (), timeout: float = DEFAULT_TIMEOUT, env: dict | None = None,
            server: FakeAnthropic | None = None) -> Run:
        """``claude -p PROMPT`` (resuming ``resume`` when given) against a fake server that
        answers with ``script`` first, then with short text replies."""
        with serving(server, FakeAnthropic) as srv:
            srv.script_for(MESSAGES_PATH, list(script))
            cmd = [claude_binary(), "-p", prompt, "--output-format", "json", "--dangerously-skip-permissions"]
            if resume:
                cmd += ["--resume", resume]
            cmd += list(args)
            rc, out, err = self.execute(cmd, self.env(srv.base_url, env), timeout)
            return Run(rc, out, err, srv.requests.snapshot())


def strip_prompt(messages: list, prompt: str = PROMPT) -> list:
    """What the client sends for the file itself: the request's messages less what the new
    prompt added. The prompt goes at the end of the last user message, possibly with reminder
    text blocks (environment, date) the client adds on its own just before it; when the
    history ends with a user message, the client merges the new turn into it."""
    msgs = json.loads(json.dumps(messages))
    while msgs and msgs[-1].get("role") == "system":  # reminders the new turn adds
        msgs.pop()
    if not msgs or msgs[-1].get("role") != "user":
        raise AssertionError("the last message sent is not the new prompt's user message")
    last = msgs[-1]
    content = last["content"]
    if isinstance(content, str):
        if content == prompt:
            msgs.pop()
            return msgs
        raise AssertionError("the prompt is not the last user message")
    idx = max((i for i, b in enumerate(content) if b.get("type") == "text" and b.get("text") == prompt), default=None)
    if idx is None:
        raise AssertionError("the prompt is not in the last user message")
    # blocks added with the prompt: the prompt and the reminder text blocks just before it
    start = idx
    while start > 0 and content[start - 1].get("type") == "text" and content[start - 1].get("text", "").startswith("<system-reminder>"):
        start -= 1
    rest = content[:start] + content[idx + 1:]
    if rest:
        last["content"] = rest
    else:
        msgs.pop()
        while msgs and msgs[-1].get("role") == "system":
            msgs.pop()
    return msgs


def resume_payload(path: str, *, session_id: str | None = None,
                   timeout: float = DEFAULT_TIMEOUT, args: Iterable[str] = (), env: dict | None = None) -> dict:
    """Resume a copy of ``path`` in the real client and return what it sent.

    ``{"messages": [...] (less the new prompt), "raw": full request body, "run": Run}``.
    The caller's file is never touched: the client resumes a copy in a sandbox. ``args``: more of the client's
    options (``--model NAME``); ``env``: more of its environment."""
    with ClaudeSandbox() as box:
        sid = session_id or _recorded_session_id(path)
        if not is_uuid(sid):  # the client resumes only files named by a UUID
            sid = str(uuid.uuid5(uuid.NAMESPACE_URL, os.path.abspath(path)))
        sid = box.install(path, sid)
        run = box.run(PROMPT, resume=sid, timeout=timeout, args=args, env=env)
        reqs = run.messages_requests
        if not reqs:
            raise AssertionError(f"Claude Code sent no request for {path}: rc={run.returncode} "
                                 f"stdout={run.stdout[:500]!r} stderr={run.stderr[:500]!r}")
        body = reqs[0].body
        msgs = body["messages"]
        if _compaction_request(msgs):
            # the recorded context is past the client's auto-compact threshold: its first request
            # summarizes the file's conversation, followed by its compaction instruction
            while msgs and msgs[-1].get("role") == "system":
                msgs = msgs[:-1]
            # the instruction is the client's; blocks before it in that message (results of the
            # file's last response) are the file's
            last = msgs[-1]
            kept = [b for b in last["content"] if not (isinstance(b, dict) and b.get("type") == "text" and (
                b.get("text", "").startswith(COMPACTION_INSTRUCTION)))] if isinstance(last["content"], list) else []
            msgs = msgs[:-1] + ([dict(last, content=kept)] if any(b.get("type") != "text" for b in kept) else [])
            return {"messages": msgs, "raw": body, "run": run, "compacting": True}
        return {"messages": strip_prompt(msgs), "raw": body, "run": run, "compacting": False}


def resume_payloads(paths: Iterable[str], *, timeout: float = DEFAULT_TIMEOUT) -> list[dict]:
    """``resume_payload`` of each path, in order, the clients run side by side (one per CPU): a client run is a process
    on one core, and the tests that judge every prefix of a recording run hundreds."""
    from concurrent.futures import ThreadPoolExecutor

    paths = list(paths)
    with ThreadPoolExecutor(max_workers=max(1, min(len(paths), os.cpu_count() or 1))) as pool:
        return list(pool.map(lambda p: resume_payload(p, timeout=timeout), paths))


COMPACTION_INSTRUCTION = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools."


def _compaction_request(messages: list) -> bool:
    users = [m for m in messages if m.get("role") != "system"]  # reminders the client adds after it
    last = users[-1] if users else {}
    content = last.get("content")
    text = content if isinstance(content, str) else next(
        (b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"), "")
    return last.get("role") == "user" and text.startswith(COMPACTION_INSTRUCTION)


def _first_field(path: str, key: str) -> str | None:
    with open(path, "rb") as f:
        for line in f:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get(key), str):
                return obj[key]
    return None


def _recorded_session_id(path: str) -> str | None:
    return _first_field(path, "sessionId")


REMINDER = "<system-reminder>"


ABSENT = "(absent)"  # a block's field the request leaves out (conversation)


def conversation(messages: list) -> list:
    """What a comparison of two ``messages`` lists looks at: every user and assistant message
    with its blocks (text, thinking, tool calls with id, name and input, tool results with id,
    content and error flag), consecutive messages of one role taken together as the API takes
    them. Left out: ``system`` messages and ``<system-reminder>`` text, the context the client
    renders from attachments and adds on its own (ctxtool counts the recorded renderings but
    does not place them), and trailing newlines of text (the client adds one where it joins
    two user messages)."""
    out: list = []
    for m in messages:
        if m["role"] == "system":
            continue
        content = m["content"]
        content = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks = []
        for b in content:
            t = b.get("type")
            if t == "text":
                if b["text"].startswith(REMINDER):
                    continue
                blocks.append(("text", b["text"].rstrip("\n")))
            elif t == "tool_use":
                # (a field left out, as the client sends a damaged line's block: ABSENT, told apart from null)
                blocks.append(("tool_use", b.get("id", ABSENT), b.get("name", ABSENT), json.dumps(b.get("input"), sort_keys=True)))
            elif t == "tool_result":
                blocks.append(("tool_result", b.get("tool_use_id", ABSENT), json.dumps(b.get("content"), sort_keys=True),
                               bool(b.get("is_error"))))
            elif t == "thinking":
                blocks.append(("thinking", b.get("thinking")))
            else:
                blocks.append((t, json.dumps(b, sort_keys=True)))
        if not blocks:
            continue
        if out and out[-1][0] == m["role"]:
            out[-1][1].extend(blocks)
        else:
            out.append((m["role"], blocks))
    return [[role, blocks] for role, blocks in out]


def reminder_texts(messages: list) -> list[str] | None:
    """The ``<system-reminder>`` texts of ``messages``' user and assistant messages, sorted, less a trailing newline:
    what ``conversation`` leaves out, compared on its own (where the client puts some of it is not imitated). None
    when the history ends with a user message: the new turn's prompt, and the reminders the client renders for it,
    are merged into it, placed before that message's typed text, and cannot be told from the file's; and for a
    history of attachments alone (no prompt, no response), whose renderings the client places otherwise."""
    said = [m for m in messages if m["role"] != "system"]
    if said and said[-1]["role"] == "user":
        return None
    reminders = {id(m): [b["text"] for b in _blocks(m) if _reminder(b)] for m in said}
    if not any(m["content"] != [{"type": "text", "text": "No response requested."}] if m["role"] == "assistant"
               else len(reminders[id(m)]) < len(_blocks(m)) for m in said):
        return None  # a history of attachments alone: where the client puts them is not imitated (docs/claude-code-rules.md)
    return sorted(t.rstrip("\n") for m in said for t in reminders[id(m)])


def _blocks(m: dict) -> list:
    """A message's content as a list of blocks (a string is one text block)."""
    return [{"type": "text", "text": m["content"]}] if isinstance(m["content"], str) else m["content"]


def _reminder(b) -> bool:
    return isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"].startswith(REMINDER)


def well_paired(messages: list) -> list[str]:
    """Pairing faults in a request's messages (empty when the API accepts its pairing)."""
    conv = conversation(messages)
    faults = []
    seen = set()
    for k, (role, blocks) in enumerate(conv):
        if role != "assistant":
            continue
        calls = [b[1] for b in blocks if b[0] == "tool_use"]
        for c in calls:
            if c in seen:
                faults.append(f"message {k}: tool_use id {c} used twice")
            seen.add(c)
        nxt = conv[k + 1][1] if k + 1 < len(conv) else []
        results = [b[1] for b in nxt if b[0] == "tool_result"]
        if sorted(results) != sorted(set(results)):
            faults.append(f"message {k + 1}: a tool_use id has two results")
        for c in calls:
            if c not in results:
                faults.append(f"message {k}: {c} has no result in the next message")
        for r in results:
            if r not in calls:
                faults.append(f"message {k + 1}: result {r} has no call in the message before")
    return faults
