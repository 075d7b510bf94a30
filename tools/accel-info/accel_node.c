// SPDX-License-Identifier: MIT
/*
 * accel_node.c — join a PCI function to its DRM accel node through sysfs.
 *
 * The kernel (drivers/accel/drm_accel.c) registers accel minors in the "accel" class, so the node of
 * PCI function B appears both as <sysfs>/bus/pci/devices/B/accel/accelN and as
 * <sysfs>/class/accel/accelN/device -> .../B; udev (or devtmpfs) names it /dev/accel/accelN.
 * Every path is built from a caller-supplied root so unit tests run on a fake tree.
 */
#include "accel_tools.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool ai_normalise_bdf(const char *s, char *out, size_t len)
{
	unsigned int dom = 0, bus, dev, fn;
	int n = 0;

	if (!s)
		return false;
	if (sscanf(s, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &n) == 4 && s[n] == '\0' &&
	    strchr(s, ':') != strrchr(s, ':')) {
		/* domain given */
	} else if (dom = 0, n = 0, sscanf(s, "%x:%x.%x%n", &bus, &dev, &fn, &n) == 3 && s[n] == '\0') {
		/* short form */
	} else {
		return false;
	}
	/* Reject signs and spaces that sscanf tolerates. */
	for (const char *p = s; *p; p++)
		if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
			return false;
	if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
		return false;
	if (out)
		snprintf(out, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return true;
}

bool ai_is_bdf(const char *s)
{
	return ai_normalise_bdf(s, NULL, 0);
}

/* Reads the first line of a small sysfs file; returns false (and out = "") if unreadable. */
static bool read_line(const char *path, char *out, size_t len)
{
	char buf[256];
	FILE *f = fopen(path, "re");
	bool ok = false;

	out[0] = '\0';
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f)) {
		ai_strlcpy_line(out, buf, len);
		ok = true;
	}
	fclose(f);
	return ok;
}

/* basename of a symlink's target into out; false if path is not a readable symlink. */
static bool link_basename(const char *path, char *out, size_t len)
{
	char target[PATH_MAX];
	ssize_t n = readlink(path, target, sizeof(target) - 1);

	out[0] = '\0';
	if (n <= 0)
		return false;
	target[n] = '\0';
	while (n > 1 && target[n - 1] == '/')
		target[--n] = '\0';
	const char *base = strrchr(target, '/');

	ai_strlcpy_line(out, base ? base + 1 : target, len);
	return out[0] != '\0';
}

/* "accel12" -> 12; -1 for anything else (accel minors are decimal, no sign, no suffix). */
static int accel_minor(const char *name)
{
	char *end;

	if (strncmp(name, "accel", 5) || !isdigit((unsigned char)name[5]))
		return -1;
	errno = 0;
	long v = strtol(name + 5, &end, 10);

	if (*end || errno || v > INT_MAX)
		return -1;
	return (int)v;
}

/* Lowest accelN entry in dir, -1 if none. */
static int lowest_accel_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int best = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int m = accel_minor(e->d_name);

		if (m >= 0 && (best < 0 || m < best))
			best = m;
	}
	closedir(d);
	return best;
}

/* Fallback when the PCI device has no accel/ subdirectory: scan the class and match device links. */
static int class_scan(const char *sysfs_root, const char *bdf)
{
	char path[PATH_MAX], dev_bdf[64];
	DIR *d;
	struct dirent *e;
	int best = -1;

	snprintf(path, sizeof(path), "%s/class/accel", sysfs_root);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int m = accel_minor(e->d_name);

		if (m < 0)
			continue;
		snprintf(path, sizeof(path), "%s/class/accel/%s/device", sysfs_root, e->d_name);
		if (link_basename(path, dev_bdf, sizeof(dev_bdf)) && !strcmp(dev_bdf, bdf) &&
		    (best < 0 || m < best))
			best = m;
	}
	closedir(d);
	return best;
}

static void module_info(const char *sysfs_root, const char *devdir, struct ai_node *node)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%.4000s/driver/module", devdir);
	if (!link_basename(path, node->module, sizeof(node->module)))
		return;	/* built-in driver: no module directory */
	snprintf(path, sizeof(path), "%s/module/%s/version", sysfs_root, node->module);
	if (!read_line(path, node->module_version, sizeof(node->module_version))) {
		snprintf(path, sizeof(path), "%s/module/%s/srcversion", sysfs_root, node->module);
		char src[48];

		if (read_line(path, src, sizeof(src)) && src[0])
			snprintf(node->module_version, sizeof(node->module_version), "srcversion %s",
				 src);
	}
	snprintf(path, sizeof(path), "%s/module/%s/initstate", sysfs_root, node->module);
	read_line(path, node->module_state, sizeof(node->module_state));
}

int ai_node_lookup(const char *sysfs_root, const char *dev_root, const char *bdf, struct ai_node *node)
{
	char devdir[PATH_MAX], path[PATH_MAX + 16];

	memset(node, 0, sizeof(*node));
	node->minor = -1;
	if (!ai_is_bdf(bdf))
		return -EINVAL;
	snprintf(devdir, sizeof(devdir), "%s/bus/pci/devices/%s", sysfs_root, bdf);
	snprintf(path, sizeof(path), "%s/module/tnpu", sysfs_root);
	node->tnpu_loaded = !access(path, F_OK);
	snprintf(path, sizeof(path), "%s/driver", devdir);
	link_basename(path, node->driver, sizeof(node->driver));
	if (node->driver[0])
		module_info(sysfs_root, devdir, node);

	snprintf(path, sizeof(path), "%s/accel", devdir);
	node->minor = lowest_accel_in(path);
	if (node->minor < 0)
		node->minor = class_scan(sysfs_root, bdf);
	if (node->minor >= 0) {
		node->found = true;
		snprintf(node->name, sizeof(node->name), "accel%d", node->minor);
		snprintf(node->dev_path, sizeof(node->dev_path), "%s/accel/%s", dev_root, node->name);
	}
	return 0;
}

/* A decimal or 0x-hex unsigned attribute; false if absent or not a whole number. */
static bool read_u64(const char *dir, const char *attr, uint64_t *v)
{
	char path[PATH_MAX], buf[64], *end;

	*v = 0;
	snprintf(path, sizeof(path), "%.4000s/%s", dir, attr);
	if (!read_line(path, buf, sizeof(buf)) || !isxdigit((unsigned char)buf[0]))
		return false;
	errno = 0;
	unsigned long long x = strtoull(buf, &end, 0);

	if (errno || end == buf || (*end && *end != ' '))
		return false;
	*v = x;
	return true;
}

static uint32_t read_u32(const char *dir, const char *attr)
{
	uint64_t v;

	return read_u64(dir, attr, &v) && v <= UINT32_MAX ? (uint32_t)v : 0;
}

void ai_sysfs_caps_read(const char *sysfs_root, const char *bdf, struct ai_sysfs_caps *c)
{
	char dir[PATH_MAX];

	memset(c, 0, sizeof(*c));
	if (!ai_is_bdf(bdf))
		return;
	snprintf(dir, sizeof(dir), "%s/bus/pci/devices/%s", sysfs_root, bdf);
	c->rows = read_u32(dir, "rows");
	c->present = c->rows != 0;
	if (!c->present)
		return;
	c->cols = read_u32(dir, "cols");
	c->pes = read_u32(dir, "pes");
	c->accumulators = read_u32(dir, "accumulators");
	c->hw_queues = read_u32(dir, "hw_queues");
	c->clock_mhz = read_u32(dir, "clock_mhz");
	c->isa_version = read_u32(dir, "isa_version");
	c->hw_version = read_u32(dir, "hw_version");
	read_u64(dir, "sram_bytes", &c->sram_bytes);
}

int ai_node_to_bdf(const char *sysfs_root, const char *accel_name, char *bdf, size_t len)
{
	char path[PATH_MAX], base[64];
	const char *slash = strrchr(accel_name, '/');
	const char *name = slash ? slash + 1 : accel_name;

	if (accel_minor(name) < 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/class/accel/%s", sysfs_root, name);
	if (access(path, F_OK))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/class/accel/%s/device", sysfs_root, name);
	if (!link_basename(path, base, sizeof(base)) || !ai_normalise_bdf(base, bdf, len))
		return -ENODEV;
	return 0;
}
