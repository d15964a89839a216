#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# `nvme-apstd doctor` against constructed machines: the fake NVMe controller
# harness (tests/fake: sysfs, Identify, Get Features, the allow-list oracle),
# a constructed /proc (--proc-root: daemon process, interrupts, cmdline) and a
# saved kernel log (--kernel-log). Each case checks the exit status, the
# finding IDs and the evidence in the output, and that the controllers only
# ever saw Identify and Get Features 0x0C.
#
#   test-doctor.sh CASE                 (outer: builds the machine, runs the harness)
#   test-doctor.sh --inner CASE TMPDIR  (inside the harness: runs doctor, checks)
#
# Environment: NVME_APSTD, FAKE_TB, UMOCKDEV_WRAPPER, TEST_DATA_DIR (+ the fake's);
# NVME_APSTD_WRAPPER (e.g. valgrind ... --error-exitcode=99) runs doctor under it.
# Covers: src/cli/cmd-doctor.c, src/core/doctor.c, src/platform/sysfs.c, src/platform/nvme-admin.c.
set -u

fail() { echo "test-doctor $case: FAIL: $*"; exit 1; }

if [ "$1" != --inner ]; then
        case=$1
        tmp=$(mktemp -d /tmp/test-doctor-XXXXXX)
        trap 'rm -rf "$tmp"' EXIT
        intel=$TEST_DATA_DIR/idctrl/00-intel-ssdpekkw256g7.bin
        mkdir -p "$tmp/proc"
        echo "BOOT_IMAGE=/vmlinuz-6.1.0-28-amd64 root=/dev/nvme0n1p2 ro quiet" > "$tmp/proc/cmdline"
        : > "$tmp/kernel.log"
        : > "$tmp/nvme-apstd.conf"
        opts=
        # an nvme-apstd daemon process in the constructed /proc
        daemon_proc() {
                mkdir -p "$tmp/proc/4242"
                echo nvme-apstd > "$tmp/proc/4242/comm"
                printf '/usr/sbin/nvme-apstd\0' > "$tmp/proc/4242/cmdline"
        }
        case $case in
        apst-seed)
                # the seed drive with the kernel's table; the user's budget is 11 ms
                printf '[apst]\nmax_latency_us = 11000\n' > "$tmp/nvme-apstd.conf"
                # `nvme-apstd plan` running is not the daemon
                mkdir -p "$tmp/proc/4343"
                echo nvme-apstd > "$tmp/proc/4343/comm"
                printf 'nvme-apstd\0plan\0' > "$tmp/proc/4343/cmdline"
                opts="--ctrl nvme0,initial-table=kernel,idctrl=$intel" ;;
        apst-kernel-off)
                opts="--ctrl nvme0,idctrl=$intel --nvme-core default_ps_max_latency_us=0"
                echo "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p2 ro nvme_core.default_ps_max_latency_us=0" \
                        > "$tmp/proc/cmdline" ;;
        apst-firmware)
                opts="--ctrl nvme0,apsta=0" ;;
        dma-limit)
                # MDTS 7: 2^7 x 4 KiB = 512 KiB; swiotlb (memory encryption) caps requests at 256 KiB
                cp "$intel" "$tmp/mdts7.bin"
                printf '\007' | dd of="$tmp/mdts7.bin" bs=1 seek=77 conv=notrunc status=none
                opts="--ctrl nvme0,apste=1,initial-table=kernel,idctrl=$tmp/mdts7.bin"
                echo "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p2 ro mem_encrypt=on" > "$tmp/proc/cmdline"
                cat > "$tmp/kernel.log" <<'LOG'
6,1,0,-;Linux version 6.1.0-28-amd64 (debian-kernel@lists.debian.org)
6,20,0,-;Memory Encryption Features active: AMD SME
6,310,51000,-;software IO TLB: mapped [mem 0x00000000bbfdf000-0x00000000bffdf000] (64MB)
6,400,61000,-;nvme nvme0: pci function 0000:01:00.0
LOG
                echo "6,320,52000,-;AMD-Vi: AMD IOMMUv2 loaded and initialized" >> "$tmp/kernel.log"
                daemon_proc ;;
        cpu-slow-ramp)
                opts="--ctrl nvme0,initial-table=kernel,idctrl=$intel --cpufreq 2"
                mkdir -p "$tmp/proc/irq/40" "$tmp/proc/irq/41"
                echo 1 > "$tmp/proc/irq/40/effective_affinity_list"
                echo 0-1 > "$tmp/proc/irq/40/smp_affinity_list"
                echo 1 > "$tmp/proc/irq/41/effective_affinity_list" ;;
        clean)
                # apply wrote the configured table, a daemon runs, a CPU policy that does not ramp slowly
                opts="--ctrl nvme0,idctrl=$intel --cpufreq 2 --cpufreq-driver acpi-cpufreq"
                daemon_proc ;;
        hwp-boost)
                # the slow-ramp combination, but hwp_dynamic_boost is on: no finding
                opts="--ctrl nvme0,idctrl=$intel --cpufreq 1"
                mkdir -p "$tmp/proc/77"
                echo nvme-apstd > "$tmp/proc/77/comm"
                printf 'nvme-apstd\0run\0' > "$tmp/proc/77/cmdline" ;;
        identify-fails)
                opts="--ctrl nvme0 --fault nvme0:identify=EIO" ;;
        *) fail "unknown case" ;;
        esac
        # shellcheck disable=SC2086 # word splitting of $opts is wanted
        out=$("$UMOCKDEV_WRAPPER" "$FAKE_TB" --state-dir "$tmp/state" $opts -- "$0" --inner "$case" "$tmp" 2>&1)
        rc=$?
        printf '%s\n' "$out"
        [ $rc -eq 77 ] && exit 77
        printf '%s\n' "$out" | grep -q '^fake: violations: 0$' || fail "the allow-list oracle saw a violation"
        [ $rc -eq 0 ] || fail "harness exit $rc"
        echo "test-doctor $case: ok"
        exit 0
fi

case=$2 tmp=$3
out=$tmp/out.txt

# doctor [ARGS] -> $out, exit status in $rc
doctor() {
        # shellcheck disable=SC2086 # the wrapper is a command line
        ${NVME_APSTD_WRAPPER:-} "$NVME_APSTD" doctor --config "$tmp/nvme-apstd.conf" --proc-root "$tmp/proc" \
                --kernel-log "$tmp/kernel.log" "$@" > "$out" 2>&1
        rc=$?
        cat "$out"
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "exit status $rc, expected $1"; }
has() { grep -qF -- "$1" "$out" || fail "output lacks: $1"; }
hasnt() { ! grep -qF -- "$1" "$out" || fail "output has: $1"; }
# the finding IDs in the text output, in order, blank-separated
ids() { sed -n 's/^\[\([a-z-]*\)\] .*/\1/p' "$out" | tr '\n' ' ' | sed 's/ $//'; }
expect_ids() { [ "$(ids)" = "$1" ] || fail "findings '$(ids)', expected '$1'"; }
# Only Identify (0x06) and Get Features (0x0a) of FID 0x0C reached the controller
only_identify_and_get() {
        log=$FAKE_NVME_STATE/nvme0.log
        [ -f "$log" ] || return 0
        if grep -v -e 'opc=0x06 ' -e 'opc=0x0a .*cdw10=0x0000000c ' "$log"; then
                fail "a command other than Identify / Get Features 0x0C was sent"
        fi
}
queue() {
        q=/sys/class/nvme/nvme0/nvme0n1/queue
        echo "$1" > $q/max_hw_sectors_kb
        echo "$2" > $q/max_sectors_kb
}

case $case in
apst-seed)
        queue 4096 1280
        doctor
        expect_rc 1
        expect_ids "apst-state-over-budget apst-daemon-not-running"
        has "[apst-state-over-budget] nvme0: The table in force on nvme0 sends it to ps4 (12000 µs)"
        has "Get Features 0x0C (table in force) nvme0 = ps0–ps3 → ps4 after 100 ms; worst wake 12.0 ms"
        has "Identify nvme0 ps4 = non-operational, enlat 2000 µs, exlat 10000 µs"
        has "$tmp/nvme-apstd.conf [apst] max_latency_us = 11000"
        has "/sys/class/nvme/nvme0/power/pm_qos_latency_tolerance_us = 100000"
        has "echo 9999 > /sys/class/nvme/nvme0/power/pm_qos_latency_tolerance_us"
        has "nvme_core.default_ps_max_latency_us=9999"
        has "nvme-apstd daemon = no process in $tmp/proc"
        has "systemctl enable --now nvme-apstd"
        # the JSON carries the same, in the pinned schema
        doctor --json
        expect_rc 1
        python3 - "$out" "$tmp" <<'PY' || fail "JSON schema"
import json, sys
d = json.load(open(sys.argv[1]))
assert list(d) == ["version", "exit_status", "findings", "examined", "skipped"], list(d)
assert d["version"] == 1 and d["exit_status"] == 1
assert [f["id"] for f in d["findings"]] == ["apst-state-over-budget", "apst-daemon-not-running"]
for f in d["findings"]:
    assert list(f) == ["id", "subject", "title", "evidence", "why", "fix"], list(f)
    assert f["subject"] == "nvme0" and f["title"] and f["why"] and f["fix"]
    assert all(list(e) == ["source", "value"] for e in f["evidence"])
    assert all(isinstance(x, str) for x in f["fix"])
for n in d["examined"]:
    assert list(n) == ["subject", "text"], list(n)
for n in d["skipped"]:
    assert list(n) == ["subject", "text", "error"], list(n)
ev = {e["source"]: e["value"] for e in d["findings"][0]["evidence"]}
assert ev["Identify nvme0 ps4"].startswith("non-operational, enlat 2000 µs, exlat 10000 µs"), ev
assert ev[sys.argv[2] + "/nvme-apstd.conf [apst] max_latency_us"] == "11000", ev
print("json schema: ok")
PY
        ;;
apst-kernel-off)
        queue 4096 1280
        doctor
        expect_rc 1
        expect_ids "apst-kernel-disabled"
        has "[apst-kernel-disabled] nvme0: APST is off on nvme0 (APSTE=0), although the drive supports it"
        has "/sys/module/nvme_core/parameters/default_ps_max_latency_us = 0"
        has "/proc/cmdline (nvme_core.*) = nvme_core.default_ps_max_latency_us=0"
        has "Get Features 0x0C (table in force) nvme0 = APST disabled"
        has "Remove nvme_core.default_ps_max_latency_us=0 from the kernel command line"
        ;;
apst-firmware)
        queue 4096 1280
        doctor
        expect_rc 1
        expect_ids "apst-firmware-unsupported"
        has "Identify apsta = 0"
        # a drive without APST is not asked for its APST table
        ! grep -q 'opc=0x0a' "$FAKE_NVME_STATE/nvme0.log" || fail "Get Features sent to a drive without APST"
        ;;
dma-limit)
        queue 256 256
        "$NVME_APSTD" apply > /dev/null 2>&1 || fail "apply"
        : > "$FAKE_NVME_STATE/nvme0.log"
        doctor nvme0
        expect_rc 1
        expect_ids "request-size-dma-limit"
        has "[request-size-dma-limit] nvme0: Requests to nvme0n1 are capped at 256 KiB by the DMA mapping layer; the drive and driver allow 512 KiB"
        has "Identify mdts = 7: 2^7 × 4 KiB = 512 KiB"
        has "/sys/class/nvme/nvme0/nvme0n1/queue/max_hw_sectors_kb = 256"
        has "/proc/cmdline (iommu, swiotlb, memory encryption) = mem_encrypt=on"
        has "kernel log = Memory Encryption Features active: AMD SME"
        has "kernel log = software IO TLB: mapped [mem 0x00000000bbfdf000-0x00000000bffdf000] (64MB)"
        has "kernel log = AMD-Vi: AMD IOMMUv2 loaded and initialized"
        hasnt "pci function"
        has "2.0 to 1.5 GB/s"
        # a lowered soft limit on top
        queue 1024 128
        doctor
        expect_rc 1
        expect_ids "request-size-soft-limit"
        has "nvme0n1/max_sectors_kb is 128 KiB, below both the hardware limit (1024 KiB)"
        has "echo 1024 > /sys/class/nvme/nvme0/nvme0n1/queue/max_sectors_kb"
        ;;
cpu-slow-ramp)
        queue 4096 1280
        # interrupts 40 and 41 go to CPU 1 only
        mkdir -p /sys/class/nvme/nvme0/device/msi_irqs
        : > /sys/class/nvme/nvme0/device/msi_irqs/40
        : > /sys/class/nvme/nvme0/device/msi_irqs/41
        echo 0 > /sys/devices/system/cpu/intel_pstate/hwp_dynamic_boost
        echo 20 > /sys/devices/system/cpu/intel_pstate/min_perf_pct
        doctor
        expect_rc 1
        expect_ids "apst-daemon-not-running cpu-slow-ramp"
        has "[cpu-slow-ramp] cpu1: CPU 1 ramps its frequency slowly"
        has "/sys/devices/system/cpu/intel_pstate/status = active"
        has "/sys/devices/system/cpu/intel_pstate/hwp_dynamic_boost = 0"
        has "/sys/devices/system/cpu/intel_pstate/min_perf_pct = 20"
        has "CPUs taking the NVMe interrupts (effective_affinity_list) = 1"
        has "/sys/devices/system/cpu/cpu1/cpufreq/ (CPUs 1) = scaling_driver intel_pstate, scaling_governor powersave, energy_performance_preference balance_performance"
        hasnt "/sys/devices/system/cpu/cpu0/cpufreq/"
        has "cpus = nvme-irq"
        has "energy_performance_preference = performance"
        has "echo 1 > /sys/devices/system/cpu/intel_pstate/hwp_dynamic_boost"
        ;;
hwp-boost)
        queue 4096 1280
        "$NVME_APSTD" apply > /dev/null 2>&1 || fail "apply"
        : > "$FAKE_NVME_STATE/nvme0.log"
        echo 1 > /sys/devices/system/cpu/intel_pstate/hwp_dynamic_boost
        doctor
        expect_rc 0
        expect_ids ""
        has "No problems found."
        ;;
clean)
        queue 4096 1280
        "$NVME_APSTD" apply > /dev/null 2>&1 || fail "apply"
        : > "$FAKE_NVME_STATE/nvme0.log"    # from here on only doctor's commands
        doctor
        expect_rc 0
        expect_ids ""
        has "nvme0: APST table in force: ps0–ps2 → ps3 after"
        has "nvme0: request size: nvme0n1 max_hw_sectors_kb 4096, max_sectors_kb 1280"
        has "cpu: CPU frequency: 2 policies"
        has "No problems found."
        doctor --json
        expect_rc 0
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["findings"] == [] and d["exit_status"] == 0' \
                "$out" || fail "clean JSON"
        ;;
identify-fails)
        doctor
        expect_rc 2
        has "nvme0: Identify Controller failed:"
        has "No problems found, but not everything could be looked at."
        ;;
esac
only_identify_and_get
echo "test-doctor $case: checks passed"
