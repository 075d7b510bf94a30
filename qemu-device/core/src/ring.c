/* SPDX-License-Identifier: MIT */
/*
 * Islands' sub-streams and producer-consumer rings (chain #9, seed 000 paras 8-10, 40-52):
 * ISLAND, RING_INIT, RING_SIGNAL (PUBLISH / RELEASE), RING_WAIT (ROWS / SPACE) and the ownership
 * check of ring-memory DMA.  Spec: Documentation/hardware/islands-and-chaining.md.
 *
 * Like semaphores, ring operations are resolved in stream order: a RING_WAIT is satisfied only by
 * RING_SIGNALs earlier in the command buffer (else RING_DEADLOCK: the device would wait forever),
 * and the cycle model times the wait from the signal's token time.
 */
#include <stdlib.h>

#include "internal.h"

#define CNT(ex, i) ((ex)->res->counters[TNPU_CNT_##i])

int tnpu_rings_alloc(struct tnpu_exec *ex)
{
	ex->ring_mem = calloc(1, TNPU_RING_MEM_BYTES);
	if (!ex->ring_mem)
		return -1;
	for (unsigned i = 0; i < TNPU_NUM_RINGS; i++) {
		ex->ring[i].pub_time = calloc(2 * TNPU_RING_MAX_SLOTS, sizeof(uint64_t));
		if (!ex->ring[i].pub_time)
			return -1;
		ex->ring[i].rel_time = ex->ring[i].pub_time + TNPU_RING_MAX_SLOTS;
	}
	return 0;
}

void tnpu_rings_free(struct tnpu_exec *ex)
{
	for (unsigned i = 0; i < TNPU_NUM_RINGS; i++)
		free(ex->ring[i].pub_time);
	free(ex->ring_mem);
}

/* Rings are job state; ring memory is cleared so one job never sees another's rows. */
void tnpu_rings_reset(struct tnpu_exec *ex)
{
	for (unsigned i = 0; i < TNPU_NUM_RINGS; i++) {
		struct ring_state *rg = &ex->ring[i];

		rg->valid = false;
		rg->released = rg->acquired = rg->published = rg->reserved = 0;
	}
	if (ex->ring_dirty)
		memset(ex->ring_mem, 0, ex->ring_dirty);
	ex->ring_dirty = 0;
}

uint32_t tnpu_cmd_island(struct tnpu_exec *ex, const uint8_t *c)
{
	for (unsigned i = 9; i < 16; i++)
		if (c[i])
			return tnpu_fail(ex, TNPU_ERR_CMD_RESERVED, 0, 0);
	if (c[8] >= ex->n_isl)
		return tnpu_fail(ex, TNPU_ERR_ISLAND_ACCESS, c[8] << 8 | 0xFF, 0);
	/* Selecting an island costs the command processor a decode; it blocks no engine. */
	tnpu_island_select(ex, c[8]);
	return 0;
}

uint32_t tnpu_cmd_ring_init(struct tnpu_exec *ex, const uint8_t *c)
{
	uint8_t id = c[8], prod = c[9], cons = c[10];
	uint32_t slots = ld32(c + 12), base = ld32(c + 16), pitch = ld32(c + 20);
	struct ring_state *rg;
	uint64_t end, empty_at = 0;

	if (c[11] || ld64(c + 24))
		return tnpu_fail(ex, TNPU_ERR_CMD_RESERVED, 0, 0);
	if (id >= TNPU_NUM_RINGS || prod >= ex->n_isl || cons >= ex->n_isl || !slots ||
	    slots > TNPU_RING_MAX_SLOTS || (!pitch && base))
		return tnpu_fail(ex, TNPU_ERR_RING_DESC, id, 0);
	end = (uint64_t)base + (uint64_t)slots * pitch;
	if (end > TNPU_RING_MEM_BYTES)
		return tnpu_fail(ex, TNPU_ERR_RING_DESC, id, base);
	rg = &ex->ring[id];
	/* Re-defining a ring that still holds rows would lose them. */
	if (rg->valid && rg->reserved != rg->released)
		return tnpu_fail(ex, TNPU_ERR_RING_DESC, id, 0);
	for (unsigned i = 0; i < TNPU_NUM_RINGS; i++) {
		const struct ring_state *o = &ex->ring[i];

		if (i == id || !o->valid || !o->pitch || !pitch)
			continue;
		if (base < (uint64_t)o->base + (uint64_t)o->slots * o->pitch && o->base < end)
			return tnpu_fail(ex, TNPU_ERR_RING_DESC, id, base);
	}
	if (rg->valid)
		for (uint32_t s = 0; s < rg->slots; s++)
			empty_at = TNPU_MAX(empty_at, rg->rel_time[s]);
	rg->valid = true;
	rg->producer = prod;
	rg->consumer = cons;
	rg->slots = slots;
	rg->base = base;
	rg->pitch = pitch;
	rg->released = rg->acquired = rg->published = rg->reserved = 0;
	for (uint32_t s = 0; s < slots; s++) {
		rg->pub_time[s] = 0;
		rg->rel_time[s] = empty_at;
	}
	ex->P += TNPU_CYC_CMD;
	return 0;
}

uint32_t tnpu_cmd_ring_op(struct tnpu_exec *ex, const uint8_t *c, bool signal, bool async)
{
	uint8_t e = c[8], id = c[9], op = c[10];
	uint32_t count = ld32(c + 12);
	struct ring_state *rg;
	uint64_t s, t;
	bool producer_side;

	if (c[11])
		return tnpu_fail(ex, TNPU_ERR_CMD_RESERVED, 0, 0);
	if (e >= TNPU_ENGINE_NUM || id >= TNPU_NUM_RINGS || op > 1 || !ex->ring[id].valid || !count ||
	    count > ex->ring[id].slots)
		return tnpu_fail(ex, TNPU_ERR_RING_DESC, id, 0);
	rg = &ex->ring[id];
	/* PUBLISH and WAIT SPACE are the producer's, RELEASE and WAIT ROWS the consumer's. */
	producer_side = signal ? op == TNPU_RING_PUBLISH : op == TNPU_RING_WAIT_SPACE;
	if (ex->cur != (producer_side ? rg->producer : rg->consumer))
		return tnpu_fail(ex, TNPU_ERR_RING_DESC, id | (ex->cur << 8), 0);
	s = TNPU_MAX(ex->F[e], async ? 0 : ex->P);
	if (signal) {
		uint64_t *q, *lim, *tm;

		t = s;
		if (e == TNPU_ENGINE_COMPUTE)
			t = TNPU_MAX(t, tnpu_island_rows_free(ex));
		if (op == TNPU_RING_PUBLISH) {
			q = &rg->published;
			lim = &rg->reserved;
			tm = rg->pub_time;
		} else {
			q = &rg->released;
			lim = &rg->acquired;
			tm = rg->rel_time;
		}
		/* Only reserved rows can be published and only acquired rows released. */
		if (*lim - *q < count)
			return tnpu_fail(ex, TNPU_ERR_RING_ACCESS, id, 0);
		for (uint32_t i = 0; i < count; i++)
			tm[(*q + i) % rg->slots] = t;
		*q += count;
		if (op == TNPU_RING_PUBLISH)
			CNT(ex, RING_ROWS) += count;
		ex->F[e] = s + TNPU_CYC_CMD;
		ex->P = t;
		return 0;
	}
	t = s;
	if (op == TNPU_RING_WAIT_ROWS) {
		if (rg->published - rg->acquired < count)
			return tnpu_fail(ex, TNPU_ERR_RING_DEADLOCK, id, 0);
		for (uint32_t i = 0; i < count; i++)
			t = TNPU_MAX(t, rg->pub_time[(rg->acquired + i) % rg->slots]);
		rg->acquired += count;
		CNT(ex, RING_WAIT_CYCLES) += t - s;
	} else {
		/* Back-pressure: the slots must have been released by earlier commands. */
		if (rg->reserved + count - rg->released > rg->slots)
			return tnpu_fail(ex, TNPU_ERR_RING_DEADLOCK, id, 0);
		for (uint32_t i = 0; i < count; i++)
			t = TNPU_MAX(t, rg->rel_time[(rg->reserved + i) % rg->slots]);
		rg->reserved += count;
		CNT(ex, RING_FULL_CYCLES) += t - s;
	}
	if (t > s)
		tnpu_trace_emit(ex, e, TNPU_TRACE_ROW_NONE, TNPU_TRACE_RING_WAIT, s, t);
	ex->F[e] = t + TNPU_CYC_CMD;
	ex->P = ex->F[e];
	return 0;
}

/* Is slot `s` inside the window of `n` rows starting at sequence number `q0`? */
static bool in_window(const struct ring_state *rg, uint32_t s, uint64_t q0, uint64_t n)
{
	uint64_t d = ((uint64_t)s + rg->slots - q0 % rg->slots) % rg->slots;

	return d < n;
}

/* Every byte of [a, a + w) must lie in slots this island owns right now: the consumer reads only
 * rows it acquired (published, not yet released), the producer writes only rows it reserved and
 * has not published.  This is what keeps a consumer from ever reading an unpublished row. */
static uint32_t check_run(struct tnpu_exec *ex, bool h2d, uint64_t a, uint64_t w)
{
	uint64_t covered = 0;

	for (unsigned i = 0; i < TNPU_NUM_RINGS; i++) {
		const struct ring_state *rg = &ex->ring[i];
		uint64_t lo, hi, end;

		if (!rg->valid || !rg->pitch)
			continue;
		end = (uint64_t)rg->base + (uint64_t)rg->slots * rg->pitch;
		lo = TNPU_MAX(a, rg->base);
		hi = TNPU_MIN(a + w, end);
		if (lo >= hi)
			continue;
		if (ex->cur != (h2d ? rg->consumer : rg->producer))
			return tnpu_fail(ex, TNPU_ERR_RING_ACCESS, i | (ex->cur << 8), a);
		/* a row can cover every slot of every ring (8 x 4096): one unit per slot (issue #28) */
		if (tnpu_stopped(ex, (hi - 1 - rg->base) / rg->pitch - (lo - rg->base) / rg->pitch + 1))
			return tnpu_stop_fail(ex);
		for (uint64_t s = (lo - rg->base) / rg->pitch; s <= (hi - 1 - rg->base) / rg->pitch; s++) {
			bool ok = h2d ? in_window(rg, (uint32_t)s, rg->released, rg->acquired - rg->released)
				      : in_window(rg, (uint32_t)s, rg->published, rg->reserved - rg->published);

			if (!ok)
				return tnpu_fail(ex, TNPU_ERR_RING_ACCESS, i | (ex->cur << 8), rg->base + s * rg->pitch);
		}
		covered += hi - lo;
	}
	if (covered != w)
		return tnpu_fail(ex, TNPU_ERR_RING_ACCESS, 0xFF | (ex->cur << 8), a);
	return 0;
}

uint32_t tnpu_ring_dma_check(struct tnpu_exec *ex, bool h2d, uint64_t off, uint64_t py, uint64_t pz, uint32_t width,
			     uint32_t height, uint32_t depth)
{
	for (uint32_t z = 0; z < depth; z++) {
		for (uint32_t y = 0; y < height; y++) {
			uint64_t a, t;

			if (tnpu_stopped(ex, 1))
				return tnpu_stop_fail(ex);
			if (__builtin_mul_overflow((uint64_t)z, pz, &t) || __builtin_add_overflow(off, t, &a) ||
			    __builtin_mul_overflow((uint64_t)y, py, &t) || __builtin_add_overflow(a, t, &a) ||
			    a > TNPU_RING_MEM_BYTES || TNPU_RING_MEM_BYTES - a < width)
				return tnpu_fail(ex, TNPU_ERR_RING_ACCESS, 0xFF | (ex->cur << 8), off);
			if (check_run(ex, h2d, a, width))
				return ex->res->error;
		}
	}
	return 0;
}
