/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target on the compiled-model reader (onnx_compiled_load_mem) and the executor of what it
 * accepts.  At start-up a small residual model is compiled on a small sim and saved; each input is a
 * list of edits to that valid file: byte 0 chooses whether the CRC trailer is recomputed after the edits
 * (so the field checks behind the checksum are reached), bytes 1-2 a truncation, then (u24 offset,
 * u8 value) quadruples.  A load must fail with a negative errno and a message, or succeed and then run
 * (or fail to run) cleanly: any crash, sanitizer report, hang or unbounded allocation is a bug.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"

static struct accel_dev *dev;
static struct onnx_model *model;
static struct onnx_tensor x;
static uint8_t *valid;
static size_t valid_len;

static uint32_t crc32_ieee(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1u));
	}
	return ~c;
}

static void init_w(struct mb *b, const char *name, unsigned nd, const int64_t *dims)
{
	size_t n = 1;
	float *v;

	for (unsigned i = 0; i < nd; i++)
		n *= (size_t)dims[i];
	v = malloc(n * sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = (float)((i * 37) % 19) / 19.0f - 0.5f;
	mb_init(b, name, ONNX_FLOAT, nd, dims, v);
	free(v);
}

static void setup(void)
{
	static const int64_t wd[4] = { 2, 2, 3, 3 }, gd[2] = { 4, 3 }, xd[4] = { 1, 2, 4, 4 };
	static const int64_t pads[4] = { 1, 1, 1, 1 };
	struct onnx_compiled *cm = NULL;
	char err[512], path[] = "/tmp/fuzz-cmodel-XXXXXX";
	struct mb *b = mb_new(13);
	const uint8_t *buf;
	Onnx__NodeProto *n;
	FILE *f;
	size_t len;
	int fd;

	if (accel_open("sim:rows=2,cols=2", &dev))
		abort();
	init_w(b, "w", 4, wd);
	init_w(b, "g", 2, gd);
	mb_input(b, "x");
	n = mb_node(b, "Conv", "x,w", "c");
	mb_attr_ints(b, n, "pads", pads, 4);
	mb_node(b, "Add", "c,x", "s");		/* the conv's epilogue residual */
	mb_node(b, "Relu", "s", "r");
	n = mb_node(b, "Concat", "r,x", "cc");	/* r in place, x a device copy */
	mb_attr_i(b, n, "axis", 1);
	mb_node(b, "GlobalAveragePool", "cc", "p");
	mb_node(b, "Flatten", "p", "fl");
	mb_node(b, "Sigmoid", "fl", "sg");	/* a vector-unit step */
	mb_node(b, "Neg", "sg", "ng");		/* a host step */
	mb_node(b, "MatMul", "ng,g", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	if (onnx_model_load_mem(buf, len, 0, &model, err, sizeof(err)))
		abort();
	mb_free(b);
	if (onnx_tensor_alloc(&x, ONNX_FLOAT, 4, xd))
		abort();
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = (float)i / 7.0f - 1.0f;
	fd = mkstemp(path);
	if (fd < 0 || onnx_compile(model, dev, &x, 1, 0, &cm, err, sizeof(err)) ||
	    onnx_compiled_save(cm, path, err, sizeof(err)))
		abort();
	close(fd);
	onnx_compiled_free(cm);
	f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	valid_len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	valid = malloc(valid_len);
	if (fread(valid, 1, valid_len, f) != valid_len)
		abort();
	fclose(f);
	unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor y;
	char err[512] = "";
	size_t len;
	uint8_t *f;
	int ret;

	if (!dev)
		setup();
	len = valid_len;
	if (size >= 3) {
		size_t cut = (size_t)(data[1] | data[2] << 8);

		if (cut && cut < len)
			len = cut;
	}
	f = malloc(valid_len);
	memcpy(f, valid, valid_len);
	for (size_t i = 3; i + 4 <= size; i += 4) {
		size_t off = (size_t)(data[i] | data[i + 1] << 8 | data[i + 2] << 16) % valid_len;

		f[off] = data[i + 3];
	}
	if (size && (data[0] & 1) && len >= 4) {
		uint32_t c = crc32_ieee(f, len - 4);

		f[len - 4] = (uint8_t)c, f[len - 3] = (uint8_t)(c >> 8), f[len - 2] = (uint8_t)(c >> 16);
		f[len - 1] = (uint8_t)(c >> 24);
	}
	ret = onnx_compiled_load_mem(model, dev, &x, 1, f, len, &cm, err, sizeof(err));
	if (ret > 0 || (ret && (!err[0] || cm)) || (!ret && !cm))
		abort();	/* the contract: negative errno + message, or a compiled model */
	if (!ret) {
		if (!onnx_compiled_run(cm, &x, 1, &y, 1, NULL))
			onnx_tensor_release(&y);
		onnx_compiled_free(cm);
	}
	free(f);
	return 0;
}
