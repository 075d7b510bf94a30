/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for qemu-device/core/kernels: every public kernel, on every ISA
 * variant this CPU supports, against the _ref loops.
 *   int8: bit-exact (including int32 wrap-around).
 *   fp32: bit-exact against the rounding contract (qemu-device.md "Rounding
 *         contract": one sequential fmaf() chain per element, the same for
 *         every variant, "generic" included), and within a relative error
 *         bound of _ref.
 * C is allocated with a padded leading dimension and filled with sentinels so
 * writes outside the m x n window are detected; A and B end at a guard page
 * so reads past their last element crash the test.  Set TNPU_TEST_SEED to replay
 * a failure (the seed is printed in every failure message).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <float.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kern_internal.h"

static const char *const all_isas[] = { "generic", "avx2", "avxvnni", "avx512", "avx512vnni" };
#define N_ISAS (sizeof(all_isas) / sizeof(all_isas[0]))

/* ---- seeded RNG (splitmix64) ------------------------------------------- */

static uint64_t test_seed;
static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t rng_below(size_t n) { return (size_t)(rng_next() % n); }
static float rng_f32(void) { return (float)((double)(rng_next() >> 40) / (double)(1 << 24)) * 2.0f - 1.0f; }
static int8_t rng_i8(void) { return (int8_t)(uint8_t)rng_next(); }

static void seed_rng(void)
{
	const char *env = getenv("TNPU_TEST_SEED");
	test_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
	rng_state = test_seed;
	cr_log_info("TNPU_TEST_SEED=%" PRIu64, test_seed);
}

/* ---- guarded operands ----------------------------------------------------- */

/* A and B end exactly at an inaccessible page, so any read past the last
 * element faults (masked vector loads are invisible to sanitizers). */
struct guarded {
	void *map;
	size_t map_len;
};

static void *guarded_alloc(struct guarded *g, size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t data = (bytes + 3) & ~(size_t)3;	/* keeps fp32 elements aligned */
	size_t len = (data + page - 1) / page * page + page;
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert(m != MAP_FAILED);
	cr_assert(!mprotect(m + len - page, page, PROT_NONE));
	g->map = m;
	g->map_len = len;
	return m + len - page - data;
}

static void guarded_free(struct guarded *g)
{
	munmap(g->map, g->map_len);
}

/* ---- problem description -------------------------------------------------- */

struct shape {
	size_t m, n, k;
	size_t pad_a, pad_b, pad_c;	/* leading dimension = row length + pad */
	bool accumulate;
};

enum fill { FILL_RANDOM, FILL_MIN, FILL_MAX, FILL_MIXED_EXTREMES };

#define FAIL_CTX "seed=%" PRIu64 " isa=%s %s m=%zu n=%zu k=%zu pads=%zu/%zu/%zu acc=%d"
#define FAIL_ARGS(name, s)                                                                  \
	test_seed, tnpu_kern_isa(), name, (s)->m, (s)->n, (s)->k, (s)->pad_a, (s)->pad_b, \
		(s)->pad_c, (int)(s)->accumulate

typedef void (*gemm_f32_fn)(size_t, size_t, size_t, const float *, size_t, const float *, size_t,
			    float *, size_t, bool);
typedef void (*gemm_i8_fn)(size_t, size_t, size_t, const int8_t *, size_t, const int8_t *, size_t,
			   int32_t *, size_t, bool);

/* C rows: m plus one guard row; sentinels everywhere outside the window survive. */
static size_t c_elems(const struct shape *s) { return (s->m + 1) * (s->n + s->pad_c) + 1; }

/* ---- fp32 ------------------------------------------------------------------ */

/* The fp32 product under test: NULL = the public entry points, else this driver called directly. */
static void (*f32_direct)(bool nt, size_t m, size_t n, size_t k, const float *a, size_t lda, const float *b, size_t ldb,
			  float *c, size_t ldc, bool accumulate);

static void check_f32(bool nt, const struct shape *s)
{
	const size_t lda = s->k + s->pad_a;
	const size_t ldb = (nt ? s->k : s->n) + s->pad_b;
	const size_t ldc = s->n + s->pad_c;
	const size_t a_n = s->m * lda, b_n = (nt ? s->n : s->k) * ldb, c_n = c_elems(s);
	struct guarded ga, gb;
	float *a = guarded_alloc(&ga, a_n * sizeof(float)), *b = guarded_alloc(&gb, b_n * sizeof(float));
	float *c = malloc(c_n * sizeof(float)), *c_ref = malloc(c_n * sizeof(float));
	float *c0 = malloc(c_n * sizeof(float));
	const char *name = nt ? "f32_nt" : "f32_nn";

	cr_assert(a && b && c && c_ref && c0);
	for (size_t i = 0; i < a_n; i++)
		a[i] = rng_f32();
	for (size_t i = 0; i < b_n; i++)
		b[i] = rng_f32();
	for (size_t i = 0; i < c_n; i++)
		c0[i] = rng_f32() * 4.0f;
	memcpy(c, c0, c_n * sizeof(float));
	memcpy(c_ref, c0, c_n * sizeof(float));

	if (f32_direct)
		f32_direct(nt, s->m, s->n, s->k, a, lda, b, ldb, c, ldc, s->accumulate);
	else
		(nt ? tnpu_kern_gemm_f32_nt : tnpu_kern_gemm_f32_nn)(s->m, s->n, s->k, a, lda, b, ldb, c, ldc,
								      s->accumulate);
	(nt ? tnpu_kern_gemm_f32_nt_ref : tnpu_kern_gemm_f32_nn_ref)(s->m, s->n, s->k, a, lda, b, ldb,
								      c_ref, ldc, s->accumulate);

	for (size_t i = 0; i < s->m + 1; i++) {
		for (size_t j = 0; j < ldc; j++) {
			size_t idx = i * ldc + j;
			if (i >= s->m || j >= s->n) {
				cr_assert(!memcmp(&c[idx], &c0[idx], sizeof(float)),
					  "write outside C at (%zu,%zu) " FAIL_CTX, i, j,
					  FAIL_ARGS(name, s));
				continue;
			}
			/* The rounding contract: one fmaf chain over p from C or +0, every variant. */
			float chain = s->accumulate ? c0[idx] : 0.0f;
			double mag = fabs((double)chain);
			for (size_t p = 0; p < s->k; p++) {
				float av = a[i * lda + p];
				float bv = nt ? b[j * ldb + p] : b[p * ldb + j];
				chain = fmaf(av, bv, chain);
				mag += fabs((double)av * (double)bv);
			}
			double tol = 2.0 * (double)(s->k + 1) * FLT_EPSILON * mag + FLT_MIN;
			cr_assert(fabs((double)c[idx] - (double)c_ref[idx]) <= tol,
				  "(%zu,%zu) got %.9g ref %.9g tol %.3g " FAIL_CTX, i, j,
				  (double)c[idx], (double)c_ref[idx], tol, FAIL_ARGS(name, s));
			cr_assert(!memcmp(&c[idx], &chain, sizeof(float)),
				  "(%zu,%zu) got %.9g, summation-order model %.9g " FAIL_CTX, i, j,
				  (double)c[idx], (double)chain, FAIL_ARGS(name, s));
		}
	}
	guarded_free(&ga), guarded_free(&gb), free(c), free(c_ref), free(c0);
}

/* ---- int8 ------------------------------------------------------------------- */

static int8_t fill_i8(enum fill f)
{
	switch (f) {
	case FILL_MIN:
		return INT8_MIN;
	case FILL_MAX:
		return INT8_MAX;
	case FILL_MIXED_EXTREMES:
		return (rng_next() & 1) ? INT8_MIN : INT8_MAX;
	default:
		return rng_i8();
	}
}

static void check_i8_fill(bool nt, const struct shape *s, enum fill fa, enum fill fb,
			  int32_t c_init)
{
	const size_t lda = s->k + s->pad_a;
	const size_t ldb = (nt ? s->k : s->n) + s->pad_b;
	const size_t ldc = s->n + s->pad_c;
	const size_t a_n = s->m * lda, b_n = (nt ? s->n : s->k) * ldb, c_n = c_elems(s);
	struct guarded ga, gb;
	int8_t *a = guarded_alloc(&ga, a_n), *b = guarded_alloc(&gb, b_n);
	int32_t *c = malloc(c_n * sizeof(int32_t)), *c_ref = malloc(c_n * sizeof(int32_t));
	const char *name = nt ? "i8_nt" : "i8_nn";

	cr_assert(a && b && c && c_ref);
	for (size_t i = 0; i < a_n; i++)
		a[i] = fill_i8(fa);
	for (size_t i = 0; i < b_n; i++)
		b[i] = fill_i8(fb);
	for (size_t i = 0; i < c_n; i++)
		c[i] = c_init ? c_init : (int32_t)(uint32_t)rng_next();
	memcpy(c_ref, c, c_n * sizeof(int32_t));

	(nt ? tnpu_kern_gemm_i8_nt : tnpu_kern_gemm_i8_nn)(s->m, s->n, s->k, a, lda, b, ldb, c, ldc,
							    s->accumulate);
	(nt ? tnpu_kern_gemm_i8_nt_ref : tnpu_kern_gemm_i8_nn_ref)(s->m, s->n, s->k, a, lda, b, ldb,
								    c_ref, ldc, s->accumulate);
	for (size_t idx = 0; idx < c_n; idx++)
		cr_assert(c[idx] == c_ref[idx], "(%zu,%zu) got %" PRId32 " ref %" PRId32 " " FAIL_CTX,
			  idx / ldc, idx % ldc, c[idx], c_ref[idx], FAIL_ARGS(name, s));
	guarded_free(&ga), guarded_free(&gb), free(c), free(c_ref);
}

static void check_i8(bool nt, const struct shape *s)
{
	check_i8_fill(nt, s, FILL_RANDOM, FILL_RANDOM, 0);
}

/* ---- shape sets ------------------------------------------------------------- */

/* Edge cases around every micro-tile (4/6/12 x 16/32) and k grouping (1/2/4). */
static const size_t edge_dims[] = { 0, 1, 2, 3, 5, 7, 11, 12, 13, 16, 17, 31, 32, 33, 47, 97 };
#define N_EDGE (sizeof(edge_dims) / sizeof(edge_dims[0]))

typedef void (*check_fn)(bool nt, const struct shape *s);

static void run_edge_shapes(check_fn check, bool nt)
{
	for (size_t mi = 0; mi < N_EDGE; mi++)
		for (size_t ni = 0; ni < N_EDGE; ni += 3)
			for (size_t ki = 0; ki < N_EDGE; ki += 2) {
				struct shape s = { edge_dims[mi], edge_dims[ni], edge_dims[ki],
						   rng_below(3), rng_below(3), rng_below(3),
						   (mi + ni + ki) & 1 };
				check(nt, &s);
			}
}

static void run_random_shapes(check_fn check, bool nt, int count)
{
	static const size_t primes[] = { 2, 3, 5, 7, 13, 37, 61, 101, 131, 257, 521 };
	for (int t = 0; t < count; t++) {
		struct shape s;
		if (t & 1) {
			s.m = primes[rng_below(9)];
			s.n = primes[rng_below(9)];
			s.k = primes[rng_below(11)];
		} else {
			s.m = 1 + rng_below(150);
			s.n = 1 + rng_below(150);
			s.k = 1 + rng_below(700);
		}
		s.pad_a = rng_below(2) ? 0 : rng_below(40);
		s.pad_b = rng_below(2) ? 0 : rng_below(40);
		s.pad_c = rng_below(2) ? 0 : rng_below(40);
		s.accumulate = rng_below(2);
		check(nt, &s);
	}
}

/* k <= KERN_SMALL_K (8) takes the unpacked path where a variant has one (avx512): every k, both
 * accumulate modes, n across its 16-column vectors and 256-column blocks, padded leading dimensions. */
static void run_small_k(check_fn check, bool nt)
{
	static const size_t ns[] = { 1, 15, 16, 17, 255, 256, 300 };

	for (size_t k = 1; k <= 9; k++)
		for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
			struct shape s = { 1 + rng_below(40), ns[ni], k, rng_below(3), rng_below(3), rng_below(3),
					   (k + ni) & 1 };

			check(nt, &s);
		}
}

/* Large k crosses several KC slices (256 fp32, 512 / 1024 int8) with an odd tail. */
static void run_large_k(check_fn check, bool nt)
{
	static const struct shape shapes[] = {
		{ 13, 35, 4099, 3, 0, 5, false }, { 25, 33, 4096, 0, 1, 0, true },
		{ 1, 1, 8191, 0, 0, 0, true },   { 40, 70, 1025, 1, 2, 3, false },
	};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		check(nt, &shapes[i]);
}

/* Larger than one MC x NC block so every loop of the driver runs more than once. */
static void run_multi_block(check_fn check, bool nt)
{
	struct shape s = { 800, 4200, 40, 1, 0, 2, true };
	check(nt, &s);
}

#define FOR_EACH_ISA(...)                                                            \
	do {                                                                         \
		seed_rng();                                                          \
		for (size_t isa_i_ = 0; isa_i_ < N_ISAS; isa_i_++) {                 \
			if (!tnpu_kern_force_isa(all_isas[isa_i_])) {                \
				cr_log_info("ISA %s not supported here: skipped",    \
					    all_isas[isa_i_]);                       \
				continue;                                            \
			}                                                            \
			__VA_ARGS__;                                                 \
		}                                                                    \
	} while (0)

/* ---- tests ------------------------------------------------------------------ */

Test(kernels, dispatch_default)
{
	const char *isa = tnpu_kern_isa();
	cr_assert(isa && tnpu_kern_isa_supported(isa), "dispatcher picked %s", isa ? isa : "(null)");
	cr_assert(tnpu_kern_isa_supported("generic"));
	cr_assert(!tnpu_kern_force_isa("no-such-isa"));
	cr_log_info("dispatcher picked %s", isa);
}

/* Blocking invariants the drivers rely on (edge buffers, block/panel alignment). */
Test(kernels, impl_tables)
{
#if defined(__x86_64__)
	const struct kern_f32_impl *f[] = { &kern_f32_generic, &kern_f32_avx2, &kern_f32_avx512 };
	const struct kern_i8_impl *q[] = { &kern_i8_generic, &kern_i8_avx2, &kern_i8_avxvnni,
					   &kern_i8_avx512, &kern_i8_avx512vnni };
#else
	const struct kern_f32_impl *f[] = { &kern_f32_generic };
	const struct kern_i8_impl *q[] = { &kern_i8_generic };
#endif
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		cr_assert(f[i]->mr <= KERN_MAX_MR && f[i]->nr <= KERN_MAX_NR, "%s", f[i]->name);
		cr_assert(f[i]->mc % f[i]->mr == 0 && f[i]->nc % f[i]->nr == 0, "%s", f[i]->name);
		cr_assert(f[i]->kc > 0 && f[i]->pack_rows && f[i]->pack_cols && f[i]->ukernel);
	}
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		cr_assert(q[i]->mr <= KERN_MAX_MR && q[i]->nr <= KERN_MAX_NR, "%s", q[i]->name);
		cr_assert(q[i]->mc % q[i]->mr == 0 && q[i]->nc % q[i]->nr == 0, "%s", q[i]->name);
		cr_assert(q[i]->kc % q[i]->kg == 0, "%s", q[i]->name);
		cr_assert(q[i]->pack_a && q[i]->pack_b_nn && q[i]->pack_b_nt && q[i]->ukernel);
	}
}

Test(kernels, f32_nn_edges) { FOR_EACH_ISA(run_edge_shapes(check_f32, false)); }
Test(kernels, f32_nt_edges) { FOR_EACH_ISA(run_edge_shapes(check_f32, true)); }
Test(kernels, i8_nn_edges) { FOR_EACH_ISA(run_edge_shapes(check_i8, false)); }
Test(kernels, i8_nt_edges) { FOR_EACH_ISA(run_edge_shapes(check_i8, true)); }

Test(kernels, f32_small_k) { FOR_EACH_ISA(run_small_k(check_f32, false); run_small_k(check_f32, true)); }
Test(kernels, f32_nn_random, .timeout = 120) { FOR_EACH_ISA(run_random_shapes(check_f32, false, 30)); }
Test(kernels, f32_nt_random, .timeout = 120) { FOR_EACH_ISA(run_random_shapes(check_f32, true, 30)); }
Test(kernels, i8_nn_random, .timeout = 120) { FOR_EACH_ISA(run_random_shapes(check_i8, false, 30)); }
Test(kernels, i8_nt_random, .timeout = 120) { FOR_EACH_ISA(run_random_shapes(check_i8, true, 30)); }

/*
 * The AVX-512 path that reads A in place (kern_f32_avx512_direct.c), called directly whatever the
 * dispatcher would pick: every m up to 40 (tiles of 1..16 rows one vector wide and 1..12 two wide,
 * split into near-equal heights), n across its 16- and 32-column blocks, masked edges and 4096-column
 * packing blocks, k from 1 across the 256-deep slices, padded leading dimensions, both B layouts and
 * accumulate modes.
 */
Test(kernels, f32_direct, .timeout = 120)
{
#if defined(__x86_64__)
	static const size_t ns[] = { 1, 2, 4, 8, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 100 };
	static const size_t ks[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 255, 256, 257, 600 };
	const size_t nn = sizeof(ns) / sizeof(ns[0]), nk = sizeof(ks) / sizeof(ks[0]);

	seed_rng();
	if (!tnpu_kern_isa_supported("avx512")) {
		cr_log_info("no AVX-512 here: skipped");
		return;
	}
	f32_direct = kern_gemm_f32_direct_avx512;
	for (size_t m = 1; m <= 40; m++)
		for (int nt = 0; nt < 2; nt++)
			for (size_t ni = 0; ni < nn; ni++) {
				struct shape s = { m, ns[ni], ks[(m * 7 + ni + (size_t)nt) % nk], rng_below(3),
						   rng_below(3) * 5, rng_below(3), (m + ni) & 1 };

				check_f32(nt, &s);
			}
	/* every small k on every tile height */
	for (size_t k = 1; k <= 9; k++)
		for (size_t m = 1; m <= 33; m++) {
			struct shape s = { m, 16 + 16 * (m % 3) + (k & 1), k, 0, m % 2, 1, k & 1 };

			check_f32(m & 1, &s);
		}
	/* B wider than the 4096 columns packed at a time */
	for (int nt = 0; nt < 2; nt++) {
		struct shape s = { 5, 4096 + 37, 3, 1, 2, 3, nt };

		check_f32(nt, &s);
	}
	f32_direct = NULL;
#endif
}

Test(kernels, f32_large_k, .timeout = 120)
{
	FOR_EACH_ISA({
		run_large_k(check_f32, false);
		run_large_k(check_f32, true);
	});
}

Test(kernels, i8_large_k, .timeout = 120)
{
	FOR_EACH_ISA({
		run_large_k(check_i8, false);
		run_large_k(check_i8, true);
	});
}

Test(kernels, multi_block, .timeout = 240)
{
	FOR_EACH_ISA({
		run_multi_block(check_f32, false);
		run_multi_block(check_f32, true);
		run_multi_block(check_i8, false);
		run_multi_block(check_i8, true);
	});
}

/* -128 * -128 sums, +-127 mixes, and int32 wrap-around when accumulating. */
Test(kernels, i8_extremes, .timeout = 120)
{
	FOR_EACH_ISA({
		for (int nt = 0; nt < 2; nt++) {
			struct shape s = { 17, 33, 4097, 1, 3, 2, false };
			check_i8_fill(nt, &s, FILL_MIN, FILL_MIN, 0);
			check_i8_fill(nt, &s, FILL_MAX, FILL_MIN, 0);
			check_i8_fill(nt, &s, FILL_MIXED_EXTREMES, FILL_MIXED_EXTREMES, 0);
			s.accumulate = true;
			check_i8_fill(nt, &s, FILL_MIN, FILL_MIN, INT32_MAX - 5);
			check_i8_fill(nt, &s, FILL_MAX, FILL_MIN, INT32_MIN + 5);
			/* 16384 * 131075 > 2^31: the sum itself wraps. */
			struct shape w = { 3, 5, 131075, 0, 0, 1, true };
			check_i8_fill(nt, &w, FILL_MIN, FILL_MIN, 12345);
		}
	});
}

/* k == 0: C untouched when accumulating, zeroed otherwise; m or n == 0: no-op. */
Test(kernels, degenerate)
{
	FOR_EACH_ISA({
		float cf[6] = { 1, 2, 3, 4, 5, 6 };
		int32_t ci[6] = { 1, 2, 3, 4, 5, 6 };
		float af = 1, bf = 1;
		int8_t ai = 1, bi = 1;

		tnpu_kern_gemm_f32_nn(2, 2, 0, &af, 1, &bf, 2, cf, 3, true);
		tnpu_kern_gemm_i8_nt(2, 2, 0, &ai, 1, &bi, 1, ci, 3, true);
		cr_assert(cf[0] == 1 && cf[4] == 5 && ci[0] == 1 && ci[4] == 5);
		tnpu_kern_gemm_f32_nt(2, 2, 0, &af, 1, &bf, 1, cf, 3, false);
		tnpu_kern_gemm_i8_nn(2, 2, 0, &ai, 1, &bi, 2, ci, 3, false);
		cr_assert(cf[0] == 0 && cf[1] == 0 && cf[2] == 3 && cf[3] == 0 && cf[4] == 0 &&
			  cf[5] == 6);
		cr_assert(ci[0] == 0 && ci[1] == 0 && ci[2] == 3 && ci[3] == 0 && ci[4] == 0 &&
			  ci[5] == 6);
		tnpu_kern_gemm_f32_nn(0, 2, 1, &af, 1, &bf, 2, cf, 3, false);
		tnpu_kern_gemm_i8_nn(2, 0, 1, &ai, 1, &bi, 2, ci, 3, false);
		cr_assert(cf[2] == 3 && ci[2] == 3);
	});
}

/* Same inputs -> same bits, and the result does not depend on how C is tiled. */
Test(kernels, f32_deterministic_and_tiling_invariant, .timeout = 120)
{
	FOR_EACH_ISA({
		const size_t m = 70, n = 90, k = 777;
		float *a = malloc(m * k * sizeof(float)), *b = malloc(k * n * sizeof(float));
		float *c1 = malloc(m * n * sizeof(float)), *c2 = malloc(m * n * sizeof(float));
		float *c3 = malloc(m * n * sizeof(float));
		cr_assert(a && b && c1 && c2 && c3);
		for (size_t i = 0; i < m * k; i++)
			a[i] = rng_f32();
		for (size_t i = 0; i < k * n; i++)
			b[i] = rng_f32();
		tnpu_kern_gemm_f32_nn(m, n, k, a, k, b, n, c1, n, false);
		tnpu_kern_gemm_f32_nn(m, n, k, a, k, b, n, c2, n, false);
		cr_assert(!memcmp(c1, c2, m * n * sizeof(float)), "seed=%" PRIu64 " isa=%s",
			  test_seed, tnpu_kern_isa());
		/* 7 x 9 tiles, k split in two accumulate steps. */
		for (size_t i0 = 0; i0 < m; i0 += 7)
			for (size_t j0 = 0; j0 < n; j0 += 9) {
				tnpu_kern_gemm_f32_nn(7, 9, 300, a + i0 * k, k, b + j0, n,
						      c3 + i0 * n + j0, n, false);
				tnpu_kern_gemm_f32_nn(7, 9, k - 300, a + i0 * k + 300, k,
						      b + 300 * n + j0, n, c3 + i0 * n + j0, n,
						      true);
			}
		cr_assert(!memcmp(c1, c3, m * n * sizeof(float)),
			  "tiled result differs: seed=%" PRIu64 " isa=%s", test_seed,
			  tnpu_kern_isa());
		free(a), free(b), free(c1), free(c2), free(c3);
	});
}

/* Per-thread scratch: concurrent callers with different block sizes. */
struct thread_job {
	size_t m, n, k;
	uint64_t seed;
	bool ok;
};

static void *thread_main(void *arg)
{
	struct thread_job *job = arg;
	size_t m = job->m, n = job->n, k = job->k;
	int8_t *a = malloc(m * k), *b = malloc(k * n);
	int32_t *c = malloc(m * n * sizeof(int32_t)), *r = malloc(m * n * sizeof(int32_t));
	uint64_t st = job->seed;

	job->ok = a && b && c && r;
	if (job->ok) {
		for (size_t i = 0; i < m * k; i++)
			a[i] = (int8_t)((st = st * 6364136223846793005ull + 1) >> 56);
		for (size_t i = 0; i < k * n; i++)
			b[i] = (int8_t)((st = st * 6364136223846793005ull + 1) >> 56);
		tnpu_kern_gemm_i8_nn_ref(m, n, k, a, k, b, n, r, n, false);
		for (int it = 0; it < 20 && job->ok; it++) {
			tnpu_kern_gemm_i8_nn(m, n, k, a, k, b, n, c, n, false);
			job->ok = !memcmp(c, r, m * n * sizeof(int32_t));
		}
	}
	tnpu_kern_release_scratch();
	free(a), free(b), free(c), free(r);
	return NULL;
}

Test(kernels, threads, .timeout = 120)
{
	seed_rng();
	struct thread_job jobs[4] = {
		{ 100, 130, 900, rng_next(), false }, { 33, 77, 2000, rng_next(), false },
		{ 200, 40, 300, rng_next(), false },  { 5, 500, 64, rng_next(), false },
	};
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		cr_assert(!pthread_create(&th[i], NULL, thread_main, &jobs[i]));
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert(jobs[i].ok, "thread %d mismatch seed=%" PRIu64 " isa=%s", i, test_seed,
			  tnpu_kern_isa());
	}
}

/*
 * A thread that exits without tnpu_kern_release_scratch() leaves no scratch behind (a pthread key
 * destructor frees it): libaccel's sim backend runs the model on its callers' threads, which never call
 * into the kernels to say goodbye.  The kernels are a static library linked into this program, and
 * meson.build links it with -Wl,--wrap=aligned_alloc,--wrap=free: the scratch's allocation and its free
 * are seen here whatever the allocator (glibc's or a sanitizer's).
 */
void *__real_aligned_alloc(size_t align, size_t size);
void __real_free(void *p);
void *__wrap_aligned_alloc(size_t align, size_t size);
void __wrap_free(void *p);

static void *_Atomic watched;		/* the last scratch-sized aligned_alloc */
static _Atomic bool watched_freed;

void *__wrap_aligned_alloc(size_t align, size_t size)
{
	void *p = __real_aligned_alloc(align, size);

	if (p && size >= (8u << 20)) {
		watched_freed = false;
		watched = p;
	}
	return p;
}

void __wrap_free(void *p)
{
	if (p && p == watched)
		watched_freed = true;
	__real_free(p);
}

static void *scratch_and_exit(void *arg)
{
	*(void **)arg = kern_scratch(8u << 20);
	return NULL;	/* no tnpu_kern_release_scratch() */
}

Test(kernels, thread_exit_frees_the_threads_scratch)
{
	void *scratch = NULL;
	pthread_t th;

	cr_assert(!pthread_create(&th, NULL, scratch_and_exit, &scratch));
	pthread_join(th, NULL);
	cr_assert_not_null(scratch, "kern_scratch(8 MiB) failed");
	cr_assert_eq(scratch, watched, "the scratch did not come from aligned_alloc");
	cr_expect(watched_freed, "the exited thread's scratch (8 MiB) was not freed");
}

/* ---- batches (tnpu_kern_gemm_*_batch) --------------------------------------------------------- */

/*
 * count products of one shape, operands sa / sb / sc elements apart, against the plain definition
 * (every fp32 element one fmaf chain over p from C or +0; int8 exact modulo 2^32): C either
 * interleaved (product t's row i at t * n + i * ldc, ldc >= count * n: the golden model's PEs side
 * by side in a cluster's accumulator) or stacked (t * (m * ldc + gap)); A and B shared (stride 0),
 * overlapping (stride below a row: a convolution's sliding window), disjoint, or walked backwards.
 * Elements no product owns keep their sentinel.
 */
struct batch {
	size_t count, m, n, k, lda, ldb, ldc;
	ptrdiff_t sa, sb, sc;
	bool accumulate;
};

/* The smallest and largest element offsets of a product's operand over the batch. */
static void batch_span(size_t count, ptrdiff_t s, size_t last, ptrdiff_t *lo, ptrdiff_t *hi)
{
	ptrdiff_t end = (ptrdiff_t)(count - 1) * s;

	*lo = end < 0 ? end : 0;
	*hi = (end > 0 ? end : 0) + (ptrdiff_t)last;
}

static void random_batch(struct batch *b, bool nt)
{
	size_t w;

	b->count = 1 + rng_below(20);
	b->m = 1 + rng_below(rng_below(2) ? 40 : 6);
	b->n = 1 + rng_below(rng_below(2) ? 70 : 5);
	b->k = 1 + rng_below(rng_below(3) ? 10 : 300);
	b->lda = b->k + rng_below(3) * rng_below(9);
	if (rng_below(4) == 0)
		b->lda = 1 + rng_below(b->k); /* overlapping rows: a strided window */
	b->ldb = (nt ? b->k : b->n) + rng_below(3);
	switch (rng_below(4)) {
	case 0:
		b->sa = 0;
		break;
	case 1:
		b->sa = (ptrdiff_t)(1 + rng_below(b->lda * 2));
		break;
	case 2:
		b->sa = -(ptrdiff_t)(b->m * b->lda + rng_below(5));
		break;
	default:
		b->sa = (ptrdiff_t)(b->m * b->lda + rng_below(5));
	}
	b->sb = rng_below(3) ? 0 : (ptrdiff_t)((nt ? b->n : b->k) * b->ldb + rng_below(7)) * (rng_below(2) ? 1 : -1);
	if (rng_below(2)) {
		b->sc = (ptrdiff_t)b->n;
		b->ldc = b->count * b->n + rng_below(3);
	} else {
		b->ldc = b->n + rng_below(3);
		w = b->m * b->ldc + rng_below(4);
		b->sc = rng_below(2) ? (ptrdiff_t)w : -(ptrdiff_t)w;
	}
	b->accumulate = rng_below(2);
}

#define BATCH_CTX \
	"seed=%" PRIu64 " isa=%s %s count=%zu m=%zu n=%zu k=%zu lda=%zu ldb=%zu ldc=%zu sa=%td sb=%td sc=%td acc=%d"
#define BATCH_ARGS(name, b)                                                                                          \
	test_seed, tnpu_kern_isa(), name, (b)->count, (b)->m, (b)->n, (b)->k, (b)->lda, (b)->ldb, (b)->ldc, (b)->sa, \
		(b)->sb, (b)->sc, (int)(b)->accumulate

/* Owner map of C: for each element, 1 + the product and row/column that writes it, or 0. */
static size_t *batch_owners(const struct batch *b, ptrdiff_t c_lo, size_t c_n)
{
	size_t *own = calloc(c_n, sizeof(size_t));

	cr_assert(own);
	for (size_t t = 0; t < b->count; t++)
		for (size_t i = 0; i < b->m; i++)
			for (size_t j = 0; j < b->n; j++) {
				size_t idx = (size_t)((ptrdiff_t)t * b->sc + (ptrdiff_t)(i * b->ldc + j) - c_lo);

				cr_assert(!own[idx], "test bug: products overlap");
				own[idx] = 1 + (t * b->m + i) * b->n + j;
			}
	return own;
}

static void check_f32_batch(bool nt, const struct batch *bt, kern_f32_direct_fn direct)
{
	ptrdiff_t a_lo, a_hi, b_lo, b_hi, c_lo, c_hi;
	size_t b_rows = nt ? bt->n : bt->k, b_cols = nt ? bt->k : bt->n;
	const char *name = nt ? "f32_nt_batch" : "f32_nn_batch";

	batch_span(bt->count, bt->sa, (bt->m - 1) * bt->lda + bt->k, &a_lo, &a_hi);
	batch_span(bt->count, bt->sb, (b_rows - 1) * bt->ldb + b_cols, &b_lo, &b_hi);
	batch_span(bt->count, bt->sc, (bt->m - 1) * bt->ldc + bt->n, &c_lo, &c_hi);

	size_t a_n = (size_t)(a_hi - a_lo), b_n = (size_t)(b_hi - b_lo), c_n = (size_t)(c_hi - c_lo) + 1;
	struct guarded ga, gb;
	float *a = guarded_alloc(&ga, a_n * sizeof(float)), *b = guarded_alloc(&gb, b_n * sizeof(float));
	float *c = malloc(c_n * sizeof(float)), *c0 = malloc(c_n * sizeof(float));
	size_t *own = batch_owners(bt, c_lo, c_n);

	cr_assert(c && c0);
	for (size_t i = 0; i < a_n; i++)
		a[i] = rng_f32();
	for (size_t i = 0; i < b_n; i++)
		b[i] = rng_f32();
	for (size_t i = 0; i < c_n; i++)
		c0[i] = rng_f32() * 4.0f;
	memcpy(c, c0, c_n * sizeof(float));
	if (direct)
		direct(nt, bt->count, bt->m, bt->n, bt->k, a - a_lo, bt->lda, bt->sa, b - b_lo, bt->ldb, bt->sb,
		       c - c_lo, bt->ldc, bt->sc, bt->accumulate);
	else
		(nt ? tnpu_kern_gemm_f32_nt_batch
		    : tnpu_kern_gemm_f32_nn_batch)(bt->count, bt->m, bt->n, bt->k, a - a_lo, bt->lda, bt->sa, b - b_lo,
						   bt->ldb, bt->sb, c - c_lo, bt->ldc, bt->sc, bt->accumulate);
	for (size_t idx = 0; idx < c_n; idx++) {
		if (!own[idx]) {
			cr_assert(!memcmp(&c[idx], &c0[idx], sizeof(float)), "write outside C at %zu " BATCH_CTX, idx,
				  BATCH_ARGS(name, bt));
			continue;
		}
		size_t o = own[idx] - 1, j = o % bt->n, i = o / bt->n % bt->m, t = o / bt->n / bt->m;
		const float *at = a - a_lo + (ptrdiff_t)t * bt->sa + i * bt->lda;
		const float *btp = b - b_lo + (ptrdiff_t)t * bt->sb;
		float chain = bt->accumulate ? c0[idx] : 0.0f;

		for (size_t p = 0; p < bt->k; p++)
			chain = fmaf(at[p], nt ? btp[j * bt->ldb + p] : btp[p * bt->ldb + j], chain);
		cr_assert(!memcmp(&c[idx], &chain, sizeof(float)),
			  "product %zu (%zu,%zu) got %.9g, chain %.9g " BATCH_CTX, t, i, j, (double)c[idx],
			  (double)chain, BATCH_ARGS(name, bt));
	}
	guarded_free(&ga), guarded_free(&gb), free(c), free(c0), free(own);
}

static void check_i8_batch(bool nt, const struct batch *bt)
{
	ptrdiff_t a_lo, a_hi, b_lo, b_hi, c_lo, c_hi;
	size_t b_rows = nt ? bt->n : bt->k, b_cols = nt ? bt->k : bt->n;
	const char *name = nt ? "i8_nt_batch" : "i8_nn_batch";

	batch_span(bt->count, bt->sa, (bt->m - 1) * bt->lda + bt->k, &a_lo, &a_hi);
	batch_span(bt->count, bt->sb, (b_rows - 1) * bt->ldb + b_cols, &b_lo, &b_hi);
	batch_span(bt->count, bt->sc, (bt->m - 1) * bt->ldc + bt->n, &c_lo, &c_hi);

	size_t a_n = (size_t)(a_hi - a_lo), b_n = (size_t)(b_hi - b_lo), c_n = (size_t)(c_hi - c_lo) + 1;
	struct guarded ga, gb;
	int8_t *a = guarded_alloc(&ga, a_n), *b = guarded_alloc(&gb, b_n);
	int32_t *c = malloc(c_n * sizeof(int32_t)), *c0 = malloc(c_n * sizeof(int32_t));
	size_t *own = batch_owners(bt, c_lo, c_n);
	enum fill f = rng_below(4) ? FILL_RANDOM : FILL_MIXED_EXTREMES;

	cr_assert(c && c0);
	for (size_t i = 0; i < a_n; i++)
		a[i] = fill_i8(f);
	for (size_t i = 0; i < b_n; i++)
		b[i] = fill_i8(f);
	for (size_t i = 0; i < c_n; i++)
		c0[i] = (int32_t)(uint32_t)rng_next();
	memcpy(c, c0, c_n * sizeof(int32_t));
	(nt ? tnpu_kern_gemm_i8_nt_batch : tnpu_kern_gemm_i8_nn_batch)(bt->count, bt->m, bt->n, bt->k, a - a_lo,
								       bt->lda, bt->sa, b - b_lo, bt->ldb, bt->sb,
								       c - c_lo, bt->ldc, bt->sc, bt->accumulate);
	for (size_t idx = 0; idx < c_n; idx++) {
		if (!own[idx]) {
			cr_assert(c[idx] == c0[idx], "write outside C at %zu " BATCH_CTX, idx, BATCH_ARGS(name, bt));
			continue;
		}
		size_t o = own[idx] - 1, j = o % bt->n, i = o / bt->n % bt->m, t = o / bt->n / bt->m;
		const int8_t *at = a - a_lo + (ptrdiff_t)t * bt->sa + i * bt->lda;
		const int8_t *btp = b - b_lo + (ptrdiff_t)t * bt->sb;
		uint32_t sum = bt->accumulate ? (uint32_t)c0[idx] : 0;

		for (size_t p = 0; p < bt->k; p++)
			sum += (uint32_t)((int32_t)at[p] * (nt ? btp[j * bt->ldb + p] : btp[p * bt->ldb + j]));
		cr_assert(c[idx] == (int32_t)sum, "product %zu (%zu,%zu) got %" PRId32 " want %" PRId32 " " BATCH_CTX,
			  t, i, j, c[idx], (int32_t)sum, BATCH_ARGS(name, bt));
	}
	guarded_free(&ga), guarded_free(&gb), free(c), free(c0), free(own);
}

Test(kernels, f32_batch, .timeout = 120)
{
	FOR_EACH_ISA({
		for (int r = 0; r < 60; r++) {
			struct batch b;
			bool nt = r & 1;

			random_batch(&b, nt);
			check_f32_batch(nt, &b, NULL);
		}
	});
}

Test(kernels, i8_batch, .timeout = 120)
{
	FOR_EACH_ISA({
		for (int r = 0; r < 60; r++) {
			struct batch b;
			bool nt = r & 1;

			random_batch(&b, nt);
			check_i8_batch(nt, &b);
		}
	});
}

/* The AVX-512 A-direct path's batches called directly (the dispatcher takes it only for some shapes):
 * a cluster's 16 PEs' per-pixel-row products of the pointwise lowering's row mode among them. */
Test(kernels, f32_direct_batch, .timeout = 120)
{
#if defined(__x86_64__)
	seed_rng();
	if (!tnpu_kern_isa_supported("avx512")) {
		cr_log_info("no AVX-512 here: skipped");
		return;
	}
	for (int r = 0; r < 200; r++) {
		struct batch b;
		bool nt = r & 1;

		random_batch(&b, nt);
		check_f32_batch(nt, &b, kern_gemm_f32_direct_batch_avx512);
	}
	for (int nt = 0; nt < 2; nt++) {
		/* 16 PEs x 28 pixels x 2 channels, k = 3 taps of a 1-channel row, rows 1 element apart */
		struct batch b = {16, 28, 2, 3, 1, 3, 32, 30, 0, 2, nt};

		check_f32_batch(nt, &b, kern_gemm_f32_direct_batch_avx512);
		/* the same as a batch over the pixel rows: 16 PE rows 30 elements apart, C rows 2 apart
		 * (contiguous tiles: the lane-dense path); 4 columns, k in chunks of 4, partial tiles */
		b = (struct batch){ 28, 16, 2, 3, 30, nt ? 3 : 2, 2, 1, 0, 32, nt };
		check_f32_batch(nt, &b, kern_gemm_f32_direct_batch_avx512);
		for (size_t m = 1; m <= 16; m++)
			for (size_t k = 1; k <= 10; k += 3) {
				size_t n = m % 2 ? 2 : 4;

				b = (struct batch){ 3 + m % 4, m, n, k, k + m % 3, nt ? k + 1 : n + 1, n,
						    (ptrdiff_t)(m * (k + 2)), 0, (ptrdiff_t)(m * n + m % 2), (m + k) & 1 };
				check_f32_batch(nt, &b, kern_gemm_f32_direct_batch_avx512);
			}
		/* B wider than the 4096 columns packed at a time, shared */
		b = (struct batch){
			3, 5, 4096 + 37, 3, 3, nt ? 3 : 4096 + 37, 4096 + 40, 15, 0, (ptrdiff_t)(5 * (4096 + 40)), !nt};
		check_f32_batch(nt, &b, kern_gemm_f32_direct_batch_avx512);
	}
#endif
}
