"""The model Claude Code resumes with, as its settings files choose it (``claude_models.client_settings``,
``view.client``): the ``model`` of the user's, the project's, the local and an administrator's settings where no
response names a model (or an ``ANTHROPIC_DEFAULT_*_MODEL`` turns the restore off), and their ``env`` laid over the
process's environment.

Each case is ``fixtures/claude-recorded/parallel.jsonl`` with every response's model made ``FILE_MODEL`` (a restored
one, an unknown one, or ``<synthetic>``: no response names a model), the settings files written, and the model the
real client 2.1.330 sent when it resumed it, recorded 2026-11-30 with the files in its sandbox (``CLAUDE_CONFIG_DIR``,
the project folder it ran in, /etc/claude-code bound in a mount namespace of its own). Before, ctxtool read no
settings file: of the first 38 cases (the managed ones aside) 26 were rendered for another model, 15 of them with
system messages where the client sends none, or the other way round.
"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from ctxtool import claude_models
from ctxtool.cli import cli
from ctxtool.view import claude_cwd, view_file
from ctxtool.transcript import scan

SRC = os.path.join(os.path.dirname(__file__), "..", "fixtures", "claude-recorded", "parallel.jsonl")
RESTORED, UNKNOWN, NONE = "claude-opus-4-7", "claude-zzz-1", "<synthetic>"
OPUS, SONNET46, HAIKU45 = "claude-opus-5-5", "claude-sonnet-4-6", "claude-haiku-4-5"

# name: (the file's model, {settings file: its object (or a string: written as is)}, the process's environment,
#        the model the client sent)
CASES = {
    # a restored model wins over the settings' model; a declined one gives the default, not the settings' model
    "restored_user_model": (RESTORED, {"user": {"model": SONNET46}}, {}, RESTORED),
    "restored_project_model": (RESTORED, {"project": {"model": SONNET46}}, {}, RESTORED),
    "unknown_user_model": (UNKNOWN, {"user": {"model": SONNET46}}, {}, OPUS),
    "unknown_project_model": (UNKNOWN, {"project": {"model": HAIKU45}}, {}, OPUS),
    "unknown_local_model": (UNKNOWN, {"local": {"model": HAIKU45}}, {}, OPUS),
    "retired_user_model": ("claude-sonnet-4-5-20250929", {"user": {"model": HAIKU45}}, {}, OPUS),
    # no response names a model: the settings' model, the local file's over the project's over the user's
    "none_user_model": (NONE, {"user": {"model": SONNET46}}, {}, SONNET46),
    "none_project_model": (NONE, {"project": {"model": HAIKU45}}, {}, HAIKU45),
    "none_local_model": (NONE, {"local": {"model": HAIKU45}}, {}, HAIKU45),
    "none_user_and_project": (NONE, {"user": {"model": SONNET46}, "project": {"model": HAIKU45}}, {}, HAIKU45),
    "none_project_and_local": (NONE, {"project": {"model": SONNET46}, "local": {"model": HAIKU45}}, {}, HAIKU45),
    "none_local_empty_over_project": (NONE, {"project": {"model": HAIKU45}, "local": {"model": ""}}, {}, OPUS),
    # ... taken as a --model value is: an alias resolved, [1m] left out, lower-cased, any other name as written
    "none_sonnet_alias": (NONE, {"user": {"model": "sonnet"}}, {}, "claude-sonnet-5-5"),
    "none_haiku_alias": (NONE, {"user": {"model": "haiku"}}, {}, "claude-haiku-5-5"),
    "none_opusplan": (NONE, {"user": {"model": "opusplan"}}, {}, "claude-sonnet-5-5"),
    "none_default_word": (NONE, {"user": {"model": "default"}}, {}, "default"),
    "none_retired_name": (NONE, {"user": {"model": "claude-sonnet-4-5"}}, {}, "claude-sonnet-4-5"),
    "none_unknown_name": (NONE, {"user": {"model": "zzz-unknown"}}, {}, "zzz-unknown"),
    "none_1m": (NONE, {"user": {"model": "claude-sonnet-4-6[1m]"}}, {}, SONNET46),
    "none_upper_case": (NONE, {"user": {"model": "Claude-Sonnet-4-6"}}, {}, SONNET46),
    "none_upper_case_unknown": (NONE, {"user": {"model": "Zzz-Unknown"}}, {}, "Zzz-Unknown"),  # (not lower-cased)
    "none_upper_case_1m": (NONE, {"user": {"model": "Claude-Sonnet-4-6[1M]"}}, {}, SONNET46),
    "process_env_upper_case_unknown": (RESTORED, {}, {"ANTHROPIC_MODEL": "Zzz-Unknown"}, "Zzz-Unknown"),
    "none_dated": (NONE, {"user": {"model": "claude-haiku-4-5-20251001"}}, {}, "claude-haiku-4-5-20251001"),
    "none_bedrock": (NONE, {"user": {"model": "us.anthropic.claude-haiku-4-5-20251001-v1:0"}}, {},
                     "us.anthropic.claude-haiku-4-5-20251001-v1:0"),
    "none_empty": (NONE, {"user": {"model": ""}}, {}, OPUS),
    "none_number": (NONE, {"user": {"model": 5}}, {}, OPUS),
    "none_not_an_object": (NONE, {"user": "BADJSON"}, {}, OPUS),
    # the settings' env: laid over the process's environment, before the file's model
    "restored_user_env_model": (RESTORED, {"user": {"env": {"ANTHROPIC_MODEL": SONNET46}}}, {}, SONNET46),
    "restored_project_env_model": (RESTORED, {"project": {"env": {"ANTHROPIC_MODEL": SONNET46}}}, {}, SONNET46),
    "restored_local_env_model": (RESTORED, {"local": {"env": {"ANTHROPIC_MODEL": SONNET46}}}, {}, SONNET46),
    "unknown_user_env_model": (UNKNOWN, {"user": {"model": HAIKU45, "env": {"ANTHROPIC_MODEL": SONNET46}}}, {}, SONNET46),
    "restored_env_model_over_the_process": (RESTORED, {"user": {"env": {"ANTHROPIC_MODEL": SONNET46}}},
                                            {"ANTHROPIC_MODEL": HAIKU45}, SONNET46),
    "restored_env_model_empty": (RESTORED, {"user": {"env": {"ANTHROPIC_MODEL": ""}}}, {}, RESTORED),
    "restored_env_model_a_number": (RESTORED, {"user": {"env": {"ANTHROPIC_MODEL": 5}}}, {}, "5"),
    "none_env_model_over_the_model": (NONE, {"user": {"model": HAIKU45, "env": {"ANTHROPIC_MODEL": SONNET46}}}, {},
                                      SONNET46),
    "none_process_env_model_over_the_model": (NONE, {"user": {"model": HAIKU45}}, {"ANTHROPIC_MODEL": SONNET46},
                                              SONNET46),
    # a default variable turns the restore off: the settings' model, else the default
    "restored_env_default_sonnet": (RESTORED, {"user": {"env": {"ANTHROPIC_DEFAULT_SONNET_MODEL": "x"}}}, {}, OPUS),
    "restored_model_env_default_sonnet": (RESTORED, {"user": {"model": HAIKU45, "env": {
        "ANTHROPIC_DEFAULT_SONNET_MODEL": "x"}}}, {}, HAIKU45),
    "restored_model_env_default_opus": (RESTORED, {"user": {"model": HAIKU45, "env": {
        "ANTHROPIC_DEFAULT_OPUS_MODEL": SONNET46}}}, {}, HAIKU45),
    "restored_model_process_env_default_sonnet": (RESTORED, {"user": {"model": HAIKU45}},
                                                  {"ANTHROPIC_DEFAULT_SONNET_MODEL": "x"}, HAIKU45),
    # (a review's round, 2026-11-30) a file whose model is no string, or whose env is no object, is passed by whole
    "env_not_an_object": (NONE, {"user": {"model": HAIKU45, "env": "x"}}, {}, OPUS),
    "model_a_number_with_env": (RESTORED, {"project": {"model": 5, "env": {"ANTHROPIC_MODEL": SONNET46}}}, {},
                                RESTORED),
    "model_null_with_env": (RESTORED, {"project": {"model": None, "env": {"ANTHROPIC_MODEL": SONNET46}}}, {}, RESTORED),
    "model_null_over_user": (NONE, {"user": {"model": HAIKU45}, "project": {"model": None}}, {}, HAIKU45),
    "model_a_number_over_user": (NONE, {"user": {"model": HAIKU45}, "project": {"model": 5}}, {}, HAIKU45),
    "model_a_list_over_user": (NONE, {"user": {"model": HAIKU45}, "project": {"model": ["x"]}}, {}, HAIKU45),
    # ... an alias names the model its ANTHROPIC_DEFAULT_*_MODEL names, where that is set
    "alias_opus_and_its_variable": (RESTORED, {"user": {"model": "opus", "env": {
        "ANTHROPIC_DEFAULT_OPUS_MODEL": HAIKU45}}}, {}, HAIKU45),
    "alias_sonnet_and_its_variable": (NONE, {"user": {"model": "sonnet", "env": {
        "ANTHROPIC_DEFAULT_SONNET_MODEL": HAIKU45}}}, {}, HAIKU45),
    "alias_haiku_and_the_process_variable": (NONE, {"user": {"model": "haiku"}}, {"ANTHROPIC_DEFAULT_HAIKU_MODEL": SONNET46},
                                             SONNET46),
    "env_model_alias_and_its_variable": (RESTORED, {"user": {"env": {"ANTHROPIC_MODEL": "sonnet",
                                                                     "ANTHROPIC_DEFAULT_SONNET_MODEL": HAIKU45}}}, {}, HAIKU45),
    # ... an env value is set as JavaScript's String() writes it
    "env_a_fraction": (RESTORED, {"user": {"env": {"ANTHROPIC_MODEL": 5.5}}}, {}, "5.5"),
    "env_a_large_integer": (RESTORED, {"user": {"env": {"ANTHROPIC_MODEL": 12345678901234567890}}}, {},
                            "12345678901234567000"),
    "env_an_object": (RESTORED, {"user": {"env": {"ANTHROPIC_MODEL": {"a": 1}}}}, {}, "[object Object]"),
    "env_a_list": (NONE, {"user": {"model": HAIKU45, "env": {"ANTHROPIC_MODEL": [1]}}}, {}, "1"),
    "env_null_over_user": (RESTORED, {"user": {"env": {"ANTHROPIC_MODEL": HAIKU45}},
                                      "project": {"env": {"ANTHROPIC_MODEL": None}}}, {}, "null"),
    # ... white space alone: a model the client sends as ""; an ANTHROPIC_MODEL it takes as not set
    "model_of_white_space": (NONE, {"user": {"model": "   "}}, {}, ""),
    "env_model_of_white_space": (RESTORED, {"user": {"env": {"ANTHROPIC_MODEL": " "}}}, {}, RESTORED),
    "process_env_model_of_white_space": (RESTORED, {}, {"ANTHROPIC_MODEL": " "}, RESTORED),
    # an administrator's settings (/etc/claude-code): above every other file, their drop-ins by name above them
    "none_managed_over_local": (NONE, {"local": {"model": SONNET46}, "managed-settings.json": {"model": HAIKU45}}, {},
                                HAIKU45),
    "restored_managed_env_over_local_env": (RESTORED, {"local": {"env": {"ANTHROPIC_MODEL": SONNET46}},
                                                       "managed-settings.json": {"env": {"ANTHROPIC_MODEL": HAIKU45}}},
                                            {}, HAIKU45),
    "none_drop_in_over_user": (NONE, {"user": {"model": SONNET46}, "managed-settings.d/10-a.json": {"model": HAIKU45}},
                               {}, HAIKU45),
    "none_drop_in_over_managed": (NONE, {"managed-settings.json": {"model": SONNET46},
                                         "managed-settings.d/10-a.json": {"model": HAIKU45}}, {}, HAIKU45),
    "none_drop_ins_by_name": (NONE, {"managed-settings.d/20-b.json": {"model": SONNET46},
                                     "managed-settings.d/10-a.json": {"model": HAIKU45}}, {}, SONNET46),
    "restored_managed_model": (RESTORED, {"managed-settings.json": {"model": HAIKU45}}, {}, RESTORED),
    "none_drop_in_not_json": (NONE, {"managed-settings.d/10-a.txt": {"model": HAIKU45}}, {}, OPUS),
}


def setup(root: str, name: str) -> tuple[str, dict, str]:
    """The case's folders under ``root`` (``home/.claude``, the project ``proj`` the session ran in, ``managed`` for
    /etc/claude-code), its session file (every line's ``cwd`` the project) and the environment: ``(path, environ,
    project)``."""
    file_model, files, env, _ = CASES[name]
    home, proj = os.path.join(root, "home"), os.path.join(root, "proj")
    config = os.path.join(home, ".claude")
    os.makedirs(os.path.join(proj, ".claude"), exist_ok=True)
    os.makedirs(config, exist_ok=True)
    where = {"user": os.path.join(config, "settings.json"), "project": os.path.join(proj, ".claude", "settings.json"),
             "local": os.path.join(proj, ".claude", "settings.local.json")}
    for which, data in files.items():
        path = where.get(which) or os.path.join(root, "managed", which)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(data if isinstance(data, str) else json.dumps(data))
    path = os.path.join(root, "session.jsonl")
    with open(SRC, encoding="utf-8") as f, open(path, "w", encoding="utf-8") as g:
        for ln in f:
            o = json.loads(ln)
            if "cwd" in o:
                o["cwd"] = proj
            if o.get("type") == "assistant" and isinstance(o.get("message"), dict) and "model" in o["message"]:
                o["message"]["model"] = file_model
            g.write(json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path, {"HOME": home, "CLAUDE_CONFIG_DIR": config, **env}, proj


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_model_is_the_one_the_client_sent(tmp_path, monkeypatch, name):
    path, environ, _ = setup(str(tmp_path), name)
    monkeypatch.setattr(claude_models, "MANAGED_DIR", str(tmp_path / "managed"))
    got = view_file(path, environ=environ)["model"]
    assert got["name"] == CASES[name][3]
    assert got["system_messages"] is claude_models.system_turns(CASES[name][3])


def test_the_folder_the_session_ran_in_is_its_last_lines(tmp_path):
    assert claude_cwd(scan(SRC)) == "/tmp/ctxtool-claude-rec/parallel/proj"
    lines = [json.loads(ln) for ln in open(SRC, encoding="utf-8")]
    last = max(i for i, o in enumerate(lines) if "cwd" in o)
    lines[last]["cwd"] = "/elsewhere"
    p = tmp_path / "moved.jsonl"
    p.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    assert claude_cwd(scan(str(p))) == "/elsewhere"
    p.write_text("".join(json.dumps({k: v for k, v in o.items() if k != "cwd"}) + "\n" for o in lines), encoding="utf-8")
    assert claude_cwd(scan(str(p))) is None


def test_settings_are_read_only_where_the_environment_is_given(tmp_path):
    path, environ, _ = setup(str(tmp_path), "none_user_model")
    assert view_file(path)["model"]["name"] == OPUS  # (the library reads nothing of the user's unless told)
    assert view_file(path, environ=environ)["model"]["basis"].startswith("the settings' model (")
    assert view_file(path, environ=environ, model="opus")["model"]["name"] == OPUS  # --model wins


def test_the_settings_env_sets_the_host_whose_client_drops_other_models_thinking(tmp_path):
    path, environ, _ = setup(str(tmp_path), "restored_user_env_model")
    with open(environ["CLAUDE_CONFIG_DIR"] + "/settings.json", "w") as f:
        json.dump({"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}}, f)
    assert view_file(path, environ=environ)["model"]["foreign_thinking"] == "dropped"
    assert view_file(path, environ={**environ, "CLAUDE_CONFIG_DIR": str(tmp_path)})["model"]["foreign_thinking"] == "kept"


def test_the_command_reads_the_settings_files(tmp_path):
    path, environ, _ = setup(str(tmp_path), "none_project_and_local")
    r = CliRunner().invoke(cli, ["view", "--json", path], env={**environ, "ANTHROPIC_MODEL": ""})
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)["model"]
    assert d["name"] == HAIKU45 and d["system_messages"] is False and "settings.local.json" in d["basis"]
    assert not any(m["role"] == "system" for m in json.loads(r.output)["messages"])


LIVE = ["restored_user_model", "unknown_user_model", "none_user_model", "none_project_and_local", "none_opusplan",
        "restored_project_env_model", "restored_env_model_over_the_process", "restored_model_env_default_opus",
        "none_local_empty_over_project", "none_managed_over_local", "none_drop_ins_by_name", "model_null_with_env",
        "model_a_list_over_user", "alias_opus_and_its_variable", "env_a_fraction", "env_null_over_user",
        "model_of_white_space", "env_model_of_white_space", "process_env_upper_case_unknown"]
MANAGED_LIVE = "/etc/claude-code"


def _remove_empty(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:  # (no longer empty, or gone: not this test's to remove)
        pass


def _in_a_mount_namespace(box, managed: str) -> None:
    """The client run with ``managed`` bound on /etc/claude-code in a mount namespace of its own (``unshare -m``, as
    root): the machine's own folder is not changed (an empty one is made where there is none, and removed after)."""
    import shutil
    import subprocess

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to show the client an administrator's settings")
    made = not os.path.exists(MANAGED_LIVE)
    if made:
        os.makedirs(MANAGED_LIVE)
    box.cleanups = getattr(box, "cleanups", []) + ([lambda: _remove_empty(MANAGED_LIVE)] if made else [])
    if subprocess.run(["unshare", "-m", "--", "sh", "-c", f'mount --bind "{managed}" {MANAGED_LIVE}'],
                      capture_output=True).returncode:
        pytest.skip("unshare -m with a bind mount is not allowed here")
    run = box.execute

    def execute(cmd, env, timeout):
        return run(["unshare", "-m", "--", "sh", "-c", f'mount --bind "$0" {MANAGED_LIVE} && exec "$@"', managed, *cmd],
                   env, timeout)
    box.execute = execute


@pytest.mark.claude
@pytest.mark.parametrize("name", LIVE)
def test_the_real_client_sends_what_the_view_sends(monkeypatch, name):
    """The whole request, not only its model: the client resumed in a sandbox that holds the case's settings files and
    runs in its project folder; the view given the same environment (its base URL is the loopback server's: another
    host, whose client drops other models' thinking)."""
    from tests.support.claude_agent import ClaudeSandbox, PROMPT, _recorded_session_id, conversation, reminder_texts
    from tests.support.claude_agent import strip_prompt

    with ClaudeSandbox() as box:
        path, environ, proj = setup(box.root, name)
        assert proj == box.cwd and environ["CLAUDE_CONFIG_DIR"] == box.config
        managed = os.path.join(box.root, "managed")
        try:
            if os.path.isdir(managed):
                _in_a_mount_namespace(box, managed)
            sid = box.install(path, _recorded_session_id(path))
            run = box.run(PROMPT, resume=sid, env=CASES[name][2])
        finally:
            for undo in getattr(box, "cleanups", []):
                undo()
        body = run.messages_requests[0].body
        monkeypatch.setattr(claude_models, "MANAGED_DIR", managed)
        ours = view_file(path, environ={**environ, "ANTHROPIC_BASE_URL": "http://127.0.0.1:1"})
    assert body["model"] == ours["model"]["name"] == CASES[name][3]
    theirs = strip_prompt(body["messages"])
    assert conversation(ours["messages"]) == conversation(theirs)
    assert reminder_texts(ours["messages"]) == reminder_texts(theirs)


def test_a_settings_file_nested_past_pythons_stack_is_passed_by(tmp_path):
    path, environ, proj = setup(str(tmp_path), "none_user_model")
    (tmp_path / "proj" / ".claude" / "settings.json").write_text("[" * 100_000)  # (the client passes it by)
    assert view_file(path, environ=environ)["model"]["name"] == SONNET46


def test_a_settings_path_that_is_no_file_or_cannot_be_named_is_passed_by(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".claude").mkdir(parents=True)
    os.mkfifo(proj / ".claude" / "settings.json")  # (opening it would wait for a writer)
    (proj / ".claude" / "settings.local.json").mkdir()
    got = claude_models.client_settings(str(proj), {"CLAUDE_CONFIG_DIR": str(tmp_path / "none")})
    assert got == claude_models.ClientSettings()
    assert claude_models.client_settings("/x\0y", {"CLAUDE_CONFIG_DIR": str(tmp_path)}) == claude_models.ClientSettings()
