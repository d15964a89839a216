/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Reading the kernel's view of NVMe controllers from sysfs (I/O, no policy).
 *
 * Every function takes the sysfs root ("/sys" on a live system) so tests can
 * point it at a recorded tree. Directories are walked with opendir/readdir,
 * never glob()/scandir(), which umockdev does not redirect (doc/testing.md).
 * Strings are trimmed of the kernel's space padding and sanitised to
 * printable ASCII.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sysinfo.h"
#include "watch.h"

/* true for "nvme<digits>" */
bool sysfs_is_ctrl_name(const char *name);

/**
 * sysfs_list_controllers() - names of /sys/class/nvme/nvme<N>, sorted by N
 * @ret: malloc'd array of SysCtrl with every field read (free() it)
 * Return: 0 (also when the class directory is missing: no controllers) or -errno.
 */
int sysfs_list_controllers(const char *sysroot, SysCtrl **ret, size_t *ret_n);

/* Read one controller's attributes. -ENOENT when it is gone. */
int sysfs_read_controller(const char *sysroot, const char *name, SysCtrl *ret);

/* DMI strings for the quirk list; missing files give "". Never fails. */
void sysfs_read_platform(const char *sysroot, SysPlatform *ret);

/**
 * sysfs_ctrl_io_count() - completed I/Os (reads + writes + discards + flushes)
 * summed over the controller's namespaces: nvme<N>n<M> (plain layout) and the
 * hidden per-path disks nvme<N>c<C>n<M> (multipath layout, doc/sysfs.md), whose
 * `stat` the multipath head does not reflect.
 * Return: 0, or -ENOENT when no namespace stat is readable.
 */
int sysfs_ctrl_io_count(const char *sysroot, const char *name, uint64_t *ret);

/**
 * sysfs_ctrl_block_stat() - the block counters the I/O watcher reads (watch.h), summed
 * over the same namespaces as sysfs_ctrl_io_count(): I/Os, their ticks, in flight;
 * io_ticks is the largest of the disks' (the controller was busy at least that long).
 * A sysfs read: never a command to the drive.
 * Return: 0, or -ENOENT when no namespace stat is readable.
 */
int sysfs_ctrl_block_stat(const char *sysroot, const char *name, WatchStat *ret);

/**
 * sysfs_ctrl_diskseqs() - the `diskseq` of each of the controller's namespace disks (the same
 * disks as sysfs_ctrl_block_stat(): in the multipath layout the hidden per-path ones, which have
 * a diskseq but no `dev`), what the eBPF program tells disks apart by (bpfwatch.h).
 * Return: 0 with *@ret_n set (at most @max), -ENOENT when none is readable, or -errno.
 */
int sysfs_ctrl_diskseqs(const char *sysroot, const char *name, uint64_t *ret, size_t max, size_t *ret_n);

/* The `diskseq` of /sys/class/block/@disk (a whole disk). -ENOENT, -EINVAL (a partition, or no
 * diskseq: kernel < 5.15), or -errno. */
int sysfs_block_diskseq(const char *sysroot, const char *disk, uint64_t *ret);

/**
 * sysfs_list_disks() - the whole disks of /sys/class/block (hidden ones included), sorted by name
 * @ret: malloc'd array of @ret_n names of at most 32 bytes each (free() it)
 */
int sysfs_list_disks(const char *sysroot, char (**ret)[32], size_t *ret_n);

/* Read a small attribute file into @buf, trimmed; -errno on failure. */
int sysfs_read_attr(const char *path, char *buf, size_t n);

/**
 * sysfs_ctrl_queue_limits() - the request size limits of a controller's first namespace
 * @disk: set to its name ("nvme0n1", or "nvme0c0n1" in the multipath layout, whose
 *      per-path disk carries the controller's own limits), lowest name first
 * @ret_max_hw_kb, @ret_max_kb: queue/max_hw_sectors_kb and queue/max_sectors_kb
 *
 * Return: 0; -ENOENT when the controller has no namespace; -ENODATA when @disk was
 * found but its queue files are unreadable (@disk is set then too); -errno.
 */
int sysfs_ctrl_queue_limits(const char *sysroot, const char *name, char *disk, size_t disk_size,
                            uint32_t *ret_max_hw_kb, uint32_t *ret_max_kb);

/**
 * sysfs_ctrl_namespace() - the controller's first namespace, as `calibrate` reads from it
 * @ret_dev: its block device node's name: "nvme0n1" (in the multipath layout the head
 *      "nvme<S>n<M>" of the per-path disk "nvme<S>c<C>n<M>")
 * @ret_nsid: its `nsid`
 * @ret_lba_bytes: queue/logical_block_size (the head's in the multipath layout)
 * Return: 0; -ENOENT when it has no namespace; -ENODATA when one is found but its nsid or
 * block size is unreadable; -errno.
 */
int sysfs_ctrl_namespace(const char *sysroot, const char *name, char *ret_dev, size_t dev_size, uint32_t *ret_nsid,
                         uint32_t *ret_lba_bytes);
