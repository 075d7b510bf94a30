/* SPDX-License-Identifier: MIT */
/*
 * conv_int8.c - an int8 convolution layer with requantisation: y = sat8(relu(conv(x, w) + bias) * scale),
 * NHWC input, OHWI weights, 3x3, stride 1, padding 1, on a tnpu (examples/README.md).
 *
 *   cc conv_int8.c $(pkg-config --cflags --libs libaccel) -o conv_int8 && ./conv_int8 [DEVICE]
 *
 * The SFU applies bias, ReLU and the requantisation (multiplier/shift from accel_quant_from_scale) in the
 * device; every output is compared bit for bit with a CPU reference of the same arithmetic.
 */
#include <accel.h>
#include <stdio.h>
#include <string.h>

enum { H = 14, W = 14, C = 16, K = 24, R = 3, S = 3 };

static int8_t requant(int64_t acc, int32_t mult, unsigned shift)
{
	int64_t y = (acc * mult + (shift ? 1ll << (shift - 1) : 0)) >> shift;

	return (int8_t)(y < -128 ? -128 : y > 127 ? 127 : y);
}

int main(int argc, char **argv)
{
	struct accel_dev *dev;
	struct accel_buffer *bx, *bw, *bb, *by;
	struct accel_tensor x, w, bias, y;
	struct accel_conv2d_desc d;
	char msg[256];
	int ret, bad = 0;

	ret = accel_open_msg(argc > 1 ? argv[1] : NULL, msg, sizeof(msg), &dev);
	if (ret) {
		fprintf(stderr, "conv_int8: open: %s: %s\n", accel_strerror(ret), msg);
		return 1;
	}
	if ((ret = accel_buffer_alloc(dev, H * W * C, &bx)) || (ret = accel_buffer_alloc(dev, K * R * S * C, &bw)) ||
	    (ret = accel_buffer_alloc(dev, 4 * K, &bb)) || (ret = accel_buffer_alloc(dev, H * W * K, &by)) ||
	    (ret = accel_tensor_4d(bx, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, C, H, W, &x)) ||
	    (ret = accel_tensor_4d(bw, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, K, C, R, S, &w)) ||	/* OHWI */
	    (ret = accel_tensor_2d(bb, 0, ACCEL_INT32, 1, K, &bias)) ||
	    (ret = accel_tensor_4d(by, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, 1, K, H, W, &y))) {
		fprintf(stderr, "conv_int8: setup: %s: %s\n", accel_strerror(ret), accel_last_error(dev));
		accel_close(dev);
		return 1;
	}
	int8_t *px = accel_buffer_ptr(bx), *pw = accel_buffer_ptr(bw), *py = accel_buffer_ptr(by);
	int32_t *pb = accel_buffer_ptr(bb);

	for (int i = 0; i < H * W * C; i++)
		px[i] = (int8_t)((i * 37) % 255 - 127);
	for (int i = 0; i < K * R * S * C; i++)
		pw[i] = (int8_t)((i * 11) % 31 - 15);
	for (int k = 0; k < K; k++)
		pb[k] = (k - 12) * 100;

	memset(&d, 0, sizeof(d));
	d.input = &x;
	d.weights = &w;
	d.output = &y;
	d.stride_h = d.stride_w = 1;
	d.dil_h = d.dil_w = 1;
	d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
	d.groups = 1;
	d.input_zero_point = 0;		/* padding reads as 0 */
	d.epi.bias = &bias;
	d.epi.act = ACCEL_ACT_RELU;
	ret = accel_quant_from_scale(1.0 / 600, &d.epi.multiplier, &d.epi.shift);
	if (!ret)
		ret = accel_conv2d(dev, &d, NULL, NULL);
	if (ret) {
		fprintf(stderr, "conv_int8: %s: %s\n", accel_strerror(ret), accel_last_error(dev));
		accel_close(dev);
		return 1;
	}
	for (int oy = 0; oy < H; oy++)
		for (int ox = 0; ox < W; ox++)
			for (int k = 0; k < K; k++) {
				int64_t acc = pb[k];

				for (int r = 0; r < R; r++)
					for (int s = 0; s < S; s++) {
						int iy = oy + r - 1, ix = ox + s - 1;

						if (iy < 0 || iy >= H || ix < 0 || ix >= W)
							continue;
						for (int c = 0; c < C; c++)
							acc += px[(iy * W + ix) * C + c] * pw[((k * R + r) * S + s) * C + c];
					}
				acc = acc < 0 ? 0 : acc;
				bad += py[(oy * W + ox) * K + k] != requant(acc, d.epi.multiplier, d.epi.shift);
			}
	printf("conv_int8: %dx%dx%d -> %d, 3x3, bias + ReLU + requantisation (x%d >> %u): %s (%d of %d wrong)\n",
	       H, W, C, K, d.epi.multiplier, d.epi.shift, bad ? "FAIL" : "ok, bit-exact", bad, H * W * K);
	accel_buffer_free(bx);
	accel_buffer_free(bw);
	accel_buffer_free(bb);
	accel_buffer_free(by);
	accel_close(dev);
	return bad != 0;
}
