#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A mail client's writes, for a recording of a periodic small writer.

    bench/workloads/mail.py MAIL_DIR SECONDS [SEED]

Writes what a mail setup of the common kind writes while a person works beside it:
a client kept in IMAP IDLE that stores each message as it arrives, the way Maildir
delivery does it (written in tmp/, fsync()ed, renamed into new/, as mbsync and
other MDAs do), then adds it to an index (an SQLite database in WAL mode with
synchronous = NORMAL, standing in for the client's search index) and rewrites its
sync state (written to a temporary file, fsync()ed, renamed: mbsync's journal and
state). Messages arrive one at a time, on average one every 90 s (exponential),
sometimes three to eight at once (a thread, a list digest); their size is
log-normal around 12 KiB, up to 4 MiB (attachments). Every 300 s the client also
syncs all six folders, rewriting each folder's state. The person reads now and
then: a message read is moved from new/ to cur/ with its flag in the name (a
rename, no data written), on average every 45 s while reading, and reading
alternates with stretches away (5 to 15 minutes) in which nothing is read.
Everything random comes from SEED, so a run is repeatable up to the machine's own
timing. Recorded for bench/traces/held-out/mail.txt.gz with

    bench/record.py vda 1260 -- bench/workloads/mail.py /var/tmp/mailrec 1200 1
"""
import os
import random
import sqlite3
import sys
import time

FOLDERS = ["INBOX", "Lists", "Sent", "Archive", "Drafts", "Junk"]


def durable_write(path, data, tmp=None):
    """DATA written to TMP (PATH.tmp by default), fsync()ed, renamed to PATH."""
    tmp = tmp or path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def deliver(root, folder, n, size, rng, index, t):
    name = f"{int(t * 1000)}.{n}.host"
    durable_write(os.path.join(root, folder, "new", name), rng.randbytes(size),
                  tmp=os.path.join(root, folder, "tmp", name))
    index.execute("INSERT INTO msg (name, folder, size, t) VALUES (?, ?, ?, ?)", (name, folder, size, t))


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    root, secs = sys.argv[1], float(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    for folder in FOLDERS:
        for sub in ("tmp", "new", "cur"):
            os.makedirs(os.path.join(root, folder, sub), exist_ok=True)
    index = sqlite3.connect(os.path.join(root, "index.sqlite"), isolation_level=None)
    index.execute("PRAGMA journal_mode = WAL")
    index.execute("PRAGMA synchronous = NORMAL")
    index.execute("CREATE TABLE IF NOT EXISTS msg (name TEXT PRIMARY KEY, folder TEXT, size INTEGER, t REAL)")
    t0 = time.monotonic()
    now = lambda: time.monotonic() - t0
    next_mail = rng.expovariate(1 / 90)
    next_sync = 300.0
    reading, mode_end = True, rng.uniform(120, 600)
    next_read = rng.expovariate(1 / 45)
    n = 0
    while now() < secs:
        t = now()
        if t >= mode_end:
            reading = not reading
            mode_end = t + (rng.uniform(120, 600) if reading else rng.uniform(300, 900))
            next_read = t + rng.expovariate(1 / 45)
        if t >= next_mail:
            burst = rng.randint(3, 8) if rng.random() < 0.15 else 1
            folder = "Lists" if burst > 1 else rng.choices(FOLDERS[:2] + ["Junk"], [0.7, 0.2, 0.1])[0]
            for _ in range(burst):
                n += 1
                size = min(int(rng.lognormvariate(9.4, 1.1)), 4 << 20)
                deliver(root, folder, n, size, rng, index, t)
            durable_write(os.path.join(root, folder, ".mbsyncstate"), f"{n} {t:.3f}\n".encode() * 64)
            next_mail = t + rng.expovariate(1 / 90)
        if t >= next_sync:
            for folder in FOLDERS:
                durable_write(os.path.join(root, folder, ".mbsyncstate"), f"{n} {t:.3f}\n".encode() * 64)
            next_sync = t + 300
        if reading and t >= next_read:
            new = os.path.join(root, "INBOX", "new")
            names = sorted(os.listdir(new))
            if names:
                os.rename(os.path.join(new, names[0]), os.path.join(root, "INBOX", "cur", names[0] + ":2,S"))
            next_read = t + rng.expovariate(1 / 45)
        wake = min(next_mail, next_sync, mode_end, next_read if reading else mode_end, secs)
        time.sleep(max(wake - now(), 0.01))
    index.close()


if __name__ == "__main__":
    main()
