#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A web browser's profile writes, for a recording of a periodic small writer.

    bench/workloads/browser.py PROFILE_DIR SECONDS [SEED]

Writes what a browser profile writes while a person reads the web, in the way
Firefox writes it (its defaults): the session file rewritten every 15 s while the
session has changed (browser.sessionstore.interval = 15000; written to a temporary
file and renamed, no fsync), a history visit inserted in places.sqlite (WAL,
synchronous = NORMAL, as Firefox sets it) and 3 to 25 cache entries of 1 to 200
KiB (cache2/entries, never fsynced) for every page loaded, and a cookie update now
and then. The person alternates browsing (a page every 5 to 60 s), reading one page
(1 to 8 minutes: the session is still dirtied by scrolling) and being away
(5 to 20 minutes, the browser left open: nothing is written). Everything random
comes from SEED, so a run is repeatable up to the machine's own timing.
"""
import os
import random
import sqlite3
import sys
import time


def write_file(path, size, rng):
    with open(path + ".tmp", "wb") as f:
        f.write(rng.randbytes(size))
    os.replace(path + ".tmp", path)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    root, secs = sys.argv[1], float(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    os.makedirs(os.path.join(root, "cache2", "entries"), exist_ok=True)
    os.makedirs(os.path.join(root, "sessionstore-backups"), exist_ok=True)
    places = sqlite3.connect(os.path.join(root, "places.sqlite"), isolation_level=None)
    places.execute("PRAGMA journal_mode = WAL")
    places.execute("PRAGMA synchronous = NORMAL")
    places.execute("CREATE TABLE IF NOT EXISTS visits (id INTEGER PRIMARY KEY, url TEXT, t REAL)")
    cookies = sqlite3.connect(os.path.join(root, "cookies.sqlite"), isolation_level=None)
    cookies.execute("PRAGMA journal_mode = WAL")
    cookies.execute("PRAGMA synchronous = NORMAL")
    cookies.execute("CREATE TABLE IF NOT EXISTS c (host TEXT PRIMARY KEY, v TEXT)")
    t0 = time.monotonic()
    now = lambda: time.monotonic() - t0
    dirty, next_session = False, 15.0
    mode, mode_end, next_page = "browse", rng.uniform(60, 600), 0.0
    pages = 0
    while now() < secs:
        t = now()
        if t >= mode_end:
            mode = rng.choices(["browse", "read", "away"], [0.5, 0.35, 0.15])[0]
            span = {"browse": (60, 600), "read": (60, 480), "away": (300, 1200)}[mode]
            mode_end = t + rng.uniform(*span)
            next_page = t
        if mode == "browse" and t >= next_page:
            pages += 1
            places.execute("INSERT INTO visits (url, t) VALUES (?, ?)", (f"https://example.org/{pages}", t))
            for _ in range(rng.randint(3, 25)):
                name = "%040X" % rng.getrandbits(160)
                write_file(os.path.join(root, "cache2", "entries", name), rng.randint(1024, 200 * 1024), rng)
            if rng.random() < 0.3:
                cookies.execute("INSERT OR REPLACE INTO c VALUES (?, ?)", (f"h{rng.randint(0, 50)}", str(t)))
            dirty = True
            next_page = t + rng.uniform(5, 60)
        elif mode == "read" and rng.random() < 0.02:
            dirty = True                    # scrolling: the session's scroll position changed
        if t >= next_session:
            if dirty:
                write_file(os.path.join(root, "sessionstore-backups", "recovery.jsonlz4"),
                           rng.randint(20 * 1024, 60 * 1024), rng)
                dirty = False
            next_session += 15.0
        time.sleep(0.2)
    places.close()
    cookies.close()


if __name__ == "__main__":
    main()
