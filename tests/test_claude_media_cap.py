"""Claude Code's cap on the images and documents of one request (``ctxtool.claude_media``; read in 2.1.332's code,
``ano``): the rule on plain messages without the client, then shapes of the recorded ``media.jsonl`` resumed by the
real client and compared with ``sent_messages``."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ctxtool import claude_media, claude_models
from ctxtool.claude_media import NOT_SEEN, SEEN, UNSENT, capped, item_limit
from ctxtool.transcript import scan
from ctxtool.view import client, sent_messages
from tests.support.claude_agent import conversation, resume_payload

REC = Path(__file__).resolve().parent.parent / "fixtures" / "claude-recorded"


def image(data: str = "iVBORw0KGgo=") -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def result(*blocks) -> dict:
    return {"type": "tool_result", "tool_use_id": "t", "content": list(blocks)}


def texts(messages) -> list[str]:
    return [b["text"] for m in messages if type(m["content"]) is list for b in m["content"]
            if b.get("type") == "text" and b["text"].startswith("[media removed")] + [
        x["text"] for m in messages if type(m["content"]) is list for b in m["content"] if b.get("type") == "tool_result"
        for x in b["content"] if x.get("type") == "text" and x["text"].startswith("[media removed")]


def media(messages) -> int:
    return sum(1 for m in messages if type(m["content"]) is list for b in m["content"] for x in (
        b["content"] if b.get("type") == "tool_result" and type(b.get("content")) is list else [b])
        if x.get("type") in ("image", "document"))


# ----------------------------------------------------------------------------- the rule, without the client


def test_messages_within_the_limits_are_returned_as_they_are():
    msgs = [{"role": "user", "content": [image() for _ in range(100)]}]
    assert capped(msgs, limit=100) is msgs


def test_one_item_over_the_limit_takes_the_oldest_down_to_twenty_below_it():
    msgs = [{"role": "user", "content": [result(*[image() for _ in range(60)])]},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {"role": "user", "content": [result(*[image() for _ in range(41)])]}]
    out = capped(msgs, limit=100)
    assert media(out) == 80
    # the 21 oldest, all in the first result, replaced in place by the note that the model saw them
    first = out[0]["content"][0]["content"]
    assert [b.get("text") for b in first[:21]] == [SEEN] * 21 and first[21]["type"] == "image"
    assert msgs[0]["content"][0]["content"][0]["type"] == "image"  # (the input is not changed)


def test_items_pushed_out_with_no_response_after_them_are_said_not_seen():
    msgs = [{"role": "user", "content": [result(*[image() for _ in range(101)])]}]
    out = capped(msgs, limit=100)
    assert texts(out) == [NOT_SEEN] * 21


def test_a_prompts_own_items_are_left_out_and_a_prompt_left_with_nothing_gets_the_notes():
    msgs = [{"role": "user", "content": [image(), image()]},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {"role": "user", "content": [{"type": "text", "text": "more"}] + [image() for _ in range(99)]}]
    out = capped(msgs, limit=100)
    assert out[0]["content"] == [{"type": "text", "text": SEEN}]  # (once, however many went)
    assert out[2]["content"][0] == {"type": "text", "text": "more"} and media(out[2:]) == 80


def test_responses_are_counted_as_the_client_counts_them():
    def msgs():
        return [{"role": "user", "content": [image() for _ in range(21)]},
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "id": "a"},
                {"role": "user", "content": [{"type": "text", "text": "x"}] + [image() for _ in range(80)]}]

    assert capped(msgs(), limit=100)[0]["content"] == [{"type": "text", "text": SEEN}]
    assert capped(msgs(), limit=100, response=lambda m: (False, None))[0]["content"] == [
        {"type": "text", "text": NOT_SEEN}]
    # a response whose id is the last counted one's is not counted again (a user message between or not)
    again = [{"role": "assistant", "content": [{"type": "text", "text": "a"}], "id": "a"}] + msgs()
    out = capped(again, limit=100, response=lambda m: (True, m.get("id")))
    assert out[1]["content"] == [{"type": "text", "text": NOT_SEEN}]
    again[0]["id"] = "b"
    out = capped(again, limit=100, response=lambda m: (True, m.get("id")))
    assert out[1]["content"] == [{"type": "text", "text": SEEN}]


def test_bytes_over_the_cap_take_the_oldest_with_bytes_down_to_ten_mib_below_it():
    mib = claude_media.MIB
    doc = {"type": "document", "source": {"type": "url", "url": "https://x"}}  # (no base64: no bytes)
    msgs = [{"role": "user", "content": [doc, image("A" * (8 * mib)), image("B" * (8 * mib))]},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {"role": "user", "content": [result(image("C" * (9 * mib)))]}]
    out = capped(msgs, cap=24 * mib)
    # 25 MiB held: the two 8 MiB images go (down to 14 MiB), the document with no bytes stays
    assert out[0]["content"] == [doc] and out[2] == msgs[2]
    assert capped(msgs, cap=25 * mib) is msgs


def test_an_item_marked_unsent_always_goes():
    msgs = [{"role": "user", "content": [result(image("unsent:100"), image()), image("unsent:7"),
                                         {"type": "text", "text": "x"}]}]
    out = capped(msgs)
    assert out[0]["content"] == [result({"type": "text", "text": UNSENT}, image()), {"type": "text", "text": "x"}]


def test_the_item_limit_follows_the_model_and_the_clients_environment():
    assert item_limit("claude-sonnet-4-6") == 100 and item_limit("claude-opus-4-6") == 100
    assert item_limit("claude-opus-5-5") == 600 and item_limit("claude-haiku-5-5") == 600
    assert item_limit("claude-opus-4-7-20260101") == 600  # (a dated id is its model's)
    assert item_limit("claude-sonnet-4-6", "claude-sonnet-4-6[1M]") == 600
    assert item_limit("claude-opus-5-5", long_context=False) == 100
    assert claude_media.long_context_allowed({}) and claude_media.long_context_allowed(
        {"CLAUDE_CODE_DISABLE_1M_CONTEXT": "0"})
    assert not claude_media.long_context_allowed({"CLAUDE_CODE_DISABLE_1M_CONTEXT": " Yes "})


def test_the_byte_cap_follows_whom_the_client_talks_to():
    assert claude_models.first_party({}) and claude_models.first_party(
        {"ANTHROPIC_BASE_URL": "https://api.anthropic.com"})
    assert not claude_models.first_party({"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"})
    assert not claude_models.first_party({"CLAUDE_CODE_USE_BEDROCK": "1"})
    assert claude_models.first_party({"CLAUDE_CODE_USE_BEDROCK": "0"})
    assert claude_media.byte_cap(True) == 24 * claude_media.MIB and claude_media.byte_cap(False) == 75 * claude_media.MIB


def test_the_client_as_run_carries_its_caps(tmp_path):
    path = tmp_path / "media.jsonl"
    path.write_bytes((REC / "media.jsonl").read_bytes())
    t = scan(str(path))
    c = client(t, {"HOME": str(tmp_path), "ANTHROPIC_BASE_URL": "http://127.0.0.1:1",
                   "CLAUDE_CODE_DISABLE_1M_CONTEXT": "1"})
    assert (c.first_party, c.long_context) == (False, False)
    assert (client(t, {"HOME": str(tmp_path)}).first_party, client(t, {"HOME": str(tmp_path)}).long_context) == (True, True)


# ----------------------------------------------------------------------------- judged


def _shape(name: str) -> list[str]:
    lines = (REC / "media.jsonl").read_text().split("\n")

    def obj(n):
        return json.loads(lines[n - 1])

    def put(n, o):
        lines[n - 1] = json.dumps(o, separators=(",", ":"))

    png = obj(21)["message"]["content"][0]["content"][0]
    assert png["type"] == "image"

    def results(n, k):  # (line n's tool result made of k images)
        o = obj(n)
        o["message"]["content"][0]["content"] = [copy.deepcopy(png) for _ in range(k)]
        put(n, o)

    def prompt(k, only=False):  # (line 29's prompt with k more images, or only k images)
        o = obj(29)
        o["message"]["content"] = ([] if only else o["message"]["content"]) + [copy.deepcopy(png) for _ in range(k)]
        put(29, o)

    def doc(mib):
        return {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                               "data": "QUJD" * (mib << 18)}}

    if name == "spread over three turns":
        results(21, 40), prompt(30), results(40, 40)
    elif name == "a prompt's own":
        prompt(103)
    elif name == "a prompt left with nothing":
        prompt(20, only=True)
        o = obj(32)
        o["parentUuid"] = obj(29)["uuid"]  # (its meta line 30 taken out, the answer linked to the prompt)
        put(32, o)
        del lines[29]
        results(39, 85)
    elif name in ("the response between is synthetic", "the response between answered without a request",
                  "the response between counted"):
        o = obj(26)
        if "synthetic" in name:
            o["message"]["model"] = "<synthetic>"
        elif "without" in name:
            o["answeredWithoutRequest"] = True
        put(26, o)
        results(21, 30), prompt(75)
    elif name == "marked unsent":
        unsent = copy.deepcopy(png)
        unsent["source"]["data"] = "unsent:100"
        o = obj(21)
        o["message"]["content"][0]["content"] = [unsent, copy.deepcopy(png)]
        put(21, o)
        o = obj(29)
        o["message"]["content"].append(copy.deepcopy(unsent))
        put(29, o)
    elif name == "bytes":
        o = obj(29)
        o["message"]["content"] += [doc(27), doc(27)]
        put(29, o)
        results(40, 3)
        o = obj(40)
        o["message"]["content"][0]["content"].append(doc(27))
        put(40, o)
    return lines


# (shape, --model, first party, CLAUDE_CODE_DISABLE_1M_CONTEXT, items removed)
_JUDGED = {
    "100 items, spread over three turns": ("spread over three turns", "claude-sonnet-4-6", False, None, 21),
    "100 items, a prompt's own": ("a prompt's own", "claude-sonnet-4-6", False, None, 21),
    "100 items, a prompt left with nothing": ("a prompt left with nothing", "claude-sonnet-4-6", False, None, 21),
    "100 items, the response between is synthetic": (
        "the response between is synthetic", "claude-sonnet-4-6", False, None, 21),
    "100 items, the response between answered without a request": (
        "the response between answered without a request", "claude-sonnet-4-6", False, None, 21),
    "100 items, the response between counted": ("the response between counted", "claude-sonnet-4-6", False, None, 21),
    "600 items for a model of a million tokens": ("spread over three turns", "claude-opus-5-5", False, None, 0),
    "600 items for a model named with [1m]": ("spread over three turns", "claude-sonnet-4-6[1m]", False, None, 0),
    "100 items where the million is turned off": ("spread over three turns", "claude-opus-5-5", False, "1", 21),
    "an item marked unsent": ("marked unsent", "claude-sonnet-4-6", False, None, 2),
    "75 MiB on another host": ("bytes", "claude-sonnet-4-6", False, None, 4),
    "24 MiB on Anthropic's API": ("bytes", "claude-sonnet-4-6", True, None, 9),
}


@pytest.mark.claude
@pytest.mark.parametrize("name", list(_JUDGED))
def test_a_requests_media_are_capped_as_the_client_caps_them(tmp_path, monkeypatch, name):
    """Images and documents past the client's cap on a request: it replaces the oldest with its notes (in a tool
    result) or leaves them out (a message's own), counting the responses between (read in 2.1.332's code, ``ano``).
    ctxtool sent them all. The first-party cap is judged with the client told its loopback server is Anthropic's
    (``_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL``)."""
    shape, model, first_party, off, removed = _JUDGED[name]
    path = tmp_path / "media.jsonl"
    path.write_text("\n".join(_shape(shape)))
    env = {"_CLAUDE_CODE_ASSUME_FIRST_PARTY_BASE_URL": "1"} if first_party else {}
    if off:
        env["CLAUDE_CODE_DISABLE_1M_CONTEXT"] = off
    judge = resume_payload(str(path), args=["--model", model], env=env)["messages"]
    ours = sent_messages(scan(str(path)), model=model, first_party=first_party, long_context=not off)
    assert conversation(ours) == conversation(judge)
    monkeypatch.setattr(claude_media, "capped", lambda messages, **kw: messages)  # (ctxtool before the cap)
    uncapped = sent_messages(scan(str(path)), model=model, first_party=first_party, long_context=not off)
    assert media(uncapped) - media(ours) == removed
    assert (conversation(uncapped) == conversation(judge)) == (removed == 0)


# ----------------------------------------------------------------------------- the estimate


@pytest.mark.parametrize("shape, model, images, notes", [
    ("spread over three turns", "claude-sonnet-4-6", 80 - 21, 21),  # (112 items: the first result's 21 oldest go)
    ("spread over three turns", "claude-opus-5-5", 80, 0),  # (600 for a model of a million tokens)
    ("spread over three turns", None, 80, 0),  # (the file's model, Opus 5.5)
    ("a prompt's own", "claude-sonnet-4-6", 1, 1),  # (the prompt's images count: the first result's image goes)
    ("bytes", None, 0, 5),  # (81 MiB, a document in a result among them: over 24 MiB, all go)
])
def test_the_estimate_counts_the_images_the_client_sends(tmp_path, monkeypatch, shape, model, images, notes):
    from ctxtool.estimate import Options, estimate_file
    from ctxtool.model import IMAGE_CHARS

    path = tmp_path / "media.jsonl"
    path.write_text("\n".join(_shape(shape)))
    r = estimate_file(str(path), Options(model=model))
    assert r["breakdown"]["by_kind"].get("image", 0) == images * (IMAGE_CHARS // 4)
    monkeypatch.setattr(claude_media, "capped", lambda messages, **kw: messages)  # (ctxtool before the cap)
    before = estimate_file(str(path), Options(model=model))
    # the notes in place of the images in results are counted as the results' text
    gained = r["breakdown"]["by_kind"].get("tool_result", 0) - before["breakdown"]["by_kind"].get("tool_result", 0)
    assert notes * (len(SEEN) // 4) - notes <= gained <= notes * (len(NOT_SEEN) // 4) + notes


def test_the_estimate_reads_no_line_again_where_no_cap_can_be_reached(tmp_path, monkeypatch):
    from ctxtool import view
    from ctxtool.estimate import Options, estimate_file

    path = tmp_path / "media.jsonl"
    path.write_bytes((REC / "media.jsonl").read_bytes())
    monkeypatch.setattr(claude_media, "capped", lambda *a, **k: pytest.fail("read again"))
    estimate_file(str(path), Options(model="claude-sonnet-4-6"))
    assert view.claude_media_capped  # (the path that would read them)
