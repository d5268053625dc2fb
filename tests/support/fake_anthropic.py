"""A real, local HTTP server that speaks enough of the Anthropic Messages API for
the real ``anthropic`` Python SDK to talk to it (via ``base_url``).

Standard library only. Intended for tests: nothing here touches the network
beyond the loopback interface, and nothing is printed (no access logs, no
tracebacks for client disconnects).

Typical use::

    with FakeAnthropic() as srv:
        client = anthropic.Anthropic(api_key="test-key", base_url=srv.base_url, max_retries=0)
        srv.script = [("status", 429), ("status", 529)]   # then success
        msg = client.messages.create(model="m", max_tokens=64, messages=[...])
        assert srv.requests[-1].api_key == "test-key"

Endpoints
---------
``POST /v1/messages``               non-streaming Message JSON (or SSE when ``"stream": true``)
``POST /v1/messages/count_tokens``  ``{"input_tokens": N}``
``POST /v1/messages/batches``       Message Batches: create (``{"requests": [{custom_id, params}]}``)
``GET  /v1/messages/batches``       list (newest first, one page)
``GET  /v1/messages/batches/{id}``  retrieve (``processing_status``, ``request_counts``, ``results_url``)
``GET  /v1/messages/batches/{id}/results``  the results as JSONL (once ended; not in request order)
``POST /v1/messages/batches/{id}/cancel``   cancel (unprocessed requests end ``canceled``)
anything else                       404 ``not_found_error``

Message Batches (see :class:`FakeBatch`): a batch ends ``batch_latency`` (+
``batch_request_latency`` per request) seconds after processing starts; with
``batch_concurrency=k`` at most k batches are processed at once (the others queue, in
creation order), so the total simulated processing time is what a throughput-bound API
would take. ``batch_expiry`` (seconds) ends a batch still processing at that age with
every request ``expired``. Each request's outcome is decided when the batch is created:
``batch_outcome(request) -> action | None`` first, then the ``batch_script`` queue (one
action per request, in submission order), else success with ``reply(params)``.
Batch actions: ``"succeeded"`` / ``("succeeded", text)``, ``("errored", status_or_type[,
message])``, ``"expired"``, ``"canceled"``. HTTP-level failures of the batch endpoints are
scripted per route with ``script_for(BATCHES_PATH | BATCH_PATH | BATCH_RESULTS_PATH, ...)``
(the global queue is for ``/v1/messages`` only). On a create, ``("timeout", s)`` creates the
batch and then answers too late (the client cannot know it exists); ``"drop"`` closes the
connection before anything is created.

Script actions (consumed one per request, per-path queue first, then the
global queue; when both are empty the request succeeds):

``("status", code[, headers])``  Anthropic-shaped error JSON for ``code`` (400, 401, 403,
                                 404, 408, 409, 413, 429, 500, 503, 504, 529, ...). 429/5xx
                                 carry ``x-should-retry: true`` plus ``retry-after`` /
                                 ``retry-after-ms`` (see ``retry_after`` /
                                 ``retry_after_ms``); 4xx carry ``x-should-retry: false``.
                                 The optional dict overrides response headers (value
                                 ``None`` removes a header).
``("timeout", seconds)``         wait that long before answering (successfully) so the
                                 client times out first.
``("malformed", None)``          200, ``content-type: application/json``, body not JSON.
``("empty", None)``              200, a valid Message whose ``content`` is ``[]``.
``("drop", None)``               read the request, then close the connection without
                                 sending any response.
``("reply", text)``              success with this text (one request only).
``("max_tokens", None)``         success, text cut to ``max_tokens`` and
                                 ``stop_reason: "max_tokens"``.
``("ok", None)``                 plain success (useful as a placeholder).
``("content", blocks[, stop])``  success with these content blocks (``text``, ``thinking``,
                                 ``tool_use``), streamed block by block when asked
                                 (``input_json_delta``, ``thinking_delta``,
                                 ``signature_delta``); ``stop`` defaults to ``tool_use``
                                 when a block is a tool call, else ``end_turn``. This is
                                 how tests script the real Claude Code client into
                                 running tools.

An action may also be given as a bare int (``429`` == ``("status", 429)``) or a
bare string (``"drop"`` == ``("drop", None)``).
"""

from __future__ import annotations

import collections
import heapq
import itertools
import json
import math
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Tuple, Union

__all__ = [
    "FakeAnthropic",
    "RecordedRequest",
    "RequestLog",
    "estimate_tokens",
    "default_reply",
    "SUMMARY_MARKER",
    "MESSAGES_PATH",
    "COUNT_TOKENS_PATH",
    "BATCHES_PATH",
    "BATCH_PATH",
    "BATCH_RESULTS_PATH",
    "FakeBatch",
    "ERROR_TYPES",
]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
BATCHES_PATH = "/v1/messages/batches"
#: Route keys for ``script_for`` (the id part is not matched).
BATCH_PATH = "/v1/messages/batches/{id}"
BATCH_RESULTS_PATH = "/v1/messages/batches/{id}/results"
BATCH_CANCEL_PATH = "/v1/messages/batches/{id}/cancel"
CUSTOM_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_BATCH_REQUESTS = 100_000

#: Present in every default reply, so tests can recognise fake summaries.
SUMMARY_MARKER = "[FAKE-SUMMARY]"

#: HTTP status -> Anthropic ``error.type`` (as the real API sends them).
ERROR_TYPES: Dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "invalid_request_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_ERROR_MESSAGES: Dict[int, str] = {
    400: "fake: invalid request",
    401: "invalid x-api-key",
    402: "fake: billing error",
    403: "fake: permission denied",
    404: "fake: not found",
    408: "fake: request timeout",
    409: "fake: conflict",
    413: "fake: request too large",
    429: "fake: number of request tokens has exceeded your per-minute rate limit",
    500: "Internal server error",
    503: "fake: service unavailable",
    504: "fake: gateway timeout",
    529: "Overloaded",
}

_ACTION_KINDS = frozenset({"status", "timeout", "malformed", "empty", "drop", "reply", "max_tokens", "ok", "content"})

_REDACTED = "<redacted>"
_SECRET_HEADERS = frozenset({"x-api-key", "authorization"})

Action = Tuple[Any, ...]
Reply = Union[str, Callable[[Dict[str, Any]], str]]
TokenCounter = Callable[[Dict[str, Any]], int]


# --------------------------------------------------------------------------- helpers


def estimate_tokens(body: Dict[str, Any]) -> int:
    """Default deterministic token count: ``ceil(len(J) / 4)`` where ``J`` is the compact,
    key-sorted JSON (``ensure_ascii=False``) of ``{"messages", "system", "tools"}`` taken from
    ``body`` (keys absent from ``body`` are left out; ``messages`` defaults to ``[]``)."""
    payload: Dict[str, Any] = {"messages": body.get("messages", [])}
    for key in ("system", "tools"):
        if key in body:
            payload[key] = body[key]
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return math.ceil(len(text) / 4)


def default_reply(body: Dict[str, Any]) -> str:
    """Default reply text: deterministic, contains :data:`SUMMARY_MARKER` and the number of
    input messages."""
    n = len(body.get("messages") or [])
    return f"{SUMMARY_MARKER} Summary of {n} messages."


def _output_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def _normalize_action(action: Any) -> Action:
    if isinstance(action, bool):
        raise ValueError(f"invalid fake action: {action!r}")
    if isinstance(action, int):
        action = ("status", action)
    elif isinstance(action, str):
        action = (action, None)
    if not isinstance(action, (tuple, list)) or not action:
        raise ValueError(f"invalid fake action: {action!r}")
    action = tuple(action)
    kind = action[0]
    if kind not in _ACTION_KINDS:
        raise ValueError(f"unknown fake action kind {kind!r}; expected one of {sorted(_ACTION_KINDS)}")
    if len(action) == 1:
        action = (kind, None)
    if kind == "status":
        if not isinstance(action[1], int) or not 400 <= action[1] <= 599:
            raise ValueError(f"('status', code) needs an int 4xx/5xx code, got {action[1]!r}")
        if len(action) > 2 and action[2] is not None and not isinstance(action[2], dict):
            raise ValueError("('status', code, headers): headers must be a dict")
    if kind == "content" and not isinstance(action[1], list):
        raise ValueError(f"('content', blocks) needs a list of content blocks, got {action[1]!r}")
    if kind == "timeout" and not isinstance(action[1], (int, float)):
        raise ValueError(f"('timeout', seconds) needs a number, got {action[1]!r}")
    return action


_BATCH_KINDS = frozenset({"succeeded", "errored", "expired", "canceled"})


def _normalize_batch_action(action: Any) -> Action:
    if isinstance(action, str):
        action = (action,)
    if not isinstance(action, (tuple, list)) or not action or action[0] not in _BATCH_KINDS:
        raise ValueError(f"invalid batch action {action!r}; expected one of {sorted(_BATCH_KINDS)}")
    action = tuple(action)
    if action[0] == "errored":
        if len(action) < 2 or not isinstance(action[1], (int, str)) or isinstance(action[1], bool):
            raise ValueError("('errored', status_or_type[, message]) needs an HTTP status or an error type")
    return action


def _rfc3339(wall: Optional[float]) -> Optional[str]:
    if wall is None:
        return None
    return datetime.fromtimestamp(wall, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class FakeBatch:
    """One Message Batch as the fake holds it. Times are ``time.monotonic()`` values, with the
    matching wall-clock times for the RFC 3339 fields."""

    id: str
    requests: List[Dict[str, Any]]
    outcomes: List[Optional[Action]]  # per request, decided at creation
    created: float
    created_wall: float
    started: float  # processing start (later than ``created`` when queued behind other batches)
    ends: float
    expired: bool = False  # the whole batch reached ``batch_expiry`` before it was processed
    cancel_at: Optional[float] = None
    results: Optional[List[Dict[str, Any]]] = None  # built once, when first needed after the end

    def ended(self, now: float) -> bool:
        return now >= self.ends

    @property
    def processing_seconds(self) -> float:
        """Simulated processing time (queueing excluded)."""
        return self.ends - self.started


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it.

    ``headers`` has lower-cased names; the values of ``x-api-key`` and ``authorization`` are
    replaced by ``"<redacted>"`` so printing a record never shows a key. The key itself is in
    ``api_key`` (excluded from ``repr``).
    """

    method: str
    path: str  # without query string
    query: str
    headers: Dict[str, str]
    body: Any  # parsed JSON, or None if absent / not JSON
    raw_body: bytes = field(repr=False)
    received_at: float  # time.monotonic() when the request line + headers were read
    wall_time: float  # time.time() at the same moment
    api_key_present: bool
    auth_scheme: Optional[str]  # "x-api-key", "bearer" or None
    api_key: Optional[str] = field(default=None, repr=False)
    action: Optional[Action] = None  # the script action applied (None == default success)

    @property
    def retry_count(self) -> int:
        """The SDK's ``x-stainless-retry-count`` header (0 for first attempts)."""
        try:
            return int(self.headers.get("x-stainless-retry-count", "0"))
        except ValueError:
            return 0


class RequestLog:
    """Thread-safe, append-only (plus ``clear``) list of :class:`RecordedRequest`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: List[RecordedRequest] = []
        self._cond = threading.Condition(self._lock)

    def _append(self, item: RecordedRequest) -> None:
        with self._cond:
            self._items.append(item)
            self._cond.notify_all()

    def snapshot(self) -> List[RecordedRequest]:
        with self._lock:
            return list(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def for_path(self, path: str) -> List[RecordedRequest]:
        return [r for r in self.snapshot() if r.path == path]

    def wait_for(self, n: int, timeout: float = 5.0) -> bool:
        """Block until at least ``n`` requests were recorded; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._items) < n:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __iter__(self) -> Iterator[RecordedRequest]:
        return iter(self.snapshot())

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        with self._lock:
            return self._items[index]

    def __bool__(self) -> bool:
        return len(self) > 0

    def __repr__(self) -> str:
        return f"RequestLog({self.snapshot()!r})"


# --------------------------------------------------------------------------- server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    allow_reuse_address = True

    def __init__(self, fake: "FakeAnthropic", addr: Tuple[str, int]) -> None:
        self.fake = fake
        self._conn_lock = threading.Lock()
        self._conns: set = set()
        self._handler_threads: set = set()
        self._thread_ids = itertools.count(1)
        super().__init__(addr, _Handler)

    # Like ThreadingMixIn.process_request, but with named threads that we track so
    # stop() can close their sockets and join them (no leaked threads).
    def process_request(self, request, client_address):  # type: ignore[override]
        t = threading.Thread(
            target=self._run_handler,
            args=(request, client_address),
            name=f"fake-anthropic-conn-{next(self._thread_ids)}",
            daemon=True,
        )
        with self._conn_lock:
            self._conns.add(request)
            self._handler_threads.add(t)
        t.start()

    def _run_handler(self, request, client_address) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            pass  # client went away etc.; never print
        finally:
            self.shutdown_request(request)
            with self._conn_lock:
                self._conns.discard(request)
                self._handler_threads.discard(threading.current_thread())

    def handle_error(self, request, client_address) -> None:  # silence tracebacks
        pass

    def close_all_connections(self) -> None:
        with self._conn_lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handler_threads(self) -> List[threading.Thread]:
        with self._conn_lock:
            return list(self._handler_threads)


def _batch_route(method: str, path: str) -> Optional[Tuple[str, Optional[str]]]:
    """(route key, batch id) of a Message Batches endpoint, None for any other path."""
    if path == BATCHES_PATH:
        return (BATCHES_PATH, None) if method in ("POST", "GET") else None
    if not path.startswith(BATCHES_PATH + "/"):
        return None
    rest = path[len(BATCHES_PATH) + 1:].split("/")
    if len(rest) == 1 and method == "GET":
        return BATCH_PATH, rest[0]
    if len(rest) == 2 and rest[1] == "results" and method == "GET":
        return BATCH_RESULTS_PATH, rest[0]
    if len(rest) == 2 and rest[1] == "cancel" and method == "POST":
        return BATCH_CANCEL_PATH, rest[0]
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real API; we always send Content-Length
    server_version = "fake-anthropic"
    sys_version = ""
    timeout = 60  # socket timeout for idle keep-alive connections (safety net)
    disable_nagle_algorithm = True  # TCP_NODELAY: avoids 40 ms Nagle/delayed-ACK stalls on keep-alive

    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # no access logs on stderr
        pass

    def log_error(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    # ------------------------------------------------------------------ plumbing

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            chunks = []
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, status: int, body: bytes, headers: Dict[str, Optional[str]]) -> None:
        fake = self.server.fake
        all_headers: Dict[str, Optional[str]] = {"content-type": "application/json"}
        all_headers.update(headers)
        if "request-id" not in all_headers:
            all_headers["request-id"] = fake._next_request_id()
        try:
            self.send_response(status)
            for k, v in all_headers.items():
                if v is not None:
                    self.send_header(k, v)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # client gave up (timeout); nothing to do

    def _send_json(self, status: int, obj: Any, headers: Optional[Dict[str, Optional[str]]] = None) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), headers or {})

    def _send_error_status(self, status: int, message: Optional[str] = None,
                           overrides: Optional[Dict[str, Optional[str]]] = None) -> None:
        fake = self.server.fake
        headers: Dict[str, Optional[str]] = {}
        retryable = status in (408, 409, 429) or status >= 500
        headers["x-should-retry"] = "true" if retryable else "false"
        if status == 429 or status >= 500:
            if fake.retry_after is not None:
                ra = fake.retry_after
                headers["retry-after"] = str(int(ra)) if float(ra).is_integer() else str(ra)
            if fake.retry_after_ms is not None:
                headers["retry-after-ms"] = str(fake.retry_after_ms)
        if overrides:
            headers.update({k.lower(): v for k, v in overrides.items()})
        err_body = {
            "type": "error",
            "error": {
                "type": ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error"),
                "message": message or _ERROR_MESSAGES.get(status, f"fake: HTTP {status}"),
            },
        }
        rid = fake._next_request_id()
        err_body["request_id"] = rid
        headers.setdefault("request-id", rid)
        self._send_json(status, err_body, headers)

    # ------------------------------------------------------------------ dispatch

    def _dispatch(self) -> None:
        fake = self.server.fake
        received_at = time.monotonic()
        wall = time.time()
        path, _, query = self.path.partition("?")
        raw = self._read_body()
        body: Any = None
        body_is_json = False
        if raw:
            try:
                body = json.loads(raw)
                body_is_json = True
            except ValueError:
                body = None

        headers: Dict[str, str] = {}
        for k, v in self.headers.items():
            lk = k.lower()
            headers[lk] = _REDACTED if lk in _SECRET_HEADERS else v

        api_key: Optional[str] = None
        scheme: Optional[str] = None
        if self.headers.get("x-api-key"):
            api_key, scheme = self.headers["x-api-key"], "x-api-key"
        else:
            auth = self.headers.get("authorization") or ""
            if auth.lower().startswith("bearer ") and auth[7:].strip():
                api_key, scheme = auth[7:].strip(), "bearer"

        known = self.command == "POST" and path in (MESSAGES_PATH, COUNT_TOKENS_PATH)
        batch_route = _batch_route(self.command, path)
        if known:
            action = fake._pop_action(path)
        elif batch_route is not None:
            action = fake._pop_action(batch_route[0], global_queue=False)
        else:
            action = None

        record = RecordedRequest(
            method=self.command,
            path=path,
            query=query,
            headers=headers,
            body=body,
            raw_body=raw,
            received_at=received_at,
            wall_time=wall,
            api_key_present=api_key is not None,
            auth_scheme=scheme,
            api_key=api_key,
            action=action,
        )
        fake.requests._append(record)

        latency = fake.latency
        if latency and latency > 0:
            if fake._stopping.wait(latency):
                self._drop()
                return

        if not known and batch_route is None:
            self._send_error_status(404, f"fake: no route for {self.command} {path}")
            return

        kind = action[0] if action else "ok"
        arg = action[1] if action else None

        if kind == "drop":
            self._drop()
            return
        reply_delay = 0.0
        if kind == "timeout":
            if batch_route is not None and batch_route[0] == BATCHES_PATH and self.command == "POST":
                reply_delay = float(arg)  # the batch is created, then the answer comes too late: the client cannot tell
            elif fake._stopping.wait(float(arg)):
                self._drop()
                return
            kind = "ok"
        if kind == "status":
            self._send_error_status(int(arg), overrides=action[2] if len(action) > 2 else None)
            return
        if kind == "malformed":
            self._send(200, b'{"id": "msg_fake_malformed", "type": "message", "content": [', {})
            return

        # ---- success-ish paths: validate like the real API does
        if fake.require_api_key and api_key is None:
            self._send_error_status(401, "x-api-key header is required")
            return
        if "anthropic-version" not in headers:
            self._send_error_status(400, "anthropic-version: header is required")
            return
        if batch_route is not None:
            self._batch_endpoint(batch_route, body if body_is_json else None, reply_delay)
            return
        if not body_is_json or not isinstance(body, dict):
            self._send_error_status(400, "fake: request body must be a JSON object")
            return
        if not isinstance(body.get("messages"), list):
            self._send_error_status(400, "messages: Field required")
            return
        if not body.get("model"):
            self._send_error_status(400, "model: Field required")
            return

        try:
            input_tokens = int(fake.count_tokens(body))
        except Exception as exc:  # surface bugs in test callables as a 500 + fake.errors
            fake._record_error(exc)
            self._send_error_status(500, f"fake: count_tokens callable raised {type(exc).__name__}")
            return

        if path == COUNT_TOKENS_PATH:
            self._send_json(200, {"input_tokens": input_tokens})
            return

        if "max_tokens" not in body:
            self._send_error_status(400, "max_tokens: Field required")
            return

        stop_reason = "end_turn"
        if kind == "empty":
            text: Optional[str] = None
        elif kind == "reply":
            text = str(arg)
        else:
            try:
                reply = fake.reply
                text = reply(body) if callable(reply) else str(reply)
            except Exception as exc:
                fake._record_error(exc)
                self._send_error_status(500, f"fake: reply callable raised {type(exc).__name__}")
                return
        if kind == "max_tokens" and text is not None:
            limit = max(0, int(body.get("max_tokens") or 0)) * 4
            text = text[:limit]
            stop_reason = "max_tokens"

        content = None
        if kind == "content":
            content = [dict(b) for b in arg]
            text = "".join(str(b.get("text") or b.get("thinking") or b.get("input") or "") for b in content)
            calls = any(b.get("type") == "tool_use" for b in content)
            stop_reason = action[2] if len(action) > 2 and action[2] else ("tool_use" if calls else "end_turn")
        message = fake._message(body, text, input_tokens, stop_reason, content)
        if body.get("stream") is True:
            self._send_sse(message)
        else:
            self._send_json(200, message)

    def _send_sse(self, message: Dict[str, Any]) -> None:
        events: List[Tuple[str, Dict[str, Any]]] = []
        start = dict(message, content=[], stop_reason=None, stop_sequence=None,
                     usage={"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1})
        events.append(("message_start", {"type": "message_start", "message": start}))
        for i, block in enumerate(message["content"]):
            events.extend(_block_events(i, block))
            if i == 0:
                events.append(("ping", {"type": "ping"}))
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                         "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
        events.append(("message_stop", {"type": "message_stop"}))
        payload = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        self._send(200, payload.encode("utf-8"), {"content-type": "text/event-stream", "cache-control": "no-cache"})

    # ------------------------------------------------------------------ Message Batches

    def _batch_endpoint(self, route: Tuple[str, Optional[str]], body: Any, reply_delay: float = 0.0) -> None:
        fake = self.server.fake
        key, batch_id = route
        if key == BATCHES_PATH and self.command == "GET":  # list, newest first, one page
            with fake._lock:
                batches = sorted(fake.batches.values(), key=lambda b: b.created, reverse=True)
            data = [fake._batch_json(b) for b in batches]
            self._send_json(200, {"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                                  "last_id": data[-1]["id"] if data else None})
            return
        if key == BATCHES_PATH:
            if not isinstance(body, dict) or not isinstance(body.get("requests"), list) or not body["requests"]:
                self._send_error_status(400, "requests: Field required (a non-empty list)")
                return
            reqs = body["requests"]
            if len(reqs) > MAX_BATCH_REQUESTS:
                self._send_error_status(413, f"requests: at most {MAX_BATCH_REQUESTS} requests per batch")
                return
            seen: set = set()
            for i, r in enumerate(reqs):
                cid = r.get("custom_id") if isinstance(r, dict) else None
                if not isinstance(cid, str) or not CUSTOM_ID_RE.match(cid):
                    self._send_error_status(400, f"requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
                    return
                if cid in seen:
                    self._send_error_status(400, f"requests.{i}.custom_id: duplicate custom_id {cid!r}")
                    return
                if not isinstance(r.get("params"), dict):
                    self._send_error_status(400, f"requests.{i}.params: Field required")
                    return
                seen.add(cid)
            batch = fake._create_batch(reqs)
            if reply_delay and fake._stopping.wait(reply_delay):
                self._drop()
                return
            self._send_json(200, fake._batch_json(batch))
            return
        batch = fake.batches.get(batch_id or "")
        if batch is None:
            self._send_error_status(404, f"fake: no message batch {batch_id!r}")
            return
        if key == BATCH_PATH:
            self._send_json(200, fake._batch_json(batch))
        elif key == BATCH_CANCEL_PATH:
            fake._cancel_batch(batch)
            self._send_json(200, fake._batch_json(batch))
        else:  # results
            if not batch.ended(time.monotonic()):
                self._send_error_status(400, f"fake: message batch {batch.id} has not ended; results are not available yet")
                return
            lines = fake._batch_results(batch)
            payload = "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8")
            self._send(200, payload, {"content-type": "application/binary"})

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _chunks(text: str) -> List[str]:
    step = max(1, math.ceil(len(text) / 3)) if text else 1
    return [text[j:j + step] for j in range(0, len(text), step)]


def _block_events(i: int, block: Dict[str, Any]) -> List[Tuple[str, Dict[str, Any]]]:
    """The stream events of one content block, as the real API sends them."""
    kind = block.get("type")
    if kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": part}
                  for part in _chunks(json.dumps(block.get("input", {})))]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": part} for part in _chunks(block.get("thinking", ""))]
        deltas.append({"type": "signature_delta", "signature": block.get("signature", "sig")})
    else:
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": part} for part in _chunks(block.get("text", ""))]
    events: List[Tuple[str, Dict[str, Any]]] = [
        ("content_block_start", {"type": "content_block_start", "index": i, "content_block": start})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    return events


class FakeAnthropic:
    """Local fake of the Anthropic Messages API. See the module docstring.

    Constructor keywords (all optional) set the attributes of the same name:

    - ``latency`` (float seconds, default 0): delay applied to every request, in that
      request's own thread (other requests are not blocked).
    - ``reply`` (str or ``callable(body) -> str``): text of successful ``/v1/messages``
      responses; default :func:`default_reply`.
    - ``count_tokens`` (``callable(body) -> int``): used for ``/count_tokens`` and for
      ``usage.input_tokens``; default :func:`estimate_tokens`.
    - ``script`` (iterable of actions): global action queue.
    - ``retry_after`` (seconds, default 0) / ``retry_after_ms`` (default 10): values of the
      ``retry-after`` / ``retry-after-ms`` headers on 429 and 5xx; ``None`` omits the header.
      The SDK prefers ``retry-after-ms``; small values keep SDK retries fast.
    - ``require_api_key`` (bool, default False): answer 401 when neither ``x-api-key`` nor
      ``Authorization: Bearer`` is sent.
    - ``batch_latency`` / ``batch_request_latency`` / ``batch_concurrency`` / ``batch_expiry`` /
      ``batch_outcome``: the Message Batches simulation (module docstring); ``batches`` maps
      batch ids to :class:`FakeBatch`.
    - ``host`` / ``port``: bind address, default ``127.0.0.1`` / ``0`` (ephemeral).

    Attributes after ``start()`` / ``__enter__``: ``base_url``, ``port``, ``requests``
    (:class:`RequestLog`), ``errors`` (exceptions raised by ``reply`` / ``count_tokens``).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        reply: Optional[Reply] = None,
        count_tokens: Optional[TokenCounter] = None,
        script: Optional[Iterable[Any]] = None,
        retry_after: Optional[float] = 0,
        retry_after_ms: Optional[int] = 10,
        require_api_key: bool = False,
        batch_latency: float = 0.0,
        batch_request_latency: float = 0.0,
        batch_concurrency: Optional[int] = None,
        batch_expiry: Optional[float] = None,
        batch_outcome: Optional[Callable[[Dict[str, Any]], Any]] = None,
    ) -> None:
        self.host = host
        self._port = port
        self.latency = latency
        self.reply: Reply = reply if reply is not None else default_reply
        self.count_tokens: TokenCounter = count_tokens if count_tokens is not None else estimate_tokens
        self.retry_after = retry_after
        self.retry_after_ms = retry_after_ms
        self.require_api_key = require_api_key
        self.requests = RequestLog()
        self.errors: List[BaseException] = []
        self.batch_latency = batch_latency
        self.batch_request_latency = batch_request_latency
        self.batch_concurrency = batch_concurrency
        self.batch_expiry = batch_expiry
        self.batch_outcome = batch_outcome
        self.batches: Dict[str, FakeBatch] = {}
        self._batch_script: Deque[Action] = collections.deque()
        self._batch_slots: List[float] = []

        self._lock = threading.Lock()
        self._global_script: Deque[Action] = collections.deque()
        self._path_scripts: Dict[str, Deque[Action]] = {}
        self._ids = itertools.count(1)
        # unique across servers too: a client resumed against a new server must never get a
        # message id it already holds (Claude Code merges lines that share one)
        self._run = uuid.uuid4().hex[:10]
        self._stopping = threading.Event()
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None
        if script is not None:
            self.script = script  # type: ignore[assignment]

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "FakeAnthropic":
        if self._server is not None:
            raise RuntimeError("FakeAnthropic already started")
        self._stopping.clear()
        self._server = _Server(self, (self.host, self._port))
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-anthropic-serve",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self, join_timeout: float = 5.0) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()  # wakes latency/timeout sleeps
        server.shutdown()  # stops serve_forever
        server.close_all_connections()  # ends idle keep-alive handler threads
        server.server_close()
        if thread is not None:
            thread.join(join_timeout)
        deadline = time.monotonic() + join_timeout
        for t in server.handler_threads():
            t.join(max(0.0, deadline - time.monotonic()))
        self._server = None
        self._thread = None

    def __enter__(self) -> "FakeAnthropic":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeAnthropic not started")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def live_threads(self) -> List[threading.Thread]:
        """Server + connection threads still alive (empty after a clean ``stop()``)."""
        return [t for t in threading.enumerate() if t.name.startswith("fake-anthropic-")]

    # ------------------------------------------------------------------ scripting

    @property
    def script(self) -> List[Action]:
        """Remaining global actions (a copy). Assigning replaces the queue."""
        with self._lock:
            return list(self._global_script)

    @script.setter
    def script(self, actions: Iterable[Any]) -> None:
        normalized = [_normalize_action(a) for a in actions]
        with self._lock:
            self._global_script = collections.deque(normalized)

    def enqueue(self, *actions: Any) -> None:
        """Append actions to the global queue."""
        normalized = [_normalize_action(a) for a in actions]
        with self._lock:
            self._global_script.extend(normalized)

    def script_for(self, path: str, actions: Iterable[Any]) -> None:
        """Replace the action queue for one path (consulted before the global queue)."""
        normalized = [_normalize_action(a) for a in actions]
        with self._lock:
            self._path_scripts[path] = collections.deque(normalized)

    def remaining_script(self, path: Optional[str] = None) -> List[Action]:
        with self._lock:
            if path is None:
                return list(self._global_script)
            return list(self._path_scripts.get(path, ()))

    def _pop_action(self, path: str, global_queue: bool = True) -> Optional[Action]:
        with self._lock:
            q = self._path_scripts.get(path)
            if q:
                return q.popleft()
            if global_queue and self._global_script:
                return self._global_script.popleft()
            return None

    # ------------------------------------------------------------------ Message Batches

    @property
    def batch_script(self) -> List[Action]:
        """Remaining per-request batch outcomes (a copy). Assigning replaces the queue."""
        with self._lock:
            return list(self._batch_script)

    @batch_script.setter
    def batch_script(self, actions: Iterable[Any]) -> None:
        normalized = [_normalize_batch_action(a) for a in actions]
        with self._lock:
            self._batch_script = collections.deque(normalized)

    def submitted_custom_ids(self) -> List[str]:
        """Every custom_id of every batch created, in submission order (duplicates kept)."""
        with self._lock:
            batches = sorted(self.batches.values(), key=lambda b: b.created)
        return [r["custom_id"] for b in batches for r in b.requests]

    def simulated_processing_seconds(self) -> float:
        """Wall time during which at least one batch was being processed (the union of the
        processing intervals): what the client cannot avoid waiting for."""
        with self._lock:
            spans = sorted((b.started, b.ends) for b in self.batches.values())
        total, cur_start, cur_end = 0.0, None, None
        for a, b in spans:
            if cur_end is None or a > cur_end:
                if cur_end is not None:
                    total += cur_end - cur_start
                cur_start, cur_end = a, b
            else:
                cur_end = max(cur_end, b)
        if cur_end is not None:
            total += cur_end - cur_start
        return total

    def _create_batch(self, requests: List[Dict[str, Any]]) -> FakeBatch:
        now, wall = time.monotonic(), time.time()
        outcomes: List[Optional[Action]] = []
        for r in requests:
            action = None
            if self.batch_outcome is not None:
                try:
                    got = self.batch_outcome(r)
                    action = _normalize_batch_action(got) if got is not None else None
                except Exception as exc:
                    self._record_error(exc)
                    action = ("errored", 500, f"fake: batch_outcome raised {type(exc).__name__}")
            if action is None:
                with self._lock:
                    action = self._batch_script.popleft() if self._batch_script else None
            outcomes.append(action)
        work = float(self.batch_latency) + float(self.batch_request_latency) * len(requests)
        with self._lock:
            bid = f"msgbatch_fake_{next(self._ids):08d}"
            start = now
            if self.batch_concurrency:
                while len(self._batch_slots) < self.batch_concurrency:
                    heapq.heappush(self._batch_slots, 0.0)
                start = max(now, heapq.heappop(self._batch_slots))
            ends, expired = start + work, False
            if self.batch_expiry is not None and ends > now + self.batch_expiry:
                ends, expired = now + self.batch_expiry, True
            if self.batch_concurrency:
                heapq.heappush(self._batch_slots, ends)
            batch = FakeBatch(bid, list(requests), outcomes, now, wall, min(start, ends), ends, expired)
            self.batches[bid] = batch
        return batch

    def _cancel_batch(self, batch: FakeBatch) -> None:
        now = time.monotonic()
        with self._lock:
            if not batch.ended(now) and batch.cancel_at is None:
                batch.cancel_at = now
                batch.ends = now + 0.01  # "canceling" very briefly, then ended

    def _batch_json(self, batch: FakeBatch) -> Dict[str, Any]:
        now = time.monotonic()
        ended = batch.ended(now)
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if ended:
            for line in self._batch_results(batch):
                counts[line["result"]["type"]] += 1
        else:
            counts["processing"] = len(batch.requests)
        to_wall = batch.created_wall - batch.created
        status = "ended" if ended else ("canceling" if batch.cancel_at is not None else "in_progress")
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": counts,
            "created_at": _rfc3339(batch.created_wall),
            "expires_at": _rfc3339(batch.created_wall + 24 * 3600),
            "ended_at": _rfc3339(batch.ends + to_wall) if ended else None,
            "cancel_initiated_at": _rfc3339(batch.cancel_at + to_wall) if batch.cancel_at is not None else None,
            "archived_at": None,
            "results_url": f"{self.base_url}{BATCHES_PATH}/{batch.id}/results" if ended else None,
        }

    def _batch_results(self, batch: FakeBatch) -> List[Dict[str, Any]]:
        with self._lock:
            if batch.results is not None:
                return batch.results
        lines = []
        for req, action in zip(batch.requests, batch.outcomes):
            lines.append({"custom_id": req["custom_id"], "result": self._batch_result(batch, req["params"], action)})
        lines.reverse()  # like the real API, not in request order: clients must match by custom_id
        with self._lock:
            if batch.results is None:
                batch.results = lines
            return batch.results

    def _batch_result(self, batch: FakeBatch, params: Dict[str, Any], action: Optional[Action]) -> Dict[str, Any]:
        if batch.expired:
            return {"type": "expired"}
        if batch.cancel_at is not None:
            return {"type": "canceled"}
        kind = action[0] if action else "succeeded"
        if kind in ("expired", "canceled"):
            return {"type": kind}
        if kind == "errored":
            status = action[1] if isinstance(action[1], int) else None
            etype = ERROR_TYPES.get(action[1], "api_error") if status is not None else str(action[1])
            message = action[2] if len(action) > 2 else _ERROR_MESSAGES.get(status or 0, f"fake: {etype}")
            return {"type": "errored", "error": {"type": "error", "error": {"type": etype, "message": message},
                                                  "request_id": self._next_request_id()}}
        missing = [k for k in ("model", "max_tokens", "messages") if k not in params]
        if missing:
            return {"type": "errored", "error": {"type": "error", "error": {
                "type": "invalid_request_error", "message": f"{missing[0]}: Field required"}, "request_id": self._next_request_id()}}
        try:
            text = str(action[1]) if len(action or ()) > 1 else (
                self.reply(params) if callable(self.reply) else str(self.reply))
            input_tokens = int(self.count_tokens(params))
        except Exception as exc:
            self._record_error(exc)
            return {"type": "errored", "error": {"type": "error", "error": {
                "type": "api_error", "message": f"fake: reply callable raised {type(exc).__name__}"}}}
        return {"type": "succeeded", "message": self._message(params, text, input_tokens, "end_turn")}

    def _message(self, body: Dict[str, Any], text: Optional[str], input_tokens: int, stop_reason: str,
                 content: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
        if content is None:
            content = [] if text is None else [{"type": "text", "text": text}]
        return {
            "id": self._next_message_id(),
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": _output_tokens(text or "")},
        }

    # ------------------------------------------------------------------ internals

    def _next_request_id(self) -> str:
        return f"req_fake_{self._run}_{next(self._ids):08d}"

    def _next_message_id(self) -> str:
        return f"msg_fake_{self._run}_{next(self._ids):08d}"

    def _record_error(self, exc: BaseException) -> None:
        with self._lock:
            self.errors.append(exc)

    def __repr__(self) -> str:
        state = f"base_url={self.base_url!r}" if self._server is not None else "stopped"
        return f"<FakeAnthropic {state} requests={len(self.requests)}>"
