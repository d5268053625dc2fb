"""compact --batch: the real anthropic SDK's Message Batches API over real HTTP to FakeAnthropic.

Library runs (``batch_compact.run_batch``) and a thinner CLI layer (CliRunner). What is checked:
the same summaries and fallbacks as direct calls, rounds (chunks, then merges), resume after an
interruption without any request sent twice (the server's log), results fetched for ended
batches, a changed file re-planned, expired / errored / canceled requests falling back as a
failed direct call does, files written as their batch ends, and the journal's content.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time

import orjson
import pytest
from click.testing import CliRunner

from ctxtool.batch_compact import BatchOptions, PollPolicy, custom_id, run_batch
from ctxtool.batch_state import BatchState, default_path, run_key
from ctxtool.cli import cli
from ctxtool.compact_writer import Options, compact_file
from ctxtool.errors import BatchStateError
from ctxtool.summarize import AnthropicSummarizer, Settings, SummarizerError
from ctxtool.transcript import scan
from tests.support.fake_anthropic import BATCH_PATH, BATCHES_PATH, MESSAGES_PATH, FakeAnthropic
from tests.test_compact_support import api_errors, make_session, pi_lines, turns, write_jsonl
from tests.test_summarize import KEY, summarizer

KEEP = 800
WINDOW = 50_000  # the big session (~19K tokens to summarize) is split into two parts of one chunk each, then merged


def reply(params) -> str:
    """A summary that names its prompt, so a wrong answer-to-prompt mapping shows."""
    prompt = params["messages"][0]["content"]
    return "## Goal\n- summary " + hashlib.sha256(prompt.encode()).hexdigest()[:12]


@pytest.fixture
def srv():
    with FakeAnthropic(reply=reply, batch_latency=0.05) as s:
        yield s


def opts(**kw) -> Options:
    kw.setdefault("keep_recent_tokens", KEEP)
    kw.setdefault("window", WINDOW)
    kw.setdefault("backup", False)
    return Options(**kw)


def bopts(tmp_path, **kw) -> BatchOptions:
    kw.setdefault("poll", PollPolicy(first=0.01))
    return BatchOptions(state_path=str(tmp_path / "state.jsonl"), key=run_key({"test": 1}), **kw)


def sessions(tmp_path, name="s") -> list[str]:
    d = tmp_path / name
    d.mkdir()
    files = [make_session(d, "pi", 8, name="a-pi.jsonl"), make_session(d, "claude", 8, name="b-claude.jsonl"),
             make_session(d, "messages", 8, name="c-messages.jsonl"),
             make_session(d, "pi", 16, size=2000, name="d-big-pi.jsonl")]
    return files


def copy_of(files, tmp_path, name) -> list[str]:
    d = tmp_path / name
    d.mkdir()
    out = []
    for f in files:
        shutil.copy(f, d / os.path.basename(f))
        out.append(str(d / os.path.basename(f)))
    return out


def creates(srv) -> list:
    return [r for r in srv.requests.for_path(BATCHES_PATH) if r.method == "POST"]


def prompt(req: dict) -> str:
    return req["params"]["messages"][0]["content"]


def results_fetched(srv) -> list[str]:
    return [r.path.split("/")[-2] for r in srv.requests if r.path.endswith("/results")]


def compactions(path) -> int:
    """Compaction records in ``path`` (a Messages JSONL file holds at most its leading summary)."""
    t = scan(path, keep=True)
    if t.format_name == "messages":
        return int("being continued from a previous conversation" in json.dumps(t.entries[0].obj))
    return sum(1 for e in t.entries if e.kind in ("compaction", "boundary"))


# ---------------------------------------------------------------- a whole run


def test_batch_run_writes_the_same_summaries_as_direct_calls_in_two_rounds(srv, tmp_path):
    files = sessions(tmp_path)
    direct = copy_of(files, tmp_path, "direct")
    want = [compact_file(p, summarizer(srv), opts()) for p in direct]
    assert all(r.status == "compacted" for r in want)
    distinct = {json.dumps(r.body, sort_keys=True) for r in srv.requests.for_path(MESSAGES_PATH)}
    srv.requests.clear()

    res, rep = run_batch(files, summarizer(srv), opts(), bopts(tmp_path))
    assert [r.status for r in res] == ["compacted"] * 4
    assert [r.summary for r in res] == [r.summary for r in want]  # each answer went to its own prompt
    assert [r.calls for r in res] == [r.calls for r in want]
    assert not srv.requests.for_path(MESSAGES_PATH)  # nothing through the direct Messages API
    # two rounds: chunks and turn prefixes first, then the merge of the big session's parts
    reqs = [body["requests"] for body in (r.body for r in creates(srv))]
    assert len(reqs) == 2
    assert not any("Merge these partial summaries" in prompt(q) for q in reqs[0])
    assert reqs[1] and all("Merge these partial summaries" in prompt(q) for q in reqs[1])
    ids = srv.submitted_custom_ids()
    # one request per distinct prompt: the three small sessions hold the same conversation, so share one
    assert len(ids) == len(set(ids)) == len(distinct) == 4 < sum(r.calls for r in want)
    assert rep.submitted == len(ids) and rep.reused == 0 and rep.state_removed
    assert not os.path.exists(tmp_path / "state.jsonl")
    assert rep.files[files[3]]["requests"] == res[3].calls and len(rep.files[files[3]]["batches"]) == 2
    for p in files:
        assert api_errors(p) == []


def test_identical_prompts_are_one_request(srv, tmp_path):
    d = tmp_path / "same"
    d.mkdir()
    a = make_session(d, "messages", 8, name="a.jsonl")
    b = str(d / "b.jsonl")
    shutil.copy(a, b)
    res, _ = run_batch([a, b], summarizer(srv), opts(), bopts(tmp_path))
    assert [r.status for r in res] == ["compacted", "compacted"] and res[0].summary == res[1].summary
    assert len(srv.submitted_custom_ids()) == res[0].calls  # shared, not sent twice


# ---------------------------------------------------------------- resume


def test_resume_after_an_interruption_sends_nothing_twice(srv, tmp_path):
    srv.batch_latency = 0.15
    files = sessions(tmp_path)
    written = {}

    def stop_after_first(r):
        written[r.path] = open(r.path, "rb").read()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_batch(files, summarizer(srv), opts(), bopts(tmp_path, batch_size=2), on_result=stop_after_first)
    first_ids = srv.submitted_custom_ids()
    assert first_ids and len(written) == 1
    state = tmp_path / "state.jsonl"
    assert state.exists()

    res, rep = run_batch(files, summarizer(srv), opts(), bopts(tmp_path, batch_size=2))
    ids = srv.submitted_custom_ids()
    assert len(ids) == len(set(ids))  # no request submitted twice, across both runs
    assert set(first_ids) <= set(ids) and rep.reused >= 1
    assert [r.status for r in res] == ["compacted"] * 4
    (done,) = written
    assert open(done, "rb").read() == written[done]  # the file written before the interruption is not redone
    assert rep.files[done]["resumed"] and rep.resumed and rep.state_removed and not state.exists()
    for p in files:
        assert compactions(p) == 1


def test_submit_now_collect_later_fetches_results_without_resubmitting(srv, tmp_path):
    files = sessions(tmp_path)
    res, rep = run_batch(files, summarizer(srv), opts(), bopts(tmp_path, wait=0))
    assert {r.status for r in res} == {"pending"} and not rep.state_removed
    assert all("re-run the same command" in r.reason for r in res)
    assert all(open(p, "rb").read().count(b"\n") == scan(p).lines for p in files)  # nothing written yet
    first = [b.id for b in srv.batches.values()]
    time.sleep(0.1)  # the batch ends meanwhile
    srv.requests.clear()

    res, rep = run_batch(files, summarizer(srv), opts(), bopts(tmp_path))
    assert [r.status for r in res] == ["compacted"] * 4
    # the first round's results are fetched, only the merge round is new
    assert results_fetched(srv)[0] == first[0]
    (merge,) = [r.body["requests"] for r in creates(srv)]
    assert all("Merge these partial summaries" in prompt(q) for q in merge)
    assert rep.resumed and rep.reused == len(srv.batches[first[0]].requests)


def test_a_file_changed_since_submission_is_replanned(srv, tmp_path):
    files = sessions(tmp_path)[:3]
    run_batch(files, summarizer(srv), opts(), bopts(tmp_path, wait=0))
    before = list(srv.submitted_custom_ids())
    t = scan(files[0])
    with open(files[0], "a") as f:  # the agent went on: the cut point moves, the prompt changes
        f.writelines(json.dumps(x) + "\n" for x in pi_lines(turns(3, tag="more"), header=False, start=500, parent=t.entries[-1].id))
    res, rep = run_batch(files, summarizer(srv), opts(), bopts(tmp_path))
    assert [r.status for r in res] == ["compacted"] * 3
    note = rep.files[files[0]]["replanned"]
    assert note and "changed since its requests were made" in note and "re-planned" in note
    assert rep.files[files[1]]["replanned"] is None
    new = srv.submitted_custom_ids()[len(before):]
    assert new and len(set(new) & set(before)) == 0  # only the changed file asked again
    assert compactions(files[0]) == 1 and api_errors(files[0]) == []


def test_crash_after_the_api_accepted_a_batch_adopts_it(srv, tmp_path):
    files = sessions(tmp_path)[:3]

    class CrashAfterCreate(AnthropicSummarizer):
        def batch_create(self, requests):
            super().batch_create(requests)
            raise KeyboardInterrupt  # killed before the batch id reached the journal

    with pytest.raises(KeyboardInterrupt):
        run_batch(files, CrashAfterCreate("claude-test", api_key=KEY, base_url=srv.base_url), opts(), bopts(tmp_path))
    (orphan,) = srv.batches
    events = [json.loads(x) for x in open(tmp_path / "state.jsonl")]
    assert [e["ev"] for e in events][-1] == "submitting"
    res, rep = run_batch(files, summarizer(srv), opts(), bopts(tmp_path))
    assert [r.status for r in res] == ["compacted"] * 3
    assert list(srv.batches) == [orphan]  # adopted, not submitted again
    assert any("using batch " + orphan in n for n in rep.notes)


def test_a_create_that_never_arrived_is_sent_again(srv, tmp_path):
    files = sessions(tmp_path)[:2]

    class CrashBeforeCreate(AnthropicSummarizer):
        def batch_create(self, requests):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_batch(files, CrashBeforeCreate("claude-test", api_key=KEY, base_url=srv.base_url), opts(), bopts(tmp_path))
    res, rep = run_batch(files, summarizer(srv), opts(), bopts(tmp_path))
    assert [r.status for r in res] == ["compacted"] * 2 and len(srv.batches) == 1
    assert any("never reached the API" in n for n in rep.notes)


def test_a_create_that_timed_out_is_found_not_duplicated(srv, tmp_path):
    files = sessions(tmp_path)[:2]
    srv.script_for(BATCHES_PATH, [("timeout", 1.0)])  # created, but the answer comes after the client gave up
    res, rep = run_batch(files, summarizer(srv, timeout=0.3), opts(), bopts(tmp_path))
    assert [r.status for r in res] == ["compacted"] * 2
    assert len(srv.batches) == 1 and len(creates(srv)) == 1
    assert any("may or may not have received" in n for n in rep.notes)


# ---------------------------------------------------------------- failures fall back as direct calls do


@pytest.mark.parametrize("outcome, words", [(("errored", 400), "request errored: invalid_request_error"),
                                            ("expired", "request expired"), ("canceled", "request canceled")])
def test_failed_requests_fall_back_as_a_failed_direct_call(srv, tmp_path, outcome, words):
    p = make_session(tmp_path, "claude", 8)
    direct = copy_of([p], tmp_path, "direct")[0]
    srv.script = [400]  # the direct call fails the same way (not retried)
    want = compact_file(direct, summarizer(srv), opts(window=None))
    assert want.status == "fallback"
    srv.batch_outcome = lambda req: outcome
    (r,), _ = run_batch([p], summarizer(srv), opts(window=None), bopts(tmp_path))
    assert r.status == "fallback" and r.fallback == "text" and words in r.error
    assert r.summary == want.summary  # OpenClaw's fixed text plus the extractive summary, as a direct run writes
    assert "Summary unavailable due to size limits." in r.summary and "## Goal" in r.summary


def test_whole_batch_expiry_and_on_error_skip(srv, tmp_path):
    srv.batch_latency, srv.batch_expiry = 1.0, 0.05
    files = sessions(tmp_path)[:2]
    before = [open(p, "rb").read() for p in files]
    res, rep = run_batch(files, summarizer(srv), opts(on_error="skip"), bopts(tmp_path))
    assert [r.status for r in res] == ["failed", "failed"]
    assert all("request expired" in r.error and "file left unchanged" in r.error for r in res)
    assert [open(p, "rb").read() for p in files] == before
    assert not rep.state_removed  # failed files are retried by the next run (the answers are refetched, not re-requested)


def test_an_oversized_message_is_retried_without_it_in_a_later_round(srv, tmp_path):
    items = turns(8, size=200)
    items[2]["text"] = "huge " * 8000
    p = write_jsonl(tmp_path / "o.jsonl", pi_lines(items))
    direct = copy_of([p], tmp_path, "direct")[0]
    o = opts(window=20_000, keep_recent_tokens=500, settings=Settings(parts=1))

    def fail_huge(body):
        if "huge huge" in body["messages"][0]["content"]:
            raise RuntimeError("too big")  # the fake answers 500: retried, then given up
        return reply(body)

    srv.reply = fail_huge
    want = compact_file(direct, summarizer(srv, attempts=1), o)
    assert want.status == "compacted" and want.fallback == "partial"
    srv.reply = reply
    srv.batch_outcome = lambda req: ("errored", 400) if "huge huge" in prompt(req) else None
    (r,), _ = run_batch([p], summarizer(srv), o, bopts(tmp_path))
    assert r.status == "compacted" and r.fallback == "partial" and r.summary == want.summary
    assert "[Large toolResult (~10K tokens) omitted from summary]" in r.summary
    last = max(srv.batches.values(), key=lambda b: b.created)
    assert not any("huge huge" in prompt(q) for q in last.requests)  # the retry, without the oversized message


def test_submission_refused_falls_back(srv, tmp_path):
    srv.script_for(BATCHES_PATH, [400])
    files = sessions(tmp_path)[:1]
    (r,), rep = run_batch(files, summarizer(srv), opts(), bopts(tmp_path))
    assert r.status == "fallback" and "batch submission failed" in r.error and "HTTP 400" in r.error
    assert KEY not in json.dumps(r.to_dict(with_summary=True))


def test_a_refused_file_costs_no_request_and_does_not_keep_the_state(srv, tmp_path):
    files = sessions(tmp_path)[:2]
    with open(files[1], "a") as f:
        f.write("{not json\n")
    res, rep = run_batch(files, summarizer(srv), opts(), bopts(tmp_path))
    assert [r.status for r in res] == ["compacted", "failed"] and "unparseable line" in res[1].error
    assert len(srv.submitted_custom_ids()) == res[0].calls  # only the healthy file's requests were sent
    assert rep.state_removed  # nothing a later run could collect: the next run starts afresh


def test_unreachable_batch_leaves_files_pending_and_state_kept(srv, tmp_path):
    srv.script_for(BATCH_PATH, [404] * 3)
    files = sessions(tmp_path)[:1]
    (r,), rep = run_batch(files, summarizer(srv, attempts=1), opts(), bopts(tmp_path))
    assert r.status == "pending" and "could not get the status" in r.reason and not rep.state_removed
    (r,), rep = run_batch(files, summarizer(srv), opts(), bopts(tmp_path))  # the API is back: collected
    assert r.status == "compacted" and len(srv.batches) == 1


# ---------------------------------------------------------------- as results arrive


def test_files_are_written_as_their_batch_ends(srv, tmp_path):
    srv.batch_latency, srv.batch_concurrency = 0.5, 1  # one batch at a time: they end 0.5 s apart
    d = tmp_path / "m"
    d.mkdir()
    files = [make_session(d, "messages", 8, name=f"m{i}.jsonl") for i in range(3)]
    for i, p in enumerate(files):  # distinct prompts
        lines = open(p).read().replace("Request t", f"Request f{i}t")
        open(p, "w").write(lines)
    at = {}
    res, rep = run_batch(files, summarizer(srv), opts(window=None), bopts(tmp_path, batch_size=2),
                         on_result=lambda r: at.setdefault(r.path, time.monotonic()))
    assert [r.status for r in res] == ["compacted"] * 3 and len(srv.batches) >= 2
    last = max(srv.batches.values(), key=lambda b: b.ends)
    first_done = min(at.values())
    assert first_done < last.ends  # written while a later batch was still processing


# ---------------------------------------------------------------- the journal


def test_state_file_content(srv, tmp_path):
    files = sessions(tmp_path)[:2]
    run_batch(files, summarizer(srv), opts(), bopts(tmp_path, wait=0))
    events = [json.loads(x) for x in open(tmp_path / "state.jsonl")]
    assert events[0]["ev"] == "run" and events[0]["key"] == run_key({"test": 1}) and events[0]["v"] == 1
    kinds = [e["ev"] for e in events]
    assert kinds.index("submitting") < kinds.index("submitted")
    sub = next(e for e in events if e["ev"] == "submitting")
    done = next(e for e in events if e["ev"] == "submitted")
    assert done["batch"] in srv.batches and done["n"] == sub["n"]
    assert sub["ids"] == srv.submitted_custom_ids()
    assert set(sub["files"]) == set(sub["ids"]) and {p for ps in sub["files"].values() for p in ps} == set(files)
    plans = {e["path"]: e for e in events if e["ev"] == "plan"}
    assert set(plans) == set(files)
    st = os.stat(files[0])
    assert plans[files[0]]["stamp"] == [st.st_size, st.st_mtime_ns, st.st_ino]
    assert set(plans[files[0]]["needs"]) <= set(sub["ids"])
    for cid in sub["ids"]:
        assert len(cid) <= 64 and cid.replace("_", "").replace("-", "").isalnum()


def test_state_torn_tail_ignored_other_damage_refused(tmp_path):
    path = str(tmp_path / "s.jsonl")
    st = BatchState.open(path, "k1")
    sub = st.submitting(["c1", "c2"], {"c1": ["a"], "c2": ["b"]})
    st.submitted(sub, "msgbatch_1")
    st.close()
    with open(path, "ab") as f:
        f.write(b'{"ev":"done","path":"a","sta')  # a crash in the middle of an append
    st = BatchState.open(path, "k1")
    assert st.resumed and st.by_id["c1"].batch == "msgbatch_1" and "a" not in st.done
    st.file_done("a", "compacted", [1, 2, 3], {})
    st.close()
    st = BatchState.open(path, "k1")  # the torn line was cut off: the next event reads back
    assert st.done["a"]["status"] == "compacted"
    with pytest.raises(BatchStateError, match="in use by another"):
        BatchState.open(path, "k1")
    st.close()
    with pytest.raises(BatchStateError, match="belongs to another run"):
        BatchState.open(path, "k2")
    lines = open(path, "rb").read().split(b"\n")
    lines[1] = b"{broken"
    open(path, "wb").write(b"\n".join(lines))
    with pytest.raises(BatchStateError) as e:
        BatchState.open(path, "k1")
    assert e.value.path == path and e.value.line == 2
    other = tmp_path / "session.jsonl"
    other.write_text('{"role":"user","content":"hi"}')
    with pytest.raises(BatchStateError, match="refusing to overwrite"):
        BatchState.open(str(other), "k1")
    assert other.read_text() == '{"role":"user","content":"hi"}'


def test_poll_policy_doubles_with_a_cap_and_a_share_of_the_age():
    p = PollPolicy(first=1.0, cap=60.0, share=0.1)
    assert p.delay(0, 0) == 1.0
    assert [p.delay(n, 10_000) for n in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert p.delay(6, 50) == 5.0  # a young batch is checked at least every 10% of its age
    assert p.delay(50, 1e9) == 60.0


def test_custom_id_names_the_content():
    a = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    b = dict(reversed(list(a.items())))
    assert custom_id(a) == custom_id(b) and custom_id(a) != custom_id({**a, "max_tokens": 6})


def test_no_anthropic_key_no_client():
    with pytest.raises(SummarizerError):
        AnthropicSummarizer("m", api_key="")


# ---------------------------------------------------------------- CLI


def run(*args, env=None):
    return CliRunner().invoke(cli, ["compact", *args], env=env, catch_exceptions=False)


def test_cli_batch_json_and_state_beside_the_run(srv, tmp_path, monkeypatch):
    files = sessions(tmp_path)
    monkeypatch.chdir(tmp_path)
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": srv.base_url, "CTXTOOL_BATCH_POLL": "0.01"}
    args = ["--summarizer", "anthropic", "--model", "claude-test", "--batch", "--keep-recent-tokens", str(KEEP),
            "--window", str(WINDOW), "--no-backup", "--json", str(tmp_path / "s")]
    r = run(*args, "--batch-wait", "0", env=env)
    assert r.exit_code == 1, r.output  # submitted, still pending
    out = json.loads(r.stdout)
    assert out["totals"]["pending"] == 4 and out["batch"]["requests_submitted"] == len(srv.submitted_custom_ids())
    state = out["batch"]["state"]
    assert os.path.dirname(state) == str(tmp_path) and os.path.basename(state).startswith(".ctxtool-batch-")
    assert os.path.exists(state) and not out["batch"]["state_removed"]
    time.sleep(0.1)
    r = run(*args, env=env)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["totals"]["compacted"] == 4 and out["batch"]["resumed"] and out["batch"]["state_removed"]
    assert sorted(f["path"] for f in out["files"]) == sorted(files)
    assert out["batch"]["requests_reused"] > 0
    assert all(f["batch"]["batches"] for f in out["files"])
    assert not os.path.exists(state)
    ids = srv.submitted_custom_ids()
    assert len(ids) == len(set(ids))
    assert KEY not in r.output


def test_cli_batch_text_output_and_usage_errors(srv, tmp_path):
    p = make_session(tmp_path, "messages", 8)
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": srv.base_url, "CTXTOOL_BATCH_POLL": "0.01"}
    r = run("--summarizer", "anthropic", "--batch", "--keep-recent-tokens", str(KEEP), "--batch-state",
            str(tmp_path / "st.jsonl"), p, env=env)
    assert r.exit_code == 0, r.output
    assert "1 file(s): 1 compacted" in r.stdout and "batch: 1 batch(es), 1 request(s) submitted; state removed" in r.stdout
    r = run("--batch", p)
    assert r.exit_code == 2 and "--batch needs --summarizer anthropic" in r.output
    other = tmp_path / "other.jsonl"
    BatchState.open(str(other), "another-run").close()
    r = run("--summarizer", "anthropic", "--batch", "--batch-state", str(other), p, env=env)
    assert r.exit_code == 3 and "belongs to another run" in r.output and str(other) in r.output


def test_default_state_path_is_named_by_the_run():
    assert default_path("/w", run_key({"a": 1})) != default_path("/w", run_key({"a": 2}))
    assert os.path.basename(default_path("/w", run_key({"a": 1}))).startswith(".ctxtool-batch-")
    assert orjson.dumps({"b": 1, "a": 2}, option=orjson.OPT_SORT_KEYS) and run_key({"b": 1, "a": 2}) == run_key({"a": 2, "b": 1})


@pytest.mark.parametrize("json_", [False, True])
def test_cli_interrupted_batch_says_where_the_state_is(srv, tmp_path, monkeypatch, json_):
    """Ctrl-C: exit 130, the state kept and said; with --json standard output is still one JSON document (it was
    empty)."""
    import ctxtool.cli.compact as cli_compact

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_compact, "run_batch", interrupted)
    p = make_session(tmp_path, "messages", 8)
    state = tmp_path / "st.jsonl"
    r = run("--summarizer", "anthropic", "--batch", "--batch-state", str(state), *(["--json"] if json_ else []), p,
            env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": srv.base_url})
    assert r.exit_code == 130
    if json_:
        err = json.loads(r.stdout)["error"]
        assert err["exit_code"] == 130 and f"the batch state is kept in {state}" in err["message"]
    else:
        assert f"the batch state is kept in {state}; run the same command again to resume" in r.output


# ---------------------------------------------------------------- a kept journal and files that changed since


def test_a_done_file_that_changed_since_is_planned_again_not_replayed(srv, tmp_path):
    d = tmp_path / "n"
    d.mkdir()
    small = make_session(d, "pi", 8, name="a-small.jsonl")  # ~2.3K tokens: under --if-over 0.3 of 50K
    big = make_session(d, "pi", 16, size=2000, name="d-big.jsonl")
    o = opts(if_over=0.3)
    res, rep = run_batch([small, big], summarizer(srv), o, bopts(tmp_path, wait=0))
    assert [r.status for r in res] == ["skipped", "pending"] and not rep.state_removed  # the journal is kept
    assert "not over 0.3" in res[0].reason
    t = scan(small)
    with open(small, "a") as f:  # the agent works on the small session all day: now well over 0.3
        f.writelines(json.dumps(x) + "\n" for x in pi_lines(turns(10, size=8000, tag="day"), header=False, start=500,
                                                             parent=t.entries[-1].id))
    time.sleep(0.1)  # the big file's batch ends meanwhile
    res, rep = run_batch([small, big], summarizer(srv), o, bopts(tmp_path))
    assert [r.status for r in res] == ["compacted", "compacted"]
    assert res[0].tokens_before > 15_000 and compactions(small) == 1 and api_errors(small) == []
    assert not rep.files[small]["resumed"] and "changed since" in rep.files[small]["replanned"]
    assert rep.state_removed


def test_a_done_file_that_did_not_change_keeps_its_result(srv, tmp_path):
    d = tmp_path / "n"
    d.mkdir()
    small = make_session(d, "pi", 8, name="a-small.jsonl")
    big = make_session(d, "pi", 16, size=2000, name="d-big.jsonl")
    o = opts(if_over=0.3)
    first, _ = run_batch([small, big], summarizer(srv), o, bopts(tmp_path, wait=0))
    time.sleep(0.1)
    res, rep = run_batch([small, big], summarizer(srv), o, bopts(tmp_path))
    assert res[0].status == "skipped" and res[0].reason == first[0].reason and rep.files[small]["resumed"]
    assert rep.files[small]["replanned"] is None and res[1].status == "compacted"


@pytest.mark.parametrize("outcome", ["expired", "canceled", ("errored", 500)])
def test_on_error_skip_a_failed_request_is_submitted_again_by_the_next_run(srv, tmp_path, outcome):
    small = write_jsonl(tmp_path / "small.jsonl", pi_lines(turns(8, tag="small")))  # one request
    big = make_session(tmp_path, "pi", 16, size=2000, name="big.jsonl")  # its own requests, all answered
    failing = {"on": True}
    srv.batch_outcome = lambda req: outcome if failing["on"] and "Request small0" in prompt(req) else None
    res, rep = run_batch([small, big], summarizer(srv), opts(on_error="skip"), bopts(tmp_path))
    assert [r.status for r in res] == ["failed", "compacted"] and "file left unchanged" in res[0].error
    assert not rep.state_removed and any("1 request(s) of failed files were answered with an error" in n for n in rep.notes)
    first = srv.submitted_custom_ids()
    (bad,) = [q["custom_id"] for b in srv.batches.values() for q in b.requests if "Request small0" in prompt(q)]

    failing["on"] = False  # the next night
    res, rep = run_batch([small, big], summarizer(srv), opts(on_error="skip"), bopts(tmp_path))
    assert [r.status for r in res] == ["compacted", "compacted"] and compactions(small) == 1 and rep.state_removed
    again = srv.submitted_custom_ids()[len(first):]
    assert again == [bad]  # the failed request sent again, once; nothing else
    assert any("1 request(s) answered with an error by an earlier run" in n and "submitted again" in n for n in rep.notes)


def test_a_failed_request_is_not_sent_again_within_the_run(srv, tmp_path):
    d = tmp_path / "same"
    d.mkdir()
    a = write_jsonl(d / "a.jsonl", pi_lines(turns(8, tag="small")))
    b = str(d / "b.jsonl")
    shutil.copy(a, b)  # the same prompt: one request, needed by both files
    srv.batch_outcome = lambda req: "expired"
    res, rep = run_batch([a, b], summarizer(srv), opts(on_error="skip"), bopts(tmp_path, batch_size=1))
    assert [r.status for r in res] == ["failed", "failed"]
    ids = srv.submitted_custom_ids()
    assert len(ids) == 1 and len(srv.batches) == 1


def test_an_adopted_batch_that_holds_every_request_stops_the_wait_for_other_candidates(srv, tmp_path):
    d = tmp_path / "others"
    d.mkdir()
    srv.batch_latency = 8.0  # other runs' batches of the same size, created in the same minutes, end late
    for i in range(2):
        other = write_jsonl(d / f"o{i}.jsonl", pi_lines(turns(8, tag=f"other{i}")))
        run_batch([other], summarizer(srv), opts(), BatchOptions(state_path=str(d / f"st{i}.jsonl"), key="other",
                                                                 poll=PollPolicy(first=0.01), wait=0))
    foreign = set(srv.batches)
    srv.batch_latency = 0.05
    p = write_jsonl(tmp_path / "mine.jsonl", pi_lines(turns(8, tag="mine")))

    class CrashAfterCreate(AnthropicSummarizer):
        def batch_create(self, requests):
            super().batch_create(requests)
            raise KeyboardInterrupt  # killed before the batch id reached the journal

    with pytest.raises(KeyboardInterrupt):
        run_batch([p], CrashAfterCreate("claude-test", api_key=KEY, base_url=srv.base_url), opts(), bopts(tmp_path))
    (mine,) = set(srv.batches) - foreign
    t0 = time.monotonic()
    (r,), rep = run_batch([p], summarizer(srv), opts(), bopts(tmp_path))
    assert r.status == "compacted" and len(srv.batches) == 3  # adopted, not submitted again
    assert time.monotonic() - t0 < 4.0  # not waiting for the other runs' batches to end
    assert not set(results_fetched(srv)) & foreign
    assert rep.files[p]["batches"] == [mine]
    assert any(f"every request of submission 1 found in {mine}" in n for n in rep.notes)
