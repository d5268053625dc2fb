"""Benchmark ``ctxtool estimate`` (issue 3).

    python tests/bench/bench_estimate.py --size-mb 500 --out bench-out/estimate.json

1. Generates (or reuses) a pi session of at least --size-mb with ``ctxtool.synth.write_session``.
2. Times a bare loop that only parses each line with orjson, and the heuristic estimate
   (``estimate_file``), alternating, --repeat times each, every run in its own subprocess
   so that each one's peak RSS (VmHWM) is its own. Target: heuristic <= 2x bare, peak < 150 MB.
3. tiktoken mode on a --tiktoken-mb session: ``estimate_file(tokenizer="tiktoken")`` against raw
   ``encode_ordinary_batch`` (num_threads=2, same batch size) over exactly the texts it counts.
   Target: >= 90% (issue 13) of the raw throughput.
Prints the figures and writes them as JSON. The generated files are deleted unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def peak_rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, path: str) -> None:
    import orjson

    if mode == "bare":
        t0 = time.perf_counter()
        n = 0
        with open(path, "rb") as f:
            for line in f:
                orjson.loads(line)
                n += 1
        dt = time.perf_counter() - t0
        out = {"seconds": dt, "lines": n}
    elif mode == "heuristic":
        from ctxtool.estimate import Options, estimate_file

        t0 = time.perf_counter()
        r = estimate_file(path, Options())
        dt = time.perf_counter() - t0
        out = {"seconds": dt, "tokens": r["tokens"], "entries": r["entries"]}
    elif mode == "tiktoken":
        out = tiktoken_child(path)
    else:
        raise SystemExit(f"unknown mode {mode}")
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out))


def tiktoken_child(path: str) -> dict:
    from ctxtool import tokenizers
    from ctxtool.estimate import BATCH_CHARS, Options, context_entries, entry_pieces, estimate_file, read_index, tool_names, view_of

    enc = tokenizers.get_encoding("cl100k_base")  # built before timing in both cases
    t0 = time.perf_counter()
    r = estimate_file(path, Options(tokenizer="tiktoken", top=0))
    mode_s = time.perf_counter() - t0
    # the same texts, collected untimed, then encoded raw in batches of the same size
    ix = read_index(path)
    t = ix.t
    vis = [e for m in view_of(context_entries(t.format_name, t.entries)) for e in m.entries]
    names = tool_names(t.entries)
    batches, cur, size, chars = [], [], 0, 0
    with open(path, "rb") as f:
        for e in sorted(vis, key=lambda e: e.offset):
            for _, _, text, _ in entry_pieces(t.reload(e, f), names):
                cur.append(text)
                size += len(text)
                chars += len(text)
            if size >= BATCH_CHARS:
                batches.append(cur)
                cur, size = [], 0
    if cur:
        batches.append(cur)
    t0 = time.perf_counter()
    raw_tokens = 0
    for b in batches:
        raw_tokens += sum(len(x) for x in enc.encode_ordinary_batch(b, num_threads=2))
    raw_s = time.perf_counter() - t0
    return {"seconds": mode_s, "raw_seconds": raw_s, "chars": chars, "tokens": r["tokens"], "raw_text_tokens": raw_tokens,
            "mode_chars_per_s": chars / mode_s, "raw_chars_per_s": chars / raw_s, "throughput_ratio": raw_s / mode_s}


def run_child(mode: str, path: str) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode, path], capture_output=True, text=True,
                         env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"child {mode} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def ensure(path: str, mb: float, seed: int) -> tuple[bool, dict]:
    target = int(mb * 1_000_000)
    if os.path.exists(path) and os.path.getsize(path) >= target:
        return False, {"bytes": os.path.getsize(path), "reused": True}
    from ctxtool.synth import write_session

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    t0 = time.perf_counter()
    st = write_session(path, "pi", target_bytes=target, seed=seed)
    return True, {"bytes": st["bytes"], "lines": st["lines"], "generate_seconds": round(time.perf_counter() - t0, 2), "reused": False}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=500)
    ap.add_argument("--tiktoken-mb", type=float, default=100, help="size of the session for the tiktoken comparison")
    ap.add_argument("--file", default=None, help="session to use/generate [bench-out/estimate-<size>mb.jsonl]")
    ap.add_argument("--out", default="bench-out/estimate.json")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the generated sessions")
    ap.add_argument("--skip-tiktoken", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return
    out_dir = os.path.dirname(os.path.abspath(a.out))
    os.makedirs(out_dir, exist_ok=True)
    big = a.file or os.path.join(out_dir, f"estimate-{int(a.size_mb)}mb.jsonl")
    made, info = ensure(big, a.size_mb, 1)
    res: dict = {"file": big, "file_info": info, "runs": []}
    print(f"session: {big} ({info['bytes'] / 1e6:.1f} MB{', reused' if info.get('reused') else ''})", flush=True)
    bare, heur = [], []
    try:
        for i in range(a.repeat):
            b = run_child("bare", big)
            h = run_child("heuristic", big)
            bare.append(b)
            heur.append(h)
            res["runs"].append({"bare": b, "heuristic": h})
            print(f"  run {i + 1}: bare {b['seconds']:.2f}s ({b['peak_rss_mb']:.0f} MB)   heuristic {h['seconds']:.2f}s "
                  f"({h['peak_rss_mb']:.0f} MB)  ratio {h['seconds'] / b['seconds']:.2f}", flush=True)
        bmin = min(x["seconds"] for x in bare)
        hmin = min(x["seconds"] for x in heur)
        hpeak = max(x["peak_rss_mb"] for x in heur)
        ratios = sorted(h["seconds"] / b["seconds"] for b, h in zip(bare, heur))
        res["heuristic"] = {
            "bare_seconds_min": bmin, "heuristic_seconds_min": hmin, "ratio_of_minimums": hmin / bmin,
            "ratio_median_paired": ratios[len(ratios) // 2], "peak_rss_mb": hpeak,
            "bare_peak_rss_mb": max(x["peak_rss_mb"] for x in bare),
            "mb_per_s": info["bytes"] / 1e6 / hmin,
            "target_ratio_ok": hmin / bmin <= 2.0, "target_rss_ok": hpeak < 150,
        }
        print(f"heuristic: {hmin:.2f}s vs bare orjson loop {bmin:.2f}s = {hmin / bmin:.2f}x (target <= 2x); "
              f"peak RSS {hpeak:.0f} MB (target < 150 MB)", flush=True)
    finally:
        if made and not a.keep:
            os.unlink(big)
    if not a.skip_tiktoken:
        small = os.path.join(out_dir, f"estimate-tiktoken-{int(a.tiktoken_mb)}mb.jsonl")
        made2, info2 = ensure(small, a.tiktoken_mb, 2)
        try:
            tk = run_child("tiktoken", small)
        finally:
            if made2 and not a.keep:
                os.unlink(small)
        tk["file_bytes"] = info2["bytes"]
        tk["target_ok"] = tk["throughput_ratio"] >= 0.9
        res["tiktoken"] = tk
        print(f"tiktoken ({info2['bytes'] / 1e6:.0f} MB session, cl100k_base, 2 threads): estimate {tk['seconds']:.1f}s, "
              f"raw encode_ordinary_batch on the same {tk['chars'] / 1e6:.1f}M chars {tk['raw_seconds']:.1f}s: "
              f"{tk['throughput_ratio'] * 100:.0f}% of raw throughput (target >= 90%)", flush=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=2)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
