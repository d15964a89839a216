#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Count meson's test results from one or more testlog JSON files (one JSON
# object per line) and print "N passed, N failed, N skipped". OK and
# EXPECTEDFAIL count as passed; FAIL, TIMEOUT, ERROR, INTERRUPT and
# UNEXPECTEDPASS as failed; SKIP as skipped. A missing or empty log counts as
# one failure.
# Before that line, each failed test is named with the last lines of its
# output (TAIL_LINES, 40 by default): a CI that keeps only the end of the
# output still says what failed and why.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 TESTLOG.json..." >&2; exit 2; }
python3 - "$@" <<'PY'
import json, os, sys
tail = int(os.environ.get("TAIL_LINES", "40"))
p = f = s = 0
failed = []
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        lines = []
    if not any(l.strip() for l in lines):
        print(f"no test log at {path}", file=sys.stderr)
        failed.append((path, f"no test log at {path}", "nothing ran or the log was lost", []))
        f += 1
        continue
    for line in lines:
        line = line.strip()
        if not line:
            continue
        t = json.loads(line)
        r = t.get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            p += 1
        elif r == "SKIP":
            s += 1
        else:
            f += 1
            out = (t.get("stdout") or "") + (t.get("stderr") or "")
            failed.append((path, t.get("name", "?"), f"{r}, {t.get('duration', 0):.1f} s, exit {t.get('returncode')}",
                           out.rstrip("\n").splitlines()[-tail:] if tail > 0 else []))
for path, name, how, out in failed:
    print(f"==== failed: {name} ({how}) [{os.path.basename(path)}]")
    for l in out:
        print(f"  | {l}")
print(f"{p} passed, {f} failed, {s} skipped")
PY
