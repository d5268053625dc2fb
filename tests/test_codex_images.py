"""An ``input_image`` as Codex sends it when it resumes a rollout (``codex_rules._image_again``), and the model that
decides its ``original`` detail (``codex_models``).

Each shape is applied to the picture of ``fixtures/codex-recorded/images.jsonl``, in the user's message (line 8) and
in the ``view_image`` call's output (line 13); ``SENT`` is what the real Codex 0.169 sent for it, recorded 2026-11-30
(the model its default, gpt-5.5). Before, ctxtool sent every picture as written: 32 of the 44 cases differed (a remote
URL or the ``low`` detail Codex sends as its own text, a detail it refuses the line for, a null detail and fields it
leaves out), and every ``original`` detail Codex sends as ``high`` to a model outside its catalog.
"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from ctxtool import codex_models, codex_rules
from ctxtool.cli import cli
from ctxtool.codex_rules import LOW_DETAIL, REMOTE_IMAGE
from ctxtool.transcript import scan
from tests.support.codex_corrupt import FIX

SRC = os.path.join(FIX, "images.jsonl")
LEFT, SKIPPED = "LEFT_OUT", "SKIPPED"


def image(detail="original", url=None) -> dict:
    """The picture Codex sent: ``url`` None is the recorded one."""
    out = {"type": "input_image", "image_url": url}
    if detail is not None:
        out["detail"] = detail
    return out


def text(t: str) -> dict:
    return {"type": "input_text", "text": t}


# (name, the fields set on the picture (LEFT: taken out), what Codex sent in its place, or SKIPPED: the line)
SHAPES = [
    ("detail_auto", {"detail": "auto"}, image("auto")),
    ("detail_high", {"detail": "high"}, image("high")),
    ("detail_low", {"detail": "low"}, text(LOW_DETAIL)),
    ("detail_null", {"detail": None}, image(None)),
    ("detail_left_out", {"detail": LEFT}, image(None)),
    ("detail_unknown", {"detail": "zzz"}, SKIPPED),
    ("detail_capitalized", {"detail": "Original"}, SKIPPED),
    ("detail_empty", {"detail": ""}, SKIPPED),
    ("detail_number", {"detail": 5}, SKIPPED),
    ("detail_true", {"detail": True}, SKIPPED),
    ("detail_object", {"detail": {}}, SKIPPED),
    ("another_field", {"x": 1}, image()),
    ("another_field_null", {"x": None}, image()),
    ("file_id", {"file_id": "file_1"}, image()),
    ("https", {"image_url": "https://example.com/a.png"}, text(REMOTE_IMAGE)),
    ("http", {"image_url": "http://example.com/a.png"}, text(REMOTE_IMAGE)),
    ("https_upper_case", {"image_url": "HTTPS://example.com/a.png"}, text(REMOTE_IMAGE)),
    ("https_without_slashes", {"image_url": "https:example.com/a.png"}, text(REMOTE_IMAGE)),
    ("https_and_low", {"image_url": "https://example.com/a.png", "detail": "low"}, text(REMOTE_IMAGE)),
    ("ftp", {"image_url": "ftp://example.com/a.png"}, image(url="ftp://example.com/a.png")),
    ("empty_url", {"image_url": ""}, image(url="")),
    ("relative_url", {"image_url": "pic.png"}, image(url="pic.png")),
    # (a review's round: the low detail's text replaces a data: picture only)
    ("low_relative_url", {"image_url": "pic.png", "detail": "low"}, image("low", url="pic.png")),
    ("low_ftp", {"image_url": "ftp://example.com/a.png", "detail": "low"}, image("low", url="ftp://example.com/a.png")),
    ("low_empty_url", {"image_url": "", "detail": "low"}, image("low", url="")),
]
WHERE = {"message": 7, "output": 12}  # the picture's line (0-based)


def rollout(tmp_path, shape: dict, where: str) -> str:
    lines = open(SRC, encoding="utf-8").read().splitlines(keepends=True)
    k = WHERE[where]
    o = json.loads(lines[k])
    items = o["payload"]["content" if where == "message" else "output"]
    pic = next(c for c in items if c.get("type") == "input_image")
    for key, v in shape.items():
        if v == LEFT:
            pic.pop(key, None)
        else:
            pic[key] = v
    lines[k] = json.dumps(o, separators=(",", ":")) + "\n"
    path = tmp_path / f"{where}.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return str(path)


def recorded_url() -> str:
    o = json.loads(open(SRC, encoding="utf-8").read().splitlines()[WHERE["output"]])
    return o["payload"]["output"][0]["image_url"]


def sent_picture(items: list, where: str):
    """What stands in the picture's place among ``items`` (SKIPPED: its line was not sent)."""
    if where == "message":
        msg = next((it for it in items if it.get("type") == "message" and it.get("role") == "user"
                    and any("<image name=" in (c.get("text") or "") for c in it["content"])), None)
        return SKIPPED if msg is None else msg["content"][1]
    out = next(it for it in items if it.get("type") == "function_call_output" and it.get("call_id") == "call_img1")
    return SKIPPED if out["output"] == "aborted" else out["output"][0]


def expected(sent):
    if isinstance(sent, dict) and sent.get("type") == "input_image" and sent["image_url"] is None:
        return {**sent, "image_url": recorded_url()}
    return sent


@pytest.mark.parametrize("where", list(WHERE))
@pytest.mark.parametrize("name,shape,sent", SHAPES, ids=[s[0] for s in SHAPES])
def test_a_picture_is_sent_as_codex_sends_it(tmp_path, name, shape, sent, where):
    items = [it for it, _ in codex_rules.sent_items(scan(rollout(tmp_path, shape, where)))]
    assert sent_picture(items, where) == expected(sent)


@pytest.mark.parametrize("model,original", [
    (None, True), ("gpt-5.5", True), ("gpt-5.5-pro", True), ("gpt-5.50", True), ("gpt-6-sol", True),
    ("gpt-5.4", False), ("gpt-4.1", False), ("o3", False), ("GPT-5.5", False), ("gpt-6", False), ("gpt-5.6", False),
])
def test_the_original_detail_is_sent_as_high_to_a_model_outside_codexs_catalog(tmp_path, model, original):
    """Judged with ``-m`` (2026-11-30): gpt-5.5-pro and gpt-5.50 are taken for gpt-5.5 (a name that starts with a slug
    of the catalog), GPT-5.5 is not (case), nor gpt-6 or gpt-5.6 (only longer names of them are slugs)."""
    assert codex_models.original_detail(model) is original
    items = [it for it, _ in codex_rules.sent_items(scan(SRC), model=model)]
    assert sent_picture(items, "output")["detail"] == ("original" if original else "high")
    assert sent_picture(items, "message")["detail"] == ("original" if original else "high")


def test_the_view_takes_the_model_from_the_option_or_codexs_config(tmp_path):
    def view(*args, env=None):
        r = CliRunner().invoke(cli, ["view", "--json", *args, SRC], env=env)
        assert r.exit_code == 0, r.output
        d = json.loads(r.output)
        details = [c.get("detail") for m in d["messages"] for c in (m["item"].get("content") or (
            m["item"]["output"] if isinstance(m["item"].get("output"), list) else [])) if c.get("type") == "input_image"]
        return d["model"], details

    model, details = view()
    assert model["name"] == "gpt-5.5" and model["basis"].startswith("the default") and details == ["original"] * 2
    home = tmp_path / "codex"
    home.mkdir()
    (home / "config.toml").write_text('model = "o3"\nmodel_provider = "openai"\n')
    model, details = view(env={"CODEX_HOME": str(home)})
    assert model["name"] == "o3" and "config.toml" in model["basis"] and details == ["high"] * 2
    assert model["original_image_detail"] is False
    model, details = view("--model", "gpt-5.5-pro", env={"CODEX_HOME": str(home)})
    assert model["name"] == "gpt-5.5-pro" and details == ["original"] * 2
    (home / "config.toml").write_text('model = [\n')  # (no TOML: Codex would not start; the default here)
    assert view(env={"CODEX_HOME": str(home)})[0]["name"] == "gpt-5.5"


LIVE = ["detail_low", "detail_null", "detail_unknown", "another_field", "https_upper_case", "relative_url", "low_ftp"]


@pytest.mark.codex
@pytest.mark.parametrize("where", list(WHERE))
@pytest.mark.parametrize("name", LIVE)
def test_the_real_codex_agrees(tmp_path, name, where):
    from tests.support.codex_agent import compare, resume_payload

    shape = next(s for n, s, _ in SHAPES if n == name)
    path = rollout(tmp_path, shape, where)
    sent = resume_payload(path)["history"]
    assert compare([it for it, _ in codex_rules.sent_items(scan(path))], sent) == []


@pytest.mark.codex
@pytest.mark.parametrize("model", ["o3", "gpt-5.5-pro"])
def test_the_real_codex_run_with_another_model_agrees(model):
    from tests.support.codex_agent import CodexSandbox, PROMPT, compare, strip_turn

    with CodexSandbox() as box:
        sid = box.install(SRC)
        run = box.run(PROMPT, resume=sid, args=["-m", model], script=[("status", 400, "ctxtool judge: recorded")])
        body = run.bodies[0]
    assert body["model"] == model
    assert compare([it for it, _ in codex_rules.sent_items(scan(SRC), model=model)], strip_turn(body["input"])) == []


def _trusted_project(root, model: str = "o3", trusted: bool = True) -> tuple[str, dict]:
    """images.jsonl run in the folder ``root/proj`` (its session_meta's cwd), whose ``.codex/config.toml`` names
    ``model``; the user's config (``root/home/.codex``) trusts that folder or not: ``(rollout, environ)``."""
    proj, home = os.path.join(root, "proj"), os.path.join(root, "home", ".codex")
    os.makedirs(os.path.join(proj, ".codex"), exist_ok=True)
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(proj, ".codex", "config.toml"), "w") as f:
        f.write(f'model = "{model}"\n')
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write('model = "gpt-5.5"\n' + (f'[projects."{proj}"]\ntrust_level = "trusted"\n' if trusted else ""))
    lines = open(SRC, encoding="utf-8").read().splitlines(keepends=True)
    o = json.loads(lines[0])
    o["payload"]["cwd"] = proj
    lines[0] = json.dumps(o, separators=(",", ":")) + "\n"
    path = os.path.join(root, "images.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)
    return path, {"HOME": os.path.join(root, "home"), "CODEX_HOME": home}


@pytest.mark.parametrize("trusted", [True, False])
def test_a_trusted_projects_config_chooses_the_model(tmp_path, trusted):
    """A review's round (2026-11-30, judged): the model of the project's ``.codex/config.toml`` where the user's config
    trusts the folder the rollout ran in; an untrusted folder's config is not read."""
    from ctxtool.view import view_file

    path, environ = _trusted_project(str(tmp_path), trusted=trusted)
    got = view_file(path, environ=environ)
    assert got["model"]["name"] == ("o3" if trusted else "gpt-5.5")
    details = [c.get("detail") for m in got["messages"] for c in (m["item"].get("content") or (
        m["item"]["output"] if isinstance(m["item"].get("output"), list) else [])) if c.get("type") == "input_image"]
    assert details == ["high" if trusted else "original"] * 2


@pytest.mark.codex
def test_the_real_codex_run_in_a_trusted_project_agrees(tmp_path):
    from ctxtool.view import view_file
    from tests.support.codex_agent import CodexSandbox, PROMPT, compare, strip_turn

    with CodexSandbox() as box:
        path, _ = _trusted_project(box.root)
        assert os.path.join(box.root, "proj") == box.cwd
        sid = box.install(path)
        run = box.run(PROMPT, resume=sid, config=f'[projects."{box.cwd}"]\ntrust_level = "trusted"\n',
                      script=[("status", 400, "ctxtool judge: recorded")])
        body = run.bodies[0]
        ours = view_file(path, environ={"HOME": box.home, "CODEX_HOME": box.codex_home})
    assert body["model"] == ours["model"]["name"] == "o3"
    assert compare([m["item"] for m in ours["messages"]], strip_turn(body["input"])) == []


# (the folders, under the sandbox, the user's config trusts; those holding a .codex/config.toml and its model; where
# .git is): the rollout ran in proj/sub, and Codex takes a project's model only from that folder's own config, trusted
# itself (probed on 8 layouts with 0.169: a config or a trust of the folder above it, the git root's included, counts
# for nothing)
_PROJECT_LAYOUTS = {
    "the git root above trusted, its config": (["proj"], {"proj": "o3"}, "proj", "gpt-5.5"),
    "the folder itself trusted, the config above": (["proj/sub"], {"proj": "o3"}, "proj", "gpt-5.5"),
    "the folder itself trusted, its own config": (["proj/sub"], {"proj/sub": "gpt-4.1"}, "proj", "gpt-4.1"),
    "the folder above trusted, the folder's own config": (["proj"], {"proj/sub": "gpt-4.1"}, "proj", "gpt-5.5"),
}


@pytest.mark.codex
@pytest.mark.parametrize("layout", list(_PROJECT_LAYOUTS))
def test_only_the_rollouts_own_trusted_folder_chooses_the_model(layout):
    """Codex reads a project's config in the folder the rollout ran in alone, where the user's config trusts that very
    folder: neither a config nor a trust of a folder above it counts (judged)."""
    from ctxtool.view import view_file
    from tests.support.codex_agent import CodexSandbox, PROMPT

    trusted, configs, git, model = _PROJECT_LAYOUTS[layout]
    with CodexSandbox(cwd_name="proj/sub") as box:
        for rel, m in configs.items():
            os.makedirs(os.path.join(box.root, rel, ".codex"))
            with open(os.path.join(box.root, rel, ".codex", "config.toml"), "w") as f:
                f.write(f'model = "{m}"\n')
        os.makedirs(os.path.join(box.root, git, ".git"))
        lines = open(SRC, encoding="utf-8").read().splitlines(keepends=True)
        o = json.loads(lines[0])
        o["payload"]["cwd"] = box.cwd
        lines[0] = json.dumps(o, separators=(",", ":")) + "\n"
        path = os.path.join(box.root, "images.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(lines)
        sid = box.install(path)
        trust = "".join(f'[projects."{os.path.join(box.root, t)}"]\ntrust_level = "trusted"\n' for t in trusted)
        body = box.run(PROMPT, resume=sid, config=trust, script=[("status", 400, "ctxtool judge: recorded")]).bodies[0]
        ours = view_file(path, environ={"HOME": box.home, "CODEX_HOME": box.codex_home})
    assert body["model"] == ours["model"]["name"] == model
