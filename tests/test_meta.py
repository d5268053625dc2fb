"""Project-wide contracts: thin CLI, documented commands, no click in the library."""

import ast
import pathlib
import subprocess
import sys

import pytest
from click.testing import CliRunner

from ctxtool.cli import cli

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIBRARY = [p for p in (ROOT / "ctxtool").rglob("*.py") if "cli" not in p.relative_to(ROOT / "ctxtool").parts[:1]]


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: str(p.relative_to(ROOT)))
def test_library_modules_do_not_import_click_or_print(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] == "click" for a in node.names), path
        if isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] != "click", path
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in ("print", "exit"), f"{path}:{node.lineno} calls {node.func.id}"


@pytest.mark.parametrize("name", cli.list_commands(None))
def test_every_command_has_help_with_example_and_is_in_readme(name):
    r = CliRunner().invoke(cli, [name, "-h"])
    assert r.exit_code == 0
    assert "Example:" in r.output
    assert "--json" in r.output
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"ctxtool {name}" in readme


def test_python_m_ctxtool_works():
    r = subprocess.run([sys.executable, "-m", "ctxtool", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.startswith("ctxtool ")


def test_no_unused_imports_or_undefined_names():
    from pyflakes.api import checkPath
    from pyflakes.reporter import Reporter
    import io

    out, err = io.StringIO(), io.StringIO()
    paths = [p for p in (ROOT / "ctxtool").rglob("*.py")] + [p for p in (ROOT / "tests").rglob("*.py") if "node_modules" not in p.parts]
    problems = sum(checkPath(str(p), Reporter(out, err)) for p in paths)
    assert problems == 0, out.getvalue() + err.getvalue()


def test_commands_load_on_demand_and_repair_does_not_pay_for_the_others():
    """`ctxtool repair` on a CI box should not import the anthropic SDK, tiktoken or the other commands."""
    code = (
        "import sys; from ctxtool.cli import cli; "
        "cmd = cli.get_command(None, 'repair'); assert cmd is not None; "
        "heavy = [m for m in ('anthropic', 'tiktoken', 'ctxtool.prune', 'ctxtool.compact', 'ctxtool.estimate') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""
    assert cli.list_commands(None) == ["budget", "checkpoint", "compact", "estimate", "profile", "prune", "repair", "report", "validate", "view"]
