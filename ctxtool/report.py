"""Merge the ``compact --json`` reports of several shards (``--shard I/N``) into one summary.

Plain data in, plain data out: ``read_report(path)`` loads and checks one report, ``merge``
combines them (files by status, skip reasons, failures, fallbacks, tokens, batches) and says
what is wrong with the set: shards missing from an ``I/N`` series or given twice, shards of
different splits, a file reported by two shards (counted once, by its most advanced status,
whatever the order of the reports), a shard whose whole command failed.
"""

from __future__ import annotations

import os
import re
from collections import Counter

import orjson

from .errors import InputError
from .formats.common import brief
from .paths import NOT_REGULAR, regular

STATUSES = ("compacted", "fallback", "skipped", "planned", "pending", "failed")
OK = ("compacted", "skipped", "planned")
_RANK = {s: k for k, s in enumerate(("compacted", "fallback", "skipped", "planned", "pending", "failed"))}


def read_report(path: str) -> dict:
    """One ``compact --json`` output (or the error object a failed command prints), its fields of the
    types ``compact`` writes (else one error naming the file and the field)."""
    if os.path.exists(path) and not regular(path):  # a FIFO with no writer would block the read forever
        raise InputError(NOT_REGULAR, path=path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", path=path) from None
    if not data.strip():
        raise InputError("empty file (the compact run printed nothing: did it run with --json?)", path=path)
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        line = data[: getattr(e, "pos", 0) or 0].count(b"\n") + 1
        raise InputError(f"not JSON ({str(e).split(':')[0]}): is it the output of `ctxtool compact --json`?", path=path,
                         line=line) from None
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict) and "files" not in obj:
        if not isinstance(obj["error"].get("message"), (str, type(None))):
            raise InputError('not a `ctxtool compact --json` report ("error.message" is no text)', path=path)
        return obj
    if not isinstance(obj, dict) or not isinstance(obj.get("files"), list) or not all(
            isinstance(f, dict) and isinstance(f.get("path"), str) for f in obj["files"]):
        raise InputError('not a `ctxtool compact --json` report (no "files" list of file results)', path=path)
    why = _mistyped(obj)
    if why is not None:
        raise InputError(f"not a `ctxtool compact --json` report ({why})", path=path)
    return obj


MAX_SHARDS = 100_000  # far more runners than any CI matrix has; a larger N is no report compact wrote
_NUMBER = (int, float)


def _count(v) -> bool:
    return v is None or (type(v) in _NUMBER and v == v and abs(v) < 1e18)


def _mistyped(rep: dict) -> str | None:
    """The first field of a report that is not of the type ``compact --json`` writes, or None."""
    shard = rep.get("shard")
    if shard is not None and _spec(shard) is None:
        return f'"shard" is {_brief(shard)}, not I/N with 1 <= I <= N <= {MAX_SHARDS:,}'
    if not _count(rep.get("seconds")):
        return f'"seconds" is {_brief(rep.get("seconds"))}, not a number'
    fails = rep.get("failures")
    if fails is not None and not (isinstance(fails, list) and all(isinstance(x, dict) for x in fails)):
        return '"failures" is not a list of objects'
    b = rep.get("batch")
    if b is not None:
        if not isinstance(b, dict) or not isinstance(b.get("batches") or [], list) \
                or not _count(b.get("requests_submitted")) or not _count(b.get("requests_reused")):
            return '"batch" is not the batch summary compact writes'
    for k, f in enumerate(rep["files"]):
        for key in ("tokens_before", "tokens_after", "calls"):
            if not _count(f.get(key)):
                return f'files[{k}].{key} is {_brief(f.get(key))}, not a number'
        for key in ("status", "reason", "error", "fallback"):
            if f.get(key) is not None and not isinstance(f[key], str):
                return f'files[{k}].{key} is {_brief(f[key])}, not text'
        if f.get("status") is not None and f["status"] not in STATUSES:
            return f'files[{k}].status is {_brief(f["status"])}, not one of {", ".join(STATUSES)}'
    return None


def _brief(v) -> str:
    return brief(v) if not isinstance(v, str) else repr(v[:40])


def skip_kind(reason: str | None) -> str:
    """The kind of a skip reason, for grouping (the reasons themselves carry per-file figures)."""
    if not reason:
        return "(no reason given)"
    if reason.startswith("nothing to summarize"):
        return "nothing to summarize"
    if "not over" in reason and "window" in reason:
        return "not over --if-over"
    if reason.startswith("already compacted"):
        return "already compacted at its leaf"
    return re.sub(r"\d[\d,.]*", "N", reason)[:100]


def _spec(s) -> tuple[int, int] | None:
    m = re.fullmatch(r"(\d{1,7})/(\d{1,7})", s) if isinstance(s, str) else None
    if not m:
        return None
    i, n = int(m.group(1)), int(m.group(2))
    return (i, n) if 1 <= i <= n <= MAX_SHARDS else None


def merge(reports: list[tuple[str, dict]]) -> dict:
    """Combine ``[(source, report)]`` into one summary (see the module docstring)."""
    status: Counter = Counter()
    skips: dict[str, dict] = {}
    failed, fallbacks, pending, shards, notes = [], [], [], [], []
    reported: dict[str, list] = {}  # path -> [(source, file result)]
    failed_targets: dict[tuple, dict] = {}
    duplicates: list[dict] = []
    tokens_before = tokens_after = calls = 0
    batches = submitted = reused = 0
    dry = set()
    for source, rep in reports:
        if "error" in rep and "files" not in rep:
            err = rep["error"]
            shards.append({"source": source, "shard": None, "files": 0, "seconds": None, "error": err.get("message")})
            continue
        files = rep["files"]
        shard = rep.get("shard")
        dry.add(bool(rep.get("dry_run")))
        counts = Counter(f.get("status") or "failed" for f in files)
        shards.append({"source": source, "shard": shard, "files": len(files), "seconds": rep.get("seconds"), "error": None,
                       **{s: counts.get(s, 0) for s in STATUSES},
                       "tokens_before": sum(int(f.get("tokens_before") or 0) for f in files),
                       "tokens_after": sum(int(f.get("tokens_after") or 0) for f in files)})
        for fail in rep.get("failures") or []:  # a target missing in every shard is one failure
            key = (fail.get("path"), fail.get("error"))
            if key in failed_targets:
                failed_targets[key]["sources"].append(source)
            else:
                failed_targets[key] = {"source": source, "sources": [source], "path": key[0], "error": key[1]}
        b = rep.get("batch")
        if isinstance(b, dict):
            batches += len(b.get("batches") or [])
            submitted += int(b.get("requests_submitted") or 0)
            reused += int(b.get("requests_reused") or 0)
        for f in files:
            reported.setdefault(f["path"], []).append((source, f))
    for path, got in reported.items():
        if len(got) > 1:
            duplicates.append({"path": path, "sources": sorted(src for src, _ in got)})
        # a file reported twice counts once, by its most advanced status (then the first source by name),
        # whatever the order of the reports
        source, f = min(got, key=lambda sf: (_RANK.get(sf[1].get("status") or "failed", len(_RANK)), sf[0]))
        st = f.get("status") or "failed"
        status[st] += 1
        tokens_before += int(f.get("tokens_before") or 0)
        tokens_after += int(f.get("tokens_after") or 0)
        calls += int(f.get("calls") or 0)
        if st == "skipped":
            k = skip_kind(f.get("reason"))
            g = skips.setdefault(k, {"reason": k, "files": 0, "example": f.get("reason")})
            g["files"] += 1
        elif st == "failed":
            failed.append({"path": path, "error": f.get("error"), "source": source})
        elif st == "pending":
            pending.append({"path": path, "reason": f.get("reason"), "source": source})
        if st == "fallback" or f.get("fallback") in ("partial", "text"):
            fallbacks.append({"path": path, "level": f.get("fallback") or "text", "status": st,
                              "error": f.get("error") or f.get("reason"), "source": source})
    failures = []
    for fail in failed_targets.values():
        fail["sources"].sort()
        failures.append({**fail, "source": fail["sources"][0]})
    specs = [_spec(s["shard"]) for s in shards if s["shard"]]
    expected = None
    missing, twice = [], []
    if specs:
        ns = sorted({n for _, n in specs})
        if len(ns) > 1:
            notes.append(f"the shards come from different splits ({', '.join(f'/{n}' for n in ns)}): "
                         "each split's missing shards are listed")
        else:
            expected = ns[0]
        have = Counter(specs)
        for n in ns:
            missing += [f"{i}/{n}" for i in range(1, n + 1) if (i, n) not in have]
        twice = [f"{i}/{n}" for (i, n), k in sorted(have.items(), key=lambda x: (x[0][1], x[0][0])) if k > 1]
        if missing:
            more = f" and {len(missing) - 20:,} more" if len(missing) > 20 else ""
            of = f" of {expected}" if expected else ""
            notes.append(f"{len(missing)}{of} shards missing: {', '.join(missing[:20])}{more}")
        if twice:
            notes.append(f"shard(s) given more than once: {', '.join(twice)}")
    if len(specs) < len([s for s in shards if s["error"] is None]) and specs:
        notes.append("some reports were made without --shard")
    if duplicates:
        notes.append(f"{len(duplicates)} file(s) reported by more than one shard (counted once)")
    errors = [s for s in shards if s["error"]]
    if errors:
        notes.append(f"{len(errors)} shard run(s) failed as a whole: " + "; ".join(f"{s['source']}: {s['error']}" for s in errors))
    if len(dry) > 1:
        notes.append("dry-run (-n) and real reports are mixed")
    total = sum(status.values())
    return {
        "shards": shards,
        "expected_shards": expected,
        "missing_shards": missing,
        "repeated_shards": twice,
        "files": total,
        **{s: status.get(s, 0) for s in STATUSES},
        "tokens_before": tokens_before,
        "tokens_after": tokens_after,
        "tokens_saved": tokens_before - tokens_after,
        "calls": calls,
        "seconds": max((s["seconds"] or 0 for s in shards), default=0),
        "skip_reasons": sorted(skips.values(), key=lambda g: (-g["files"], g["reason"])),
        "failed_files": failed,
        "fallback_files": fallbacks,
        "pending_files": pending,
        "failures": failures,
        "duplicates": duplicates,
        "batch": {"batches": batches, "requests_submitted": submitted, "requests_reused": reused} if batches else None,
        "dry_run": (dry.pop() if len(dry) == 1 else "mixed") if dry else None,
        "notes": notes,
        # as compact's exit code: a partial summary is fine, the fallback text is not
        "ok": not (failed or pending or failures or status.get("fallback") or missing or twice or errors or duplicates),
    }
