/* SPDX-License-Identifier: MIT */
/* device.c - opening a device and choosing its backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define ACCEL_DEFAULT_NODE "/dev/accel/accel0"

static int open_path(struct accel_dev *dev, const char *path)
{
	if (!strcmp(path, "sim"))
		return accel_sim_open(dev, "");
	if (!strncmp(path, "sim:", 4))
		return accel_sim_open(dev, path + 4);
	return accel_drm_open(dev, path);
}

int accel_open(const char *path, struct accel_dev **out)
{
	return accel_open_msg(path, NULL, 0, out);
}

int accel_open_msg(const char *path, char *msg, size_t msglen, struct accel_dev **out)
{
	struct accel_dev *dev;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	if (!path || !*path) {
		const char *env = getenv("ACCEL_DEVICE");

		if (env && *env)
			path = env;
		else if (access(ACCEL_DEFAULT_NODE, F_OK) == 0)
			path = ACCEL_DEFAULT_NODE;
		else
			path = "sim";
	}
	ret = open_path(dev, path);
	if (msg && msglen)
		snprintf(msg, msglen, "%s", ret ? dev->err : "");
	if (ret) {
		free(dev);
		return ret;
	}
	*out = dev;
	return 0;
}

void accel_close(struct accel_dev *dev)
{
	if (!dev)
		return;
	if (dev->ops && dev->ops->close)
		dev->ops->close(dev);
	accel_trace_free(dev);
	free(dev);
}

int accel_query_caps(struct accel_dev *dev, struct accel_caps *out)
{
	if (!dev || !out)
		return -EINVAL;
	*out = dev->caps;
	return 0;
}
