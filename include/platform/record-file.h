/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Crash records: small text files in the runtime directory that let a daemon
 * started after a crash put back what its predecessor changed (the APST table
 * a controller had, apst-record.h; the CPU frequency policies, cpufreq-policy.h).
 *
 * Every record starts with one header line naming its kind and format
 * version, "# nvme-apstd KIND record vN"; what follows is the kind's own.
 * A record is written whole or not at all (write_file_atomic(): a crash
 * between writing and renaming leaves the temporary file, which no reader
 * looks at), and read back with every value checked: a truncated file, a
 * file of another kind or version, or garbage is refused, never half-used.
 */



/* Replace @path with @text atomically (mode 0600). Return: 0 or -errno. */
int record_store(const char *path, const char *text);

/**
 * record_load() - read @path whole
 * @ret: malloc'd, NUL-terminated
 * Return: 0, -ENOENT (no record), -EFBIG (larger than RECORD_MAX_SIZE),
 * -EBADMSG (contains a NUL byte: not a text record), or -errno.
 */
int record_load(const char *path, char **ret);

/* Remove @path; a record that is not there is fine. Return: 0 or -errno. */
int record_remove(const char *path);

/**
 * record_ctrl_path() - where controller @ctrl's original APST table is recorded: "@dir/ctrl-@ctrl.orig"
 *
 * The one name the daemon (controller.c) and `calibrate` both use, so that each finds the record
 * the other left after a crash (apst-record.h).
 * Return: 0, or -ENAMETOOLONG when it does not fit in @n bytes (@buf is then left as it was).
 */
int record_ctrl_path(const char *dir, const char *ctrl, char *buf, size_t n);
