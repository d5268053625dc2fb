import json, pytest
from tests.support import judge_fuzz

SRC = "/work/main/fixtures/claude-recorded/parallel.jsonl"

def mk(tmp_path, edits):
    lines = open(SRC, "rb").read().splitlines(keepends=True)
    for k, fn in edits:
        o = json.loads(lines[k]); fn(o)
        lines[k] = json.dumps(o, separators=(",", ":")).encode() + b"\n"
    p = str(tmp_path / "parallel.jsonl")
    open(p, "wb").write(b"".join(lines))
    return p

def setu(v):
    def f(o):
        o["uuid"] = v
    return f

def parent(u):
    def f(o):
        o["parentUuid"] = u
    return f

R_P1, R_P2 = "7a96f79a-", "0a0ad75e-"
CASES = {
    "p1-0-result-on-chain": [(21, setu(0)), (29, "p1res")],
    "p2-0-result-on-chain": [(22, setu(0)), (29, "p2res")],
    "p1-x-result-on-chain": [(21, setu("x")), (29, "p1res")],
}

@pytest.mark.parametrize("name", list(CASES))
def test_probe(tmp_path, name):
    lines = open(SRC, "rb").read().splitlines(keepends=True)
    uu = {k: json.loads(lines[k]).get("uuid") for k in (26, 27)}
    edits = []
    for k, fn in CASES[name]:
        if fn == "p1res": fn = parent(uu[27])
        elif fn == "p2res": fn = parent(uu[26])
        edits.append((k, fn))
    p = mk(tmp_path, edits)
    j = judge_fuzz._claude_judge(p)
    w = judge_fuzz._claude_view(p)
    def sig(conv):
        return [(r, [(b[0], (b[1] or "")[:14]) for b in bl]) for r, bl in conv[1:3]]
    with open("/tmp/probe_cc.txt", "a") as f:
        f.write(f"{name}: {'agree' if j == w else 'DIFFER'}\n   judge {sig(j)}\n" + ("" if j == w else f"   view  {sig(w)}\n"))
