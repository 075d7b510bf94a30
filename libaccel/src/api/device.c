/* SPDX-License-Identifier: MIT */
/* device.c - opening a device and choosing its backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph.h"
#include "internal.h"
#include "sparse.h"

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
	dev->jobs.prev = dev->jobs.next = &dev->jobs;
	dev->objs.prev = dev->objs.next = &dev->objs;
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

void accel_obj_add(struct accel_link *head, struct accel_link *l, enum accel_obj_kind kind)
{
	l->kind = (uint8_t)kind;
	l->prev = head;
	l->next = head->next;
	head->next->prev = l;
	head->next = l;
}

void accel_obj_del(struct accel_link *l)
{
	if (!l->next)
		return;
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = NULL;
}

/* Release one object the application left behind (it unlinks itself; freeing it may free others,
 * e.g. packed weights their buffer, which unlink themselves too). */
static void release_obj(struct accel_link *l)
{
	switch (l->kind) {
	case ACCEL_OBJ_BUFFER:
		accel_buffer_free(accel_container_of(l, struct accel_buffer, link));
		break;
	case ACCEL_OBJ_GRAPH:
		accel_graph_free(accel_container_of(l, struct accel_graph, link));
		break;
	case ACCEL_OBJ_SPARSE:
		accel_sparse_free(accel_container_of(l, struct accel_sparse_weights, link));
		break;
	case ACCEL_OBJ_CS:
		accel_cs_free(accel_container_of(l, struct accel_cmdstream, link));
		break;
	default:
		accel_obj_del(l);	/* not reached: jobs are on dev->jobs */
		break;
	}
}

/*
 * Close a device with whatever is still alive: first every job is waited for (so the device never
 * writes into freed memory) and freed with the buffers it owns, then the buffers, graphs, packed
 * weights and command streams, oldest first (an object is older than the buffers it owns, so freeing
 * it frees them). A plan's device copy is freed and the plan forgets it. Every handle of the device
 * is invalid afterwards (accel.h, "Lifetime").
 */
void accel_close(struct accel_dev *dev)
{
	if (!dev)
		return;
	while (dev->jobs.next && dev->jobs.next != &dev->jobs)
		accel_job_free(accel_container_of(dev->jobs.next, struct accel_job, link));
	while (dev->objs.prev && dev->objs.prev != &dev->objs)
		release_obj(dev->objs.prev);
	if (dev->ops && dev->ops->close)
		dev->ops->close(dev);
	accel_trace_free(dev);
	accel_pwdw_cache_free(dev);
	free(dev);
}

int accel_query_caps(struct accel_dev *dev, struct accel_caps *out)
{
	if (!dev)
		return -EINVAL;
	if (!out)
		return accel_seterr(dev, -EINVAL, "accel_query_caps: out is NULL");
	*out = dev->caps;
	return 0;
}
