// SPDX-License-Identifier: MIT
/*
 * clients.c — who uses the device: the DRM fdinfo convention (Documentation/driver.md "fdinfo").
 *
 * Every fd of every process that refers to the device's character node is looked at through
 * /proc/<pid>/fdinfo/<fd>; one open file may be held by several fds and processes (dup, fork), so
 * clients are keyed by drm-client-id. Reading another user's fdinfo needs ptrace access (root):
 * processes that cannot be read are skipped.
 */
#include "accel_tools.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "<n> [KiB|MiB|GiB]" -> bytes (drm_print_memory_stats() picks the largest exact unit) */
static uint64_t parse_size(const char *v)
{
	char *end;
	uint64_t n = strtoull(v, &end, 10);

	while (*end == ' ' || *end == '\t')
		end++;
	if (!strncmp(end, "KiB", 3))
		return n << 10;
	if (!strncmp(end, "MiB", 3))
		return n << 20;
	if (!strncmp(end, "GiB", 3))
		return n << 30;
	return n;
}

int ai_fdinfo_parse(const char *text, struct ai_client *c)
{
	const char *line = text;
	bool tnpu = false, have_id = false;

	memset(c, 0, sizeof(*c));
	while (line && *line) {
		const char *nl = strchr(line, '\n'), *colon = strchr(line, ':');
		char key[64];
		unsigned int q;
		size_t klen;

		if (!colon || (nl && colon > nl))
			goto next;
		klen = (size_t)(colon - line);
		if (klen >= sizeof(key))
			goto next;
		memcpy(key, line, klen);
		key[klen] = 0;
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		if (!strcmp(key, "drm-driver")) {
			tnpu = !strncmp(colon, "tnpu", 4) && (colon[4] == '\n' || !colon[4]);
		} else if (!strcmp(key, "drm-client-id")) {
			c->id = strtoull(colon, NULL, 10);
			have_id = true;
		} else if (sscanf(key, "drm-engine-ring%u", &q) == 1 && q < DRM_TNPU_MAX_RINGS) {
			c->busy_ns[q] = strtoull(colon, NULL, 10);
			c->rings |= 1u << q;
		} else if (sscanf(key, "drm-cycles-ring%u", &q) == 1 && q < DRM_TNPU_MAX_RINGS) {
			c->cycles[q] = strtoull(colon, NULL, 10);
		} else if (!strcmp(key, "drm-total-memory")) {
			c->mem_total = parse_size(colon);
		} else if (!strcmp(key, "drm-resident-memory")) {
			c->mem_resident = parse_size(colon);
		}
next:
		line = nl ? nl + 1 : NULL;
	}
	return tnpu && have_id ? 0 : -ENOENT;
}

const struct ai_client *ai_client_find(const struct ai_client *list, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (list[i].id == id)
			return &list[i];
	return NULL;
}

static int read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* The clients of one process's fds on @rdev, appended to out[*n]. */
static void scan_pid(const char *proc_root, const char *pid, unsigned long long rdev, struct ai_client *out,
		     size_t max, size_t *n)
{
	char path[512], text[8192];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s/fd", proc_root, pid);
	d = opendir(path);
	if (!d)
		return;	/* gone, or not ours to read */
	while ((e = readdir(d)) && *n < max) {
		struct ai_client c;
		struct stat st;

		if (!all_digits(e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/fd/%s", proc_root, pid, e->d_name);
		if (stat(path, &st) || !S_ISCHR(st.st_mode) || (unsigned long long)st.st_rdev != rdev)
			continue;
		snprintf(path, sizeof(path), "%s/%s/fdinfo/%s", proc_root, pid, e->d_name);
		if (read_text(path, text, sizeof(text)) || ai_fdinfo_parse(text, &c))
			continue;
		if (ai_client_find(out, *n, c.id))
			continue;
		c.pid = atoi(pid);
		snprintf(path, sizeof(path), "%s/%s/comm", proc_root, pid);
		if (read_text(path, c.comm, sizeof(c.comm)))
			snprintf(c.comm, sizeof(c.comm), "?");
		c.comm[strcspn(c.comm, "\n")] = 0;
		out[(*n)++] = c;
	}
	closedir(d);
}

int ai_clients_scan(const char *proc_root, unsigned long long rdev, int skip_pid, struct ai_client *out,
		    size_t max)
{
	DIR *d = opendir(proc_root);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)) && n < max) {
		if (!all_digits(e->d_name) || atoi(e->d_name) == skip_pid)
			continue;
		scan_pid(proc_root, e->d_name, rdev, out, max, &n);
	}
	closedir(d);
	return (int)n;
}
