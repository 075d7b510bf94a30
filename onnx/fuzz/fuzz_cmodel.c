/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target on the compiled-model reader (onnx_compiled_load_mem, onnx_compiled_open_mem) and the
 * executor of what it accepts.  At start-up a small residual model is compiled on a small sim and saved
 * (format version 5: the inputs and model sections too); each input is a list of edits to that valid
 * file: byte 0 bit 0 chooses whether the CRC trailer is recomputed after the edits (so the field checks
 * behind the checksum are reached), bit 1 the fp32 or the int8 QDQ model's file, bit 2 whether the file
 * is opened alone (onnx_compiled_open_mem: the model section parsed by the ONNX loader, the recorded
 * shapes and load flags) or loaded against the model (onnx_compiled_load_mem), bytes 1-2 a truncation,
 * then (u24 offset, u8 value) quadruples.  A load must fail with a negative errno and a message, or succeed and then run
 * (or fail to run) cleanly: any crash, sanitizer report, hang or unbounded allocation is a bug.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"

static struct accel_dev *dev;
/* [0]: the fp32 model (its last MatMul weight-only quantised: a GEMM on packed int4 weights,
 * compile_wq.c); [1]: an int8 QDQ model (compile_qdq.c's steps: per-channel conv, add, an expansion +
 * depthwise pair (compile_fuse_pwdw.c), global average pool, view, per-channel gemm); byte 0 bit 1 of an
 * input chooses */
static struct onnx_model *models[2];
static struct onnx_tensor xs[2];
static uint8_t *valids[2];
static size_t valid_lens[2];

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

static void q_pair(struct mb *b, const char *in, const char *q, const char *dq, float scale, uint8_t zp)
{
	char sn[32], zn[32], ins[96];

	snprintf(sn, sizeof(sn), "%s_s", q);
	snprintf(zn, sizeof(zn), "%s_z", q);
	mb_init(b, sn, ONNX_FLOAT, 0, NULL, &scale);
	mb_init(b, zn, ONNX_UINT8, 0, NULL, &zp);
	snprintf(ins, sizeof(ins), "%s,%s,%s", in, sn, zn);
	mb_node(b, "QuantizeLinear", ins, q);
	snprintf(ins, sizeof(ins), "%s,%s,%s", q, sn, zn);
	mb_node(b, "DequantizeLinear", ins, dq);
}

static void dq_w(struct mb *b, const char *w, unsigned nd, const int64_t *d, const char *out)
{
	int8_t v[128], z[8] = { 0 };
	float sc[8] = { 0.01f, 0.02f, 0.015f, 0.03f, 0.025f, 0.01f, 0.02f, 0.012f };
	int64_t k = d[0];
	char sn[32], zn[32], ins[96];

	for (int i = 0; i < 128; i++)
		v[i] = (int8_t)((i * 29) % 61 - 30);
	mb_init(b, w, ONNX_INT8, nd, d, v);
	snprintf(sn, sizeof(sn), "%s_s", w);
	snprintf(zn, sizeof(zn), "%s_z", w);
	mb_init(b, sn, ONNX_FLOAT, 1, &k, sc);
	mb_init(b, zn, ONNX_INT8, 1, &k, z);
	snprintf(ins, sizeof(ins), "%s,%s,%s", w, sn, zn);
	mb_attr_i(b, mb_node(b, "DequantizeLinear", ins, out), "axis", 0);
}

/* Compile models[i] for xs[i], save it, keep the file's bytes in valids[i]. */
static void save_valid(int i)
{
	struct onnx_compiled *cm = NULL;
	char err[512], path[] = "/tmp/fuzz-cmodel-XXXXXX";
	FILE *f;
	int fd = mkstemp(path);

	if (fd < 0 || onnx_compile(models[i], dev, &xs[i], 1, 0, &cm, err, sizeof(err)) ||
	    onnx_compiled_save(cm, path, err, sizeof(err))) {
		fprintf(stderr, "fuzz-cmodel set-up: model %d: %s\n", i, err);
		abort();
	}
	close(fd);
	onnx_compiled_free(cm);
	f = fopen(path, "rb");
	fseek(f, 0, SEEK_END);
	valid_lens[i] = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	valids[i] = malloc(valid_lens[i]);
	if (fread(valids[i], 1, valid_lens[i], f) != valid_lens[i])
		abort();
	fclose(f);
	unlink(path);
}

static void setup_qdq(void)
{
	static const int64_t xd[4] = { 1, 2, 4, 4 }, wd[4] = { 3, 2, 3, 3 }, gd[2] = { 2, 8 };
	static const int64_t ed[4] = { 8, 3, 1, 1 }, dd[4] = { 8, 1, 3, 3 };
	static const int64_t pads[4] = { 1, 1, 1, 1 };
	struct mb *b = mb_new(13);
	char err[512];
	const uint8_t *buf;
	size_t len;

	mb_input_typed(b, "x", ONNX_UINT8, 4, xd);
	{
		float s = 0.05f;
		uint8_t z = 120;

		mb_init(b, "x_s", ONNX_FLOAT, 0, NULL, &s);
		mb_init(b, "x_z", ONNX_UINT8, 0, NULL, &z);
		mb_node(b, "DequantizeLinear", "x,x_s,x_z", "xf");
	}
	dq_w(b, "w", 4, wd, "wf");
	mb_attr_ints(b, mb_node(b, "Conv", "xf,wf", "c"), "pads", pads, 4);
	q_pair(b, "c", "cq", "cf", 0.04f, 128);
	mb_node(b, "DequantizeLinear", "cq,cq_s,cq_z", "cf2");	/* a second DQ of the same tensor */
	mb_node(b, "Add", "cf,cf2", "s");
	mb_node(b, "Relu", "s", "r");
	q_pair(b, "r", "rq", "rf", 0.05f, 0);
	dq_w(b, "we", 4, ed, "wef");	/* the expansion 1x1 and its depthwise conv: one job */
	mb_node(b, "Conv", "rf,wef", "e");
	q_pair(b, "e", "eq", "ef", 0.04f, 128);
	dq_w(b, "wd", 4, dd, "wdf");
	{
		Onnx__NodeProto *n = mb_node(b, "Conv", "ef,wdf", "dw");

		mb_attr_ints(b, n, "pads", pads, 4);
		mb_attr_i(b, n, "group", 8);
	}
	mb_node(b, "Relu", "dw", "dwr");
	q_pair(b, "dwr", "dwq", "dwf", 0.05f, 0);
	mb_node(b, "GlobalAveragePool", "dwf", "gp");
	q_pair(b, "gp", "gq", "gf", 0.03f, 0);
	mb_node(b, "Flatten", "gf", "fl");
	q_pair(b, "fl", "fq", "ff", 0.03f, 0);
	dq_w(b, "g", 2, gd, "gwf");
	mb_attr_i(b, mb_node(b, "Gemm", "ff,gwf", "o"), "transB", 1);
	{
		float s = 0.02f;
		uint8_t z = 128;

		mb_init(b, "o_s", ONNX_FLOAT, 0, NULL, &s);
		mb_init(b, "o_z", ONNX_UINT8, 0, NULL, &z);
		mb_node(b, "QuantizeLinear", "o,o_s,o_z", "y");
	}
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	if (onnx_model_load_mem(buf, len, 0, &models[1], err, sizeof(err)))
		abort();
	mb_free(b);
	if (onnx_tensor_alloc(&xs[1], ONNX_UINT8, 4, xd))
		abort();
	for (size_t i = 0; i < xs[1].count; i++)
		((uint8_t *)xs[1].data)[i] = (uint8_t)(i * 37);
	save_valid(1);
}

static void setup(void)
{
	static const int64_t wd[4] = { 2, 2, 3, 3 }, gd[2] = { 4, 3 }, xd[4] = { 1, 2, 4, 4 };
	static const int64_t pads[4] = { 1, 1, 1, 1 };
	char err[512];
	struct mb *b = mb_new(13);
	const uint8_t *buf;
	Onnx__NodeProto *n;
	uint32_t rng = 1;	/* seeded weights, the test builder's generator */
	size_t len;

	if (accel_open("sim:rows=2,cols=2", &dev))
		abort();
	mb_init_rand(b, "w", 4, wd, &rng);
	mb_init_rand(b, "g", 2, gd, &rng);
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
	mb_node(b, "MatMul", "ng,g", "m");
	{
		/* a weight-only quantised MatMul: a GEMM step on packed int4 weights (compile_wq.c) */
		static const int64_t qd[3] = { 2, 1, 8 }, sd = 2;
		static const uint8_t q[16] = { 0x1f, 0x8e, 0x73, 0, 0, 0, 0, 0, 0x42, 0xa9, 0x05, 0, 0, 0, 0, 0 };
		static const float s[2] = { 0.25f, 0.5f };

		mb_init(b, "qb", ONNX_UINT8, 3, qd, q);
		mb_init(b, "qs", ONNX_FLOAT, 1, &sd, s);
		n = mb_node(b, "MatMulNBits", "m,qb,qs", "y");
		n->domain = (char *)"com.microsoft";
		mb_attr_i(b, n, "K", 3);
		mb_attr_i(b, n, "N", 2);
		mb_attr_i(b, n, "bits", 4);
		mb_attr_i(b, n, "block_size", 16);
	}
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	if (onnx_model_load_mem(buf, len, 0, &models[0], err, sizeof(err)))
		abort();
	mb_free(b);
	if (onnx_tensor_alloc(&xs[0], ONNX_FLOAT, 4, xd))
		abort();
	for (size_t i = 0; i < xs[0].count; i++)
		((float *)xs[0].data)[i] = (float)i / 7.0f - 1.0f;
	save_valid(0);
	setup_qdq();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct onnx_compiled *cm = NULL;
	struct onnx_tensor y;
	char err[512] = "";
	const uint8_t *valid;
	size_t len, valid_len;
	int which;
	uint8_t *f;
	int ret;

	if (!dev)
		setup();
	which = size && (data[0] & 2) ? 1 : 0;
	valid = valids[which];
	valid_len = valid_lens[which];
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
	if (size && (data[0] & 4))
		ret = onnx_compiled_open_mem(dev, f, len, &cm, err, sizeof(err));
	else
		ret = onnx_compiled_load_mem(models[which], dev, &xs[which], 1, f, len, &cm, err, sizeof(err));
	if (ret > 0 || (ret && (!err[0] || cm)) || (!ret && !cm))
		abort();	/* the contract: negative errno + message, or a compiled model */
	if (!ret) {
		if (!onnx_compiled_run(cm, &xs[which], 1, &y, 1, NULL))
			onnx_tensor_release(&y);
		onnx_compiled_free(cm);
	}
	free(f);
	return 0;
}
