/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging backend (see log.h). The only place that decides between the
 * journal and stderr; everything else calls log_*() and log_event().
 */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* We send CODE_FILE/CODE_LINE/CODE_FUNC of our caller ourselves; without this,
 * sd-journal.h's sd_journal_sendv() macro adds its own (log.c's) and every
 * entry carries each field twice. */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-journal.h>

#include "log.h"

static int max_level = LOG_INFO;
static bool use_journal;
static bool print_fields;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

/* systemd sets $JOURNAL_STREAM=DEV:INO for a service whose stderr is the journal. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == (dev_t) dev && st.st_ino == (ino_t) ino;
}

void log_open(void) {
        const char *t = getenv("NVME_APSTD_LOG_TARGET");
        const char *f = getenv("NVME_APSTD_LOG_FIELDS");
        const char *l = getenv("NVME_APSTD_LOG_LEVEL");

        if (t && strcmp(t, "journal") == 0)
                use_journal = true;
        else if (t && strcmp(t, "console") == 0)
                use_journal = false;
        else
                use_journal = stderr_is_journal();
        print_fields = f && strcmp(f, "1") == 0;
        if (l && strcmp(l, "debug") == 0)
                max_level = LOG_DEBUG;
}

static const char *level_prefix(int level) {
        switch (level) {
        case LOG_EMERG:
        case LOG_ALERT:
        case LOG_CRIT:
        case LOG_ERR:
                return "error: ";
        case LOG_WARNING:
                return "warning: ";
        case LOG_DEBUG:
                return "debug: ";
        default:
                return "";
        }
}

static void console_write(int level, const char *message_id, const LogField *fields, size_t n,
                          const char *message) {
        /* One fprintf per line keeps lines whole when several processes share stderr. */
        char extra[4096] = "";

        if (print_fields && (message_id || n > 0)) {
                int k = snprintf(extra, sizeof extra, " {");
                size_t off = k > 0 ? (size_t) k : 0;
                if (message_id) {
                        k = snprintf(extra + off, sizeof extra - off, "MESSAGE_ID=%s", message_id);
                        off = k > 0 ? MIN(sizeof extra - 1, off + (size_t) k) : off;
                }
                for (size_t i = 0; i < n; i++) {
                        if (!fields[i].value)
                                continue;
                        k = snprintf(extra + off, sizeof extra - off, "%s%s=%s",
                                     off > 2 ? ", " : "", fields[i].key, fields[i].value);
                        off = k > 0 ? MIN(sizeof extra - 1, off + (size_t) k) : off;
                }
                (void) snprintf(extra + off, sizeof extra - off, "}");
        }
        fprintf(stderr, "nvme-apstd: %s%s%s\n", level_prefix(level), message, extra);
}

static int journal_write(int level, int error, const char *file, int line, const char *func,
                         const char *message_id, const LogField *fields, size_t n, const char *message) {
        /* MESSAGE, PRIORITY, CODE_FILE, CODE_LINE, CODE_FUNC, ERRNO, MESSAGE_ID, SYSLOG_IDENTIFIER + fields */
        size_t max = 8 + n;
        struct iovec iov[max];
        char *strs[max];
        size_t k = 0;
        int r;

#define ADD(...)                                                                 \
        do {                                                                     \
                if (asprintf(&strs[k], __VA_ARGS__) < 0)                         \
                        goto oom;                                                \
                iov[k] = (struct iovec) { strs[k], strlen(strs[k]) };            \
                k++;                                                             \
        } while (0)

        /* sd_journal_sendv() drops the entry and returns 0 when the socket does not exist (no
         * journald at all, e.g. in a container): send it to stderr instead of losing it. */
        if (access("/run/systemd/journal/socket", F_OK) < 0)
                return -errno;

        ADD("MESSAGE=%s", message);
        ADD("PRIORITY=%d", level);
        ADD("SYSLOG_IDENTIFIER=nvme-apstd");
        ADD("CODE_FILE=%s", file);
        ADD("CODE_LINE=%d", line);
        ADD("CODE_FUNC=%s", func);
        if (error != 0)
                ADD("ERRNO=%d", abs(error));
        if (message_id)
                ADD("MESSAGE_ID=%s", message_id);
        for (size_t i = 0; i < n && k < max; i++)
                if (fields[i].value)
                        ADD("%s=%s", fields[i].key, fields[i].value);
#undef ADD
        r = sd_journal_sendv(iov, (int) k);
        for (size_t i = 0; i < k; i++)
                free(strs[i]);
        return r;
oom:
        for (size_t i = 0; i < k; i++)
                free(strs[i]);
        return -ENOMEM;
}

_printf_(9, 0) static int log_dispatch(int level, int error, const char *file, int line, const char *func,
                                       const char *message_id, const LogField *fields, size_t n,
                                       const char *format, va_list ap) {
        char message[2048];
        int saved = errno;

        if (level > max_level)
                return error == 0 ? 0 : -abs(error);

        /* %m means the error we were given, not whatever errno happens to be */
        errno = abs(error);
        (void) vsnprintf(message, sizeof message, format, ap);

        if (!use_journal || journal_write(level, error, file, line, func, message_id, fields, n, message) < 0)
                console_write(level, message_id, fields, n, message);

        errno = saved;
        return error == 0 ? 0 : -abs(error);
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = log_dispatch(level, error, file, line, func, NULL, NULL, 0, format, ap);
        va_end(ap);
        return r;
}

int log_event_internal(int level, int error, const char *file, int line, const char *func,
                       const char *message_id, const LogField *fields, size_t n_fields,
                       const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = log_dispatch(level, error, file, line, func, message_id, fields, n_fields, format, ap);
        va_end(ap);
        return r;
}
