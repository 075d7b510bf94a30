// SPDX-License-Identifier: MIT
/* info_human.c — accel-info's default output: one aligned block per device. */
#include "accel_info.h"

#include <stdio.h>

#define LABEL "  %-12s "

static void print_bar(const struct ai_pci_dev *p, int i)
{
	const struct ai_bar *b = &p->bar[i];
	char size[32];

	if (!b->present)
		return;
	ai_format_size(b->size, size, sizeof(size));
	printf("  BAR%-9d 0x%08llx  %-8s %s%s%s\n", i, (unsigned long long)b->addr, b->size ? size : "?",
	       b->io ? "I/O" : b->mem64 ? "64-bit mem" : "32-bit mem", b->prefetch ? ", prefetchable" : "",
	       i == p->msix_bar ? " (MSI-X table)" : i == 0 ? " (registers)" : "");
}

static void print_link(const struct ai_link *l)
{
	if (!l->known)
		printf(LABEL "unknown\n", "link");
	else if (l->integrated)
		printf(LABEL "none (root-complex integrated endpoint)\n", "link");
	else
		printf(LABEL "%s x%u (max %s x%u)\n", "link", ai_link_speed_str(l->cur_speed), l->cur_width,
		       ai_link_speed_str(l->max_speed), l->max_width);
}

static void print_driver(const struct dev_report *r)
{
	const struct ai_node *n = &r->node;

	if (!n->driver[0]) {
		printf(LABEL "not bound%s\n", "driver", n->tnpu_loaded ?
		       " (tnpu.ko is loaded: probe failed? see dmesg)" : " (is tnpu.ko loaded?)");
		return;
	}
	printf(LABEL "%s", "driver", n->driver);
	if (n->module[0])
		printf(" (module %s%s%s%s%s)", n->module, n->module_state[0] ? ", " : "", n->module_state,
		       n->module_version[0] ? ", " : "", n->module_version);
	else
		printf(" (built in)");
	printf("\n");
	if (r->drm_name[0])
		printf(LABEL "%s %s\n", "drm", r->drm_name, r->drm_version);
}

static void print_caps(const struct drm_tnpu_caps *c)
{
	char a[32], b[32], buf[512];	/* the features line names every CAP_FEATURES bit */
	uint32_t v = c->hw_version;
	double pes = (double)c->rows * c->cols * c->pes;
	double hz = (double)c->clock_mhz * 1e6;

	printf(LABEL "v%u.%u.%u, ISA %u\n", "hardware", v >> 24, (v >> 16) & 0xff, v & 0xff,
	       (v >> 8) & 0xff);
	printf(LABEL "%u rows x %u cols x %u PEs = %.0f PEs; %u accumulators x %u per PE\n", "geometry",
	       c->rows, c->cols, c->pes, pes, c->accumulators, c->acc_elems);
	ai_format_size(c->sram_bytes, a, sizeof(a));
	ai_format_size(c->sram_bytes / 2, b, sizeof(b));
	printf(LABEL "%s per storage unit (ping %s + pong %s), %u units\n", "SRAM", a, b, b, c->rows);
	printf(LABEL "%u instruction buffers x %u, %u register-file entries, %u slots per PE\n", "cluster",
	       c->ibufs, c->ibuf_len, c->rf_entries, c->slots);
	printf(LABEL "%u hardware queues, %u per file, %u semaphores per job\n", "queues", c->hw_queues,
	       c->max_queues, c->semaphores);
	ai_format_dtypes(c->dtypes, buf, sizeof(buf));
	printf(LABEL "%s\n", "data types", buf);
	ai_format_si(pes * (c->rates & 0xff) * hz, "MAC/s", a, sizeof(a));
	ai_format_si(pes * ((c->rates >> 8) & 0xff) * hz, "MAC/s", b, sizeof(b));
	printf(LABEL "%u MHz (cycle model); peak %s int8, %s fp32\n", "clock", c->clock_mhz, a, b);
	ai_format_features(c->features, buf, sizeof(buf));
	printf(LABEL "%s\n", "features", buf);
	ai_format_size(c->max_cmdbuf, a, sizeof(a));
	ai_format_size(c->max_bo_size, b, sizeof(b));
	ai_format_size(c->page_size, buf, sizeof(buf));
	printf(LABEL "command buffer %s, buffer object %s, page %s, %u VA bits\n", "limits", a, b, buf,
	       c->va_bits);
}

/* The subset tnpu.ko publishes in sysfs, for users who may not open the node. */
static void print_sysfs_caps(const struct ai_sysfs_caps *s)
{
	char a[32], b[32];
	uint32_t v = s->hw_version;

	printf(LABEL "v%u.%u.%u, ISA %u (from sysfs)\n", "hardware", v >> 24, (v >> 16) & 0xff, v & 0xff,
	       s->isa_version);
	printf(LABEL "%u rows x %u cols x %u PEs = %llu PEs; %u accumulators per PE\n", "geometry",
	       s->rows, s->cols, s->pes, (unsigned long long)s->rows * s->cols * s->pes, s->accumulators);
	ai_format_size(s->sram_bytes, a, sizeof(a));
	ai_format_size(s->sram_bytes / 2, b, sizeof(b));
	printf(LABEL "%s per storage unit (ping %s + pong %s), %u units\n", "SRAM", a, b, b, s->rows);
	printf(LABEL "%u hardware queues\n", "queues", s->hw_queues);
	printf(LABEL "%u MHz (cycle model)\n", "clock", s->clock_mhz);
}

/* After the capability lines: the island table (DRM_TNPU_QUERY_ISLANDS), one line per island. */
static void print_islands(const struct drm_tnpu_islands *isl, uint32_t clock_mhz)
{
	char buf[192], label[24];

	ai_format_islands_summary(isl, buf, sizeof(buf));
	printf(LABEL "%s\n", "islands", buf);
	for (unsigned int i = 0; i < ai_islands_count(isl); i++) {
		snprintf(label, sizeof(label), "island %u", i);
		ai_format_island(&isl->island[i], clock_mhz, buf, sizeof(buf));
		printf(LABEL "%s\n", label, buf);
	}
}

void info_print_human(const struct dev_report *r)
{
	const struct ai_pci_dev *p = &r->pci;

	printf("%s tnpu %04x:%04x rev %02x class %04x (%s)\n", p->bdf, p->vendor_id, p->device_id,
	       p->revision, p->class_code >> 8, ai_class_name(p->class_code));
	for (int i = 0; i < AI_NUM_BARS; i++)
		print_bar(p, i);
	if (p->msix_vectors < 0)
		printf(LABEL "unknown (config space needs root)\n", "MSI-X");
	else if (p->msix_vectors == 0)
		printf(LABEL "none\n", "MSI-X");
	else
		printf(LABEL "%d vectors (%s)\n", "MSI-X", p->msix_vectors,
		       p->msix_enabled ? "enabled" : "disabled");
	print_link(&p->link);
	printf(LABEL "%s\n", "node", r->node.found ? r->node.dev_path : "none");
	print_driver(r);
	if (r->state == ST_READY) {
		print_caps(&r->caps);
		if (r->have_islands)
			print_islands(&r->islands, r->caps.clock_mhz);
	} else if (r->state != ST_NOT_BOUND) {
		printf(LABEL "%s\n", "capabilities", r->error);
		if (r->sysfs.present)
			print_sysfs_caps(&r->sysfs);
	}
}
