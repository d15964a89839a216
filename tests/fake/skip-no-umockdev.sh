#!/bin/sh
# Stands in for umockdev-wrapper when the fake NVMe harness could not be built: every test that
# uses it is reported as skipped (77) with the reason, never as passed.
echo "SKIP: fake NVMe harness not built: ${FAKE_SKIP_REASON:-umockdev not available}" >&2
exit 77
