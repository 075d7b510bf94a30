/* SPDX-License-Identifier: MIT */
/*
 * graph.c - a two-layer MLP as one graph: Y = relu(X W1) W2. The graph scheduler places each operation
 * on an island and chains the second GEMM to the first (it starts on the first row bands while they are
 * still being produced), all in one job (examples/README.md).
 *
 *   cc graph.c $(pkg-config --cflags --libs libaccel) -lm -o graph && ./graph [DEVICE]
 *
 * Try DEVICE "sim:islands=2/2" to see two islands. Compared with a double-precision reference.
 */
#include <accel.h>
#include <math.h>
#include <stdio.h>

enum { M = 64, K = 64, H = 64, N = 32 };

static int fail(struct accel_dev *dev, const char *what, int ret)
{
	fprintf(stderr, "graph: %s: %s: %s\n", what, accel_strerror(ret), accel_last_error(dev));
	accel_close(dev);
	return 1;
}

int main(int argc, char **argv)
{
	struct accel_dev *dev;
	struct accel_buffer *bx, *bw1, *bh, *bh2, *bw2, *by;
	struct accel_tensor x, w1, h, h2, w2, y;
	struct accel_island isl[ACCEL_MAX_ISLANDS];
	struct accel_graph *g;
	struct accel_job *job;
	unsigned n_isl, nodes[3];
	char msg[256];
	int ret, bad = 0;

	ret = accel_open_msg(argc > 1 ? argv[1] : NULL, msg, sizeof(msg), &dev);
	if (ret) {
		fprintf(stderr, "graph: open: %s: %s\n", accel_strerror(ret), msg);
		return 1;
	}
	if ((ret = accel_query_islands(dev, isl, ACCEL_MAX_ISLANDS, &n_isl)))
		return fail(dev, "islands", ret);
	printf("graph: %u island(s); the first has %u rows\n", n_isl, isl[0].rows);
	if ((ret = accel_buffer_alloc(dev, 4 * M * K, &bx)) || (ret = accel_buffer_alloc(dev, 4 * K * H, &bw1)) ||
	    (ret = accel_buffer_alloc(dev, 4 * M * H, &bh)) || (ret = accel_buffer_alloc(dev, 4 * M * H, &bh2)) ||
	    (ret = accel_buffer_alloc(dev, 4 * H * N, &bw2)) || (ret = accel_buffer_alloc(dev, 4 * M * N, &by)))
		return fail(dev, "alloc", ret);
	if ((ret = accel_tensor_2d(bx, 0, ACCEL_FP32, M, K, &x)) ||
	    (ret = accel_tensor_2d(bw1, 0, ACCEL_FP32, K, H, &w1)) ||
	    (ret = accel_tensor_2d(bh, 0, ACCEL_FP32, M, H, &h)) ||
	    (ret = accel_tensor_2d(bh2, 0, ACCEL_FP32, M, H, &h2)) ||
	    (ret = accel_tensor_2d(bw2, 0, ACCEL_FP32, H, N, &w2)) ||
	    (ret = accel_tensor_2d(by, 0, ACCEL_FP32, M, N, &y)))
		return fail(dev, "tensor", ret);
	float *X = accel_buffer_ptr(bx), *W1 = accel_buffer_ptr(bw1), *W2 = accel_buffer_ptr(bw2);

	for (int i = 0; i < M * K; i++)
		X[i] = (float)(i % 17 - 8) / 8.0f;
	for (int i = 0; i < K * H; i++)
		W1[i] = (float)(i % 13 - 6) / 16.0f;
	for (int i = 0; i < H * N; i++)
		W2[i] = (float)(i % 9 - 4) / 8.0f;

	/* Record the operations (nothing runs yet); a node depends on the nodes whose output it reads. */
	struct accel_gemm_desc g1 = { .a = &x, .b = &w1, .c = &h }, g2 = { .a = &h2, .b = &w2, .c = &y };
	struct accel_activation_desc act = { .input = &h, .output = &h2, .act = ACCEL_ACT_RELU };

	if ((ret = accel_graph_new(dev, &g)) || (ret = accel_graph_gemm(g, &g1, &nodes[0])) ||
	    (ret = accel_graph_activation(g, &act, &nodes[1])) || (ret = accel_graph_gemm(g, &g2, &nodes[2])))
		return fail(dev, "graph", ret);
	/* Lower the whole graph into one job (NULL options: the scheduler decides, chaining on). */
	if ((ret = accel_graph_run(g, NULL, NULL, &job)) || (ret = accel_job_wait(job, -1)))
		return fail(dev, "run", ret);
	for (int i = 0; i < 3; i++) {
		struct accel_graph_node_info ni;

		if (!accel_graph_node_info(g, nodes[i], &ni))
			printf("graph: node %u on island %d, %u band(s), chained from %d, estimated %.0f cycles\n", nodes[i],
			       ni.island, ni.bands, ni.chained_from, ni.est_cycles);
	}
	accel_job_free(job);
	accel_graph_free(g);

	const float *Y = accel_buffer_ptr(by);

	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double ref = 0, mag = 0;

			for (int j = 0; j < H; j++) {
				double hv = 0;

				for (int k = 0; k < K; k++)
					hv += (double)X[m * K + k] * W1[k * H + j];
				hv = hv > 0 ? hv : 0;
				ref += hv * W2[j * N + n];
				mag += fabs(hv * W2[j * N + n]);
			}
			bad += !(fabs(Y[m * N + n] - ref) <= 4e-4 * (1 + mag));
		}
	printf("graph: Y = relu(X W1) W2 in one job: %s (%d of %d outside the tolerance)\n", bad ? "FAIL" : "ok", bad,
	       M * N);
	accel_close(dev);	/* frees the buffers */
	return bad != 0;
}
