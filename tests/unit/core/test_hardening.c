/* SPDX-License-Identifier: MIT */
/* Hostile single commands (issue 17, "Device"): the host time and memory one command can take are
 * bounded, an abort stops any command promptly, a failing job leaves no data for the next one,
 * and fields and properties that could wrap or overflow are refused. */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <time.h>

#include "common.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A DMA_H2D/D2H command with every field under the test's control (tcb_dma fixes the flags). */
static void raw_dma(struct tcb *cb, bool h2d, uint64_t va, uint64_t hpy, uint64_t hpz, uint8_t row, uint32_t off,
		    uint32_t spy, uint32_t spz, uint32_t width, uint32_t height, uint32_t depth, uint8_t dflags,
		    uint8_t fill)
{
	struct tnpu_cmd_dma c;

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = h2d ? TNPU_CMD_DMA_H2D : TNPU_CMD_DMA_D2H;
	c.hdr.size = sizeof(c);
	c.host_va = va;
	c.host_pitch_y = hpy;
	c.host_pitch_z = hpz;
	c.sram_off = off;
	c.sram_pitch_y = spy;
	c.sram_pitch_z = spz;
	c.width = width;
	c.height = height;
	c.depth = depth;
	c.row = row;
	c.dma_flags = dflags;
	c.fill = fill;
	tcb_raw(cb, &c, sizeof(c));
}

static void raw_bands(struct tcb *cb, bool h2d, uint64_t va, uint32_t width, uint32_t height, uint8_t axis)
{
	struct tnpu_cmd_dma_bands c;

	memset(&c, 0, sizeof(c));
	c.hdr.opcode = h2d ? TNPU_CMD_DMA_BANDS_H2D : TNPU_CMD_DMA_BANDS_D2H;
	c.hdr.size = sizeof(c);
	c.host_va = va;
	c.width = width;
	c.height = height;
	c.depth = 1;
	c.band_len = 1;
	c.axis = axis;
	tcb_raw(cb, &c, sizeof(c));
}

/* ---- abort latency ------------------------------------------------------------------------- */

struct runner {
	struct tsim *s;
	const struct tcb *cb;
	struct tnpu_result res;
	double done;
};

static void *run_thread(void *arg)
{
	struct runner *r = arg;

	tsim_run(r->s, r->cb, 0, &r->res);
	r->done = now_s();
	return NULL;
}

/* Runs cb on another thread, aborts it after 50 ms and returns the abort latency in seconds; then
 * checks that the executor runs the next job normally. */
static double abort_latency(struct tsim *s, const struct tcb *cb, uint64_t host)
{
	struct runner r = { .s = s, .cb = cb };
	pthread_t th;
	struct tcb next;
	struct tnpu_result res;
	double t0;

	cr_assert_eq(pthread_create(&th, NULL, run_thread, &r), 0);
	usleep(50 * 1000);
	t0 = now_s();
	tnpu_exec_abort(s->ex);
	pthread_join(th, NULL);
	cr_assert_eq(r.res.error, TNPU_ERR_ABORTED, "%s", tnpu_err_name(r.res.error));
	tnpu_exec_clear_abort(s->ex);
	tcb_init(&next);
	memset(tsim_ptr(s, host), 0x5A, 64);
	tcb_dma(&next, true, 0, host, 0, 0, 0, 0, 0, 0, 0, 64, 1, 1);
	tcb_dma(&next, false, 0, host + 64, 0, 0, 0, 0, 0, 0, 0, 64, 1, 1);
	cr_assert_eq(tsim_run(s, &next, 0, &res), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(memcmp((uint8_t *)tsim_ptr(s, host) + 64, tsim_ptr(s, host), 64), 0);
	tcb_free(&next);
	return r.done - t0;
}

/* The old default watchdog (2^40 cycles) lets these commands pass the pre-checks: they would run
 * for hours of host time.  An abort must stop each of them within one row. */
static struct tsim s;
static struct tcb cb;
static uint64_t host;

static void big_setup(void)
{
	struct tnpu_config cfg = small_cfg();

	cfg.watchdog_cycles = 1ull << 40;
	cfg.host_work = 1ull << 62;	/* no host-work budget: only the abort stops these */
	cr_assert_eq(tsim_init(&s, &cfg, 16 << 20), 0);
	host = tsim_buf(&s, 65536);
	tcb_init(&cb);
}

static void big_teardown(void)
{
	tcb_free(&cb);
	tsim_fini(&s);
}

TestSuite(abort_latency, .init = big_setup, .fini = big_teardown, .timeout = 60);

Test(abort_latency, zero_pitch_dma_h2d_of_2_32_rows)
{
	double lat;

	/* the reported command: width 1, height 0xFFFFFFFF, depth 1, every pitch 0 */
	raw_dma(&cb, true, host, 0, 0, 0, 0, 0, 0, 1, 0xFFFFFFFFu, 1, 0, 0);
	lat = abort_latency(&s, &cb, host);
	cr_log_info("DMA_H2D abort latency %.3f ms", lat * 1e3);
	cr_assert_lt(lat, 1.0, "abort took %.3f s", lat);
}

Test(abort_latency, zero_pitch_dma_d2h_fill_and_all_rows)
{
	double lat;

	raw_dma(&cb, false, host, 0, 0, 0, 0, 0, 0, 1, 0xFFFFFFFFu, 1, 0, 0);
	lat = abort_latency(&s, &cb, host);
	cr_assert_lt(lat, 1.0, "D2H abort took %.3f s", lat);
	cb.len = 0;
	raw_dma(&cb, true, 0, 0, 0, 0, 0, 0, 0, 1, 0xFFFFFFFFu, 1, TNPU_DMA_F_FILL, 7);
	lat = abort_latency(&s, &cb, host);
	cr_assert_lt(lat, 1.0, "FILL abort took %.3f s", lat);
	cb.len = 0;
	raw_dma(&cb, true, host, 0, 0, TNPU_DMA_ROW_ALL, 0, 0, 0, 1, 0xFFFFFFFFu, 1, 0, 0);
	lat = abort_latency(&s, &cb, host);
	cr_assert_lt(lat, 1.0, "row-ALL abort took %.3f s", lat);
}

Test(abort_latency, zero_pitch_dma_bands)
{
	double lat;

	raw_bands(&cb, true, host, 1, 0xFFFFFFFFu, TNPU_BANDS_AXIS_Z);
	lat = abort_latency(&s, &cb, host);
	cr_assert_lt(lat, 1.0, "DMA_BANDS_H2D abort took %.3f s", lat);
	cb.len = 0;
	raw_bands(&cb, false, host, 1, 0xFFFFFFFFu, TNPU_BANDS_AXIS_Z);
	lat = abort_latency(&s, &cb, host);
	cr_assert_lt(lat, 1.0, "DMA_BANDS_D2H abort took %.3f s", lat);
}

/* ---- default watchdog ---------------------------------------------------------------------- */

Test(hardening, default_watchdog_refuses_the_reported_dma_at_once)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim t;
	struct tcb c;
	struct tnpu_result r;
	double t0;

	cr_assert_eq(cfg.watchdog_cycles, TNPU_DEF_WATCHDOG);
	/* seconds of modelled time at the default clock, not hours */
	cr_assert_leq((double)TNPU_DEF_WATCHDOG / (cfg.clock_mhz * 1e6), 10.0);
	cr_assert_eq(tsim_init(&t, &cfg, 16 << 20), 0);
	tcb_init(&c);
	raw_dma(&c, true, tsim_buf(&t, 4096), 0, 0, 0, 0, 0, 0, 1, 0xFFFFFFFFu, 1, 0, 0);
	t0 = now_s();
	tsim_run(&t, &c, 0, &r);
	cr_assert_eq(r.error, TNPU_ERR_WATCHDOG, "%s", tnpu_err_name(r.error));
	cr_assert_lt(now_s() - t0, 1.0);
	tcb_free(&c);
	tsim_fini(&t);
}

/* ---- host-work budget ---------------------------------------------------------------------- */

/* Cheap in modelled time, dear in host time: 2^26 one-byte rows with every pitch 0 take 2^26
 * cycles (1/64 of the default watchdog) but 2^26 row steps, seconds of host time (minutes under
 * sanitizers): past the array's host-work budget, so refused before a row moves (WATCHDOG with
 * ERR_INFO 1). Without the budget the job ran to the end. */
Test(hardening, host_work_budget_refuses_a_narrow_zero_pitch_dma_at_once)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim t;
	struct tcb c;
	struct tnpu_result r;
	uint64_t va;
	double t0;

	cr_assert_eq(cfg.watchdog_cycles, TNPU_DEF_WATCHDOG);
	cr_assert_eq(cfg.host_work, 0);
	cr_assert_eq(tsim_init(&t, &cfg, 16 << 20), 0);
	va = tsim_buf(&t, 4096);
	for (int h2d = 0; h2d < 2; h2d++) {
		tcb_init(&c);
		raw_dma(&c, h2d, va, 0, 0, 0, 0, 0, 0, 1, 1u << 26, 1, 0, 0);
		t0 = now_s();
		tsim_run(&t, &c, 0, &r);
		cr_assert_eq(r.error, TNPU_ERR_WATCHDOG, "%s", tnpu_err_name(r.error));
		cr_assert_eq(r.err_info, 1);
		cr_assert_lt(now_s() - t0, 0.5);
		cr_assert_eq(r.counters[TNPU_CNT_BYTES_H2D] + r.counters[TNPU_CNT_BYTES_D2H], 0);
		tcb_free(&c);
	}
	tsim_fini(&t);
}

/* The budget is per job: commands each under it add up, and the job stops in the command that
 * crosses it; the same job runs to the end with a budget that covers it. */
Test(hardening, host_work_budget_counts_the_whole_job)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim t;
	struct tcb c;
	struct tnpu_result r;
	uint64_t va;

	cfg.host_work = 1u << 16;
	cr_assert_eq(tsim_init(&t, &cfg, 16 << 20), 0);
	va = tsim_buf(&t, 4096);
	tcb_init(&c);
	/* 2^14 rows: 2^14 row steps + 2^14 guest-page steps each, so the second one crosses 2^16 */
	for (int i = 0; i < 8; i++)
		raw_dma(&c, true, va, 0, 0, 0, 0, 0, 0, 1, 1u << 14, 1, 0, 0);
	tsim_run(&t, &c, 0, &r);
	cr_assert_eq(r.error, TNPU_ERR_WATCHDOG, "%s", tnpu_err_name(r.error));
	cr_assert_eq(r.err_info, 1);
	cr_assert_eq(r.err_cmd_offset, sizeof(struct tnpu_cmd_dma));
	tsim_fini(&t);
	cfg.host_work = 1u << 20;
	cr_assert_eq(tsim_init(&t, &cfg, 16 << 20), 0);
	va = tsim_buf(&t, 4096);
	tcb_free(&c);
	tcb_init(&c);
	for (int i = 0; i < 8; i++)
		raw_dma(&c, true, va, 0, 0, 0, 0, 0, 0, 1, 1u << 14, 1, 0, 0);
	cr_assert_eq(tsim_run(&t, &c, 0, &r), 0, "%s", tnpu_err_name(r.error));
	tcb_free(&c);
	tsim_fini(&t);
}

/* Runs cb on a fresh small-geometry executor with `budget` host-work units (0: the default);
 * returns the units the job was charged. */
static uint64_t work_of(const struct tcb *c, uint64_t budget, struct tnpu_result *r)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim t;
	uint64_t w;

	cfg.host_work = budget;
	cr_assert_eq(tsim_init(&t, &cfg, 16 << 20), 0);
	tsim_run(&t, c, 0, r);
	w = tnpu_exec_work_units(t.ex);
	tsim_fini(&t);
	return w;
}

/* Issue #28: after a MAC with ZSKIP the non-zero counts read every PE's tm x K input tile (2^26
 * elements at pitch 0), uncharged and without an abort check: an abort waited 8.4 s on the default
 * array.  Now each PE's count is charged (one unit per TNPU_WORK_NNZ = 64 elements) and the loop
 * stops at the budget or an abort (the same check). */
static size_t zskip_mac_job(struct tcb *c, bool zskip)
{
	const unsigned tm = 1024, K = 2048;
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, zskip), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0) };
	struct tnpu_operand ops[] = {
		t_opnd(0, 0, 0, 0, tm, K, TNPU_DTYPE_INT8, 0),	/* every row and PE the same */
		t_opnd(8192, 0, 0, 1, K, 1, TNPU_DTYPE_INT8, 0),	/* one shared K x 1 column */
	};
	struct tpkt p;
	size_t exe_at;

	tcb_init(c);
	tcb_dma_fill(c, 0, 0, 0, 0, 16384, 1);
	tpkt_config(&p, 0, &(struct tnpu_cfg_hdr){ .n_instr = 3, .n_operands = 2, .loop_end = 2, .repeat = 1 },
		    ins, ops);
	tcb_dispatch(c, 0, 0, 0, 0, p.buf, p.len);
	tpkt_exe(&p, 0, 0, NULL, 0);
	exe_at = c->len;
	tcb_dispatch(c, 0, 0, 0, 0, p.buf, p.len);
	return exe_at;
}

Test(hardening, zskip_counts_are_charged_and_stop_at_the_budget, .timeout = 60)
{
	const uint64_t pes = 2 * 4, per_pe = 1024ull * 2048 / 64;	/* row 0: 2 clusters x 4 PEs */
	struct tcb plain, zs;
	struct tnpu_result r;
	uint64_t w_plain, w_zs, exe_at;

	zskip_mac_job(&plain, false);
	exe_at = zskip_mac_job(&zs, true);
	w_plain = work_of(&plain, 0, &r);
	ASSERT_OK(r);
	w_zs = work_of(&zs, 0, &r);
	ASSERT_OK(r);
	cr_log_info("host work: %llu units without ZSKIP, %llu with", (unsigned long long)w_plain,
		    (unsigned long long)w_zs);
	cr_assert_geq(w_zs, w_plain + pes * per_pe, "the ZSKIP counts were not charged: %llu vs %llu units",
		      (unsigned long long)w_zs, (unsigned long long)w_plain);
	/* a budget the MAC fits but its counts do not: stopped in the counting loop, at the EXE */
	work_of(&zs, w_plain + per_pe / 2, &r);
	cr_assert_eq(r.error, TNPU_ERR_WATCHDOG, "%s", tnpu_err_name(r.error));
	cr_assert_eq(r.err_info, 1);
	cr_assert_eq(r.err_cmd_offset, exe_at);
	tcb_free(&plain);
	tcb_free(&zs);
}

/* Issue #28: an MCAST LD scans the written-line bitmap of every block row, but was charged as one
 * instruction: a block of 30000 one-byte rows (pitch 1) is 30000 row scans.  Now one unit per
 * block row (and per 4 KiB of it). */
static size_t one_ld_job(struct tcb *c, uint16_t ld)
{
	struct tnpu_operand ops[] = { t_opnd(0, 0, 0, 1, 30000, 1, TNPU_DTYPE_INT8, 0) };
	struct tpkt p;
	size_t exe_at;

	tcb_init(c);
	tcb_dma_fill(c, 0, 0, 0, 0, 30000, 1);
	tpkt_config(&p, 0, &(struct tnpu_cfg_hdr){ .n_instr = 1, .n_operands = 1, .repeat = 1 }, &ld, ops);
	tcb_dispatch(c, 0, 0, 0, 0, p.buf, p.len);
	tpkt_exe(&p, 0, 0, NULL, 0);
	exe_at = c->len;
	tcb_dispatch(c, 0, 0, 0, 0, p.buf, p.len);
	return exe_at;
}

Test(hardening, mcast_block_scan_is_charged_per_block_row)
{
	struct tcb plain, mc;
	struct tnpu_result r;
	uint64_t w_plain, w_mc;
	size_t exe_at;

	one_ld_job(&plain, TNPU_INSN_LD(0, 0, 0, 0));
	exe_at = one_ld_job(&mc, TNPU_INSN_LD(0, 0, 0, 0) | TNPU_LD_MCAST);
	w_plain = work_of(&plain, 0, &r);
	ASSERT_OK(r);
	w_mc = work_of(&mc, 0, &r);
	ASSERT_OK(r);
	cr_assert_geq(w_mc, w_plain + 30000, "block scan of 30000 rows charged %llu units",
		      (unsigned long long)(w_mc - w_plain));
	work_of(&mc, w_plain + 1000, &r);
	cr_assert_eq(r.error, TNPU_ERR_WATCHDOG, "%s", tnpu_err_name(r.error));
	cr_assert_eq(r.err_info, 1);
	cr_assert_eq(r.err_cmd_offset, exe_at);
	tcb_free(&plain);
	tcb_free(&mc);
}

/* Issue #28: VEC POOL and REDUCE were charged per output element, not per element-tap: one output
 * of a 128 x 128 window is 2^14 taps.  A command of 2^12 outputs x 2^14 taps (2^26, the shape limit)
 * is 2^24 units, past the small array's 2^22 budget: refused (it ran to the end charged 2^10). */
static void pool_cmd(struct tcb *c, uint16_t win, uint32_t outs)
{
	struct tnpu_cmd_vec v;

	memset(&v, 0, sizeof(v));
	v.hdr.opcode = TNPU_CMD_VEC;
	v.hdr.size = sizeof(v);
	v.op = TNPU_VEC_POOL;
	v.func = TNPU_VEC_POOL_MAX;
	v.in_dtype = v.out_dtype = TNPU_DTYPE_INT8;
	v.n[0] = v.n[1] = v.n[2] = 1;
	v.n[3] = outs;	/* channels of one window position, every tap on the same pixel (strides 0) */
	v.a_st[3] = 1;
	v.d_off = 16384;
	v.d_st[3] = 1;
	v.win.pool = (struct tnpu_vec_pool_win){ .win_h = win, .win_w = win, .stride_y = 1, .stride_x = 1,
						 .in_h = win, .in_w = win };
	tcb_raw(c, &v, sizeof(v));
}

Test(hardening, vec_pool_is_charged_per_window_tap)
{
	struct tcb c;
	struct tnpu_result r;
	uint64_t w1, w64;

	tcb_init(&c);
	pool_cmd(&c, 1, 64);
	w1 = work_of(&c, 0, &r);
	ASSERT_OK(r);
	c.len = 0;
	pool_cmd(&c, 8, 64);	/* 64 taps per output */
	w64 = work_of(&c, 0, &r);
	ASSERT_OK(r);
	/* 63 more taps per output, 4 element-taps a unit */
	cr_assert_geq(w64, w1 + 63 * 64 / 4, "64 x 63 more element-taps charged %llu units",
		      (unsigned long long)(w64 - w1));
	c.len = 0;
	pool_cmd(&c, 128, 4096);
	work_of(&c, 0, &r);
	cr_assert_eq(r.error, TNPU_ERR_WATCHDOG, "%s", tnpu_err_name(r.error));
	cr_assert_eq(r.err_info, 1);
	tcb_free(&c);
}

/* A duration close to 2^64 plus the engine's free time wrapped past the watchdog check. */
Test(hardening, dma_watchdog_sum_does_not_wrap, .timeout = 60)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim t;
	struct tcb c;
	struct tnpu_result r;
	uint64_t va;

	cfg.sram = 16u << 20;	/* half = 8 MiB: rows of 2^23 bytes, 2^16 cycles each */
	cr_assert_eq(tsim_init(&t, &cfg, 64 << 20), 0);
	va = tsim_buf(&t, 1u << 20);
	tcb_init(&c);
	/* load engine busy for 512 x 16 KiB / 128 = 65536 cycles */
	raw_dma(&c, true, va, 0, 0, 0, 0, 0, 0, 16384, 512, 1, 0, 0);
	/* (2^24 - 1)(2^24 + 1) rows x 2^16 cycles = 2^64 - 2^16: with the 65536 above, past 2^64 */
	raw_dma(&c, true, 0, 0, 0, 0, 0, 0, 0, 1u << 23, (1u << 24) - 1, (1u << 24) + 1, TNPU_DMA_F_FILL, 1);
	tsim_run(&t, &c, 0, &r);
	cr_assert_eq(r.error, TNPU_ERR_WATCHDOG, "%s", tnpu_err_name(r.error));
	cr_assert_eq(r.err_cmd_offset, sizeof(struct tnpu_cmd_dma));
	tcb_free(&c);
	tsim_fini(&t);
}

/* ---- stale data across jobs ------------------------------------------------------------------ */

/* A DMA_H2D whose second page faults has already copied its first page into SRAM: the next job
 * (another context) must not be able to store it out. */
Test(hardening, failed_h2d_leaves_nothing_for_the_next_context)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim t;
	struct tcb c;
	struct tnpu_result r;
	const uint64_t src_va = 0x40000000ull, dst_va = 0x50000000ull;
	uint64_t src_pa, dst_pa;
	uint8_t *out;

	cr_assert_eq(tsim_init(&t, &cfg, 16 << 20), 0);
	src_pa = tsim_alloc_pa(&t, 4096);
	memset(t.mem + src_pa, 0xAB, 4096);
	tsim_map(&t, 0, src_va, src_pa, 4096, TNPU_PTE_READ | TNPU_PTE_WRITE);	/* next page unmapped */
	dst_pa = tsim_alloc_pa(&t, 8192);
	memset(t.mem + dst_pa, 0xEE, 8192);
	tsim_map(&t, 1, dst_va, dst_pa, 8192, TNPU_PTE_READ | TNPU_PTE_WRITE);
	tcb_init(&c);
	tcb_dma(&c, true, 0, src_va, 0, 0, 0, 0, 0, 0, 0, 8192, 1, 1);
	tsim_run(&t, &c, 0, &r);
	cr_assert_eq(r.error, TNPU_ERR_MMU_NOT_PRESENT, "%s", tnpu_err_name(r.error));
	c.len = 0;
	tcb_dma(&c, false, 0, dst_va, 0, 0, 0, 0, 0, 0, 0, 8192, 1, 1);
	{
		/* context 1's command buffer (tsim_run maps into context 0 only) */
		const uint64_t cmd_va = 0x60000000ull;
		uint64_t cmd_pa = tsim_alloc_pa(&t, 4096);

		memcpy(t.mem + cmd_pa, c.buf, c.len);
		tsim_map(&t, 1, cmd_va, cmd_pa, 4096, TNPU_PTE_READ);
		tnpu_exec_run_cmdbuf(t.ex, &t.ops, t.ctx_table, 2, 1, cmd_va, (uint32_t)c.len, &r);
	}
	cr_assert_eq(r.error, 0, "%s", tnpu_err_name(r.error));
	out = t.mem + dst_pa;
	for (unsigned i = 0; i < 8192; i++)
		cr_assert_eq(out[i], 0, "byte %u of the previous job's SRAM: 0x%02x", i, out[i]);
	tcb_free(&c);
	tsim_fini(&t);
}

/* ---- bf16 MAC scratch ----------------------------------------------------------------------- */

static uint16_t bf16_of(uint32_t r)
{
	/* a random bf16 in [-2, 2): sign, exponent 126..127 region, 7 mantissa bits */
	return (uint16_t)(((r & 1) << 15) | ((126u + ((r >> 1) & 1)) << 7) | ((r >> 2) & 0x7F));
}

static float bf16_f(uint16_t v)
{
	uint32_t u = (uint32_t)v << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* K = 65535 with pitch-0 operands: one MAC asked the old model for (m + n) x K x 4 bytes of
 * widening scratch (42 MiB here, gigabytes at full geometry).  K panels keep it under the cap, and
 * every element is still the rounding contract's single fmaf chain over k (qemu-device.md
 * "Rounding contract"), compared bit for bit with a C fmaf chain. */
Test(hardening, bf16_mac_k65535_pitch0_scratch_is_capped, .timeout = 120)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim t;
	struct tcb c;
	struct tnpu_result r;
	const unsigned K = 65535, tm = 32, tn = 32, pes = 4, N = pes * tn;
	const uint32_t a_off = 0, b_off = 131072, o_off = 135168;
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 1), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0),
			   TNPU_INSN_ST(0, 2, 1) };
	struct tnpu_operand ops[] = {
		t_opnd(a_off, 0, 0, 0, tm, K, TNPU_DTYPE_BF16, 0),		/* every row the same */
		t_opnd(b_off, 0, (int32_t)(tn * 2), 0, K, tn, TNPU_DTYPE_BF16, 0),	/* every k the same */
		t_opnd(o_off, 0, (int32_t)(tn * 4), N * 4, tm, tn, TNPU_DTYPE_FP32, 0),
	};
	struct tpkt p;
	uint64_t va, seed = 0x17;
	uint16_t *a, *b;
	float *out;

	cfg.rows = 1;
	cfg.cols = 1;
	cfg.pes = pes;
	cfg.sram = 512u << 10;
	cr_assert_eq(tsim_init(&t, &cfg, 64 << 20), 0);
	va = tsim_buf(&t, o_off + tm * N * 4);
	a = (uint16_t *)tsim_ptr(&t, va + a_off);
	b = (uint16_t *)tsim_ptr(&t, va + b_off);
	for (unsigned k = 0; k < K; k++)
		a[k] = bf16_of((uint32_t)trng(&seed));
	for (unsigned j = 0; j < N; j++)
		b[j] = bf16_of((uint32_t)trng(&seed));
	tcb_init(&c);
	tcb_dma(&c, true, 0, va, 0, 0, 0, 0, 0, 0, 0, b_off + N * 2, 1, 1);
	tpkt_config(&p, 0, &(struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_end = 2, .repeat = 1 },
		    ins, ops);
	tcb_dispatch(&c, 0, 0, 0, 0, p.buf, p.len);
	tpkt_exe(&p, 0, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, NULL, 0);
	tcb_dispatch(&c, 0, 0, 0, 0, p.buf, p.len);
	tcb_dma(&c, false, 0, va + o_off, 0, 0, 0, 0, o_off, 0, 0, tm * N * 4, 1, 1);
	tsim_run(&t, &c, 0, &r);
	cr_assert_eq(r.error, 0, "%s", tnpu_err_name(r.error));
	cr_log_info("executor scratch after the MAC: %zu bytes", tnpu_exec_scratch_bytes(t.ex));
	cr_assert_leq(tnpu_exec_scratch_bytes(t.ex), (size_t)8 << 20, "scratch %zu bytes",
		      tnpu_exec_scratch_bytes(t.ex));
	out = (float *)tsim_ptr(&t, va + o_off);
	for (unsigned j = 0; j < N; j++) {
		float want = 0.0f;

		for (unsigned k = 0; k < K; k++)
			want = fmaf(bf16_f(a[k]), bf16_f(b[j]), want);
		for (unsigned i = 0; i < tm; i++)
			cr_assert(!memcmp(&out[i * N + j], &want, 4), "C[%u][%u] = %a, the fmaf chain gives %a", i, j,
				  out[i * N + j], want);
	}
	tcb_free(&c);
	tsim_fini(&t);
}

/* ---- IM2COL box next to the footprint limit --------------------------------------------------- */

/* Issue #28: an IM2COL box just under the 16 MiB footprint limit plus its K decode tables (28 bytes
 * per K index, up to 65536 at a time: 1.75 MiB) asked the scratch for more than its cap (16 + 1 MiB)
 * and failed with NOMEM, a host-memory error for a command the spec allows.  Two output pixels 255
 * rows apart over 65535 channels: a box of 256 x 65535 bytes (16 MiB - 256), K = 65535. */
Test(hardening, im2col_box_at_the_footprint_limit_with_a_large_k_runs, .timeout = 60)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim t;
	struct tcb c;
	struct tnpu_result r;
	const uint32_t C = 65535, H = 256;
	struct tnpu_cmd_im2col ic = {
		.stride_c = 1, .stride_w = C, .stride_h = C, .stride_n = (uint64_t)H * C, .n = 1, .h = H, .w = 1,
		.c = C, .r = 1, .s = 1, .oh = 2, .ow = 1, .stride_y = 255, .stride_x = 1, .dil_y = 1, .dil_x = 1,
		.layout = TNPU_LAYOUT_NHWC, .dtype = TNPU_DTYPE_INT8, .m0 = 0, .mt = 2, .k0 = 0, .kt = C,
		.sram_off = 0, .sram_pitch = C, .row = 0, .half = 0,
	};
	uint64_t in, out;
	uint8_t *src, *dst;

	cfg.sram = 512u << 10;	/* the 2 x 65535 tile fits a half */
	cr_assert_eq(tsim_init(&t, &cfg, 64 << 20), 0);
	in = tsim_buf(&t, (uint64_t)H * C);
	out = tsim_buf(&t, 2 * C);
	src = tsim_ptr(&t, in);
	for (uint64_t i = 0; i < (uint64_t)H * C; i++)
		src[i] = (uint8_t)(i * 2654435761u >> 24);
	ic.src_va = in;
	tcb_init(&c);
	tcb_im2col(&c, 0, &ic);
	tcb_dma(&c, false, 0, out, 0, 0, 0, 0, 0, 0, 0, 2 * C, 1, 1);
	tsim_run(&t, &c, 0, &r);
	ASSERT_OK(r);
	dst = tsim_ptr(&t, out);
	cr_assert(!memcmp(dst, src, C), "row 0: pixel (0, 0)");
	cr_assert(!memcmp(dst + C, src + (uint64_t)255 * C, C), "row 1: pixel (255, 0)");
	cr_assert_leq(tnpu_exec_scratch_bytes(t.ex), (size_t)8 << 20, "the box scratch is not kept");
	tcb_free(&c);
	tsim_fini(&t);
}

/* ---- configuration totals ------------------------------------------------------------------- */

Test(hardening, config_refuses_more_on_chip_memory_than_the_host_cap)
{
	struct tnpu_config cfg;
	char msg[160] = "";

	tnpu_config_default(&cfg);
	cfg.rows = 16;
	cfg.sram = 64u << 20;
	cfg.queues = 16;	/* 16 executors x 16 x 64 MiB = 16 GiB */
	cr_assert_eq(tnpu_config_validate(&cfg, msg, sizeof(msg)), -EINVAL);
	cr_assert(strstr(msg, "exceeds 4 GiB"), "%s", msg);
	cfg.queues = 3;
	cr_assert_eq(tnpu_config_validate(&cfg, msg, sizeof(msg)), 0, "%s", msg);
	tnpu_config_default(&cfg);
	cr_assert_eq(tnpu_config_validate(&cfg, msg, sizeof(msg)), 0, "%s", msg);
}

/* ---- register block: the glue's STATUS bits, MMU_INVALIDATE effect ---------------------------- */

Test(hardening, status_pending_bits_and_invalidate_effect)
{
	struct tnpu_config cfg = small_cfg();
	struct tnpu_core *core;
	struct tnpu_effects fx;
	uint64_t v;

	cr_assert_eq(tnpu_core_new(&cfg, &core, NULL, 0), 0);
	tnpu_core_reg_read(core, TNPU_REG_STATUS, 4, &v);
	cr_assert_eq(v, 0);
	tnpu_core_set_pending(core, 0xFFFFFFFFu);	/* only the two glue bits exist */
	tnpu_core_reg_read(core, TNPU_REG_STATUS, 4, &v);
	cr_assert_eq(v, TNPU_STATUS_RESET_PENDING | TNPU_STATUS_MMU_INV_PENDING);
	cr_assert_eq(tnpu_core_reg_write(core, TNPU_REG_CTRL, 4, TNPU_CTRL_RESET, &fx), TNPU_REG_OK);
	cr_assert(fx.reset);
	tnpu_core_reg_read(core, TNPU_REG_STATUS, 4, &v);	/* the glue clears them, not a reset */
	cr_assert_eq(v, TNPU_STATUS_RESET_PENDING | TNPU_STATUS_MMU_INV_PENDING);
	tnpu_core_set_pending(core, 0);
	tnpu_core_reg_read(core, TNPU_REG_STATUS, 4, &v);
	cr_assert_eq(v, 0);
	cr_assert_eq(tnpu_core_reg_write(core, TNPU_REG_MMU_INVALIDATE, 4, 1, &fx), TNPU_REG_OK);
	cr_assert(fx.mmu_invalidate);
	tnpu_core_free(core);
}

/* An invalidate is pending only while a memory access may use an older translation: never on an
 * idle executor, and a job started after it uses fresh translations. */
Test(hardening, tlb_invalidate_is_not_pending_on_an_idle_executor)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim t;
	struct tcb c;
	struct tnpu_result r;
	uint64_t va;

	cr_assert_eq(tsim_init(&t, &cfg, 16 << 20), 0);
	va = tsim_buf(&t, 4096);
	cr_assert(!tnpu_exec_tlb_pending(t.ex));
	tnpu_exec_tlb_invalidate(t.ex);
	cr_assert(!tnpu_exec_tlb_pending(t.ex));
	tcb_init(&c);
	tcb_dma(&c, true, 0, va, 0, 0, 0, 0, 0, 0, 0, 64, 1, 1);
	*tsim_pte(&t, 0, va) = 0;	/* unmapped before the job: it must fault, not use a stale entry */
	tsim_run(&t, &c, 0, &r);
	cr_assert_eq(r.error, TNPU_ERR_MMU_NOT_PRESENT, "%s", tnpu_err_name(r.error));
	cr_assert(!tnpu_exec_tlb_pending(t.ex));
	tcb_free(&c);
	tsim_fini(&t);
}
