#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Package installs as an admin does them: one to three packages at a time, from the local
# archive cache (no network), then a pause of 3-22 s to read the output.
# Recorded for bench/traces/held-out/apt-reinstall.txt.gz (as root) with
#   bench/record.py vda 600 -- bench/workloads/apt-reinstall.sh
export DEBIAN_FRONTEND=noninteractive
set -- autoconf automake libjson-c-dev libinih-dev libsystemd-dev libbpf-dev libelf-dev libnvme-dev \
        libcpupower-dev bpftool umockdev python3-numpy python3-matplotlib python3-scipy python3-lxml python3-jinja2
RANDOM=11
while [ $# -gt 0 ]; do
        n=$((1 + RANDOM % 3))
        pkgs=()
        for _ in $(seq "$n"); do
                [ $# -gt 0 ] || break
                pkgs+=("$1")
                shift
        done
        apt-get install --reinstall -y --no-download "${pkgs[@]}" >/dev/null 2>&1
        sleep $((3 + RANDOM % 20))
done
