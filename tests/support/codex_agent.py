"""Run the real Codex CLI offline and record what it sends (test support).

The harness lives in ``tests/codex_harness`` (a pinned ``@openai/codex``; its native Linux
binary ships inside the registry package ``@openai/codex-linux-x64``, so
``npm ci --ignore-scripts`` gets a working ``codex``). Install it with::

    make codex-harness

Every run happens in a sandbox: ``HOME`` and ``CODEX_HOME`` in a temporary directory, a
``config.toml`` whose model provider is :class:`tests.support.fake_openai.FakeOpenAI` on
127.0.0.1 (``wire_api = "responses"``, no retries), analytics and update checks off. Nothing
leaves the machine.

Two uses:

- :func:`resume_payload` is the judge of a file: Codex resumes a copy of it
  (``codex exec resume <id> PROMPT``) and the ``input`` of its first ``/v1/responses`` request
  is exactly what it sends for that file, plus what the new turn adds at the end (the fresh
  context messages and the prompt, see :func:`strip_turn`).
- :class:`CodexSandbox` drives the client through scripted model responses (parallel calls,
  reasoning, errors), so it runs real tools and writes a genuine rollout: how the recorded
  fixtures in ``fixtures/codex-recorded/`` are made.

Standard library only (plus the fake server).
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re
import tempfile
from typing import Any, Iterable

from .fake_openai import FakeOpenAI
from .sandbox import Run as BaseRun
from .sandbox import Sandbox, is_uuid, serving, unavailable_reason

HARNESS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "codex_harness")
VENDOR = os.path.join(HARNESS_DIR, "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl")
BINARY = os.path.join(VENDOR, "bin", "codex")
PROMPT = "ctxtool-judge: reply with one word."
MODEL = "gpt-5.5"
DEFAULT_TIMEOUT = 90.0
KEY_VAR = "CTXTOOL_FAKE_OPENAI_KEY"
PROVIDER = "ctxtool_fake"
PROVIDER_FIELD = re.compile(rb'("model_provider(?:_id)?"\s*:\s*)"[^"\\]*"')


def codex_binary() -> str:
    return os.environ.get("CTXTOOL_CODEX_BIN") or BINARY


@functools.lru_cache(maxsize=1)
def codex_unavailable_reason() -> str | None:
    """Why the Codex harness cannot run here, or None when it can."""
    return unavailable_reason(codex_binary(), "Codex", "codex-harness", "codex-cli", env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tempfile.gettempdir()})


class Run(BaseRun):
    """One Codex run (``bodies``: the bodies of its ``/v1/responses`` requests)."""

    @property
    def bodies(self) -> list:
        return [r.body for r in self.requests if r.path == "/v1/responses" and isinstance(r.body, dict)]


CONFIG = """\
model = "{model}"
model_provider = "{provider}"
check_for_update_on_startup = false
{extra}
[analytics]
enabled = false

[feedback]
enabled = false

[model_providers.{provider}]
name = "ctxtool fake"
base_url = "{base_url}"
wire_api = "responses"
env_key = "{key_var}"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 60000
"""


class CodexSandbox(Sandbox):
    """A throwaway HOME + CODEX_HOME + project directory in which the real client runs against
    the fake server."""

    prefix = "ctxtool-codex-"

    def __init__(self, root: str | None = None, *, cwd_name: str = "proj"):
        super().__init__(root, cwd_name=cwd_name)
        self.codex_home = os.path.join(self.home, ".codex")
        os.makedirs(self.codex_home, exist_ok=True)

    def sessions(self) -> list[str]:
        return sorted(glob.glob(os.path.join(self.codex_home, "sessions", "*", "*", "*", "rollout-*.jsonl")))

    def install(self, path: str, session_id: str | None = None) -> str:
        """Copy a rollout where Codex looks for it; returns the session id it is resumed by.

        Codex resumes a thread only with the model provider it was recorded with, and a built-in
        provider (``openai``) cannot be pointed elsewhere without its websocket transport and
        retries: the copy names the sandbox's provider instead (only the ``model_provider`` and
        ``model_provider_id`` values change; nothing Codex sends depends on them)."""
        meta = session_meta(path) or {}
        sid = session_id or meta.get("id")
        if not isinstance(sid, str) or not is_uuid(sid):
            raise AssertionError(f"{path}: no session_meta id to resume by")
        ts = meta.get("timestamp")
        # the file's own time names its folder and file when it is one (a damaged one, "\ud800" or "../x",
        # would name no folder Codex looks in, or none at all)
        ts = ts[:19] if isinstance(ts, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", ts[:19]) else None
        stamp = re.sub(r"[:.]", "-", ts or "2026-01-01T00:00:00")
        day = os.path.join(self.codex_home, "sessions", stamp[:4], stamp[5:7], stamp[8:10])
        os.makedirs(day, exist_ok=True)
        with open(path, "rb") as f:
            data = f.read()
        data = PROVIDER_FIELD.sub(rb'\1"' + PROVIDER.encode() + rb'"', data)
        with open(os.path.join(day, f"rollout-{stamp}-{sid}.jsonl"), "wb") as f:
            f.write(data)
        return sid

    def write_config(self, base_url: str, extra: str = "") -> None:
        with open(os.path.join(self.codex_home, "config.toml"), "w", encoding="utf-8") as f:
            f.write(CONFIG.format(model=MODEL, base_url=base_url, key_var=KEY_VAR, extra=extra, provider=PROVIDER))

    def env(self, extra: dict | None = None) -> dict:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.home,
            "CODEX_HOME": self.codex_home,
            KEY_VAR: "sk-ctxtool-test",
            "NO_PROXY": "127.0.0.1,localhost",
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "RUST_LOG": "error",
        }
        if extra:
            env.update(extra)
        return env

    def command(self, prompt: str, resume: str | None = None, args: Iterable[str] = (), fork: str | None = None) -> list[str]:
        cmd = [codex_binary(), "exec", "--skip-git-repo-check", "--json", "-s", "danger-full-access", *args]
        if resume:
            cmd += ["resume", resume]
        elif fork:
            cmd += ["fork", fork]
        return cmd + [prompt]

    def session_id(self, path: str | None = None) -> str:
        """The id of a rollout in the sandbox (the only one when not named)."""
        if path is None:
            found = self.sessions()
            assert len(found) == 1, found
            path = found[0]
        return (session_meta(path) or {})["id"]

    def run(self, prompt: str, *, resume: str | None = None, fork: str | None = None, script: Iterable[Any] = (),
            args: Iterable[str] = (), config: str | None = "", timeout: float = DEFAULT_TIMEOUT,
            env: dict | None = None, server: FakeOpenAI | None = None) -> Run:
        """``codex exec PROMPT`` (or ``codex exec resume ID PROMPT``) against a fake server that
        answers with ``script`` first, then with short text replies."""
        with serving(server, FakeOpenAI) as srv:
            srv.script = list(script)
            if config is not None:  # None: run with the config.toml as it is (a test edited it)
                self.write_config(srv.base_url, config)
            rc, out, err = self.execute(self.command(prompt, resume, args, fork), self.env(env), timeout)
            return Run(rc, out, err, srv.requests)


def session_meta(path: str) -> dict | None:
    """The payload of the first ``session_meta`` line of a rollout."""
    with open(path, "rb") as f:
        for line in f:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and obj.get("type") == "session_meta" and isinstance(obj.get("payload"), dict):
                return obj["payload"]
    return None


def is_prompt(item: dict, prompt: str = PROMPT) -> bool:
    return (item.get("type") == "message" and item.get("role") == "user"
            and any(c.get("text") == prompt for c in item.get("content") or []))


def strip_turn(items: list, prompt: str = PROMPT) -> list:
    """What Codex sends for the file itself: the request's ``input`` less what the new turn
    added at the end: the context Codex renders afresh for a turn (developer messages such as
    the skills list, the ``<environment_context>`` user message), then the prompt."""
    if not items or not is_prompt(items[-1], prompt):
        raise AssertionError("the last item sent is not the new prompt")
    end = len(items) - 1
    while end > 0 and _turn_context_item(items[end - 1]):
        end -= 1
    return items[:end]


def _turn_context_item(item: dict) -> bool:
    if item.get("type") != "message":
        return False
    if item.get("role") == "developer":
        return True
    texts = [c.get("text", "") for c in item.get("content") or []]
    return item.get("role") == "user" and bool(texts) and all(t.startswith(TURN_CONTEXT) for t in texts)


# the user messages of context Codex renders for a turn: its environment, and its AGENTS.md instructions (or, where the
# recorded world state named some the turn no longer finds, that they no longer apply: judge fuzz seed 274, case 0068)
TURN_CONTEXT = ("<environment_context>", "# AGENTS.md instructions")


def resume_payload(path: str, *, timeout: float = DEFAULT_TIMEOUT, config: str = "",
                   also: Iterable[str] = ()) -> dict:
    """Resume a copy of ``path`` in the real client and return what it sent.

    ``{"input": [...] (the whole first request's input), "history": [...] (less the new turn),
    "raw": full request body, "run": Run}``. ``also``: other rollouts to install beside it (a
    fork's parent, whose lines the fork's ``history_base`` points into). The caller's files are
    never touched."""
    with CodexSandbox() as box:
        for other in also:
            box.install(other)
        sid = box.install(path)
        run = box.run(PROMPT, resume=sid, timeout=timeout, config=config, script=[("status", 400, "ctxtool judge: recorded")])
        bodies = run.bodies
        if not bodies:
            raise AssertionError(f"Codex sent no request for {path}: rc={run.returncode} "
                                 f"stdout={run.stdout[-800:]!r} stderr={run.stderr[-800:]!r}")
        body = bodies[0]
        return {"input": body["input"], "history": strip_turn(body["input"]), "raw": body, "run": run}


def conversation(items: list) -> list:
    """What a comparison of two ``input`` lists looks at: each item without the fields the
    client regenerates (``id``, ``status``), as canonical JSON."""
    out = []
    for it in items:
        it = {k: v for k, v in it.items() if k not in ("id", "status")}
        out.append(json.dumps(it, sort_keys=True, ensure_ascii=False))
    return out


CALL_TYPES = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
              "local_shell_call": "function_call_output", "tool_search_call": "tool_search_output"}


def well_paired(items: list) -> list[str]:
    """Pairing faults of a Responses ``input`` (empty when the API accepts its pairing): every
    call has an output after it, every output a call before it, no call_id used twice."""
    faults = []
    calls: dict = {}
    outputs: dict = {}
    for n, it in enumerate(items):
        t = it.get("type")
        cid = it.get("call_id")
        if t in CALL_TYPES and cid:
            if cid in calls:
                faults.append(f"item {n}: call_id {cid} used by two calls")
            calls[cid] = n
        elif t in CALL_TYPES.values() and cid is not None:
            if cid in outputs:
                faults.append(f"item {n}: call_id {cid} has two outputs")
            if cid not in calls:
                faults.append(f"item {n}: No tool call found for function call output with call_id {cid}.")
            outputs[cid] = n
    for cid in calls:
        if cid not in outputs:
            faults.append(f"No tool output found for function call {cid}.")
    return faults


def base_matches(view_item: dict, sent_item: dict) -> bool:
    """The base instructions: Codex sends the recorded text less bullets about tools it does not
    offer in that run, so the sent lines are the recorded lines with some left out, in order."""
    if not (view_item.get("role") == sent_item.get("role") == "developer"):
        return False
    recorded = iter(view_item["content"][0]["text"].splitlines())
    return all(line in recorded for line in sent_item["content"][0]["text"].splitlines())


def compare(view: list, sent: list) -> list[str]:
    """Differences between ctxtool's view of a rollout (Responses items) and what Codex sent for
    it (``strip_turn`` of the request's input); empty when they agree."""
    if view and sent and view[0].get("role") == "developer" and sent[0].get("role") == "developer":
        if not base_matches(view[0], sent[0]):
            return ["item 0: the base instructions differ"]
        view, sent = view[1:], sent[1:]
    a, b = conversation(view), conversation(sent)
    out = []
    for k in range(max(len(a), len(b))):
        x = a[k] if k < len(a) else "(none)"
        y = b[k] if k < len(b) else "(none)"
        if x != y:
            out.append(f"item {k}: view {x[:200]} != sent {y[:200]}")
    return out
