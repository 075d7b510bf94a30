/* SPDX-License-Identifier: MIT */
/*
 * Microbenchmark: GFLOP/s (GOPS for int8, 2 ops per MAC) of every kernel on
 * every ISA variant this CPU supports, against single-threaded OpenBLAS
 * cblas_sgemm (same layout; int8 is compared with sgemm "nn").
 *
 * The machine is shared, so each kernel is timed in alternation with its
 * OpenBLAS reference and the best time of each is kept: load changes hit both
 * sides and the printed ratio stays meaningful.
 *   usage: kbench [size...]      (default: 512 1024)
 *          kbench --conv           the fp32 paths on ResNet-18's GEMM calls in the model (below)
 *          kbench --isa            prints the variant the dispatcher picks here (after TNPU_KERN_ISA)
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kern_internal.h"

enum op {
	OP_BLAS_NN, OP_BLAS_NT,
	OP_F32_NN, OP_F32_NT, OP_I8_NN, OP_I8_NT,
	OP_F32_NN_TILED, OP_I8_NN_TILED,	/* n^3 issued as tile^3 calls */
};

struct bench {
	size_t n, tile;
	float *af, *bf, *cf;
	int8_t *ai, *bi;
	int32_t *ci;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The golden model calls the kernels once per accelerator tile: C tiles are
 * accumulated over the k tiles, as a model walking the k loop would. */
static void run_tiled(const struct bench *b, bool i8)
{
	size_t n = b->n, t = b->tile;
	for (size_t i0 = 0; i0 < n; i0 += t)
		for (size_t j0 = 0; j0 < n; j0 += t)
			for (size_t p0 = 0; p0 < n; p0 += t) {
				if (i8)
					tnpu_kern_gemm_i8_nn(t, t, t, b->ai + i0 * n + p0, n,
							     b->bi + p0 * n + j0, n,
							     b->ci + i0 * n + j0, n, p0 > 0);
				else
					tnpu_kern_gemm_f32_nn(t, t, t, b->af + i0 * n + p0, n,
							      b->bf + p0 * n + j0, n,
							      b->cf + i0 * n + j0, n, p0 > 0);
			}
}

static void run(enum op op, const struct bench *b)
{
	size_t n = b->n;
	int ni = (int)n;

	switch (op) {
	case OP_BLAS_NN:
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, b->af, ni,
			    b->bf, ni, 0.0f, b->cf, ni);
		break;
	case OP_BLAS_NT:
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ni, ni, ni, 1.0f, b->af, ni,
			    b->bf, ni, 0.0f, b->cf, ni);
		break;
	case OP_F32_NN:
		tnpu_kern_gemm_f32_nn(n, n, n, b->af, n, b->bf, n, b->cf, n, false);
		break;
	case OP_F32_NT:
		tnpu_kern_gemm_f32_nt(n, n, n, b->af, n, b->bf, n, b->cf, n, false);
		break;
	case OP_I8_NN:
		tnpu_kern_gemm_i8_nn(n, n, n, b->ai, n, b->bi, n, b->ci, n, false);
		break;
	case OP_I8_NT:
		tnpu_kern_gemm_i8_nt(n, n, n, b->ai, n, b->bi, n, b->ci, n, false);
		break;
	case OP_F32_NN_TILED:
		run_tiled(b, false);
		break;
	case OP_I8_NN_TILED:
		run_tiled(b, true);
		break;
	}
}

/* Alternates op and ref for >= 0.4 s and >= 5 rounds; best time of each. */
static void race(enum op op, enum op ref, const struct bench *b, double *t_op, double *t_ref)
{
	double start = now();

	*t_op = *t_ref = 1e30;
	for (int r = 0; r < 5 || now() - start < 0.4; r++) {
		double t = now();
		run(ref, b);
		t = now() - t;
		if (t < *t_ref)
			*t_ref = t;
		t = now();
		run(op, b);
		t = now() - t;
		if (t < *t_op)
			*t_op = t;
	}
}

static void report(const struct bench *b, const char *isa, const char *what, enum op op,
		   enum op ref)
{
	double gops = 2.0 * (double)b->n * (double)b->n * (double)b->n * 1e-9;
	double t_op, t_ref;

	race(op, ref, b, &t_op, &t_ref);
	printf("%5zu^3  %-10s %-22s %7.1f %s   openblas %-2s %6.1f GFLOP/s   ratio %.2f\n", b->n,
	       isa, what, gops / t_op, op == OP_I8_NN || op == OP_I8_NT || op == OP_I8_NN_TILED
					     ? "GOPS  " : "GFLOP/s",
	       ref == OP_BLAS_NN ? "nn" : "nt", gops / t_ref, t_ref / t_op);
}

static void bench(size_t n, const char *default_isa)
{
	static const char *const isas[] = { "avx512vnni", "avx512", "avxvnni", "avx2", "generic" };
	struct bench b = { .n = n };

	b.af = aligned_alloc(64, n * n * sizeof(float));
	b.bf = aligned_alloc(64, n * n * sizeof(float));
	b.cf = aligned_alloc(64, n * n * sizeof(float));
	b.ai = aligned_alloc(64, n * n);
	b.bi = aligned_alloc(64, n * n);
	b.ci = aligned_alloc(64, n * n * sizeof(int32_t));
	if (!b.af || !b.bf || !b.cf || !b.ai || !b.bi || !b.ci) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	srand(1);
	for (size_t i = 0; i < n * n; i++) {
		b.af[i] = (float)rand() / (float)RAND_MAX - 0.5f;
		b.bf[i] = (float)rand() / (float)RAND_MAX - 0.5f;
		b.ai[i] = (int8_t)(rand() & 0xff);
		b.bi[i] = (int8_t)(rand() & 0xff);
	}

	for (size_t v = 0; v < sizeof(isas) / sizeof(isas[0]); v++) {
		if (!tnpu_kern_force_isa(isas[v]))
			continue;
		if (n > 512 && !strcmp(isas[v], "generic"))
			continue;	/* too slow to be interesting */
		report(&b, isas[v], "f32 nn", OP_F32_NN, OP_BLAS_NN);
		report(&b, isas[v], "f32 nt", OP_F32_NT, OP_BLAS_NT);
		report(&b, isas[v], "i8 nn", OP_I8_NN, OP_BLAS_NN);
		report(&b, isas[v], "i8 nt", OP_I8_NT, OP_BLAS_NN);
	}

	tnpu_kern_force_isa(default_isa);
	static const size_t tiles[] = { 32, 64, 128, 256 };
	for (size_t ti = 0; ti < sizeof(tiles) / sizeof(tiles[0]); ti++) {
		char what[64];
		b.tile = tiles[ti];
		if (n % b.tile)
			continue;
		snprintf(what, sizeof(what), "f32 nn as %zu^3 calls", b.tile);
		report(&b, default_isa, what, OP_F32_NN_TILED, OP_BLAS_NN);
		snprintf(what, sizeof(what), "i8 nn as %zu^3 calls", b.tile);
		report(&b, default_isa, what, OP_I8_NN_TILED, OP_BLAS_NN);
	}
	free(b.af), free(b.bf), free(b.cf), free(b.ai), free(b.bi), free(b.ci);
}

/* ---- kbench --conv: the shapes ResNet-18 (NHWC, direct convolution) gives the kernels ---------------- */

struct conv_shape {
	bool nt;
	size_t m, n, k, lda, ldb, calls;	/* calls: how often one inference makes this call */
};

/* From the sim backend running tools/bench-vs-torch's ResNet-18 (batch 1): a tap of a direct
 * convolution is tm output pixels x (PEs x channels) x C, A a strided window of the image, B a tap of
 * the OHWI weights; the wide ones are IM2COL-lowered layers. */
static const struct conv_shape conv_shapes[] = {
	{ true, 14, 16, 256, 256, 2304, 4608 }, { true, 56, 16, 64, 64, 576, 4032 },
	{ true, 28, 32, 128, 128, 1152, 2016 }, { true, 64, 16, 576, 576, 576, 392 },
	{ true, 112, 16, 3, 6, 147, 21952 },    { true, 7, 16, 256, 512, 2304, 2304 },
	{ true, 14, 16, 128, 256, 1152, 2016 }, { true, 28, 32, 64, 128, 576, 1008 },
	{ true, 784, 32, 64, 64, 64, 72 },      { true, 196, 64, 256, 256, 256, 36 },
	{ true, 52, 128, 256, 256, 256, 216 },
};

typedef void (*f32_path_fn)(const struct conv_shape *s, const float *a, const float *b, float *c);

#if defined(__x86_64__)
static void path_packed(const struct conv_shape *s, const float *a, const float *b, float *c)
{
	struct kern_f32_impl im = kern_f32_avx512;

	im.small_k = NULL;
	im.direct = NULL;
	kern_gemm_f32(&im, s->nt, s->m, s->n, s->k, a, s->lda, b, s->ldb, c, s->n, true);
}

static void path_small_k(const struct conv_shape *s, const float *a, const float *b, float *c)
{
	struct kern_f32_impl im = kern_f32_avx512;

	im.direct = NULL;
	kern_gemm_f32(&im, s->nt, s->m, s->n, s->k, a, s->lda, b, s->ldb, c, s->n, true);
}

static void path_direct(const struct conv_shape *s, const float *a, const float *b, float *c)
{
	kern_gemm_f32_direct_avx512(s->nt, s->m, s->n, s->k, a, s->lda, b, s->ldb, c, s->n, true);
}
#endif

/* One inference's calls of shape s, best of rounds alternated with the other paths. */
static void conv_bench(void)
{
#if defined(__x86_64__)
	static const struct {
		const char *name;
		f32_path_fn fn;
	} paths[] = { { "packed", path_packed }, { "small-k", path_small_k }, { "A-direct", path_direct } };
	double total[3] = { 0, 0, 0 };

	if (!tnpu_kern_isa_supported("avx512")) {
		printf("kbench --conv: needs AVX-512\n");
		return;
	}
	printf("%-34s %22s %22s %22s\n", "one inference's calls (fp32)", "packed", "small-k (k <= 8)", "A-direct");
	for (size_t i = 0; i < sizeof(conv_shapes) / sizeof(conv_shapes[0]); i++) {
		const struct conv_shape *s = &conv_shapes[i];
		size_t an = s->m * s->lda + s->k, bn = (s->nt ? s->n : s->k) * s->ldb + s->n;
		float *a = malloc(an * sizeof(float)), *b = malloc(bn * sizeof(float)), *c = calloc(s->m * s->n, sizeof(float));
		double best[3] = { 1e30, 1e30, 1e30 }, gf = 2.0 * (double)(s->m * s->n * s->k * s->calls) * 1e-9;
		char what[64];

		if (!a || !b || !c) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		for (size_t j = 0; j < an; j++)
			a[j] = (float)rand() / (float)RAND_MAX - 0.5f;
		for (size_t j = 0; j < bn; j++)
			b[j] = (float)rand() / (float)RAND_MAX - 0.5f;
		for (int r = 0; r < 5; r++)
			for (size_t p = 0; p < 3; p++) {
				double t = now();

				for (size_t call = 0; call < s->calls; call++)
					paths[p].fn(s, a, b, c);
				t = now() - t;
				best[p] = t < best[p] ? t : best[p];
			}
		snprintf(what, sizeof(what), "%s %zux%zux%zu lda %zu ldb %zu x%zu", s->nt ? "nt" : "nn", s->m, s->n,
			 s->k, s->lda, s->ldb, s->calls);
		printf("%-34s", what);
		for (size_t p = 0; p < 3; p++) {
			printf(" %7.2f ms %5.1f GF/s", best[p] * 1e3, gf / best[p]);
			total[p] += best[p];
		}
		printf("\n");
		free(a), free(b), free(c);
	}
	printf("%-34s", "total");
	for (size_t p = 0; p < 3; p++)
		printf(" %7.2f ms %-10s", total[p] * 1e3, paths[p].name);
	printf("\n");
#else
	printf("kbench --conv: x86-64 only\n");
#endif
}

int main(int argc, char **argv)
{
	const char *default_isa = tnpu_kern_isa();

	openblas_set_num_threads(1);
	if (argc > 1 && !strcmp(argv[1], "--isa")) {
		/* the variant this host runs (after TNPU_KERN_ISA): make check names it per stage */
		printf("%s\n", default_isa);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--conv")) {
		conv_bench();
		return 0;
	}
	printf("dispatcher default: %s\n", default_isa);
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			bench((size_t)strtoul(argv[i], NULL, 0), default_isa);
	} else {
		bench(512, default_isa);
		bench(1024, default_isa);
	}
	return 0;
}
