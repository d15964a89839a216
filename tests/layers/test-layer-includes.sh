#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# No header of a higher layer is reachable from a lower one (doc/architecture.md "Layers").
# tests/layers/probe.c is preprocessed by the project's C compiler with exactly one layer's
# include path (src/meson.build layer_inc_dirs) and #include PROBE_HEADER:
#   - every header of every higher layer, by its name ("manager.h"), by its folder
#     ("daemon/manager.h") and by its path from the tree's root ("include/daemon/manager.h"),
#     must FAIL with the compiler's "not found" for that very name;
#   - every header of the layer itself and of the layers below must be FOUND (the control:
#     were the path empty or the probe broken, this half fails).
# Then no #include in src/ or include/ names a folder ("../x.h", "core/x.h"): a quoted include
# is looked up beside the including file first, which no include path can stop.
#   test-layer-includes.sh SRCROOT CONFIGDIR CC... -- LAYER=DIR:DIR... (lowest layer first)
set -uo pipefail
src=${1:?usage}; config_dir=${2:?usage}
shift 2
cc=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do cc+=("$1"); shift; done
shift
[ ${#cc[@]} -gt 0 ] && [ $# -gt 0 ] || { echo "usage: $0 SRCROOT CONFIGDIR CC... -- LAYER=DIRS..." >&2; exit 99; }
probe=$src/tests/layers/probe.c
layers=("$@")
fail=0 found=0 refused=0

# preprocess PROBE_HEADER with the include args of layer $1; prints the compiler's messages
probe() {  # dirs header
        local args=() d
        IFS=: read -ra dirs <<<"$1"
        for d in "${dirs[@]}"; do args+=(-I "$src/$d"); done
        args+=(-I "$config_dir")
        "${cc[@]}" -E -D_GNU_SOURCE "${args[@]}" -DPROBE_HEADER="\"$2\"" "$probe" -o /dev/null 2>&1
}

for ((i = 0; i < ${#layers[@]}; i++)); do
        name=${layers[i]%%=*}; dirs=${layers[i]#*=}
        # the control: the layer's own headers and those below are found
        IFS=: read -ra own <<<"$dirs"
        for d in "${own[@]}"; do
                for h in "$src/$d"/*.h; do
                        if ! out=$(probe "$dirs" "${h##*/}"); then
                                echo "FAIL $name: its own or a lower layer's ${h##*/} does not preprocess:"
                                echo "$out" | head -5
                                fail=1
                        fi
                        found=$((found + 1))
                done
        done
        # every higher layer's header, by every name, is not found
        for ((j = i + 1; j < ${#layers[@]}; j++)); do
                upper=${layers[j]#*=}; upper=${upper##*:}      # the higher layer's own folder
                for h in "$src/$upper"/*.h; do
                        h=${h##*/}
                        for form in "$h" "${upper#include/}/$h" "$upper/$h"; do
                                out=$(probe "$dirs" "$form")
                                rc=$?
                                if [ "$rc" -eq 0 ]; then
                                        echo "FAIL $name reaches the higher layer's \"$form\""
                                        fail=1
                                elif ! grep -q -- "$form: No such file\|'$form' file not found" <<<"$out"; then
                                        echo "FAIL $name: \"$form\" failed for another reason than not found:"
                                        echo "$out" | head -5
                                        fail=1
                                fi
                                refused=$((refused + 1))
                        done
                done
        done
done

# no include names a folder: a layer could otherwise climb out beside the including file
if bad=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' "$src/src" "$src/include" \
         --include='*.c' --include='*.h'); then
        echo "FAIL an #include names a folder:"
        echo "$bad"
        fail=1
fi

[ "$found" -gt 0 ] && [ "$refused" -gt 0 ] || { echo "FAIL nothing probed ($found found, $refused refused)"; exit 1; }
echo "layers: $found headers found where allowed, $refused upward names refused (${#layers[@]} layers)"
exit "$fail"
