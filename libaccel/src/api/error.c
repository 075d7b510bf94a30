/* SPDX-License-Identifier: MIT */
/* error.c - per-device error messages and errno names. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "internal.h"

int accel_seterr(struct accel_dev *dev, int err, const char *fmt, ...)
{
	va_list ap;

	if (dev) {
		va_start(ap, fmt);
		vsnprintf(dev->err, sizeof(dev->err), fmt, ap);
		va_end(ap);
	}
	return err;
}

int accel_limit(struct accel_dev *dev, int err, const char *fmt, ...)
{
	va_list ap;

	if (dev) {
		va_start(ap, fmt);
		vsnprintf(dev->err, sizeof(dev->err), fmt, ap);
		va_end(ap);
	}
	return dev && dev->query ? -EOPNOTSUPP : err;
}

void accel_clearerr(struct accel_dev *dev)
{
	if (dev)
		dev->err[0] = 0;
}

const char *accel_last_error(const struct accel_dev *dev)
{
	return dev ? dev->err : "no device";
}

const char *accel_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case -EINVAL: return "-EINVAL: invalid argument";
	case -ENOMEM: return "-ENOMEM: out of memory";
	case -ENODEV: return "-ENODEV: no such device";
	case -ENOENT: return "-ENOENT: no such file or device";
	case -EACCES: return "-EACCES: permission denied";
	case -EIO: return "-EIO: device error while running the job";
	case -ETIME: return "-ETIME: timed out";
	case -ERANGE: return "-ERANGE: tensor outside its buffer";
	case -ENOTSUP: return "-ENOTSUP: not supported by this device or backend";
	case -E2BIG: return "-E2BIG: too large for the device";
	case -ECANCELED: return "-ECANCELED: a dependency failed";
	case -EBUSY: return "-EBUSY: busy";
	case -EFAULT: return "-EFAULT: bad address";
	case -EOVERFLOW: return "-EOVERFLOW: size overflow";
	case -EBADFD: return "-EBADFD: device file marked faulty";
	default: break;
	}
	if (err >= 0)
		return "not an error code";
	/* Any other errno (the drm backend passes the kernel's and the C library's through): its
	 * symbolic name and strerror text, in a per-thread buffer. */
	static _Thread_local char other[96];
	const char *name = strerrorname_np(-err);

	if (name)
		snprintf(other, sizeof(other), "-%s: %s", name, strerror(-err));
	else
		snprintf(other, sizeof(other), "%d: unknown error", err);
	return other;
}
