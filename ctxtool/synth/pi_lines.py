"""pi / OpenClaw session lines (version 3 and legacy version 1) of a synthetic session."""

from __future__ import annotations

from typing import Any

import orjson

from .catalog import BAD_TOOL_NAME, _CTRL_SENTINEL, _ERROR_FALLBACK, _UTF8_SENTINEL
from .plan import _Call, _PI_NAMES, _PI_PROVIDERS, _Turn, _plain_args, _result_order
from .text import _COMMANDS, _STEER, _WORDS


class PiLines:
    """The pi and pi-v1 emitters of :class:`~ctxtool.synth.generator.SessionGenerator`."""

    # -------------------------------------------------------------- pi / v1

    def _pi_wrap(self, typ: str, ms: int, extra: dict[str, Any]) -> dict[str, Any]:
        if self._v1:
            self._v1_index += 1
            e = {"type": typ, "timestamp": self._iso(ms)}
        else:
            eid = self._pid()
            e = {"type": typ, "id": eid, "parentId": self._leaf, "timestamp": self._iso(ms)}
            self._leaf = eid
        e.update(extra)
        return e

    def _pi_msg(self, msg: dict[str, Any], ms: int) -> dict[str, Any]:
        if self._v1:
            self._v1_index += 1
            return {"type": "message", "timestamp": self._iso(ms), "message": msg}
        eid = self._pid()
        e = {"type": "message", "id": eid, "parentId": self._leaf, "timestamp": self._iso(ms), "message": msg}
        self._leaf = eid
        return e

    def _pi_preamble(self) -> list[list[Any]]:
        api, provider, model = _PI_PROVIDERS[0][:3]
        ms = self._clock
        ts = self._iso(ms)
        header_id = self._uuid()
        items: list[list[Any]] = []
        if self._v1:
            header = {"type": "session", "id": header_id, "timestamp": ts, "cwd": self._cwd,
                      "provider": provider, "modelId": model, "thinkingLevel": self._thinking_level}
        else:
            header = {"type": "session", "version": 3, "id": header_id, "timestamp": ts, "cwd": self._cwd}
        if "missing_header" in self.corruptions:
            pass
        elif "invalid_header" in self.corruptions:
            bad = dict(header)
            bad["id"] = ""
            items.append([bad, ("invalid_header", None, "first line is JSON with type 'session' but an empty id"), None])
        else:
            items.append([header, None, None])
        if self._v1:
            self._v1_index = 0  # the header is entry 0
        else:
            ms = self._tick(1)
            items.append([self._pi_wrap("model_change", ms, {"provider": provider, "modelId": model}), None, None])
            items.append([self._pi_wrap("thinking_level_change", ms, {"thinkingLevel": self._thinking_level}), None, None])
            ms = self._tick(3)
            items.append([self._pi_wrap("custom", ms, {"customType": "model-snapshot", "data": {
                "timestamp": ms, "provider": provider, "modelApi": api, "modelId": model}}), None, None])
        if "missing_header" in self.corruptions:
            first = items[0][0] if items else None
            ident = first.get("id") if first else None
            if first is None:
                # v1 has nothing but the header before the first turn; tag the first turn's first line later
                self._pending_missing_header = True
            else:
                items[0][1] = ("missing_header", ident, "no session header; the file starts with an entry")
        return items

    def _pi_call_block(self, call: _Call, j: int, id_style: str) -> dict[str, Any]:
        kind = call.kind
        args = _plain_args(call, "oldText", "newText")
        name = call.name or _PI_NAMES[kind]
        if call.noid:
            return {"type": "toolCall", "name": name, "arguments": args}
        cid = f"{_PI_NAMES[kind]}_{j}" if id_style == "indexed" else "toolu_01" + self._b62(22)
        call.cid = cid
        return {"type": "toolCall", "id": cid, "name": name, "arguments": args}

    def _pi_usage(self, nums: tuple[int, int, int, int], rates: tuple[float, float, float, float]) -> dict[str, Any]:
        i, o, cr, cw = nums
        ci, co, ccr, ccw = i * rates[0] / 1e6, o * rates[1] / 1e6, cr * rates[2] / 1e6, cw * rates[3] / 1e6
        return {"input": i, "output": o, "cacheRead": cr, "cacheWrite": cw, "totalTokens": i + o + cr + cw,
                "cost": {"input": round(ci, 8), "output": round(co, 8), "cacheRead": round(ccr, 8),
                         "cacheWrite": round(ccw, 8), "total": round(ci + co + ccr + ccw, 8)}}

    def _pi_result(self, call: _Call, ms: int, orphan_id: str | None = None) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": call.out}]
        if call.image is not None:
            content.append({"type": "image", "data": call.image[1], "mimeType": call.image[0]})
        msg: dict[str, Any] = {"role": "toolResult", "toolCallId": orphan_id or call.cid,
                               "toolName": call.name or _PI_NAMES[call.kind], "content": content}
        if call.kind == "exec":
            msg["details"] = {"status": "failed" if call.err else "completed", "exitCode": 1 if call.err else 0,
                              "durationMs": call.ms, "cwd": self._cwd}
        msg["isError"] = call.err
        msg["timestamp"] = ms
        self._grow(len(call.out))
        self._tool_results += 1
        return self._pi_msg(msg, ms)

    def _pi_user(self, text: str, image: Any, ms: int, as_string: bool = False) -> dict[str, Any]:
        content: Any
        if as_string:
            content = text
        else:
            content = [{"type": "text", "text": text}]
            if image is not None:
                content.append({"type": "image", "data": image[1], "mimeType": image[0]})
        self._grow(len(text) + (1600 if image is not None else 0))
        return self._pi_msg({"role": "user", "content": content, "timestamp": ms}, ms)

    def _pi_turn(self, plan: _Turn) -> list[list[Any]]:
        rng = self.rng
        c = plan.corruption
        items: list[list[Any]] = []
        v1 = self._v1
        # occasional model switch (the second provider reuses indexed tool ids like "exec_0")
        if self._turns_done > 0 and self._rnd() < 0.08:
            self._prov ^= 1
            api, provider, model = _PI_PROVIDERS[self._prov][:3]
            ms = self._tick(self._ri(500, 5_000))
            items.append([self._pi_wrap("model_change", ms, {"provider": provider, "modelId": model}), None, None])
            if not v1:
                items.append([self._pi_wrap("custom", ms + 2, {"customType": "model-snapshot", "data": {
                    "timestamp": ms + 2, "provider": provider, "modelApi": api, "modelId": model}}), None, None])
        api, provider, model, rates, id_style, ttl = _PI_PROVIDERS[self._prov]
        cache = id_style == "toolu"
        if self._rnd() < 0.03:
            ms = self._tick(self._user_gap())
            cmd = self._pick(_COMMANDS).format(w=self._pick(_WORDS), d="src")
            out = self._slice(self.P.text, self._ri(50, 4_000))
            items.append([self._pi_msg({"role": "bashExecution", "command": cmd, "output": out, "exitCode": 0,
                                        "cancelled": False, "truncated": False, "timestamp": ms}, ms), None, None])
            self._grow(len(out))
        # prompts
        first_prompt = len(items)
        first_index = self._v1_index + 1
        for k, (text, image) in enumerate(plan.prompts):
            ms = self._tick(self._user_gap() if k == 0 else self._ri(2_000, 40_000))
            if c == "blank_user_turn" and k == 0:
                as_string = self._rnd() < 0.5
                e = self._pi_user("   \n  ", None, ms, as_string=as_string)
                items.append([e, ("blank_user_turn", e.get("id"), "user message with whitespace-only content"), None])
            else:
                items.append([self._pi_user(text, image, ms), None, None])
        self._turn_first_id = items[first_prompt][0].get("id")
        self._turn_first_index = first_index
        if c == "blank_lines":
            items.append([b"", ("blank_lines", None, "an empty line and a whitespace-only line"), None])
            items.append([b"   ", None, None])
        first_asst = -1
        for si, step in enumerate(plan.steps):
            target = c if si == plan.target else None
            ms = self._tick(self._ri(1_200, 25_000))
            blocks: list[dict[str, Any]] = []
            out_chars = 0
            if step.stop == "error":
                empty = c == "empty_error_turn"
                err_msg = self._pick(("terminated", "overloaded_error: Overloaded", "fetch failed",
                                      "Request timed out after 600000ms"))
                msg = {"role": "assistant",
                       "content": [] if empty else [{"type": "text", "text": _ERROR_FALLBACK}],
                       "api": api, "provider": provider, "model": model, "usage": self._pi_usage((0, 0, 0, 0), rates),
                       "stopReason": "error", "errorMessage": err_msg, "timestamp": ms}
                e = self._pi_msg(msg, ms)
                tag = None
                if empty:
                    tag = ("empty_error_turn", e.get("id"), "assistant with content [] and stopReason 'error'")
                items.append([e, tag, None])
                if first_asst < 0:
                    first_asst = len(items) - 1
                if not v1:
                    ms2 = self._tick(5)
                    items.append([self._pi_wrap("custom", ms2, {"customType": "openclaw:prompt-error", "data": {
                        "timestamp": ms2, "runId": self._uuid(), "sessionId": self._session_id, "provider": provider,
                        "model": model, "api": api, "error": err_msg}}), None, None])
                break
            if step.thinking:
                blocks.append({"type": "thinking", "thinking": step.thinking,
                               "thinkingSignature": self._sig() if cache else "reasoning_content"})
                out_chars += len(step.thinking)
            if step.text:
                blocks.append({"type": "text", "text": step.text})
                out_chars += len(step.text)
            calls = step.calls
            if target == "bad_tool_name":
                calls[0].name = BAD_TOOL_NAME
                calls[0].err = True
                calls[0].out = f"Tool {BAD_TOOL_NAME} not found"
                calls[0].image = None
            elif target == "no_id_call":
                calls[0].noid = True
            for j, call in enumerate(calls):
                blocks.append(self._pi_call_block(call, j, id_style))
                out_chars += len(call.arg) + len(call.arg2) + 40
            tag = None
            mangle = None
            stop = step.stop
            if stop == "partial":
                call = calls[0]
                blk = blocks[-1]
                blk["arguments"] = {}
                partial = orjson.dumps({"command": call.arg}).decode()[: self._ri(8, 14)]
                if c == "bad_control_char":
                    partial += _CTRL_SENTINEL + "echo done"
                    mangle = "ctrl"
                    tag = ("bad_control_char", call.cid, "raw TAB/ESC bytes inside the partialJson string")
                else:
                    tag = ("partial_json_call", call.cid, "toolCall with partialJson and empty arguments")
                blk["partialJson"] = partial
                stop = self._pick(("aborted", "error"))
            self._tool_calls += len(calls)
            nums = self._usage_numbers(out_chars, ttl, cache)
            if stop == "aborted" and step.stop != "partial":
                nums = (nums[0], max(1, nums[1] // 3), nums[2], nums[3])
            msg = {"role": "assistant", "content": blocks, "api": api, "provider": provider, "model": model,
                   "usage": self._pi_usage(nums, rates), "stopReason": stop}
            if stop in ("aborted", "error") and step.stop in ("aborted", "partial"):
                msg["errorMessage"] = "Request was aborted" if stop == "aborted" else "terminated"
            msg["timestamp"] = ms
            msg["responseId"] = ("msg_01" + self._b62(22)) if cache else f"chatcmpl-{rng.getrandbits(32):08x}"
            e = self._pi_msg(msg, ms)
            if target == "bad_tool_name":
                tag = ("bad_tool_name", calls[0].cid, f"toolCall named {BAD_TOOL_NAME!r}")
            elif target == "no_id_call":
                tag = ("no_id_call", None, "toolCall without an id (its result is absent)")
            elif target == "missing_result":
                tag = ("missing_result", calls[-1].cid, "toolCall whose toolResult line was removed")
            items.append([e, tag, mangle])
            if first_asst < 0:
                first_asst = len(items) - 1
            if stop != "toolUse":
                continue
            # results
            order, moved = _result_order(len(calls), target)
            for j in order:
                call = calls[j]
                ms = self._tick(call.ms)
                r_tag = None
                r_mangle = None
                if target == "invalid_utf8" and j == order[0]:
                    call.out = call.out[: len(call.out) // 2] + _UTF8_SENTINEL + call.out[len(call.out) // 2 :]
                    r_mangle = "utf8"
                e = self._pi_result(call, ms)
                if r_mangle:
                    r_tag = ("invalid_utf8", call.cid, "invalid UTF-8 bytes inside a toolResult text")
                items.append([e, r_tag, r_mangle])
            if moved is not None:
                ms = self._tick(self._ri(1_000, 20_000))
                items.append([self._pi_user(self._fill(self._pick(_STEER)), None, ms), None, None])
                call = calls[moved]
                ms = self._tick(call.ms)
                e = self._pi_result(call, ms)
                items.append([e, ("separated_result", call.cid, "toolResult written after a later user message"), None])
            if target == "duplicate_result":
                call = calls[order[0]]
                ms = self._tick(self._ri(5, 200))
                e = self._pi_result(call, ms)
                detail = "second toolResult for the same toolCallId in one turn"
                items.append([e, ("duplicate_result", call.cid, detail), None])
            elif target == "orphan_result":
                call = self._make_call("exec")
                oid = "toolu_01" + self._b62(22) if cache else f"call_{rng.getrandbits(64):016x}"
                ms = self._tick(call.ms)
                e = self._pi_result(call, ms, orphan_id=oid)
                items.append([e, ("orphan_result", oid, "toolResult whose toolCall is not in the session"), None])
        if plan.steps and plan.steps[-1].stop != "error" and not v1:
            ms = self._tick(self._ri(5, 60))
            items.append([self._pi_wrap("custom", ms, {"customType": "openclaw.cache-ttl", "data": {
                "timestamp": ms, "provider": provider, "modelId": model}}), None, None])
        self._tree_corruption(items, c, first_asst, "id", "parentId")
        if c == "nul_bytes" and first_asst >= 0:
            it = items[first_asst]
            it[1] = ("nul_bytes", it[0].get("id"), "line starts with a run of NUL bytes")
            it[2] = "nul"
        if self._pending_missing_header:
            self._pending_missing_header = False
            items[0][1] = ("missing_header", None, "no session header; the file starts with an entry")
        self._turns_done += 1
        return items

    def _tree_corruption(self, items: list[list[Any]], c: str | None, b: int, id_key: str, parent_key: str) -> None:
        """duplicate_id / dangling_parent / parent_cycle on the first assistant line ``b`` and its predecessor."""
        if c not in ("duplicate_id", "dangling_parent", "parent_cycle") or b < 1:
            return
        a = b - 1
        while a >= 0 and not (isinstance(items[a][0], dict) and id_key in items[a][0]):
            a -= 1
        A, B = items[a][0], items[b][0]
        if c == "duplicate_id":
            old, new = B[id_key], A[id_key]
            B[id_key] = new
            for obj, _, _ in items[b + 1 :]:
                if isinstance(obj, dict):
                    if obj.get(parent_key) == old:
                        obj[parent_key] = new
                    if obj.get("sourceToolAssistantUUID") == old:
                        obj["sourceToolAssistantUUID"] = new
            if self._leaf == old:
                self._leaf = new
            items[b][1] = ("duplicate_id", new, "entry reuses the id of the entry before it")
        elif c == "dangling_parent":
            missing = self._missing_pid() if id_key == "id" else self._uuid()
            B[parent_key] = missing
            items[b][1] = ("dangling_parent", B[id_key], f"{parent_key} {missing} does not exist")
        else:
            A[parent_key] = B[id_key]
            items[a][1] = ("parent_cycle", A[id_key], f"{A[id_key]} and {B[id_key]} are each other's parent")

    def _pi_compaction(self) -> list[list[Any]]:
        ms = self._tick(self._ri(2_000, 60_000))
        summary = self._summary_text()
        before = self._ctx
        if self._v1:
            e = self._pi_wrap("compaction", ms, {"summary": summary, "firstKeptEntryIndex": self._turn_first_index,
                                                  "tokensBefore": before})
        else:
            extra: dict[str, Any] = {"summary": summary, "firstKeptEntryId": self._turn_first_id, "tokensBefore": before,
                                     "details": {"readFiles": list(self._read_files)[-12:],
                                                 "modifiedFiles": list(self._modified_files)[-12:]}}
            if self._rnd() < 0.5:
                extra["fromHook"] = True
            e = self._pi_wrap("compaction", ms, extra)
        self._ctx = self._base_ctx + len(summary) // 4 + self._turn_tokens
        self._cached = 0
        return [[e, None, None]]
