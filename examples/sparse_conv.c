/* SPDX-License-Identifier: MIT */
/*
 * sparse_conv.c - a convolution with sparse activations and pruned weights, three ways: packed weights
 * with the activation bitmask, the density-routed automatic conv, and a sparsity-balanced partition of
 * the input map over the array rows (examples/README.md, Documentation/sparse.md).
 *
 *   cc sparse_conv.c $(pkg-config --cflags --libs libaccel) -o sparse_conv && ./sparse_conv [DEVICE]
 *
 * int8 NHWC input, OHWI weights, 3x3, stride 1, pad 1, int32 output; every result exact against a CPU
 * reference.
 */
#include <accel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { C = 8, H = 24, W = 12, K = 16, R = 3, S = 3 };

static int32_t ref[H * W * K];

static int check(const char *what, const int32_t *out)
{
	int bad = 0;

	for (int i = 0; i < H * W * K; i++)
		bad += out[i] != ref[i];
	printf("sparse_conv: %s: %s (%d wrong)\n", what, bad ? "FAIL" : "ok, exact", bad);
	return bad;
}

int main(int argc, char **argv)
{
	struct accel_dev *dev;
	struct accel_caps caps;
	struct accel_buffer *bx, *bw, *by;
	struct accel_tensor x, w, y;
	struct accel_sparse_weights *sw;
	struct accel_route_info route;
	struct accel_partition *part = calloc(1, sizeof(*part));
	uint64_t busy[16] = { 0 };
	char msg[256];
	int ret, bad = 0;

	ret = accel_open_msg(argc > 1 ? argv[1] : NULL, msg, sizeof(msg), &dev);
	if (ret || !part) {
		fprintf(stderr, "sparse_conv: open: %s: %s\n", accel_strerror(ret), msg);
		return 1;
	}
	accel_query_caps(dev, &caps);
	if ((ret = accel_buffer_alloc(dev, H * W * C, &bx)) || (ret = accel_buffer_alloc(dev, K * R * S * C, &bw)) ||
	    (ret = accel_buffer_alloc(dev, 4 * H * W * K, &by)) ||
	    (ret = accel_tensor_4d(bx, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &x)) ||
	    (ret = accel_tensor_4d(bw, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, K, C, R, S, &w)) ||
	    (ret = accel_tensor_4d(by, 0, ACCEL_INT32, ACCEL_LAYOUT_NHWC, 1, K, H, W, &y)))
		goto fail;
	int8_t *px = accel_buffer_ptr(bx), *pw = accel_buffer_ptr(bw);
	int32_t *py = accel_buffer_ptr(by);

	for (int i = 0; i < H * W * C; i++)	/* denser at the top of the map than at the bottom */
		px[i] = (i * 7) % 10 < 8 - 6 * (i / (W * C)) / H ? (int8_t)((i * 37) % 255 - 127) : 0;
	for (int i = 0; i < K * R * S * C; i++)	/* about 70 % pruned */
		pw[i] = (i * 11) % 10 < 3 ? (int8_t)((i * 13) % 31 - 15) : 0;
	for (int oy = 0; oy < H; oy++)
		for (int ox = 0; ox < W; ox++)
			for (int k = 0; k < K; k++) {
				int32_t acc = 0;

				for (int r = 0; r < R; r++)
					for (int s = 0; s < S; s++) {
						int iy = oy + r - 1, ix = ox + s - 1;

						if (iy < 0 || iy >= H || ix < 0 || ix >= W)
							continue;
						for (int c = 0; c < C; c++)
							acc += px[(iy * W + ix) * C + c] * pw[((k * R + r) * S + s) * C + c];
					}
				ref[(oy * W + ox) * K + k] = acc;
			}

	struct accel_conv2d_desc d = { .input = &x, .weights = &w, .output = &y, .stride_h = 1, .stride_w = 1,
				       .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1, .dil_h = 1,
				       .dil_w = 1, .groups = 1 };

	/* 1. Packed weights (once per model) and the activation bitmask. */
	if ((ret = accel_sparse_pack_conv(dev, &w, 0, &sw)) ||
	    (ret = accel_sparse_conv2d(dev, &d, sw, ACCEL_SPARSE_ZSKIP_A | ACCEL_SPARSE_LB, NULL, NULL)))
		goto fail;
	bad += check("packed weights + activation bitmask", py);

	/* 2. Let the dispatcher route by the measured densities. */
	memset(py, 0, 4 * H * W * K);
	if ((ret = accel_auto_conv2d(dev, &d, sw, NULL, NULL, &route)))
		goto fail;
	printf("sparse_conv: weight density %.2f, input density %.2f: routed %s\n", route.weight_density,
	       route.act_density,
	       route.route == ACCEL_ROUTE_SPARSE ? "SPARSE" : route.route == ACCEL_ROUTE_ZSKIP ? "ZSKIP" : "DENSE");
	bad += check("automatic route", py);

	/* 3. Split the map into sub-maps of equal non-zero count, one per array row, and run it. */
	struct accel_part_opts po = { .m = caps.rows, .metric = ACCEL_PART_NNZ, .halo = 1 };

	memset(py, 0, 4 * H * W * K);
	if ((ret = accel_partition_map(dev, &x, &po, part)) ||
	    (ret = accel_partition_conv2d(dev, &d, sw, ACCEL_SPARSE_ZSKIP_A, part, ACCEL_PART_OVERLAP, NULL, busy)))
		goto fail;
	printf("sparse_conv: %u cells, non-zero spread %.3f; busy cycles of row 0: %llu\n", part->n_cells, part->spread,
	       (unsigned long long)busy[0]);
	bad += check("sparsity-balanced partition", py);

	accel_sparse_free(sw);
	free(part);
	accel_close(dev);
	return bad != 0;
fail:
	fprintf(stderr, "sparse_conv: %s: %s\n", accel_strerror(ret), accel_last_error(dev));
	free(part);
	accel_close(dev);
	return 1;
}
