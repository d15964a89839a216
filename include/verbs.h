/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Subcommands; each parses its own options (getopt_long) and returns an exit status. */

#include "cli.h"

int verb_simulate(int argc, char *argv[]);
