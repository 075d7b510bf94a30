/* SPDX-License-Identifier: MIT */
/*
 * accel_info.h — what accel-info learns about one device, and its two renderings:
 * info_human.c (the aligned text block) and info_json.c (--json; field names are an interface,
 * Documentation/tools.md).
 */
#ifndef ACCEL_INFO_H
#define ACCEL_INFO_H

#include <stddef.h>

#include "accel_tools.h"

#ifndef ACCEL_TOOLS_VERSION
#define ACCEL_TOOLS_VERSION "unknown"
#endif

enum dev_state { ST_NOT_BOUND, ST_NO_NODE, ST_OPEN_FAILED, ST_QUERY_FAILED, ST_READY };

struct dev_report {
	struct ai_pci_dev pci;
	struct ai_node node;
	enum dev_state state;
	char error[160];		/* why state is not ready, "" otherwise */
	char drm_name[32];
	char drm_version[64];
	struct drm_tnpu_caps caps;	/* valid in ST_READY */
	struct ai_sysfs_caps sysfs;	/* the driver's sysfs geometry, readable without opening the node */
	bool have_islands;		/* islands holds a DRM_TNPU_QUERY_ISLANDS answer */
	struct drm_tnpu_islands islands;
};

void info_print_human(const struct dev_report *r);
void info_print_json(const struct dev_report *reps, size_t n);

#endif
