#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Count meson's test results from one or more testlog JSON files (one JSON
# object per line) and print "N passed, N failed, N skipped". OK and
# EXPECTEDFAIL count as passed; FAIL, TIMEOUT, ERROR and UNEXPECTEDPASS as
# failed; SKIP as skipped. A missing or empty log counts as one failure.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 TESTLOG.json..." >&2; exit 2; }
python3 - "$@" <<'PY'
import json, sys
p = f = s = 0
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        lines = []
    if not any(l.strip() for l in lines):
        print(f"no test log at {path}", file=sys.stderr)
        f += 1
        continue
    for line in lines:
        line = line.strip()
        if not line:
            continue
        r = json.loads(line).get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            p += 1
        elif r == "SKIP":
            s += 1
        else:
            f += 1
print(f"{p} passed, {f} failed, {s} skipped")
PY
