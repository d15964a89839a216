#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""An interactive editing session with saves, for a recording: a real vim, typed at.

    bench/workloads/editor.py WORK_DIR SECONDS [SEED]

Starts vim (its defaults: a swap file beside the file, written after 200 typed
characters or 4 s without typing; 'fsync' on, so every :w is fsynced) in a tmux
session on a text file in WORK_DIR and types into it as a person does: bursts of
typing at 3 to 8 characters a second, pauses to think (log-normal, median 8 s),
a save (:w) after about half the bursts, now and then a switch to another file
(:w then :e) and a few breaks of 3 to 15 minutes with the editor left open.
Everything random comes from SEED.
"""
import os
import random
import signal
import subprocess
import sys
import time

WORDS = ("the drive wakes from its deepest state when a request arrives and the table says when it "
         "enters each state after the idle time a policy chooses from what it saw").split()


def tmux(*args):
    subprocess.run(["tmux", *args], check=True)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    work, secs = sys.argv[1], float(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    os.makedirs(work, exist_ok=True)
    files = [os.path.join(work, f"notes-{i}.txt") for i in range(3)]
    for f in files:
        with open(f, "w") as fh:
            fh.write("\n".join(" ".join(rng.choices(WORDS, k=12)) for _ in range(200)) + "\n")
    session = f"editor-{os.getpid()}"
    # bench/record.py ends its command with SIGTERM at its own deadline: close vim and tmux all the same
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40",
         f"cd {work} && exec vim -N -u NONE -i NONE {files[0]}")
    t0 = time.monotonic()
    now = lambda: time.monotonic() - t0
    cur = 0
    next_break = rng.uniform(600, 1500)
    try:
        time.sleep(1)
        tmux("send-keys", "-t", session, "G", "o")          # to the end, a new line, insert mode
        while now() < secs:
            if now() >= next_break:
                time.sleep(min(rng.uniform(180, 900), max(0, secs - now())))
                next_break = now() + rng.uniform(600, 1500)
                continue
            burst_end = now() + rng.uniform(3, 60)
            while now() < burst_end and now() < secs:
                word = rng.choice(WORDS) + (" " if rng.random() < 0.92 else "\n")
                for ch in word:
                    tmux("send-keys", "-t", session, "-l", ch)
                    time.sleep(1.0 / rng.uniform(3, 8))
            if rng.random() < 0.5:
                tmux("send-keys", "-t", session, "Escape", ":w", "Enter")
                if rng.random() < 0.1:
                    cur = (cur + 1) % len(files)
                    tmux("send-keys", "-t", session, f":e {files[cur]}", "Enter", "G")
                tmux("send-keys", "-t", session, "o")
            time.sleep(min(rng.lognormvariate(2.08, 1.0), 300, max(0.0, secs - now())))
    finally:
        subprocess.run(["tmux", "send-keys", "-t", session, "Escape", ":wqa!", "Enter"])
        time.sleep(1)
        subprocess.run(["tmux", "kill-session", "-t", session], stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
