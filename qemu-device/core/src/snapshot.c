/* SPDX-License-Identifier: MIT */
/*
 * Snapshot of the register block for migration (Documentation/qemu-device.md
 * "Migration"): a versioned, size-checked little-endian byte string.
 *
 * Only the state between jobs is saved: the glue drains every queue first, and
 * the spec gives every job a clean executor (queues.md), so storage units,
 * accumulators, ring memory and the TLB hold nothing to migrate.  The reset
 * generation and the glue-computed STATUS bits stay local.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core_regs.h"
#include "internal.h"

#define SNAP_MAGIC	0x53504E54u	/* "TNPS" */
#define SNAP_VERSION	2u	/* 2: Q_SAVE_BASE (preemption) */

struct snap {
	uint8_t *wp;		/* saving: output, NULL to only count */
	const uint8_t *rp;	/* loading: input */
	size_t pos, len;
	bool short_read;
};

static void put(struct snap *s, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++, s->pos++)
		if (s->wp && s->pos < s->len)
			s->wp[s->pos] = (uint8_t)(v >> (8 * i));
}

static uint64_t get(struct snap *s, unsigned bytes)
{
	uint64_t v = 0;

	if (s->pos + bytes > s->len) {
		s->short_read = true;
		s->pos = s->len;
		return 0;
	}
	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)s->rp[s->pos++] << (8 * i);
	return v;
}

/*
 * One walk of the fields for both directions: `save` puts them, else gets them
 * into *c.  Geometry comes first so a mismatch is found before any register.
 */
static void walk_regs(struct snap *s, struct tnpu_core *c, bool save)
{
#define F32(x) do { if (save) put(s, (x), 4); else (x) = (uint32_t)get(s, 4); } while (0)
#define F64(x) do { if (save) put(s, (x), 8); else (x) = get(s, 8); } while (0)
#define FB(x) do { if (save) put(s, (x), 1); else (x) = get(s, 1) != 0; } while (0)
	F32(c->ctrl);
	F32(c->scratch);
	F32(c->irq_status);
	F32(c->irq_mask);
	F32(c->err_code);
	F32(c->err_queue);
	F32(c->err_info);
	F32(c->err_cmd_offset);
	F64(c->err_addr);
	F64(c->err_seqno);
	F64(c->mmu_ctx_base);
	F32(c->mmu_ctx_count);
	F32(c->mmu_faults);
	for (unsigned i = 0; i < TNPU_CNT_NUM; i++)
		F64(c->perf[i]);
	for (unsigned r = 0; r < c->cfg.rows; r++)
		F64(c->row_busy[r]);
	for (unsigned q = 0; q < c->cfg.queues; q++) {
		struct queue_regs *qr = &c->q[q];

		F64(qr->ring_base);
		F32(qr->ring_size);
		F32(qr->head);
		F32(qr->tail);
		F64(qr->fence);
		FB(qr->enabled);
		FB(qr->busy);
		FB(qr->error);
		F32(qr->session);
		F64(qr->done_seqno);
		F32(qr->err_code);
		F32(qr->err_info);
		F32(qr->err_cmd_offset);
		F32(qr->err_ctx);
		F64(qr->err_addr);
		F64(qr->err_seqno);
		F32(qr->jobs_done);
		for (unsigned i = 0; i < TNPU_CNT_NUM; i++)
			F64(qr->perf[i]);
		F64(qr->save_base);
	}
#undef F32
#undef F64
#undef FB
}

/* The header: magic, version, size, counter count, then the geometry. */
static void put_header(struct snap *s, const struct tnpu_config *cfg, uint32_t size)
{
	put(s, SNAP_MAGIC, 4);
	put(s, SNAP_VERSION, 4);
	put(s, size, 4);
	put(s, TNPU_CNT_NUM, 4);
	put(s, cfg->rows, 4);
	put(s, cfg->cols, 4);
	put(s, cfg->pes, 4);
	put(s, cfg->sram, 4);
	put(s, cfg->queues, 4);
	put(s, cfg->clock_mhz, 4);
	put(s, cfg->watchdog_cycles, 8);
	put(s, cfg->host_work, 8);
	put(s, cfg->n_islands, 4);
	for (unsigned i = 0; i < TNPU_MAX_ISLANDS; i++) {
		put(s, cfg->islands[i].rows, 1);
		put(s, cfg->islands[i].dtypes, 1);
		put(s, cfg->islands[i].clkdiv, 1);
	}
}

size_t tnpu_core_snapshot_size(const struct tnpu_core *core)
{
	struct snap s = { 0 };
	struct tnpu_core tmp = *core;

	put_header(&s, &core->cfg, 0);
	walk_regs(&s, &tmp, true);
	return s.pos;
}

__attribute__((format(printf, 4, 5)))
static int fail(char *msg, size_t msglen, int err, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (msg && msglen) {
		n = snprintf(msg, msglen, "tnpu: migration stream: ");
		if (n < 0 || (size_t)n >= msglen)
			n = 0;
		va_start(ap, fmt);
		vsnprintf(msg + n, msglen - n, fmt, ap);
		va_end(ap);
	}
	return err;
}

int tnpu_core_snapshot_save(const struct tnpu_core *core, void *buf, size_t len, char *msg, size_t msglen)
{
	size_t need = tnpu_core_snapshot_size(core);
	struct snap s = { .wp = buf, .len = len };
	struct tnpu_core tmp = *core;

	if (msg && msglen)
		msg[0] = 0;
	for (unsigned q = 0; q < core->cfg.queues; q++)
		if (core->q[q].busy)
			return fail(msg, msglen, -EBUSY, "queue %u has a job in flight", q);
	if (len < need)
		return fail(msg, msglen, -ENOSPC, "buffer of %zu bytes, need %zu", len, need);
	put_header(&s, &core->cfg, (uint32_t)need);
	walk_regs(&s, &tmp, true);
	return (int)s.pos;
}

/* Compare one header field with this device's value. */
#define CHECK(name, want)                                                                          \
	do {                                                                                       \
		uint64_t got_ = get(&s, sizeof(want));                                             \
		if (s.short_read)                                                                  \
			return fail(msg, msglen, -EINVAL, "truncated at %s (%zu bytes)", name, len); \
		if (got_ != (uint64_t)(want))                                                      \
			return fail(msg, msglen, -EINVAL, "%s is %llu, this device has %llu", name, \
				    (unsigned long long)got_, (unsigned long long)(want));         \
	} while (0)

int tnpu_core_snapshot_load(struct tnpu_core *core, const void *buf, size_t len, char *msg, size_t msglen)
{
	const struct tnpu_config *cfg = &core->cfg;
	struct snap s = { .rp = buf, .len = len };
	size_t need = tnpu_core_snapshot_size(core);
	struct tnpu_core tmp = *core;
	char field[32];
	uint64_t size;

	if (msg && msglen)
		msg[0] = 0;
	if (!buf && len)
		return fail(msg, msglen, -EINVAL, "no snapshot buffer");
	CHECK("magic", (uint32_t)SNAP_MAGIC);
	CHECK("snapshot version", (uint32_t)SNAP_VERSION);
	size = get(&s, 4);	/* checked once the geometry (which sets it) matched */
	CHECK("counter count", (uint32_t)TNPU_CNT_NUM);
	CHECK("rows", cfg->rows);
	CHECK("cols", cfg->cols);
	CHECK("pes", cfg->pes);
	CHECK("sram", cfg->sram);
	CHECK("queues", cfg->queues);
	CHECK("clock_mhz", cfg->clock_mhz);
	CHECK("watchdog", cfg->watchdog_cycles);
	CHECK("host_work", cfg->host_work);
	CHECK("islands count", cfg->n_islands);
	for (unsigned i = 0; i < TNPU_MAX_ISLANDS; i++) {
		snprintf(field, sizeof(field), "island %u rows", i);
		CHECK(field, cfg->islands[i].rows);
		snprintf(field, sizeof(field), "island %u dtypes", i);
		CHECK(field, cfg->islands[i].dtypes);
		snprintf(field, sizeof(field), "island %u clkdiv", i);
		CHECK(field, cfg->islands[i].clkdiv);
	}
	if (size != need || len != need)
		return fail(msg, msglen, -EINVAL, "snapshot size is %zu bytes (header: %llu), this device needs %zu",
			    len, (unsigned long long)size, need);
	walk_regs(&s, &tmp, false);
	if (s.short_read || s.pos != len)
		return fail(msg, msglen, -EINVAL, "register block of %zu bytes, expected %zu", len, need);
	for (unsigned q = 0; q < cfg->queues; q++) {
		const struct queue_regs *qr = &tmp.q[q];

		if (qr->busy)
			return fail(msg, msglen, -EINVAL, "queue %u busy: a job was in flight at the save", q);
		if (!qr->enabled)
			continue;
		if (!tnpu_valid_ring_size(qr->ring_size))
			return fail(msg, msglen, -EINVAL, "queue %u enabled with ring size %u", q, qr->ring_size);
		if (qr->head >= qr->ring_size || qr->tail >= qr->ring_size)
			return fail(msg, msglen, -EINVAL, "queue %u head %u / tail %u not below ring size %u", q,
				    qr->head, qr->tail, qr->ring_size);
	}
	/* Nothing of this device's own: no job of the old generation can complete. */
	tmp.generation = core->generation + 1;
	tmp.pending = core->pending;
	*core = tmp;
	return 0;
}
