#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Count meson's test results from testlog.json (one JSON object per line) and
# print "N passed, N failed, N skipped". OK and EXPECTEDFAIL count as passed;
# FAIL, TIMEOUT, ERROR and UNEXPECTEDPASS as failed; SKIP as skipped.
set -euo pipefail
log=${1:?usage: $0 TESTLOG.json}
[ -s "$log" ] || { echo "0 passed, 1 failed, 0 skipped"; echo "no test log at $log" >&2; exit 1; }
python3 - "$log" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
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
