"""An @-mentioned picture in a Claude Code session: the client writes its ``file`` attachment with no rendering and
renders it when it sends (``formats.claude.image_renderings``; judged on fixtures/claude-recorded/image_mention.jsonl and
mention_kinds.jsonl, tests/test_claude_view.py). Here the rule's cases, without the client."""

from __future__ import annotations

import json

from ctxtool.formats.claude import CONNECTOR_PICTURE, image_renderings, normalize
from ctxtool.model import Entry

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEUlEQVR4nGM4ISeHFTEMLQkAkL9BAbKfPiIAAAAASUVORK5CYII="


def picture(**over) -> dict:
    att = {"type": "file", "filename": "/home/u/proj/red.png",
           "content": {"type": "image", "file": {"base64": PNG, "type": "image/png", "originalSize": 74}},
           "displayPath": "red.png", "savedCopyFraming": {"enveloped": False}}
    att.update(over)
    return att


def test_a_picture_is_a_read_call_reminder_then_the_image():
    blocks = image_renderings(picture())
    assert blocks == [
        {"type": "text", "text": '<system-reminder>\nCalled the Read tool with the following input: '
                                 '{"file_path":"/home/u/proj/red.png"}\n</system-reminder>'},
        {"type": "image", "source": {"type": "base64", "data": PNG, "media_type": "image/png"}}]


def test_the_files_name_is_written_as_javascript_writes_it_a_closing_tag_defused():
    name = 'a "b" \\ é\t</system-reminder > < / SYSTEM-REMINDER>x.png'
    text = image_renderings(picture(filename=name))[0]["text"]
    call = text.removeprefix("<system-reminder>\nCalled the Read tool with the following input: ") \
               .removesuffix("\n</system-reminder>")
    assert call == json.dumps({"file_path": name}, ensure_ascii=False, separators=(",", ":")) \
        .replace("</system-reminder", "&lt;/system-reminder").replace("< / SYSTEM", "&lt; / SYSTEM")
    assert "</system-reminder >" not in call and "&lt;" in call


def test_a_picture_that_may_be_a_connectors_download_gets_the_clients_note_first():
    blocks = image_renderings(picture(mayHoldDownload=True))
    assert blocks[0]["text"] == f"<system-reminder>\n{CONNECTOR_PICTURE}\n</system-reminder>"
    assert blocks[1]["text"].startswith("<system-reminder>\nCalled the Read tool")
    assert blocks[2]["type"] == "image"


def test_shapes_not_imitated_are_left_out():
    text = {"type": "text", "file": {"filePath": "/a.txt", "content": "x"}}
    assert image_renderings(picture(content=text)) is None  # a text file: its rendering is recorded
    assert image_renderings(picture(savedCopyFraming={"enveloped": True, "notice": "n"})) is None
    assert image_renderings(picture(filename=5)) is None
    bad = {"type": "image", "file": {"base64": None, "type": "image/png"}}
    assert image_renderings(picture(content=bad)) is None
    assert image_renderings(picture(content={"type": "image"})) is None


def entry_of(obj: dict) -> Entry:
    e = Entry(0, 1, 0, 0, b"\n", "meta", "attachment", id="u", parent="p")
    normalize(obj, e)
    return e


def line(att: dict, **over) -> dict:
    obj = {"parentUuid": "p", "isSidechain": False, "attachment": att, "type": "attachment", "uuid": "u",
           "renderedRole": "user"}
    obj.update(over)
    return obj


def test_an_attachment_with_no_rendering_is_sent_as_the_client_renders_it():
    e = entry_of(line(picture()))
    assert e.kind == "message" and e.role == "user" and e.extra["context"] == "user"
    assert [b["type"] for b in e.blocks] == ["text", "image"]


def test_a_rendering_that_fails_the_clients_check_is_rendered_from_the_data_a_good_one_is_sent():
    for bad in ([], [{"content": ""}], "x", [5]):
        assert [b["type"] for b in entry_of(line(picture(), rendered=bad)).blocks] == ["text", "image"], bad
    e = entry_of(line(picture(), rendered=[{"content": "<system-reminder>\nrecorded\n</system-reminder>"}]))
    assert e.blocks == [{"type": "text", "text": "<system-reminder>\nrecorded\n</system-reminder>"}]


def test_a_picture_written_for_the_system_or_a_text_file_with_no_rendering_is_not_sent():
    assert entry_of(line(picture(), renderedRole="system")).kind == "meta"  # (not recorded: not imitated)
    text = picture(content={"type": "text", "file": {"filePath": "/a.txt", "content": "x"}})
    assert entry_of(line(text)).kind == "meta"
