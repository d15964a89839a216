#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Quarantine (doc/quarantine.md): the daemon against the fake controller, with the kernel's
failure records written to the FIFO NVME_APSTD_KERNEL_LOG names, as the kernel prints them. Run as
the harness's COMMAND: test-quarantine.py SCENARIO.
  steps       a failure in the state reached (the kernel's records, the controller reset) takes that
              state out of the table within 1 s of live, and no table written after live (the
              fake logs each one) enters it: the re-check on reconnect waits for the verdict; the
              other controller keeps its table; the table left at stop and the next start's keep it
              out; the second failure turns APST off (this drive has two non-operational states),
              each step one journal entry
  fake-dies   the fake controller itself dies once fully in ps4 (die-in=4): the daemon sees its records
              and its reset, and the drive is never sent to ps4 again
  not-blamed  an admin reset without a record, a removal without a record and a failure while the
              drive is busy quarantine nothing; after the reset and the failure the daemon's table is
              back within 1 s of live
  resume      a failure right after logind's PrepareForSleep(false) is reported, not blamed, and the
              table is back within 1 s of live
  stuck       a read that waits on a drive idle past its deepest state (in flight, nothing completed)
              and the kernel's records: blamed on that state, though the disk has a request in flight;
              no table written after live enters it
Covers: src/daemon/manager-quarantine.c, src/platform/kernel-log.c, src/platform/quarantine-store.c,
src/core/kmsg.c, src/core/quarantine.c, src/core/quarantine-file.c, src/engine/controller.c."""

import os
import re
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from apstd_test import *  # noqa: F401,F403

require_harness()
scenario = sys.argv[1]
# the adaptive policy (the default): its watcher knows how long the drive has been idle
CONF = write_config("[apst]\npolicy = adaptive\n")
TMP = tempfile.mkdtemp(prefix="apstd-quarantine-")
FIFO = os.path.join(TMP, "kmsg")
STATE_DIR = os.path.join(TMP, "state")
os.mkfifo(FIFO)
ENV = {"NVME_APSTD_KERNEL_LOG": FIFO, "STATE_DIRECTORY": STATE_DIR}
seq = [100]


def deepest(table):
    apste, entries = table
    ps = 0
    if not apste:
        return 0
    for _ in range(32):
        e = entries[ps]
        itpt, nxt = (e >> 8) & 0xFFFFFF, (e >> 3) & 0x1F
        if itpt == 0 or nxt <= ps:
            break
        ps = nxt
    return ps


def kmsg(name, *messages, prio=4):
    """Write records as /dev/kmsg gives them: a writer opens, writes and goes, as the kernel's would."""
    with open(FIFO, "w") as f:
        for m in messages:
            seq[0] += 1
            f.write(kmsg_record(seq[0], name, m, prio))


def fail_in_state(name):
    """What the kernel does when the drive falls off the bus: the records, resetting, then live again.
    Return: when it was live again, and where the controller's command log stood just before."""
    kmsg(name, "controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0x10",
         "Does your device have a faulty power saving mode enabled?",
         'Try "nvme_core.default_ps_max_latency_us=0 pcie_aspm=off pcie_port_pm=off" and report a bug')
    ctl("set-attr", name, "state", "resetting")
    time.sleep(0.3)
    pos = len(read_log(name))
    ctl("reset", name)   # connecting -> live, the kernel's own table (APSTE 0 here), NVME_EVENT=connected
    return time.monotonic(), pos


def tables_sent(name, since):
    """Every table a Set Features 0x0C stored on the controller from its command log's line @since on, as
    read_table() gives one: the fake logs each table it is sent, so one the next replaced is seen too."""
    out = []
    for d in read_log(name)[since:]:
        if d.get("opc") != SET or int(d.get("cdw10", "0"), 16) & 0xFF != 0x0C or d.get("status") != "0x0000":
            continue
        entries = [int(e, 16) for e in d["table"].split(",")]
        out.append((int(d["cdw11"], 16) & 1, entries + [0] * (32 - len(entries))))
    return out


def check_none_enters(name, since, ps, what):
    """No table sent from @since on (the reset) lets the drive reach @ps. None sent is fine: the table the
    verdict wants may be the kernel's own after the reset (APST off); the caller checks the one in place."""
    time.sleep(0.5)     # a write still on its way lands
    sent = tables_sent(name, since)
    reached = [deepest(t) for t in sent]
    check(all(r < ps for r in reached),
          f"{what}: no table written after live reaches ps{ps} (deepest of each written: "
          f"{', '.join(f'ps{r}' for r in reached) or 'none written'})")


def qfiles():
    d = os.path.join(STATE_DIR, "quarantine")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def qfile_text():
    files = qfiles()
    if not files:
        return ""
    with open(os.path.join(STATE_DIR, "quarantine", files[0])) as f:
        return f.read()


if scenario == "steps":
    d = Daemon(CONF, extra_env=ENV)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        t0, t1 = read_table("nvme0"), read_table("nvme1")
        d0 = deepest(t0)
        check(d0 >= 3, f"nvme0's table reaches a non-operational state (ps{d0})")
        check(qfiles() == [], "no quarantine at start")

        live, pos = fail_in_state("nvme0")
        got = wait_for(lambda: deepest(read_table("nvme0")) < d0 and read_table("nvme0")[0] == 1, 1.0,
                       f"ps{d0} out of nvme0's table")
        check(got is not None, f"within 1 s of live, nvme0's table leaves ps{d0} out (took "
              f"{time.monotonic() - live:.2f} s)")
        check(d.wait_log(r"nvme0: controller failed in power state ps%d .*MESSAGE_ID=c7f745201e674b65a0d8fe66a0a50bec"
                         % d0) is not None, "one journal entry with the quarantine's MESSAGE_ID")
        check(re.search(r"^allow_below=%d$" % d0, qfile_text(), re.M) is not None,
              "kept in STATE_DIR/quarantine with allow_below")
        check(re.search(r"^failure=\d+ ps=%d idle_ms=\d+ kind=(down|pm-hint)$" % d0, qfile_text(), re.M) is not None,
              "the evidence kept")
        check_none_enters("nvme0", pos, d0, "the first failure")
        check(read_table("nvme1") == t1, "the other controller keeps its table")
        st = run("plan", "--state-dir", STATE_DIR, "--json", "nvme0")
        check(re.search(r'"quarantine_below": *%d' % d0, st.stdout) is not None, "plan --json shows the quarantine")
        st = run("plan", "--state-dir", STATE_DIR, "nvme0")
        check("quarantine: ps%d and deeper" % d0 in st.stdout, "plan says it in words")

        rc = d.stop()
        check(rc == 0, "stop: exit 0")
        check(deepest(read_table("nvme0")) < d0, "the table left at stop leaves the state out")

        # a restart: the first table written already leaves it out
        d = Daemon(CONF, extra_env=ENV)
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1 after the restart")
        t = read_table("nvme0")
        check(t[0] == 1 and deepest(t) < d0, f"after the restart nvme0's table still leaves ps{d0} out")
        check(read_table("nvme1") == t1, "and nvme1 still has its own")

        # the second failure, in the next shallower state: nothing is left, APST off
        d1 = deepest(read_table("nvme0"))
        pos = len(d.log())
        _, lpos = fail_in_state("nvme0")
        check(wait_for(lambda: read_table("nvme0")[0] == 0, 1.5, "APST off on nvme0") is not None,
              "the second failure (ps%d) turns APST off: this drive has no shallower non-operational state" % d1)
        check(d.wait_log(r"nvme0: controller failed in power state ps%d .*APST off" % d1, after=pos) is not None,
              "the second step is one journal entry")
        check_none_enters("nvme0", lpos, d1, "the second failure")
        check(len(re.findall(r"MESSAGE_ID=c7f745201e674b65a0d8fe66a0a50bec", d.log())) == 1,
              "one entry per step in this run")
        check(re.search(r"^strikes=2$", qfile_text(), re.M) is not None, "two strikes kept")
        check(read_table("nvme1") == t1, "nvme1 untouched all along")

        # plan on an Identify file reads the same quarantine as on a live controller: the file of
        # nvme1's drive, with a quarantine of its own written as the daemon writes one
        wdc = os.path.join(DATA, "idctrl", "14-wdc-wds500g2b0c-00pxh0.bin")
        with open(wdc, "rb") as f:
            raw = f.read(72)
        other = os.path.join(TMP, "other-state")
        os.makedirs(os.path.join(other, "quarantine"))
        with open(os.path.join(other, "quarantine", "WDC%20WDS500G2B0C-00PXH0@211210WD.quarantine"), "w") as f:
            f.write("# nvme-apstd quarantine\nversion=1\nmodel=WDC WDS500G2B0C-00PXH0\nfirmware=211210WD\n"
                    f"vendor={int.from_bytes(raw[0:2], 'little'):04x}\nallow_below=4\nmax_latency_us=4999\n"
                    "strikes=1\nfailure=1733571234 ps=4 idle_ms=1200000 kind=down\n")
        st = run("plan", "--state-dir", other, "--id-ctrl", wdc)
        check(st.returncode == 0 and "quarantine: ps4 and deeper" in st.stdout and "ps4 after" not in st.stdout,
              "plan --id-ctrl FILE applies the quarantine kept for that drive")

        # the verb lists and clears it
        q = run("quarantine", "--state-dir", STATE_DIR)
        check(q.returncode == 0 and "APST off" in q.stdout, "quarantine lists the drive with APST off")
        q = run("quarantine", "--state-dir", STATE_DIR, "--drop-in")
        check(q.returncode == 0 and "max_latency_us = 0" in q.stdout, "--drop-in carries it")
        q = run("quarantine", "--state-dir", STATE_DIR, "--clear", "nvme-apstd fake controller")
        check(q.returncode == 0 and qfiles() == [], "--clear removes it")
        pos = len(d.log())
        d.signal(signal.SIGHUP)
        check(wait_for(lambda: read_table("nvme0") == t0 or deepest(read_table("nvme0")) == d0, 5,
                       "the state back after the reload") is not None, "a reload after --clear plans the state again")
        rc = d.stop()
        check(rc == 0, "stop: exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()

elif scenario == "not-blamed":
    d = Daemon(CONF, extra_env=ENV)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        d0 = deepest(read_table("nvme0"))

        # an admin's reset (nvme reset, reset_controller): no failure record
        ctl("reset", "nvme0")
        live = time.monotonic()
        check(wait_for(lambda: deepest(read_table("nvme0")) == d0, 1.0, "table back after the reset") is not None,
              f"within 1 s of live after an admin reset the table is written again, deep state included (took "
              f"{time.monotonic() - live:.2f} s)")
        time.sleep(0.7)
        check(qfiles() == [], "an admin reset quarantines nothing")

        # a failure while the drive is busy: I/O completes up to the record (the watcher reads an
        # idle drive every 5 to 7.5 s; the daemon looks again at the record itself)
        for i in range(1, 61):
            ctl("stat", "nvme0", "nvme0n1", f"{i * 10} 0 {i * 80} {i} 0 0 0 0 0 {i} {i}")
            time.sleep(0.1)
        kmsg("nvme0", "I/O tag 3 (0003) opcode 0x2 (I/O Cmd) QID 1 timeout, reset controller")
        ctl("set-attr", "nvme0", "state", "resetting")
        time.sleep(0.2)
        ctl("reset", "nvme0")
        live = time.monotonic()
        # the adaptive policy may have chosen a shallower table for the I/O meanwhile: any of its own,
        # not the kernel's APSTE 0
        check(wait_for(lambda: deepest(read_table("nvme0")) >= 3, 1.0, "table back after the failure") is not None,
              f"within 1 s of live after a failure not blamed the daemon's table is written again (took "
              f"{time.monotonic() - live:.2f} s)")
        check(d.wait_log(r"nvme0: controller failed .*not blamed on a power state: busy") is not None,
              "a timeout while busy is reported, not blamed")
        check(qfiles() == [], "... and quarantines nothing")

        # a removal by the user, without a failure record
        ctl("remove", "nvme1")
        check(d.wait_log(r"nvme1: controller removed") is not None, "nvme1 removed")
        time.sleep(0.5)
        check(qfiles() == [], "a removal quarantines nothing")
        check(wait_for(lambda: read_table("nvme0")[0] == 1, 5, "nvme0's table back") is not None,
              "nvme0 has its table again")
        check(qfiles() == [], "nothing quarantined at all")
        rc = d.stop()
        check(rc == 0, "stop: exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()
elif scenario == "stuck":
    d = Daemon(CONF, extra_env=ENV)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        d0 = deepest(read_table("nvme0"))
        check(d0 == 4, f"nvme0's table reaches ps4 (ps{d0})")
        time.sleep(2.0)      # idle past ps3's and ps4's entries (under 1.1 s in all)
        # a read arrives and waits: in flight, nothing completes; the watcher, which reads an idle
        # disk every 5 to 7.5 s, sees a busy one (the kernel gives up on it after 30 s, shortened here)
        ctl("stat", "nvme0", "nvme0n1", "0 0 0 0 0 0 0 0 1 0 0")
        time.sleep(8.0)
        pos = len(d.log())
        _, lpos = fail_in_state("nvme0")
        check(d.wait_log(r"nvme0: controller failed in power state ps4 .*MESSAGE_ID=c7f745201e674b65a0d8fe66a0a50bec",
                         after=pos) is not None,
              "the request in flight is the one that waited on the drive: ps4 blamed, not 'busy'")
        check(wait_for(lambda: read_table("nvme0")[0] == 1 and deepest(read_table("nvme0")) == 3, 2,
                       "ps4 out") is not None, "nvme0's table then stops at ps3")
        check_none_enters("nvme0", lpos, 4, "the failure with a read in flight")
        check(not re.search(r"not blamed on a power state", d.log()), "nothing said not blamed")
        rc = d.stop()
        check(rc == 0, "stop: exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()
elif scenario == "fake-dies":
    # the fake controller dies by itself once fully in ps4 (die-in=4): its admin commands fail, its state goes
    # to resetting, the kernel's records go to $FAKE_NVME_STATE/kmsg, and a reset brings it back
    kfifo = os.path.join(STATE, "kmsg")
    os.mkfifo(kfifo)
    env = dict(ENV, NVME_APSTD_KERNEL_LOG=kfifo)
    d = Daemon(CONF, extra_env=env)
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        check(deepest(read_table("nvme0")) == 4, "the first table reaches ps4")
        t1 = read_table("nvme1")
        check(d.wait_log(r"nvme0: controller failed in power state ps4 .*MESSAGE_ID=c7f745201e674b65a0d8fe66a0a50bec",
                         timeout=15) is not None, "the drive died in ps4 by itself: ps4 blamed")
        check(wait_for(lambda: read_table("nvme0")[0] == 1 and deepest(read_table("nvme0")) == 3, 2,
                       "ps4 out") is not None, "nvme0's table then stops at ps3")
        # idle long past ps4's entry under the old table: the drive is never sent there again
        time.sleep(4)
        check(deepest(read_table("nvme0")) == 3, "4 s later the table still stops at ps3")
        check(len(re.findall(r"controller failed in power state", d.log())) == 1, "it failed once only")
        check(read_table("nvme1") == t1, "nvme1 keeps its table")
        rc = d.stop()
        check(rc == 0, "stop: exit 0")
        check(deepest(read_table("nvme0")) < 4, "the table left at stop stays out of ps4")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()
elif scenario == "resume":
    # a failure right after a resume is the suspend path's (the kernel's own deepest state on s2idle):
    # reported, not blamed. A private bus stands in for the system bus; the test is logind.
    bus = PrivateBus()
    GLib, conn, addr = bus.GLib, bus.conn, bus.addr
    check(bus.call_bus("RequestName", "(su)", ("org.freedesktop.login1", 0))[0] == 1,
          "the test owns org.freedesktop.login1 on the private bus")
    d = Daemon(CONF, extra_env=dict(ENV, DBUS_SYSTEM_BUS_ADDRESS=addr))
    try:
        check(d.wait_notify(r"^READY=1$") is not None, "READY=1")
        d0 = deepest(read_table("nvme0"))
        for sleeping in (True, False):
            conn.emit_signal(None, "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep",
                             GLib.Variant("(b)", (sleeping,)))
            conn.flush_sync(None)
            time.sleep(0.2)
        check(d.wait_log(r"Resumed from sleep") is not None, "resume seen")
        live, _ = fail_in_state("nvme0")
        check(wait_for(lambda: read_table("nvme0")[0] == 1 and deepest(read_table("nvme0")) == d0, 1.0,
                       "table back") is not None,
              f"within 1 s of live the table is written again with its deepest state (took "
              f"{time.monotonic() - live:.2f} s)")
        check(d.wait_log(r"nvme0: controller failed .*not blamed on a power state: resume") is not None,
              "a failure just after resume is reported, not blamed")
        check(qfiles() == [], "nothing quarantined")
        check(d.stop() == 0, "exit 0")
    finally:
        if d.proc.poll() is None:
            d.stop()
        d.dump()
        bus.close()
else:
    skip(f"unknown scenario {scenario}")

done()
