/* SPDX-License-Identifier: MIT */
/*
 * Islands and producer-consumer rings (chain #9, Documentation/hardware/islands-and-chaining.md):
 * the islands= spec, island capability registers, ISLAND sub-streams, RING_* semantics, back-
 * pressure, injected producer/consumer delays, isolation and deadlock errors.
 */
#include <errno.h>

#include "common.h"

/* ---- command helpers (the testlib knows only the classic commands) ---- */

static void cb_island(struct tcb *cb, uint8_t isl)
{
	struct tnpu_cmd_island c = { .hdr = { TNPU_CMD_ISLAND, 0, 0, sizeof(c) }, .island = isl };

	tcb_raw(cb, &c, sizeof(c));
}

static void cb_ring_init(struct tcb *cb, uint8_t ring, uint8_t prod, uint8_t cons, uint32_t slots, uint32_t base,
			 uint32_t pitch)
{
	struct tnpu_cmd_ring_init c = { .hdr = { TNPU_CMD_RING_INIT, 0, 0, sizeof(c) }, .ring = ring,
					.producer = prod, .consumer = cons, .slots = slots, .base = base,
					.pitch = pitch };

	tcb_raw(cb, &c, sizeof(c));
}

static void cb_ring(struct tcb *cb, bool signal, uint8_t engine, uint8_t ring, uint8_t op, uint32_t count)
{
	struct tnpu_cmd_ring_op c = { .hdr = { signal ? TNPU_CMD_RING_SIGNAL : TNPU_CMD_RING_WAIT, TNPU_CMD_F_ASYNC,
					       0, sizeof(c) },
				      .engine = engine, .ring = ring, .op = op, .count = count };

	tcb_raw(cb, &c, sizeof(c));
}

/* One row of `width` bytes between SRAM (row, half 0, sram_off) and ring memory `roff`. */
static size_t cb_ring_dma(struct tcb *cb, bool h2d, uint64_t roff, uint8_t row, uint32_t sram_off, uint32_t width)
{
	struct tnpu_cmd_dma d = { .hdr = { h2d ? TNPU_CMD_DMA_H2D : TNPU_CMD_DMA_D2H, TNPU_CMD_F_ASYNC, 0, sizeof(d) },
				  .host_va = roff, .sram_off = sram_off, .width = width, .height = 1, .depth = 1,
				  .row = row, .dma_flags = TNPU_DMA_F_RING };
	size_t at = cb->len;

	tcb_raw(cb, &d, sizeof(d));
	return at;
}

static struct tnpu_config islands_cfg(const char *spec, unsigned rows)
{
	struct tnpu_config c = small_cfg();
	char msg[160];

	c.rows = rows;
	cr_assert_eq(tnpu_islands_parse(spec, &c, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(tnpu_config_validate(&c, msg, sizeof(msg)), 0, "%s", msg);
	return c;
}

/* ---- trace capture ---- */
#define MAX_EV 4096
struct evlog {
	struct tnpu_trace_event ev[MAX_EV];
	unsigned n;
};

static void log_ev(void *opaque, const struct tnpu_trace_event *ev)
{
	struct evlog *l = opaque;

	if (l->n < MAX_EV)
		l->ev[l->n++] = *ev;
}

static const struct tnpu_trace_event *ev_at(const struct evlog *l, size_t cmd_offset)
{
	for (unsigned i = 0; i < l->n; i++)
		if (l->ev[i].cmd_offset == cmd_offset && l->ev[i].kind != TNPU_TRACE_RING_WAIT)
			return &l->ev[i];
	cr_assert_fail("no trace event for the command at 0x%zx", cmd_offset);
	return NULL;
}

/* ---- configuration and registers ---- */

Test(chain, islands_spec_parses_and_bad_specs_get_clear_errors)
{
	struct tnpu_config c = small_cfg();
	char msg[160];

	c.rows = 4;
	cr_assert_eq(tnpu_islands_parse("2:i8,1:f32+bf16:2,1", &c, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(c.n_islands, 3);
	cr_assert_eq(c.islands[0].rows, 2);
	cr_assert_eq(c.islands[0].dtypes, TNPU_CAP_DTYPE_INT8);
	cr_assert_eq(c.islands[0].clkdiv, 1);
	cr_assert_eq(c.islands[1].dtypes, TNPU_CAP_DTYPE_FP32 | TNPU_CAP_DTYPE_BF16);
	cr_assert_eq(c.islands[1].clkdiv, 2);
	cr_assert_eq(c.islands[2].dtypes, 0x7);
	cr_assert_eq(tnpu_config_validate(&c, msg, sizeof(msg)), 0, "%s", msg);

	cr_assert_eq(tnpu_islands_parse("2:i8,1", &c, msg, sizeof(msg)), 0);
	cr_assert_eq(tnpu_config_validate(&c, msg, sizeof(msg)), -EINVAL);
	cr_assert(strstr(msg, "add up to rows"), "%s", msg);

	static const char *const bad[] = { "0", "2:i4", "2:i8:9", "2:i8:1:3", "x", "2,", "2:i8+", "1,1,1,1,1,1,1,1,1" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg[0] = 0;
		cr_assert_eq(tnpu_islands_parse(bad[i], &c, msg, sizeof(msg)), -EINVAL, "%s accepted", bad[i]);
		cr_assert(strstr(msg, "islands="), "no message for %s", bad[i]);
	}
	cr_assert_eq(tnpu_islands_parse("", &c, msg, sizeof(msg)), 0);
	cr_assert_eq(c.n_islands, 0);
}

static uint32_t rd(struct tnpu_core *core, uint64_t off)
{
	uint64_t v;

	cr_assert_eq(tnpu_core_reg_read(core, off, 4, &v), TNPU_REG_OK, "read 0x%llx", (unsigned long long)off);
	return (uint32_t)v;
}

Test(chain, island_registers_describe_every_island)
{
	struct tnpu_config c = islands_cfg("1:i8,3:i8+f32:2", 4);
	struct tnpu_core *core;
	char msg[160];

	cr_assert_eq(tnpu_core_new(&c, &core, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(rd(core, TNPU_REG_ISLANDS) & 0xFF, 2);
	cr_assert_eq((rd(core, TNPU_REG_ISLANDS) >> 8) & 0xFF, TNPU_NUM_RINGS);
	cr_assert_eq(rd(core, TNPU_REG_RING_MEM), TNPU_RING_MEM_BYTES);
	cr_assert_eq(rd(core, TNPU_REG_ISL(0, TNPU_ISL_ROWS)), 0 | 1 << 8 | 1 << 16);
	cr_assert_eq(rd(core, TNPU_REG_ISL(1, TNPU_ISL_ROWS)), 1 | 3 << 8 | 2 << 16);
	cr_assert_eq(rd(core, TNPU_REG_ISL(0, TNPU_ISL_DTYPES)), TNPU_CAP_DTYPE_INT8);
	cr_assert_eq(rd(core, TNPU_REG_ISL(1, TNPU_ISL_DTYPES)), TNPU_CAP_DTYPE_INT8 | TNPU_CAP_DTYPE_FP32);
	cr_assert_eq(rd(core, TNPU_REG_ISL(1, TNPU_ISL_SRAM_BASE)), c.sram);
	cr_assert_eq(rd(core, TNPU_REG_ISL(1, TNPU_ISL_SRAM_SIZE)), 3 * c.sram);
	cr_assert_eq(rd(core, TNPU_REG_ISL(2, TNPU_ISL_ROWS)), 0);
	cr_assert_eq(rd(core, TNPU_REG_CAP_FEATURES) & 0x1C00, 0x1C00);
	tnpu_core_free(core);

	/* The default device is one island equal to the whole array. */
	c = small_cfg();
	cr_assert_eq(tnpu_core_new(&c, &core, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(rd(core, TNPU_REG_ISLANDS) & 0xFF, 1);
	cr_assert_eq(rd(core, TNPU_REG_ISL(0, TNPU_ISL_ROWS)), c.rows << 8 | 1 << 16);
	cr_assert_eq(rd(core, TNPU_REG_ISL(0, TNPU_ISL_DTYPES)), 0x7);
	cr_assert_eq(rd(core, TNPU_REG_ISL(0, TNPU_ISL_SRAM_SIZE)), c.rows * c.sram);
	tnpu_core_free(core);
}

/* ---- the producer-consumer pipeline ---- */

#define NROWS 8
#define W 64

struct pipe {
	size_t prod_d2h[NROWS], cons_h2d[NROWS];
	uint64_t src, dst, scratch;
};

/* Producer (island 0) streams NROWS rows of its SRAM through a 2-slot ring; consumer (island 1)
 * copies each row into its SRAM, then everything to dst.  pdelay[i] / cdelay[i] inject extra
 * work (in 128-byte units) on the producer's store engine / consumer's load engine before row i. */
static void build_pipe(struct tcb *cb, struct pipe *p, const unsigned *pdelay, const unsigned *cdelay)
{
	tcb_init(cb);
	cb_ring_init(cb, 0, 0, 1, 2, 0, W);
	cb_island(cb, 0);
	tcb_dma(cb, true, TNPU_CMD_F_ASYNC, p->src, W, 0, 0, 0, 0, W, 0, W, NROWS, 1);
	tcb_sem(cb, true, TNPU_CMD_F_ASYNC, TNPU_ENGINE_LOAD, 0, 1);
	tcb_sem(cb, false, TNPU_CMD_F_ASYNC, TNPU_ENGINE_STORE, 0, 1);
	for (unsigned step = 0; step <= NROWS; step++) {
		/* producer row `step`, consumer row `step - 1`: the producer runs one row ahead in
		 * stream order; the ring's second slot lets it run further ahead in time. */
		if (step < NROWS) {
			unsigned i = step;

			cb_island(cb, 0);
			if (pdelay && pdelay[i])
				tcb_dma(cb, false, TNPU_CMD_F_ASYNC, p->scratch, 0, 0, 0, 0, 0, 0, 0, 128, pdelay[i], 1);
			cb_ring(cb, false, TNPU_ENGINE_STORE, 0, TNPU_RING_WAIT_SPACE, 1);
			p->prod_d2h[i] = cb_ring_dma(cb, false, (i % 2) * W, 0, i * W, W);
			cb_ring(cb, true, TNPU_ENGINE_STORE, 0, TNPU_RING_PUBLISH, 1);
		}
		if (step >= 1) {
			unsigned i = step - 1;

			cb_island(cb, 1);
			if (cdelay && cdelay[i])
				tcb_dma_fill(cb, TNPU_CMD_F_ASYNC, 0, 1, 0, 128 * cdelay[i], 0);
			cb_ring(cb, false, TNPU_ENGINE_LOAD, 0, TNPU_RING_WAIT_ROWS, 1);
			p->cons_h2d[i] = cb_ring_dma(cb, true, (i % 2) * W, 0, i * W, W);
			cb_ring(cb, true, TNPU_ENGINE_LOAD, 0, TNPU_RING_RELEASE, 1);
		}
	}
	cb_island(cb, 1);
	tcb_sem(cb, true, TNPU_CMD_F_ASYNC, TNPU_ENGINE_LOAD, 0, 1);
	tcb_sem(cb, false, TNPU_CMD_F_ASYNC, TNPU_ENGINE_STORE, 0, 1);
	tcb_dma(cb, false, TNPU_CMD_F_ASYNC, p->dst, W, 0, 0, 0, 0, W, 0, W, NROWS, 1);
}

static void pipe_bufs(struct tsim *s, struct pipe *p, uint64_t seed)
{
	uint8_t *src;

	p->src = tsim_buf(s, NROWS * W);
	p->dst = tsim_buf(s, NROWS * W);
	p->scratch = tsim_buf(s, 64 * 1024);
	src = tsim_ptr(s, p->src);
	for (unsigned i = 0; i < NROWS * W; i++)
		src[i] = (uint8_t)trng(&seed);
}

Test(chain, consumer_never_reads_an_unpublished_row_under_injected_producer_delays)
{
	struct tnpu_config c = islands_cfg("1,1", 2);
	static struct evlog log;
	struct tsim s;

	cr_assert_eq(tsim_init(&s, &c, 16 << 20), 0);
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct tnpu_result res;
		struct pipe p;
		struct tcb cb;
		unsigned pdelay[NROWS];
		uint64_t rs = seed * 7919;

		pipe_bufs(&s, &p, seed);
		for (unsigned i = 0; i < NROWS; i++)
			pdelay[i] = (unsigned)(trng(&rs) % 40);	/* 0..39 x 128 bytes of store work */
		build_pipe(&cb, &p, pdelay, NULL);
		log.n = 0;
		tnpu_exec_set_trace(s.ex, log_ev, &log);
		tsim_run(&s, &cb, 0, &res);
		tnpu_exec_set_trace(s.ex, NULL, NULL);
		ASSERT_OK(res);
		cr_assert_eq(memcmp(tsim_ptr(&s, p.dst), tsim_ptr(&s, p.src), NROWS * W), 0, "seed %llu: data differs",
			     (unsigned long long)seed);
		for (unsigned i = 0; i < NROWS; i++) {
			const struct tnpu_trace_event *w = ev_at(&log, p.prod_d2h[i]), *r = ev_at(&log, p.cons_h2d[i]);

			cr_assert_geq(r->start, w->end, "seed %llu row %u: consumer read at %llu, row published at %llu",
				      (unsigned long long)seed, i, (unsigned long long)r->start,
				      (unsigned long long)w->end);
		}
		cr_assert_eq(res.counters[TNPU_CNT_RING_ROWS], NROWS);
		cr_assert_eq(res.counters[TNPU_CNT_RING_BYTES], 2 * NROWS * W);
		cr_assert_gt(res.counters[TNPU_CNT_RING_WAIT_CYCLES], 0, "seed %llu: the consumer never waited",
			     (unsigned long long)seed);
		tcb_free(&cb);
	}
	tsim_fini(&s);
}

Test(chain, full_ring_blocks_the_producer_until_the_consumer_releases)
{
	struct tnpu_config c = islands_cfg("1,1", 2);
	static struct evlog log;
	struct tnpu_result res;
	unsigned cdelay[NROWS];
	struct tsim s;
	struct pipe p;
	struct tcb cb;

	for (unsigned i = 0; i < NROWS; i++)
		cdelay[i] = 20;	/* a slow consumer */
	cr_assert_eq(tsim_init(&s, &c, 16 << 20), 0);
	pipe_bufs(&s, &p, 5);
	build_pipe(&cb, &p, NULL, cdelay);
	tnpu_exec_set_trace(s.ex, log_ev, &log);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	cr_assert_eq(memcmp(tsim_ptr(&s, p.dst), tsim_ptr(&s, p.src), NROWS * W), 0);
	cr_assert_gt(res.counters[TNPU_CNT_RING_FULL_CYCLES], 0);
	/* Row i + 2 reuses row i's slot: it is written only after the consumer took row i. */
	for (unsigned i = 0; i + 2 < NROWS; i++)
		cr_assert_geq(ev_at(&log, p.prod_d2h[i + 2])->start, ev_at(&log, p.cons_h2d[i])->end, "row %u", i + 2);
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(chain, producer_and_consumer_overlap_in_time)
{
	struct tnpu_config c = islands_cfg("1,1", 2);
	struct tnpu_result res;
	struct tsim s;
	struct pipe p;
	struct tcb cb;
	unsigned d[NROWS];

	for (unsigned i = 0; i < NROWS; i++)
		d[i] = 30;
	cr_assert_eq(tsim_init(&s, &c, 16 << 20), 0);
	pipe_bufs(&s, &p, 9);
	build_pipe(&cb, &p, d, d);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	/* Run back to back, the two sides would take at least the sum of all DMA busy cycles. */
	cr_assert_lt(res.counters[TNPU_CNT_TOTAL_CYCLES] * 10, res.counters[TNPU_CNT_DMA_CYCLES] * 7,
		     "makespan %llu, DMA busy %llu: no overlap", (unsigned long long)res.counters[TNPU_CNT_TOTAL_CYCLES],
		     (unsigned long long)res.counters[TNPU_CNT_DMA_CYCLES]);
	tcb_free(&cb);
	tsim_fini(&s);
}

/* ---- errors ---- */

static struct tsim es;

static void err_setup(void)
{
	struct tnpu_config c = islands_cfg("1:i8,1", 2);

	cr_assert_eq(tsim_init(&es, &c, 16 << 20), 0);
}

static void err_teardown(void)
{
	tsim_fini(&es);
}

static uint32_t run_expect(struct tcb *cb, uint32_t err, size_t offset)
{
	struct tnpu_result res;
	struct tcb ok;

	tsim_run(&es, cb, 0, &res);
	cr_assert_eq(res.error, err, "got %s, expected %s", tnpu_err_name(res.error), tnpu_err_name(err));
	if (offset != (size_t)-1)
		cr_assert_eq(res.err_cmd_offset, offset);
	tcb_free(cb);
	/* The next job runs normally. */
	tcb_init(&ok);
	tcb_nop(&ok, 0);
	tsim_run(&es, &ok, 0, &res);
	ASSERT_OK(res);
	tcb_free(&ok);
	return res.error;
}

TestSuite(chain_err, .init = err_setup, .fini = err_teardown);

Test(chain_err, wait_for_rows_never_published_is_a_deadlock)
{
	struct tcb cb;
	size_t at;

	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 1, 4, 0, W);
	cb_island(&cb, 1);
	at = cb.len;
	cb_ring(&cb, false, TNPU_ENGINE_LOAD, 0, TNPU_RING_WAIT_ROWS, 1);
	run_expect(&cb, TNPU_ERR_RING_DEADLOCK, at);
}

Test(chain_err, ring_that_never_drains_is_a_deadlock)
{
	struct tcb cb;
	size_t at;

	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 1, 2, 0, 0);
	cb_ring(&cb, false, TNPU_ENGINE_STORE, 0, TNPU_RING_WAIT_SPACE, 2);
	cb_ring(&cb, true, TNPU_ENGINE_STORE, 0, TNPU_RING_PUBLISH, 2);
	at = cb.len;
	cb_ring(&cb, false, TNPU_ENGINE_STORE, 0, TNPU_RING_WAIT_SPACE, 1);
	run_expect(&cb, TNPU_ERR_RING_DEADLOCK, at);
}

Test(chain_err, consumer_reading_an_unpublished_slot_is_refused)
{
	struct tcb cb;
	size_t at;

	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 1, 4, 0, W);
	cb_ring(&cb, false, TNPU_ENGINE_STORE, 0, TNPU_RING_WAIT_SPACE, 2);
	cb_ring_dma(&cb, false, 0, 0, 0, 2 * W);
	cb_ring(&cb, true, TNPU_ENGINE_STORE, 0, TNPU_RING_PUBLISH, 1);
	cb_island(&cb, 1);
	cb_ring(&cb, false, TNPU_ENGINE_LOAD, 0, TNPU_RING_WAIT_ROWS, 1);
	cb_ring_dma(&cb, true, 0, 0, 0, W);	/* slot 0: acquired, fine */
	at = cb_ring_dma(&cb, true, W, 0, 0, W);	/* slot 1: written but not published */
	run_expect(&cb, TNPU_ERR_RING_ACCESS, at);
}

Test(chain_err, producer_writing_an_unreserved_slot_is_refused)
{
	struct tcb cb;
	size_t at;

	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 1, 4, 0, W);
	at = cb_ring_dma(&cb, false, 0, 0, 0, W);
	run_expect(&cb, TNPU_ERR_RING_ACCESS, at);
	/* ... and ring memory outside every ring is nobody's. */
	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 1, 4, 0, W);
	at = cb_ring_dma(&cb, false, 8 * W, 0, 0, W);
	run_expect(&cb, TNPU_ERR_RING_ACCESS, at);
}

/* Issue #28: a ring-memory DMA checks every slot each row covers (a row can cover all 4096 slots of
 * a ring of one-byte slots) but was charged one unit per row.  Now one per slot: 2048 rows x 4096
 * slots are 2^23 units, past the 2^22 budget of this 16-PE array (before: 2048 units, it ran). */
Test(chain_err, ring_dma_slot_checks_count_against_the_host_work_budget)
{
	struct tcb cb;
	struct tnpu_result res;
	struct tnpu_cmd_dma d = { .hdr = { TNPU_CMD_DMA_D2H, TNPU_CMD_F_ASYNC, 0, sizeof(d) }, .width = 4096,
				  .height = 2048, .depth = 1, .dma_flags = TNPU_DMA_F_RING };	/* every pitch 0 */
	size_t at;

	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 1, 4096, 0, 1);
	cb_ring(&cb, false, TNPU_ENGINE_STORE, 0, TNPU_RING_WAIT_SPACE, 4096);
	cb_ring_dma(&cb, false, 0, 0, 0, 4096);	/* one row: checked and charged */
	tsim_run(&es, &cb, 0, &res);
	ASSERT_OK(res);
	cr_assert_geq(tnpu_exec_work_units(es.ex), 4096, "a row of 4096 slots charged %llu units in all",
		      (unsigned long long)tnpu_exec_work_units(es.ex));
	cb.len = 0;
	cb_ring_init(&cb, 0, 0, 1, 4096, 0, 1);
	cb_ring(&cb, false, TNPU_ENGINE_STORE, 0, TNPU_RING_WAIT_SPACE, 4096);
	at = cb.len;
	tcb_raw(&cb, &d, sizeof(d));
	tsim_run(&es, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_WATCHDOG, "%s", tnpu_err_name(res.error));
	cr_assert_eq(res.err_info, 1);
	cr_assert_eq(res.err_cmd_offset, at);
	tcb_free(&cb);
}

Test(chain_err, bad_ring_descriptors_and_roles)
{
	struct tcb cb;

	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 1, 0, 0, W);	/* no slots */
	run_expect(&cb, TNPU_ERR_RING_DESC, 0);
	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 1, 2, TNPU_RING_MEM_BYTES - W, W);	/* past ring memory */
	run_expect(&cb, TNPU_ERR_RING_DESC, 0);
	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 2, 2, 0, W);	/* no island 2 */
	run_expect(&cb, TNPU_ERR_RING_DESC, 0);
	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 1, 4, 0, W);
	cb_ring_init(&cb, 1, 0, 1, 4, 2 * W, W);	/* overlaps ring 0 */
	run_expect(&cb, TNPU_ERR_RING_DESC, 32);
	tcb_init(&cb);
	cb_ring(&cb, true, TNPU_ENGINE_STORE, 3, TNPU_RING_PUBLISH, 1);	/* ring never defined */
	run_expect(&cb, TNPU_ERR_RING_DESC, 0);
	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 1, 4, 0, W);
	cb_ring(&cb, false, TNPU_ENGINE_LOAD, 0, TNPU_RING_WAIT_ROWS, 1);	/* island 0 is not the consumer */
	run_expect(&cb, TNPU_ERR_RING_DESC, 32);
	tcb_init(&cb);
	cb_ring_init(&cb, 0, 0, 1, 4, 0, W);
	cb_ring(&cb, true, TNPU_ENGINE_STORE, 0, TNPU_RING_PUBLISH, 1);	/* nothing reserved */
	run_expect(&cb, TNPU_ERR_RING_ACCESS, 32);
}

Test(chain_err, island_touching_another_islands_rows_is_refused)
{
	struct tcb cb;
	uint64_t buf = tsim_buf(&es, 4096);
	uint8_t pkt = TNPU_PKT_EXE_BYTE(0, 0);
	size_t at;

	/* Island 0 has one row: its row 1 would be island 1's storage unit. */
	tcb_init(&cb);
	tcb_dma(&cb, true, 0, buf, 0, 0, 1, 0, 0, 0, 0, 64, 1, 1);
	run_expect(&cb, TNPU_ERR_ISLAND_ACCESS, 0);
	tcb_init(&cb);
	cb_island(&cb, 1);
	at = cb.len;
	tcb_dispatch(&cb, 0, 1, 0, 0, &pkt, 1);
	run_expect(&cb, TNPU_ERR_ISLAND_ACCESS, at);
	tcb_init(&cb);
	cb_island(&cb, 2);
	run_expect(&cb, TNPU_ERR_ISLAND_ACCESS, 0);
}

/* ---- islands running GEMMs ---- */

static void gemm_prog(struct tsim *s, const struct tnpu_config *icfg, bool f32, struct tgemm *g, struct tcb *cb,
		      uint64_t seed)
{
	uint32_t e = f32 ? 4 : 1;

	*g = (struct tgemm){ .m = 16, .n = 16, .k = 32, .f32 = f32, .tm = 4, .tn = 4, .kt = 16, .pipelined = true };
	g->a = tsim_buf(s, (uint64_t)g->m * g->k * e);
	g->b = tsim_buf(s, (uint64_t)g->k * g->n * e);
	g->c = tsim_buf(s, (uint64_t)g->m * g->n * 4);
	if (f32) {
		float *a = tsim_ptr(s, g->a), *b = tsim_ptr(s, g->b);

		for (uint32_t i = 0; i < g->m * g->k; i++)
			a[i] = (float)(int)(trng(&seed) % 7) - 3;
		for (uint32_t i = 0; i < g->k * g->n; i++)
			b[i] = (float)(int)(trng(&seed) % 7) - 3;
	} else {
		int8_t *a = tsim_ptr(s, g->a), *b = tsim_ptr(s, g->b);

		for (uint32_t i = 0; i < g->m * g->k; i++)
			a[i] = (int8_t)trng(&seed);
		for (uint32_t i = 0; i < g->k * g->n; i++)
			b[i] = (int8_t)trng(&seed);
	}
	cr_assert_eq(tgemm_build(g, icfg, cb), 0);
}

static void check_i8(struct tsim *s, const struct tgemm *g)
{
	int32_t *ref = malloc((size_t)g->m * g->n * 4);

	ref_gemm_i8(g->m, g->n, g->k, tsim_ptr(s, g->a), tsim_ptr(s, g->b), ref);
	cr_assert_eq(memcmp(ref, tsim_ptr(s, g->c), (size_t)g->m * g->n * 4), 0, "island GEMM differs");
	free(ref);
}

Test(chain, int8_only_island_refuses_fp32_macs_and_runs_int8)
{
	struct tnpu_config c = islands_cfg("1:i8,1", 2), one = c;
	struct tnpu_result res;
	struct tgemm g;
	struct tsim s;
	struct tcb cb;

	one.rows = 1;
	one.n_islands = 0;
	cr_assert_eq(tsim_init(&s, &c, 16 << 20), 0);
	tcb_init(&cb);
	gemm_prog(&s, &one, true, &g, &cb, 3);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_ISLAND_CAP, "%s", tnpu_err_name(res.error));
	tcb_free(&cb);
	/* The same fp32 program on island 1 (every dtype) works. */
	tcb_init(&cb);
	cb_island(&cb, 1);
	gemm_prog(&s, &one, true, &g, &cb, 3);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	tcb_free(&cb);
	tcb_init(&cb);
	gemm_prog(&s, &one, false, &g, &cb, 4);
	tsim_run(&s, &cb, 0, &res);
	ASSERT_OK(res);
	check_i8(&s, &g);
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(chain, independent_islands_run_at_the_same_time_and_clock_divisor_slows_rows)
{
	struct tnpu_config c = islands_cfg("1,1", 2), slow = islands_cfg("1,1:all:2", 2), one = c;
	struct tnpu_result r1, r2, r3;
	struct tgemm g0, g1;
	struct tsim s;
	struct tcb cb;

	one.rows = 1;
	one.n_islands = 0;
	cr_assert_eq(tsim_init(&s, &c, 16 << 20), 0);
	tcb_init(&cb);
	gemm_prog(&s, &one, false, &g0, &cb, 11);
	tsim_run(&s, &cb, 0, &r1);
	ASSERT_OK(r1);
	check_i8(&s, &g0);
	tcb_free(&cb);

	tcb_init(&cb);
	gemm_prog(&s, &one, false, &g0, &cb, 12);
	cb_island(&cb, 1);
	gemm_prog(&s, &one, false, &g1, &cb, 13);
	tsim_run(&s, &cb, 0, &r2);
	ASSERT_OK(r2);
	check_i8(&s, &g0);
	check_i8(&s, &g1);
	/* Two islands, two GEMMs: the makespan is one GEMM's plus the island switch, not two. */
	cr_assert_lt(r2.counters[TNPU_CNT_TOTAL_CYCLES], r1.counters[TNPU_CNT_TOTAL_CYCLES] + 2 * TNPU_CYC_CMD + 8,
		     "%llu vs %llu", (unsigned long long)r2.counters[TNPU_CNT_TOTAL_CYCLES],
		     (unsigned long long)r1.counters[TNPU_CNT_TOTAL_CYCLES]);
	cr_assert_eq(r2.counters[TNPU_CNT_MACS_DENSE], 2 * r1.counters[TNPU_CNT_MACS_DENSE]);
	tcb_free(&cb);
	tsim_fini(&s);

	/* Island 1 at half clock: the same GEMM there takes longer than on island 0. */
	cr_assert_eq(tsim_init(&s, &slow, 16 << 20), 0);
	tcb_init(&cb);
	cb_island(&cb, 1);
	gemm_prog(&s, &one, false, &g1, &cb, 11);
	tsim_run(&s, &cb, 0, &r3);
	ASSERT_OK(r3);
	check_i8(&s, &g1);
	cr_assert_gt(r3.counters[TNPU_CNT_COMPUTE_CYCLES], r1.counters[TNPU_CNT_COMPUTE_CYCLES] * 19 / 10);
	tcb_free(&cb);
	tsim_fini(&s);
}
