"""Property tests: over generated sessions with random corruptions, repair is idempotent,
leaves an API-valid view, loses no line silently and never touches a clean file."""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtool import synth
from ctxtool.repair import repair_file
from ctxtool.validate import errors

FORMATS = ["pi", "pi-v1", "claude", "messages"]
FMT_NAME = {"pi": "pi", "pi-v1": "pi", "claude": "claude", "messages": "messages"}


@st.composite
def corrupted_session(draw):
    fmt = draw(st.sampled_from(FORMATS))
    allowed = sorted(k for k, fmts in synth.CORRUPTIONS.items() if fmt in fmts)
    kinds = draw(st.lists(st.sampled_from(allowed), min_size=1, max_size=5, unique=True))
    if "missing_header" in kinds and "invalid_header" in kinds:
        kinds.remove("invalid_header")
    seed = draw(st.integers(0, 10_000))
    turns = draw(st.integers(6, 14))
    return fmt, kinds, seed, turns


SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@SETTINGS
@given(case=corrupted_session())
def test_repair_makes_valid_idempotent_and_loses_nothing_silently(tmp_path_factory, case):
    fmt, kinds, seed, turns = case
    d = tmp_path_factory.mktemp("prop")
    path = str(d / "s.jsonl")
    synth.write_session(path, fmt, seed=seed, turns=turns, corruptions=kinds)
    original = open(path, "rb").read().replace(b"\r\n", b"\n").split(b"\n")
    first = repair_file(path, backup=False)
    assert first.format == FMT_NAME[fmt]
    assert errors(first.after) == [], (kinds, first.after)
    second = repair_file(path, check=True)
    assert second.changes == [], (kinds, second.changes)
    assert errors(second.before) == []
    out = set(open(path, "rb").read().replace(b"\r\n", b"\n").split(b"\n"))
    listed = {c.line for c in first.changes if c.line}
    for no, raw in enumerate(original, 1):
        raw = raw.removeprefix(b"\xef\xbb\xbf")
        if raw and raw not in out:
            assert no in listed, f"line {no} disappeared or changed without a report ({kinds})"


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(FORMATS), seed=st.integers(0, 10_000), compactions=st.integers(0, 2))
def test_clean_generated_sessions_are_left_alone(tmp_path_factory, fmt, seed, compactions):
    d = tmp_path_factory.mktemp("clean")
    path = str(d / "s.jsonl")
    synth.write_session(path, fmt, seed=seed, turns=12, compactions=compactions if fmt != "messages" else 0)
    report = repair_file(path, check=True)
    # Generated sessions reuse call ids across turns (exec_0 style, as some providers do).
    # That is no corruption of the file, but Anthropic rejects duplicate tool_use ids in one
    # request: the only thing repair may do to a clean file is rename those, call and result
    # together; it never drops them (OpenClaw #109443).
    assert {v.kind for v in errors(report.before)} <= {"duplicate-tool-use-id"}, report.before
    assert {c.kind for c in report.changes} <= {"reused-id"}, report.changes
    assert all(c.action == "rewritten" for c in report.changes)
    assert sorted(os.listdir(d)) == ["s.jsonl"]
    if report.changes:
        repair_file(path, backup=False)
        assert errors(repair_file(path, check=True).before) == []
