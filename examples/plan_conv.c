/* SPDX-License-Identifier: MIT */
/*
 * plan_conv.c - a convolution through a static address plan: compile the layer's addressing once, save
 * it to a file, load it back and run the conv from it (the device gathers its operand through the plan
 * and keeps it in its plan cache) (examples/README.md).
 *
 *   cc plan_conv.c $(pkg-config --cflags --libs libaccel) -o plan_conv && ./plan_conv [DEVICE]
 *
 * int8 NCHW input, OIHW weights, 3x3, stride 1, pad 1, int32 output; exact against a CPU reference.
 */
#include <accel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { C = 8, H = 10, W = 10, K = 16, R = 3, S = 3 };

int main(int argc, char **argv)
{
	struct accel_plan_conv_desc d = { .layout = ACCEL_PLAN_NCHW, .dtype = ACCEL_INT8, .n = 1, .c = C, .h = H,
					  .w = W, .k = K, .r = R, .s = S, .stride_h = 1, .stride_w = 1, .dil_h = 1,
					  .dil_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1 };
	struct accel_plan *plan, *loaded;
	struct accel_plan_info info;
	struct accel_dev *dev;
	struct accel_buffer *bi, *bw, *bo;
	struct accel_tensor wt, out;
	struct accel_job *job;
	char msg[256], path[] = "/tmp/plan_conv-XXXXXX";
	static int8_t x[C * H * W], w[K * C * R * S];
	int ret, bad = 0, fd;

	/* Compile needs no device; errors are in accel_plan_last_error(). */
	if (accel_plan_compile(&d, &plan) || accel_plan_info(plan, &info)) {
		fprintf(stderr, "plan_conv: compile: %s\n", accel_plan_last_error());
		return 1;
	}
	printf("plan_conv: %u output pixels x %u offsets, %u-byte image, tag %016llx\n", info.n_bases, info.n_offsets,
	       info.image_bytes, (unsigned long long)info.tag);
	fd = mkstemp(path);
	if (fd < 0 || accel_plan_save(plan, path) || accel_plan_load(path, &loaded)) {
		fprintf(stderr, "plan_conv: save/load %s: %s\n", path, accel_plan_last_error());
		return 1;
	}
	close(fd);
	unlink(path);
	accel_plan_free(plan);	/* the loaded copy is identical */

	ret = accel_open_msg(argc > 1 ? argv[1] : NULL, msg, sizeof(msg), &dev);
	if (ret) {
		fprintf(stderr, "plan_conv: open: %s: %s\n", accel_strerror(ret), msg);
		return 1;
	}
	for (int i = 0; i < C * H * W; i++)
		x[i] = (int8_t)((i * 23) % 255 - 127);
	for (int i = 0; i < K * C * R * S; i++)
		w[i] = (int8_t)((i * 5) % 15 - 7);
	if ((ret = accel_buffer_alloc(dev, sizeof(x), &bi)) || (ret = accel_buffer_alloc(dev, K * info.n_offsets, &bw)) ||
	    (ret = accel_buffer_alloc(dev, 4 * K * info.oh * info.ow, &bo)) ||
	    (ret = accel_tensor_2d(bw, 0, ACCEL_INT8, K, info.n_offsets, &wt)) ||
	    (ret = accel_tensor_4d(bo, 0, ACCEL_INT32, ACCEL_LAYOUT_NCHW, 1, K, info.oh, info.ow, &out))) {
		fprintf(stderr, "plan_conv: setup: %s: %s\n", accel_strerror(ret), accel_last_error(dev));
		return 1;
	}
	memcpy(accel_buffer_ptr(bi), x, sizeof(x));
	/* Weights go in the plan's K order. */
	if (accel_plan_pack_weights(loaded, w, accel_buffer_ptr(bw))) {
		fprintf(stderr, "plan_conv: pack: %s\n", accel_plan_last_error());
		return 1;
	}
	struct accel_plan_conv_args a = { .input = bi, .weights = &wt, .output = &out };

	ret = accel_plan_conv2d(dev, loaded, &a, NULL, &job);
	if (!ret)
		ret = accel_job_wait(job, -1);
	if (ret) {
		fprintf(stderr, "plan_conv: conv: %s: %s\n", accel_strerror(ret), accel_last_error(dev));
		return 1;
	}
	const int32_t *o = accel_buffer_ptr(bo);

	for (int k = 0; k < K; k++)
		for (int oy = 0; oy < (int)info.oh; oy++)
			for (int ox = 0; ox < (int)info.ow; ox++) {
				int32_t ref = 0;

				for (int c = 0; c < C; c++)
					for (int r = 0; r < R; r++)
						for (int s = 0; s < S; s++) {
							int iy = oy + r - 1, ix = ox + s - 1;

							if (iy >= 0 && iy < H && ix >= 0 && ix < W)
								ref += x[(c * H + iy) * W + ix] * w[((k * C + c) * R + r) * S + s];
						}
				bad += o[(k * info.oh + oy) * info.ow + ox] != ref;
			}
	printf("plan_conv: %dx%dx%d -> %d through a loaded plan: %s (%d wrong)\n", C, H, W, K,
	       bad ? "FAIL" : "ok, exact", bad);
	accel_job_free(job);
	accel_close(dev);	/* frees the buffers and the plan's device copy */
	accel_plan_free(loaded);
	return bad != 0;
}
