#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# cpupin.c + cpufreq-sysfs.c (real libcpupower) against a fake cpufreq tree
# laid out as the kernel does it: /sys/devices/system/cpu/cpufreq/policyN/
# holding the attributes, and cpuN/cpufreq a link to its policy. /sys is
# redirected with umockdev's preload (UMOCKDEV_DIR = the tree);
# sysfs-preload.so adds O_TRUNC and kernel-like refusals.
#
#   policy0: cpu0-1, intel_pstate (shared policy, EPP)
#   policy2: cpu2,   intel_pstate
#   policy3: cpu3,   acpi-cpufreq (no EPP)
#
# usage: test-cpupin-sysfs.sh CPUPIN_DRIVER SYSFS_PRELOAD
# Covers: src/engine/cpupin.c, src/platform/cpufreq-sysfs.c, src/core/cpufreq-policy.c,
# src/core/cpuset.c (through tests/cpupin-driver.c).
set -u

DRIVER=$1
PRELOAD=$2
UMOCKDEV_PRELOAD=libumockdev-preload.so.0
CPU=sys/devices/system/cpu

if ! LD_PRELOAD=$UMOCKDEV_PRELOAD /bin/true 2>/dev/null ||
   LD_PRELOAD=$UMOCKDEV_PRELOAD /bin/true 2>&1 | grep -q "cannot be preloaded"; then
        echo "SKIP: $UMOCKDEV_PRELOAD cannot be preloaded (install umockdev)"
        exit 77
fi

TOP=$(mktemp -d /tmp/test-cpupin-sysfs.XXXXXX)
trap 'rm -rf "$TOP"' EXIT
FAILED=0
PASSED=0
CASE=

fail() {
        echo "FAIL [$CASE]: $*"
        FAILED=$((FAILED + 1))
}

ok() {
        echo "ok   [$CASE]: $*"
        PASSED=$((PASSED + 1))
}

check() {       # check DESCRIPTION COMMAND...
        local what=$1
        shift
        if "$@"; then ok "$what"; else fail "$what"; fi
}

# policy DIR N "CPU..." DRIVER   (affected_cpus is blank-separated, "0 1", not a list)
policy() {
        local p=$1/$CPU/cpufreq/policy$2
        mkdir -p "$p"
        echo "$3" > "$p/affected_cpus"
        echo "$3" > "$p/related_cpus"
        echo "$4" > "$p/scaling_driver"
        if [ "$4" = intel_pstate ]; then
                echo powersave > "$p/scaling_governor"
                echo "performance powersave" > "$p/scaling_available_governors"
                echo 800000 > "$p/cpuinfo_min_freq"
                echo 3600000 > "$p/cpuinfo_max_freq"
                echo 800000 > "$p/scaling_min_freq"
                echo 3600000 > "$p/scaling_max_freq"
                echo balance_performance > "$p/energy_performance_preference"
                echo "default performance balance_performance balance_power power" \
                        > "$p/energy_performance_available_preferences"
        else
                echo schedutil > "$p/scaling_governor"
                echo "conservative ondemand userspace powersave performance schedutil " \
                        > "$p/scaling_available_governors"
                echo 1200000 > "$p/cpuinfo_min_freq"
                echo 2400000 > "$p/cpuinfo_max_freq"
                echo 1200000 > "$p/scaling_min_freq"
                echo 2400000 > "$p/scaling_max_freq"
        fi
}

# cpu DIR N POLICY|-   (- = no cpufreq)
cpu() {
        mkdir -p "$1/$CPU/cpu$2"
        [ "$2" = 0 ] || echo 1 > "$1/$CPU/cpu$2/online"     # cpu0 has no online file on x86
        [ "$3" = - ] || ln -s "../cpufreq/policy$3" "$1/$CPU/cpu$2/cpufreq"
}

mktree() {
        mkdir -p "$1/$CPU"
        echo 0-3 > "$1/$CPU/online"
        policy "$1" 0 "0 1" intel_pstate
        policy "$1" 2 2 intel_pstate
        policy "$1" 3 3 acpi-cpufreq
        cpu "$1" 0 0
        cpu "$1" 1 0
        cpu "$1" 2 2
        cpu "$1" 3 3
        cp -a "$1/sys" "$1/orig"
}

# Start a case: fresh tree in $T, runtime dir $T/run.
begin() {
        CASE=$1
        T=$TOP/$1
        mkdir -p "$T"
        mktree "$T"
        RUN=$T/run
}

run() {         # run STEP... (stdout > $T/out, stderr > $T/err)
        env UMOCKDEV_DIR="$T" LD_PRELOAD="$PRELOAD:$UMOCKDEV_PRELOAD" \
            NVME_APSTD_LOG_TARGET=console NVME_APSTD_LOG_FIELDS=1 \
            "$DRIVER" "$RUN" "$@" > "$T/out" 2> "$T/err"
        local rc=$?
        sed "s/^/    | /" "$T/err"
        return $rc
}

# Value of a policy attribute, as the kernel would show it (trailing newline dropped).
val() {         # val POLICY ATTR
        cat "$T/$CPU/cpufreq/policy$1/$2"
}

# Every file of policy N equals what it was at the start (sysfs ignores a missing newline).
pristine() {    # pristine N
        local f
        for f in "$T/orig/devices/system/cpu/cpufreq/policy$1"/*; do
                [ "$(cat "$f")" = "$(cat "$T/$CPU/cpufreq/policy$1/${f##*/}")" ] || {
                        echo "    policy$1/${f##*/}: '$(cat "$T/$CPU/cpufreq/policy$1/${f##*/}")'" \
                             "!= '$(cat "$f")'"
                        return 1
                }
        done
}

all_pristine() {
        pristine 0 && pristine 2 && pristine 3
}

pinned_perf() { # pinned_perf N: governor performance, min = max = hardware max
        [ "$(val "$1" scaling_governor)" = performance ] &&
        [ "$(val "$1" scaling_min_freq)" = "$(val "$1" cpuinfo_max_freq)" ] &&
        [ "$(val "$1" scaling_max_freq)" = "$(val "$1" cpuinfo_max_freq)" ]
}

conf() {        # conf NAME LINES...: write $T/NAME.conf with a [cpu] section
        local name=$1
        shift
        { echo "[cpu]"; printf '%s\n' "$@"; } > "$T/$name.conf"
        echo "$T/$name.conf"
}

PERF=(pin=always governor=performance min_freq=max max_freq=max energy_performance_preference=performance)

# --- always, all CPUs: pin, then restore in the same process (a clean stop)
begin always
C=$(conf perf "${PERF[@]}")
check "pin exits 0" run "apply:$C"
check "policy0 pinned" pinned_perf 0
check "policy0 epp" [ "$(val 0 energy_performance_preference)" = performance ]
check "policy3 pinned" pinned_perf 3
check "policy3 has still no epp" [ ! -e "$T/$CPU/cpufreq/policy3/energy_performance_preference" ]
check "record written" [ -s "$RUN/cpufreq-saved" ]
check "record holds each policy once, as found" diff -u - "$RUN/cpufreq-saved" <<'EOF'
# nvme-apstd cpufreq record v1
policy cpu=0 cpus=0-1 governor=powersave min=800000 max=3600000 epp=balance_performance
policy cpu=2 cpus=2 governor=powersave min=800000 max=3600000 epp=balance_performance
policy cpu=3 cpus=3 governor=schedutil min=1200000 max=2400000 epp=-
EOF
check "one pin entry per group of equal values" [ "$(grep -c 'MESSAGE_ID=009d043a5ac8476c9303ccd99131bf71' "$T/err")" = 2 ]
check "pin entry fields" grep -q 'CPUFREQ_CPUS=0-2, CPUFREQ_GOVERNOR=performance, CPUFREQ_MIN_KHZ=3600000, CPUFREQ_MAX_KHZ=3600000, CPUFREQ_EPP=performance, CPUFREQ_REASON=start' "$T/err"
check "recover exits 0" run recover
check "all policies back as found" all_pristine
check "record removed" [ ! -e "$RUN/cpufreq-saved" ]
check "release entry" grep -q 'MESSAGE_ID=a8811f1957544ca886ec994075c42986, CPUFREQ_CPUS=0-2, CPUFREQ_GOVERNOR=powersave' "$T/err"

begin clean-stop
C=$(conf perf "${PERF[@]}")
check "pin + release exits 0" run "apply:$C" release
check "all policies back as found" all_pristine
check "record removed" [ ! -e "$RUN/cpufreq-saved" ]

# --- reload: drop keys, then pin = off
begin reload
C1=$(conf a pin=always max_freq=50% energy_performance_preference=power)
C2=$(conf b pin=always governor=performance)
C3=$(conf c pin=off)
check "pin, reload, reload off" run "apply:$C1" "apply:$C2" "apply:$C3"
check "all policies back as found" all_pristine
check "record removed" [ ! -e "$RUN/cpufreq-saved" ]
check "released with the reason" grep -q 'CPUFREQ_REASON=reload' "$T/err"

# --- max_freq as a percentage of the hardware range (scaling_max_freq written)
begin max-percent
C=$(conf half pin=always max_freq=50%)
check "pin max_freq=50%" run "apply:$C"
check "policy0 max 2200000" [ "$(val 0 scaling_max_freq)" = 2200000 ]
check "policy3 max 1800000" [ "$(val 3 scaling_max_freq)" = 1800000 ]
check "policy0 governor as found" [ "$(val 0 scaling_governor)" = powersave ]
check "policy0 min as found" [ "$(val 0 scaling_min_freq)" = 800000 ]
check "restore" run recover
check "all policies back as found" all_pristine

# --- cpus = LIST, one CPU of a shared policy
begin list
C=$(conf one "${PERF[@]}" cpus=1)
check "pin cpus=1" run "apply:$C"
check "policy0 (cpu0-1) pinned" pinned_perf 0
check "policy2 untouched" pristine 2
check "policy3 untouched" pristine 3
check "restore" run recover
check "all policies back as found" all_pristine

# --- cpus = nvme-irq, from fake msi_irqs + /proc/irq
begin nvme-irq
I=$T/irq
D=bus/pci/devices/0000:01:00.0
mkdir -p "$I/sys/$D/msi_irqs/40" "$I/sys/$D/msi_irqs/41" "$I/sys/$D/msi_irqs/42"
mkdir -p "$I/proc/irq/40" "$I/proc/irq/41" "$I/proc/irq/42"
echo 0-3 > "$I/proc/irq/40/smp_affinity_list"; echo 2 > "$I/proc/irq/40/effective_affinity_list"
echo 0-3 > "$I/proc/irq/41/smp_affinity_list"; echo 3 > "$I/proc/irq/41/effective_affinity_list"
echo 3 > "$I/proc/irq/42/smp_affinity_list"             # no effective list: the mask counts
D2=bus/pci/devices/0000:02:00.0                          # no MSI: legacy `irq`
mkdir -p "$I/sys/$D2" "$I/proc/irq/17"; echo 17 > "$I/sys/$D2/irq"; echo 3 > "$I/proc/irq/17/effective_affinity_list"
C=$(conf irq "${PERF[@]}" cpus=nvme-irq)
check "pin cpus=nvme-irq" run "irq:$I/sys:$I/proc:$D,$D2" "apply:$C"
check "irq CPUs 2-3" grep -qx "irq cpus: 2-3" "$T/out"
check "policy0 untouched" pristine 0
check "policy2 pinned" pinned_perf 2
check "policy3 pinned" pinned_perf 3
check "restore" run recover
check "all policies back as found" all_pristine
check "no interrupts: error" sh -c "! '$DRIVER' '$RUN' 'irq:$I/sys:$I/proc:bus/pci/devices/none' 2>/dev/null"

# --- SIGKILL while pinned, then a new start restores the record
begin sigkill
C=$(conf perf "${PERF[@]}")
env UMOCKDEV_DIR="$T" LD_PRELOAD="$PRELOAD:$UMOCKDEV_PRELOAD" NVME_APSTD_LOG_TARGET=console \
    "$DRIVER" "$RUN" "apply:$C" hang > "$T/fifo-out" 2> "$T/err" &
PID=$!
for _ in $(seq 100); do grep -q ready "$T/fifo-out" 2>/dev/null && break; sleep 0.05; done
check "daemon stand-in pinned and waiting" grep -q ready "$T/fifo-out"
check "pinned while running" pinned_perf 0
kill -KILL $PID
wait $PID 2>/dev/null
check "still pinned after SIGKILL" pinned_perf 2
check "record left behind" [ -s "$RUN/cpufreq-saved" ]
check "next start restores first" run recover "apply:$(conf off pin=off)"
check "all policies back as found" all_pristine
check "record removed" [ ! -e "$RUN/cpufreq-saved" ]
check "says why" grep -q "an earlier instance did not stop cleanly" "$T/err"

# --- SIGTERM: a clean stop restores
begin sigterm
C=$(conf perf "${PERF[@]}")
env UMOCKDEV_DIR="$T" LD_PRELOAD="$PRELOAD:$UMOCKDEV_PRELOAD" NVME_APSTD_LOG_TARGET=console \
    "$DRIVER" "$RUN" "apply:$C" hang > "$T/fifo-out" 2> "$T/err" &
PID=$!
for _ in $(seq 100); do grep -q ready "$T/fifo-out" 2>/dev/null && break; sleep 0.05; done
check "pinned while running" pinned_perf 0
kill -TERM $PID
wait $PID
check "exit 0 on SIGTERM" [ $? = 0 ]
check "all policies back as found" all_pristine
check "record removed" [ ! -e "$RUN/cpufreq-saved" ]

# --- a CPU that refuses a value: EPP with EBUSY (our own writer), min with EINVAL (libcpupower's)
begin refuse
C=$(conf perf "${PERF[@]}")
export CPUPIN_TEST_REFUSE="/$CPU/cpu2/cpufreq/energy_performance_preference=EBUSY;/$CPU/cpu3/cpufreq/scaling_min_freq=EINVAL"
check "pin exits 0 despite refusals" run "apply:$C"
unset CPUPIN_TEST_REFUSE
check "log names CPU, file, value, errno (EPP)" grep -q "cpu2: the kernel refused energy_performance_preference=performance: Device or resource busy; leaving cpu2 as it was" "$T/err"
check "log names CPU, file, value, errno (libcpupower)" grep -q "cpu3: the kernel refused scaling_min_freq=2400000: Invalid argument; leaving cpu3 as it was" "$T/err"
check "structured failure entry" grep -q "MESSAGE_ID=91ad952379db4460887dda3dc8dcda4c, CPUFREQ_CPUS=2, CPUFREQ_CPU=2, CPUFREQ_ATTR=energy_performance_preference, CPUFREQ_VALUE=performance" "$T/err"
check "policy2 left as it was" pristine 2
check "policy3 left as it was" pristine 3
check "the others carry on: policy0 pinned" pinned_perf 0
check "record lists only policy0" [ "$(grep -c '^policy' "$RUN/cpufreq-saved")" = 1 ]
check "restore" run recover
check "all policies back as found" all_pristine

# --- governor not available: refused before writing anything
begin bad-governor
C=$(conf sched pin=always governor=schedutil)
check "pin exits 0" run "apply:$C"
check "policy0 left as it was" pristine 0
check "policy3 pinned to schedutil (already)" pristine 3
check "log says why" grep -q "cpu0-1: not pinning: governor 'schedutil' is not in scaling_available_governors (performance powersave)" "$T/err"

# --- our EPP writer truncates by itself (no O_TRUNC preload)
begin epp-otrunc
C=$(conf power pin=always energy_performance_preference=power)
env UMOCKDEV_DIR="$T" LD_PRELOAD="$UMOCKDEV_PRELOAD" "$DRIVER" "$RUN" "apply:$C" 2> "$T/err"
check "EPP 'power' over 'balance_performance' is exact" [ "$(cat "$T/$CPU/cpufreq/policy0/energy_performance_preference")" = power ]

# --- plan
begin describe
C=$(conf perf "${PERF[@]}" cpus=0-2,7)
check "describe exits 0" run "describe:$C"
check "describe text" diff -u - "$T/out" <<'EOF'
CPU frequency: pin = always, pinned while the daemon runs
cpu7: no cpufreq (offline or absent), ignored
cpu0-1: governor performance, min 3600000 kHz (max), max 3600000 kHz (max), epp performance
cpu2: governor performance, min 3600000 kHz (max), max 3600000 kHz (max), epp performance
EOF
check "describe writes nothing" all_pristine

# --- bad CPU list: rejected with a message naming the key
begin bad-list
C=$(conf bad pin=always cpus=3-1)
if run "apply:$C"; then fail "cpus=3-1 accepted"; else ok "cpus=3-1 rejected"; fi
check "message names [cpu] cpus" grep -q "cpu.*cpus" "$T/err"
check "nothing written" all_pristine

# --- no cpufreq at all (VM, container)
begin no-cpufreq
rm -rf "$T/sys" "$T/orig"
mkdir -p "$T/$CPU/cpu0" "$T/$CPU/cpu1"
echo 0-1 > "$T/$CPU/online"
cp -a "$T/sys" "$T/orig"
C=$(conf perf "${PERF[@]}")
check "exits 0" run "apply:$C" "apply:$C" release
check "exactly one line" [ "$(wc -l < "$T/err")" = 1 ]
check "says pinning is unavailable" grep -q "CPU frequency pinning is unavailable: " "$T/err"
check "nothing written" diff -r "$T/orig" "$T/sys"
check "no record" [ ! -e "$RUN/cpufreq-saved" ]

echo "# $PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
