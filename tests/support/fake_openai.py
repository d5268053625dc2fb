"""A local HTTP server that speaks enough of the OpenAI Responses API for the real Codex CLI.

Standard library only, loopback only, silent. It records every request body and answers
``POST /v1/responses`` with a scripted, streamed (SSE) response: the events Codex reads
(``response.created``, ``response.output_item.added`` / ``.done``, ``response.output_text.delta``,
``response.completed`` with ``usage``). Anything else is answered 404.

Typical use::

    with FakeOpenAI() as srv:
        srv.script = [calls(("call_1", "shell_command", {"command": "ls"})), reply("done")]
        ...run codex with base_url = srv.base_url...
        body = srv.responses_requests[0].body      # what Codex sent: body["input"]

Script actions (one per ``/v1/responses`` request; when the queue is empty the answer is a
short assistant text):

``("items", [item, ...][, usage])``  a response whose output is these Responses items
                                     (``message``, ``reasoning``, ``function_call``, ...);
                                     ids are filled in. ``usage`` overrides the token usage.
``("status", code[, message])``      an HTTP error with OpenAI's error JSON.
``("failed", message)``              a stream that ends with ``response.failed``.
``("hang", seconds)``                wait, then close the connection without answering.

:func:`reply`, :func:`calls` and :func:`reasoning` build the common ``items`` actions.
"""

from __future__ import annotations

import collections
import itertools
import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, Deque, Dict, Iterable, List, Optional, Tuple

from .fake_anthropic import _Handler as _QuietHandler

RESPONSES_PATH = "/v1/responses"

Action = Tuple[Any, ...]


def message(text: str, phase: str | None = None) -> Dict[str, Any]:
    item = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}
    if phase:
        item["phase"] = phase
    return item


def function_call(call_id: str, name: str, arguments: Any) -> Dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": args}


def reasoning(summary: str, encrypted: str = "ZW5jcnlwdGVkLXJlYXNvbmluZw==") -> Dict[str, Any]:
    return {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": encrypted}


def reply(text: str, usage: Dict[str, Any] | None = None) -> Action:
    """A response with one assistant message."""
    return ("items", [message(text)], usage)


def calls(*specs: Tuple[str, str, Any], text: str | None = None, think: str | None = None,
          usage: Dict[str, Any] | None = None) -> Action:
    """A response with function calls ``(call_id, name, arguments)`` (parallel when several),
    optionally after a reasoning item and a text message."""
    items: List[Dict[str, Any]] = []
    if think:
        items.append(reasoning(think))
    if text:
        items.append(message(text))
    items.extend(function_call(*s) for s in specs)
    return ("items", items, usage)


def usage_of(input_tokens: int, output_tokens: int = 12, cached: int = 0, reasoning_tokens: int = 0) -> Dict[str, Any]:
    return {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": input_tokens + output_tokens}


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: Dict[str, str]
    body: Any  # parsed JSON, or None
    raw_body: bytes = field(repr=False)
    action: Optional[Action] = None


class _Handler(_QuietHandler):
    """The Anthropic fake's handler plumbing (quiet, keep-alive, chunked bodies), Responses routes."""

    server_version = "fake-openai"
    timeout = 120

    def _reply(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _dispatch(self) -> None:
        fake: FakeOpenAI = self.server.fake  # type: ignore[attr-defined]
        path = self.path.partition("?")[0]
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        action = fake._pop() if (self.command == "POST" and path == RESPONSES_PATH) else None
        headers = {k.lower(): ("<redacted>" if k.lower() == "authorization" else v) for k, v in self.headers.items()}
        fake.requests_log.append(RecordedRequest(self.command, path, headers, body, raw, action))
        if not (self.command == "POST" and path == RESPONSES_PATH):
            return self._reply(404, json.dumps({"error": {"message": f"fake: no route {path}", "type": "invalid_request_error"}}).encode())
        if action is None:
            action = ("items", [message("ok")], None)
        kind = action[0]
        if kind == "status":
            code = action[1]
            msg = action[2] if len(action) > 2 else f"fake: HTTP {code}"
            err = {"error": {"message": msg, "type": "invalid_request_error", "param": None, "code": None}}
            return self._reply(code, json.dumps(err).encode())
        if kind == "hang":
            fake._stopping.wait(action[1])
            self.close_connection = True
            return
        if kind == "slow":  # ("slow", seconds, items[, usage]): the answer after a wait (a model that takes its time)
            fake._stopping.wait(action[1])
            action = ("items", *action[2:])
        rid = f"resp_fake_{fake._run}_{next(fake._ids)}"
        if kind == "failed":
            events = [{"type": "response.created", "response": {"id": rid}},
                      {"type": "response.failed", "response": {"id": rid, "error": {"code": "server_error", "message": action[1]}}}]
            return self._reply(200, _sse(events), "text/event-stream")
        items = [dict(i) for i in action[1]]
        usage = action[2] if len(action) > 2 and action[2] else usage_of(max(1, len(raw) // 4))
        events: List[Dict[str, Any]] = [{"type": "response.created", "response": {"id": rid, "object": "response", "status": "in_progress"}}]
        for n, item in enumerate(items):
            item.setdefault("id", f"{item['type'][:2]}_fake_{fake._run}_{next(fake._ids)}")
            if item["type"] in ("function_call", "message"):
                item.setdefault("status", "completed")
            events.append({"type": "response.output_item.added", "output_index": n, "item": item})
            if item["type"] == "message":
                for c in item.get("content", []):
                    if c.get("type") == "output_text":
                        events.append({"type": "response.output_text.delta", "item_id": item["id"], "output_index": n,
                                       "content_index": 0, "delta": c["text"]})
            events.append({"type": "response.output_item.done", "output_index": n, "item": item})
        events.append({"type": "response.completed",
                       "response": {"id": rid, "object": "response", "status": "completed", "output": items, "usage": usage}})
        self._reply(200, _sse(events), "text/event-stream")


def _sse(events: List[Dict[str, Any]]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode("utf-8")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, fake: "FakeOpenAI", addr: Tuple[str, int]) -> None:
        self.fake = fake
        super().__init__(addr, _Handler)

    def handle_error(self, request, client_address) -> None:
        pass


class FakeOpenAI:
    """The recording Responses API server (see the module docstring)."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, script: Iterable[Action] = ()):
        self.host = host
        self._port = port
        self._lock = threading.Lock()
        self._script: Deque[Action] = collections.deque(script)
        self._ids = itertools.count(1)
        # unique across servers: a client resumed against a new server never gets an item id it holds
        self._run = uuid.uuid4().hex[:8]
        self._stopping = threading.Event()
        self.requests_log: List[RecordedRequest] = []
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None

    def start(self) -> "FakeOpenAI":
        self._server = _Server(self, (self.host, self._port))
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai-serve", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._server = None

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeOpenAI not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def script(self) -> List[Action]:
        with self._lock:
            return list(self._script)

    @script.setter
    def script(self, actions: Iterable[Action]) -> None:
        with self._lock:
            self._script = collections.deque(actions)

    def _pop(self) -> Optional[Action]:
        with self._lock:
            return self._script.popleft() if self._script else None

    @property
    def requests(self) -> List[RecordedRequest]:
        return list(self.requests_log)

    @property
    def responses_requests(self) -> List[RecordedRequest]:
        return [r for r in self.requests_log if r.path == RESPONSES_PATH and isinstance(r.body, dict)]
