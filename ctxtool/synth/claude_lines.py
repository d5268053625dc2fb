"""Claude Code transcript lines of a synthetic session."""

from __future__ import annotations

from typing import Any

from .catalog import BAD_TOOL_NAME, _CTRL_SENTINEL, _UTF8_SENTINEL
from .plan import _CLAUDE_CACHE_TTL, _CLAUDE_MODEL, _CLAUDE_VERSION, _CL_NAMES, _Call, _Turn, _hash_path, _mix32, _numbered, _result_order
from .text import _PROMPTS, _STEER


class ClaudeLines:
    """The Claude Code emitter of :class:`~ctxtool.synth.generator.SessionGenerator`."""

    # --------------------------------------------------------------- claude

    def _cl_line(self, typ: str, parent: str | None, uid: str, ms: int, message: dict[str, Any]) -> dict[str, Any]:
        return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": self._cwd,
                "sessionId": self._session_id, "version": _CLAUDE_VERSION, "gitBranch": "main", "type": typ,
                "message": message, "uuid": uid, "timestamp": self._iso(ms)}

    def _cl_preamble(self) -> list[list[Any]]:
        items: list[list[Any]] = []
        if self._rnd() < 0.5:
            items.append([{"type": "summary", "summary": self._fill(self._pick(_PROMPTS))[:80],
                           "leafUuid": self._uuid()}, None, None])
        return items

    def _cl_user(self, content: Any, ms: int, grow: int) -> dict[str, Any]:
        uid = self._uuid()
        e = self._cl_line("user", self._leaf, uid, ms, {"role": "user", "content": content})
        e["permissionMode"] = "default"
        self._leaf = uid
        self._grow(grow)
        return e

    def _cl_input(self, call: _Call) -> tuple[str, dict[str, Any]]:
        kind = call.kind
        abspath = f"{self._cwd}/{call.path}"
        if kind == "read":
            inp: dict[str, Any] = {"file_path": abspath}
        elif kind == "write":
            inp = {"file_path": abspath, "content": call.arg}
        elif kind == "edit":
            inp = {"file_path": abspath, "old_string": call.arg, "new_string": call.arg2}
        elif kind == "exec":
            inp = {"command": call.arg, "description": f"Run {call.arg.split(' ', 1)[0]}"}
        elif kind == "grep":
            inp = {"pattern": call.arg, "path": abspath, "output_mode": "content", "-n": True}
        else:
            inp = {"url": call.arg, "prompt": "Summarize the relevant API details"}
        return call.name or _CL_NAMES[kind], inp

    def _cl_result(self, call: _Call, holder: str, ms: int, orphan_id: str | None = None) -> dict[str, Any]:
        kind = call.kind
        abspath = f"{self._cwd}/{call.path}"
        out = call.out
        tur: Any
        if call.name == BAD_TOOL_NAME:
            text = f"<tool_use_error>Error: No such tool available: {BAD_TOOL_NAME}</tool_use_error>"
            tur = f"Error: No such tool available: {BAD_TOOL_NAME}"
        elif call.err:
            if kind == "exec":
                text = "Exit code 1\n" + out
            else:
                text = f"<tool_use_error>{out}</tool_use_error>"
            tur = "Error: " + out
        elif kind == "read":
            if call.image is not None:
                text = None
                tur = {"type": "image", "file": {"base64": call.image[1], "type": call.image[0]}}
            else:
                text = _numbered(out)
                n = out.count("\n") + 1
                tur = {"type": "text", "file": {"filePath": abspath, "content": out, "numLines": n,
                                                "startLine": 1, "totalLines": n}}
        elif kind == "write":
            text = f"File created successfully at: {abspath}"
            tur = {"type": "create", "filePath": abspath, "content": call.arg, "structuredPatch": [], "originalFile": None}
        elif kind == "edit":
            snippet = call.arg2
            text = (f"The file {abspath} has been updated. "
                    "Here's the result of running `cat -n` on a snippet of the edited file:\n" + _numbered(snippet, 40))
            original = self._slice(self.P.text, min(self._size(), 30_000))
            old_lines = call.arg.split("\n")
            new_lines = snippet.split("\n")
            tur = {"filePath": abspath, "oldString": call.arg, "newString": call.arg2, "originalFile": original,
                   "structuredPatch": [{"oldStart": 40, "oldLines": len(old_lines),
                                        "newStart": 40, "newLines": len(new_lines),
                                        "lines": ["-" + x for x in old_lines] + ["+" + x for x in new_lines]}],
                   "userModified": False, "replaceAll": False}
        elif kind == "exec":
            text = out
            tur = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        elif kind == "grep":
            text = out
            tur = {"mode": "content", "numFiles": 0, "filenames": [], "content": out, "numLines": out.count("\n") + 1}
        else:
            text = out
            tur = {"bytes": len(out.encode()), "code": 200, "codeText": "OK", "result": out,
                   "durationMs": call.ms, "url": call.arg}
        content: Any = text
        if call.image is not None and not call.err:
            content = [{"type": "image", "source": {"type": "base64", "media_type": call.image[0], "data": call.image[1]}}]
        block: dict[str, Any] = {"tool_use_id": orphan_id or call.cid, "type": "tool_result", "content": content}
        if call.err or call.name == BAD_TOOL_NAME:
            block["is_error"] = True
        uid = self._uuid()
        e = self._cl_line("user", holder, uid, ms, {"role": "user", "content": [block]})
        e["toolUseResult"] = tur
        e["sourceToolAssistantUUID"] = holder
        self._leaf = uid
        self._grow(len(text) if text else 1600)
        self._tool_results += 1
        return e

    def _cl_usage(self, nums: tuple[int, int, int, int], out_override: int | None = None) -> dict[str, Any]:
        i, o, cr, cw = nums
        return {"input_tokens": i, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr,
                "output_tokens": o if out_override is None else out_override,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": cw},
                "service_tier": "standard"}

    def _cl_turn(self, plan: _Turn) -> list[list[Any]]:
        c = plan.corruption
        items: list[list[Any]] = []
        for k, (text, image) in enumerate(plan.prompts):
            ms = self._tick(self._user_gap() if k == 0 else self._ri(2_000, 40_000))
            if k > 0:
                items.append([{"type": "queue-operation", "operation": "enqueue", "timestamp": self._iso(ms - 1500),
                               "sessionId": self._session_id, "content": text}, None, None])
                items.append([{"type": "queue-operation", "operation": "dequeue", "timestamp": self._iso(ms - 2),
                               "sessionId": self._session_id}, None, None])
            blank = c == "blank_user_turn" and k == 0
            content: Any = "  \n " if blank else text
            if image is not None and not blank:
                content = [{"type": "text", "text": text},
                           {"type": "image", "source": {"type": "base64", "media_type": image[0], "data": image[1]}}]
            e = self._cl_user(content, ms, len(text) + (1600 if image is not None else 0))
            if k == 0:
                snap = {"type": "file-history-snapshot", "messageId": e["uuid"], "snapshot": {
                    "messageId": e["uuid"],
                    "trackedFileBackups": {
                        p: {"backupFileName": f"{_mix32(_hash_path(p)):08x}{_mix32(_hash_path(p) + 1):08x}@v{i + 1}",
                            "version": i + 1, "backupTime": self._iso(ms - 10)}
                        for i, p in enumerate(list(self._modified_files)[-4:])},
                    "timestamp": self._iso(ms - 5)}, "isSnapshotUpdate": False}
                items.append([snap, None, None])
            tag = ("blank_user_turn", e["uuid"], "user message with whitespace-only content") if blank else None
            items.append([e, tag, None])
        if c == "blank_lines":
            items.append([b"", ("blank_lines", None, "an empty line and a whitespace-only line"), None])
            items.append([b"   ", None, None])
        first_asst = -1
        ttl = _CLAUDE_CACHE_TTL
        for si, step in enumerate(plan.steps):
            target = c if si == plan.target else None
            ms = self._tick(self._ri(1_200, 25_000))
            if step.stop == "error":
                uid = self._uuid()
                err = self._pick(('529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
                                  "Request timed out.", "Connection error."))
                msg = {"id": self._uuid(), "container": None, "model": "<synthetic>", "role": "assistant",
                       "stop_reason": "stop_sequence", "stop_sequence": "", "type": "message",
                       "usage": self._cl_usage((0, 0, 0, 0)), "content": [{"type": "text", "text": f"API Error: {err}"}]}
                e = self._cl_line("assistant", self._leaf, uid, ms, msg)
                e["isApiErrorMessage"] = True
                self._leaf = uid
                items.append([e, None, None])
                if first_asst < 0:
                    first_asst = len(items) - 1
                break
            blocks: list[dict[str, Any]] = []
            out_chars = 0
            if step.thinking:
                blocks.append({"type": "thinking", "thinking": step.thinking, "signature": self._sig()})
                out_chars += len(step.thinking)
            if step.text:
                blocks.append({"type": "text", "text": step.text})
                out_chars += len(step.text)
            calls = step.calls
            if target == "bad_tool_name":
                calls[0].name = BAD_TOOL_NAME
                calls[0].err = True
                calls[0].image = None
            elif target == "no_id_call":
                calls[0].noid = True
            call_block_at: list[int] = []
            for call in calls:
                name, inp = self._cl_input(call)
                if call.noid:
                    blk = {"type": "tool_use", "name": name, "input": inp}
                else:
                    call.cid = "toolu_01" + self._b62(22)
                    blk = {"type": "tool_use", "id": call.cid, "name": name, "input": inp}
                call_block_at.append(len(blocks))
                blocks.append(blk)
                out_chars += len(call.arg) + len(call.arg2) + 40
            self._tool_calls += len(calls)
            nums = self._usage_numbers(out_chars, ttl, True)
            complete = step.stop != "aborted"
            final_stop = "tool_use" if calls else "end_turn"
            msg_id = "msg_01" + self._b62(22)
            req_id = "req_011" + self._b62(21)
            u_final = self._cl_usage(nums)
            u_partial = self._cl_usage(nums, self._ri(1, 12))
            holders: list[str] = []
            nblocks = len(blocks)
            for bi, blk in enumerate(blocks):
                last = bi == nblocks - 1 and complete
                ms = self._tick(self._ri(30, 2_500)) if bi else ms
                uid = self._uuid()
                msg = {"model": _CLAUDE_MODEL, "id": msg_id, "type": "message", "role": "assistant", "content": [blk],
                       "stop_reason": final_stop if last else None, "stop_sequence": None,
                       "usage": u_final if last else u_partial}
                e = self._cl_line("assistant", self._leaf, uid, ms, msg)
                e["requestId"] = req_id
                self._leaf = uid
                holders.append(uid)
                items.append([e, None, None])
                if first_asst < 0:
                    first_asst = len(items) - 1
                if call_block_at and bi == call_block_at[0]:
                    if target == "bad_tool_name":
                        items[-1][1] = ("bad_tool_name", calls[0].cid, f"tool_use named {BAD_TOOL_NAME!r}")
                    elif target == "no_id_call":
                        items[-1][1] = ("no_id_call", None, "tool_use without an id (its result is absent)")
                if target == "missing_result" and call_block_at and bi == call_block_at[-1]:
                    items[-1][1] = ("missing_result", calls[-1].cid, "tool_use whose tool_result line was removed")
            if not complete:
                ms = self._tick(self._ri(200, 3_000))
                e = self._cl_user([{"type": "text", "text": "[Request interrupted by user]"}], ms, 30)
                items.append([e, None, None])
                continue
            if not calls:
                continue
            # progress lines for some Bash calls
            for j, call in enumerate(calls):
                if call.kind == "exec" and self._rnd() < 0.5 and not call.noid:
                    holder = holders[call_block_at[j]]
                    items.append([{"parentUuid": holder, "isSidechain": False, "userType": "external", "cwd": self._cwd,
                                   "sessionId": self._session_id, "version": _CLAUDE_VERSION, "gitBranch": "main",
                                   "type": "progress", "data": {"type": "hook_progress", "hookEvent": "PreToolUse",
                                                                "hookName": "PreToolUse:Bash", "command": "guard.sh"},
                                   "toolUseID": call.cid, "parentToolUseID": call.cid, "uuid": self._uuid(),
                                   "timestamp": self._iso(self._tick(self._ri(5, 80)))}, None, None])
            order, moved = _result_order(len(calls), target)
            for j in order:
                call = calls[j]
                ms = self._tick(call.ms)
                mangle = None
                tag = None
                if target == "invalid_utf8" and j == order[0] or target == "bad_control_char" and j == order[0]:
                    sent = _UTF8_SENTINEL if target == "invalid_utf8" else _CTRL_SENTINEL
                    call.out = call.out[: len(call.out) // 2] + sent + call.out[len(call.out) // 2 :]
                    call.image = None
                    mangle = "utf8" if target == "invalid_utf8" else "ctrl"
                e = self._cl_result(call, holders[call_block_at[j]], ms)
                if mangle == "utf8":
                    tag = ("invalid_utf8", call.cid, "invalid UTF-8 bytes inside a tool_result string")
                elif mangle == "ctrl":
                    tag = ("bad_control_char", call.cid, "raw TAB/ESC bytes inside a tool_result string")
                items.append([e, tag, mangle])
            if moved is not None:
                ms = self._tick(self._ri(1_000, 20_000))
                steer = self._fill(self._pick(_STEER))
                items.append([self._cl_user(steer, ms, len(steer)), None, None])
                call = calls[moved]
                e = self._cl_result(call, holders[call_block_at[moved]], self._tick(call.ms))
                items.append([e, ("separated_result", call.cid, "tool_result written after a later user message"), None])
            if target == "duplicate_result":
                call = calls[order[0]]
                e = self._cl_result(call, holders[call_block_at[order[0]]], self._tick(self._ri(5, 200)))
                items.append([e, ("duplicate_result", call.cid, "second tool_result for the same tool_use_id"), None])
            elif target == "orphan_result":
                call = self._make_call("exec")
                oid = "toolu_01" + self._b62(22)
                e = self._cl_result(call, self._leaf or holders[-1], self._tick(call.ms), orphan_id=oid)
                e["sourceToolAssistantUUID"] = holders[-1]
                items.append([e, ("orphan_result", oid, "tool_result whose tool_use is not in the session"), None])
        if plan.steps and plan.steps[-1].stop == "stop" and self._rnd() < 0.3:
            uid = self._uuid()
            items.append([{"parentUuid": self._leaf, "isSidechain": False, "userType": "external", "cwd": self._cwd,
                           "sessionId": self._session_id, "version": _CLAUDE_VERSION, "gitBranch": "main",
                           "type": "system", "subtype": "stop_hook_summary", "hookCount": 1,
                           "hookInfos": [{"command": "notify.sh"}], "hookErrors": [], "preventedContinuation": False,
                           "stopReason": "", "hasOutput": False, "level": "suggestion",
                           "timestamp": self._iso(self._tick(self._ri(20, 400))), "uuid": uid}, None, None])
            self._leaf = uid
        self._tree_corruption(items, c, first_asst, "uuid", "parentUuid")
        if c == "nul_bytes" and first_asst >= 0:
            it = items[first_asst]
            it[1] = ("nul_bytes", it[0].get("uuid"), "line starts with a run of NUL bytes")
            it[2] = "nul"
        self._turns_done += 1
        return items

    def _cl_compaction(self) -> list[list[Any]]:
        ms = self._tick(self._ri(2_000, 60_000))
        uid = self._uuid()
        before = self._ctx
        boundary = {"parentUuid": None, "logicalParentUuid": self._leaf, "isSidechain": False, "userType": "external",
                    "cwd": self._cwd, "sessionId": self._session_id, "version": _CLAUDE_VERSION, "gitBranch": "main",
                    "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False,
                    "timestamp": self._iso(ms), "uuid": uid, "level": "info",
                    "compactMetadata": {"trigger": "auto", "preTokens": before}}
        self._leaf = uid
        summary = ("This session is being continued from a previous conversation that ran out of context. "
                   "The summary below covers the earlier portion of the conversation.\n\nSummary:\n" + self._summary_text())
        sid = self._uuid()
        line = self._cl_line("user", uid, sid, self._tick(self._ri(5, 50)), {"role": "user", "content": summary})
        line["isVisibleInTranscriptOnly"] = True
        line["isCompactSummary"] = True
        self._leaf = sid
        self._ctx = self._base_ctx + len(summary) // 4
        self._cached = 0
        return [[boundary, None, None], [line, None, None]]
