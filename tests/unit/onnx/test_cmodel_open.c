/* SPDX-License-Identifier: MIT */
/*
 * Self-contained compiled-model files (format version 4, onnx_compiled_open): a file saved from a
 * compiled model runs in a fresh compiled form with the ONNX file deleted, bit for bit as the direct
 * compiled run (and within tolerance of the CPU reference), with the model's load flags; a truncated,
 * corrupted, other-version, other-geometry or model-less file is a clear error (CRC oracle: zlib).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "builder.h"

static struct accel_dev *dev;
static char dir[] = "/tmp/test-cmodel-open-XXXXXX";
static char onnx_path[128], cm_path[128];

static void setup(void)
{
	cr_assert_eq(accel_open("sim", &dev), 0);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(onnx_path, sizeof(onnx_path), "%s/m.onnx", dir);
	snprintf(cm_path, sizeof(cm_path), "%s/m.tnpucm", dir);
}

static void teardown(void)
{
	unlink(onnx_path);
	unlink(cm_path);
	rmdir(dir);
	accel_close(dev);
}

TestSuite(cmodel_open, .init = setup, .fini = teardown);

/* x[1,2,4,4] -> Conv 3x3 (+ x residual) -> Relu -> Concat(r, x) -> GlobalAveragePool -> Flatten ->
 * Sigmoid (vector unit) -> Neg (a host step: its node must come from the file's model) -> MatMul; with
 * bn, a BatchNormalization after the Conv (folded at load unless ONNX_LOAD_NO_FOLD). */
static void write_model(bool bn)
{
	static const int64_t wd[4] = { 2, 2, 3, 3 }, gd[2] = { 4, 3 }, cd[1] = { 2 }, pads[4] = { 1, 1, 1, 1 };
	static const float sc[2] = { 1.5f, 0.5f }, bi[2] = { 0.1f, -0.2f }, mu[2] = { 0.05f, -0.1f },
			   var[2] = { 0.9f, 1.2f };
	struct mb *b = mb_new(13);
	uint32_t rng = 5;
	const uint8_t *buf;
	size_t len;
	FILE *f;

	mb_init_rand(b, "w", 4, wd, &rng);
	mb_init_rand(b, "g", 2, gd, &rng);
	mb_input(b, "x");
	mb_attr_ints(b, mb_node(b, "Conv", "x,w", bn ? "c0" : "c"), "pads", pads, 4);
	if (bn) {
		mb_init(b, "sc", ONNX_FLOAT, 1, cd, sc);
		mb_init(b, "bi", ONNX_FLOAT, 1, cd, bi);
		mb_init(b, "mu", ONNX_FLOAT, 1, cd, mu);
		mb_init(b, "var", ONNX_FLOAT, 1, cd, var);
		mb_node(b, "BatchNormalization", "c0,sc,bi,mu,var", "c");
	}
	mb_node(b, "Add", "c,x", "s");
	mb_node(b, "Relu", "s", "r");
	mb_attr_i(b, mb_node(b, "Concat", "r,x", "cc"), "axis", 1);
	mb_node(b, "GlobalAveragePool", "cc", "p");
	mb_node(b, "Flatten", "p", "fl");
	mb_node(b, "Sigmoid", "fl", "sg");
	mb_node(b, "Neg", "sg", "ng");
	mb_node(b, "MatMul", "ng,g", "y");
	mb_output(b, "y");
	buf = mb_pack(b, &len);
	f = fopen(onnx_path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
	mb_free(b);
}

static void input_x(struct onnx_tensor *x)
{
	static const int64_t xd[4] = { 1, 2, 4, 4 };

	cr_assert_eq(onnx_tensor_alloc(x, ONNX_FLOAT, 4, xd), 0);
	for (size_t i = 0; i < x->count; i++)
		((float *)x->data)[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
}

/* Load the model file with flags, compile it on dev, run it (*y) and save it to cm_path. */
static void compile_run_save(unsigned flags, const struct onnx_tensor *x, struct onnx_tensor *y,
			     struct onnx_tensor *cpu)
{
	struct onnx_model *m = NULL;
	struct onnx_compiled *cm = NULL;
	char err[512] = "";

	cr_assert_eq(onnx_model_load(onnx_path, flags, &m, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compile(m, dev, x, 1, 0, &cm, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_run(cm, x, 1, y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	cr_assert_eq(onnx_compiled_save(cm, cm_path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_run(m, NULL, x, 1, cpu, 1, NULL), 0, "%s", onnx_model_error(m));
	onnx_compiled_free(cm);
	onnx_model_free(m);
}

static void expect_bit_equal(const struct onnx_tensor *got, const struct onnx_tensor *want)
{
	cr_assert_eq(got->dtype, want->dtype);
	cr_assert_eq(got->ndim, want->ndim);
	cr_assert_eq(got->count, want->count);
	cr_assert_eq(memcmp(got->data, want->data, got->count * onnx_dtype_size(got->dtype)), 0,
		     "the opened file's output differs from the direct compiled run");
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p;
	long n;

	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	p = malloc((size_t)n);
	cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return p;
}

static void fix_crc(uint8_t *p, size_t len)
{
	uint32_t c = (uint32_t)crc32(0, p, (uInt)(len - 4));

	p[len - 4] = (uint8_t)c, p[len - 3] = (uint8_t)(c >> 8), p[len - 2] = (uint8_t)(c >> 16);
	p[len - 1] = (uint8_t)(c >> 24);
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* onnx_compiled_open_mem's contract: a negative errno, a message and no compiled form, or 0 and one. */
static int open_mem(struct accel_dev *d, const uint8_t *p, size_t len, char *err, size_t errlen)
{
	struct onnx_compiled *cm = NULL;
	int ret;

	err[0] = 0;
	ret = onnx_compiled_open_mem(d, p, len, &cm, err, errlen);
	cr_assert(ret ? cm == NULL && err[0] : cm != NULL, "ret %d, message '%s'", ret, err);
	onnx_compiled_free(cm);
	return ret;
}

Test(cmodel_open, runs_with_the_onnx_file_deleted_bit_for_bit)
{
	struct onnx_tensor x, direct, cpu, y, s;
	struct onnx_compiled *cm = NULL;
	const struct onnx_model *m;
	const float atol = 1e-5f;
	char err[512] = "";

	write_model(false);
	input_x(&x);
	compile_run_save(0, &x, &direct, &cpu);
	cr_assert_eq(unlink(onnx_path), 0);
	cr_assert_eq(onnx_compiled_open(dev, cm_path, &cm, err, sizeof(err)), 0, "%s", err);
	m = onnx_compiled_model(cm);
	cr_assert_not_null(m);
	cr_assert_eq(onnx_model_n_inputs(m), 1);
	cr_assert_str_eq(onnx_model_input_name(m, 0), "x");
	cr_assert_eq(onnx_compiled_input_shape(cm, 0, &s), 0);
	cr_assert_eq(s.dtype, ONNX_FLOAT);
	cr_assert_eq(s.ndim, 4);
	cr_assert_eq(s.count, x.count);
	cr_assert_eq(memcmp(s.dims, x.dims, sizeof(s.dims)), 0);
	cr_assert_null(s.data);
	cr_assert_eq(onnx_compiled_input_shape(cm, 1, &s), -EINVAL);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	expect_bit_equal(&y, &direct);
	for (size_t i = 0; i < y.count; i++) {	/* and the CPU reference's numbers */
		float g = ((float *)y.data)[i], r = ((float *)cpu.data)[i];

		cr_assert(g - r <= atol && r - g <= atol, "y[%zu] %g, CPU reference %g", i, g, r);
	}
	onnx_tensor_release(&y);
	/* a second run of the same opened form: the same bits */
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	expect_bit_equal(&y, &direct);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);	/* frees the model it carried too (LeakSanitizer: nothing left) */
	onnx_tensor_release(&cpu);
	onnx_tensor_release(&direct);
	onnx_tensor_release(&x);
}

/* A model loaded with ONNX_LOAD_NO_FOLD keeps its BatchNormalization: the file records the flag, so
 * the opened model is the same graph (else its digest would not match the plan). */
Test(cmodel_open, keeps_the_models_load_flags)
{
	struct onnx_tensor x, direct, cpu, y;
	struct onnx_compiled *cm = NULL;
	char err[512] = "";

	write_model(true);
	input_x(&x);
	compile_run_save(ONNX_LOAD_NO_FOLD, &x, &direct, &cpu);
	unlink(onnx_path);
	cr_assert_eq(onnx_compiled_open(dev, cm_path, &cm, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_model_n_folded(onnx_compiled_model(cm)), 0, "the BatchNormalization stays unfolded");
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	expect_bit_equal(&y, &direct);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	onnx_tensor_release(&cpu);
	onnx_tensor_release(&direct);
	onnx_tensor_release(&x);
}

Test(cmodel_open, bad_files_are_clear_errors)
{
	struct onnx_tensor x, direct, cpu;
	struct onnx_compiled *cm = NULL;
	struct accel_dev *small = NULL;
	char err[512];
	size_t len, mb_at;
	uint8_t *p, *q;
	uint64_t mb;

	write_model(false);
	input_x(&x);
	compile_run_save(0, &x, &direct, &cpu);
	p = slurp(cm_path, &len);
	q = malloc(len);
	/* the model section, where Documentation/onnx.md puts it: after the 104-byte header, the inputs
	 * section (8 bytes + 72 a shape), the value (100 bytes) and step (504) records and the weights */
	mb_at = 104 + 8 + 72 * get_le(p + 108, 4) + 100 * get_le(p + 52, 4) + 504 * get_le(p + 56, 4) +
		get_le(p + 76, 8);
	cr_assert_lt(mb_at + 12, len);
	mb = get_le(p + mb_at, 8);
	cr_assert(mb > 0 && mb == len - 4 - mb_at - 8, "model_bytes %llu at %zu of %zu", (unsigned long long)mb,
		  mb_at, len);

	/* truncated anywhere: never opens */
	for (size_t cut = 0; cut < len; cut += cut < 300 ? 1 : 211) {
		cr_assert_lt(open_mem(dev, p, cut, err, sizeof(err)), 0, "truncated at %zu", cut);
	}
	/* a flipped byte anywhere (here: in the model section and in the header): the CRC */
	memcpy(q, p, len);
	q[mb_at + 8 + mb / 2] ^= 0x10;
	cr_assert_eq(open_mem(dev, q, len, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "field 'crc'"), "%s", err);
	memcpy(q, p, len);
	q[60] ^= 1;
	cr_assert_eq(open_mem(dev, q, len, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "field 'crc'"), "%s", err);
	/* another format version (3: no model inside), CRC valid */
	memcpy(q, p, len);
	q[8] = 3;
	fix_crc(q, len);
	cr_assert_eq(open_mem(dev, q, len, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "field 'version' is 3, this reader reads version 5"), "%s", err);
	/* another device geometry */
	cr_assert_eq(accel_open("sim:rows=2,cols=2", &small), 0);
	cr_assert_eq(open_mem(small, p, len, err, sizeof(err)), -ENODEV);
	cr_assert(strstr(err, "field 'geometry.rows'"), "%s", err);
	accel_close(small);
	/* behind a valid CRC: a model section that is not a ModelProto */
	memcpy(q, p, len);
	memset(q + mb_at + 8, 0xff, (size_t)mb);
	fix_crc(q, len);
	cr_assert_eq(open_mem(dev, q, len, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "field 'model'"), "%s", err);
	/* model_bytes larger than what follows */
	memcpy(q, p, len);
	q[mb_at + 7] = 0x40;
	fix_crc(q, len);
	cr_assert_eq(open_mem(dev, q, len, err, sizeof(err)), -EBADMSG);
	cr_assert(strstr(err, "field 'model_bytes'"), "%s", err);
	/* a file without its model: open says it needs the ONNX file; load with the model still works */
	{
		size_t short_len = mb_at + 8 + 4;
		struct onnx_model *m = NULL;

		memcpy(q, p, mb_at);
		memset(q + mb_at, 0, 8);
		fix_crc(q, short_len);
		cr_assert_eq(open_mem(dev, q, short_len, err, sizeof(err)), -ENOENT);
		cr_assert(strstr(err, "field 'model_bytes' is 0"), "%s", err);
		cr_assert_eq(onnx_model_load(onnx_path, 0, &m, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(onnx_compiled_load_mem(m, dev, &x, 1, q, short_len, &cm, err, sizeof(err)), 0, "%s", err);
		onnx_compiled_free(cm);
		onnx_model_free(m);
	}
	/* a shape record changed behind a valid CRC: open compiles for it, the digest does not match; a
	 * load with the right shapes finds the record differs from them */
	memcpy(q, p, len);
	q[104 + 8 + 8 + 3 * 8] = 5;	/* shape 0, dims[3] */
	fix_crc(q, len);
	cr_assert_eq(open_mem(dev, q, len, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "field 'model_digest'"), "%s", err);
	{
		struct onnx_model *m = NULL;

		cr_assert_eq(onnx_model_load(onnx_path, 0, &m, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(onnx_compiled_load_mem(m, dev, &x, 1, q, len, &cm, err, sizeof(err)), -EINVAL);
		cr_assert_null(cm);
		cr_assert(strstr(err, "shape 0: field 'shape'"), "%s", err);
		onnx_model_free(m);
	}
	/* no such file */
	cr_assert_eq(onnx_compiled_open(dev, "/nonexistent/x.tnpucm", &cm, err, sizeof(err)), -ENOENT);
	cr_assert_null(cm);
	cr_assert(strstr(err, "cannot open"), "%s", err);
	free(q);
	free(p);
	onnx_tensor_release(&cpu);
	onnx_tensor_release(&direct);
	onnx_tensor_release(&x);
}
/* A BatchNormalization the loader did not fold is two element-wise steps whose second operand is packed
 * in the weights (no value): such a file loads with its model (onnx_compiled_load) and runs as compiled
 * (the reader required a value there and refused it: "step 1: field 'in'/'out' names no placed value"). */
Test(cmodel_open, unfolded_batchnorm_file_loads_with_its_model)
{
	struct onnx_tensor x, direct, cpu, y;
	struct onnx_compiled *cm = NULL;
	struct onnx_model *m = NULL;
	char err[512] = "";

	write_model(true);
	input_x(&x);
	compile_run_save(ONNX_LOAD_NO_FOLD, &x, &direct, &cpu);
	cr_assert_eq(onnx_model_load(onnx_path, ONNX_LOAD_NO_FOLD, &m, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_load(m, dev, &x, 1, cm_path, &cm, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, NULL), 0, "%s", onnx_compiled_error(cm));
	expect_bit_equal(&y, &direct);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	onnx_model_free(m);
	onnx_tensor_release(&cpu);
	onnx_tensor_release(&direct);
	onnx_tensor_release(&x);
}
