/* SPDX-License-Identifier: MIT */
/*
 * Microbenchmark: GFLOP/s (GOPS for int8, 2 ops per MAC) of every kernel on
 * every ISA variant this CPU supports, next to single-threaded OpenBLAS
 * cblas_sgemm.  Best of several repetitions (the machine is shared).
 *   usage: kbench [size...]      (default: 512 1024)
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kern_internal.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Repeats for at least ~0.3 s (and 3 runs), returns the best time. */
#define BEST_OF(stmt)                                                   \
	({                                                              \
		double best_ = 1e30, start_ = now();                    \
		for (int r_ = 0; r_ < 3 || now() - start_ < 0.3; r_++) { \
			double t_ = now();                              \
			stmt;                                           \
			t_ = now() - t_;                                \
			if (t_ < best_)                                 \
				best_ = t_;                             \
		}                                                       \
		best_;                                                  \
	})

/* n^3 GEMM as T^3 tile calls, C tiles accumulated over the k tiles. */
#define TILED(fn, A, B, C)                                                            \
	for (size_t i0 = 0; i0 < n; i0 += T)                                          \
		for (size_t j0 = 0; j0 < n; j0 += T)                                  \
			for (size_t p0 = 0; p0 < n; p0 += T)                          \
				fn(T, T, T, A + i0 * n + p0, n, B + p0 * n + j0, n,   \
				   C + i0 * n + j0, n, p0 > 0)

static const char *default_isa;

static void bench(size_t n)
{
	float *af = aligned_alloc(64, n * n * sizeof(float));
	float *bf = aligned_alloc(64, n * n * sizeof(float));
	float *cf = aligned_alloc(64, n * n * sizeof(float));
	int8_t *ai = aligned_alloc(64, n * n);
	int8_t *bi = aligned_alloc(64, n * n);
	int32_t *ci = aligned_alloc(64, n * n * sizeof(int32_t));
	double ops = 2.0 * (double)n * (double)n * (double)n * 1e-9;
	static const char *const isas[] = { "avx512vnni", "avx512", "avxvnni", "avx2", "generic" };

	if (!af || !bf || !cf || !ai || !bi || !ci) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	srand(1);
	for (size_t i = 0; i < n * n; i++) {
		af[i] = (float)rand() / (float)RAND_MAX - 0.5f;
		bf[i] = (float)rand() / (float)RAND_MAX - 0.5f;
		ai[i] = (int8_t)(rand() & 0xff);
		bi[i] = (int8_t)(rand() & 0xff);
	}

	double t = BEST_OF(cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n,
				       (int)n, 1.0f, af, (int)n, bf, (int)n, 0.0f, cf, (int)n));
	double blas_nn = ops / t;
	t = BEST_OF(cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n,
				1.0f, af, (int)n, bf, (int)n, 0.0f, cf, (int)n));
	double blas_nt = ops / t;
	printf("%zu^3  openblas sgemm (1 thread): nn %6.1f  nt %6.1f GFLOP/s\n", n, blas_nn, blas_nt);

	for (size_t v = 0; v < sizeof(isas) / sizeof(isas[0]); v++) {
		if (!tnpu_kern_force_isa(isas[v]))
			continue;
		if (n > 512 && !__builtin_strcmp(isas[v], "generic"))
			continue;	/* too slow to be interesting at 1024^3 */
		double f_nn = ops / BEST_OF(tnpu_kern_gemm_f32_nn(n, n, n, af, n, bf, n, cf, n, false));
		double f_nt = ops / BEST_OF(tnpu_kern_gemm_f32_nt(n, n, n, af, n, bf, n, cf, n, false));
		double i_nn = ops / BEST_OF(tnpu_kern_gemm_i8_nn(n, n, n, ai, n, bi, n, ci, n, false));
		double i_nt = ops / BEST_OF(tnpu_kern_gemm_i8_nt(n, n, n, ai, n, bi, n, ci, n, false));
		printf("%zu^3  %-10s f32 nn %6.1f (%.2fx)  f32 nt %6.1f (%.2fx)  "
		       "i8 nn %6.1f GOPS (%.2fx)  i8 nt %6.1f GOPS (%.2fx)\n",
		       n, isas[v], f_nn, f_nn / blas_nn, f_nt, f_nt / blas_nt, i_nn, i_nn / blas_nn,
		       i_nt, i_nt / blas_nn);
	}

	/* The golden model calls the kernels once per accelerator tile: time the
	 * same n^3 GEMM issued as T x T x T tile calls (accumulating over k). */
	tnpu_kern_force_isa(default_isa);
	static const size_t tiles[] = { 32, 64, 128, 256 };
	for (size_t ti = 0; ti < sizeof(tiles) / sizeof(tiles[0]); ti++) {
		size_t T = tiles[ti];
		if (n % T)
			continue;
		double f = ops / BEST_OF(TILED(tnpu_kern_gemm_f32_nn, af, bf, cf));
		double i8 = ops / BEST_OF(TILED(tnpu_kern_gemm_i8_nn, ai, bi, ci));
		printf("%zu^3  %-10s as %zu^3 tile calls: f32 nn %6.1f (%.2fx)  i8 nn %6.1f GOPS (%.2fx)\n",
		       n, default_isa, T, f, f / blas_nn, i8, i8 / blas_nn);
	}
	free(af), free(bf), free(cf), free(ai), free(bi), free(ci);
}

int main(int argc, char **argv)
{
	openblas_set_num_threads(1);
	default_isa = tnpu_kern_isa();
	printf("dispatcher default: %s\n", default_isa);
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			bench((size_t)strtoul(argv[i], NULL, 0));
	} else {
		bench(512);
		bench(1024);
	}
	return 0;
}
