"""Scans of free text (an answer, a summary, an instructions file) in linear time: each is the regular expression it
replaces, checked on random strings of the characters that matter, and each runs on the input that took the
expression minutes (found by a review: a checkpoint of a last answer holding 80 KB of hex took 7 s, 200 KB 70 s)."""

from __future__ import annotations

import random
import re

import pytest

from ctxtool import budget, checkpoint, compact

QUESTION = re.compile(r"[^.!?\n]{8,}\?")  # checkpoint's pattern before: quadratic on a long run with no mark
SUFFIXES = [re.compile(r"\n*<read-files>.*?</read-files>", re.S), re.compile(r"\n*<modified-files>.*?</modified-files>", re.S),
            re.compile(r"\n*## Tool Failures\n.*?(?=\n## |\Z)", re.S)]


def _random(parts, n, most=16, seed=0):
    rnd = random.Random(seed)
    return ["".join(rnd.choice(parts) for _ in range(rnd.randint(0, most))) for _ in range(n)]


def test_questions_are_found_as_before():
    for s in _random(list("ab ?.!\nxyz?"), 5000, 60):
        assert [m.group(0) for m in checkpoint._QUESTION.finditer(s)] == [m.group(0) for m in QUESTION.finditer(s)], s


def test_a_long_answer_with_no_sentence_mark_is_scanned_once():
    text = "Here is the blob: " + "0123456789abcdef" * 500_000 + "?"  # 8 MB, one "question"
    assert checkpoint._questions(text) == [checkpoint._clip(text, 200)]


def test_a_summarys_sections_are_cut_with_the_newlines_before_them_as_before():
    parts = ["\n", "\n\n", "a", "<read-files>", "</read-files>", "<modified-files>", "</modified-files>",
             "## Tool Failures\n", "\n## ", "x y"]
    for s in _random(parts, 5000):
        for old, new in zip(SUFFIXES, compact._SUFFIX_RES):
            assert compact._cut(new, s) == old.sub("", s), (s, old.pattern)


def test_a_summary_with_a_long_run_of_newlines():
    text = "kept\n" + "\n" * 2_000_000 + "<read-files>\na.py\n</read-files>\n\nmore"
    assert compact.strip_summary_suffix(text) == "kept\n\nmore"


@pytest.mark.parametrize("alphabet", ["`a", "``a@", "`"])
def test_code_spans_are_blanked_as_before(alphabet):
    for s in _random(list(alphabet), 5000, 25, seed=len(alphabet)):
        assert budget._blank_code_spans(s) == budget._CODESPAN.sub(lambda m: " " * len(m.group(0)), s), s


def test_comments_are_cut_as_before():
    for s in _random(["<!--", "-->", "-", "<!-", "a", "\n", "<!---->"], 5000, 12):
        assert budget._uncommented(s) == budget._COMMENT.sub("", s), s


def test_an_instructions_file_of_long_backtick_runs_and_an_open_comment(tmp_path):
    line = "`" * 200_000 + " @notes.md " + "``a`" * 50_000  # the pattern took 169 s on 30,000 backticks
    assert budget._blank_code_spans(line).count("@notes.md") == 0  # (inside the long run's span)
    assert budget._uncommented("<!--" * 500_000) == "<!--" * 500_000
    text = "<!--\n" + "x\n" * 500_000 + "@a.md"  # never closed: the block runs to the end, then is kept
    assert budget._strip_block_comments(text) == text
    (tmp_path / "a.md").write_text("A")
    assert budget.claude_imports(text, str(tmp_path), str(tmp_path)) == [str(tmp_path / "a.md")]
