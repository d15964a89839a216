/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What `nvme-apstd doctor` prints (src/cli/cmd-doctor.c): a DoctorReport (doctor.h, the
 * reasoning) in words or as JSON, the verb's own output like every other verb's. */

#include "doctor.h"

/* Human text / JSON (schema in nvme-apstd(8), DOCTOR). @ret malloc'd. Return: 0 or -ENOMEM. */
int doctor_format_text(const DoctorReport *r, char **ret);
int doctor_format_json(const DoctorReport *r, char **ret);
