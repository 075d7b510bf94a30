/* SPDX-License-Identifier: MIT */
/*
 * accel-bench sparse [--json] [--device PATH|sim] [--m M --n N --k K] [--zeros F,...]: sparse (#8)
 * zero-skipping benchmark.  For 0/50/75/90 % zero weights (or the --zeros fractions), the same int8 layer C = A x W runs through the dense
 * path (accel_gemm) and the sparse path (packed (value, index) weights + LB, accel_sparse_gemm);
 * both are checked against a CPU reference.  One JSON object per case; speedup = dense_cycles /
 * sparse_cycles in model cycles (job total_cycles).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "subcommands.h"

int bench_sparse_main(int argc, char **argv);

static uint64_t rng_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static const char *route_name(enum accel_route r)
{
	return r == ACCEL_ROUTE_SPARSE ? "sparse" : r == ACCEL_ROUTE_ZSKIP ? "zskip" : "dense";
}

static int run_case(struct accel_dev *dev, uint32_t M, uint32_t N, uint32_t K, double zf, bool json)
{
	struct accel_buffer *ba = NULL, *bw = NULL, *bc = NULL, *bs = NULL;
	struct accel_tensor ta, tw, tc, ts;
	struct accel_sparse_weights *sw = NULL;
	struct accel_job *job = NULL;
	struct accel_counters cd, cs;
	struct accel_sparse_info si;
	struct accel_route_info ri;
	uint64_t seed = 0x5eed0008u + (uint64_t)(zf * 1000);
	int8_t *a, *w;
	int32_t *ref = NULL;
	bool ok = true;
	int ret;

	if ((ret = accel_buffer_alloc(dev, (uint64_t)M * K, &ba)) || (ret = accel_buffer_alloc(dev, (uint64_t)K * N, &bw)) ||
	    (ret = accel_buffer_alloc(dev, (uint64_t)M * N * 4, &bc)) ||
	    (ret = accel_buffer_alloc(dev, (uint64_t)M * N * 4, &bs)))
		goto out;
	if ((ret = accel_tensor_2d(ba, 0, ACCEL_INT8, M, K, &ta)) ||
	    (ret = accel_tensor_2d(bw, 0, ACCEL_INT8, K, N, &tw)) ||
	    (ret = accel_tensor_2d(bc, 0, ACCEL_INT32, M, N, &tc)) ||
	    (ret = accel_tensor_2d(bs, 0, ACCEL_INT32, M, N, &ts)))
		goto out;
	a = accel_buffer_ptr(ba);
	w = accel_buffer_ptr(bw);
	for (uint64_t i = 0; i < (uint64_t)M * K; i++)
		a[i] = (int8_t)((int)(rng_next(&seed) % 255) - 127);
	for (uint64_t i = 0; i < (uint64_t)K * N; i++) {
		int v = (int)(rng_next(&seed) % 254) + 1;	/* 1..254 -> -127..127 without 0 */

		w[i] = (double)(rng_next(&seed) % 1000000) / 1e6 < zf ? 0 : (int8_t)(v <= 127 ? v : 127 - v);
	}
	/* CPU reference (independent of the device path). */
	ref = calloc((size_t)M * N, sizeof(*ref));
	if (!ref) {
		ret = -12;
		goto out;
	}
	for (uint32_t i = 0; i < M; i++)
		for (uint32_t k = 0; k < K; k++) {
			int32_t x = a[(size_t)i * K + k];

			if (!x)
				continue;
			for (uint32_t n = 0; n < N; n++)
				ref[(size_t)i * N + n] += x * w[(size_t)k * N + n];
		}
	{
		struct accel_gemm_desc d = { .a = &ta, .b = &tw, .c = &tc };

		if ((ret = accel_gemm(dev, &d, NULL, &job)) || (ret = accel_job_wait(job, -1)) ||
		    (ret = accel_job_counters(job, &cd)))
			goto out;
		accel_job_free(job);
		job = NULL;
	}
	if ((ret = accel_sparse_pack(dev, &tw, false, 0, &sw)) || (ret = accel_sparse_info(sw, &si)))
		goto out;
	{
		struct accel_sparse_gemm_desc d = { .a = &ta, .c = &ts, .w = sw, .flags = ACCEL_SPARSE_LB };

		if ((ret = accel_sparse_gemm(dev, &d, NULL, &job)) || (ret = accel_job_wait(job, -1)) ||
		    (ret = accel_job_counters(job, &cs)))
			goto out;
	}
	ok = !memcmp(accel_buffer_ptr(bc), ref, (size_t)M * N * 4) && !memcmp(accel_buffer_ptr(bs), ref, (size_t)M * N * 4);
	{
		/* What the dispatcher picks for this layer (result checked too). */
		struct accel_gemm_desc d = { .a = &ta, .b = &tw, .c = &ts };

		memset(accel_buffer_ptr(bs), 0, (size_t)M * N * 4);
		if ((ret = accel_auto_gemm(dev, &d, sw, NULL, NULL, &ri)))
			goto out;
		ok = ok && !memcmp(accel_buffer_ptr(bs), ref, (size_t)M * N * 4);
	}
	if (json)
		printf("{\"bench\":\"sparse\",\"layer\":\"gemm\",\"m\":%u,\"n\":%u,\"k\":%u,\"dtype\":\"int8\","
		       "\"zero_fraction\":%.2f,\"weight_density\":%.4f,\"dense_cycles\":%llu,\"sparse_cycles\":%llu,"
		       "\"speedup\":%.3f,\"macs_dense\":%llu,\"macs_effective\":%llu,\"packed_bytes\":%llu,"
		       "\"dense_bytes\":%llu,\"auto_route\":\"%s\",\"verified\":%s}\n",
		       M, N, K, zf, si.density, (unsigned long long)cd.total_cycles, (unsigned long long)cs.total_cycles,
		       (double)cd.total_cycles / (double)cs.total_cycles, (unsigned long long)cs.macs_dense,
		       (unsigned long long)cs.macs_effective, (unsigned long long)si.packed_bytes,
		       (unsigned long long)si.dense_bytes, route_name(ri.route), ok ? "true" : "false");
	else
		printf("zeros %3.0f%%: dense %llu cycles, sparse %llu cycles, speedup %.2fx, auto route %s, %s\n",
		       zf * 100, (unsigned long long)cd.total_cycles, (unsigned long long)cs.total_cycles,
		       (double)cd.total_cycles / (double)cs.total_cycles, route_name(ri.route),
		       ok ? "verified" : "MISMATCH");
out:
	if (ret)
		fprintf(stderr, "accel-bench sparse: %s (%s)\n", accel_strerror(ret), accel_last_error(dev));
	accel_job_free(job);
	accel_sparse_free(sw);
	free(ref);
	accel_buffer_free(ba);
	accel_buffer_free(bw);
	accel_buffer_free(bc);
	accel_buffer_free(bs);
	return ret ? 1 : (ok ? 0 : 1);
}

int bench_sparse_main(int argc, char **argv)
{
	double zfs[16] = { 0.0, 0.5, 0.75, 0.9 };
	unsigned nz = 4;
	const char *path = "sim";
	uint32_t M = 1024, N = 512, K = 1024;
	struct accel_dev *dev;
	char msg[256];
	bool json = false;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--m") && i + 1 < argc)
			M = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			N = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--k") && i + 1 < argc)
			K = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--zeros") && i + 1 < argc) {
			char *p = argv[++i], *end;

			for (nz = 0; nz < 16 && *p; p = *end ? end + 1 : end) {
				zfs[nz] = strtod(p, &end);
				if (end == p || zfs[nz] < 0 || zfs[nz] > 1) {
					fprintf(stderr, "accel-bench sparse: --zeros takes fractions 0..1, comma separated\n");
					return 2;
				}
				nz++;
			}
		}
		else {
			fprintf(stderr, "accel-bench sparse: %s: unknown option or missing value\n", argv[i]);
			fprintf(stderr, "usage: accel-bench sparse [--json] [--device PATH|sim] [--m M --n N --k K] "
					"[--zeros F,F,...]\n");
			return 2;
		}
	}
	if (!M || !N || !K) {
		fprintf(stderr, "accel-bench sparse: --m/--n/--k must be >= 1\n");
		return 2;
	}
	if (accel_open_msg(path, msg, sizeof(msg), &dev)) {
		fprintf(stderr, "accel-bench sparse: cannot open %s: %s\n", path, msg);
		return 1;
	}
	if (!nz) {
		fprintf(stderr, "accel-bench sparse: --zeros needs at least one fraction\n");
		return 2;
	}
	for (unsigned i = 0; i < nz; i++)
		rc |= run_case(dev, M, N, K, zfs[i], json);
	accel_close(dev);
	return rc;
}
