#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`nvme-apstd apply` and `plan` against the fake controller. Run by
tests/integration/meson.build as: umockdev-wrapper fake-nvme-tb --ctrl ... --
test-apply.py SCENARIO. The harness fails the test on any admin command outside
the allow-list.
Covers: src/cli/cmd-apply.c, src/cli/cmd-plan.c, src/engine/apply.c, src/engine/controller.c,
src/core/apst.c, src/core/idctrl.c, src/core/device.c, src/platform/nvme-admin.c,
src/platform/sysfs.c, src/platform/apst-record.c."""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from apstd_test import *  # noqa: F401,F403

require_harness()
scenario = sys.argv[1]
KERNEL = write_config("[apst]\npolicy = kernel\n")
BUDGET = write_config("[apst]\npolicy = budget\n")
SAMSUNG = os.path.join(DATA, "idctrl", "05-samsung-ssd-970-evo-plus-2tb.bin")
WDC = os.path.join(DATA, "idctrl", "14-wdc-wds500g2b0c-00pxh0.bin")

# Worked out by hand from the kernel's rules (doc/kernel-apst.md) for the Samsung 970 EVO
# Plus (ps3 210+1200 µs, ps4 2000+8000 µs): walking down from ps4, ps4's total
# 10000 µs <= 15000 makes it the primary target after 100 ms; ps3 (1410 µs) is
# skipped because a primary exists; ps0..ps3 all point at ps4 after 100 ms:
# (100 << 8) | (4 << 3) = 0x6420.
SAMSUNG_KERNEL = [0x6420] * 4 + [0] * 28


def apply_sequence_ok(name):
    """Identify, then Get (remember), Set, Get (verify): nothing else, in that order."""
    ops = [d.get("opc") for d in read_log(name)]
    return ops == [IDENTIFY, GET, SET, GET]


if scenario == "kernel-table":
    p = run("apply", "--config", KERNEL)
    check(p.returncode == 0, "apply exits 0")
    check(read_table("nvme0") == (1, SAMSUNG_KERNEL), "the fake holds the kernel policy's table, worked out by hand")
    check(apply_sequence_ok("nvme0"), "commands were Identify, Get, Set, Get")
    check("programmed and verified" in p.stdout, "apply reports nvme0 programmed and verified")
    sets = [d for d in read_log("nvme0") if d.get("opc") == SET]
    check(len(sets) == 1 and int(sets[0]["cdw10"], 16) == 0x0C and int(sets[0]["cdw11"], 16) == 1,
          "one Set Features FID 0x0C with APSTE=1 and the SV bit clear")
    nvme = shutil.which("nvme")
    if nvme:
        q = subprocess.run([nvme, "get-feature", "/dev/nvme0", "-f", "0x0c", "-H"], capture_output=True,
                           text=True, timeout=30)
        print(q.stdout, q.stderr)
        # nvme-cli decodes each entry; ps0..ps3 must show ITPS 4 / ITPT 100 ms, ps4 nothing
        check(q.returncode == 0 and q.stdout.count("Idle Time Prior to Transition (ITPT): 100 ms") == 4
              and q.stdout.count("Idle Transition Power State   (ITPS): 4") == 4,
              "nvme-cli get-feature -H independently decodes four entries: ps4 after 100 ms")
    else:
        print("nvme-cli not installed: cross-check not run")

elif scenario == "budget-table":
    want = plan_table(BUDGET, SAMSUNG, "144d:a808")
    p = run("apply", "--config", BUDGET)
    check(p.returncode == 0, "apply exits 0")
    check(read_table("nvme0") == want, "the fake holds the table `plan --json` printed for the same drive")
    check(want[1] != SAMSUNG_KERNEL and want[0] == 1, "and the budget table is not the kernel's")
    check(apply_sequence_ok("nvme0"), "commands were Identify, Get, Set, Get")

elif scenario == "status-0x4002":
    before = read_table("nvme0")
    p = run("apply", "--config", KERNEL)
    check(p.returncode == 1, "apply exits 1")
    check("nvme0: FAILED" in p.stdout and "0x4002" in p.stdout, "the report names nvme0 and status 0x4002")
    check("Invalid Field" in p.stdout + p.stderr, "and says what 0x4002 means")
    check("NVME_STATUS=0x4002" in p.stderr, "the log entry carries NVME_STATUS")
    check(read_table("nvme0") == before, "the table is unchanged")

elif scenario == "eio":
    before = read_table("nvme0")
    p = run("apply", "--config", KERNEL)
    check(p.returncode == 1, "apply exits 1")
    check("nvme0: FAILED" in p.stdout and "Input/output error" in p.stdout, "the report names nvme0 and EIO")
    check(read_table("nvme0") == before, "the table is unchanged")

elif scenario == "unsupported":
    p = run("apply", "--config", KERNEL)
    check(p.returncode == 0, "apsta = 0 is not an error: exit 0")
    check("not supported" in p.stdout, "reported as not supporting APST")
    check(count_cmds("nvme0", SET) == 0 and count_cmds("nvme0", GET) == 0, "no Get/Set Features sent")

elif scenario == "two-one-failing":
    p = run("apply", "--config", KERNEL)
    check(p.returncode == 1, "apply exits 1 because nvme1 failed")
    check(read_table("nvme0") == (1, SAMSUNG_KERNEL), "nvme0 was still programmed")
    check("nvme1: FAILED" in p.stdout and "nvme0: programmed" in p.stdout, "the report has both")

elif scenario == "not-pcie":
    p = run("apply", "--config", KERNEL)
    check(p.returncode == 0, "apply exits 0")
    check("nvme1: skipped (transport tcp is not PCIe)" in p.stdout, "the TCP controller is skipped, saying why")
    check(count_cmds("nvme1", IDENTIFY) + count_cmds("nvme1", SET) == 0, "nothing sent to it")
    check(read_table("nvme0") == (1, SAMSUNG_KERNEL), "nvme0 programmed")

elif scenario == "plan-live":
    p = run("plan", "--json", "--config", KERNEL)
    check(p.returncode == 0, "plan exits 0")
    import json
    c = json.loads(p.stdout)["controllers"]
    check(len(c) == 2 and c[0]["name"] == "nvme0" and c[1]["name"] == "nvme1", "both live controllers listed")
    check([int(x, 16) for x in c[0]["table"]] == SAMSUNG_KERNEL, "nvme0's planned table is the kernel's")
    check(c[0]["pci"] == "144d:a808", "PCI ids read from sysfs")
    check(c[0]["description"] == "ps0\u2013ps3 \u2192 ps4 after 100 ms; worst wake 10.0 ms",
          "the description survives JSON as UTF-8 text")
    check(c[1]["model"].startswith("WDC WDS500G2B0C"), "nvme1's model from Identify")
    check("no-deepest-ps" in c[1]["quirks"], "SN550 (15b7:5009) gets the kernel's NO_DEEPEST_PS quirk")
    for n in ("nvme0", "nvme1"):
        check(count_cmds(n, SET) == 0 and count_cmds(n, GET) == 0, f"plan sent no Get/Set Features to {n}")
    p = run("plan", "--config", KERNEL, "nvme1")
    check(p.returncode == 0 and "nvme1:" in p.stdout and "nvme0:" not in p.stdout, "plan nvme1 shows only nvme1")
    p = run("plan", "--config", KERNEL, "nvme7")
    check(p.returncode == 1 and "nvme7: no such NVMe controller" in p.stderr, "unknown controller: error naming it")

else:
    print(f"unknown scenario {scenario}")
    sys.exit(2)

done()
