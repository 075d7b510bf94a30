// SPDX-License-Identifier: MIT
/*
 * The sysfs join (accel_node.c, select.c) on a fake sysfs tree laid out like Linux 6.12's:
 *   devices/pci0000:00/<BDF>/{driver -> bus/pci/drivers/tnpu, accel/accelN/device -> ../../../<BDF>}
 *   bus/pci/devices/<BDF> -> ../../../devices/pci0000:00/<BDF>
 *   bus/pci/drivers/tnpu/module -> ../../../../module/tnpu,  module/tnpu/{version,initstate}
 *   class/accel/accelN -> ../../devices/pci0000:00/<BDF>/accel/accelN
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel_tools.h"

#define BDF "0000:00:01.0"

static char root[64];

static void path_of(char *out, size_t len, const char *fmt, va_list ap)
{
	int n = snprintf(out, len, "%s/", root);

	vsnprintf(out + n, len - (size_t)n, fmt, ap);
}

static void mkdirs(const char *fmt, ...)
{
	char p[512];
	va_list ap;

	va_start(ap, fmt);
	path_of(p, sizeof(p), fmt, ap);
	va_end(ap);
	for (char *s = p + strlen(root) + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	}
	mkdir(p, 0755);
}

static void put(const char *content, const char *fmt, ...)
{
	char p[512];
	va_list ap;

	va_start(ap, fmt);
	path_of(p, sizeof(p), fmt, ap);
	va_end(ap);
	FILE *f = fopen(p, "w");

	cr_assert_not_null(f, "cannot create %s", p);
	fputs(content, f);
	fclose(f);
}

static void link_to(const char *target, const char *fmt, ...)
{
	char p[512];
	va_list ap;

	va_start(ap, fmt);
	path_of(p, sizeof(p), fmt, ap);
	va_end(ap);
	cr_assert_eq(symlink(target, p), 0, "symlink %s: %s", p, strerror(errno));
}

/* A PCI function with no driver. */
static void add_pci(const char *bdf)
{
	mkdirs("devices/pci0000:00/%s", bdf);
	mkdirs("bus/pci/devices");
	char target[128];

	snprintf(target, sizeof(target), "../../../devices/pci0000:00/%s", bdf);
	link_to(target, "bus/pci/devices/%s", bdf);
}

static void bind_tnpu(const char *bdf)
{
	mkdirs("bus/pci/drivers/tnpu");
	char p[512];

	snprintf(p, sizeof(p), "%s/bus/pci/drivers/tnpu/module", root);
	if (access(p, F_OK))
		link_to("../../../../module/tnpu", "bus/pci/drivers/tnpu/module");
	link_to("../../../bus/pci/drivers/tnpu", "devices/pci0000:00/%s/driver", bdf);
	mkdirs("module/tnpu");
}

static void add_accel(const char *bdf, int minor, bool class_link, bool device_dir)
{
	char target[160];

	if (device_dir) {
		mkdirs("devices/pci0000:00/%s/accel/accel%d", bdf, minor);
		snprintf(target, sizeof(target), "../../../%s", bdf);
		link_to(target, "devices/pci0000:00/%s/accel/accel%d/device", bdf, minor);
	}
	if (class_link) {
		mkdirs("class/accel");
		if (!device_dir) {
			/* the node lives elsewhere (virtual device dir) but points back at the function */
			mkdirs("devices/virtual/accel/accel%d", minor);
			snprintf(target, sizeof(target), "../../../pci0000:00/%s", bdf);
			link_to(target, "devices/virtual/accel/accel%d/device", minor);
			snprintf(target, sizeof(target), "../../devices/virtual/accel/accel%d", minor);
		} else {
			snprintf(target, sizeof(target), "../../devices/pci0000:00/%s/accel/accel%d", bdf,
				 minor);
		}
		link_to(target, "class/accel/accel%d", minor);
	}
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/accel-sysfs-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(sysfs, .init = setup, .fini = teardown);

Test(sysfs, bound_function_joins_to_its_accel_node_and_module_state)
{
	struct ai_node n;

	add_pci(BDF);
	bind_tnpu(BDF);
	put("0.1.0\n", "module/tnpu/version");
	put("live\n", "module/tnpu/initstate");
	add_accel(BDF, 0, true, true);

	cr_assert_eq(ai_node_lookup(root, "/dev", BDF, &n), 0);
	cr_assert(n.found);
	cr_assert_eq(n.minor, 0);
	cr_assert_str_eq(n.name, "accel0");
	cr_assert_str_eq(n.dev_path, "/dev/accel/accel0");
	cr_assert_str_eq(n.driver, "tnpu");
	cr_assert_str_eq(n.module, "tnpu");
	cr_assert_str_eq(n.module_version, "0.1.0");
	cr_assert_str_eq(n.module_state, "live");
	cr_assert(n.tnpu_loaded);
}

Test(sysfs, unbound_function_has_no_driver_and_no_node)
{
	struct ai_node n;

	add_pci(BDF);
	cr_assert_eq(ai_node_lookup(root, "/dev", BDF, &n), 0);
	cr_assert_not(n.found);
	cr_assert_eq(n.minor, -1);
	cr_assert_str_eq(n.driver, "");
	cr_assert_str_eq(n.dev_path, "");
	cr_assert_not(n.tnpu_loaded);
}

Test(sysfs, bound_stub_driver_without_accel_device_reports_driver_only)
{
	struct ai_node n;

	add_pci(BDF);
	bind_tnpu(BDF);
	cr_assert_eq(ai_node_lookup(root, "/dev", BDF, &n), 0);
	cr_assert_not(n.found);
	cr_assert_str_eq(n.driver, "tnpu");
	cr_assert_str_eq(n.module_version, "");	/* no version, no srcversion */
	cr_assert_str_eq(n.module_state, "");
}

Test(sysfs, srcversion_is_used_when_the_module_has_no_version)
{
	struct ai_node n;

	add_pci(BDF);
	bind_tnpu(BDF);
	put("ABCDEF0123456789\n", "module/tnpu/srcversion");
	cr_assert_eq(ai_node_lookup(root, "/dev", BDF, &n), 0);
	cr_assert_str_eq(n.module_version, "srcversion ABCDEF0123456789");
}

Test(sysfs, lowest_minor_wins_and_odd_names_are_ignored)
{
	struct ai_node n;

	add_pci(BDF);
	bind_tnpu(BDF);
	/* several minors so that no directory order can hand us the lowest one last by luck */
	for (int m = 9; m >= 2; m--)
		add_accel(BDF, m == 5 ? 1 : m, false, true);
	mkdirs("devices/pci0000:00/%s/accel/accelX", BDF);
	mkdirs("devices/pci0000:00/%s/accel/accel", BDF);
	mkdirs("devices/pci0000:00/%s/accel/accel-1", BDF);
	mkdirs("devices/pci0000:00/%s/accel/accel2x", BDF);
	mkdirs("devices/pci0000:00/%s/accel/accel99999999999999999999", BDF);
	cr_assert_eq(ai_node_lookup(root, "/dev", BDF, &n), 0);
	cr_assert_eq(n.minor, 1);
	cr_assert_str_eq(n.dev_path, "/dev/accel/accel1");
}

Test(sysfs, class_links_are_the_fallback_when_the_device_has_no_accel_dir)
{
	struct ai_node n;

	add_pci(BDF);
	add_pci("0000:00:02.0");
	bind_tnpu(BDF);
	add_accel("0000:00:02.0", 0, true, false);	/* another function's node */
	add_accel(BDF, 5, true, false);
	cr_assert_eq(ai_node_lookup(root, "/tmp/dev", BDF, &n), 0);
	cr_assert(n.found);
	cr_assert_eq(n.minor, 5);
	cr_assert_str_eq(n.dev_path, "/tmp/dev/accel/accel5");
}

Test(sysfs, garbage_module_files_are_truncated_not_overflowed)
{
	struct ai_node n;
	char big[4096];

	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	add_pci(BDF);
	bind_tnpu(BDF);
	put(big, "module/tnpu/version");
	put("", "module/tnpu/initstate");
	cr_assert_eq(ai_node_lookup(root, "/dev", BDF, &n), 0);
	cr_assert_eq(strlen(n.module_version), sizeof(n.module_version) - 1);
	cr_assert_str_eq(n.module_state, "");
}

Test(sysfs, malformed_bdf_is_rejected_and_a_missing_root_is_harmless)
{
	struct ai_node n;

	cr_assert_eq(ai_node_lookup(root, "/dev", "../../etc", &n), -EINVAL);
	cr_assert_eq(ai_node_lookup("/nonexistent-sysfs", "/dev", BDF, &n), 0);
	cr_assert_not(n.found);
	cr_assert_str_eq(n.driver, "");
}

Test(sysfs, accel_name_maps_back_to_its_pci_address)
{
	char bdf[32];

	add_pci(BDF);
	add_accel(BDF, 0, true, true);
	cr_assert_eq(ai_node_to_bdf(root, "accel0", bdf, sizeof(bdf)), 0);
	cr_assert_str_eq(bdf, BDF);
	cr_assert_eq(ai_node_to_bdf(root, "/dev/accel/accel0", bdf, sizeof(bdf)), 0);
	cr_assert_eq(ai_node_to_bdf(root, "accel7", bdf, sizeof(bdf)), -ENOENT);
	cr_assert_eq(ai_node_to_bdf(root, "card0", bdf, sizeof(bdf)), -EINVAL);
}

Test(sysfs, accel_device_that_is_not_pci_is_reported_as_such)
{
	char bdf[32];

	mkdirs("devices/platform/npu0/accel/accel2");
	link_to("../../../npu0", "devices/platform/npu0/accel/accel2/device");
	mkdirs("class/accel");
	link_to("../../devices/platform/npu0/accel/accel2", "class/accel/accel2");
	cr_assert_eq(ai_node_to_bdf(root, "accel2", bdf, sizeof(bdf)), -ENODEV);
}

Test(sysfs, select_device_by_address_or_node)
{
	struct ai_pci_dev devs[2];
	char err[256];

	memset(devs, 0, sizeof(devs));
	strcpy(devs[0].bdf, BDF);
	strcpy(devs[1].bdf, "0000:00:02.0");
	add_pci(BDF);
	add_pci("0000:00:02.0");
	add_accel("0000:00:02.0", 4, true, true);
	cr_assert_eq(ai_select_device(root, "00:02.0", devs, 2, err, sizeof(err)), 1);
	cr_assert_eq(ai_select_device(root, BDF, devs, 2, err, sizeof(err)), 0);
	cr_assert_eq(ai_select_device(root, "accel4", devs, 2, err, sizeof(err)), 1);
	cr_assert_eq(ai_select_device(root, "00:03.0", devs, 2, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "no tnpu device"), "%s", err);
	cr_assert_eq(ai_select_device(root, "accel9", devs, 2, err, sizeof(err)), -ENOENT);
	cr_assert_eq(ai_select_device(root, "/nonexistent/accel0", devs, 1, err, sizeof(err)), -ENOENT);
	cr_assert_eq(ai_select_device(root, "gpu", devs, 2, err, sizeof(err)), -EINVAL);
}

Test(sysfs, driver_geometry_attributes_are_read_for_unprivileged_users)
{
	struct ai_sysfs_caps c;

	add_pci(BDF);
	put("4\n", "devices/pci0000:00/%s/rows", BDF);
	put("3\n", "devices/pci0000:00/%s/cols", BDF);
	put("16\n", "devices/pci0000:00/%s/pes", BDF);
	put("4\n", "devices/pci0000:00/%s/accumulators", BDF);
	put("1048576\n", "devices/pci0000:00/%s/sram_bytes", BDF);
	put("2\n", "devices/pci0000:00/%s/hw_queues", BDF);
	put("500\n", "devices/pci0000:00/%s/clock_mhz", BDF);
	put("1\n", "devices/pci0000:00/%s/isa_version", BDF);
	put("0x01000100\n", "devices/pci0000:00/%s/hw_version", BDF);
	ai_sysfs_caps_read(root, BDF, &c);
	cr_assert(c.present);
	cr_assert_eq(c.rows, 4);
	cr_assert_eq(c.cols, 3);
	cr_assert_eq(c.pes, 16);
	cr_assert_eq(c.accumulators, 4);
	cr_assert_eq(c.sram_bytes, 1048576);
	cr_assert_eq(c.hw_queues, 2);
	cr_assert_eq(c.clock_mhz, 500);
	cr_assert_eq(c.isa_version, 1);
	cr_assert_eq(c.hw_version, 0x01000100);
}

Test(sysfs, malformed_or_missing_geometry_attributes_read_as_zero)
{
	struct ai_sysfs_caps c;

	add_pci(BDF);
	ai_sysfs_caps_read(root, BDF, &c);
	cr_assert_not(c.present);
	put("2\n", "devices/pci0000:00/%s/rows", BDF);
	put("-1\n", "devices/pci0000:00/%s/cols", BDF);
	put("12abc\n", "devices/pci0000:00/%s/pes", BDF);
	put("99999999999\n", "devices/pci0000:00/%s/hw_queues", BDF);
	put("", "devices/pci0000:00/%s/clock_mhz", BDF);
	ai_sysfs_caps_read(root, BDF, &c);
	cr_assert(c.present);
	cr_assert_eq(c.rows, 2);
	cr_assert_eq(c.cols, 0);
	cr_assert_eq(c.pes, 0);
	cr_assert_eq(c.hw_queues, 0);
	cr_assert_eq(c.clock_mhz, 0);
	cr_assert_eq(c.sram_bytes, 0);
}
