/* SPDX-License-Identifier: MIT */
/*
 * job_chain.c - asynchronous jobs with dependencies: H = relu(X x W1), Y = H x W2, submitted as three
 * jobs (GEMM -> activation -> GEMM) without waiting in between; only the last one is waited for
 * (examples/README.md).
 *
 *   cc job_chain.c $(pkg-config --cflags --libs libaccel) -lm -o job_chain && ./job_chain [DEVICE]
 *
 * Each job lists the job it needs in struct accel_submit.deps; the device (or the sim) runs them in
 * order. The result is compared with a double-precision reference; the counters of each job and their sum
 * (accel_counters_add) are printed.
 */
#include <accel.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { M = 64, K = 48, N1 = 40, N2 = 24 };

static int fail(struct accel_dev *dev, const char *what, int ret)
{
	fprintf(stderr, "job_chain: %s: %s: %s\n", what, accel_strerror(ret), accel_last_error(dev));
	accel_close(dev);	/* waits for submitted jobs, frees everything */
	return 1;
}

int main(int argc, char **argv)
{
	struct accel_dev *dev;
	struct accel_buffer *bx, *bw1, *bh, *bh2, *bw2, *by;
	struct accel_tensor x, w1, h, h2, w2, y;
	struct accel_job *j1, *j2, *j3;
	char msg[256];
	int ret, bad = 0;

	ret = accel_open_msg(argc > 1 ? argv[1] : NULL, msg, sizeof(msg), &dev);
	if (ret) {
		fprintf(stderr, "job_chain: open: %s: %s\n", accel_strerror(ret), msg);
		return 1;
	}
	if ((ret = accel_buffer_alloc(dev, 4 * M * K, &bx)) || (ret = accel_buffer_alloc(dev, 4 * K * N1, &bw1)) ||
	    (ret = accel_buffer_alloc(dev, 4 * M * N1, &bh)) || (ret = accel_buffer_alloc(dev, 4 * M * N1, &bh2)) ||
	    (ret = accel_buffer_alloc(dev, 4 * N1 * N2, &bw2)) || (ret = accel_buffer_alloc(dev, 4 * M * N2, &by)))
		return fail(dev, "alloc", ret);
	if ((ret = accel_tensor_2d(bx, 0, ACCEL_FP32, M, K, &x)) ||
	    (ret = accel_tensor_2d(bw1, 0, ACCEL_FP32, K, N1, &w1)) ||
	    (ret = accel_tensor_2d(bh, 0, ACCEL_FP32, M, N1, &h)) ||
	    (ret = accel_tensor_2d(bh2, 0, ACCEL_FP32, M, N1, &h2)) ||
	    (ret = accel_tensor_2d(bw2, 0, ACCEL_FP32, N1, N2, &w2)) ||
	    (ret = accel_tensor_2d(by, 0, ACCEL_FP32, M, N2, &y)))
		return fail(dev, "tensor", ret);
	float *X = accel_buffer_ptr(bx), *W1 = accel_buffer_ptr(bw1), *W2 = accel_buffer_ptr(bw2);

	for (int i = 0; i < M * K; i++)
		X[i] = (float)(i % 13 - 6) / 8.0f;
	for (int i = 0; i < K * N1; i++)
		W1[i] = (float)(i % 11 - 5) / 16.0f;
	for (int i = 0; i < N1 * N2; i++)
		W2[i] = (float)(i % 7 - 3) / 8.0f;

	/* Job 1: H = X x W1 (returns at once with a job). */
	struct accel_gemm_desc g1 = { .a = &x, .b = &w1, .c = &h };

	ret = accel_gemm(dev, &g1, NULL, &j1);
	if (ret)
		return fail(dev, "gemm 1", ret);
	/* Job 2: H2 = relu(H), after job 1. */
	struct accel_activation_desc act = { .input = &h, .output = &h2, .act = ACCEL_ACT_RELU };
	struct accel_submit after1 = { .deps = &j1, .n_deps = 1 };

	ret = accel_activation(dev, &act, &after1, &j2);
	if (ret)
		return fail(dev, "relu", ret);
	/* Job 3: Y = H2 x W2, after job 2. */
	struct accel_gemm_desc g2 = { .a = &h2, .b = &w2, .c = &y };
	struct accel_submit after2 = { .deps = &j2, .n_deps = 1 };

	ret = accel_gemm(dev, &g2, &after2, &j3);
	if (ret)
		return fail(dev, "gemm 2", ret);
	ret = accel_job_wait(j3, -1);	/* the last job; its dependencies completed before it started */
	if (ret)
		return fail(dev, "wait", ret);

	struct accel_job *jobs[] = { j1, j2, j3 };
	const char *names[] = { "gemm X*W1", "relu", "gemm H*W2" };

	struct accel_counters sum;

	memset(&sum, 0, sizeof(sum));
	for (int i = 0; i < 3; i++) {
		struct accel_counters cnt;

		if (!accel_job_counters(jobs[i], &cnt)) {
			printf("job_chain: job %d (%s): %llu cycles, %llu bytes in\n", i + 1, names[i],
			       (unsigned long long)cnt.total_cycles, (unsigned long long)cnt.bytes_h2d);
			accel_counters_add(&sum, &cnt);	/* every counter, not only the printed ones */
		}
		accel_job_free(jobs[i]);
	}
	printf("job_chain: the chain: %llu cycles, %llu bytes in, %u hardware job(s)\n",
	       (unsigned long long)sum.total_cycles, (unsigned long long)sum.bytes_h2d, sum.hw_jobs);
	const float *Y = accel_buffer_ptr(by);

	for (int m = 0; m < M; m++)
		for (int n = 0; n < N2; n++) {
			double ref = 0, mag = 0;

			for (int j = 0; j < N1; j++) {
				double hv = 0;

				for (int k = 0; k < K; k++)
					hv += (double)X[m * K + k] * W1[k * N1 + j];
				hv = hv > 0 ? hv : 0;
				ref += hv * W2[j * N2 + n];
				mag += fabs(hv * W2[j * N2 + n]);
			}
			bad += !(fabs(Y[m * N2 + n] - ref) <= 1e-4 * (1 + mag) * 4);
		}
	printf("job_chain: Y = relu(X W1) W2 through 3 dependent jobs: %s (%d of %d outside the tolerance)\n",
	       bad ? "FAIL" : "ok", bad, M * N2);
	accel_close(dev);
	return bad != 0;
}
