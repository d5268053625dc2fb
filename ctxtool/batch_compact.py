"""``compact --batch``: every summarization request of a run through the Message Batches API.

How a run goes
--------------
* **Planning.** Each file first goes through the writer's own dry run (``compact_file`` with
  ``dry_run``): the same checks, skips and refusals as a direct run, so a damaged file or one
  under ``--if-over`` never costs a request. The staged summarization of a planned file
  (``summarize.summarize_plan``: OpenClaw's split, chunks, merge, turn prefix, fallbacks) is
  then *recorded*: every call whose answer is not known yet becomes a request, answered for
  now with a placeholder, so all requests that depend on nothing unknown are found in one
  pass; a prompt that contains a placeholder (the next chunk of a chain, the merge of the
  parts) waits for a later round. So a run goes in rounds: first every chunk and turn-prefix
  request of every file, then what those answers make possible (merges, follow-up chunks).
* **Requests** are named by a hash of their content (``custom_id``): the same prompt is sent
  once, whichever files need it, and an answer is never applied to another prompt.
* **Batches** hold up to ``batch_size`` requests (and < 200 MB). A batch is submitted as soon
  as it is full, so the API works on the first files while later ones are still planned.
  Each batch is polled with exponential backoff (``PollPolicy``) until it ends.
* **Writing.** When every request a file needs has its answer, the file is compacted by the
  ordinary writer (``compact_writer.compact_file``) with a summarizer that replays the
  answers. An errored, expired or canceled request raises the same ``SummarizerError`` a
  failed direct call raises, so the fallback chain (without oversized messages, then the
  fixed text plus the extractive summary, or ``--on-error skip``) is the very code a direct
  run goes through. Files are written as their batch's results are read, in arrival order.
  Such an error is this run's answer (the request is not sent twice in one run); the journal
  records it (``retry``), so the next run of the journal submits the request again if a file
  still needs it (a file failed under ``--on-error skip``) instead of replaying the error.
* **Resume.** The journal (``batch_state``) records each submission before and after the
  create call, each file's plan and each file done. Re-running the same command re-plans
  the files not done: requests already submitted are waited for (or their results fetched,
  when their batch has ended), never sent again. A file whose size, mtime or inode changed
  since its requests were submitted is re-planned from its current content; requests whose
  content did not change still apply, the others are new (the per-file ``replanned`` note
  says so). The same holds for a file recorded done (written or skipped) by an earlier run of
  the journal: its result is reused only while its size, mtime and inode are those recorded
  with it; otherwise it is planned again from its current content (a skip or a result decided
  on older content is never replayed). A submission whose create call has no recorded outcome (a crash or a timeout
  in between) is matched against the batches the API lists for that moment (same size); once
  the candidates read hold every request of the submission, the others (other runs' batches)
  are no longer waited for and the journal keeps only the ones that held them.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import deque
from dataclasses import dataclass, field, fields, replace

import orjson

from . import compact as cp
from .batch_state import BatchState, Submission, file_stamp
from .compact_writer import FileResult, Options, compact_file
from .errors import CtxError, SummarizerError
from .summarize import AmbiguousRequest, PlanOnly, summarize_plan
from .transcript import scan

DEFAULT_BATCH_SIZE = 1000
MAX_BATCH_REQUESTS = 100_000  # the API's limits per batch: 100,000 requests, 256 MB
MAX_BATCH_BYTES = 200 * 1024 * 1024
ADOPT_BEFORE = 300.0  # a batch whose create outcome is unknown is looked for from 5 min before (clock skew)...
ADOPT_AFTER = 900.0  # ...to 15 min after the submission was recorded
POLL_FAILURES = 3  # consecutive failed polls (each with its own retries) before a batch is left for a later run
MAX_REPLANS = 3  # a file that keeps changing between planning and writing is given up for this run
FINAL = ("compacted", "fallback", "skipped")  # recorded as done: a resumed run does not touch the file again
# (unless its size, mtime or inode changed since: it is then planned again from its current content)


def custom_id(params: dict) -> str:
    """The request's name in a batch: a hash of its content (``^[a-zA-Z0-9_-]{1,64}$``)."""
    return "c" + hashlib.sha256(orjson.dumps(params, option=orjson.OPT_SORT_KEYS)).hexdigest()[:48]


@dataclass
class PollPolicy:
    """Delay before the next status check of a batch: ``first`` doubling up to ``cap``, and never
    more than ``share`` of the batch's age, so waiting adds at most about that share to its time."""

    first: float = 1.0
    cap: float = 60.0
    share: float = 0.1

    def delay(self, polls: int, age: float) -> float:
        return max(self.first, min(self.cap, self.first * 2 ** min(polls, 30), self.share * max(0.0, age)))


@dataclass
class BatchOptions:
    state_path: str
    key: str  # batch_state.run_key of the run's spec
    meta: dict = field(default_factory=dict)  # recorded in the journal's first line (for people reading it)
    batch_size: int = DEFAULT_BATCH_SIZE
    max_batch_bytes: int = MAX_BATCH_BYTES
    poll: PollPolicy = field(default_factory=PollPolicy)
    wait: float | None = None  # seconds to wait for batches to end; None: until they do


@dataclass
class BatchReport:
    state: str
    resumed: bool = False
    state_removed: bool = False
    submitted: int = 0  # requests this run submitted
    reused: int = 0  # requests found already submitted (an earlier run of the same state)
    batches: dict = field(default_factory=dict)  # id -> {requests, status, counts, earlier}
    files: dict = field(default_factory=dict)  # path -> {batches, requests, resumed, replanned}
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"state": self.state, "resumed": self.resumed, "state_removed": self.state_removed,
                "requests_submitted": self.submitted, "requests_reused": self.reused,
                "batches": [{"id": k, **v} for k, v in self.batches.items()], "notes": self.notes}


class _Unanswered(Exception):
    """Replaying found a call with no answer: the file's plan changed after it was recorded.
    Deliberately not a CtxError, so it passes through the writer untouched."""


_MARK = f"\x00ctxtool-batch-pending-{secrets.token_hex(6)}-"


class _Answers:
    """A summarizer answering from batch results.

    Recording: an unknown request is collected and answered with a placeholder; a prompt that
    contains a placeholder depends on an unknown answer and is left for a later round.
    Replaying: every call must have its answer (``_Unanswered`` otherwise)."""

    offline = False
    name = "anthropic"

    def __init__(self, summarizer, answers: dict, *, record: bool):
        self.s = summarizer
        self.answers = answers
        self.record = record
        self.used: list[str] = []
        self.pending: dict[str, dict] = {}
        self.dependent = 0

    @property
    def ready(self) -> bool:
        return not self.pending and not self.dependent

    def close(self) -> None:
        pass

    def call(self, system: str, prompt: str, *, max_tokens: int, deadline: float | None = None) -> str:
        if self.record and _MARK in prompt:
            self.dependent += 1
            return f"{_MARK}dependent-{self.dependent}"
        params = self.s.params(system, prompt, max_tokens)
        cid = custom_id(params)
        if cid not in self.used:
            self.used.append(cid)
        got = self.answers.get(cid)
        if got is None:
            if not self.record:
                raise _Unanswered(cid)
            self.pending[cid] = params
            return _MARK + cid
        text, error = got
        if error is not None:
            raise SummarizerError(error)
        return text


@dataclass
class _Poll:
    next: float
    polls: int = 0
    failures: int = 0


def _result_from(d: dict, path: str) -> FileResult:
    known = {f.name for f in fields(FileResult)}
    return FileResult(path, **{k: v for k, v in d.items() if k in known and k != "path"})


class _Runner:
    def __init__(self, files, summarizer, opts: Options, bopts: BatchOptions, on_result, on_event, clock, sleep):
        self.files = list(dict.fromkeys(files))
        self.s = summarizer
        self.opts = opts
        self.b = bopts
        self.on_result = on_result
        self.on_event = on_event
        self.clock = clock
        self.sleep = sleep
        self.report = BatchReport(bopts.state_path)
        self.state: BatchState | None = None
        self.answers: dict[str, tuple] = {}  # custom_id -> (text, error)
        self.waiting: dict[str, set] = {}  # custom_id -> files waiting for its answer
        self.outstanding: dict[str, set] = {}  # file -> custom_ids it waits for
        self.users: dict[str, set] = {}  # custom_id -> unfinished files that used it
        self.used: dict[str, list] = {}  # file -> custom_ids it used
        self.buffer: dict[str, dict] = {}  # custom_id -> params, not submitted yet
        self.buffer_files: dict[str, set] = {}
        self.buffer_bytes = 0
        self.tracked: dict[str, _Poll] = {}  # batch id -> poll schedule
        self.consumed: set = set()  # batches whose results this run has read
        self.adopt_tried: set = set()
        self.adopt_found: dict[int, dict] = {}  # adopted submission -> {request id: the candidate batch holding it}
        self.reused: set = set()  # request ids answered by batches an earlier run submitted
        self.queue = deque(self.files)
        self.results: dict[str, FileResult] = {}
        self.unfinished = set(self.files)
        self.replans: dict[str, int] = {}
        self.gates: dict[str, tuple] = {}
        self.keep_state = False
        self.ambiguous = 0  # create calls whose outcome was unknown and that turned out never to have arrived
        self.earlier_n = 0  # submissions up to this number were made by earlier runs of the state
        self.resent: set = set()  # requests an earlier run got an error for, submitted again by this run
        self.errored: set = set()  # requests this run got an error for (the next run of the state sends them again)
        self.failed_used: set = set()  # requests used by files that failed in this run

    # ------------------------------------------------------------ the loop

    def run(self):
        self.state = BatchState.open(self.b.state_path, self.b.key, self.b.meta)
        self.report.resumed = self.state.resumed
        self.earlier_n = max((sub.n for sub in self.state.submissions), default=0)
        try:
            self._loop()
            return self._finish()
        finally:
            self.state.close()

    def _loop(self) -> None:
        deadline = None if self.b.wait is None else self.clock() + self.b.wait
        while True:
            now = self.clock()
            due = sorted((p.next, bid) for bid, p in self.tracked.items() if p.next <= now)
            if due:
                for _, bid in due:
                    if bid in self.tracked:
                        self._poll(bid)
                continue
            if self.queue:
                self._process(self.queue.popleft())
                if len(self.buffer) >= self.b.batch_size or self.buffer_bytes >= self.b.max_batch_bytes:
                    self._submit()
                continue
            if self.buffer:
                self._submit()
                continue
            if not self.tracked or (deadline is not None and now >= deadline):
                return
            nxt = min(p.next for p in self.tracked.values())
            if deadline is not None:
                nxt = min(nxt, deadline)
            self._event("waiting", batches=sorted(self.tracked), seconds=max(0.0, nxt - now))
            self.sleep(max(0.0, nxt - now))

    def _event(self, kind: str, **kw) -> None:
        if self.on_event is not None:
            self.on_event({"event": kind, "done": len(self.results), "total": len(self.files), **kw})

    def _info(self, path: str) -> dict:
        return self.report.files.setdefault(path, {"batches": [], "requests": 0, "resumed": False, "replanned": None})

    # ------------------------------------------------------------ one file

    def _gate(self, path: str) -> FileResult:
        """The writer's dry run: checks, skips and refusals exactly as a direct run (cached per file version)."""
        stamp = file_stamp(path)
        hit = self.gates.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        r = compact_file(path, PlanOnly(), replace(self.opts, dry_run=True))
        self.gates[path] = (stamp, r)
        return r

    def _process(self, path: str) -> None:
        """Plan ``path`` (again): write it when every answer it needs is known, else ask for what is missing."""
        done = self.state.done.get(path)
        if done is not None and done["status"] in FINAL:
            stamp = file_stamp(path)
            if stamp is not None and stamp == done["stamp"]:  # as it was left: its result stands
                info = self._info(path)
                info["resumed"] = True
                self.used[path] = (self.state.plans.get(path) or {}).get("needs") or []
                return self._finish_file(path, _result_from(done["result"], path), record=False)
            # changed since (the agent appended, or it was replaced): planned again from its current content,
            # as a file that changed since its requests were made; its old result would be stale
            size = f"{done['stamp'][0]:,} -> {stamp[0]:,} bytes" if done["stamp"] and stamp else "replaced"
            self._info(path)["replanned"] = (f"the session changed since an earlier run of this state found it "
                                             f"{done['status']} ({size}): re-planned")
        gate = self._gate(path)
        if gate.status != "planned":
            return self._finish_file(path, gate)
        stamp = file_stamp(path)
        try:
            plan = cp.plan_compaction(scan(path, self.opts.fmt), keep_recent_tokens=self.opts.keep_recent_tokens,
                                      window=self.opts.window)
            rec = _Answers(self.s, self.answers, record=True)
            summarize_plan(plan, rec, replace(self.opts.settings, window=plan.window))
        except (CtxError, OSError) as e:  # the file changed under us: fail as the writer would
            return self._finish_file(path, FileResult(path, status="failed", error=getattr(e, "reason", None) or str(e)))
        self._note_replan(path, stamp, rec.used)
        self.used[path] = rec.used
        for cid in rec.used:
            self.users.setdefault(cid, set()).add(path)
        if rec.ready:
            return self._write(path)
        for cid, params in rec.pending.items():
            self._need(cid, params, path)

    def _note_replan(self, path: str, stamp, needs: list) -> None:
        prev = self.state.plans.get(path)
        if prev is not None and prev["stamp"] != stamp and prev["needs"]:
            still = len(set(prev["needs"]) & set(needs))
            size = f"{prev['stamp'][0]:,} -> {stamp[0]:,} bytes" if prev["stamp"] and stamp else "replaced"
            self._info(path)["replanned"] = (f"the session changed since its requests were made ({size}): re-planned; "
                                             f"{still} of its {len(prev['needs'])} earlier requests still apply")
        if prev is None or prev["stamp"] != stamp or prev["needs"] != needs:
            self.state.plan(path, stamp, needs)

    def _write(self, path: str) -> None:
        replay = _Answers(self.s, self.answers, record=False)
        try:
            r = compact_file(path, replay, self.opts)
        except _Unanswered:  # the session changed between planning and writing: plan it again
            n = self.replans[path] = self.replans.get(path, 0) + 1
            if n > MAX_REPLANS:
                r = FileResult(path, status="failed",
                               error=f"the session kept changing while its batch requests were answered ({n} re-plans); rerun compact")
            else:
                self.queue.appendleft(path)
                return
        self._finish_file(path, r)

    def _finish_file(self, path: str, r: FileResult, *, record: bool = True) -> None:
        self.results[path] = r
        self.unfinished.discard(path)
        info = self._info(path)
        used = self.used.pop(path, [])
        if used:
            info["requests"] = len(used)
            info["batches"] = sorted({b for cid in used if cid in self.state.by_id for b in self.state.by_id[cid].batches})
        if record and r.status in FINAL:
            self.state.file_done(path, r.status, file_stamp(path), r.to_dict())
        elif r.status == "pending" or (r.status == "failed" and used):
            # a later run has something to collect (answers exist for a failed write), or requests to send
            # again (answered with an error: ``_consume``)
            self.keep_state = True
            if r.status == "failed":
                self.failed_used.update(used)
        for cid in used:
            users = self.users.get(cid)
            if users is not None:
                users.discard(path)
                if not users:
                    del self.users[cid]
                    self.answers.pop(cid, None)
        self._event("file", path=path, status=r.status)
        if self.on_result is not None:
            self.on_result(r)

    # ------------------------------------------------------------ requests and batches

    def _need(self, cid: str, params: dict, path: str) -> None:
        self.waiting.setdefault(cid, set()).add(path)
        self.outstanding.setdefault(path, set()).add(cid)
        if cid in self.buffer:
            self.buffer_files[cid].add(path)
            return
        sub = self.state.by_id.get(cid)
        if sub is not None and sub.batch is None and not sub.candidates:
            self._adopt(sub)
            sub = self.state.by_id.get(cid)
        if sub is None:
            if cid in self.state.retry:
                self.resent.add(cid)
            self.buffer[cid] = params
            self.buffer_files[cid] = {path}
            self.buffer_bytes += len(orjson.dumps(params)) + 80
            return
        batches = sub.batches
        if batches and all(b in self.consumed for b in batches):
            self.consumed.difference_update(batches)  # read earlier in this run without keeping this answer
        for bid in batches:
            if bid not in self.tracked and bid not in self.consumed:
                self.tracked[bid] = _Poll(self.clock())
                self.report.batches.setdefault(bid, {"requests": None, "status": "unknown", "counts": None, "earlier": True})

    def _answered(self, cid: str, text: str | None, error: str | None) -> None:
        self.answers[cid] = (text, error)
        for path in sorted(self.waiting.pop(cid, ())):
            left = self.outstanding.get(path)
            if left is None:
                continue
            left.discard(cid)
            if not left and path in self.unfinished:
                del self.outstanding[path]
                self._process(path)  # written now, as its last answer arrives (or its next round is asked)

    def _submit(self) -> None:
        take, size = [], 0
        for cid, params in self.buffer.items():
            n = len(orjson.dumps(params)) + 80
            if take and (len(take) >= min(self.b.batch_size, MAX_BATCH_REQUESTS) or size + n > self.b.max_batch_bytes):
                break
            take.append(cid)
            size += n
        requests = [{"custom_id": cid, "params": self.buffer[cid]} for cid in take]
        files = {cid: sorted(self.buffer_files[cid]) for cid in take}
        for cid in take:
            del self.buffer[cid], self.buffer_files[cid]
        self.buffer_bytes = max(0, self.buffer_bytes - size)
        sub = self.state.submitting(take, files)
        self._event("submitting", requests=len(take))
        try:
            batch = self.s.batch_create(requests)
        except AmbiguousRequest as e:
            self.report.notes.append(f"submission {sub.n} ({len(take)} requests): {e.reason}; looking for it among the API's batches")
            self._adopt(sub)
            if sub.candidates:
                self.report.submitted += len(take)
            elif self.state.by_id.get(take[0]) is not sub:  # not found: it never reached the API
                self.ambiguous += 1
                if self.ambiguous >= self.s.attempts:
                    self._fail_requests(take, f"batch submission failed: {e.reason} (gave up after {self.ambiguous} attempts)")
                else:
                    self.sleep(self.s.backoff(self.ambiguous))
                    for r in requests:
                        self.buffer[r["custom_id"]] = r["params"]
                        self.buffer_files[r["custom_id"]] = set(files[r["custom_id"]])
                    self.buffer_bytes += size
            return
        except SummarizerError as e:
            self.state.unsubmitted(sub, e.reason)
            self._fail_requests(take, f"batch submission failed: {e.reason}")
            return
        self.state.submitted(sub, batch["id"])
        self.report.submitted += len(take)
        self.report.batches[batch["id"]] = {"requests": len(take), "status": batch["status"], "counts": batch["counts"], "earlier": False}
        self.tracked[batch["id"]] = _Poll(self.clock() + self.b.poll.delay(0, 0.0))
        self._event("submitted", batch=batch["id"], requests=len(take))

    def _fail_requests(self, cids: list, error: str) -> None:
        for cid in cids:
            self._answered(cid, None, error)

    def _adopt(self, sub: Submission) -> None:
        """The create call of ``sub`` has no recorded outcome: find the batch it may have made."""
        if sub.n in self.adopt_tried:
            return
        self.adopt_tried.add(sub.n)
        known = {b for s in self.state.submissions for b in s.batches}
        try:
            listed = self.s.batch_list(sub.at - ADOPT_BEFORE)
        except SummarizerError as e:
            self.report.notes.append(f"submission {sub.n}: outcome unknown and the batch list is unavailable ({e.reason}); "
                                     "its requests wait for a later run")
            return
        found = [b["id"] for b in listed if b["id"] not in known and b["created_at"] is not None
                 and sub.at - ADOPT_BEFORE <= b["created_at"] <= sub.at + ADOPT_AFTER
                 and sum(b["counts"].values()) == len(sub.ids)]
        if found:
            self.state.candidates(sub, found)
            for bid in found:
                self.tracked.setdefault(bid, _Poll(self.clock()))
            self.report.notes.append(f"submission {sub.n} ({len(sub.ids)} requests): outcome of its create call unknown; "
                                     f"using batch {', '.join(found)} (same size, created then) for the request ids it holds")
            for bid in found:
                self.report.batches.setdefault(bid, {"requests": len(sub.ids), "status": "unknown", "counts": None, "earlier": True})
        else:
            self.state.unsubmitted(sub, "never reached the API (no batch of its size was created then)")
            self.report.notes.append(f"submission {sub.n} ({len(sub.ids)} requests) never reached the API; its requests are sent again")

    def _poll(self, bid: str) -> None:
        p = self.tracked[bid]
        try:
            b = self.s.batch_retrieve(bid)
        except SummarizerError as e:
            p.failures += 1
            if p.failures >= POLL_FAILURES:
                del self.tracked[bid]
                self._give_up(bid, f"could not get the status of batch {bid}: {e.reason}")
            else:
                p.next = self.clock() + self.b.poll.delay(p.polls, 0.0)
            return
        p.failures = 0
        rep = self.report.batches.setdefault(bid, {"requests": None, "status": None, "counts": None, "earlier": True})
        rep.update(status=b["status"], counts=b["counts"])
        if rep["requests"] is None:
            rep["requests"] = sum(b["counts"].values())
        if b["status"] != "ended":
            p.polls += 1
            age = time.time() - b["created_at"] if b["created_at"] is not None else 0.0
            p.next = self.clock() + self.b.poll.delay(p.polls, age)
            return
        del self.tracked[bid]
        # batches queue behind each other when the API is busy: the ones still processing are likely
        # next, so they are checked again soon (their interval then grows again)
        soon = self.clock() + self.b.poll.first
        for other in self.tracked.values():
            other.polls, other.next = 0, min(other.next, soon)
        self.state.batch_ended(bid, b["counts"])
        self._event("ended", batch=bid, counts=b["counts"])
        try:
            self._consume(bid)
        except SummarizerError as e:
            self._give_up(bid, e.reason)

    def _consume(self, bid: str) -> None:
        """Read an ended batch's results; each file is written as its last answer arrives."""
        self.consumed.add(bid)
        subs = [s for s in self.state.submissions if bid in s.batches and s.error is None]
        wanted_by_files = {cid for s in subs for cid, paths in s.files.items() if any(p in self.unfinished for p in paths)}
        earlier = any(s.n <= self.earlier_n for s in subs)  # submitted by an earlier run of this state
        lines = list(self.s.batch_results(bid))  # read whole first: the stream is not held open while files are written
        seen, errors = {cid for cid, _, _ in lines}, []
        for s in subs:
            if s.batch is None and s.candidates:
                self._narrow(s, bid, seen)
        for cid, text, error in lines:
            have = self.answers.get(cid)
            if have is not None and have[1] is None:
                continue
            if error is not None:
                live = self.state.by_id.get(cid)
                if not any(live is sub for sub in subs):
                    continue  # an old error of a request submitted again since: its new answer is awaited
                errors.append(cid)
            if cid in self.waiting or cid in wanted_by_files:
                if earlier:
                    self.reused.add(cid)
                self._answered(cid, text, error)
        self.state.sync()
        for s in subs:
            if s.batch == bid:
                missing = [cid for cid in s.ids if cid not in seen and cid in self.waiting]
                self._fail_requests(missing, f"anthropic batch {bid}: no result for the request")
                errors += missing
            elif all(c in self.consumed for c in s.candidates):
                # adopted batches hold only some of this submission's requests (or none): send the rest again
                again = [cid for cid in s.ids if cid in self.waiting and self.state.by_id.get(cid) is s]
                if again:
                    self.state.unsubmitted(s, "its adopted batch(es) did not hold these requests")
                    for cid in again:
                        paths = self.waiting.pop(cid)
                        for path in paths:
                            self.outstanding.get(path, set()).discard(cid)
                            self.queue.appendleft(path)

        # an error is this run's answer (the file falls back or is skipped as after a failed direct call); a
        # later run submits these requests again rather than replay the error for ever (--on-error skip)
        self.state.retry_later(bid, sorted(set(errors)))
        self.errored.update(errors)

    def _narrow(self, sub: Submission, bid: str, seen: set) -> None:
        """An adopted candidate of ``sub`` ended: once the candidates read hold every request of ``sub``,
        the others (other runs' batches of the same size) are not waited for, and the journal keeps only
        the batches that held its requests."""
        found = self.adopt_found.setdefault(sub.n, {})
        for cid in sub.ids:
            if cid in seen:
                found.setdefault(cid, bid)
        if len(found) < len(set(sub.ids)):
            return
        holding = sorted(set(found.values()))
        if holding == sorted(sub.candidates):
            return
        needed = {c for other in self.state.submissions if other is not sub and other.batch is None
                  and other.error is None for c in other.candidates}
        dropped = [c for c in sub.candidates if c not in holding]
        for c in dropped:
            if c not in needed and c in self.tracked:
                del self.tracked[c]
                if self.report.batches.get(c, {}).get("status") == "unknown":
                    del self.report.batches[c]
        self.state.candidates(sub, holding)
        self.report.notes.append(f"every request of submission {sub.n} found in {', '.join(holding)}: "
                                 f"not waiting for {', '.join(dropped)} (other batches of its size, created then)")

    def _give_up(self, bid: str, why: str) -> None:
        """A batch cannot be reached in this run: its files wait for a later run (the state is kept)."""
        self.report.notes.append(f"{why}; its files are left for a later run")
        cids = {cid for s in self.state.submissions if bid in s.batches for cid in s.ids}
        for cid in cids & set(self.waiting):
            for path in self.waiting.pop(cid):
                if path in self.unfinished:
                    self.outstanding.pop(path, None)
                    self._finish_file(path, FileResult(path, status="pending", reason=f"{why}; re-run the same command to resume"))

    # ------------------------------------------------------------ the end

    def _finish(self):
        for path in self.files:
            if path in self.results:
                continue
            bids = sorted({b for cid in self.outstanding.get(path, ()) if cid in self.state.by_id
                           for b in self.state.by_id[cid].batches})
            what = f"batch {', '.join(bids)}" if bids else "its batch"
            self._finish_file(path, FileResult(path, status="pending",
                                               reason=f"waiting for {what}; re-run the same command to collect it"))
        self.report.reused = len(self.reused)
        if self.resent:
            self.report.notes.append(f"{len(self.resent)} request(s) answered with an error by an earlier run (errored, "
                                     "expired, canceled or no result) were submitted again")
        if not self.keep_state:
            self.state.remove()
            self.report.state_removed = True
        elif self.errored & self.failed_used:
            n = len(self.errored & self.failed_used)
            self.report.notes.append(f"{n} request(s) of failed files were answered with an error (errored, expired, "
                                     "canceled or no result); the same command, run again, submits them again")
        return [self.results[p] for p in self.files], self.report


def run_batch(files: list[str], summarizer, opts: Options, bopts: BatchOptions, *, on_result=None, on_event=None,
              clock=time.monotonic, sleep=time.sleep) -> tuple[list[FileResult], BatchReport]:
    """Compact ``files`` with every summarization request sent through Message Batches.

    ``summarizer`` is an ``AnthropicSummarizer`` (``params``, ``batch_create``,
    ``batch_retrieve``, ``batch_results``, ``batch_list``). Results come back in input order;
    a file whose batch did not end within ``bopts.wait`` is ``pending`` (the state is kept:
    running the same command again collects it). ``on_result(FileResult)`` is called as each
    file is finished, ``on_event(dict)`` on submissions, batch ends and waits (progress).
    """
    return _Runner(files, summarizer, opts, bopts, on_result, on_event, clock, sleep).run()
