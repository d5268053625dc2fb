"""Synthetic Codex CLI rollouts (0.169 shapes) for the Codex benchmark and tests."""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timedelta, timezone
from typing import Iterator

import orjson

from .catalog import DEFAULT_START
from .text import _WORDS


CODEX_MODEL = "gpt-5.5"
CODEX_AUTO_COMPACT = 244_800  # Codex compacts the history itself past this (gpt-5.5)


def codex_rollout(*, seed: int = 0, turns: int = 20, target_bytes: int | None = None,
                  compactions: int = 0, start: datetime = DEFAULT_START) -> Iterator[bytes]:
    """Yield the lines of a synthetic Codex CLI rollout in the shapes Codex 0.169 writes (a
    paginated file: ``ordinal`` on every line, ``metadata`` and the internal passthrough on
    response items): per turn a ``turn_context``, the prompt, tool rounds of reasoning (encrypted),
    parallel ``exec_command`` calls and their outputs, ``token_count`` events with the running
    usage, and the reply. ``compactions``: that many ``compacted`` lines (with a replacement
    history), evenly spaced; with ``target_bytes`` one every ~``target_bytes / (compactions+1)``;
    and, as Codex does, one whenever the history passes its auto-compaction threshold."""
    rng = random.Random(f"ctxtool.synth:codex:{seed}")
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    t = start.replace(tzinfo=timezone.utc) if start.tzinfo is None else start
    ordinal = 0
    size = 0
    total_in = 0
    history_tokens = 6000
    recent_users: list[str] = []

    def line(kind: str, payload: dict) -> bytes:
        nonlocal ordinal, t, size
        t += timedelta(milliseconds=rng.randint(5, 4000))
        obj = {"timestamp": t.isoformat(timespec="milliseconds").replace("+00:00", "Z"), "ordinal": ordinal,
               "type": kind, "payload": payload}
        ordinal += 1
        b = orjson.dumps(obj) + b"\n"
        size += len(b)
        return b

    def text(n: int) -> str:
        words = []
        k = 0
        while k < n:
            w = rng.choice(_WORDS)
            words.append(w)
            k += len(w) + 1
        return " ".join(words)

    base = ("You are Codex, a coding agent based on GPT-5. " + text(20_000))
    yield line("session_meta", {"session_id": sid, "id": sid, "timestamp": t.isoformat(), "cwd": "/work/app",
                                "originator": "codex_exec", "cli_version": "0.169.0", "source": "exec",
                                "model_provider": "openai", "base_instructions": {"text": base},
                                "history_mode": "paginated"})
    every = None
    if compactions and target_bytes:
        every = target_bytes // (compactions + 1)
    elif compactions:
        every_turns = max(1, turns // (compactions + 1))
    done_comp = 0
    turn = 0
    while (target_bytes is not None and size < target_bytes) or (target_bytes is None and turn < turns):
        turn += 1
        tid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        yield line("event_msg", {"type": "task_started", "turn_id": tid, "model_context_window": 258400})
        yield line("turn_context", {"turn_id": tid, "cwd": "/work/app", "approval_policy": "never",
                                    "sandbox_policy": {"type": "danger-full-access"}, "model": CODEX_MODEL,
                                    "effort": "medium", "summary": "auto"})
        prompt = text(rng.randint(40, 600))
        recent_users = (recent_users + [prompt])[-8:]
        yield line("response_item", {"type": "message", "id": f"msg_{rng.getrandbits(64):016x}", "role": "user",
                                     "content": [{"type": "input_text", "text": prompt}],
                                     "internal_chat_message_metadata_passthrough": {"turn_id": tid}})
        yield line("event_msg", {"type": "user_message", "message": prompt, "images": []})
        history_tokens += len(prompt) // 4
        for _round in range(rng.randint(0, 6)):
            enc = "gAAAA" + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
                                    for _ in range(rng.randint(800, 3000)))
            yield line("response_item", {"type": "reasoning", "id": f"rs_{rng.getrandbits(64):016x}",
                                         "summary": [{"type": "summary_text", "text": "**" + text(rng.randint(20, 200)) + "**"}],
                                         "content": None, "encrypted_content": enc})
            calls = []
            for _k in range(rng.choice((1, 1, 1, 2, 3))):
                cid = f"call_{rng.getrandbits(96):024x}"
                calls.append(cid)
                cmd = f"rg -n {rng.choice(_WORDS)} src/ | head -{rng.randint(5, 80)}"
                yield line("response_item", {"type": "function_call", "id": f"fc_{rng.getrandbits(64):016x}",
                                             "name": "exec_command", "arguments": orjson.dumps({"cmd": cmd}).decode(),
                                             "call_id": cid, "internal_chat_message_metadata_passthrough": {"turn_id": tid}})
            for cid in calls:
                n = int(rng.lognormvariate(7.5, 1.2))
                out = (f"Chunk ID: {rng.getrandbits(24):06x}\nWall time: 0.{rng.randint(0, 9999):04d} seconds\n"
                       f"Process exited with code 0\nOriginal token count: {n // 4}\nOutput:\n" + text(min(n, 40_000)))
                history_tokens += len(out) // 4
                yield line("response_item", {"type": "function_call_output", "id": f"fco_{rng.getrandbits(64):016x}",
                                             "call_id": cid, "output": out,
                                             "internal_chat_message_metadata_passthrough": {"turn_id": tid}})
            yield _codex_count(line, history_tokens, total_in)
            total_in += history_tokens
        reply = text(rng.randint(20, 1500))
        history_tokens += len(reply) // 4
        yield line("response_item", {"type": "message", "id": f"msg_{rng.getrandbits(64):016x}", "role": "assistant",
                                     "content": [{"type": "output_text", "text": reply, "annotations": []}],
                                     "internal_chat_message_metadata_passthrough": {"turn_id": tid}})
        yield _codex_count(line, history_tokens, total_in)
        total_in += history_tokens
        yield line("event_msg", {"type": "task_complete", "turn_id": tid, "last_agent_message": reply[:80]})
        due = (every is not None and size >= every * (done_comp + 1)) or \
            (every is None and compactions and turn % every_turns == 0)
        if (due and done_comp < compactions) or history_tokens > CODEX_AUTO_COMPACT:
            done_comp += 1
            summary = "Another language model started to solve this problem\n" + text(3000)
            rh = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": u}]} for u in recent_users]
            rh.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": summary}]})
            yield line("compacted", {"message": summary, "replacement_history": rh})
            history_tokens = 6000 + sum(len(u) for u in recent_users) // 4 + 750


def _codex_count(line, history_tokens: int, total_in: int) -> bytes:
    last = {"input_tokens": history_tokens, "cached_input_tokens": history_tokens * 9 // 10, "output_tokens": 120,
            "reasoning_output_tokens": 64, "total_tokens": history_tokens + 120}
    total = {"input_tokens": total_in + history_tokens, "cached_input_tokens": (total_in + history_tokens) * 9 // 10,
             "output_tokens": 120, "reasoning_output_tokens": 64, "total_tokens": total_in + history_tokens + 120}
    return line("event_msg", {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last,
                                                               "model_context_window": 258400}, "rate_limits": None})
