// SPDX-License-Identifier: MIT
/*
 * accel-info — list tnpu accelerators: PCI function (libpci), accel node (sysfs), driver state and the
 * device capabilities (DRM_TNPU_QUERY_CAPS). Documentation/tools.md describes the output and the
 * --json fields; those names are an interface: add fields, never rename them.
 *
 * Exit status: 0 devices listed (even if a driver is not bound), 1 system error, 2 usage error,
 * 3 no tnpu device found (or none matches --device); --json then still prints the document with an
 * empty "devices" list.
 */
#include "accel_info.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: accel-info [--json] [--device PATH|BDF]\n"
		"List tnpu accelerators: PCI function, /dev/accel node, driver state, capabilities.\n\n"
		"  -j, --json           one JSON document {\"devices\":[...]} (Documentation/tools.md)\n"
		"  -d, --device SPEC    only this device: /dev/accel/accelN, accelN or a PCI address\n"
		"  -h, --help           this help\n"
		"  -V, --version        print the version\n\n"
		"Exit status: 0 ok, 1 system error, 2 usage error, 3 no tnpu device found.\n");
}

static void probe_driver(struct dev_report *r)
{
	int fd, ret;

	ai_node_lookup(ACCEL_TOOLS_SYSFS, ACCEL_TOOLS_DEV, r->pci.bdf, &r->node);
	if (!r->node.driver[0]) {
		r->state = ST_NOT_BOUND;
		snprintf(r->error, sizeof(r->error), "%s", r->node.tnpu_loaded ?
			 "tnpu.ko is loaded but not bound to this device (probe failed? see dmesg)" :
			 "no driver bound (is tnpu.ko loaded?)");
		return;
	}
	ai_sysfs_caps_read(ACCEL_TOOLS_SYSFS, r->pci.bdf, &r->sysfs);
	if (!r->node.found) {
		r->state = ST_NO_NODE;
		snprintf(r->error, sizeof(r->error), "driver %s registered no accel device", r->node.driver);
		return;
	}
	fd = ai_open_accel(r->node.dev_path);
	if (fd < 0) {
		r->state = ST_OPEN_FAILED;
		snprintf(r->error, sizeof(r->error), "cannot open %s: %s%s", r->node.dev_path, strerror(-fd),
			 fd == -EACCES ? " (root, or a udev rule: Documentation/driver.md)" : "");
		return;
	}
	if (ai_drm_version(fd, r->drm_name, sizeof(r->drm_name), r->drm_version, sizeof(r->drm_version)))
		r->drm_name[0] = r->drm_version[0] = '\0';
	ret = ai_query_caps(fd, &r->caps);
	/* Optional: a driver older than the island query still gets the capability lines. */
	if (!ret)
		r->have_islands = ai_query_islands(fd, &r->islands) == 0;
	close(fd);
	if (ret < 0) {
		r->state = ST_QUERY_FAILED;
		snprintf(r->error, sizeof(r->error), "QUERY_CAPS failed: %s%s", strerror(-ret),
			 ret == -ENOTTY || ret == -EINVAL ? " (driver without the QUERY ioctl?)" : "");
		return;
	}
	r->state = ST_READY;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *device = NULL;
	bool json = false;
	struct ai_pci_dev *devs;
	size_t n, first = 0;
	char err[256];
	int c, ret;

	while ((c = getopt_long(argc, argv, "jd:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'd': device = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': return cli_version("accel-info");
		default: return cli_usage_error("accel-info", "bad option (see the line above)");
		}
	}
	if (optind < argc)
		return cli_usage_error("accel-info", "unexpected argument '%s'", argv[optind]);
	ret = ai_pci_enumerate(&devs, &n, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "accel-info: cannot enumerate PCI devices: %s\n", err);
		return 1;
	}
	if (!n) {
		fprintf(stderr, "accel-info: no tnpu device found (is the VM running with -device tnpu? "
				"is tnpu.ko loaded?)\n");
		if (json)	/* still one valid document: an empty list */
			info_print_json(NULL, 0);
		free(devs);
		return 3;
	}
	if (device) {
		ret = ai_select_device(ACCEL_TOOLS_SYSFS, device, devs, n, err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "accel-info: %s\n", err);
			if (json)
				info_print_json(NULL, 0);
			free(devs);
			return 3;
		}
		first = (size_t)ret;
		n = first + 1;
	}
	struct dev_report *reps = calloc(n - first, sizeof(*reps));

	if (!reps) {
		fprintf(stderr, "accel-info: out of memory\n");
		free(devs);
		return 1;
	}
	for (size_t i = first; i < n; i++) {
		reps[i - first].pci = devs[i];
		probe_driver(&reps[i - first]);
	}
	if (json) {
		info_print_json(reps, n - first);
	} else {
		for (size_t i = 0; i < n - first; i++) {
			if (i)
				printf("\n");
			info_print_human(&reps[i]);
		}
	}
	free(reps);
	free(devs);
	return fflush(stdout) ? 1 : 0;
}
