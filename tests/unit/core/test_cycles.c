/* SPDX-License-Identifier: MIT */
/* Cycle model and counters: ping-pong overlap, utilisation, determinism, watchdog, abort. */
#include "common.h"

#define TNPU_MAX(a, b) ((a) > (b) ? (a) : (b))

struct run {
	struct tnpu_result res;
	uint32_t crc;
};

static uint32_t crc(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static void gemm_run(const struct tnpu_config *cfg, struct tgemm g, struct run *out)
{
	struct tsim s;
	struct tcb cb;
	uint32_t e = g.f32 ? 4 : 1;
	uint64_t seed = 99;

	cr_assert_eq(tsim_init(&s, cfg, 96ull << 20), 0);
	g.a = tsim_buf(&s, (uint64_t)g.m * g.k * e);
	g.b = tsim_buf(&s, (uint64_t)g.k * g.n * e);
	g.c = tsim_buf(&s, (uint64_t)g.m * g.n * 4);
	for (size_t i = 0; i < (size_t)g.m * g.k * e; i++)
		((uint8_t *)tsim_ptr(&s, g.a))[i] = g.f32 ? (uint8_t)(i % 4 == 3 ? 0x3f : trng(&seed)) : (uint8_t)trng(&seed);
	for (size_t i = 0; i < (size_t)g.k * g.n * e; i++)
		((uint8_t *)tsim_ptr(&s, g.b))[i] = g.f32 ? (uint8_t)(i % 4 == 3 ? 0x3e : trng(&seed)) : (uint8_t)trng(&seed);
	tcb_init(&cb);
	cr_assert_eq(tgemm_build(&g, cfg, &cb), 0);
	tsim_run(&s, &cb, 0, &out->res);
	ASSERT_OK(out->res);
	out->crc = crc(tsim_ptr(&s, g.c), (size_t)g.m * g.n * 4);
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(cycles, ping_pong_with_semaphores_costs_max_of_load_and_compute_without_their_sum)
{
	struct tnpu_config cfg = small_cfg();
	/* one outer tile, 16 K steps */
	struct tgemm g = { .m = 2 * 2 * 8, .n = 4 * 4, .k = 16 * 32, .tm = 8, .tn = 4, .kt = 32 };
	struct run serial, piped;
	uint64_t steps = 16, l, c, total_s, total_p;

	gemm_run(&cfg, g, &serial);
	g.pipelined = true;
	gemm_run(&cfg, g, &piped);
	cr_assert_eq(serial.crc, piped.crc, "same results");
	l = serial.res.counters[TNPU_CNT_LOAD_CYCLES] / steps;
	c = serial.res.counters[TNPU_CNT_COMPUTE_CYCLES] / steps;
	total_s = serial.res.counters[TNPU_CNT_TOTAL_CYCLES];
	total_p = piped.res.counters[TNPU_CNT_TOTAL_CYCLES];
	cr_log_info("per tile: load %llu compute %llu; serial %llu pipelined %llu", (unsigned long long)l,
		    (unsigned long long)c, (unsigned long long)total_s, (unsigned long long)total_p);
	cr_assert(l > c / 3 && c > l / 3, "test needs comparable load and compute (%llu, %llu)",
		  (unsigned long long)l, (unsigned long long)c);
	cr_assert(total_s >= steps * (l + c) && total_s <= steps * (l + c) * 1.1 + 1000,
		  "serial %llu vs sum %llu", (unsigned long long)total_s, (unsigned long long)(steps * (l + c)));
	cr_assert(total_p <= steps * TNPU_MAX(l, c) * 1.1 + 1000 && total_p >= steps * TNPU_MAX(l, c),
		  "pipelined %llu vs max %llu", (unsigned long long)total_p,
		  (unsigned long long)(steps * TNPU_MAX(l, c)));
	cr_assert_gt(piped.res.counters[TNPU_CNT_STALL_CYCLES], 0);
	cr_assert_eq(piped.res.counters[TNPU_CNT_BANK_SWAPS], (steps - 1) * cfg.rows);
}


static double util_of(const struct tnpu_config *cfg, const struct run *r, unsigned rate)
{
	double ideal = (double)r->res.counters[TNPU_CNT_MACS_DENSE] / (cfg->rows * cfg->cols * cfg->pes * (double)rate);

	return ideal / (double)r->res.counters[TNPU_CNT_TOTAL_CYCLES];
}

Test(cycles, double_buffered_1024_gemm_reaches_95_percent_pe_utilisation_on_default_geometry)
{
	struct tnpu_config cfg;
	struct tgemm g = { .m = 1024, .n = 1024, .k = 1024, .tm = 32, .tn = 16, .kt = 256, .pipelined = true };
	struct run r;
	double util;

	tnpu_config_default(&cfg);
	gemm_run(&cfg, g, &r);
	util = util_of(&cfg, &r, TNPU_RATE_MAC_INT8);
	cr_log_info("int8 1024^3 pe utilisation %.4f", util);
	cr_assert_geq(util, 0.95, "int8 utilisation %.4f", util);
	cr_assert_eq(r.res.counters[TNPU_CNT_BYTES_D2H], (uint64_t)1024 * 1024 * 4);
	g.f32 = true;
	g.kt = 128;
	gemm_run(&cfg, g, &r);
	util = util_of(&cfg, &r, TNPU_RATE_MAC_FP32);
	cr_log_info("fp32 1024^3 pe utilisation %.4f", util);
	cr_assert_geq(util, 0.95, "fp32 utilisation %.4f", util);
}

Test(cycles, same_program_gives_identical_memory_and_counters)
{
	struct tnpu_config cfg = small_cfg();
	struct tgemm g = { .m = 32, .n = 32, .k = 64, .tm = 8, .tn = 4, .kt = 16, .pipelined = true, .f32 = true };
	struct run a, b;

	gemm_run(&cfg, g, &a);
	gemm_run(&cfg, g, &b);
	cr_assert_eq(a.crc, b.crc);
	cr_assert_eq(memcmp(a.res.counters, b.res.counters, sizeof(a.res.counters)), 0);
}

Test(cycles, counters_account_dispatch_config_and_instructions)
{
	struct tnpu_config cfg = small_cfg();
	struct tgemm g = { .m = 32, .n = 16, .k = 64, .tm = 8, .tn = 4, .kt = 16 };
	struct run r;
	uint64_t cfg_bytes = 1 + 16 + 4 * 2 + 3 * 32;

	gemm_run(&cfg, g, &r);
	cr_assert_eq(r.res.counters[TNPU_CNT_BYTES_CONFIG], cfg_bytes);
	/* 4 K steps x (LD, LD, MAC) + ST in the last, per row (2 rows) */
	cr_assert_eq(r.res.counters[TNPU_CNT_INSTRUCTIONS], 2 * (4 * 3 + 1));
	cr_assert_eq(r.res.counters[TNPU_CNT_MACS_DENSE], 32 * 16 * 64);
	cr_assert_eq(r.res.counters[TNPU_CNT_DMA_CYCLES],
		     r.res.counters[TNPU_CNT_LOAD_CYCLES] + r.res.counters[TNPU_CNT_STORE_CYCLES]);
	cr_assert_eq(r.res.counters[TNPU_CNT_STALL_CYCLES], 0);
	cr_assert_geq(r.res.counters[TNPU_CNT_TOTAL_CYCLES], r.res.counters[TNPU_CNT_COMPUTE_CYCLES] +
							       r.res.counters[TNPU_CNT_DMA_CYCLES]);
}

Test(cycles, watchdog_stops_long_jobs)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;

	cfg.watchdog_cycles = 100;
	cr_assert_eq(tsim_init(&s, &cfg, 8 << 20), 0);
	tcb_init(&cb);
	for (int i = 0; i < 40; i++)
		tcb_nop(&cb, 0);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_WATCHDOG);
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(cycles, abort_stops_the_job)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;

	cr_assert_eq(tsim_init(&s, &cfg, 8 << 20), 0);
	tcb_init(&cb);
	tcb_nop(&cb, 0);
	tnpu_exec_abort(s.ex);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, TNPU_ERR_ABORTED);
	tnpu_exec_clear_abort(s.ex);
	tsim_run(&s, &cb, 0, &res);
	cr_assert_eq(res.error, 0);
	tcb_free(&cb);
	tsim_fini(&s);
}

Test(cycles, async_dispatches_to_different_rows_run_in_parallel)
{
	struct tnpu_config cfg = small_cfg();
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;
	struct tpkt p;
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 0), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 0, 0) };
	struct tnpu_operand ops[] = {
		{ .pitch = 64, .rows = 16, .cols = 64, .dtype = TNPU_DTYPE_INT8 },
		{ .addr = 4096, .pitch = 16, .rows = 64, .cols = 16, .dtype = TNPU_DTYPE_INT8 },
	};
	struct tnpu_cfg_hdr h = { .n_instr = 3, .n_operands = 2, .loop_end = 2, .repeat = 8 };
	uint64_t serial, parallel;

	cr_assert_eq(tsim_init(&s, &cfg, 8 << 20), 0);
	tcb_init(&cb);
	for (int flags = 0; flags < 2; flags++) {
		uint8_t f = flags ? TNPU_CMD_F_ASYNC : 0;

		cb.len = 0;
		tpkt_config(&p, 0, &h, ins, ops);
		tcb_dispatch(&cb, 0, TNPU_DISPATCH_ROW_ALL, 0, 0, p.buf, p.len);
		tpkt_exe(&p, 0, TNPU_PKT_SHIFT_OUT, NULL, 0);
		tcb_dispatch(&cb, f, 0, 0, 0, p.buf, p.len);
		tcb_dispatch(&cb, f, 1, 0, 0, p.buf, p.len);
		tsim_run(&s, &cb, 0, &res);
		ASSERT_OK(res);
		if (flags)
			parallel = res.counters[TNPU_CNT_TOTAL_CYCLES];
		else
			serial = res.counters[TNPU_CNT_TOTAL_CYCLES];
	}
	/* each EXE: 8 x 16x16x64 MACs / 16 per cycle = 8192 cycles */
	cr_assert_gt(serial, 2 * 8192);
	cr_assert_lt(parallel, 8192 + 8192 / 8, "rows overlapped: %llu", (unsigned long long)parallel);
	tcb_free(&cb);
	tsim_fini(&s);
}

#include <pthread.h>

struct thr {
	struct run r;
	int f32;
};

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	struct tnpu_config cfg = small_cfg();
	struct tgemm g = { .m = 64, .n = 32, .k = 128, .tm = 8, .tn = 4, .kt = 32, .pipelined = true, .f32 = t->f32 };

	gemm_run(&cfg, g, &t->r);
	tnpu_thread_cleanup();
	return NULL;
}

Test(cycles, independent_executors_run_concurrently_with_identical_results)
{
	struct thr t[4] = { { .f32 = 0 }, { .f32 = 0 }, { .f32 = 1 }, { .f32 = 1 } };
	pthread_t th[4];

	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, thr_main, &t[i]), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(t[0].r.crc, t[1].r.crc);
	cr_assert_eq(t[2].r.crc, t[3].r.crc);
	cr_assert_eq(memcmp(t[0].r.res.counters, t[1].r.res.counters, sizeof(t[0].r.res.counters)), 0);
	cr_assert_eq(memcmp(t[2].r.res.counters, t[3].r.res.counters, sizeof(t[2].r.res.counters)), 0);
}
