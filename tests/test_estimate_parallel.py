"""estimate reads the same index whether one process scans the file or several do; a window
the file records is found from the index (the parsed objects are released)."""

import orjson

from ctxtool import parallel
from ctxtool.estimate import estimate_file
from ctxtool.synth import write_session


def _strip(d):
    return {k: v for k, v in d.items() if k not in ("seconds",)}


def test_estimate_parallel_equals_serial(tmp_path, monkeypatch):
    path = tmp_path / "s.jsonl"
    write_session(path, "pi", seed=4, turns=60, compactions=1)
    monkeypatch.setenv(parallel.ENV, "1")
    serial = estimate_file(str(path))
    monkeypatch.setenv(parallel.ENV, "2")
    monkeypatch.setattr(parallel, "MIN_BYTES", 1)
    parts = []
    real = parallel.scan
    monkeypatch.setattr(parallel, "scan", lambda t, *a, **k: parts.append(t) or real(t, *a, **k))
    par = estimate_file(str(path))
    assert len(parts) == 1 and parts[0].parts == 2  # the helper-process scan was used
    assert _strip(par) == _strip(serial)
    assert serial["tokens"] > 0


def test_recorded_context_window_is_read_from_the_index(tmp_path, monkeypatch):
    path = tmp_path / "s.jsonl"
    write_session(path, "pi", seed=4, turns=6)
    rows = [orjson.loads(x) for x in open(path, "rb")]
    rows.insert(2, {"type": "custom", "id": "c0ffee00", "parentId": rows[1]["id"], "timestamp": rows[1]["timestamp"],
                    "customType": "model-snapshot", "data": {"modelId": "my-model", "contextWindow": 131072}})
    rows[3]["parentId"] = "c0ffee00"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    for workers in ("1", "2"):
        monkeypatch.setenv(parallel.ENV, workers)
        monkeypatch.setattr(parallel, "MIN_BYTES", 1)
        r = estimate_file(str(path))
        assert r["window"] == 131072, r["window_source"]
        assert "line 3" in r["window_source"]
