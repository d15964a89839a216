/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Logging: journal-native and structured, with the same lines on stderr when
 * not running under systemd (systemd's log.c and dbus-broker's catalog as
 * models; doc/architecture.md#conventions).
 *
 * Target: the journal when stderr is connected to it ($JOURNAL_STREAM matches
 * stderr's device:inode, as systemd sets it for services) or when
 * NVME_APSTD_LOG_TARGET=journal; otherwise stderr. On stderr, with
 * NVME_APSTD_LOG_FIELDS=1, each structured entry is followed by its fields as
 * ` {KEY=value, ...}` so tests can check them without a journal. If the journal
 * cannot be reached the entry goes to stderr instead: logging never fails the
 * caller.
 *
 * Levels follow iwd M18: LOG_ERR = the operation failed; LOG_WARNING =
 * unexpected but handled; LOG_INFO = rare (start, table written, controller
 * added); LOG_DEBUG = anything useful. Never log serial numbers.
 */

#include <stddef.h>
#include <syslog.h>

#include "macro.h"

typedef struct LogField {
        const char *key;           /* journal field name, upper case, e.g. "NVME_CTRL" */
        const char *value;         /* NULL = field omitted */
} LogField;

void log_set_max_level(int level);
int log_get_max_level(void);
/* Re-evaluate the target (journal or stderr) from the environment. */
void log_open(void);

/* Returns -abs(error) (or 0 when error is 0), so callers can `return log_error_errno(r, ...)`. */
int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) _printf_(6, 7);

/**
 * log_event_internal() - one structured journal entry
 * @message_id: MESSAGE_ID (32 hex digits, see apstd-ids.h) or NULL
 * @fields, @n_fields: extra fields; entries with a NULL value are skipped
 * @format: the MESSAGE, a sentence a person can read
 */
int log_event_internal(int level, int error, const char *file, int line, const char *func,
                       const char *message_id, const LogField *fields, size_t n_fields,
                       const char *format, ...) _printf_(9, 10);

#define log_full_errno(level, error, ...) log_internal(level, error, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)

/* log_event(LOG_INFO, 0, MSGID_X, LOG_FIELDS({"NVME_CTRL", name}, {"APST_POLICY", p}), "Wrote %s", x) */
#define LOG_FIELDS(...) ((const LogField[]) { __VA_ARGS__ }), ELEMENTSOF(((const LogField[]) { __VA_ARGS__ }))
#define log_event(level, error, message_id, fields_and_count, ...) \
        log_event_internal(level, error, __FILE__, __LINE__, __func__, message_id, fields_and_count, __VA_ARGS__)
