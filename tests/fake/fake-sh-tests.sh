#!/bin/sh
# fake-sh-tests.sh CASE: shell-level checks of the fake's sysfs and control channel, run as the
# harness's child (umockdev-wrapper fake-nvme-tb OPTIONS -- fake-sh-tests.sh CASE). Prints each
# check; exits 1 on the first failure.
# Covers: the harness itself: tests/fake/fake-nvme-tb.c, tests/fake/fakectrl.c,
# tests/fake/fake-nvme-ctl.c.
set -u
ctl=${FAKE_NVME_CTL_PROG:?not run under fake-nvme-tb}
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok:   $*"; }
expect_file() { # PATH EXPECTED-CONTENT (exact, newline included by the caller's printf)
    got=$(cat "$1" 2>&1) || fail "cannot read $1: $got"
    [ "$got" = "$2" ] || fail "$1 = '$got', expected '$2'"
    ok "$1 = '$got'"
}

case ${1:-} in
multipath)
    zero="       0        0        0        0        0        0        0        0        0        0        0        0        0        0        0        0        0"
    nums="5 0 40 3 7 0 56 9 0 12 12 0 0 0 0 0 0"
    want="       5        0       40        3        7        0       56        9        0       12       12        0        0        0        0        0        0"
    case $(readlink /sys/block/nvme0n1) in *nvme-subsystem/nvme-subsys0/nvme0n1) ok "nvme0n1 under the subsystem" ;;
        *) fail "nvme0n1 -> $(readlink /sys/block/nvme0n1)" ;; esac
    [ -e /sys/class/block/nvme0c0n1/stat ] || fail "no hidden nvme0c0n1"
    [ ! -e /dev/nvme0c0n1 ] || fail "hidden disk has a /dev node"
    [ -e /dev/nvme0n1 ] || fail "no /dev/nvme0n1"
    expect_file /sys/class/block/nvme0c0n1/hidden 1
    "$ctl" stat nvme0 nvme0c0n1 "$nums" || fail "ctl stat"
    expect_file /sys/class/block/nvme0c0n1/stat "$want"
    expect_file /sys/block/nvme0n1/stat "$zero"
    "$ctl" stat nvme0 nvme0n1 "1 2 3" 2>/dev/null && fail "ctl stat accepted 3 numbers"
    "$ctl" stat nvme0 nvme1n1 "$nums" 2>/dev/null && fail "ctl stat accepted another controller's disk"
    ok "bad stat requests refused"
    ;;
transport)
    expect_file /sys/class/nvme/nvme1/transport tcp
    expect_file /sys/class/nvme/nvme1/address "traddr=127.0.0.1,trsvcid=4421"
    [ ! -e /sys/class/nvme/nvme1/device ] || fail "fabrics controller has a device link"
    expect_file /sys/class/nvme/nvme0/transport pcie
    expect_file /sys/class/nvme/nvme0/device/vendor 0x8086
    expect_file /sys/class/nvme/nvme0/device/device 0xf1a5
    expect_file /sys/class/nvme/nvme0/state live
    [ -e /sys/class/nvme/nvme0/power/pm_qos_latency_tolerance_us ] && fail "pm_qos file without APST enabled"
    expect_file /sys/class/nvme/nvme2/power/pm_qos_latency_tolerance_us 100000
    expect_file /sys/class/nvme/nvme2/model "nvme-apstd fake controller              "
    expect_file /sys/class/nvme/nvme2/serial "FAKE0001            "
    expect_file /sys/class/nvme-subsystem/nvme-subsys0/model "INTEL SSDPEKKW256G7                     "
    [ ! -e /sys/class/dmi/id/board_name ] || fail "board_name present without --board"
    expect_file /sys/class/dmi/id/sys_vendor QEMU
    expect_file /sys/module/nvme_core/parameters/default_ps_max_latency_us 100000
    ;;
board)
    expect_file /sys/class/dmi/id/board_name "PRIME B350M-A"
    expect_file /sys/class/dmi/id/board_vendor "ASUSTeK COMPUTER INC."
    expect_file /sys/module/nvme_core/parameters/default_ps_max_latency_us 0
    ;;
control)
    dir=${FAKE_NVME_STATE:?}
    printf 'apste=1\n# ps0 -> ps3 after 300 ms\n0x12c18\n' > "$dir/in.table"
    "$ctl" reset nvme0 "$dir/in.table" || fail "ctl reset with a table"
    head -2 "$dir/nvme0.table" > "$dir/head"
    expect_file "$dir/head" "apste=1
0x0000000000012c18"
    "$ctl" table nvme0 > "$dir/t2" || fail "ctl table"
    cmp -s "$dir/t2" "$dir/nvme0.table" || fail "ctl table differs from nvme0.table"
    ok "ctl table = nvme0.table"
    "$ctl" set-attr nvme0 state resetting || fail "set-attr"
    expect_file /sys/class/nvme/nvme0/state resetting
    "$ctl" reset nvme0 || fail "ctl reset"
    expect_file /sys/class/nvme/nvme0/state live
    head -2 "$dir/nvme0.table" > "$dir/head"
    expect_file "$dir/head" "apste=0
0x0000000000000000"
    "$ctl" reset nvme9 2>/dev/null; [ $? = 1 ] || fail "reset of a missing controller not refused with 1"
    printf 'apste=1\nxyz\n' > "$dir/bad.table"
    "$ctl" reset nvme0 "$dir/bad.table" 2>/dev/null && fail "bad table accepted"
    "$ctl" fault nvme0 bogus=1 2>/dev/null && fail "bad fault accepted"
    FAKE_NVME_CTL=/nonexistent "$ctl" table nvme0 2>/dev/null; [ $? = 2 ] || fail "no harness: not 2"
    ok "bad requests refused"
    ;;
cpufreq)
    c=/sys/devices/system/cpu
    expect_file $c/cpu1/cpufreq/affected_cpus "0 1"
    expect_file $c/cpufreq/policy0/related_cpus "0 1"
    expect_file $c/cpu2/cpufreq/affected_cpus 2
    [ ! -e $c/cpufreq/policy1 ] || fail "policy1 exists although cpu1 shares policy0"
    expect_file $c/cpu0/cpufreq/scaling_available_governors "performance powersave"
    expect_file $c/cpu0/cpufreq/energy_performance_available_preferences \
        "default performance balance_performance balance_power power "
    expect_file $c/online 0-2
    # written through cpu1's link, seen on cpu0: one shared policy
    printf performance > $c/cpu1/cpufreq/scaling_governor
    expect_file $c/cpu0/cpufreq/scaling_governor performance
    # O_WRONLY without O_TRUNC (as libcpupower does): the preload must truncate
    printf power | dd of=$c/cpu2/cpufreq/energy_performance_preference conv=notrunc status=none
    expect_file $c/cpu2/cpufreq/energy_performance_preference power
    ;;
cpufreq-acpi)
    c=/sys/devices/system/cpu
    expect_file $c/cpu0/cpufreq/scaling_driver acpi-cpufreq
    expect_file $c/cpu0/cpufreq/scaling_governor schedutil
    [ ! -e $c/cpu0/cpufreq/energy_performance_preference ] || fail "EPP on acpi-cpufreq"
    ;;
*)
    echo "usage: $0 multipath|transport|board|control|cpufreq|cpufreq-acpi" >&2; exit 99 ;;
esac
echo "fake-sh-tests.sh $1: ok"
