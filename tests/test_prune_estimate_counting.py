"""Token counting in prune and estimate as the agents count (pi's per-message ceil, JSON.stringify
arguments, UTF-16 lengths, CJK weighting), OpenClaw's TTL gate and history-share split.
"""

from __future__ import annotations

import json
import math

from click.testing import CliRunner

from ctxtool import prune as lib
from ctxtool.cli import cli
from ctxtool.estimate import Options, estimate_file
from ctxtool.transcript import scan
from tests.support.pi_sessions import T0
from tests.support.pi_sessions import pi_session as _pi_session
from tests.support.pi_sessions import user as _user


# ---------------------------------------------------------------- builders

def _write(path, objs):
    with open(path, "w", encoding="utf-8", newline="") as f:
        for o in objs:
            f.write(json.dumps(o, ensure_ascii=False) + "\n")
    return str(path)


def _asst(blocks, stop="stop", model="claude-sonnet-4-5"):
    return {"role": "assistant", "content": blocks, "api": "anthropic-messages", "provider": "anthropic", "model": model,
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": stop}


def _call(cid, name="read", args=None):
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args if args is not None else {"path": "a"}}


def _result(cid, text="ok", name="read"):
    return {"role": "toolResult", "toolCallId": cid, "toolName": name, "content": [{"type": "text", "text": text}],
            "isError": False}


def _cc(t, uuid, parent, **kw):
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/w", "sessionId": "S",
            "version": "2.1.39", "type": t, "uuid": uuid, "timestamp": "2026-01-01T00:00:00.000Z", **kw}


def _cc_asst(uuid, parent, block, mid):
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 50, "output_tokens": 9}
    return _cc("assistant", uuid, parent, requestId="req_" + mid,
               message={"model": "claude-opus-4-6", "id": mid, "type": "message", "role": "assistant",
                        "content": [block], "stop_reason": None, "usage": usage})


def _simulate(path, strategy, **kw):
    t = scan(str(path), None, keep=True)
    return lib.simulate(t.format_name, t.entries, strategy, **kw)


def _pi_tokens(chars_per_message):
    """pi's estimateTokens summed: ceil(chars / 4) per agent message."""
    return sum(math.ceil(c / 4) for c in chars_per_message)


def _js_len(s):
    return len(s.encode("utf-16-le")) // 2


def _prune_cli(*args):
    return CliRunner().invoke(cli, ["prune", *map(str, args)])


# ---------------------------------------------------------------- prune: token counting


def test_prune_heuristic_ceils_each_tool_result_separately(tmp_path):
    p = _pi_session(tmp_path / "s.jsonl", [
        _user("hi"),
        _asst([_call("c1"), _call("c2"), _call("c3")], stop="toolUse"),
        _result("c1", "a"), _result("c2", "b"), _result("c3", "c"),
        _asst([{"type": "text", "text": "done"}]),
    ])
    call_chars = len("read") + len('{"path":"a"}')
    expected = _pi_tokens([2, 3 * call_chars, 1, 1, 1, 4])  # 1 + 12 + 1 + 1 + 1 + 1 = 17
    assert estimate_file(p)["tokens"] == expected  # estimate agrees with pi
    r = _simulate(p, "spacebot")
    assert r.tokens_before == expected  # prune says 9


def test_prune_heuristic_uses_pi_rules_for_custom_and_bash(tmp_path):
    img = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    p = _pi_session(tmp_path / "s.jsonl", [
        _user("hello"),
        {"role": "custom", "customType": "note", "content": [{"type": "text", "text": "abc"}, img], "display": True},
        {"role": "bashExecution", "command": "ls", "output": "abcdef", "exitCode": 0, "cancelled": False,
         "truncated": False},
        _asst([{"type": "text", "text": "ok"}]),
    ])
    expected = _pi_tokens([5, 3 + 4800, 2 + 6, 2])  # 2 + 1201 + 2 + 1 = 1206
    assert estimate_file(p)["tokens"] == expected
    assert _simulate(p, "spacebot").tokens_before == expected  # prune says 9


def test_prune_tiktoken_does_not_count_user_images():
    counter = lib.tiktoken_counter("cl100k_base")
    img = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    with_image = [{"role": "user", "content": [{"type": "text", "text": "look"}, img]}]
    text_only = [{"role": "user", "content": [{"type": "text", "text": "look"}]}]
    assert counter(with_image) == counter(text_only)


# ---------------------------------------------------------------- prune: openclaw


def test_openclaw_soft_trim_counts_head_and_tail_in_utf16_units():
    u = lib.Unit("toolResult", "toolResult",
                 [{"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "\U0001F600" * 4000}]}],
                 [4], tool_id="c1", tool_name="exec")
    new, _ = lib.soft_trim(u, {"maxChars": 4000, "headChars": 1500, "tailChars": 1500})
    text = new.blocks[0]["content"][0]["text"]
    assert text.endswith("\n\n[Tool result trimmed: kept first 1500 chars and last 1500 chars of 8000 chars.]")
    head, rest = text.split("\n...\n", 1)
    tail = rest.split("\n\n[Tool result trimmed:", 1)[0]
    assert _js_len(head) == 1500
    assert _js_len(tail) == 1500


def test_openclaw_cjk_weight_covers_cjk_punctuation():
    assert lib.cjk_len("你好") == 8
    assert lib.cjk_len("。、") == 8
    assert lib.cjk_len("，？") == 8


def test_openclaw_ttl_gate_uses_cache_touch_of_the_current_model(tmp_path):
    p = _pi_session(tmp_path / "s.jsonl", [
        _user("start"), _asst([_call("c1", "exec", {"command": "x"})], stop="toolUse"), _result("c1", "A" * 8000, "exec"),
        _asst([{"type": "text", "text": "a"}]), _user("u2"), _asst([{"type": "text", "text": "b"}]),
        _user("u3"), _asst([{"type": "text", "text": "c"}]),
        {"type": "custom", "customType": "openclaw.cache-ttl",
         "data": {"timestamp": T0, "provider": "anthropic", "modelId": "claude-sonnet-4-5"}},
        # a recent touch, but for another provider/model: it must not keep the gate closed
        {"type": "custom", "customType": "openclaw.cache-ttl",
         "data": {"timestamp": T0 + 3_600_000, "provider": "openai", "modelId": "gpt-5"}},
    ])
    now = (T0 + 3_660_000) / 1000  # 61 min after the anthropic touch, 1 min after the openai one
    r = _simulate(p, "openclaw", window=5000, now=now)
    assert r.details["cache_touch"] == T0 / 1000
    assert r.fired and r.details["ttl_gate"].startswith("expired")


# ---------------------------------------------------------------- prune: history-share


def test_history_share_still_splits_after_an_unanswered_call(tmp_path):
    msgs = [_user("start " + "x" * 400), _asst([_call("c0")], stop="toolUse"), _user("again " + "y" * 400)]
    for i in range(1, 9):
        msgs += [_asst([_call(f"c{i}")], stop="toolUse"), _result(f"c{i}", "z" * 400),
                 _asst([{"type": "text", "text": "ok" * 50}]), _user("next " + "w" * 400)]
    p = _pi_session(tmp_path / "s.jsonl", msgs)
    r = _simulate(p, "history-share", window=1000)
    assert r.tokens_before > 500 * 2
    assert r.fired and r.details["rounds"] >= 1
    assert r.tokens_after < r.tokens_before


# ---------------------------------------------------------------- estimate


def test_estimate_claude_split_lines_are_one_message(tmp_path):
    lines = [
        _cc("user", "u1", None, message={"role": "user", "content": "Fix it"}),  # 6 chars -> 2
        _cc_asst("a1", "u1", {"type": "thinking", "thinking": "a", "signature": "s"}, "msg_1"),
        _cc_asst("a2", "a1", {"type": "text", "text": "b"}, "msg_1"),
        _cc_asst("a3", "a2", {"type": "text", "text": "c"}, "msg_1"),  # one message: 3 chars -> 1
    ]
    p = _write(tmp_path / "c.jsonl", lines)
    res = estimate_file(p)
    assert res["breakdown"]["by_role"]["assistant"] == 1
    assert res["tokens"] == 3


def test_estimate_tool_arguments_measured_like_json_stringify(tmp_path):
    args = {"v": [1.0] * 40}
    js = '{"v":[' + ",".join(["1"] * 40) + "]}"  # JSON.stringify(JSON.parse(...)) in JS
    p = _pi_session(tmp_path / "s.jsonl", [_user("go"), _asst([_call("c1", "read", args)], stop="stop")])
    expected = _pi_tokens([2, len("read") + len(js)])
    assert estimate_file(p, Options())["tokens"] == expected
