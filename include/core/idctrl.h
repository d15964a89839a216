/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Identify Controller data, decoded (pure: no I/O).
 *
 * The daemon gets the 4096-byte Identify Controller structure from the drive
 * (through nvme-admin.c, the only libnvme user), and `plan`/`simulate` read it from a
 * file written by nvme-cli: `nvme id-ctrl -b` (the same 4096 bytes) or
 * `nvme id-ctrl -o json`. Both end up here, in one representation, so the
 * policies never see where the data came from. Layout: NVMe base spec,
 * Identify Controller (npss at byte 263, apsta at 265, PSD n at 2048 + 32n).
 *
 * Everything in it came from a drive or a file and is untrusted: strings are
 * sanitised to printable ASCII and trimmed, npss > 31 is rejected as the
 * kernel does.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDCTRL_SIZE 4096u          /* bytes of Identify Controller data (CNS 01h) */
#define IDCTRL_MAX_PS 32u          /* power state descriptors in the structure */

typedef struct IdPsd {
        uint32_t max_power_uw;     /* MP scaled by MXPS (0.01 W or 0.0001 W units) into µW */
        bool non_operational;      /* NOPS: may be an APST target */
        uint32_t enlat_us;         /* entry latency, µs; 0 = not reported */
        uint32_t exlat_us;         /* exit latency, µs; 0 = not reported */
        uint32_t idle_power_uw;    /* IDLP scaled by IPS into µW; 0 = not reported */
        uint32_t active_power_uw;  /* ACTP scaled by APS into µW; 0 = not reported */
} IdPsd;

typedef struct IdCtrl {
        uint16_t vid;              /* PCI vendor id as the controller reports it */
        uint16_t ssvid;
        char serial[21];           /* trimmed, printable; never logged */
        char model[41];            /* trimmed, printable */
        char firmware[9];          /* trimmed, printable */
        uint8_t npss;              /* highest power state index (0-based count), <= 31 */
        bool apst_supported;       /* APSTA bit 0 */
        IdPsd psd[IDCTRL_MAX_PS];  /* psd[0..npss] valid, the rest zero */
} IdCtrl;

/**
 * idctrl_parse_binary() - decode 4096 bytes of Identify Controller data
 * @buf: the data as the drive returned it (little endian)
 * @len: its length; anything but IDCTRL_SIZE is -EBADMSG (truncated file)
 * @ret: filled in on success only
 *
 * Return: 0, -EBADMSG for a wrong size, -ERANGE for npss > 31.
 */
int idctrl_parse_binary(const void *buf, size_t len, IdCtrl *ret);

/**
 * idctrl_parse_json() - decode the JSON that `nvme id-ctrl -o json` prints
 * @text: NUL-terminated JSON text
 * @ret: filled in on success only
 *
 * Return: 0, -EBADMSG when it is not JSON or lacks the fields (npss, psds,
 * mn, fr, apsta ...), -ERANGE for npss > 31 or an out-of-range number,
 * -ENOMEM. Input beyond 1 MiB or nested deeper than 16 levels is -EBADMSG.
 * Parsed by json-c: for a key given twice the last one counts.
 */
int idctrl_parse_json(const char *text, IdCtrl *ret);

/**
 * idctrl_parse_any() - detect the format (binary or JSON) and decode it
 *
 * A buffer whose first non-blank byte is '{' is JSON; one of exactly
 * IDCTRL_SIZE bytes is binary; anything else is -EBADMSG.
 */
int idctrl_parse_any(const void *buf, size_t len, IdCtrl *ret);

/**
 * idctrl_parse_any_why() - idctrl_parse_any(), saying why it failed
 * @reason: on failure, a sentence naming the field and what is wrong with it
 *          (e.g. "psds[2]: \"exit_lat\" missing", "\"npss\": 32 is larger than 31");
 *          "" on success or when the error has no more to say (-EINVAL, -ENOMEM).
 *          May be NULL.
 * @reason_size: its size; IDCTRL_REASON_MAX holds every message
 */
#define IDCTRL_REASON_MAX 160u
int idctrl_parse_any_why(const void *buf, size_t len, IdCtrl *ret, char *reason, size_t reason_size);

/* The floors for gaps a wake-up hides (gaphist.h): 0 (a drive awake), then the exit latencies
 * the non-operational states advertise, in ns, distinct, ascending, the @n - 1 shortest; the
 * rest of @ret is 0. Return how many (0, and @ret all 0, for a drive without such a state). */
size_t idctrl_wake_floors(const IdCtrl *id, uint64_t *ret, size_t n);

/* Copy a space-padded, not necessarily terminated field, keeping printable ASCII only
 * (others become '?'), and trim trailing blanks. @dst has room for @n + 1 bytes. */
void idctrl_copy_string(char *dst, const void *src, size_t n);
