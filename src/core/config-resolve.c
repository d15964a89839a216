/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which configuration applies (config.h): the situation's overlays
 * (config_situate()) and the first matching [device] section over [apst]
 * (config_resolve()). Pure; the grammar is config.c's.
 */

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "macro.h"

static bool glob_match(const char *glob, const char *s) {
        if (!glob)
                return true;    /* no such match_ key: no constraint */
        if (!s)
                return false;   /* unknown property never matches a given key */
        return fnmatch(glob, s, 0) == 0;
}

static bool device_matches(const DeviceSection *d, const DeviceIdent *dev) {
        char pci[16];

        if (!glob_match(d->match_name, dev->name) || !glob_match(d->match_model, dev->model) ||
            !glob_match(d->match_serial, dev->serial) || !glob_match(d->match_firmware, dev->firmware))
                return false;
        if (d->match_pci) {
                if (dev->pci_vendor == 0 && dev->pci_device == 0)
                        return false;
                snprintf(pci, sizeof(pci), "%04x:%04x", dev->pci_vendor, dev->pci_device);
                if (fnmatch(d->match_pci, pci, 0) != 0)
                        return false;
        }
        return true;
}

static int strdup_maybe(char **dst, const char *src) {
        char *t = NULL;

        if (src) {
                t = strdup(src);
                if (!t)
                        return -ENOMEM;
        }
        free(*dst);
        *dst = t;
        return 0;
}

/* A deep copy of everything but the situation sections. */
static int config_copy_plain(const Config *c, Config *x) {
        config_init(x);
        x->apst = c->apst;
        x->daemon = c->daemon;
        x->cpu = c->cpu;
        x->cpu.governor = x->cpu.epp = NULL;
        x->watch = c->watch;
        x->holds = c->holds;
        if (strdup_maybe(&x->path, c->path) < 0 || strdup_maybe(&x->cpu.governor, c->cpu.governor) < 0 ||
            strdup_maybe(&x->cpu.epp, c->cpu.epp) < 0 || strdup_maybe(&x->metrics.path, c->metrics.path) < 0)
                return -ENOMEM;
        if (c->n_devices == 0)
                return 0;
        x->devices = calloc(c->n_devices, sizeof(DeviceSection));
        if (!x->devices)
                return -ENOMEM;
        x->n_devices = c->n_devices;
        for (size_t i = 0; i < c->n_devices; i++) {
                const DeviceSection *f = &c->devices[i];
                DeviceSection *d = &x->devices[i];

                d->enable = f->enable;
                d->set = f->set;
                d->apst = f->apst;
                if (strdup_maybe(&d->name, f->name) < 0 || strdup_maybe(&d->match_name, f->match_name) < 0 ||
                    strdup_maybe(&d->match_model, f->match_model) < 0 ||
                    strdup_maybe(&d->match_serial, f->match_serial) < 0 ||
                    strdup_maybe(&d->match_pci, f->match_pci) < 0 ||
                    strdup_maybe(&d->match_firmware, f->match_firmware) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int overlay_apply(Config *x, const ConfigOverlay *o) {
        const CpuConfig *f = &o->cpu;
        CpuConfig *cpu = &x->cpu;
        DeviceSection *d;

        switch (o->target) {
        case OVERLAY_APST:
                config_apst_overlay(&x->apst, o->dev.set, &o->dev.apst);
                return 0;
        case OVERLAY_DEVICE:
                if (o->device >= x->n_devices)
                        return -EINVAL;
                d = &x->devices[o->device];
                config_apst_overlay(&d->apst, o->dev.set, &o->dev.apst);
                d->set |= o->dev.set;
                if (o->enable_set)
                        d->enable = o->dev.enable;
                return 0;
        case OVERLAY_CPU:
                if (o->cpu_set & CPU_KEY_PIN)
                        cpu->pin = f->pin;
                if (o->cpu_set & CPU_KEY_RELEASE_AFTER)
                        cpu->release_after_ms = f->release_after_ms;
                if (o->cpu_set & CPU_KEY_MIN_FREQ)
                        cpu->min_freq = f->min_freq;
                if (o->cpu_set & CPU_KEY_MAX_FREQ)
                        cpu->max_freq = f->max_freq;
                if (o->cpu_set & CPU_KEY_CPUS) {
                        cpu->select = f->select;
                        cpu->cpus = f->cpus;
                }
                if ((o->cpu_set & CPU_KEY_GOVERNOR) && strdup_maybe(&cpu->governor, f->governor) < 0)
                        return -ENOMEM;
                if ((o->cpu_set & CPU_KEY_EPP) && strdup_maybe(&cpu->epp, f->epp) < 0)
                        return -ENOMEM;
                return 0;
        case _OVERLAY_TARGET_MAX:
        case _OVERLAY_TARGET_INVALID:
                break;
        }
        return -EINVAL;
}

const char *config_section_name(const Config *c, const char *name) {
        if (!name)
                return NULL;
        for (size_t i = 0; i < c->n_devices; i++)
                if (c->devices[i].name && strcmp(c->devices[i].name, name) == 0)
                        return c->devices[i].name;
        return NULL;
}

int config_copy(const Config *c, Config *ret) {
        Config x;
        int r;

        if (c->n_overlays > 0)
                return -EINVAL;
        r = config_copy_plain(c, &x);
        if (r < 0) {
                config_done(&x);
                return r;
        }
        *ret = x;
        return 0;
}

int config_situate(const Config *c, const Situation *s, Config *ret) {
        Config x;
        int r;

        r = config_copy_plain(c, &x);
        for (unsigned pass = 0; pass < 2 && r >= 0; pass++)
                for (size_t i = 0; i < c->n_overlays && r >= 0; i++)
                        if (config_overlay_applies(&c->overlays[i], s, pass))
                                r = overlay_apply(&x, &c->overlays[i]);
        if (r < 0) {
                config_done(&x);
                return r;
        }
        *ret = x;
        return 0;
}

bool config_resolve(const Config *c, const DeviceIdent *dev, ApstParams *ret, const char **ret_section) {
        ApstParams a = c->apst;

        for (size_t i = 0; i < c->n_devices; i++) {
                const DeviceSection *d = &c->devices[i];

                if (!device_matches(d, dev))
                        continue;

                /* the [apst] keys the section sets, through the key table */
                config_apst_overlay(&a, d->set, &d->apst);

                if (ret)
                        *ret = a;
                if (ret_section)
                        *ret_section = d->name;
                return d->enable;
        }

        if (ret)
                *ret = a;
        if (ret_section)
                *ret_section = NULL;
        return true;
}
