#!/bin/sh
# run-expect.sh RC [--grep PATTERN]... [--no-grep PATTERN]... -- COMMAND...
# Runs COMMAND (normally umockdev-wrapper fake-nvme-tb ... -- ...), shows its output, and passes only
# if it exits with exactly RC and its output (stdout+stderr) matches every --grep and no --no-grep
# (grep -E). Lets a test assert that the harness FAILS for the right reason, which meson's
# should_fail cannot: that would also pass on a crash.
set -u
want=$1; shift
greps=; nogreps=
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case $1 in
        --grep) greps="$greps
$2"; shift 2 ;;
        --no-grep) nogreps="$nogreps
$2"; shift 2 ;;
        *) echo "run-expect.sh: bad option $1" >&2; exit 99 ;;
    esac
done
[ $# -gt 0 ] && shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" = 77 ] && [ "$want" != 77 ]; then
    echo "run-expect.sh: command skipped (77)"; exit 77
fi
fail=0
if [ "$rc" != "$want" ]; then
    echo "run-expect.sh: FAIL: exit $rc, expected $want"; fail=1
fi
IFS='
'
for p in $greps; do
    printf '%s\n' "$out" | grep -Eq -- "$p" || { echo "run-expect.sh: FAIL: no line matches: $p"; fail=1; }
done
for p in $nogreps; do
    printf '%s\n' "$out" | grep -Eq -- "$p" && { echo "run-expect.sh: FAIL: a line matches: $p"; fail=1; }
done
[ $fail = 0 ] && echo "run-expect.sh: ok"
exit $fail
