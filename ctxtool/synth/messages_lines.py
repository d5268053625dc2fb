"""Plain Messages API JSONL lines of a synthetic session."""

from __future__ import annotations

from typing import Any

from .catalog import BAD_TOOL_NAME, _CTRL_SENTINEL, _UTF8_SENTINEL
from .plan import _Call, _MS_NAMES, _Turn, _plain_args, _result_order
from .text import _STEER


class MessagesLines:
    """The Messages JSONL emitter of :class:`~ctxtool.synth.generator.SessionGenerator`."""

    # ------------------------------------------------------------- messages

    def _ms_result_block(self, call: _Call, orphan_id: str | None = None) -> dict[str, Any]:
        if call.image is not None and not call.err:
            source = {"type": "base64", "media_type": call.image[0], "data": call.image[1]}
            content: Any = [{"type": "text", "text": call.out}, {"type": "image", "source": source}]
        else:
            content = call.out
        b: dict[str, Any] = {"type": "tool_result", "tool_use_id": orphan_id or call.cid, "content": content}
        if call.err:
            b["is_error"] = True
        self._grow(len(call.out))
        self._tool_results += 1
        return b

    def _ms_turn(self, plan: _Turn) -> list[list[Any]]:
        c = plan.corruption
        items: list[list[Any]] = []
        for k, (text, image) in enumerate(plan.prompts):
            if c == "blank_user_turn" and k == 0:
                tag = ("blank_user_turn", None, "user message with whitespace-only content")
                items.append([{"role": "user", "content": " \n  "}, tag, None])
                continue
            content: Any = text
            if image is not None:
                content = [{"type": "text", "text": text},
                           {"type": "image", "source": {"type": "base64", "media_type": image[0], "data": image[1]}}]
            self._grow(len(text))
            items.append([{"role": "user", "content": content}, None, None])
        if c == "blank_lines":
            items.append([b"", ("blank_lines", None, "an empty line and a whitespace-only line"), None])
            items.append([b"   ", None, None])
        first_asst = -1
        for si, step in enumerate(plan.steps):
            target = c if si == plan.target else None
            if step.stop == "error":
                break  # an errored request leaves nothing in the API history
            blocks: list[dict[str, Any]] = []
            if step.thinking:
                blocks.append({"type": "thinking", "thinking": step.thinking, "signature": self._sig()})
            if step.text:
                blocks.append({"type": "text", "text": step.text})
            calls = step.calls
            if target == "bad_tool_name":
                calls[0].name = BAD_TOOL_NAME
                calls[0].err = True
                calls[0].out = f"Error: tool {BAD_TOOL_NAME!r} not found"
                calls[0].image = None
            elif target == "no_id_call":
                calls[0].noid = True
            for call in calls:
                kind = call.kind
                inp = _plain_args(call, "old_text", "new_text")
                name = call.name or _MS_NAMES[kind]
                if call.noid:
                    blocks.append({"type": "tool_use", "name": name, "input": inp})
                else:
                    call.cid = "toolu_01" + self._b62(22)
                    blocks.append({"type": "tool_use", "id": call.cid, "name": name, "input": inp})
            self._tool_calls += len(calls)
            self._grow(sum(len(b.get("text", b.get("thinking", ""))) for b in blocks))
            tag = None
            if target == "bad_tool_name":
                tag = ("bad_tool_name", calls[0].cid, f"tool_use named {BAD_TOOL_NAME!r}")
            elif target == "no_id_call":
                tag = ("no_id_call", None, "tool_use without an id (its result is absent)")
            elif target == "missing_result":
                tag = ("missing_result", calls[-1].cid, "tool_use whose tool_result is missing from the next message")
            items.append([{"role": "assistant", "content": blocks}, tag, None])
            if first_asst < 0:
                first_asst = len(items) - 1
            if not calls:
                continue
            order, moved = _result_order(len(calls), target)
            results: list[dict[str, Any]] = []
            mangle = None
            r_tag = None
            for j in order:
                call = calls[j]
                if target in ("invalid_utf8", "bad_control_char") and j == order[0]:
                    sent = _UTF8_SENTINEL if target == "invalid_utf8" else _CTRL_SENTINEL
                    call.out = call.out[: len(call.out) // 2] + sent + call.out[len(call.out) // 2 :]
                    call.image = None
                    mangle = "utf8" if target == "invalid_utf8" else "ctrl"
                    r_tag = (target, call.cid, "invalid UTF-8 bytes inside a tool_result string" if mangle == "utf8"
                             else "raw TAB/ESC bytes inside a tool_result string")
                results.append(self._ms_result_block(call))
            if target == "duplicate_result":
                results.append(self._ms_result_block(calls[order[0]]))
                r_tag = ("duplicate_result", calls[order[0]].cid, "two tool_result blocks with the same tool_use_id")
            elif target == "orphan_result":
                oid = "toolu_01" + self._b62(22)
                results.append(self._ms_result_block(self._make_call("exec"), orphan_id=oid))
                r_tag = ("orphan_result", oid, "tool_result whose tool_use is not in the previous message")
            if results:
                items.append([{"role": "user", "content": results}, r_tag, mangle])
            if moved is not None:
                self._grow(40)
                items.append([{"role": "user", "content": self._fill(self._pick(_STEER))}, None, None])
                call = calls[moved]
                items.append([{"role": "user", "content": [self._ms_result_block(call)]},
                              ("separated_result", call.cid, "tool_result sent after a later user message"), None])
        if c == "nul_bytes" and first_asst >= 0:
            it = items[first_asst]
            it[1] = ("nul_bytes", None, "line starts with a run of NUL bytes")
            it[2] = "nul"
        self._turns_done += 1
        return items
