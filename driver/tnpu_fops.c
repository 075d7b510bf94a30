// SPDX-License-Identifier: GPL-2.0-only
/*
 * tnpu file operations: the accel defaults plus fdinfo (tnpu_fdinfo.c), every ioctl filtered
 * before it reaches the DRM core.
 *
 * An accel file has no DRM master, yet 6.12's core serves its legacy and master ioctls: GET_MAGIC
 * dereferences the missing master under dev->master_mutex (an oops that leaves the mutex held, so
 * every later GET_UNIQUE/SET_MASTER/DROP_MASTER blocks for ever), and GET_UNIQUE does the same.
 * So only the core ioctls an accel client needs pass (uapi.md lists them); the rest fail with
 * -EACCES (what libdrm's drmIsMaster() expects of a non-master), ioctls of another type
 * with -ENOTTY as in drm_ioctl(). The core copies user-sized syncobj arrays with kmalloc and no
 * limit: their count is bounded here too.
 */
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/uaccess.h>

#include <drm/drm.h>
#include <drm/drm_accel.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>

#include "tnpu_drv.h"
#include "tnpu_accel.h"

/* Offset of count_handles in the core struct of @nr; -1: @nr carries no user-sized array. */
static int tnpu_syncobj_count_offset(unsigned int nr)
{
	switch (nr) {
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_WAIT):
		return offsetof(struct drm_syncobj_wait, count_handles);
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT):
		return offsetof(struct drm_syncobj_timeline_wait, count_handles);
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_RESET):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_SIGNAL):
		return offsetof(struct drm_syncobj_array, count_handles);
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_QUERY):
		return offsetof(struct drm_syncobj_timeline_array, count_handles);
	default:
		return -1;
	}
}

static bool tnpu_core_ioctl_allowed(unsigned int nr)
{
	switch (nr) {
	case DRM_IOCTL_NR(DRM_IOCTL_VERSION):
	case DRM_IOCTL_NR(DRM_IOCTL_GET_CAP):
	case DRM_IOCTL_NR(DRM_IOCTL_GEM_CLOSE):
	case DRM_IOCTL_NR(DRM_IOCTL_PRIME_HANDLE_TO_FD):
	case DRM_IOCTL_NR(DRM_IOCTL_PRIME_FD_TO_HANDLE):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_CREATE):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_DESTROY):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_WAIT):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_RESET):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_SIGNAL):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_QUERY):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_TRANSFER):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL):
	case DRM_IOCTL_NR(DRM_IOCTL_SYNCOBJ_EVENTFD):
		return true;
	default:
		return false;
	}
}

/*
 * 0 if @cmd may go on to the DRM core, else the errno. The count is read here and again by the
 * core: a thread racing to change it in between is not stopped (6.12's core has no limit).
 */
static int tnpu_ioctl_filter(unsigned int cmd, unsigned long arg)
{
	unsigned int nr = DRM_IOCTL_NR(cmd);
	u32 in_size = (_IOC_DIR(cmd) & _IOC_WRITE) ? _IOC_SIZE(cmd) : 0;
	int off;
	u32 count;

	if (_IOC_TYPE(cmd) != DRM_IOCTL_BASE)
		return -ENOTTY;
	if (nr >= DRM_COMMAND_BASE && nr < DRM_COMMAND_END)
		return 0;	/* driver ioctls: drm_ioctl checks them against tnpu_ioctls */
	if (!tnpu_core_ioctl_allowed(nr))
		return -EACCES;
	off = tnpu_syncobj_count_offset(nr);
	/* the core zero-fills what the user's struct does not cover */
	if (off < 0 || off + sizeof(count) > in_size)
		return 0;
	if (get_user(count, (u32 __user *)(arg + off)))
		return -EFAULT;
	return count > DRM_TNPU_MAX_SYNCOBJ_HANDLES ? -EINVAL : 0;
}

static long tnpu_unlocked_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	int ret = tnpu_ioctl_filter(cmd, arg);

	return ret ? ret : drm_ioctl(filp, cmd, arg);
}

#ifdef CONFIG_COMPAT
static long tnpu_compat_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	int ret = tnpu_ioctl_filter(cmd, (unsigned long)compat_ptr(arg));

	return ret ? ret : drm_compat_ioctl(filp, cmd, arg);
}
#else
#define tnpu_compat_ioctl NULL
#endif

const struct file_operations tnpu_fops = {
	/* DRM_ACCEL_FOPS with the two ioctl entry points replaced */
	.owner = THIS_MODULE,
	.open = accel_open,
	.release = drm_release,
	.unlocked_ioctl = tnpu_unlocked_ioctl,
	.compat_ioctl = tnpu_compat_ioctl,
	.poll = drm_poll,
	.read = drm_read,
	.llseek = noop_llseek,
	.mmap = drm_gem_mmap,
	.show_fdinfo = drm_show_fdinfo,
	.fop_flags = FOP_UNSIGNED_OFFSET,
};
