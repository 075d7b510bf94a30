/* SPDX-License-Identifier: MIT */
/*
 * trace.c - what the device is and what its jobs did: capabilities, versions, tensor geometry,
 * a ReLU job and a max-pooling job that depends on it, and on the sim backend the engine timeline as
 * Chrome trace-event JSON for Perfetto (examples/README.md).
 *
 *   cc trace.c $(pkg-config --cflags --libs libaccel) -o trace && ./trace [DEVICE] [TRACE.json]
 *
 * The output, maxpool(relu(x)), is compared with a CPU reference.
 */
#include <accel.h>
#include <stdio.h>
#include <string.h>

enum { C = 16, H = 12, W = 12 };

int main(int argc, char **argv)
{
	struct accel_dev *dev;
	struct accel_caps caps;
	struct accel_buffer *bi, *br, *bo;
	struct accel_tensor in, relu, out;
	struct accel_job *jr, *job;
	uint64_t ext, events = 0, busy[16] = { 0 };
	unsigned ver;
	char msg[256];
	int ret, bad = 0;
	const char *path = argc > 2 ? argv[2] : "/tmp/tnpu-example-trace.json";

	const char *vs = accel_version(&ver);

	printf("trace: libaccel %s (header %s, %s)\n", vs, ACCEL_VERSION_STRING,
	       ver >= ACCEL_MKVERSION(0, 1, 0) ? "at least 0.1.0" : "older than 0.1.0");
	ret = accel_open_msg(argc > 1 ? argv[1] : NULL, msg, sizeof(msg), &dev);
	if (ret) {
		fprintf(stderr, "trace: open: %s: %s\n", accel_strerror(ret), msg);
		return 1;
	}
	accel_query_caps(dev, &caps);
	printf("trace: %s backend, %ux%ux%u PEs at %u MHz, %u KiB per storage unit\n", caps.backend, caps.rows,
	       caps.cols, caps.pes, caps.clock_mhz, caps.sram_bytes / 1024);

	if ((ret = accel_buffer_alloc(dev, (uint64_t)C * H * W * accel_dtype_size(ACCEL_INT8), &bi)) ||
	    (ret = accel_buffer_alloc(dev, (uint64_t)C * H * W, &br)) ||
	    (ret = accel_buffer_alloc(dev, (uint64_t)C * (H / 2) * (W / 2), &bo)) ||
	    (ret = accel_tensor_4d(bi, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &in)) ||
	    (ret = accel_tensor_4d(br, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &relu)) ||
	    (ret = accel_tensor_4d(bo, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H / 2, W / 2, &out)) ||
	    (ret = accel_tensor_extent(&in, &ext)) || (ret = accel_tensor_check(&in)) || (ret = accel_tensor_check(&out))) {
		fprintf(stderr, "trace: setup: %s: %s\n", accel_strerror(ret), accel_last_error(dev));
		accel_close(dev);
		return 1;
	}
	printf("trace: input spans %llu bytes of its %llu-byte buffer at device address 0x%llx\n",
	       (unsigned long long)ext, (unsigned long long)accel_buffer_size(bi), (unsigned long long)accel_buffer_va(bi));
	int8_t *x = accel_buffer_ptr(bi), *y = accel_buffer_ptr(bo);

	for (int i = 0; i < C * H * W; i++)
		x[i] = (int8_t)((i * 53) % 255 - 127);

	/* Record the timeline on the sim backend (the drm backend cannot: -EOPNOTSUPP, and the job runs anyway). */
	bool tracing = accel_trace_begin(dev) == 0;
	struct accel_activation_desc ad = { .input = &in, .output = &relu, .act = ACCEL_ACT_RELU };
	struct accel_pool2d_desc pd = { .input = &relu, .output = &out, .kind = ACCEL_POOL_MAX, .win_h = 2, .win_w = 2,
					.stride_h = 2, .stride_w = 2 };
	struct accel_submit after = { .deps = &jr, .n_deps = 1 };

	ret = accel_activation(dev, &ad, NULL, &jr);
	if (!ret)
		ret = accel_pool2d(dev, &pd, &after, &job);
	if (!ret)
		ret = accel_job_wait(job, -1);
	if (ret) {
		fprintf(stderr, "trace: pool: %s: %s\n", accel_strerror(ret), accel_last_error(dev));
		accel_close(dev);
		return 1;
	}
	if (tracing) {
		if (accel_trace_end(dev) || accel_trace_event_count(dev, &events) ||
		    accel_trace_row_busy(dev, busy, 16) < 0 || accel_trace_write_json(dev, path))
			fprintf(stderr, "trace: timeline: %s\n", accel_last_error(dev));
		else
			printf("trace: %llu timeline events written to %s (open it in Perfetto)\n",
			       (unsigned long long)events, path);
	}
	ret = accel_job_row_busy(jr, busy, 16);	/* per-row busy cycles of the ReLU job */
	if (ret > 0)
		printf("trace: ReLU job: row 0 busy %llu cycles\n", (unsigned long long)busy[0]);
	for (int c = 0; c < C; c++)
		for (int oy = 0; oy < H / 2; oy++)
			for (int ox = 0; ox < W / 2; ox++) {
				int8_t m = -128;

				for (int r = 0; r < 2; r++)
					for (int s = 0; s < 2; s++) {
						int8_t v = x[((oy * 2 + r) * W + ox * 2 + s) * C + c];

						v = v > 0 ? v : 0;

						m = v > m ? v : m;
					}
				bad += y[(oy * (W / 2) + ox) * C + c] != m;
			}
	printf("trace: 2x2 max pooling of relu(x), %dx%dx%d: %s (%d wrong)\n", H, W, C, bad ? "FAIL" : "ok, exact", bad);
	accel_job_free(jr);
	accel_job_free(job);
	accel_close(dev);
	return bad != 0;
}
