/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The record of a controller's original APST table (the one found before the
 * daemon first wrote), kept in $RUNTIME_DIRECTORY/ctrl-NAME.orig so that a
 * daemon restarted after a crash restores what the kernel had, not what its
 * predecessor wrote. A crash record (record.h) of kind "apst", version 1:
 *
 *   # nvme-apstd apst record v1
 *   model=Samsung SSD 970 EVO Plus 2TB
 *   serial_hash=8c2f6e0b1a4d3e57
 *   apste=1
 *   table=0x0000000000000000 0x... (32 entries, as apst_table_to_hex())
 *
 * Bound to the drive by model and a 64-bit FNV-1a hash of the serial (the
 * serial itself is never written). The same four lines without the header
 * line are what nvme-apstd wrote before records were versioned; they are still
 * read, so that a daemon that crashed, was upgraded and started again restores
 * the original table rather than its predecessor's.
 */

#include <stdbool.h>

#include "apst.h"
#include "idctrl.h"

#define APST_RECORD_KIND "apst"
#define APST_RECORD_VERSION 1

/* Pure. Return: 0 (@ret malloc'd) or -ENOMEM. */
int apst_record_format(const IdCtrl *id, const ApstTable *t, char **ret);

/**
 * apst_record_parse() - the table recorded in @text, if it is for the drive @id (pure)
 * Return: 0; -ESTALE (another drive's: model or serial differ); -EBADMSG
 * (truncated, garbage, a key missing, repeated or unknown, or a table that
 * apst_table_check() refuses for @id); -EPROTONOSUPPORT (another version).
 */
int apst_record_parse(const char *text, const IdCtrl *id, ApstTable *ret);

/* Write the record atomically. Return: 0 or -errno. */
int apst_record_save(const char *path, const IdCtrl *id, const ApstTable *t);

/* Read and parse. Return: as apst_record_parse(), or -ENOENT (no record) and other -errno. */
int apst_record_load(const char *path, const IdCtrl *id, ApstTable *ret);

/**
 * apst_record_take_original() - the table to put back later, recorded before anything is written
 * @found: what the controller holds now
 * @ret_orig: @found, or the table in an existing record for this drive (a previous run that
 *      did not put its table back)
 * @ret_from_record: whether @ret_orig came from the record
 * @ret_load_error: may be NULL; 0, or the error of a record that exists but was not usable
 * Return: 0, or negative errno when the record could not be written (@ret_orig is set).
 */
int apst_record_take_original(const char *path, const IdCtrl *id, const ApstTable *found, ApstTable *ret_orig,
                              bool *ret_from_record, int *ret_load_error);
