"""Repair: the changed lines, rewritten in their own bytes where only ids and links change,
else from the loaded object (a mixin of ``repair._Planner``)."""

from __future__ import annotations

from .errors import InputError
from .jsonl import dumps, set_top_level
from .model import HEADER, Entry


class Rewriting:
    """The lines repair changes, written from their original bytes or their loaded object."""

    def slim_final(self, e: Entry) -> Entry | None:
        """The repaired index entry without reading the line again, when the edits only
        touch ids and links (the common case); None when the content must be re-read.
        Updated in place, as the planner already updates ids and parent links."""
        if e.index < 0:
            return None
        ed = self.edits.get(e.index)
        if not ed:
            return e
        if not ed.keys() <= self.SLIM_EDITS:
            return None
        if "set_id" in ed:
            e.id = ed["set_id"]
        if "set_parent" in ed:
            e.parent = ed["set_parent"]
        renames = ed.get("rename_calls")
        if renames:
            e.calls = tuple(c.renamed(renames[c.idx]) if c.idx in renames else c for c in e.calls)
        renames = ed.get("rename_results")
        if renames:
            e.results = tuple(r.renamed(renames[r.idx]) if r.idx in renames else r for r in e.results)
        return e

    def rewritten(self, e: Entry, f=None) -> bytes | None:
        """The output bytes of ``e`` (without line ending), or None when its original bytes are kept.
        Edits of top-level keys only (ids, links) are set in the original bytes; other edits
        re-serialize the line."""
        ed = self.edits.get(e.index) if e.index >= 0 else None
        if ed and ed.keys() <= self.TOP_LEVEL_EDITS:
            line = set_top_level(self.t.raw(e, f), self._top_level(e, ed, {}))
            if line is not None:
                return line
        obj = self.materialize(e, f)
        if obj is None:
            return None
        try:
            return dumps(obj)
        except RecursionError:
            raise InputError("nested too deeply to rewrite (this change cannot be made without re-serializing "
                             "the line); nothing written", path=self.t.path, line=e.lineno or None) from None

    def materialize(self, e: Entry, f=None) -> dict | None:
        """The edited object of ``e``, or None when its original bytes are kept."""
        if e.index < 0:
            return self.synthetic_obj(e)
        ed = self.edits.get(e.index)
        if not ed:
            return None
        obj = self._top_level(e, ed, self.t.load(e, f))
        content = _content_ref(self.name, obj)
        if ed.get("rename_calls"):
            for idx, new in ed["rename_calls"].items():
                content[idx]["id"] = new
        if ed.get("rename_results"):
            for idx, new in ed["rename_results"].items():
                if self.name == "pi":
                    obj["message"]["toolCallId"] = new
                else:
                    content[idx]["tool_use_id"] = new
        if ed.get("fill_result_name"):
            self.fmt.fill_result_name(obj, ed["fill_result_name"])
        if ed.get("drop_blocks"):
            self.fmt.drop_blocks(obj, ed["drop_blocks"])
        if ed.get("fix_error_text"):
            self.fmt.fix_empty_error_turn(obj)
        if ed.get("fix_blank_user"):
            self.fmt.fix_blank_user(obj)
        if ed.get("fix_content_list"):
            self.fmt.fix_content_list(obj)
        if ed.get("add_results"):
            self.fmt.add_result_blocks(obj, ed["add_results"])
        if ed.get("results_first"):
            _results_first(self.name, obj, ed["results_first"])
        return obj

    def _top_level(self, e: Entry, ed: dict, obj: dict) -> dict:
        """The id, link, firstKept and version edits of ``e`` set on ``obj`` (its loaded line, or {} for ``set_top_level``)."""
        if "set_id" in ed:
            if e.kind == HEADER:
                obj["id"] = ed["set_id"]
            else:
                self.fmt.set_id(obj, ed["set_id"])
        if "set_parent" in ed:
            self.fmt.set_parent(obj, ed["set_parent"])
        if "set_leaf" in ed:
            obj["leafUuid"] = ed["set_leaf"]
        if "set_first_kept" in ed:
            obj["firstKeptEntryId"] = ed["set_first_kept"]
        if "set_first_kept_index" in ed:
            obj["firstKeptEntryIndex"] = ed["set_first_kept_index"]
        if "set_version" in ed:
            obj["version"] = ed["set_version"]
        if "set_timestamp" in ed:
            obj["timestamp"] = ed["set_timestamp"]
        if "set_ordinal" in ed:
            obj["ordinal"] = ed["set_ordinal"]
        if "set_call_id" in ed:
            obj["payload"]["call_id"] = ed["set_call_id"]
        if "set_role" in ed:
            obj["payload"]["role"] = ed["set_role"]
        return obj


def _content_ref(name: str, obj: dict) -> list:
    if name == "messages":
        c = obj.get("content")
    else:
        m = obj.get("message")
        c = m.get("content") if isinstance(m, dict) else None
    return c if isinstance(c, list) else []


def _results_first(name: str, obj: dict, order: list[str]) -> None:
    holder = obj if name == "messages" else obj["message"]
    content = holder.get("content")
    if not isinstance(content, list):
        return
    rank = {cid: i for i, cid in enumerate(order)}
    results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    results.sort(key=lambda b: rank.get(b.get("tool_use_id"), len(rank)))
    holder["content"] = results + [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
