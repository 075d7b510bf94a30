/* SPDX-License-Identifier: MIT */
/*
 * gemm.c - C = A x B + bias in fp32 on a tnpu (examples/README.md).
 *
 *   cc gemm.c $(pkg-config --cflags --libs libaccel) -o gemm && ./gemm [DEVICE]
 *
 * DEVICE is what accel_open() takes: /dev/accel/accel0, "sim", or nothing ($ACCEL_DEVICE, the node, sim).
 * Checks every output against a double-precision reference with libaccel's documented fp32 tolerance.
 */
#include <accel.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { M = 96, K = 72, N = 80 };

int main(int argc, char **argv)
{
	struct accel_dev *dev;
	struct accel_buffer *buf;
	struct accel_tensor a, b, c, bias;
	struct accel_gemm_desc d;
	char msg[256];
	int ret, bad = 0;

	ret = accel_open_msg(argc > 1 ? argv[1] : NULL, msg, sizeof(msg), &dev);
	if (ret) {
		fprintf(stderr, "gemm: open: %s: %s\n", accel_strerror(ret), msg);
		return 1;
	}
	/* One buffer holding A, B, bias and C one after another (C must not overlap the inputs). */
	const uint64_t off_b = 4 * M * K, off_bias = off_b + 4 * K * N, off_c = off_bias + 4 * N;

	ret = accel_buffer_alloc(dev, off_c + 4 * M * N, &buf);
	if (!ret)
		ret = accel_tensor_2d(buf, 0, ACCEL_FP32, M, K, &a);
	if (!ret)
		ret = accel_tensor_2d(buf, off_b, ACCEL_FP32, K, N, &b);
	if (!ret)
		ret = accel_tensor_2d(buf, off_bias, ACCEL_FP32, 1, N, &bias);
	if (!ret)
		ret = accel_tensor_2d(buf, off_c, ACCEL_FP32, M, N, &c);
	if (ret) {
		fprintf(stderr, "gemm: setup: %s: %s\n", accel_strerror(ret), accel_last_error(dev));
		accel_close(dev);
		return 1;
	}
	float *p = accel_buffer_ptr(buf);
	const float *A = p, *B = p + off_b / 4, *bs = p + off_bias / 4, *C = p + off_c / 4;

	for (int i = 0; i < M * K + K * N + N; i++)
		p[i] = (float)((i * 7919) % 97 - 48) / 32.0f;

	memset(&d, 0, sizeof(d));
	d.a = &a;
	d.b = &b;
	d.c = &c;
	d.epi.bias = &bias;
	ret = accel_gemm(dev, &d, NULL, NULL);	/* job == NULL: synchronous */
	if (ret) {
		fprintf(stderr, "gemm: accel_gemm: %s: %s\n", accel_strerror(ret), accel_last_error(dev));
		accel_close(dev);
		return 1;
	}
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double ref = bs[n], mag = fabs(bs[n]);

			for (int k = 0; k < K; k++) {
				ref += (double)A[m * K + k] * B[k * N + n];
				mag += fabs((double)A[m * K + k] * B[k * N + n]);
			}
			bad += !(fabs(C[m * N + n] - ref) <= 1e-4 * (1 + mag));
		}
	printf("gemm: %dx%dx%d fp32 + bias: %s (%d of %d outputs outside the tolerance)\n", M, N, K,
	       bad ? "FAIL" : "ok", bad, M * N);
	accel_close(dev);	/* also frees buf */
	return bad != 0;
}
