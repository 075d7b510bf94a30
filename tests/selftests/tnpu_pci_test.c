// SPDX-License-Identifier: GPL-2.0-only
/*
 * The tnpu PCI function as the guest kernel sees it in sysfs: identity, class, BAR0 and the driver binding.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"

#define TNPU_VENDOR 0x1234
#define TNPU_DEVICE 0x4e50
#define PCI_CLASS_PROCESSING_ACCEL 0x120000
#define IORESOURCE_MEM 0x00000200
#define IORESOURCE_MEM_64 0x00100000

static unsigned long read_hex(const char *dir, const char *attr)
{
	char path[PATH_MAX];
	unsigned long v = ~0ul;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	f = fopen(path, "r");
	if (!f)
		return ~0ul;
	if (fscanf(f, "%lx", &v) != 1)
		v = ~0ul;
	fclose(f);
	return v;
}

/* Fills @dir with the sysfs directory of the first tnpu function; returns how many were found. */
static int find_tnpu(char *dir, size_t len)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	int found = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char p[PATH_MAX];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s", e->d_name);
		if (read_hex(p, "vendor") == TNPU_VENDOR && read_hex(p, "device") == TNPU_DEVICE) {
			if (!found++)
				snprintf(dir, len, "%s", p);
		}
	}
	closedir(d);
	return found;
}

TEST(device_is_enumerated_in_sysfs)
{
	char dir[PATH_MAX];

	ASSERT_GE(find_tnpu(dir, sizeof(dir)), 1)
		TH_LOG("no PCI function %04x:%04x in /sys/bus/pci/devices", TNPU_VENDOR, TNPU_DEVICE);
}

TEST(class_is_processing_accelerator)
{
	char dir[PATH_MAX];

	ASSERT_GE(find_tnpu(dir, sizeof(dir)), 1);
	EXPECT_EQ(PCI_CLASS_PROCESSING_ACCEL, read_hex(dir, "class"));
}

TEST(bar0_is_64bit_memory)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	unsigned long long start, end, flags;
	FILE *f;

	ASSERT_GE(find_tnpu(dir, sizeof(dir)), 1);
	snprintf(path, sizeof(path), "%s/resource", dir);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(3, fscanf(f, "%llx %llx %llx", &start, &end, &flags));
	fclose(f);
	EXPECT_NE(0, start);
	EXPECT_GT(end, start);
	EXPECT_TRUE(flags & IORESOURCE_MEM);
	EXPECT_TRUE(flags & IORESOURCE_MEM_64);
}

TEST(bound_to_tnpu_driver)
{
	char dir[PATH_MAX], link[PATH_MAX + 16], target[PATH_MAX];
	ssize_t n;

	ASSERT_GE(find_tnpu(dir, sizeof(dir)), 1);
	if (access("/sys/module/tnpu", F_OK))
		SKIP(return, "tnpu.ko is not loaded");
	snprintf(link, sizeof(link), "%s/driver", dir);
	n = readlink(link, target, sizeof(target) - 1);
	ASSERT_GT(n, 0) TH_LOG("%s is not bound to a driver", dir);
	target[n] = '\0';
	EXPECT_STREQ("tnpu", strrchr(target, '/') + 1);
}

TEST_HARNESS_MAIN
