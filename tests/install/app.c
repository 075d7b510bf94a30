/* SPDX-License-Identifier: MIT */
/* An application as a user writes it against the installed libaccel: only <accel.h> and pkg-config.
 * int8 GEMM on the device (sim in the test) against a CPU reference; the run-time version must be the
 * header's. Exit 0 when everything matches. */
#include <accel.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	enum { M = 17, K = 23, N = 9 };
	struct accel_dev *dev;
	struct accel_buffer *buf;
	struct accel_tensor a, b, c;
	struct accel_gemm_desc d = { .a = &a, .b = &b, .c = &c };
	char msg[256];
	int ret, bad = 0;

	if (strcmp(accel_version(NULL), ACCEL_VERSION_STRING)) {
		fprintf(stderr, "library %s, header %s\n", accel_version(NULL), ACCEL_VERSION_STRING);
		return 1;
	}
	ret = accel_open_msg(NULL, msg, sizeof(msg), &dev);
	if (ret) {
		fprintf(stderr, "accel_open: %s: %s\n", accel_strerror(ret), msg);
		return 1;
	}
	const unsigned c_off = 1024;	/* 4-byte aligned, after A and B */

	if ((ret = accel_buffer_alloc(dev, c_off + 4 * M * N, &buf)) ||
	    (ret = accel_tensor_2d(buf, 0, ACCEL_INT8, M, K, &a)) ||
	    (ret = accel_tensor_2d(buf, M * K, ACCEL_INT8, K, N, &b)) ||
	    (ret = accel_tensor_2d(buf, c_off, ACCEL_INT32, M, N, &c))) {
		fprintf(stderr, "setup: %s: %s\n", accel_strerror(ret), accel_last_error(dev));
		return 1;
	}
	int8_t *p = accel_buffer_ptr(buf);

	for (int i = 0; i < M * K + K * N; i++)
		p[i] = (int8_t)(i * 37 % 255 - 127);
	ret = accel_gemm(dev, &d, NULL, NULL);
	if (ret) {
		fprintf(stderr, "accel_gemm: %s: %s\n", accel_strerror(ret), accel_last_error(dev));
		return 1;
	}
	const int32_t *out = (const int32_t *)(p + c_off);

	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			int32_t ref = 0;

			for (int k = 0; k < K; k++)
				ref += p[m * K + k] * p[M * K + k * N + n];
			bad += out[m * N + n] != ref;
		}
	struct accel_caps caps;

	accel_query_caps(dev, &caps);
	printf("libaccel %s: %dx%dx%d int8 GEMM on the %s backend: %d of %d outputs wrong\n", accel_version(NULL), M,
	       N, K, caps.backend, bad, M * N);
	accel_close(dev);	/* frees buf too */
	return bad ? 1 : 0;
}
