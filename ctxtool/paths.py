"""Expand files, directories and globs into the session files to process."""

from __future__ import annotations

import glob
import os
import re

# Files that live beside sessions but are not live sessions (ours and OpenClaw's): backups,
# temp files, locks, archives, and compaction checkpoints (<id>.checkpoint.<uuid>.jsonl,
# snapshots that would be counted twice). Named explicitly, any of them is still read.
ARTIFACT_RE = re.compile(
    r"(\.bak-\d+-\d+$|\.tmp$|\.lock$|\.jsonl\.(reset|deleted|bak)\.|\.truncate-tmp$|\.manual-compaction-tmp$|\.ctxtool-"
    r"|\.checkpoint\.[0-9a-fA-F-]{8,}\.jsonl$)"
)


def is_artifact(path: str) -> bool:
    return bool(ARTIFACT_RE.search(os.path.basename(path)))


def expand(targets: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """(session files in a stable order, [(target, problem)] for targets that gave none)."""
    files: list[str] = []
    problems: list[tuple[str, str]] = []
    seen: dict[str, int] = {}

    def add(p: str) -> None:
        # realpath: a symlink and its target (or two links to one file) are one session, processed
        # once (a batch would otherwise count it twice and compact it twice); the real name is shown
        key = os.path.realpath(p)
        if key not in seen:
            seen[key] = len(files)
            files.append(p)
        elif os.path.islink(files[seen[key]]) and not os.path.islink(p):
            files[seen[key]] = p

    for target in targets:
        if os.path.isdir(target):
            found = []
            for root, dirs, names in os.walk(target):
                dirs.sort()
                for n in sorted(names):
                    if n.endswith(".jsonl") and not is_artifact(n):
                        found.append(os.path.join(root, n))
            if not found:
                problems.append((target, "directory holds no *.jsonl session files"))
            for p in found:
                add(p)
        elif os.path.exists(target):
            add(target)
        elif any(ch in target for ch in "*?["):
            matches = sorted(p for p in glob.glob(target, recursive=True) if os.path.isfile(p) and not is_artifact(p))
            if not matches:
                problems.append((target, "glob matched no files"))
            for p in matches:
                add(p)
        else:
            problems.append((target, "no such file or directory"))
    return files, problems


def shard(files: list[str], spec: str | None) -> list[str]:
    """``I/N``: the I-th of N deterministic slices (1-based), by sorted absolute path."""
    if not spec:
        return files
    i, n = (int(x) for x in spec.split("/", 1))
    ordered = sorted(files, key=os.path.abspath)
    return [f for k, f in enumerate(ordered) if k % n == i - 1]
