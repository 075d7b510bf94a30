// SPDX-License-Identifier: MIT
/* select.c — `--device PATH|BDF`: find the requested function among the enumerated tnpu devices. */
#include "accel_tools.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int find_bdf(const char *bdf, const struct ai_pci_dev *devs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(devs[i].bdf, bdf))
			return (int)i;
	return -ENOENT;
}

int ai_select_device(const char *sysfs_root, const char *spec, const struct ai_pci_dev *devs, size_t n,
		     char *err, size_t errlen)
{
	char bdf[32], resolved[PATH_MAX];
	const char *name = spec;
	int idx, ret;

	if (ai_normalise_bdf(spec, bdf, sizeof(bdf))) {
		idx = find_bdf(bdf, devs, n);
		if (idx < 0)
			snprintf(err, errlen, "%s: no tnpu device at this PCI address", spec);
		return idx;
	}
	/* A path: resolve symlinks (/dev/accel0 -> /dev/accel/accel0) to reach the accelN name. */
	if (strchr(spec, '/')) {
		if (!realpath(spec, resolved)) {
			ret = -errno;
			snprintf(err, errlen, "%s: %s", spec, strerror(errno));
			return ret == -ENOENT ? -ENOENT : -EINVAL;
		}
		name = resolved;
	}
	ret = ai_node_to_bdf(sysfs_root, name, bdf, sizeof(bdf));
	if (ret == -EINVAL) {
		snprintf(err, errlen, "%s: not a PCI address or an accel device (/dev/accel/accelN)", spec);
		return ret;
	}
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", spec,
			 ret == -ENOENT ? "no such accel device" : "accel device is not on PCI");
		return -ENOENT;
	}
	idx = find_bdf(bdf, devs, n);
	if (idx < 0)
		snprintf(err, errlen, "%s: %s is not a tnpu device", spec, bdf);
	return idx;
}
