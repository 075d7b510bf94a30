/* SPDX-License-Identifier: MIT */
/* Shared helpers for the core unit tests. */
#ifndef TNPU_TEST_COMMON_H
#define TNPU_TEST_COMMON_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tnpu_sim.h"

/* A register-file operand record (the fields a test sets; scalar-unit fields 0). */
static inline struct tnpu_operand t_opnd(uint32_t addr, int32_t cs, int32_t ps, uint32_t pitch, uint32_t rows,
					 uint32_t cols, uint8_t dtype, uint8_t flags)
{
	struct tnpu_operand o = { .addr = addr, .col_stride = cs, .pe_stride = ps, .pitch = pitch,
				  .rows = (uint16_t)rows, .cols = (uint16_t)cols, .dtype = dtype, .flags = flags };

	return o;
}

/* A suite on the small geometry (2 rows x 2 clusters x 4 PEs, 64 KiB storage units) with `mem` bytes of
 * guest memory and a `host_bytes` host buffer: defines s, host, cb, res, cfg, the suite's setup and
 * teardown, H(off) (host buffer bytes) and run() (runs cb as one job, empties it, returns the error). */
#define SMALL_SIM_SUITE(name, mem, host_bytes)                                                        \
	static struct tsim s;                                                                         \
	static uint64_t host;                                                                         \
	static struct tcb cb;                                                                         \
	static struct tnpu_result res;                                                                \
	static struct tnpu_config cfg;                                                                \
	static void setup(void)                                                                       \
	{                                                                                             \
		cfg = small_cfg();                                                                    \
		cr_assert_eq(tsim_init(&s, &cfg, (mem)), 0);                                          \
		host = tsim_buf(&s, (host_bytes));                                                    \
		tcb_init(&cb);                                                                        \
	}                                                                                             \
	static void teardown(void)                                                                    \
	{                                                                                             \
		tcb_free(&cb);                                                                        \
		tsim_fini(&s);                                                                        \
	}                                                                                             \
	TestSuite(name, .init = setup, .fini = teardown);                                             \
	static inline uint8_t *H(uint32_t off)                                                        \
	{                                                                                             \
		return (uint8_t *)tsim_ptr(&s, host) + off;                                           \
	}                                                                                             \
	static inline uint32_t run(void)                                                              \
	{                                                                                             \
		tsim_run(&s, &cb, 0, &res);                                                           \
		cb.len = 0;                                                                           \
		return res.error;                                                                     \
	}

/* Small deterministic RNG (xorshift64*); the seed is printed on failure by the callers. */
static inline uint64_t trng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static inline struct tnpu_config small_cfg(void)
{
	struct tnpu_config c;

	tnpu_config_default(&c);
	c.rows = 2;
	c.cols = 2;
	c.pes = 4;
	c.sram = 64 * 1024;
	return c;
}

static inline void ref_gemm_i8(uint32_t m, uint32_t n, uint32_t k, const int8_t *a, const int8_t *b, int32_t *c)
{
	for (uint32_t i = 0; i < m; i++)
		for (uint32_t j = 0; j < n; j++) {
			int32_t s = 0;

			for (uint32_t p = 0; p < k; p++)
				s += (int32_t)a[(size_t)i * k + p] * b[(size_t)p * n + j];
			c[(size_t)i * n + j] = s;
		}
}

static inline void ref_gemm_f32(uint32_t m, uint32_t n, uint32_t k, const float *a, const float *b, float *c)
{
	for (uint32_t i = 0; i < m; i++)
		for (uint32_t j = 0; j < n; j++) {
			double s = 0;

			for (uint32_t p = 0; p < k; p++)
				s += (double)a[(size_t)i * k + p] * b[(size_t)p * n + j];
			c[(size_t)i * n + j] = (float)s;
		}
}

#define ASSERT_OK(res)                                                                              \
	cr_assert_eq((res).error, 0, "job failed: %s (info 0x%x addr 0x%llx cmd 0x%x)",              \
		     tnpu_err_name((res).error), (res).err_info, (unsigned long long)(res).err_addr,  \
		     (res).err_cmd_offset)

#endif
