"""Shared benchmark helpers: generated inputs (cached in bench-out/) and child-process runs."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MEASURE = os.path.join(HERE, "measure.py")


def compile_package() -> None:
    """Write ctxtool's bytecode, as ``pip install`` does for an installed package. A checkout run with
    PYTHONDONTWRITEBYTECODE (set on the machines here) has none, so each measured process would compile
    every module first (~50 ms of a 0.85 s run, measured), which no installed ctxtool does; the
    references (orjson, ccusage) are installed, compiled, packages."""
    import compileall

    compileall.compile_dir(os.path.join(ROOT, "ctxtool"), quiet=2)


compile_package()  # every bench imports this module before it measures


def generated(out_dir: str, fmt: str = "pi", size_mb: int = 500, seed: int = 1) -> str:
    """A generated session of at least ``size_mb`` MB, made once and reused."""
    sys.path.insert(0, ROOT)
    from ctxtool import synth

    path = os.path.join(out_dir, f"{fmt}-{size_mb}mb-seed{seed}.jsonl")
    if not os.path.exists(path) or os.path.getsize(path) < size_mb * 1024 * 1024:
        synth.write_session(path + ".part", fmt, seed=seed, target_bytes=size_mb * 1024 * 1024)
        os.replace(path + ".part", path)
    return path


def run(kind: str, *args: str, env: dict | None = None) -> dict:
    """Run measure.py in a fresh interpreter; returns measure.py's figures (seconds, cpu_seconds, peak_rss_mb, ...)."""
    env = dict(os.environ, PYTHONPATH=ROOT, **(env or {}))
    proc = subprocess.run([sys.executable, MEASURE, kind, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "{}"
    try:
        return json.loads(last)
    except ValueError:
        raise RuntimeError(f"benchmark child failed: {proc.stderr[-2000:]}") from None


def best(kind: str, *args: str, repeat: int = 3, env: dict | None = None) -> dict:
    """The fastest of ``repeat`` runs (the page cache is warm after the first)."""
    runs = [run(kind, *args, env=env) for _ in range(repeat)]
    fastest = min(runs, key=lambda r: r["seconds"])
    fastest["runs"] = [round(r["seconds"], 3) for r in runs]
    return fastest
