// SPDX-License-Identifier: MIT
/*
 * query.c — DRM_IOCTL_TNPU_QUERY through libdrm's drmIoctl (the project's rule for DRM ioctls: it restarts
 * on EINTR/EAGAIN). Answers are size-versioned (Documentation/uapi.md): we pass our struct size and the
 * kernel truncates or zero-fills, so an older or newer driver both work.
 */
#include "accel_tools.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <xf86drm.h>

int ai_open_accel(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int query(int fd, uint32_t type, void *out, size_t size, uint32_t *answer_size)
{
	struct drm_tnpu_query q = {
		.type = type,
		.size = (uint32_t)size,
		.pointer = (uint64_t)(uintptr_t)out,
	};

	memset(out, 0, size);
	if (drmIoctl(fd, DRM_IOCTL_TNPU_QUERY, &q))
		return -errno;
	if (answer_size)
		*answer_size = q.size;
	return 0;
}

int ai_query_caps(int fd, struct drm_tnpu_caps *caps)
{
	return query(fd, DRM_TNPU_QUERY_CAPS, caps, sizeof(*caps), NULL);
}

int ai_query_counters(int fd, struct drm_tnpu_counters *c, uint32_t *answer_size)
{
	return query(fd, DRM_TNPU_QUERY_COUNTERS, c, sizeof(*c), answer_size);
}

int ai_drm_version(int fd, char *name, size_t name_len, char *version, size_t version_len)
{
	drmVersionPtr v = drmGetVersion(fd);

	if (!v)
		return errno ? -errno : -ENODEV;
	/* Since Linux 6.14 (and in backports) the DRM core reports the date as "0": leave it out. */
	bool date = v->date && v->date[0] && strcmp(v->date, "0");

	ai_strlcpy_line(name, v->name ? v->name : "", name_len);
	snprintf(version, version_len, "%d.%d.%d%s%s", v->version_major, v->version_minor,
		 v->version_patchlevel, date ? " " : "", date ? v->date : "");
	drmFreeVersion(v);
	return 0;
}
