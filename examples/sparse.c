/* SPDX-License-Identifier: MIT */
/*
 * sparse.c - int8 GEMM with mostly-zero weights: measure densities, let the dispatcher pick a route, pack
 * the weights once as (value, index) slots and run the sparse GEMM (examples/README.md).
 *
 *   cc sparse.c $(pkg-config --cflags --libs libaccel) -o sparse && ./sparse [DEVICE]
 *
 * The packed path is bit-identical to the dense one; both are compared with a CPU reference.
 */
#include <accel.h>
#include <stdio.h>
#include <string.h>

enum { M = 64, K = 256, N = 64 };

static int fail(struct accel_dev *dev, const char *what, int ret)
{
	fprintf(stderr, "sparse: %s: %s: %s\n", what, accel_strerror(ret), accel_last_error(dev));
	accel_close(dev);
	return 1;
}

int main(int argc, char **argv)
{
	struct accel_dev *dev;
	struct accel_buffer *buf;
	struct accel_tensor a, w, c;
	struct accel_sparse_weights *sw;
	struct accel_sparse_info si;
	struct accel_route_info route, autor;
	double wd, ad;
	char msg[256];
	int ret, bad = 0;
	static int8_t dense[K * N];

	ret = accel_open_msg(argc > 1 ? argv[1] : NULL, msg, sizeof(msg), &dev);
	if (ret) {
		fprintf(stderr, "sparse: open: %s: %s\n", accel_strerror(ret), msg);
		return 1;
	}
	const uint64_t off_w = M * K, off_c = off_w + K * N;	/* C (int32) at a 4-byte aligned offset */

	if ((ret = accel_buffer_alloc(dev, off_c + 4 * M * N, &buf)) ||
	    (ret = accel_tensor_2d(buf, 0, ACCEL_INT8, M, K, &a)) ||
	    (ret = accel_tensor_2d(buf, off_w, ACCEL_INT8, K, N, &w)) ||
	    (ret = accel_tensor_2d(buf, off_c, ACCEL_INT32, M, N, &c)))
		return fail(dev, "setup", ret);
	int8_t *p = accel_buffer_ptr(buf);
	const int32_t *C = (const int32_t *)(p + off_c);

	for (int i = 0; i < M * K; i++)
		p[i] = (int8_t)((i * 29) % 251 - 125);
	for (int i = 0; i < K * N; i++)	/* 3 of 4 weights are zero */
		p[off_w + i] = (i * 7) % 4 ? 0 : (int8_t)((i * 13) % 255 - 127);

	/* 1. Densities and the dispatcher's choice. */
	if ((ret = accel_tensor_density(&w, &wd)) || (ret = accel_tensor_density(&a, &ad)))
		return fail(dev, "density", ret);
	if ((ret = accel_sparse_route(wd, ad, true, 0, 0, &route)))
		return fail(dev, "route", ret);
	printf("sparse: weight density %.2f, activation density %.2f -> route %s\n", wd, ad,
	       route.route == ACCEL_ROUTE_SPARSE ? "SPARSE" : route.route == ACCEL_ROUTE_ZSKIP ? "ZSKIP" : "DENSE");

	/* 2. Pack once (the packed copy lives in a device buffer owned by sw). */
	if ((ret = accel_sparse_pack(dev, &w, false, 0, &sw)) || (ret = accel_sparse_info(sw, &si)))
		return fail(dev, "pack", ret);
	printf("sparse: packed %u x %u weights: %llu non-zero, %llu packed bytes (dense: %llu)\n", si.k, si.n,
	       (unsigned long long)si.nnz, (unsigned long long)si.packed_bytes, (unsigned long long)si.dense_bytes);
	if ((ret = accel_sparse_unpack(sw, dense, sizeof(dense))))
		return fail(dev, "unpack", ret);
	bad += memcmp(dense, p + off_w, sizeof(dense)) != 0;	/* packing loses nothing */

	/* 3. The sparse GEMM, then the automatic route; both must equal the CPU reference. */
	struct accel_sparse_gemm_desc sd = { .a = &a, .c = &c, .w = sw, .flags = route.flags };
	struct accel_gemm_desc gd = { .a = &a, .b = &w, .c = &c };

	for (int pass = 0; pass < 2; pass++) {
		memset((void *)C, 0, 4 * M * N);
		ret = pass == 0 ? accel_sparse_gemm(dev, &sd, NULL, NULL) : accel_auto_gemm(dev, &gd, sw, NULL, NULL, &autor);
		if (ret)
			return fail(dev, pass ? "auto gemm" : "sparse gemm", ret);
		for (int m = 0; m < M; m++)
			for (int n = 0; n < N; n++) {
				int32_t ref = 0;

				for (int k = 0; k < K; k++)
					ref += p[m * K + k] * p[off_w + k * N + n];
				bad += C[m * N + n] != ref;
			}
	}
	printf("sparse: accel_auto_gemm chose %s; %s (%d wrong)\n",
	       autor.route == ACCEL_ROUTE_SPARSE ? "the packed weights" : "the dense path", bad ? "FAIL" : "ok, exact",
	       bad);
	accel_sparse_free(sw);
	accel_close(dev);
	return bad != 0;
}
