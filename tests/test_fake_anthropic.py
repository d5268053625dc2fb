"""Tests for tests/support/fake_anthropic.py, driven by the REAL anthropic SDK over real
HTTP on 127.0.0.1 (no monkeypatching of the SDK)."""

from __future__ import annotations

import http.client
import json
import threading
import time

import anthropic
import httpx2
import pytest

try:
    from tests.support.fake_anthropic import (
        COUNT_TOKENS_PATH,
        MESSAGES_PATH,
        SUMMARY_MARKER,
        FakeAnthropic,
        estimate_tokens,
    )
except ImportError:  # pytest run without the repo root on sys.path (rootdir-relative import)
    from support.fake_anthropic import (  # type: ignore[no-redef]
        COUNT_TOKENS_PATH,
        MESSAGES_PATH,
        SUMMARY_MARKER,
        FakeAnthropic,
        estimate_tokens,
    )

API_KEY = "test-key"
MODEL = "claude-fake-1"
MESSAGES = [
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "hi there"},
    {"role": "user", "content": "please summarize"},
]

@pytest.fixture
def srv():
    with FakeAnthropic() as server:
        yield server
    assert server.live_threads() == []


def make_client(srv: FakeAnthropic, **kw) -> anthropic.Anthropic:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 5.0)
    return anthropic.Anthropic(api_key=API_KEY, base_url=srv.base_url, **kw)


def create(client: anthropic.Anthropic, **kw):
    kw.setdefault("model", MODEL)
    kw.setdefault("max_tokens", 256)
    kw.setdefault("messages", MESSAGES)
    return client.messages.create(**kw)


# --------------------------------------------------------------------------- success paths


def test_base_url_is_loopback(srv):
    assert srv.base_url == f"http://127.0.0.1:{srv.port}"
    assert srv.port > 0


def test_messages_create_success(srv, capfd):
    with make_client(srv) as client:
        msg = create(client, system="be brief")

    assert msg.type == "message" and msg.role == "assistant"
    assert msg.model == MODEL
    assert msg.id.startswith("msg_")
    assert msg.stop_reason == "end_turn" and msg.stop_sequence is None
    assert len(msg.content) == 1 and msg.content[0].type == "text"
    assert SUMMARY_MARKER in msg.content[0].text
    assert "3 messages" in msg.content[0].text
    assert msg._request_id and msg._request_id.startswith("req_")

    (req,) = srv.requests
    assert req.method == "POST" and req.path == MESSAGES_PATH
    assert req.body["model"] == MODEL and req.body["messages"] == MESSAGES
    assert msg.usage.input_tokens == estimate_tokens(req.body)
    assert msg.usage.output_tokens >= 1
    assert req.headers["anthropic-version"]  # SDK sends it; the fake requires it
    # the key reaches the server ...
    assert req.api_key_present and req.api_key == API_KEY
    # anthropic 2.12.0 sends api_key as "Authorization: Bearer <key>", not x-api-key
    assert req.auth_scheme in ("bearer", "x-api-key")
    # ... but is never shown: not in repr of the record/headers, nothing printed by the fake
    assert API_KEY not in repr(srv.requests) and API_KEY not in json.dumps(req.headers)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_count_tokens_default_and_custom(srv):
    tools = [{"name": "t", "description": "d", "input_schema": {"type": "object"}}]
    with make_client(srv) as client:
        res = client.messages.count_tokens(model=MODEL, messages=MESSAGES, system="sys", tools=tools)
        body = srv.requests[-1].body
        expected = estimate_tokens(body)
        assert res.input_tokens == expected
        payload = json.dumps({"messages": MESSAGES, "system": "sys", "tools": tools},
                             sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert expected == -(-len(payload) // 4)

        srv.count_tokens = lambda b: 1000 + len(b["messages"])
        assert client.messages.count_tokens(model=MODEL, messages=MESSAGES).input_tokens == 1003
        assert create(client).usage.input_tokens == 1003  # same counter feeds usage

    assert [r.path for r in srv.requests] == [COUNT_TOKENS_PATH, COUNT_TOKENS_PATH, MESSAGES_PATH]


def test_reply_fixed_and_callable(srv):
    with make_client(srv) as client:
        srv.reply = "fixed summary"
        assert create(client).content[0].text == "fixed summary"
        srv.reply = lambda body: f"model={body['model']} n={len(body['messages'])}"
        assert create(client).content[0].text == f"model={MODEL} n=3"
        srv.script = [("reply", "one-off")]
        assert create(client).content[0].text == "one-off"
        assert create(client).content[0].text == f"model={MODEL} n=3"


def test_empty_content(srv):
    srv.script = [("empty", None)]
    with make_client(srv) as client:
        msg = create(client)
    assert msg.content == [] and msg.stop_reason == "end_turn"


def test_max_tokens_action(srv):
    srv.script = ["max_tokens"]
    with make_client(srv) as client:
        msg = create(client, max_tokens=2)
    assert msg.stop_reason == "max_tokens"
    assert len(msg.content[0].text) <= 8


def test_streaming_success(srv):
    with make_client(srv) as client:
        with client.messages.stream(model=MODEL, max_tokens=64, messages=MESSAGES) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
    assert SUMMARY_MARKER in text
    assert final.content[0].text == text
    assert final.stop_reason == "end_turn"


# --------------------------------------------------------------------------- retries & errors


def test_429_then_success_with_retries(srv):
    srv.script = [("status", 429)]
    with make_client(srv, max_retries=2) as client:
        msg = create(client)
    assert SUMMARY_MARKER in msg.content[0].text
    assert len(srv.requests) == 2
    assert [r.retry_count for r in srv.requests] == [0, 1]
    assert [r.action for r in srv.requests] == [("status", 429), None]
    # retry-after-ms: 10 is honoured, so not the SDK's default 0.375-0.5 s first backoff
    gap = srv.requests[1].received_at - srv.requests[0].received_at
    assert 0.01 <= gap < 0.3


def test_429_and_529_then_success(srv):
    srv.script = [429, 529]
    with make_client(srv, max_retries=2) as client:
        create(client)
    assert [r.retry_count for r in srv.requests] == [0, 1, 2]


def test_429_exhausted_raises_rate_limit_error(srv):
    srv.script = [429, 429]
    with make_client(srv, max_retries=1) as client:
        with pytest.raises(anthropic.RateLimitError) as ei:
            create(client)
    err = ei.value
    assert type(err) is anthropic.RateLimitError and err.status_code == 429
    assert err.type == "rate_limit_error"
    assert err.body["error"]["type"] == "rate_limit_error"
    assert err.request_id and err.request_id.startswith("req_")
    assert err.response.headers["x-should-retry"] == "true"
    assert err.response.headers["retry-after-ms"] == "10"
    assert err.response.headers["retry-after"] == "0"
    assert len(srv.requests) == 2


def test_529_without_retries_raises_overloaded(srv):
    srv.script = [("status", 529)]
    with make_client(srv, max_retries=0) as client:
        with pytest.raises(anthropic.InternalServerError) as ei:
            create(client)
    assert type(ei.value) is anthropic.OverloadedError
    assert ei.value.status_code == 529 and ei.value.type == "overloaded_error"
    assert len(srv.requests) == 1


@pytest.mark.parametrize(
    "status, exc_type, error_type",
    [
        (500, anthropic.InternalServerError, "api_error"),
        (400, anthropic.BadRequestError, "invalid_request_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
    ],
)
def test_status_errors_map_to_sdk_classes(srv, status, exc_type, error_type):
    srv.script = [("status", status)]
    with make_client(srv) as client:
        with pytest.raises(anthropic.APIStatusError) as ei:
            create(client)
    assert type(ei.value) is exc_type
    assert ei.value.status_code == status
    assert ei.value.body["type"] == "error" and ei.value.body["error"]["type"] == error_type


def test_4xx_not_retried_even_with_retries(srv):
    srv.script = [400, 401]
    with make_client(srv, max_retries=3) as client:
        with pytest.raises(anthropic.BadRequestError):
            create(client)
    assert len(srv.requests) == 1
    assert srv.script == [("status", 401)]


def test_status_header_overrides(srv):
    # x-should-retry: false beats the status-code policy in the SDK
    srv.script = [("status", 529, {"x-should-retry": "false"})]
    with make_client(srv, max_retries=3) as client:
        with pytest.raises(anthropic.OverloadedError):
            create(client)
    assert len(srv.requests) == 1


def test_timeout_raises_api_timeout_error(srv):
    srv.script = [("timeout", 3)]
    start = time.monotonic()
    with make_client(srv, timeout=0.3, max_retries=0) as client:
        with pytest.raises(anthropic.APITimeoutError) as ei:
            create(client)
        assert time.monotonic() - start < 1.5
        assert isinstance(ei.value.__cause__, httpx2.TimeoutException)
        # the server is not stuck: the next request is answered at once
        assert SUMMARY_MARKER in create(client).content[0].text


def test_malformed_body_raises_json_decode_error(srv):
    srv.script = [("malformed", None)]
    with make_client(srv) as client:
        with pytest.raises(json.JSONDecodeError) as ei:
            create(client)
    # anthropic 2.12.0 does NOT wrap this in an anthropic exception
    assert type(ei.value) is json.JSONDecodeError
    assert not isinstance(ei.value, anthropic.AnthropicError)


def test_dropped_connection_raises_connection_error(srv):
    srv.script = ["drop"]
    with make_client(srv) as client:
        with pytest.raises(anthropic.APIConnectionError) as ei:
            create(client)
    assert type(ei.value) is anthropic.APIConnectionError  # not the APITimeoutError subclass
    assert isinstance(ei.value.__cause__, httpx2.RemoteProtocolError)


def test_script_for_path(srv):
    srv.script_for(COUNT_TOKENS_PATH, [429])
    with make_client(srv) as client:
        assert create(client).content  # messages unaffected
        with pytest.raises(anthropic.RateLimitError):
            client.messages.count_tokens(model=MODEL, messages=MESSAGES)
        assert client.messages.count_tokens(model=MODEL, messages=MESSAGES).input_tokens > 0


def test_invalid_script_actions_rejected(srv):
    for bad in [("nope", 1), ("status", 200), ("timeout", "x"), True, ()]:
        with pytest.raises(ValueError):
            srv.script = [bad]


def test_unknown_path_404_anthropic_shaped(srv):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    try:
        conn.request("GET", "/v1/nope")
        resp = conn.getresponse()
        body = json.loads(resp.read())
    finally:
        conn.close()
    assert resp.status == 404
    assert resp.getheader("content-type") == "application/json"
    assert resp.getheader("request-id")
    assert body["type"] == "error" and body["error"]["type"] == "not_found_error"
    assert body["error"]["message"]
    with make_client(srv) as client:
        with pytest.raises(anthropic.NotFoundError):
            client.models.list()


# --------------------------------------------------------------------------- concurrency & lifecycle


def test_concurrent_requests_are_not_serialized(srv):
    srv.latency = 0.2
    n = 16
    results: list = []
    errors: list = []
    barrier = threading.Barrier(n)
    with make_client(srv) as client:

        def worker() -> None:
            try:
                barrier.wait(timeout=5)
                results.append(create(client).content[0].text)
            except Exception as exc:  # pragma: no cover - surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(n)]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        elapsed = time.monotonic() - start

    assert errors == []
    assert len(results) == n and len(srv.requests) == n
    assert elapsed < n * 0.2 / 2  # serialized would be >= 3.2 s
    assert elapsed >= 0.2


def test_stop_is_clean_with_inflight_and_keepalive_connections():
    srv = FakeAnthropic()
    srv.start()
    client = make_client(srv, timeout=10)
    create(client)  # leaves an idle keep-alive connection (client not closed)
    srv.script = [("timeout", 30)]
    outcome: list = []

    def slow() -> None:
        try:
            create(client)
            outcome.append("ok")
        except anthropic.APIConnectionError as exc:
            outcome.append(type(exc))

    t = threading.Thread(target=slow)
    t.start()
    assert srv.requests.wait_for(2, timeout=5)
    start = time.monotonic()
    srv.stop()
    assert time.monotonic() - start < 2.0
    t.join(5)
    client.close()
    assert srv.live_threads() == []
    assert outcome == [anthropic.APIConnectionError]


# --------------------------------------------------------------------------- Message Batches


def batch_requests(n: int, prefix: str = "r") -> list:
    return [{"custom_id": f"{prefix}{i}", "params": {"model": MODEL, "max_tokens": 64, "messages": MESSAGES}} for i in range(n)]


def test_batches_create_retrieve_results_with_scripted_outcomes(srv):
    client = make_client(srv)
    srv.batch_latency = 0.1
    srv.batch_script = ["succeeded", ("errored", 529), "expired", "canceled", ("succeeded", "custom text")]
    b = client.messages.batches.create(requests=batch_requests(5))
    assert b.processing_status == "in_progress" and b.request_counts.processing == 5 and b.results_url is None
    time.sleep(0.15)
    b = client.messages.batches.retrieve(b.id)
    assert b.processing_status == "ended" and b.ended_at is not None
    assert (b.request_counts.succeeded, b.request_counts.errored, b.request_counts.expired, b.request_counts.canceled) == (2, 1, 1, 1)
    lines = list(client.messages.batches.results(b.id))
    assert [x.custom_id for x in lines] == ["r4", "r3", "r2", "r1", "r0"]  # not in request order
    by = {x.custom_id: x.result for x in lines}
    assert by["r0"].message.content[0].text.startswith(SUMMARY_MARKER) and by["r4"].message.content[0].text == "custom text"
    assert by["r1"].error.error.type == "overloaded_error" and by["r2"].type == "expired" and by["r3"].type == "canceled"
    assert srv.submitted_custom_ids() == [f"r{i}" for i in range(5)]


def test_batches_queue_expiry_cancel_list_and_validation(srv):
    client = make_client(srv)
    srv.batch_latency, srv.batch_concurrency = 0.2, 1
    a = client.messages.batches.create(requests=batch_requests(1, "a"))
    b = client.messages.batches.create(requests=batch_requests(1, "b"))
    fa, fb = srv.batches[a.id], srv.batches[b.id]
    assert fb.started == pytest.approx(fa.ends) and fb.ends == pytest.approx(fa.ends + 0.2)  # one at a time
    assert srv.simulated_processing_seconds() == pytest.approx(0.4)
    c = client.messages.batches.cancel(b.id)
    assert c.processing_status == "canceling"
    time.sleep(0.05)
    assert [x.result.type for x in client.messages.batches.results(b.id)] == ["canceled"]
    assert [x.id for x in client.messages.batches.list()] == [b.id, a.id]
    srv.batch_latency, srv.batch_concurrency, srv.batch_expiry = 5.0, None, 0.05
    e = client.messages.batches.create(requests=batch_requests(2, "e"))
    time.sleep(0.1)
    assert [x.result.type for x in client.messages.batches.results(e.id)] == ["expired", "expired"]
    with pytest.raises(anthropic.BadRequestError, match="custom_id"):
        client.messages.batches.create(requests=[{"custom_id": "bad id!", "params": {}}])
    with pytest.raises(anthropic.BadRequestError, match="duplicate"):
        client.messages.batches.create(requests=batch_requests(1) + batch_requests(1))
    with pytest.raises(anthropic.NotFoundError):
        client.messages.batches.retrieve("msgbatch_nope")
