/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The crash records' header line; see record-format.h. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "record-format.h"
#include "util.h"

#define RECORD_PREFIX "# nvme-apstd "

int record_parse_header(const char *text, const char *kind, unsigned version, const char **ret_body) {
        const char *p = text, *nl;
        size_t klen = strlen(kind);
        char num[16];
        uint32_t v;

        if (!p || strncmp(p, RECORD_PREFIX, strlen(RECORD_PREFIX)) != 0)
                return -EBADMSG;
        p += strlen(RECORD_PREFIX);
        if (strncmp(p, kind, klen) != 0 || strncmp(p + klen, " record v", strlen(" record v")) != 0)
                return -EBADMSG;
        p += klen + strlen(" record v");
        nl = strchr(p, '\n');
        if (!nl || (size_t) (nl - p) >= sizeof num)
                return -EBADMSG;
        (void) snprintf(num, sizeof num, "%.*s", (int) (nl - p), p);
        if (safe_atou32(num, &v) < 0 || v == 0)
                return -EBADMSG;
        if (v != version)
                return -EPROTONOSUPPORT;
        *ret_body = nl + 1;
        return 0;
}
