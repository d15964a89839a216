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
 * looks at; record-file.h), and read back with every value checked: a truncated file, a
 * file of another kind or version, or garbage is refused, never half-used.
 */


#define RECORD_HEADER(kind, version) "# nvme-apstd " kind " record v" #version "\n"

/* A record is a few short lines (the CPU one: one per cpufreq policy); anything near this is not ours. */
#define RECORD_MAX_SIZE (256u * 1024u)

/**
 * record_parse_header() - check that @text is a record of @kind, format @version (pure)
 * @ret_body: the text after the header line
 * Return: 0; -EBADMSG when the first line is not a record header of @kind;
 * -EPROTONOSUPPORT when it is, of another version.
 */
int record_parse_header(const char *text, const char *kind, unsigned version, const char **ret_body);

