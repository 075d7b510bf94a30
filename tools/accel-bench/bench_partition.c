/* SPDX-License-Identifier: MIT */
/*
 * accel-bench partition [--json] [--device PATH|sim]: sparse (#8) load balance of seed 003's
 * partitioner.  An int8 NHWC map whose row density rises from 15 % (top) to 100 % (bottom) feeds a
 * 3x3 convolution with the activation bitmask; the map is split into one sub-map per array row,
 * once as the even grid and once sparsity-balanced (non-zero count metric).  imbalance = max / mean
 * of the rows' busy cycles (ROW_BUSY registers).  Outputs are checked against a CPU reference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel.h"
#include "subcommands.h"

int bench_partition_main(int argc, char **argv);

enum { C = 16, H = 128, W = 32, KO = 256, R = 3 };

static uint64_t rng_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static double imbalance(const uint64_t *busy, unsigned rows)
{
	uint64_t mx = 0, sum = 0;

	for (unsigned r = 0; r < rows; r++) {
		mx = busy[r] > mx ? busy[r] : mx;
		sum += busy[r];
	}
	return sum ? (double)mx * rows / (double)sum : 0.0;
}

int bench_partition_main(int argc, char **argv)
{
	const char *path = "sim";
	struct accel_dev *dev = NULL;
	struct accel_buffer *bi = NULL, *bw = NULL, *bo = NULL;
	struct accel_tensor ti, tw, to;
	struct accel_partition *pe = NULL, *pb = NULL;
	struct accel_caps caps;
	uint64_t busy_e[16], busy_b[16], seed = 0x9a27;
	int32_t *ref = NULL;
	bool json = false, ok = true;
	char msg[256];
	int8_t *in, *wt;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			path = argv[++i];
		else {
			fprintf(stderr, "accel-bench partition: %s: unknown option or missing value\n", argv[i]);
			fprintf(stderr, "usage: accel-bench partition [--json] [--device PATH|sim]\n");
			return 2;
		}
	}
	if (accel_open_msg(path, msg, sizeof(msg), &dev)) {
		fprintf(stderr, "accel-bench partition: cannot open %s: %s\n", path, msg);
		return 1;
	}
	accel_query_caps(dev, &caps);
	pe = calloc(1, sizeof(*pe));
	pb = calloc(1, sizeof(*pb));
	ref = calloc((size_t)H * W * KO, sizeof(*ref));
	if (!pe || !pb || !ref) {
		ret = -12;
		goto out;
	}
	if ((ret = accel_buffer_alloc(dev, (uint64_t)H * W * C, &bi)) || (ret = accel_buffer_alloc(dev, (uint64_t)KO * R * R * C, &bw)) ||
	    (ret = accel_buffer_alloc(dev, (uint64_t)H * W * KO * 4, &bo)))
		goto out;
	if ((ret = accel_tensor_4d(bi, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &ti)) ||
	    (ret = accel_tensor_4d(bw, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, KO, C, R, R, &tw)) ||
	    (ret = accel_tensor_4d(bo, 0, ACCEL_INT32, ACCEL_LAYOUT_NHWC, 1, KO, H, W, &to)))
		goto out;
	in = accel_buffer_ptr(bi);
	wt = accel_buffer_ptr(bw);
	for (uint32_t y = 0; y < H; y++) {
		double dens = 0.15 + 0.85 * y / (H - 1);

		for (uint32_t i = 0; i < W * C; i++) {
			int v = (int)(rng_next(&seed) % 254) + 1;

			in[(size_t)y * W * C + i] =
				(double)(rng_next(&seed) % 1000000) / 1e6 < dens ? (int8_t)(v <= 127 ? v : 127 - v) : 0;
		}
	}
	for (uint32_t i = 0; i < KO * R * R * C; i++)
		wt[i] = (int8_t)((int)(rng_next(&seed) % 255) - 127);
	/* CPU reference: 3x3, stride 1, pad 1, OHWI weights. */
	for (int oy = 0; oy < H; oy++)
		for (int ox = 0; ox < W; ox++)
			for (int ry = 0; ry < R; ry++)
				for (int rx = 0; rx < R; rx++) {
					int iy = oy - 1 + ry, ix = ox - 1 + rx;

					if (iy < 0 || iy >= H || ix < 0 || ix >= W)
						continue;
					for (int c = 0; c < C; c++) {
						int32_t x = in[((size_t)iy * W + ix) * C + c];

						if (!x)
							continue;
						for (int k = 0; k < KO; k++)
							ref[((size_t)oy * W + ox) * KO + k] +=
								x * wt[(((size_t)k * R + ry) * R + rx) * C + c];
					}
				}
	{
		struct accel_part_opts o = { .m = caps.rows, .metric = ACCEL_PART_NNZ, .even = true, .halo = 1 };
		struct accel_conv2d_desc d = { .input = &ti, .weights = &tw, .output = &to, .stride_h = 1, .stride_w = 1,
					       .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1,
					       .dil_h = 1, .dil_w = 1, .groups = 1 };

		if ((ret = accel_partition_map(dev, &ti, &o, pe)))
			goto out;
		o.even = false;
		if ((ret = accel_partition_map(dev, &ti, &o, pb)))
			goto out;
		if ((ret = accel_partition_conv2d(dev, &d, NULL, ACCEL_SPARSE_ZSKIP_A, pe, ACCEL_PART_OVERLAP, NULL,
						  busy_e)))
			goto out;
		ok = ok && !memcmp(accel_buffer_ptr(bo), ref, (size_t)H * W * KO * 4);
		memset(accel_buffer_ptr(bo), 0, (size_t)H * W * KO * 4);
		if ((ret = accel_partition_conv2d(dev, &d, NULL, ACCEL_SPARSE_ZSKIP_A, pb, ACCEL_PART_OVERLAP, NULL,
						  busy_b)))
			goto out;
		ok = ok && !memcmp(accel_buffer_ptr(bo), ref, (size_t)H * W * KO * 4);
	}
	if (json) {
		printf("{\"bench\":\"partition\",\"map\":[1,%d,%d,%d],\"density_top\":0.15,\"density_bottom\":1.0,"
		       "\"conv\":\"3x3 s1 p1 k%d int8 zskip\",\"rows\":%u,\"m\":%u,\"metric\":\"nnz\","
		       "\"threshold\":0.03,\"spread_even\":%.4f,\"spread_balanced\":%.4f,\"iterations\":%u,"
		       "\"cells_even\":[",
		       C, H, W, KO, caps.rows, caps.rows, pe->spread, pb->spread, pb->iterations);
		for (uint32_t i = 0; i < pe->n_cells; i++)
			printf("%s[%u,%u]", i ? "," : "", pe->cell[i].y0, pe->cell[i].y1);
		printf("],\"cells_balanced\":[");
		for (uint32_t i = 0; i < pb->n_cells; i++)
			printf("%s[%u,%u]", i ? "," : "", pb->cell[i].y0, pb->cell[i].y1);
		printf("],\"busy_even\":[");
		for (uint32_t r = 0; r < caps.rows; r++)
			printf("%s%llu", r ? "," : "", (unsigned long long)busy_e[r]);
		printf("],\"busy_balanced\":[");
		for (uint32_t r = 0; r < caps.rows; r++)
			printf("%s%llu", r ? "," : "", (unsigned long long)busy_b[r]);
		printf("],\"imbalance_even\":%.4f,\"imbalance_balanced\":%.4f,\"verified\":%s}\n",
		       imbalance(busy_e, caps.rows), imbalance(busy_b, caps.rows), ok ? "true" : "false");
	} else {
		printf("imbalance (max/mean row busy cycles): even %.3f, balanced %.3f (%s)\n", imbalance(busy_e, caps.rows),
		       imbalance(busy_b, caps.rows), ok ? "verified" : "MISMATCH");
	}
out:
	if (ret)
		fprintf(stderr, "accel-bench partition: %s (%s)\n", accel_strerror(ret), accel_last_error(dev));
	free(pe);
	free(pb);
	free(ref);
	accel_buffer_free(bi);
	accel_buffer_free(bw);
	accel_buffer_free(bo);
	accel_close(dev);
	return ret ? 1 : (ok ? 0 : 1);
}
