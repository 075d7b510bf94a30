/* SPDX-License-Identifier: MIT */
/* Engine timeline trace (cycle-model.md "Trace"): well-formed events, visible ping-pong overlap,
 * and no effect on results or counters. */
#include "common.h"

#define MAX_EV 4096

struct rec {
	struct tnpu_trace_event ev[MAX_EV];
	unsigned n, dropped;
};

static void rec_cb(void *opaque, const struct tnpu_trace_event *ev)
{
	struct rec *r = opaque;

	if (r->n < MAX_EV)
		r->ev[r->n++] = *ev;
	else
		r->dropped++;
}

static uint32_t fnv(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* One outer tile, 16 K steps: load and compute are comparable (test_cycles.c). */
static const struct tgemm gemm_shape = { .m = 2 * 2 * 8, .n = 4 * 4, .k = 16 * 32, .tm = 8, .tn = 4, .kt = 32 };

static void run_gemm(bool pipelined, struct rec *rec, struct tnpu_result *res, uint32_t *crc)
{
	struct tnpu_config cfg = small_cfg();
	struct tgemm g = gemm_shape;
	struct tsim s;
	struct tcb cb;
	uint64_t seed = 7;

	g.pipelined = pipelined;
	cr_assert_eq(tsim_init(&s, &cfg, 32ull << 20), 0);
	g.a = tsim_buf(&s, (uint64_t)g.m * g.k);
	g.b = tsim_buf(&s, (uint64_t)g.k * g.n);
	g.c = tsim_buf(&s, (uint64_t)g.m * g.n * 4);
	for (size_t i = 0; i < (size_t)g.m * g.k; i++)
		((uint8_t *)tsim_ptr(&s, g.a))[i] = (uint8_t)trng(&seed);
	for (size_t i = 0; i < (size_t)g.k * g.n; i++)
		((uint8_t *)tsim_ptr(&s, g.b))[i] = (uint8_t)trng(&seed);
	tcb_init(&cb);
	cr_assert_eq(tgemm_build(&g, &cfg, &cb), 0);
	if (rec) {
		memset(rec, 0, sizeof(*rec));
		tnpu_exec_set_trace(s.ex, rec_cb, rec);
	}
	tsim_run(&s, &cb, 0, res);
	ASSERT_OK(*res);
	*crc = fnv(tsim_ptr(&s, g.c), (size_t)g.m * g.n * 4);
	tcb_free(&cb);
	tsim_fini(&s);
}

/* Does a load issued after a compute interval run while that interval is still busy? */
static unsigned load_compute_overlaps(const struct rec *r)
{
	unsigned n = 0;

	for (unsigned i = 0; i < r->n; i++) {
		const struct tnpu_trace_event *c = &r->ev[i];

		if (c->kind != TNPU_TRACE_EXE)
			continue;
		for (unsigned j = i + 1; j < r->n; j++) {
			const struct tnpu_trace_event *l = &r->ev[j];

			if (l->engine == TNPU_ENGINE_LOAD && l->cmd_offset > c->cmd_offset &&
			    l->start < c->end && l->end > c->start) {
				n++;
				break;
			}
		}
	}
	return n;
}

Test(trace, events_are_well_formed_and_inside_the_job)
{
	static struct rec rec;
	struct tnpu_result res;
	uint64_t total, busy[TNPU_ENGINE_NUM + 1] = { 0 };
	unsigned seen[16] = { 0 };
	uint32_t crc;

	run_gemm(true, &rec, &res, &crc);
	total = res.counters[TNPU_CNT_TOTAL_CYCLES];
	cr_assert_gt(rec.n, 0);
	cr_assert_eq(rec.dropped, 0);
	for (unsigned i = 0; i < rec.n; i++) {
		const struct tnpu_trace_event *e = &rec.ev[i];

		cr_assert_leq(e->start, e->end, "event %u: start %llu > end %llu", i, (unsigned long long)e->start,
			      (unsigned long long)e->end);
		cr_assert_leq(e->end, total, "event %u ends at %llu after the job (%llu)", i,
			      (unsigned long long)e->end, (unsigned long long)total);
		cr_assert_leq(e->engine, TNPU_ENGINE_NUM);
		cr_assert(e->kind >= TNPU_TRACE_DMA_H2D && e->kind <= TNPU_TRACE_FENCE, "kind %u", e->kind);
		cr_assert_str_neq(tnpu_trace_kind_name(e->kind), "?");
		if (e->kind == TNPU_TRACE_CONFIG || e->kind == TNPU_TRACE_EXE)
			cr_assert_lt(e->row, small_cfg().rows);
		else
			cr_assert_eq(e->row, TNPU_TRACE_ROW_NONE);
		seen[e->kind]++;
		if (e->kind == TNPU_TRACE_DMA_H2D || e->kind == TNPU_TRACE_IM2COL || e->kind == TNPU_TRACE_DMA_D2H)
			busy[e->engine] += e->end - e->start;
	}
	cr_assert_gt(seen[TNPU_TRACE_DMA_H2D], 0);
	cr_assert_gt(seen[TNPU_TRACE_DMA_D2H], 0);
	cr_assert_gt(seen[TNPU_TRACE_EXE], 0);
	cr_assert_gt(seen[TNPU_TRACE_SEM_WAIT], 0, "the ping-pong program stalls on semaphores");
	/* The engine intervals are exactly what the cycle counters add up. */
	cr_assert_eq(busy[TNPU_ENGINE_LOAD], res.counters[TNPU_CNT_LOAD_CYCLES]);
	cr_assert_eq(busy[TNPU_ENGINE_STORE], res.counters[TNPU_CNT_STORE_CYCLES]);
}

Test(trace, double_buffered_gemm_loads_the_next_tile_while_the_current_one_computes)
{
	static struct rec piped, serial;
	struct tnpu_result res;
	uint32_t crc;

	run_gemm(true, &piped, &res, &crc);
	run_gemm(false, &serial, &res, &crc);
	cr_assert_geq(load_compute_overlaps(&piped), 8, "pipelined: %u overlaps", load_compute_overlaps(&piped));
	/* The check can fail: the serial program of the same GEMM shows none. */
	cr_assert_eq(load_compute_overlaps(&serial), 0, "serial: %u overlaps", load_compute_overlaps(&serial));
}

Test(trace, tracing_changes_neither_results_nor_counters)
{
	static struct rec rec;
	struct tnpu_result on, off;
	uint32_t crc_on, crc_off;

	run_gemm(true, NULL, &off, &crc_off);
	run_gemm(true, &rec, &on, &crc_on);
	cr_assert_gt(rec.n, 0);
	cr_assert_eq(crc_on, crc_off);
	cr_assert_eq(memcmp(&on, &off, sizeof(on)), 0, "tnpu_result differs with tracing on");
}

Test(trace, null_callback_turns_tracing_off)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;
	static struct rec rec;

	cr_assert_eq(tsim_init(&s, &cfg, 8 << 20), 0);
	tcb_init(&cb);
	tcb_dma_fill(&cb, 0, 0, 0, 0, 256, 0x5a);
	memset(&rec, 0, sizeof(rec));
	tnpu_exec_set_trace(s.ex, rec_cb, &rec);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	cr_assert_eq(rec.n, 1);
	cr_assert_eq(rec.ev[0].kind, TNPU_TRACE_DMA_H2D);
	tnpu_exec_set_trace(s.ex, NULL, &rec);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(rec.n, 1, "no events after tracing is turned off");
	tcb_free(&cb);
	tsim_fini(&s);
}
