#!/bin/sh
# Stands in for a program a test needs but this machine lacks (umockdev-wrapper when the fake NVMe
# harness could not be built, nvme-cli, libsystemd, valgrind): prints why and exits 77, so meson
# reports the test as SKIP, never as passed. Arguments are ignored.
echo "SKIP: ${FAKE_SKIP_REASON:-fake NVMe harness not built (umockdev not available)}" >&2
exit 77
