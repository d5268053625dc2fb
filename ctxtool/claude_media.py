"""Claude Code's cap on the images and documents one request holds (2.1.332, read in its code: ``ano``, called as it
builds the request, after the advisor's blocks are taken out).

The client counts every image and document block of the messages it sends, those inside a tool result's content too,
in order. A request holds at most ``ITEM_LIMIT`` of them (``ITEM_LIMIT_1M`` where the model has a window of a million
tokens: a catalog model whose window is natively that, or a model named with ``[1m]``; neither where
``CLAUDE_CODE_DISABLE_1M_CONTEXT`` is set). Walking the items, each time one more than the limit are held, the oldest
go until ``KEEP_BELOW`` fewer than the limit are left; and each time the bytes held (a base64 source's data, in UTF-16
code units; any other source counts none) pass the byte cap, the oldest with bytes go until ``BYTE_SLACK`` below it.
The byte cap is ``BYTE_CAP_FIRST_PARTY`` where the client talks to Anthropic's API, ``BYTE_CAP`` elsewhere (a served
setting can change either: not seen offline). An item whose data is marked unsent (``"unsent:"``) always goes.

What goes is replaced by a text saying so: inside a tool result, a text block in its place; in a message's own
content the block is left out, and a message left with nothing is sent with the texts (one each, in order). The text
says the model has seen the item where a response came after it and before the item whose arrival pushed it out
(``SEEN``), that it has not where none did (``NOT_SEEN``), and ``UNSENT`` for an unsent one. Responses are counted as
the client counts them: not one its model is ``<synthetic>``, not one answered without a request, one whose
``message.id`` is the last counted response's once.
"""

from __future__ import annotations

from typing import Callable

from .model import js_len

MIB = 1 << 20
ITEM_LIMIT = 100  # E$l
ITEM_LIMIT_1M = 600  # kMo
KEEP_BELOW = 20  # A7i
BYTE_CAP = 75 * MIB  # T$l: a client that talks to another host than Anthropic's API
BYTE_CAP_FIRST_PARTY = 32 * MIB - 8 * MIB  # C7i
BYTE_SLACK = 10 * MIB  # R7i
UNSENT_MARK = "unsent:"  # FOe

_HEAD = "[media removed: request limit."
_TAIL = "Re-reading pushes out others and re-sends everything, so don't re-read them all.]"
SEEN = (f"{_HEAD} You have already seen this, and what you concluded from it still stands. It made room for newer "
        f"images and documents. {_TAIL}")
NOT_SEEN = (f"{_HEAD} You have not seen this: it did not fit in the request. If you need it, get it again once, by "
            f"itself. If it is dropped again, go on without it and say so. {_TAIL}")
UNSENT = f"{_HEAD} If you have seen this, what you concluded from it still stands. {_TAIL}"

MEDIA_TYPES = ("image", "document")


def item_limit(model: str, named: str | None = None, long_context: bool = True) -> int:
    """The items a request to ``model`` (the request's, canonical) may hold. ``named``: the model as the client was
    told it (its ``--model``), where ``[1m]`` may stand; ``long_context``: ``CLAUDE_CODE_DISABLE_1M_CONTEXT`` not
    set (``long_context_allowed``)."""
    from .claude_models import native_1m

    if long_context and (native_1m(model) or (named is not None and "[1m]" in named.lower())):
        return ITEM_LIMIT_1M
    return ITEM_LIMIT


def long_context_allowed(env) -> bool:
    """Whether the client's environment leaves its million-token windows on (``CLAUDE_CODE_DISABLE_1M_CONTEXT`` not
    set to a value it takes for true: "1", "true", "yes" or "on", any case, spaces around)."""
    from .claude_models import env_true

    return not env_true(env.get("CLAUDE_CODE_DISABLE_1M_CONTEXT"))


def byte_cap(first_party: bool) -> int:
    return BYTE_CAP_FIRST_PARTY if first_party else BYTE_CAP


def _media(b) -> bool:
    return type(b) is dict and b.get("type") in MEDIA_TYPES


def _items(messages: list[dict]):
    """``(message, block, inner block or -1, item)`` of each image and document, in the client's order: a message's
    blocks in order, a tool result's content where it stands."""
    for i, m in enumerate(messages):
        c = m.get("content")
        if type(c) is not list:
            continue
        for j, b in enumerate(c):
            if _media(b):
                yield i, j, -1, b
            elif type(b) is dict and b.get("type") == "tool_result" and type(b.get("content")) is list:
                for k, x in enumerate(b["content"]):
                    if _media(x):
                        yield i, j, k, x


def _data(b: dict):
    src = b.get("source")
    if type(src) is not dict or src.get("type") != "base64":
        return None
    data = src.get("data")
    return data if type(data) is str else None


def capped(messages: list[dict], *, limit: int = ITEM_LIMIT, cap: int = BYTE_CAP_FIRST_PARTY,
           response: Callable[[dict], tuple[bool, object]] | None = None) -> list[dict]:
    """``messages`` (``{"role", "content", ...}``) as the client sends them under its media cap: ``messages`` itself
    when nothing goes. ``response(m)``: for an assistant message, ``(counted, id)``: whether the client counts it as a
    response, and its ``message.id`` (None: every assistant message counts, with no id)."""
    where: list[tuple] = []  # (message, block, inner block or -1) of each item, in order
    sizes: list[int] = []
    unsent: list[int] = []
    for i, j, k, x in _items(messages):
        data = _data(x)
        if data is not None and data.startswith(UNSENT_MARK):
            unsent.append(len(where))
        where.append((i, j, k))
        sizes.append(0 if data is None else len(data) if data.isascii() else js_len(data))
    if not where or (len(where) <= limit and (cap <= 0 or sum(sizes) <= cap) and not unsent):
        return messages
    seen = _responses_through(messages, [w[0] for w in where], response)
    removed: dict[int, str] = {}
    window: list[int] = []
    held = 0
    keep = max(0, limit - KEEP_BELOW)
    for n in range(len(where)):
        window.append(n)
        held += sizes[n]
        if len(window) > limit:
            for h in window[:len(window) - keep]:
                removed[h] = SEEN if seen[n] > seen[h] else NOT_SEEN
                held -= sizes[h]
            del window[:len(window) - keep]
        if cap > 0 and held > cap:
            h = 0
            while h < len(window) and held > cap - BYTE_SLACK:
                x = window[h]
                if sizes[x] == 0:
                    h += 1
                    continue
                del window[h]
                removed[x] = SEEN if seen[n] > seen[x] else NOT_SEEN
                held -= sizes[x]
    for n in unsent:
        removed.setdefault(n, UNSENT)
    if not removed:
        return messages
    by_message: dict[int, dict] = {}
    for n, text in removed.items():
        i, j, k = where[n]
        by_message.setdefault(i, {})[(j, k)] = text
    out = list(messages)
    for i, gone in by_message.items():
        m = messages[i]
        kept: list = []
        texts: dict[str, None] = {}  # (the texts of the blocks left out, once each, in order)
        for j, b in enumerate(m["content"]):
            text = gone.get((j, -1))
            if text is not None:
                texts[text] = None
                continue
            if any(key[0] == j for key in gone):
                b = dict(b, content=[{"type": "text", "text": gone[(j, k)]} if (j, k) in gone else x
                                     for k, x in enumerate(b["content"])])
            kept.append(b)
        out[i] = dict(m, content=kept or [{"type": "text", "text": t} for t in texts])
    return out


def _responses_through(messages: list[dict], at: list[int], response) -> list[int]:
    """For each message index of ``at`` (ascending), the responses the client counts up to it (``i2i``)."""
    out: list[int] = []
    count, nxt, last = 0, 0, None
    for i in at:
        while nxt <= i:
            m = messages[nxt]
            nxt += 1
            if m.get("role") != "assistant":
                continue
            counted, mid = response(m) if response is not None else (True, None)
            if not counted:
                continue
            if type(mid) is str and mid == last:
                continue
            count += 1
            last = mid if type(mid) is str else None
        out.append(count)
    return out
