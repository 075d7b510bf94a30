/* SPDX-License-Identifier: MIT */
/* sparse (#8): per-row busy cycles (counters 18..21, ROW_BUSY registers), the MAC LB path and
 * effective MACs of (value, index) weights with an activation bitmask vs an independent count. */
#include "common.h"

static struct tsim s;
static uint64_t host;
static struct tcb cb;
static struct tnpu_result res;

/* 2 rows x 2 clusters x 2 PEs. */
static void setup(void)
{
	struct tnpu_config cfg = small_cfg();

	cfg.rows = 2;
	cfg.cols = 2;
	cfg.pes = 2;
	cr_assert_eq(tsim_init(&s, &cfg, 16 << 20), 0);
	host = tsim_buf(&s, 65536);
	tcb_init(&cb);
}

static void teardown(void)
{
	tcb_free(&cb);
	tsim_fini(&s);
}

TestSuite(sparse, .init = setup, .fini = teardown);

static uint8_t *H(uint32_t off)
{
	return (uint8_t *)tsim_ptr(&s, host) + off;
}

static void put(uint32_t off, uint32_t len)
{
	tcb_dma(&cb, true, 0, host + off, 0, 0, TNPU_DMA_ROW_ALL, 0, off, 0, 0, len, 1, 1);
}

static void config(unsigned row, struct tnpu_cfg_hdr h, const uint16_t *ins, const struct tnpu_operand *ops)
{
	struct tpkt p;

	tpkt_config(&p, 0, &h, ins, ops);
	tcb_dispatch(&cb, 0, (uint8_t)row, 0, 0, p.buf, p.len);
}

static void exe(unsigned row)
{
	struct tpkt p;

	tpkt_exe(&p, 0, TNPU_PKT_LAST | TNPU_PKT_SHIFT_OUT, NULL, 0);
	tcb_dispatch(&cb, 0, (uint8_t)row, 0, 0, p.buf, p.len);
}

static uint32_t run(void)
{
	tsim_run(&s, &cb, 0, &res);
	cb.len = 0;
	return res.error;
}

static struct tnpu_operand opnd(uint32_t addr, int32_t cs, int32_t ps, uint32_t pitch, uint16_t rows, uint16_t cols,
				uint8_t dtype, uint8_t flags)
{
	struct tnpu_operand o = { .addr = addr, .col_stride = cs, .pe_stride = ps, .pitch = pitch,
				  .rows = rows, .cols = cols, .dtype = dtype, .flags = flags };

	return o;
}

/* PE 0 of each cluster: dense 16x64 A; PE 1: all zero.  B 64x16 of ones. */
static void lb_program(unsigned row, bool lb)
{
	int8_t *a = (int8_t *)H(0);
	uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 1), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, lb, 0) };
	struct tnpu_operand ops[] = {
		opnd(0, 0, 1024, 64, 16, 64, TNPU_DTYPE_INT8, 0),
		opnd(4096, 0, 0, 16, 64, 16, TNPU_DTYPE_INT8, 0),
	};

	memset(H(0), 0, 2048);
	for (int i = 0; i < 1024; i++)
		a[i] = 1;
	memset(H(4096), 1, 1024);
	put(0, 2048);
	put(4096, 1024);
	config(row, (struct tnpu_cfg_hdr){ .n_instr = 3, .n_operands = 2, .loop_end = 2, .repeat = 1 }, ins, ops);
	exe(row);
}

Test(sparse, row_busy_counts_only_the_rows_that_ran)
{
	lb_program(1, false);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_eq(res.row_busy[0], 0);
	cr_assert_gt(res.row_busy[1], 16384 / TNPU_RATE_MAC_INT8);
	/* one row, serial: its busy time is the union of busy intervals */
	cr_assert_eq(res.row_busy[1], res.counters[TNPU_CNT_COMPUTE_CYCLES]);
	cr_assert_eq(res.counters[TNPU_CNT_ROW_BUSY_MAX], res.row_busy[1]);
	cr_assert_eq(res.counters[TNPU_CNT_ROW_BUSY_SUM], res.row_busy[1]);
	cr_assert_eq(res.counters[TNPU_CNT_BUSY_ROWS], 1);
	cr_assert_eq(res.counters[TNPU_CNT_LB_MACS_MOVED], 0);
}

Test(sparse, row_busy_of_two_rows_sums_and_max)
{
	lb_program(0, false);
	lb_program(1, true);
	cr_assert_eq(run(), 0, "%s", tnpu_err_name(res.error));
	cr_assert_gt(res.row_busy[0], res.row_busy[1], "LB row must be faster");
	cr_assert_eq(res.counters[TNPU_CNT_ROW_BUSY_MAX], res.row_busy[0]);
	cr_assert_eq(res.counters[TNPU_CNT_ROW_BUSY_SUM], res.row_busy[0] + res.row_busy[1]);
	cr_assert_eq(res.counters[TNPU_CNT_BUSY_ROWS], 2);
	/* LB halves the 1024 MAC cycles of the busy PE of each pair */
	cr_assert_eq(res.row_busy[0] - res.row_busy[1], 16384 / TNPU_RATE_MAC_INT8 / 2);
	/* 2 clusters, each pair (16384, 0): half the difference moves */
	cr_assert_eq(res.counters[TNPU_CNT_LB_MACS_MOVED], 2 * 16384 / 2);
}

Test(sparse, sparse_weights_with_bitmask_effective_macs_match_independent_count)
{
	enum { TM = 8, K = 32, TN = 4, SLOTS = 12 };
	for (uint64_t seed = 1; seed <= 20; seed++) {
		uint64_t st = seed, eff = 0, e_pe[2][2] = { { 0 } }, moved = 0;
		int8_t *a = (int8_t *)H(0), dense[2][2][K * TN];
		struct tnpu_sparse_i8 *sw = (struct tnpu_sparse_i8 *)(void *)H(8192);
		int32_t *out = (int32_t *)(void *)H(16384);
		uint16_t ins[] = { TNPU_INSN_LD(0, 0, 0, 1), TNPU_INSN_LD(1, 0, 1, 0), TNPU_INSN_MAC(0, 0, 0, 1, 0),
				   TNPU_INSN_ST(0, 2, 1) };
		/* A per cluster (col_stride), weights per PE (pe_stride and col_stride), C per (c, p). */
		struct tnpu_operand ops[] = {
			opnd(0, TM * K, 0, K, TM, K, TNPU_DTYPE_INT8, 0),
			opnd(8192, 2 * TN * SLOTS * 4, TN * SLOTS * 4, SLOTS * 4, SLOTS, TN, TNPU_DTYPE_INT8,
			     TNPU_OPF_SPARSE),
			opnd(12288, TM * 2 * TN * 4, TN * 4, 2 * TN * 4, TM, TN, TNPU_DTYPE_INT32, 0),
		};

		memset(dense, 0, sizeof(dense));
		memset(H(8192), 0, 2 * 2 * TN * SLOTS * 4);
		for (int i = 0; i < 2 * TM * K; i++)
			a[i] = (trng(&st) % 100) < (seed * 4) ? 0 : (int8_t)(trng(&st) | 1);
		for (int c = 0; c < 2; c++)
			for (int p = 0; p < 2; p++)
				for (int n = 0; n < TN; n++) {
					int used = 0;

					for (int k = 0; k < K && used < SLOTS; k++) {
						struct tnpu_sparse_i8 *sl = &sw[((c * 2 + p) * TN + n) * SLOTS + used];

						if (trng(&st) % 100 < seed * 4 + 10)
							continue;
						dense[c][p][k * TN + n] = (int8_t)(trng(&st) | 1);
						sl->index = (uint16_t)k;
						sl->value = dense[c][p][k * TN + n];
						used++;
						/* independent count: non-zero activations of column k of this cluster's A */
						for (int i = 0; i < TM; i++)
							e_pe[c][p] += a[c * TM * K + i * K + k] != 0;
					}
				}
		put(0, 2 * TM * K);
		put(8192, 2 * 2 * TN * SLOTS * 4);
		config(0, (struct tnpu_cfg_hdr){ .n_instr = 4, .n_operands = 3, .loop_end = 3, .repeat = 1 }, ins, ops);
		exe(0);
		tcb_dma(&cb, false, 0, host + 16384, 0, 0, 0, 0, 12288, 0, 0, 2 * TM * 2 * TN * 4, 1, 1);
		cr_assert_eq(run(), 0, "seed %llu: %s", (unsigned long long)seed, tnpu_err_name(res.error));
		for (int c = 0; c < 2; c++) {
			for (int p = 0; p < 2; p++)
				eff += e_pe[c][p];
			moved += (e_pe[c][0] > e_pe[c][1] ? e_pe[c][0] - e_pe[c][1] : e_pe[c][1] - e_pe[c][0]) / 2;
		}
		cr_assert_eq(res.counters[TNPU_CNT_MACS_EFFECTIVE], eff, "seed %llu", (unsigned long long)seed);
		cr_assert_eq(res.counters[TNPU_CNT_LB_MACS_MOVED], moved, "seed %llu", (unsigned long long)seed);
		cr_assert_eq(res.counters[TNPU_CNT_MACS_DENSE], 4ull * TM * TN * K);
		for (int c = 0; c < 2; c++)
			for (int p = 0; p < 2; p++)
				for (int i = 0; i < TM; i++)
					for (int n = 0; n < TN; n++) {
						int32_t r = 0;

						for (int k = 0; k < K; k++)
							r += a[c * TM * K + i * K + k] * dense[c][p][k * TN + n];
						cr_assert_eq(out[(c * TM + i) * 2 * TN + p * TN + n], r, "seed %llu",
							     (unsigned long long)seed);
					}
	}
}

Test(sparse, row_busy_registers_are_mapped_and_zero_after_reset)
{
	struct tnpu_config cfg;
	struct tnpu_core *c;
	uint64_t v;

	tnpu_config_default(&cfg);
	cr_assert_eq(tnpu_core_new(&cfg, &c, NULL, 0), 0);
	cr_assert_eq(tnpu_core_reg_read(c, TNPU_REG_CAP_FEATURES, 4, &v), TNPU_REG_OK);
	cr_assert(v & TNPU_FEAT_ROW_BUSY);
	cr_assert(v & TNPU_FEAT_SPARSE_CNT);
	for (unsigned r = 0; r < TNPU_MAX_ROWS; r++) {
		cr_assert_eq(tnpu_core_reg_read(c, TNPU_REG_ROW_BUSY(r), 8, &v), TNPU_REG_OK);
		cr_assert_eq(v, 0);
	}
	cr_assert_eq(tnpu_core_reg_read(c, TNPU_REG_ROW_BUSY(0) + 2, 4, &v), TNPU_REG_BAD_ACCESS);
	tnpu_core_free(c);
}
