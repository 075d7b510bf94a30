/* SPDX-License-Identifier: MIT */
/*
 * bench-core: fp32 and int8 GEMM through the golden model on one thread vs
 * single-threaded OpenBLAS cblas_sgemm.  Prints one JSON object per case.
 * Usage: bench-core [size ...]   (default 512 1024)
 * Times are thread CPU seconds, best of several interleaved rounds.
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

/* Thread CPU time: both OpenBLAS (one thread) and the model run on this thread, so CPU
 * time compares them fairly even when other jobs share the machine (wall time does not). */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

struct mcase {
	struct tnpu_config cfg;
	struct tsim s;
	struct tcb cb;
	struct tgemm g;
	struct tnpu_result res;
	double best;
};

static int mcase_init(struct mcase *mc, uint32_t n, bool f32, const float *fa, const float *fb)
{
	uint32_t e = f32 ? 4 : 1;
	uint64_t seed = 42;

	memset(mc, 0, sizeof(*mc));
	tnpu_config_default(&mc->cfg);
	mc->g = (struct tgemm){ .m = n, .n = n, .k = n, .f32 = f32, .tm = 32, .tn = 16, .kt = f32 ? 256 : 256,
				.pipelined = true };
	mc->best = 1e30;
	if (tsim_init(&mc->s, &mc->cfg, (uint64_t)n * n * (2 * e + 4) + (64ull << 20))) {
		fprintf(stderr, "bench-core: cannot allocate the simulator\n");
		return 1;
	}
	mc->g.a = tsim_buf(&mc->s, (uint64_t)n * n * e);
	mc->g.b = tsim_buf(&mc->s, (uint64_t)n * n * e);
	mc->g.c = tsim_buf(&mc->s, (uint64_t)n * n * 4);
	if (f32) {
		memcpy(tsim_ptr(&mc->s, mc->g.a), fa, (size_t)n * n * 4);
		memcpy(tsim_ptr(&mc->s, mc->g.b), fb, (size_t)n * n * 4);
	} else {
		int8_t *a = tsim_ptr(&mc->s, mc->g.a), *b = tsim_ptr(&mc->s, mc->g.b);

		for (size_t i = 0; i < (size_t)n * n; i++) {
			a[i] = (int8_t)rng(&seed);
			b[i] = (int8_t)rng(&seed);
		}
	}
	tcb_init(&mc->cb);
	if (tgemm_build(&mc->g, &mc->cfg, &mc->cb)) {
		fprintf(stderr, "bench-core: shape %u does not fit the default geometry\n", n);
		return 1;
	}
	return 0;
}

static int mcase_run(struct mcase *mc)
{
	double t0 = now(), t;

	tsim_run(&mc->s, &mc->cb, 0, &mc->res);
	t = now() - t0;
	if (mc->res.error) {
		fprintf(stderr, "bench-core: job failed: %s\n", tnpu_err_name(mc->res.error));
		return 1;
	}
	if (t < mc->best)
		mc->best = t;
	return 0;
}

static bool mcase_verify(struct mcase *mc, const float *fref)
{
	uint32_t n = mc->g.n;
	bool ok = true;

	if (mc->g.f32) {
		const float *c = tsim_ptr(&mc->s, mc->g.c);

		for (size_t i = 0; i < (size_t)n * n && ok; i++)
			ok = fabsf(c[i] - fref[i]) <= 1e-3f * (1.0f + fabsf(fref[i]));
	} else {
		const int8_t *a = tsim_ptr(&mc->s, mc->g.a), *b = tsim_ptr(&mc->s, mc->g.b);
		const int32_t *c = tsim_ptr(&mc->s, mc->g.c);
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
	return ok;
}

static void mcase_print(struct mcase *mc, double blas_gflops, bool ok)
{
	uint32_t n = mc->g.n;
	double ops = 2.0 * n * n * n;
	uint64_t pes = (uint64_t)mc->cfg.rows * mc->cfg.cols * mc->cfg.pes;
	double rate = mc->g.f32 ? TNPU_RATE_MAC_FP32 : TNPU_RATE_MAC_INT8;
	double ideal = (double)mc->res.counters[TNPU_CNT_MACS_DENSE] / (pes * rate);
	double total = (double)mc->res.counters[TNPU_CNT_TOTAL_CYCLES];
	double gops = ops / mc->best / 1e9;

	printf("{\"op\":\"gemm\",\"dtype\":\"%s\",\"m\":%u,\"n\":%u,\"k\":%u,\"model_gops\":%.2f,"
	       "\"openblas_gflops\":%.2f,\"ratio\":%.3f,\"pe_utilization\":%.4f,\"verified\":%s,"
	       "\"seconds\":%.4f,\"model_cycles\":%llu,\"ideal_mac_cycles\":%.0f,"
	       "\"modeled_tops\":%.3f,\"kernel_isa\":\"%s\"}\n",
	       mc->g.f32 ? "fp32" : "int8", n, n, n, gops, blas_gflops, gops / blas_gflops, ideal / total,
	       ok ? "true" : "false", mc->best, (unsigned long long)mc->res.counters[TNPU_CNT_TOTAL_CYCLES], ideal,
	       ops / (total / (mc->cfg.clock_mhz * 1e6)) / 1e12, tnpu_kern_isa());
	fflush(stdout);
}

static void mcase_fini(struct mcase *mc)
{
	tcb_free(&mc->cb);
	tsim_fini(&mc->s);
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
		double tb = 1e30, gf;
		int rounds = n <= 512 ? 7 : 5;
		struct mcase mf, mi;
		bool okf, oki;

		for (size_t j = 0; j < (size_t)n * n; j++) {
			a[j] = (float)((int)(rng(&seed) % 2001) - 1000) / 1000.0f;
			b[j] = (float)((int)(rng(&seed) % 2001) - 1000) / 1000.0f;
		}
		if (mcase_init(&mf, n, true, a, b) || mcase_init(&mi, n, false, NULL, NULL))
			return 1;
		/* Interleave the three measurements so that load from other processes on a
		 * shared machine hits all of them alike; keep the best time of each. */
		for (int r = 0; r < rounds; r++) {
			double t0 = now(), t;

			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a, (int)n,
				    b, (int)n, 0.0f, c, (int)n);
			t = now() - t0;
			if (t < tb)
				tb = t;
			if (mcase_run(&mf) || mcase_run(&mi))
				return 1;
		}
		gf = 2.0 * n * n * n / tb / 1e9;
		okf = mcase_verify(&mf, c);
		oki = mcase_verify(&mi, NULL);
		mcase_print(&mf, gf, okf);
		mcase_print(&mi, gf, oki);
		rc |= !okf || !oki;
		mcase_fini(&mf);
		mcase_fini(&mi);
		free(a);
		free(b);
		free(c);
	}
	return rc;
}
