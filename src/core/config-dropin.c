/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Drop-in order and masking (config-dropin.h). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config-dropin.h"
#include "macro.h"

/* /etc for the admin, /run for what is generated at boot, /usr/local/lib and /usr/lib for packages:
 * the order of systemd's own daemons (CONF_PATHS in systemd's src/basic/path-lookup.h). */
const char *const config_dropin_dirs[CONFIG_DROPIN_DIRS_N] = {
        "/etc/nvme-apstd.conf.d",
        "/run/nvme-apstd.conf.d",
        "/usr/local/lib/nvme-apstd.conf.d",
        "/usr/lib/nvme-apstd.conf.d",
};

bool config_dropin_name_ok(const char *name) {
        size_t len = strlen(name);

        return name[0] != '.' && len > strlen(".conf") && strcmp(name + len - strlen(".conf"), ".conf") == 0;
}

static int by_name_then_dir(const void *a, const void *b, void *userdata) {
        const DropinEntry *in = userdata;
        const DropinEntry *x = &in[*(const size_t *) a], *y = &in[*(const size_t *) b];
        int c = strcmp(x->name, y->name);

        if (c != 0)
                return c;
        return x->dir < y->dir ? -1 : x->dir > y->dir;
}

int config_dropins_order(const DropinEntry *in, size_t n, size_t **ret_order, size_t *ret_n) {
        _cleanup_free_ size_t *idx = NULL;
        size_t k = 0, m = 0;

        idx = n > 0 ? calloc(n, sizeof(size_t)) : NULL;
        if (n > 0 && !idx)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (config_dropin_name_ok(in[i].name))
                        idx[k++] = i;
        if (k > 1)
                qsort_r(idx, k, sizeof(size_t), by_name_then_dir, (void *) in);

        /* The first of each name is its highest-priority copy: kept unless it masks the name. */
        for (size_t i = 0; i < k; i++) {
                if (i > 0 && strcmp(in[idx[i]].name, in[idx[i - 1]].name) == 0)
                        continue;
                if (!in[idx[i]].masked)
                        idx[m++] = idx[i];
        }
        if (m == 0) {
                *ret_order = NULL;
                *ret_n = 0;
                return 0;
        }
        *ret_order = TAKE_PTR(idx);
        *ret_n = m;
        return 0;
}
