#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# doc/architecture.md stays true for the tree: every C file under src/ is named on it in backquotes
# (by its name within its layer's folder, e.g. `bpf/iogap-load.c` or `bpfwatch.c`), and every test suite meson
# knows (the build's meson-info/intro-tests.json) has its row under "The test suites".
#   test-architecture-doc.sh SRCDIR BUILDDIR
set -euo pipefail
src=$1 build=$2
doc=$src/doc/architecture.md
bad=0
while IFS= read -r f; do
	rel=${f#src/*/}     # the name within its layer: bpfwatch.c, bpf/iogap.bpf.c
	grep -qF "\`$rel\`" "$doc" || { echo "FAIL: $f is not named in doc/architecture.md"; bad=1; }
done < <(cd "$src" && find src -name '*.c' | sort)
suites=$(python3 -c 'import json, sys
print("\n".join(sorted({s.split(":")[-1] for t in json.load(open(sys.argv[1])) for s in t["suite"]})))' \
	"$build/meson-info/intro-tests.json")
table=$(sed -n '/^## The test suites/,/^## /p' "$doc")
for s in $suites; do
	grep -q "^| \`$s\` |" <<<"$table" || { echo "FAIL: suite $s has no row under 'The test suites'"; bad=1; }
done
[ "$bad" = 0 ] && echo "ok: doc/architecture.md names every C file in src/ and every suite ($(echo $suites | wc -w))"
exit "$bad"
