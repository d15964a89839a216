#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The bash completion offers every verb of the verb table (src/cli/verbs.c) and, for each verb, every
# option in the verb's getopt table (src/cmd-VERB.c, with CLI_COMMON_OPTIONS and
# CLI_CONFIG_OPTION from cli.h where the table has them), and no option the table lacks.
# Options that neither `nvme-apstd VERB --help` nor nvme-apstd(8) mention are
# hidden ones for tests (--sysfs-root, --verify-interval-ms, ...) and need not
# be offered. Both lists come from the source, so a new option or verb fails
# this test until the completion follows.
# Usage: test-completion-options.sh SOURCE-ROOT NVME-APSTD-BINARY
# Covers: shell-completion/bash/nvme-apstd against src/cli/verbs.c, the option tables of
# src/cli/cmd-*.c and include/cli/cli.h.
set -eu

src=$1
bin=$2
script=$src/shell-completion/bash/nvme-apstd
man=$src/doc/nvme-apstd.8

main_c=$(find "$src/src" -name verbs.c | head -1)
cli_h=$(find "$src/include" -name cli.h | head -1)
[ -n "$main_c" ] && [ -n "$cli_h" ] || { echo "FAIL: no verbs.c or cli.h under $src"; exit 1; }

# { "name", required_argument, ... } lines of a C text, one name per line
option_names() {
        sed -n 's/.*{ *"\([a-z0-9-]*\)", *\(no\|required\|optional\)_argument.*/\1/p'
}
common=$(sed -n '/#define CLI_COMMON_OPTIONS/,/^$/p' "$cli_h" | option_names)
[ -n "$common" ] || { echo "FAIL: no CLI_COMMON_OPTIONS in $cli_h"; exit 1; }
config=$(grep '#define CLI_CONFIG_OPTION' "$cli_h" | option_names)
[ -n "$config" ] || { echo "FAIL: no CLI_CONFIG_OPTION in $cli_h"; exit 1; }
verbs=$(sed -n 's/.*{ *"\([a-z]*\)", *[0-9A-Z_]*, *[0-9A-Z_]*, *verb_[a-z_]* *}.*/\1/p' "$main_c")
[ -n "$verbs" ] || { echo "FAIL: no verb table in $main_c"; exit 1; }

_NVME_APSTD_SYSFS=$(mktemp -d)
export _NVME_APSTD_SYSFS
trap 'rm -rf "$_NVME_APSTD_SYSFS"' EXIT
# shellcheck source=/dev/null
source "$script"
func=$(complete -p nvme-apstd | sed -n 's/.*-F \([^ ]*\) .*/\1/p')

# the completions of "nvme-apstd WORDS... CUR"
offered() {
        COMP_WORDS=(nvme-apstd "$@")
        COMP_CWORD=$(($# ))
        COMP_LINE="${COMP_WORDS[*]}"
        COMP_POINT=${#COMP_LINE}
        COMPREPLY=()
        "$func" nvme-apstd "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf '%s\n' "${COMPREPLY[@]}"
}

fails=0
checked=0
top=" $(offered "" | tr '\n' ' ') "
for v in $verbs; do
        if [[ $top != *" $v "* ]]; then
                echo "FAIL: verb '$v' ($main_c) is not completed"
                fails=$((fails + 1))
                continue
        fi
        file=$(find "$src/src" -name "cmd-$v.c" | head -1)
        if [ -z "$file" ]; then
                echo "FAIL: verb '$v' has no cmd-$v.c"
                fails=$((fails + 1))
                continue
        fi
        want=$(option_names <"$file")
        grep -q CLI_COMMON_OPTIONS "$file" && want="$want $common"
        grep -q CLI_CONFIG_OPTION "$file" && want="$want $config"
        help=$("$bin" "$v" --help 2>&1 || true)
        got=" $(offered "$v" -- | tr '\n' ' ') "
        for o in $want; do
                if [[ $got == *" --$o "* ]]; then
                        checked=$((checked + 1))
                        continue
                fi
                # hidden: documented neither in --help nor in the man page (where '-' is '\-')
                if ! grep -q -- "--$o\b" <<<"$help" && ! grep -qF -- "\\-\\-${o//-/\\-}" "$man"; then
                        echo "ok   $v --$o is hidden (not in --help, not in nvme-apstd(8)): not completed"
                        continue
                fi
                echo "FAIL: $v --$o ($file) is not completed"
                fails=$((fails + 1))
        done
        for o in $got; do
                if ! grep -qx -- "${o#--}" <<<"$(tr ' ' '\n' <<<"$want")"; then
                        echo "FAIL: $v: the completion offers $o, which $file does not take"
                        fails=$((fails + 1))
                fi
        done
        echo "ok   $v: $(wc -w <<<"$got") options completed"
done
[ "$checked" -gt 0 ] || { echo "FAIL: no option checked"; exit 1; }
if [ "$fails" -ne 0 ]; then
        echo "$fails problem(s): update $script"
        exit 1
fi
echo "bash completion: every verb and documented option of the source is completed ($checked options)"
