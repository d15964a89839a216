/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* PLACEHOLDER for calib-use's calib.c (see calib.h): format and save only. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "calib.h"
#include "fileio.h"
#include "macro.h"

int calib_format(const Calibration *c, char **ret_text) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return -ENOMEM;
        fprintf(f, "# nvme-apstd calibration v1\nmodel=%s\nfirmware=%s\nmeasured_realtime_usec=%" PRIu64
                   "\nawake_median_us=%" PRIu32 "\n",
                c->model, c->firmware, c->measured_realtime_usec, c->awake_median_us);
        for (size_t i = 0; i < c->n_states; i++) {
                const CalibState *s = &c->states[i];
                fprintf(f, "ps%u=enlat:%" PRIu32 " exlat:%" PRIu32 " samples:%" PRIu32 " median:%" PRIu32 " p99:%" PRIu32 "\n",
                        s->ps, s->advertised_enlat_us, s->advertised_exlat_us, s->samples, s->wake_median_us,
                        s->wake_p99_us);
        }
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret_text = buf;
        return 0;
}

/* Keep [A-Za-z0-9._-], everything else as %XX: one file name per model and firmware. */
static void escape(FILE *f, const char *s) {
        for (; *s; s++) {
                unsigned char ch = (unsigned char) *s;
                if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                    ch == '_' || ch == '-')
                        fputc(ch, f);
                else
                        fprintf(f, "%%%02X", ch);
        }
}

int calib_path(const char *state_dir, const char *model, const char *firmware, char **ret_path) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return -ENOMEM;
        fprintf(f, "%s/calibration/", state_dir);
        escape(f, model);
        fputc('@', f);
        escape(f, firmware);
        fputs(".calib", f);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret_path = buf;
        return 0;
}

int calib_save(const char *state_dir, const Calibration *c) {
        _cleanup_free_ char *path = NULL, *text = NULL, *dir = NULL;
        int r;

        if (asprintf(&dir, "%s/calibration", state_dir) < 0)
                return -ENOMEM;
        if (mkdir(state_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        r = calib_path(state_dir, c->model, c->firmware, &path);
        if (r < 0)
                return r;
        r = calib_format(c, &text);
        if (r < 0)
                return r;
        return write_file_atomic(path, text, strlen(text), 0644);
}
