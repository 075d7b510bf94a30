/* SPDX-License-Identifier: MIT */
/*
 * accel-bench islands: a small graph with independent branches on a heterogeneous device
 * (chain #9, Documentation/chaining.md):
 *     H  = requant(X·W1)  int8  -> O1 = H·W2 (chained to H)      branch 1
 *     O2 = Y·V            fp32                                   branch 2
 *     O3 = Z·W3           int8                                   branch 3
 * placed by the scheduler on the islands of --device (default sim:islands=2:i8/2:all: an int8-only
 * island and an all-dtype island).  single_island_cycles: the same graph on a sim device of the
 * same geometry as one island.  occupancy[i]: busy cycles of island i's rows / (rows x makespan).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "subcommands.h"

#define NB 11

struct isl_run {
	struct accel_dev *dev;
	struct accel_buffer *b[NB];
	struct accel_tensor t[NB];
	struct accel_graph *g;
	uint64_t cycles;
	double occ[ACCEL_MAX_ISLANDS];
	int island[4];
	unsigned n_islands;
	bool ok, have_occ;
};

static uint64_t xrng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

enum { X, W1, H, W2, O1, Y, V, O2, Z, W3, O3 };

static int8_t requant(int32_t x, int32_t mult, unsigned shift)
{
	int64_t v = ((int64_t)x * mult + ((int64_t)1 << (shift - 1))) >> shift;

	return (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
}

static bool verify(struct isl_run *r, uint32_t m, uint32_t k, uint32_t n, int32_t mult, uint8_t shift)
{
	const int8_t *x = accel_buffer_ptr(r->b[X]), *w1 = accel_buffer_ptr(r->b[W1]), *w2 = accel_buffer_ptr(r->b[W2]);
	const int8_t *z = accel_buffer_ptr(r->b[Z]), *w3 = accel_buffer_ptr(r->b[W3]);
	const float *y = accel_buffer_ptr(r->b[Y]), *v = accel_buffer_ptr(r->b[V]), *o2 = accel_buffer_ptr(r->b[O2]);
	const int32_t *o1 = accel_buffer_ptr(r->b[O1]), *o3 = accel_buffer_ptr(r->b[O3]);
	int8_t *h = malloc(n);
	bool ok = h != NULL;

	for (uint32_t i = 0; i < m && ok; i++) {
		for (uint32_t j = 0; j < n; j++) {
			int32_t s = 0, s3 = 0;
			float f = 0;

			for (uint32_t q = 0; q < k; q++) {
				s += x[(size_t)i * k + q] * w1[(size_t)q * n + j];
				s3 += z[(size_t)i * k + q] * w3[(size_t)q * n + j];
				f += y[(size_t)i * k + q] * v[(size_t)q * n + j];
			}
			h[j] = requant(s, mult, shift);
			/* small integers: every fp32 partial sum is exact, so the order does not matter */
			ok = ok && o3[(size_t)i * n + j] == s3 && o2[(size_t)i * n + j] == f;
		}
		for (uint32_t j = 0; j < n && ok; j++) {
			int32_t s = 0;

			for (uint32_t q = 0; q < n; q++)
				s += h[q] * w2[(size_t)q * n + j];
			ok = o1[(size_t)i * n + j] == s;
		}
	}
	free(h);
	return ok;
}

static int run_graph(struct isl_run *r, const char *dev_path, uint32_t m, uint32_t k, uint32_t n)
{
	static const struct { uint32_t rows, cols; enum accel_dtype dt; } shp[NB] = {
		[X] = { 0, 1, ACCEL_INT8 }, [W1] = { 1, 2, ACCEL_INT8 }, [H] = { 0, 2, ACCEL_INT8 },
		[W2] = { 2, 2, ACCEL_INT8 }, [O1] = { 0, 2, ACCEL_INT32 }, [Y] = { 0, 1, ACCEL_FP32 },
		[V] = { 1, 2, ACCEL_FP32 }, [O2] = { 0, 2, ACCEL_FP32 }, [Z] = { 0, 1, ACCEL_INT8 },
		[W3] = { 1, 2, ACCEL_INT8 }, [O3] = { 0, 2, ACCEL_INT32 },
	};
	uint32_t dim[3] = { m, k, n };
	struct accel_gemm_desc d[4];
	struct accel_graph_opts go = { .island = -1 };
	struct accel_counters cnt;
	struct accel_island isl[ACCEL_MAX_ISLANDS];
	struct accel_job *j = NULL;
	uint64_t busy[16], seed = 7;
	int32_t mult;
	uint8_t shift;
	unsigned node;
	int ret;

	ret = accel_open(dev_path, &r->dev);
	if (ret)
		return ret;
	for (unsigned i = 0; i < NB; i++) {
		uint32_t rows = dim[shp[i].rows], cols = dim[shp[i].cols];
		size_t e = accel_dtype_size(shp[i].dt);

		ret = accel_buffer_alloc(r->dev, (uint64_t)rows * cols * e, &r->b[i]);
		if (ret)
			return ret;
		ret = accel_tensor_2d(r->b[i], 0, shp[i].dt, rows, cols, &r->t[i]);
		if (ret)
			return ret;
		for (uint64_t q = 0; q < (uint64_t)rows * cols; q++) {
			if (shp[i].dt == ACCEL_FP32)
				((float *)accel_buffer_ptr(r->b[i]))[q] = (float)((int)(xrng(&seed) % 7) - 3);
			else if (shp[i].dt == ACCEL_INT8)
				((int8_t *)accel_buffer_ptr(r->b[i]))[q] = (int8_t)xrng(&seed);
		}
	}
	accel_quant_from_scale(1.0 / (64.0 * k), &mult, &shift);
	memset(d, 0, sizeof(d));
	d[0] = (struct accel_gemm_desc){ .a = &r->t[X], .b = &r->t[W1], .c = &r->t[H] };
	d[0].epi.multiplier = mult;
	d[0].epi.shift = shift;
	d[1] = (struct accel_gemm_desc){ .a = &r->t[H], .b = &r->t[W2], .c = &r->t[O1] };
	d[2] = (struct accel_gemm_desc){ .a = &r->t[Y], .b = &r->t[V], .c = &r->t[O2] };
	d[3] = (struct accel_gemm_desc){ .a = &r->t[Z], .b = &r->t[W3], .c = &r->t[O3] };
	if ((ret = accel_graph_new(r->dev, &r->g)))
		return ret;
	for (unsigned i = 0; i < 4; i++)
		if ((ret = accel_graph_gemm(r->g, &d[i], &node)))
			return ret;
	r->have_occ = !accel_trace_begin(r->dev);
	if ((ret = accel_graph_run(r->g, &go, NULL, &j)) || (ret = accel_job_wait(j, -1)) ||
	    (ret = accel_job_counters(j, &cnt))) {
		accel_job_free(j);
		return ret;
	}
	accel_job_free(j);
	r->cycles = cnt.total_cycles;
	accel_query_islands(r->dev, isl, ACCEL_MAX_ISLANDS, &r->n_islands);
	if (r->have_occ) {
		accel_trace_end(r->dev);
		r->have_occ = !accel_trace_row_busy(r->dev, busy, 16);
		for (unsigned i = 0; i < r->n_islands && r->have_occ; i++) {
			uint64_t s = 0;

			for (unsigned q = 0; q < isl[i].rows; q++)
				s += busy[isl[i].first_row + q];
			r->occ[i] = (double)s / ((double)isl[i].rows * (double)r->cycles);
		}
	}
	for (unsigned i = 0; i < 4; i++) {
		struct accel_graph_node_info ni;

		accel_graph_node_info(r->g, i, &ni);
		r->island[i] = ni.island;
	}
	r->ok = verify(r, m, k, n, mult, shift);
	return 0;
}

/* "sim:rows=..,cols=..,..[,islands=R:dt:clk/...]" of dev's geometry (with its islands or as one). */
static void sim_spec(struct accel_dev *dev, const struct accel_caps *caps, char *out, size_t len, bool islands)
{
	struct accel_island isl[ACCEL_MAX_ISLANDS];
	unsigned ni = 0, rows = 0;
	size_t o;

	accel_query_islands(dev, isl, ACCEL_MAX_ISLANDS, &ni);
	for (unsigned i = 0; i < ni && i < ACCEL_MAX_ISLANDS; i++)
		rows += isl[i].rows;
	o = (size_t)snprintf(out, len, "sim:rows=%u,cols=%u,pes=%u,sram=%u,clock=%u", rows, caps->cols, caps->pes,
			     caps->sram_bytes, caps->clock_mhz);
	for (unsigned i = 0; islands && ni > 1 && i < ni && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s%u:%s%s%s:%u", i ? "/" : ",islands=", isl[i].rows,
				      isl[i].dtypes & ACCEL_ISLAND_INT8 ? "i8" : "",
				      isl[i].dtypes & ACCEL_ISLAND_FP32 ? (isl[i].dtypes & 1 ? "+f32" : "f32") : "",
				      isl[i].dtypes & ACCEL_ISLAND_BF16 ? (isl[i].dtypes & 3 ? "+bf16" : "bf16") : "",
				      isl[i].clkdiv);
}

static void run_free(struct isl_run *r)
{
	accel_graph_free(r->g);
	for (unsigned i = 0; i < NB; i++)
		accel_buffer_free(r->b[i]);
	accel_close(r->dev);
}

int bench_islands_main(int argc, char **argv)
{
	const char *device = "sim:islands=2:i8/2:all";
	uint32_t m = 256, k = 128, n = 128;
	struct isl_run het, one;
	struct accel_caps caps;
	char single[256];
	bool json = false;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			device = argv[++i];
		else if (!strcmp(argv[i], "--m") && i + 1 < argc)
			m = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--k") && i + 1 < argc)
			k = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = (uint32_t)strtoul(argv[++i], NULL, 0);
		else {
			fprintf(stderr, "accel-bench islands: unknown or incomplete option '%s'\n", argv[i]);
			return 2;
		}
	}
	if (!m || !k || !n) {
		fprintf(stderr, "accel-bench islands: --m, --k, --n must be >= 1\n");
		return 2;
	}
	memset(&het, 0, sizeof(het));
	memset(&one, 0, sizeof(one));
	ret = run_graph(&het, device, m, k, n);
	if (ret) {
		fprintf(stderr, "accel-bench islands: %s: %s: %s\n", device, accel_strerror(ret),
			het.dev ? accel_last_error(het.dev) : "");
		run_free(&het);
		return 1;
	}
	accel_query_caps(het.dev, &caps);
	if (!het.have_occ) {
		/* A device cannot record timelines: occupancy from the same graph on an in-process sim of the
		 * device's geometry and islands (the model the device runs, so the same timeline). */
		struct isl_run mirror;
		char spec[256];

		memset(&mirror, 0, sizeof(mirror));
		sim_spec(het.dev, &caps, spec, sizeof(spec), true);
		if (!run_graph(&mirror, spec, m, k, n) && mirror.have_occ && mirror.cycles == het.cycles) {
			memcpy(het.occ, mirror.occ, sizeof(het.occ));
			het.have_occ = true;
			fprintf(stderr, "accel-bench islands: occupancy recorded on %s\n", spec);
		}
		run_free(&mirror);
	}
	sim_spec(het.dev, &caps, single, sizeof(single), false);
	ret = run_graph(&one, single, m, k, n);
	if (ret) {
		fprintf(stderr, "accel-bench islands: %s: %s: %s\n", single, accel_strerror(ret),
			one.dev ? accel_last_error(one.dev) : "");
		run_free(&het);
		run_free(&one);
		return 1;
	}
	if (json) {
		printf("{\"bench\":\"islands\",\"device\":\"%s\",\"m\":%u,\"k\":%u,\"n\":%u,\"islands\":%u,"
		       "\"makespan_cycles\":%llu,\"single_island_cycles\":%llu,\"speedup\":%.3f,\"occupancy\":[",
		       device, m, k, n, het.n_islands, (unsigned long long)het.cycles, (unsigned long long)one.cycles,
		       (double)one.cycles / (double)het.cycles);
		for (unsigned i = 0; i < het.n_islands; i++) {
			if (het.have_occ)
				printf("%s%.4f", i ? "," : "", het.occ[i]);
			else
				printf("%snull", i ? "," : "");
		}
		printf("],\"placement\":[%d,%d,%d,%d],\"verified\":%s}\n", het.island[0], het.island[1], het.island[2],
		       het.island[3], het.ok && one.ok ? "true" : "false");
	} else {
		printf("islands (%s, %u islands): makespan %llu cycles, one island %llu cycles (%.2fx), placement "
		       "%d %d %d %d, %s\n",
		       device, het.n_islands, (unsigned long long)het.cycles, (unsigned long long)one.cycles,
		       (double)one.cycles / (double)het.cycles, het.island[0], het.island[1], het.island[2],
		       het.island[3], het.ok && one.ok ? "verified" : "MISMATCH");
	}
	ret = het.ok && one.ok ? 0 : 1;
	run_free(&het);
	run_free(&one);
	return ret;
}
