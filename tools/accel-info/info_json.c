// SPDX-License-Identifier: MIT
/*
 * info_json.c — accel-info --json: one document {"tool","version","devices":[...]} on one line.
 * Field names and types are an interface (Documentation/tools.md): add, never rename; absent = null.
 */
#include "accel_info.h"
#include "json.h"

#include <stdio.h>
#include <string.h>

static const char *const state_names[] = {
	[ST_NOT_BOUND] = "not_bound",
	[ST_NO_NODE] = "no_accel_node",
	[ST_OPEN_FAILED] = "open_failed",
	[ST_QUERY_FAILED] = "query_failed",
	[ST_READY] = "ready",
};

static void json_hex(struct json_writer *w, const char *key, unsigned long long v, int digits)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "0x%0*llx", digits, v);
	json_str(w, key, buf);
}

static void json_str_or_null(struct json_writer *w, const char *key, const char *s)
{
	if (s && s[0])
		json_str(w, key, s);
	else
		json_null(w, key);
}

/* 0 means "not reported" for link widths */
static void json_u64_or_null(struct json_writer *w, const char *key, uint64_t v)
{
	if (v)
		json_u64(w, key, v);
	else
		json_null(w, key);
}

static void json_pci(struct json_writer *w, const struct ai_pci_dev *p)
{
	json_str(w, "pci_address", p->bdf);
	json_hex(w, "vendor_id", p->vendor_id, 4);
	json_hex(w, "device_id", p->device_id, 4);
	json_hex(w, "subsystem_vendor_id", p->subsys_vendor_id, 4);
	json_hex(w, "subsystem_id", p->subsys_id, 4);
	json_u64(w, "revision", p->revision);
	json_hex(w, "class_code", p->class_code, 6);
	json_str(w, "class_name", ai_class_name(p->class_code));
	json_begin_array(w, "bars");
	for (int i = 0; i < AI_NUM_BARS; i++) {
		const struct ai_bar *b = &p->bar[i];

		if (!b->present)
			continue;
		json_begin_object(w, NULL);
		json_u64(w, "index", (uint64_t)i);
		json_hex(w, "address", b->addr, 8);
		json_u64(w, "size", b->size);
		json_str(w, "type", b->io ? "io" : b->mem64 ? "mem64" : "mem32");
		json_bool(w, "prefetchable", b->prefetch);
		json_end_object(w);
	}
	json_end_array(w);
	if (p->msix_vectors < 0) {
		json_null(w, "msix_vectors");
		json_null(w, "msix_enabled");
	} else {
		json_u64(w, "msix_vectors", (uint64_t)p->msix_vectors);
		json_bool(w, "msix_enabled", p->msix_enabled);
	}
	if (p->msix_bar >= 0)
		json_u64(w, "msix_bar", (uint64_t)p->msix_bar);
	else
		json_null(w, "msix_bar");
	if (!p->link.known) {
		json_null(w, "link");
	} else {
		const struct ai_link *l = &p->link;

		json_begin_object(w, "link");
		json_bool(w, "integrated", l->integrated);
		json_str_or_null(w, "speed", l->cur_speed ? ai_link_speed_str(l->cur_speed) : NULL);
		json_u64_or_null(w, "width", l->cur_width);
		json_str_or_null(w, "max_speed", l->max_speed ? ai_link_speed_str(l->max_speed) : NULL);
		json_u64_or_null(w, "max_width", l->max_width);
		json_end_object(w);
	}
}

static void json_caps(struct json_writer *w, const struct drm_tnpu_caps *c)
{
	char ver[32], names[256];
	uint32_t v = c->hw_version;

	json_begin_object(w, "caps");
	snprintf(ver, sizeof(ver), "%u.%u.%u", v >> 24, (v >> 16) & 0xff, v & 0xff);
	json_str(w, "hw_version", ver);
	json_u64(w, "isa_version", (v >> 8) & 0xff);
	json_u64(w, "rows", c->rows);
	json_u64(w, "cols", c->cols);
	json_u64(w, "pes_per_cluster", c->pes);
	json_u64(w, "pes_total", (uint64_t)c->rows * c->cols * c->pes);
	json_u64(w, "accumulators", c->accumulators);
	json_u64(w, "accumulator_elements", c->acc_elems);
	json_u64(w, "sram_bytes", c->sram_bytes);
	json_u64(w, "sram_half_bytes", c->sram_bytes / 2);
	json_u64(w, "storage_units", c->rows);
	json_u64(w, "instruction_buffers", c->ibufs);
	json_u64(w, "instructions_per_buffer", c->ibuf_len);
	json_u64(w, "register_file_entries", c->rf_entries);
	json_u64(w, "slots_per_pe", c->slots);
	json_u64(w, "hw_queues", c->hw_queues);
	json_u64(w, "max_queues_per_file", c->max_queues);
	json_u64(w, "semaphores", c->semaphores);
	json_begin_array(w, "data_types");
	if (c->dtypes & DRM_TNPU_DTYPE_INT8)
		json_str(w, NULL, "int8");
	if (c->dtypes & DRM_TNPU_DTYPE_FP32)
		json_str(w, NULL, "fp32");
	if (c->dtypes & DRM_TNPU_DTYPE_BF16)
		json_str(w, NULL, "bf16");
	json_end_array(w);
	json_hex(w, "data_types_mask", c->dtypes, 1);
	json_hex(w, "features", c->features, 1);
	json_begin_array(w, "feature_names");
	ai_format_features(c->features, names, sizeof(names));
	for (char *save = NULL, *tok = strtok_r(names, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		if (strcmp(tok, "none"))
			json_str(w, NULL, tok);
	json_end_array(w);
	json_u64(w, "clock_mhz", c->clock_mhz);
	json_u64(w, "int8_macs_per_cycle_per_pe", c->rates & 0xff);
	json_u64(w, "fp32_macs_per_cycle_per_pe", (c->rates >> 8) & 0xff);
	json_u64(w, "dma_bytes_per_cycle", (c->rates >> 16) & 0xff);
	json_u64(w, "dispatch_bytes_per_cycle", c->rates >> 24);
	json_u64(w, "max_cmdbuf_bytes", c->max_cmdbuf);
	json_u64(w, "max_bo_bytes", c->max_bo_size);
	json_u64(w, "page_size", c->page_size);
	json_u64(w, "va_bits", c->va_bits);
	json_hex(w, "va_start", c->va_start, 1);
	json_hex(w, "va_end", c->va_end, 1);
	json_u64(w, "num_counters", c->num_counters);
	json_end_object(w);
}

static void json_sysfs_caps(struct json_writer *w, const struct ai_sysfs_caps *s)
{
	char ver[32];

	if (!s->present) {
		json_null(w, "sysfs_caps");
		return;
	}
	json_begin_object(w, "sysfs_caps");
	snprintf(ver, sizeof(ver), "%u.%u.%u", s->hw_version >> 24, (s->hw_version >> 16) & 0xff,
		 s->hw_version & 0xff);
	json_str(w, "hw_version", ver);
	json_u64(w, "isa_version", s->isa_version);
	json_u64(w, "rows", s->rows);
	json_u64(w, "cols", s->cols);
	json_u64(w, "pes_per_cluster", s->pes);
	json_u64(w, "accumulators", s->accumulators);
	json_u64(w, "sram_bytes", s->sram_bytes);
	json_u64(w, "hw_queues", s->hw_queues);
	json_u64(w, "clock_mhz", s->clock_mhz);
	json_end_object(w);
}

static void json_device(struct json_writer *w, const struct dev_report *r)
{
	const struct ai_node *n = &r->node;

	json_begin_object(w, NULL);
	json_pci(w, &r->pci);
	json_str_or_null(w, "accel_node", n->found ? n->dev_path : NULL);
	if (n->found)
		json_u64(w, "accel_minor", (uint64_t)n->minor);
	else
		json_null(w, "accel_minor");
	json_str_or_null(w, "driver", n->driver);
	json_str_or_null(w, "module", n->module);
	json_str_or_null(w, "module_version", n->module_version);
	json_str_or_null(w, "module_state", n->module_state);
	json_str_or_null(w, "drm_driver", r->drm_name);
	json_str_or_null(w, "drm_version", r->drm_version);
	json_str(w, "state", state_names[r->state]);
	json_str_or_null(w, "error", r->error);
	if (r->state == ST_READY)
		json_caps(w, &r->caps);
	else
		json_null(w, "caps");
	json_sysfs_caps(w, &r->sysfs);
	ai_json_islands(w, r->state == ST_READY && r->have_islands ? &r->islands : NULL);
	json_end_object(w);
}

void info_print_json(const struct dev_report *reps, size_t n)
{
	struct json_writer w;

	json_init(&w, stdout);
	json_begin_object(&w, NULL);
	json_str(&w, "tool", "accel-info");
	json_str(&w, "version", ACCEL_TOOLS_VERSION);
	json_begin_array(&w, "devices");
	for (size_t i = 0; i < n; i++)
		json_device(&w, &reps[i]);
	json_end_array(&w);
	json_end_object(&w);
	fputc('\n', stdout);
}
