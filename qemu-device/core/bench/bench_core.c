/* SPDX-License-Identifier: MIT */
/*
 * bench-core: fp32 and int8 GEMM through the golden model on one thread vs
 * single-threaded OpenBLAS cblas_sgemm.  Prints one JSON object per case.
 * Usage: bench-core [size ...]   (default 512 1024)
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tnpu_sim.h"
#include "tnpu_kernels.h"

void openblas_set_num_threads(int);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static double best_openblas(uint32_t n, const float *a, const float *b, float *c, int reps)
{
	double best = 1e30;

	for (int r = 0; r < reps; r++) {
		double t0 = now();

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a, (int)n, b,
			    (int)n, 0.0f, c, (int)n);
		double t = now() - t0;

		if (t < best)
			best = t;
	}
	return best;
}

static int run_case(uint32_t n, bool f32, double blas_gflops, const float *fa, const float *fb, const float *fref)
{
	struct tnpu_config cfg;
	struct tsim s;
	struct tcb cb;
	struct tnpu_result res;
	struct tgemm g = { .m = n, .n = n, .k = n, .f32 = f32, .tm = 32, .tn = 16, .kt = f32 ? 128 : 256,
			   .pipelined = true };
	uint32_t e = f32 ? 4 : 1;
	double best = 1e30;
	bool ok = true;
	uint64_t seed = 42;
	int reps = n <= 512 ? 5 : 3;

	tnpu_config_default(&cfg);
	if (tsim_init(&s, &cfg, (uint64_t)n * n * (2 * e + 4) + (64ull << 20))) {
		fprintf(stderr, "bench-core: cannot allocate the simulator\n");
		return 1;
	}
	g.a = tsim_buf(&s, (uint64_t)n * n * e);
	g.b = tsim_buf(&s, (uint64_t)n * n * e);
	g.c = tsim_buf(&s, (uint64_t)n * n * 4);
	if (f32) {
		memcpy(tsim_ptr(&s, g.a), fa, (size_t)n * n * 4);
		memcpy(tsim_ptr(&s, g.b), fb, (size_t)n * n * 4);
	} else {
		int8_t *a = tsim_ptr(&s, g.a), *b = tsim_ptr(&s, g.b);

		for (size_t i = 0; i < (size_t)n * n; i++) {
			a[i] = (int8_t)rng(&seed);
			b[i] = (int8_t)rng(&seed);
		}
	}
	tcb_init(&cb);
	if (tgemm_build(&g, &cfg, &cb)) {
		fprintf(stderr, "bench-core: shape %u does not fit the default geometry\n", n);
		return 1;
	}
	for (int r = 0; r < reps; r++) {
		double t0 = now();

		tsim_run(&s, &cb, 0, &res);
		double t = now() - t0;

		if (res.error) {
			fprintf(stderr, "bench-core: job failed: %s\n", tnpu_err_name(res.error));
			return 1;
		}
		if (t < best)
			best = t;
	}
	/* Verify. */
	if (f32) {
		const float *c = tsim_ptr(&s, g.c);

		for (size_t i = 0; i < (size_t)n * n && ok; i++)
			ok = fabsf(c[i] - fref[i]) <= 1e-3f * (1.0f + fabsf(fref[i]));
	} else {
		const int8_t *a = tsim_ptr(&s, g.a), *b = tsim_ptr(&s, g.b);
		const int32_t *c = tsim_ptr(&s, g.c);
		uint64_t vs = 7;

		/* 4096 random elements against an exact int32 dot product. */
		for (int t = 0; t < 4096 && ok; t++) {
			uint32_t i = (uint32_t)(rng(&vs) % n), j = (uint32_t)(rng(&vs) % n);
			int32_t sum = 0;

			for (uint32_t p = 0; p < n; p++)
				sum += (int32_t)a[(size_t)i * n + p] * b[(size_t)p * n + j];
			ok = sum == c[(size_t)i * n + j];
		}
	}
	{
		double ops = 2.0 * n * n * n;
		uint64_t pes = (uint64_t)cfg.rows * cfg.cols * cfg.pes;
		double rate = f32 ? TNPU_RATE_MAC_FP32 : TNPU_RATE_MAC_INT8;
		double ideal = (double)res.counters[TNPU_CNT_MACS_DENSE] / (pes * rate);
		double total = (double)res.counters[TNPU_CNT_TOTAL_CYCLES];
		double gops = ops / best / 1e9;

		printf("{\"op\":\"gemm\",\"dtype\":\"%s\",\"m\":%u,\"n\":%u,\"k\":%u,\"model_gops\":%.2f,"
		       "\"openblas_gflops\":%.2f,\"ratio\":%.3f,\"pe_utilization\":%.4f,\"verified\":%s,"
		       "\"seconds\":%.4f,\"model_cycles\":%llu,\"ideal_mac_cycles\":%.0f,"
		       "\"modeled_tops\":%.3f,\"kernel_isa\":\"%s\"}\n",
		       f32 ? "fp32" : "int8", n, n, n, gops, blas_gflops, gops / blas_gflops, ideal / total,
		       ok ? "true" : "false", best, (unsigned long long)res.counters[TNPU_CNT_TOTAL_CYCLES], ideal,
		       ops / (total / (cfg.clock_mhz * 1e6)) / 1e12, tnpu_kern_isa());
		fflush(stdout);
	}
	tcb_free(&cb);
	tsim_fini(&s);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	uint32_t sizes[8] = { 512, 1024 };
	int nsizes = 2, rc = 0;

	if (argc > 1) {
		nsizes = 0;
		for (int i = 1; i < argc && nsizes < 8; i++)
			sizes[nsizes++] = (uint32_t)strtoul(argv[i], NULL, 0);
	}
	openblas_set_num_threads(1);
	for (int i = 0; i < nsizes; i++) {
		uint32_t n = sizes[i];
		float *a = malloc((size_t)n * n * 4), *b = malloc((size_t)n * n * 4), *c = malloc((size_t)n * n * 4);
		uint64_t seed = 1;
		double t, gf;

		for (size_t j = 0; j < (size_t)n * n; j++) {
			a[j] = (float)((int)(rng(&seed) % 2001) - 1000) / 1000.0f;
			b[j] = (float)((int)(rng(&seed) % 2001) - 1000) / 1000.0f;
		}
		t = best_openblas(n, a, b, c, n <= 512 ? 5 : 3);
		gf = 2.0 * n * n * n / t / 1e9;
		rc |= run_case(n, true, gf, a, b, c);
		rc |= run_case(n, false, gf, NULL, NULL, NULL);
		free(a);
		free(b);
		free(c);
	}
	return rc;
}
