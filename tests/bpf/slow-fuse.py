#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# A FUSE file system with one file, disk.img (64 MiB of zeros), whose every read takes
# DELAY seconds: behind a loop device, a disk that takes as long as a drive waking from a
# deep state. Used by test-bpf-hidden, which puts requests behind such a read.
# Usage: slow-fuse.py MOUNTPOINT DELAY   (stays in the foreground until unmounted)
import errno
import stat
import sys
import time

import fusepy

SIZE = 64 << 20


class Slow(fusepy.Operations):
    def __init__(self, delay):
        self.delay = delay

    def getattr(self, path, fh=None):
        if path == "/":
            return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2}
        if path == "/disk.img":
            return {"st_mode": stat.S_IFREG | 0o600, "st_nlink": 1, "st_size": SIZE}
        raise fusepy.FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", "..", "disk.img"]

    def open(self, path, flags):
        if path != "/disk.img":
            raise fusepy.FuseOSError(errno.ENOENT)
        return 0

    def read(self, path, size, offset, fh):
        time.sleep(self.delay)
        return bytes(max(0, min(size, SIZE - offset)))

    def write(self, path, data, offset, fh):
        return len(data)


if __name__ == "__main__":
    fusepy.FUSE(Slow(float(sys.argv[2])), sys.argv[1], foreground=True, nothreads=False, direct_io=True)
