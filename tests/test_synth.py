"""Tests for ctxtool.synth, the synthetic session generator."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtool.synth import BAD_TOOL_NAME, BOM, CORRUPTIONS, FORMATS, SessionGenerator, generate, write_session

HEX8 = re.compile(r"^[0-9a-f]{8}$")
COMPACTING = ("pi", "pi-v1", "claude")


def run(fmt: str, **kw: Any) -> tuple[list[bytes], dict[str, Any]]:
    gen = SessionGenerator(fmt, **kw)
    lines = list(gen)
    assert gen.stats is not None
    return lines, gen.stats


def loads(line: bytes) -> Any:
    if line.startswith(BOM):
        line = line[len(BOM) :]
    return orjson.loads(line)


def iso_ms(ts: str) -> int:
    return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)


# ---------------------------------------------------------------- accessors


def message_of(fmt: str, obj: dict[str, Any]) -> dict[str, Any] | None:
    if fmt == "messages":
        return obj
    if obj.get("type") in ("message", "user", "assistant"):
        return obj.get("message")
    return None


def calls_of(fmt: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    msg = message_of(fmt, obj)
    if not msg or msg.get("role") != "assistant" or not isinstance(msg.get("content"), list):
        return []
    want = "toolCall" if fmt in ("pi", "pi-v1") else "tool_use"
    return [b for b in msg["content"] if b.get("type") == want]


def results_of(fmt: str, obj: dict[str, Any]) -> list[str]:
    msg = message_of(fmt, obj)
    if not msg:
        return []
    if fmt in ("pi", "pi-v1"):
        return [msg["toolCallId"]] if msg.get("role") == "toolResult" else []
    content = msg.get("content")
    if msg.get("role") != "user" or not isinstance(content, list):
        return []
    return [b["tool_use_id"] for b in content if b.get("type") == "tool_result"]


def is_prompt(fmt: str, obj: dict[str, Any]) -> bool:
    """A user message that is not a tool result (a typed prompt)."""
    msg = message_of(fmt, obj)
    return bool(msg) and msg.get("role") == "user" and not results_of(fmt, obj)


def is_assistant(fmt: str, obj: dict[str, Any]) -> bool:
    msg = message_of(fmt, obj)
    return bool(msg) and msg.get("role") == "assistant"


def id_keys(fmt: str) -> tuple[str, str]:
    return ("uuid", "parentUuid") if fmt == "claude" else ("id", "parentId")


def parsed(lines: list[bytes]) -> list[Any]:
    out = []
    for line in lines:
        try:
            out.append(loads(line))
        except orjson.JSONDecodeError:
            out.append(None)
    return out


def spans(fmt: str, objs: list[Any]) -> list[tuple[int, list[dict[str, Any]], list[tuple[int, str]]]]:
    """(line index of the assistant, its calls, [(line index, result id)]) per assistant span.

    A span runs from one assistant API message to the next one; Claude Code
    chunks sharing a message.id form one assistant message.
    """
    out: list[tuple[int, list[dict[str, Any]], list[tuple[int, str]]]] = []
    cur_mid = None
    for i, o in enumerate(objs):
        if o is None:
            continue
        if is_assistant(fmt, o):
            mid = o["message"].get("id") if fmt == "claude" else None
            if fmt == "claude" and mid == cur_mid and out:
                out[-1][1].extend(calls_of(fmt, o))
                continue
            cur_mid = mid
            out.append((i, list(calls_of(fmt, o)), []))
        elif out:
            for rid in results_of(fmt, o):
                out[-1][2].append((i, rid))
    return out


# ------------------------------------------------------------- determinism


@pytest.mark.parametrize("fmt", FORMATS)
def test_same_arguments_same_bytes(fmt: str) -> None:
    kw: dict[str, Any] = dict(seed=7, turns=12, compactions=1 if fmt in COMPACTING else 0)
    a = list(generate(fmt, **kw))
    b = list(generate(fmt, **kw))
    assert a == b
    gen = SessionGenerator(fmt, **kw)
    assert list(gen) == a
    assert list(gen) == a  # iterating again restarts
    assert list(generate(fmt, **{**kw, "seed": 8})) != a


def test_start_changes_only_timestamps() -> None:
    a = b"".join(generate("pi", seed=1, turns=3))
    b = b"".join(generate("pi", seed=1, turns=3, start=datetime(2025, 1, 2, 3, 4, 5)))
    assert a != b
    first = loads(b.split(b"\n", 1)[0])
    assert first["timestamp"] == "2025-01-02T03:04:05.000Z"


@settings(max_examples=12, deadline=None)
@given(
    fmt=st.sampled_from(FORMATS),
    seed=st.integers(0, 2**32),
    turns=st.integers(1, 6),
    tool_ratio=st.floats(0, 0.95),
    parallel=st.booleans(),
)
def test_property_every_line_parses(fmt: str, seed: int, turns: int, tool_ratio: float, parallel: bool) -> None:
    lines = list(generate(fmt, seed=seed, turns=turns, tool_ratio=tool_ratio, parallel_calls=parallel))
    for line in lines:
        assert line.endswith(b"\n") and b"\n" not in line[:-1]
        orjson.loads(line)
    assert lines == list(generate(fmt, seed=seed, turns=turns, tool_ratio=tool_ratio, parallel_calls=parallel))


# --------------------------------------------------------------- structure


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clean_lines_parse_and_tools_pair(fmt: str, seed: int) -> None:
    lines, stats = run(fmt, seed=seed, turns=25, compactions=2 if fmt in COMPACTING else 0)
    objs = [orjson.loads(line) for line in lines]
    assert all(line.endswith(b"\n") and b"\n" not in line[:-1] and b"\r" not in line for line in lines)
    assert stats["lines"] == len(lines) and stats["bytes"] == sum(map(len, lines))
    assert stats["corruptions"] == []
    n_calls = 0
    for _, calls, results in spans(fmt, objs):
        ids = [c["id"] for c in calls]
        n_calls += len(ids)
        assert len(set(ids)) == len(ids)
        assert sorted(r for _, r in results) == sorted(ids), "each call has exactly one result in its span"
    assert n_calls == stats["tool_calls"] == stats["tool_results"] > 0


def test_pi_v3_structure() -> None:
    lines, stats = run("pi", seed=3, turns=40, compactions=2)
    objs = [orjson.loads(line) for line in lines]
    head = objs[0]
    assert head["type"] == "session" and head["version"] == 3 and head["id"] and head["cwd"]
    assert [o["type"] for o in objs[1:4]] == ["model_change", "thinking_level_change", "custom"]
    assert objs[3]["customType"] == "model-snapshot"
    assert objs[4]["type"] == "message" and objs[4]["message"]["role"] == "user"
    seen: dict[str, int] = {}
    for i, o in enumerate(objs[1:], 1):
        assert HEX8.match(o["id"]), o["id"]
        assert o["id"] not in seen
        if i == 1:
            assert o["parentId"] is None
        else:
            assert o["parentId"] in seen, "parentId refers to an earlier entry"
        seen[o["id"]] = i
    compactions = [o for o in objs if o["type"] == "compaction"]
    assert len(compactions) == 2 == stats["compactions"]
    for c in compactions:
        assert c["firstKeptEntryId"] in seen and seen[c["firstKeptEntryId"]] < seen[c["id"]]
        kept = objs[seen[c["firstKeptEntryId"]]]
        assert kept["message"]["role"] == "user"
        assert c["summary"] and c["tokensBefore"] > 0 and set(c["details"]) == {"readFiles", "modifiedFiles"}
    # every assistant is eventually followed by an openclaw.cache-ttl entry or an error record
    roles = [(o["type"], o.get("customType"), (o.get("message") or {}).get("role")) for o in objs]
    assert ("custom", "openclaw.cache-ttl", None) in roles
    for i, o in enumerate(objs):
        msg = o.get("message") or {}
        if msg.get("role") == "assistant":
            u = msg["usage"]
            assert set(u) == {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}
            assert u["totalTokens"] == u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
            if msg["stopReason"] == "error":
                assert u["totalTokens"] == 0 and msg["errorMessage"]
            for b in msg["content"]:
                if b["type"] == "thinking":
                    assert b["thinkingSignature"]
    ts = [iso_ms(o["timestamp"]) for o in objs]
    assert ts == sorted(ts)


def test_pi_usage_grows_and_drops_after_compaction() -> None:
    lines, _ = run("pi", seed=11, turns=30, compactions=1)
    totals: list[int | str] = []
    for o in map(orjson.loads, lines):
        if o["type"] == "compaction":
            totals.append("C")
        msg = o.get("message") or {}
        if msg.get("role") == "assistant" and msg["stopReason"] != "error":
            totals.append(msg["usage"]["input"] + msg["usage"]["cacheRead"] + msg["usage"]["cacheWrite"])
    cut = totals.index("C")
    before, after = totals[:cut], totals[cut + 1 :]
    assert before[-1] > before[0] and after[-1] > after[0]
    assert after[0] < before[-1]


def test_pi_v1_structure() -> None:
    lines, _ = run("pi-v1", seed=4, turns=20, compactions=1)
    objs = [orjson.loads(line) for line in lines]
    head = objs[0]
    assert head["type"] == "session" and "version" not in head
    assert {"provider", "modelId", "thinkingLevel"} <= set(head)
    assert all("id" not in o and "parentId" not in o for o in objs[1:])
    assert not any(o["type"] == "custom" for o in objs)
    (comp,) = [o for o in objs if o["type"] == "compaction"]
    kept = objs[comp["firstKeptEntryIndex"]]
    assert kept["type"] == "message" and kept["message"]["role"] == "user"


def test_pi_reuses_indexed_tool_ids_across_turns() -> None:
    found = False
    for seed in range(6):
        lines, _ = run("pi", seed=seed, turns=60)
        seen: dict[str, int] = {}
        for i, o in enumerate(map(orjson.loads, lines)):
            for c in calls_of("pi", o):
                if c["id"] in seen and re.fullmatch(r"[a-z_]+_\d", c["id"]):
                    found = True
                seen.setdefault(c["id"], i)
        if found:
            break
    assert found, "expected 'exec_0'-style ids reused by the second provider"


def test_claude_structure() -> None:
    lines, stats = run("claude", seed=5, turns=40, compactions=2)
    objs = [orjson.loads(line) for line in lines]
    by_uuid: dict[str, int] = {}
    holder_of: dict[str, str] = {}
    for i, o in enumerate(objs):
        if "uuid" in o:
            assert o["uuid"] not in by_uuid
            if o["parentUuid"] is not None:
                assert o["parentUuid"] in by_uuid, "parentUuid refers to an earlier line"
            elif not (o["type"] == "system" and o.get("subtype") == "compact_boundary"):
                assert o["type"] == "user" and all("uuid" in p or p["type"] != "user" for p in objs[:i])
            by_uuid[o["uuid"]] = i
        for c in calls_of("claude", o):
            holder_of[c["id"]] = o["uuid"]
            assert len(o["message"]["content"]) == 1, "one content block per line"
        for rid in results_of("claude", o):
            assert o["parentUuid"] == holder_of[rid] == o["sourceToolAssistantUUID"]
            assert "toolUseResult" in o
    # split assistant lines: consecutive lines sharing message.id; only the last has a stop_reason
    groups: list[list[int]] = []
    prev_mid = None
    for i, o in enumerate(objs):
        if o.get("type") == "assistant":
            mid = o["message"]["id"]
            if mid == prev_mid:
                groups[-1].append(i)
            else:
                groups.append([i])
            prev_mid = mid
        else:
            prev_mid = None
    assert any(len(g) >= 3 for g in groups)
    for g in groups:
        chunks = [objs[i] for i in g]
        assert len({c["message"]["id"] for c in chunks}) == 1
        assert len({c.get("requestId") for c in chunks}) == 1
        assert all(c["message"]["stop_reason"] is None for c in chunks[:-1])
        last = chunks[-1]["message"]
        interrupted = g[-1] + 1 < len(objs) and "[Request interrupted by user]" in lines[g[-1] + 1].decode()
        if last["stop_reason"] is None:
            assert interrupted
        else:
            for c in chunks[:-1]:
                u = c["message"]["usage"]
                assert u["output_tokens"] < 20
                assert u["cache_read_input_tokens"] == last["usage"]["cache_read_input_tokens"]
    # compaction: boundary with null parent + logicalParentUuid, then the isCompactSummary line
    bounds = [i for i, o in enumerate(objs) if o.get("subtype") == "compact_boundary"]
    assert len(bounds) == 2 == stats["compactions"]
    for i in bounds:
        b = objs[i]
        assert b["parentUuid"] is None and b["logicalParentUuid"] in by_uuid
        assert b["compactMetadata"]["trigger"] == "auto" and b["compactMetadata"]["preTokens"] > 0
        nxt = objs[i + 1]
        assert nxt["isCompactSummary"] is True and nxt["parentUuid"] == b["uuid"]
        assert nxt["message"]["content"].startswith("This session is being continued")
    types = {o["type"] for o in objs}
    assert {"user", "assistant", "file-history-snapshot", "progress"} <= types
    ts = [iso_ms(o["timestamp"]) for o in objs if "uuid" in o]
    assert ts == sorted(ts)


def test_messages_structure() -> None:
    lines, _ = run("messages", seed=6, turns=40)
    objs = [orjson.loads(line) for line in lines]
    assert objs[0]["role"] == "user"
    assert all(set(o) == {"role", "content"} for o in objs)
    for i, o in enumerate(objs):
        calls = calls_of("messages", o)
        if calls:
            nxt = objs[i + 1]
            assert nxt["role"] == "user"
            got = [b["tool_use_id"] for b in nxt["content"] if b["type"] == "tool_result"]
            assert got == [c["id"] for c in calls]
            assert all(b["type"] == "tool_result" for b in nxt["content"])
        for rid in results_of("messages", o):
            assert rid in {c["id"] for c in calls_of("messages", objs[i - 1])}


def test_content_is_realistic() -> None:
    """One longer session of each tree format carries the variety the toolkit must handle."""
    for fmt in ("pi", "claude"):
        lines, _ = run(fmt, seed=9, turns=120)
        blob = b"".join(lines)
        objs = [orjson.loads(line) for line in lines]
        text = blob.decode()
        assert re.search(r"[\u4e00-\u9fff]", text), "CJK text"
        assert b'"type":"image"' in blob
        assert b'"type":"thinking"' in blob
        assert b'"isError":true' in blob or b'"is_error":true' in blob
        assert max(map(len, lines)) > 100_000, "some very large tool results"
        assert sum(len(line) > 20_000 for line in lines) >= 5
        spans_ = spans(fmt, objs)
        assert any(len(calls) >= 2 for _, calls, _ in spans_), "parallel calls"
        names = {c["name"] for _, calls, _ in spans_ for c in calls}
        assert len(names) >= 5
        # consecutive user prompts
        prompts = [i for i, o in enumerate(objs) if is_prompt(fmt, o)]
        assert any(
            b - a <= 3 and not any(is_assistant(fmt, objs[k]) for k in range(a, b))
            for a, b in zip(prompts, prompts[1:])
        )
        ts = sorted(iso_ms(o["timestamp"]) for o in objs if "timestamp" in o and isinstance(o["timestamp"], str))
        gaps = [b - a for a, b in zip(ts, ts[1:])]
        assert max(gaps) > 30 * 60_000, "idle gaps"
        assert sum(g < 5_000 for g in gaps) > len(gaps) // 3, "bursts"
    lines, _ = run("pi", seed=9, turns=120)
    stops = {orjson.loads(x)["message"].get("stopReason") for x in lines if b'"role":"assistant"' in x}
    assert {"stop", "toolUse", "error", "aborted"} <= stops


# ------------------------------------------------------------- target size


@pytest.mark.parametrize("fmt", FORMATS)
def test_target_bytes_reached_within_ten_percent(fmt: str, tmp_path: Any) -> None:
    target = 3_000_000
    path = tmp_path / "s.jsonl"
    stats = write_session(path, fmt, seed=2, target_bytes=target, compactions=2 if fmt in COMPACTING else 0)
    size = path.stat().st_size
    assert stats["bytes"] == size
    assert target <= size <= target * 1.1
    data = path.read_bytes()
    assert data.count(b"\n") == stats["lines"]
    assert sum(stats["entries"].values()) == stats["lines"]
    if fmt in COMPACTING:
        assert stats["compactions"] == 2


def test_small_target_bytes() -> None:
    for target in (150_000, 700_000):
        lines, stats = run("pi", seed=1, target_bytes=target)
        assert target <= stats["bytes"] <= target * 1.1


# ------------------------------------------------------------- corruptions


def check_corruption(fmt: str, rec: dict[str, Any], lines: list[bytes], objs: list[Any]) -> None:
    kind, n, ident = rec["kind"], rec["line"], rec["id"]
    line = lines[n - 1]
    o = objs[n - 1]
    id_key, parent_key = id_keys(fmt)
    if kind == "torn_tail":
        assert n == len(lines) and not line.endswith(b"\n") and o is None
    elif kind == "crlf":
        assert n == 1 and all(x.endswith(b"\r\n") for x in lines[:-1])
    elif kind == "bom":
        assert n == 1 and line.startswith(BOM)
    elif kind == "blank_lines":
        assert line.strip() == b"" and lines[n].strip() == b""
    elif kind == "nul_bytes":
        assert b"\x00" in line and o is None
    elif kind == "invalid_utf8":
        with pytest.raises(UnicodeDecodeError):
            line.decode("utf-8")
        assert ident.encode() in line
    elif kind == "bad_control_char":
        assert o is None
        body = line.rstrip(b"\r\n")
        assert any(b < 0x20 for b in body) and ident.encode() in line
        line.decode("utf-8")  # still valid UTF-8; only the JSON is broken
    elif kind == "missing_header":
        assert n == 1 and o["type"] != "session"
    elif kind == "invalid_header":
        assert n == 1 and o["type"] == "session" and o["id"] == ""
    else:
        assert o is not None, f"{kind} line should parse"
        msg = message_of(fmt, o)
        if kind == "partial_json_call":
            (blk,) = [b for b in calls_of(fmt, o) if "partialJson" in b]
            assert blk["id"] == ident and blk["arguments"] == {} and msg["stopReason"] in ("aborted", "error")
        elif kind == "empty_error_turn":
            assert msg["content"] == [] and msg["stopReason"] == "error" and msg["usage"]["totalTokens"] == 0
        elif kind == "blank_user_turn":
            assert msg["role"] == "user"
            c = msg["content"]
            texts = [c] if isinstance(c, str) else [b["text"] for b in c]
            assert texts and all(t.strip() == "" for t in texts)
        elif kind == "bad_tool_name":
            assert [c for c in calls_of(fmt, o) if c["name"] == BAD_TOOL_NAME and c["id"] == ident]
        elif kind == "no_id_call":
            assert [c for c in calls_of(fmt, o) if "id" not in c]
        elif kind == "missing_result":
            assert ident in [c["id"] for c in calls_of(fmt, o)]
            span = next(s for s in reversed(spans(fmt, objs)) if s[0] <= n - 1)
            assert ident in [c.get("id") for c in span[1]]
            assert ident not in [r for _, r in span[2]]
        elif kind == "orphan_result":
            assert ident in results_of(fmt, o)
            assert not any(ident == c.get("id") for x in objs if x for c in calls_of(fmt, x))
        elif kind == "duplicate_result":
            here = results_of(fmt, o)
            assert ident in here
            span = next(s for s in reversed(spans(fmt, objs)) if s[0] < n - 1)
            assert [r for _, r in span[2]].count(ident) == 2
        elif kind == "separated_result":
            assert ident in results_of(fmt, o)
            call_line = max(
                i for i, x in enumerate(objs[: n - 1]) if x and ident in [c.get("id") for c in calls_of(fmt, x)]
            )
            assert any(x and is_prompt(fmt, x) for x in objs[call_line + 1 : n - 1])
        elif kind == "duplicate_id":
            assert o[id_key] == ident and any(x and x.get(id_key) == ident for x in objs[: n - 1])
        elif kind == "dangling_parent":
            assert o[id_key] == ident
            assert o[parent_key] not in {x.get(id_key) for x in objs if x}
        elif kind == "parent_cycle":
            partner = next(x for x in objs if x and x.get(id_key) == o[parent_key])
            assert o[id_key] == ident and partner[parent_key] == ident
        else:  # pragma: no cover
            raise AssertionError(f"no check for {kind}")


CASES = [(fmt, kind) for kind, fmts in CORRUPTIONS.items() for fmt in FORMATS if fmt in fmts]


@pytest.mark.parametrize("fmt,kind", CASES)
def test_each_corruption_at_recorded_line(fmt: str, kind: str) -> None:
    lines, stats = run(fmt, seed=3, turns=8, corruptions=[kind])
    recs = stats["corruptions"]
    assert [r["kind"] for r in recs] == [kind]
    objs = parsed(lines)
    check_corruption(fmt, recs[0], lines, objs)
    # every other line still parses
    bad = {r["line"] for r in recs}
    if kind == "blank_lines":
        bad.add(recs[0]["line"] + 1)
    for i, (line, o) in enumerate(zip(lines, objs), 1):
        if i not in bad:
            assert o is not None, (i, line[:200])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("by_bytes", [False, True])
def test_all_corruptions_together(fmt: str, by_bytes: bool) -> None:
    kinds = [k for k, fmts in CORRUPTIONS.items() if fmt in fmts and k != "invalid_header"]
    kw: dict[str, Any] = {"target_bytes": 2_000_000} if by_bytes else {"turns": 10}
    lines, stats = run(fmt, seed=12, corruptions=kinds, compactions=1 if fmt in COMPACTING else 0, **kw)
    recs = stats["corruptions"]
    assert sorted(r["kind"] for r in recs) == sorted(kinds)
    assert [r["line"] for r in recs] == sorted(r["line"] for r in recs)
    objs = parsed(lines)
    for rec in recs:
        check_corruption(fmt, rec, lines, objs)
    raw = b"".join(lines)
    assert raw.count(b"\n") == len(lines) - 1  # torn tail: no final newline
    again = generate(fmt, seed=12, corruptions=kinds, compactions=1 if fmt in COMPACTING else 0, **kw)
    assert list(again) == lines


def test_write_session_reports_corruptions(tmp_path: Any) -> None:
    path = tmp_path / "c.jsonl"
    stats = write_session(path, "claude", seed=1, turns=6, corruptions=("dangling_parent", "torn_tail"))
    data = path.read_bytes()
    assert not data.endswith(b"\n") and len(data) == stats["bytes"]
    assert {r["kind"] for r in stats["corruptions"]} == {"dangling_parent", "torn_tail"}
    assert set(stats) >= {"path", "format", "bytes", "lines", "turns", "entries", "tool_calls", "tool_results",
                          "compactions", "corruptions"}


# --------------------------------------------------------------- errors


@pytest.mark.parametrize("fmt,kind", [(f, k) for k, fs in CORRUPTIONS.items() for f in FORMATS if f not in fs])
def test_corruption_for_wrong_format_raises(fmt: str, kind: str) -> None:
    with pytest.raises(ValueError, match=re.escape(kind)) as exc:
        generate(fmt, corruptions=[kind])
    assert fmt in str(exc.value)


@pytest.mark.parametrize(
    "fmt,kw",
    [
        ("jsonl", {}),
        ("pi", {"corruptions": ["no_such_thing"]}),
        ("pi", {"corruptions": ["crlf", "crlf"]}),
        ("pi", {"corruptions": ["missing_header", "invalid_header"]}),
        ("messages", {"compactions": 1}),
        ("pi", {"turns": 0}),
        ("pi", {"target_bytes": 0}),
        ("pi", {"tool_ratio": 1.5}),
        ("claude", {"compactions": -1}),
    ],
)
def test_invalid_arguments_raise_at_call_time(fmt: str, kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        generate(fmt, **kw)


def test_naive_start_is_utc() -> None:
    a = list(generate("claude", seed=0, turns=2, start=datetime(2026, 3, 1, 9)))
    b = list(generate("claude", seed=0, turns=2, start=datetime(2026, 3, 1, 9, tzinfo=timezone.utc)))
    assert a == b
