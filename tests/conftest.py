import os

import pytest


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path_factory):
    """No test reads the user's real config, keys or proxies, and tiktoken never downloads."""
    # httpx2 (under the anthropic SDK) honours proxy variables even for 127.0.0.1: requests to
    # the test servers must stay on loopback, and no real key or base URL may leak in
    for var in list(os.environ):
        if var.startswith(("ANTHROPIC_", "OPENAI_", "CODEX_")) or var.lower() in ("http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("tiktoken-cache")))
    monkeypatch.delenv("NO_COLOR", raising=False)
    # Claude Code's settings files, which `view` reads as the client does (~/.claude/settings.json): an empty folder
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path_factory.mktemp("claude-config")))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path_factory.mktemp("codex-home")))  # (Codex's config, which view reads)
    from ctxtool import claude_models  # (and an administrator's: /etc/claude-code)

    monkeypatch.setattr(claude_models, "MANAGED_DIR", str(tmp_path_factory.mktemp("claude-managed")))


def pytest_collection_modifyitems(config, items):
    """Tests that need an agent's real client skip when its harness is missing, except where
    CTXTOOL_REQUIRE_PI=1 / CTXTOOL_REQUIRE_CLAUDE=1 / CTXTOOL_REQUIRE_CODEX=1 / CTXTOOL_REQUIRE_OPENCLAW=1
    (make test, CI) / CTXTOOL_REQUIRE_BROWSER=1 make that an error."""
    from tests.support.browser import browser_unavailable_reason
    from tests.support.claude_agent import claude_unavailable_reason
    from tests.support.codex_agent import codex_unavailable_reason
    from tests.support.openclaw_judge import openclaw_unavailable_reason
    from tests.support.pi_agent import pi_unavailable_reason

    for marker, unavailable, require in (("pi", pi_unavailable_reason, "CTXTOOL_REQUIRE_PI"),
                                         ("claude", claude_unavailable_reason, "CTXTOOL_REQUIRE_CLAUDE"),
                                         ("codex", codex_unavailable_reason, "CTXTOOL_REQUIRE_CODEX"),
                                         ("openclaw", openclaw_unavailable_reason, "CTXTOOL_REQUIRE_OPENCLAW"),
                                         ("browser", browser_unavailable_reason, "CTXTOOL_REQUIRE_BROWSER")):
        marked = [item for item in items if item.get_closest_marker(marker)]
        reason = unavailable() if marked else None
        if reason is None:
            continue
        if os.environ.get(require) == "1":
            raise pytest.UsageError(f"{require}=1 but the {marker} harness cannot run: {reason}")
        skip = pytest.mark.skip(reason=reason)
        for item in marked:
            item.add_marker(skip)
    spec = os.environ.get("CTXTOOL_TEST_SHARD")
    if spec:  # one of the processes tests/run_suite.py starts: its share of the suite (tests/support/shard.py)
        from tests.support import shard

        try:
            index, n = shard.parse(spec)
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None
        keep = shard.kept(items, index, n, shard.load_durations())
        mine = {id(x) for x in keep}
        config.hook.pytest_deselected(items=[x for x in items if id(x) not in mine])
        items[:] = keep


@pytest.fixture
def forkable():
    """This process may fork its helpers now (``ctxtool.forked``); skipped where it never may (not Linux). A thread an
    earlier test joined can take a moment to end, and the kernel counts it until then: waited for."""
    import sys
    import time

    from ctxtool import forked

    if not sys.platform.startswith("linux") or os.environ.get(forked.ENV, "1") == "0":
        pytest.skip("helpers are not forked here")
    deadline = time.monotonic() + 5
    while not forked.possible() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert forked.possible(), "another thread is still running"
