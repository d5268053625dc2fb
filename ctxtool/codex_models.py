"""The model the Codex CLI is run with when it resumes a rollout, and what that changes in what it sends (0.169).

Codex does not take the model back from the rollout: it runs with ``-m`` (``-c model=...``), else the ``model`` of
the project's ``.codex/config.toml`` where the user has trusted that folder, else its config's
(``$CODEX_HOME/config.toml``, else ``~/.codex/config.toml``), else its default, ``gpt-5.5`` (judged: a rollout whose
turns name ``gpt-4.1`` or ``o3`` is resumed with the config's model). What the model changes here: an image's
``original`` detail, which only the models of Codex's own catalog take; to any other model Codex sends it as ``high``
(``codex_rules._image_again``).
"""

from __future__ import annotations

import os
import stat

DEFAULT = "gpt-5.5"  # Codex's model where its config names none (0.169)
# the models of Codex's own catalog (0.169), each of which takes an image's "original" detail; a model is one of them
# when its name starts with the slug (judged: gpt-5.5-pro, gpt-5.50 take it; GPT-5.5, gpt-5.4, gpt-6, o3 do not)
ORIGINAL_DETAIL = ("gpt-6-astra", "gpt-6.1-sol", "gpt-6.1-terra", "gpt-6-sol", "gpt-6-luna", "gpt-5.6-sol",
                   "gpt-5.6-terra", "gpt-5.6-luna", "gpt-daybreak-blue-latest", "gpt-daybreak-red-latest", "gpt-5.5",
                   "codex-auto-review")


def original_detail(model: str | None) -> bool:
    """Whether Codex run with ``model`` (None: its default) sends an image's ``original`` detail (else ``high``)."""
    return (DEFAULT if model is None else model).startswith(ORIGINAL_DETAIL)


def config_path(environ) -> str:
    """Codex's config file: ``$CODEX_HOME/config.toml``, else ``~/.codex/config.toml``."""
    home = environ.get("CODEX_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".codex")
    return os.path.join(home, "config.toml")


def config_model(environ, cwd: str | None = None) -> tuple[str, str] | None:
    """``(model, where it is set)`` where Codex's config names its model (a string, not empty), else None: the
    project's ``.codex/config.toml`` in ``cwd`` (the folder the rollout ran in) where the user's config trusts that
    folder (``[projects."<cwd>"] trust_level = "trusted"``, which Codex writes when a person trusts it; judged), else
    the user's. A file that cannot be read or is no TOML is passed by (Codex would not start with it: nothing to
    imitate)."""
    path = config_path(environ)
    user = _toml(path)
    if cwd and user is not None:
        projects = user.get("projects")
        trust = projects.get(cwd) if isinstance(projects, dict) else None
        if isinstance(trust, dict) and trust.get("trust_level") == "trusted":
            own = os.path.join(cwd, ".codex", "config.toml")
            model = (_toml(own) or {}).get("model")
            if type(model) is str and model:
                return model, f"the project's config ({own}, a folder the user's config trusts)"
    model = (user or {}).get("model")
    return (model, f"the config's model ({path})") if type(model) is str and model else None


def _toml(path: str) -> dict | None:
    """A TOML file as plain data, or None where it cannot be read or is no TOML."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, ValueError):
        return None
    from .config import loads_toml  # (only where a Codex rollout is viewed)
    from .errors import ConfigError

    try:
        return loads_toml(text, path=path)
    except ConfigError:
        return None
