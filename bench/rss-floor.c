/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rss-floor: the smallest program with nvme-apstd's dependencies, for bench/load.sh.
 *
 * It links libnvme 1.3 (and so json-c and OpenSSL), libsystemd and libcpupower, runs one sd-event
 * loop, says READY=1 and waits for SIGTERM. Its RSS is the floor every daemon built on these
 * libraries pays (doc/platform.md, about 4.4-4.7 MiB here); nvme-apstd's own memory cost is what it adds
 * above it. It touches one symbol of each library so that the loader maps and relocates them as
 * it does for the daemon (load.sh also links it with --no-as-needed).
 *
 * Build: cc -O2 rss-floor.c -o rss-floor -Wl,--no-as-needed $(pkg-config --cflags --libs libnvme
 *        libsystemd) -lcpupower
 */

#include <signal.h>
#include <stdio.h>

#include <cpufreq.h>
#include <libnvme.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

int main(void) {
        sd_event *e = NULL;
        sigset_t ss;
        int r;

        /* as the daemon does: SIGTERM/SIGINT end the loop */
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigprocmask(SIG_BLOCK, &ss, NULL);

        r = sd_event_default(&e);
        if (r < 0)
                return 1;
        (void) sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL);
        (void) sd_event_add_signal(e, NULL, SIGINT, NULL, NULL);
        /* one call into each library, so none is a mere DT_NEEDED entry */
        if (!nvme_status_to_string(0x4002, false) || cpufreq_get_freq_kernel(0) == 42)
                return 2;
        (void) sd_notify(false, "READY=1\nSTATUS=rss-floor idle");
        r = sd_event_loop(e);
        sd_event_unref(e);
        return r < 0 ? 1 : 0;
}
