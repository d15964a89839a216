/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The retry schedule; see retry.h. */

#include <errno.h>

#include "nvme-spec.h"
#include "macro.h"
#include "retry.h"

uint64_t retry_delay_usec(unsigned n_done) {
        return RETRY_BASE_USEC << MIN(n_done, RETRY_MAX_SHIFT);
}

bool retry_is_transient(int error, uint16_t nvme_status) {
        if (error == -EREMOTEIO)
                return !(nvme_status & CTRL_STATUS_DNR);
        return error == -EINTR || error == -EAGAIN || error == -EBUSY || error == -ETIMEDOUT;
}
