"""Regenerate fixtures/repair/*.expected.* from the current code (review the diff!).

    python tests/support/regen_repair.py
"""

import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from ctxtool.repair import repair_file  # noqa: E402

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "repair")


def cases():
    for name in sorted(os.listdir(HERE)):
        if name.endswith(".jsonl") and ".expected" not in name:
            yield os.path.join(HERE, name)


def changes_summary(report):
    return [{"kind": c.kind, "action": c.action, "line": c.line, "id": c.id} for c in report.changes]


def main():
    for path in cases():
        base = path[: -len(".jsonl")]
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out.jsonl")
            src = os.path.join(d, os.path.basename(path))
            shutil.copy(path, src)
            report = repair_file(src, output=out)
            if report.written:
                shutil.copy(out, base + ".expected.jsonl")
            else:
                shutil.copy(path, base + ".expected.jsonl")
        with open(base + ".expected-changes.json", "w", encoding="utf-8") as f:
            json.dump(changes_summary(report), f, indent=1)
            f.write("\n")
        print(os.path.basename(path), len(report.changes))


if __name__ == "__main__":
    main()
