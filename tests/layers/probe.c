/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The probe of tests/layers/test-layer-includes.sh: preprocessed with one layer's include path
 * and PROBE_HEADER set to a header name, once per name. A higher layer's header must not be
 * found; the layer's own headers and those below it must be (the control, so the test cannot
 * pass because nothing is ever found). */
#include PROBE_HEADER
