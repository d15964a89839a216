/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The daemon and `calibrate` must not both program a controller's APST table:
 * each would overwrite the other's. $RUNTIME_DIRECTORY/daemon.lock tells them
 * apart: the daemon holds a shared flock(2) on it while it runs, `calibrate`
 * takes it exclusively for its run. The kernel drops a lock with its holder,
 * so a crash leaves nothing stale.
 */

#include <stdbool.h>

#define RUNLOCK_NAME "daemon.lock"

/**
 * runlock_take() - lock @runtime_dir/daemon.lock (created, with @runtime_dir, if missing)
 * @exclusive: calibrate; else the daemon
 * @wait: block until granted; else -EWOULDBLOCK when the other side holds it
 * @ret_fd: the locked descriptor, to keep open for as long as the lock is needed
 * Return: 0 or -errno.
 */
int runlock_take(const char *runtime_dir, bool exclusive, bool wait, int *ret_fd);
