/* SPDX-License-Identifier: MIT */
/*
 * Weight-only quantised MatMuls (issue 29): com.microsoft MatMulNBits and DequantizeLinear(int8) -> MatMul.
 * The expected outputs are worked here from ONNX Runtime's contrib operator specification
 * (dequant(B)[n, k] = (code - zero_point) * scale, codes packed low bits first along K; Y = A @ dequant(B)^T
 * + bias) and the ONNX DequantizeLinear formula, in double; the runtime's CPU reference (no folding: the
 * MatMulNBits kernel itself) and its compiled sim run (the load-time fold into a device GEMM) must both
 * meet them.  Corrupted blobs are refused with the node's name and the reason.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "accel.h"
#include "builder.h"

static uint32_t rng = 4242;

/* A MatMulNBits's constants, packed here by the specification's layout. */
struct nb {
	int64_t K, N, bits, block, blocks, blob, zrow;
	uint8_t codes[8][256];	/* [n][k], k < K */
	uint8_t zps[8][16];	/* [n][block] */
	float scales[8][16];
	float bias[8];
	uint8_t b[8 * 16 * 128], zp[8 * 16];
};

static void nb_make(struct nb *q, int64_t K, int64_t N, int64_t bits, int64_t block, bool with_zp)
{
	memset(q, 0, sizeof(*q));
	q->K = K, q->N = N, q->bits = bits, q->block = block;
	q->blocks = (K + block - 1) / block;
	q->blob = block * bits / 8;
	q->zrow = (q->blocks * bits + 7) / 8;
	for (int64_t n = 0; n < N; n++) {
		for (int64_t bl = 0; bl < q->blocks; bl++) {
			q->scales[n][bl] = 0.01f + 0.05f * (mb_frand(&rng) + 1.0f);
			q->zps[n][bl] = with_zp ? (uint8_t)((rng >> 7) % (1u << bits)) : (uint8_t)(1u << (bits - 1));
			mb_frand(&rng);
		}
		for (int64_t k = 0; k < K; k++) {
			mb_frand(&rng);
			q->codes[n][k] = (uint8_t)((rng >> 9) % (1u << bits));
		}
		q->bias[n] = mb_frand(&rng);
	}
	/* pack: B[n][bl][byte], codes of k = bl * block + j, the low nibble first for 4 bits */
	for (int64_t n = 0; n < N; n++)
		for (int64_t k = 0; k < K; k++) {
			int64_t bl = k / block, j = k % block;
			uint8_t *byte = &q->b[(n * q->blocks + bl) * q->blob + (bits == 4 ? j / 2 : j)];

			*byte |= bits == 4 ? (uint8_t)(q->codes[n][k] << (4 * (j % 2))) : q->codes[n][k];
		}
	for (int64_t n = 0; n < N; n++)
		for (int64_t bl = 0; bl < q->blocks; bl++)
			q->zp[n * q->zrow + (bits == 4 ? bl / 2 : bl)] |=
				bits == 4 ? (uint8_t)(q->zps[n][bl] << (4 * (bl % 2))) : q->zps[n][bl];
}

static double nb_weight(const struct nb *q, int64_t n, int64_t k)
{
	return (double)((float)((int)q->codes[n][k] - (int)q->zps[n][k / q->block]) * q->scales[n][k / q->block]);
}

/* A [rows, K] input, the model MatMulNBits(a, B, scales[, zero_points][, bias]) -> y. */
static struct mb *nb_model(const struct nb *q, bool with_zp, bool with_bias, Onnx__NodeProto **node)
{
	struct mb *b = mb_new(17);
	int64_t bd[3] = { q->N, q->blocks, q->blob }, sd = q->N * q->blocks, zd = q->N * q->zrow, nd = q->N;
	Onnx__NodeProto *n;
	float scales[128];

	for (int64_t i = 0; i < q->N; i++)
		for (int64_t j = 0; j < q->blocks; j++)
			scales[i * q->blocks + j] = q->scales[i][j];
	mb_input(b, "a");
	mb_init(b, "B", ONNX_UINT8, 3, bd, q->b);
	mb_init(b, "scales", ONNX_FLOAT, 1, &sd, scales);
	if (with_zp)
		mb_init(b, "zp", ONNX_UINT8, 1, &zd, q->zp);
	if (with_bias)
		mb_init(b, "bias", ONNX_FLOAT, 1, &nd, q->bias);
	n = mb_node(b, "MatMulNBits", with_bias ? (with_zp ? "a,B,scales,zp,,bias" : "a,B,scales,,,bias")
					       : (with_zp ? "a,B,scales,zp" : "a,B,scales"), "y");
	n->name = (char *)"qproj";
	n->domain = (char *)"com.microsoft";
	mb_attr_i(b, n, "K", q->K);
	mb_attr_i(b, n, "N", q->N);
	mb_attr_i(b, n, "bits", q->bits);
	mb_attr_i(b, n, "block_size", q->block);
	mb_output(b, "y");
	if (node)
		*node = n;
	return b;
}

static struct onnx_model *load(struct mb *b, unsigned flags, int *ret, char *err, size_t len)
{
	struct onnx_model *m = NULL;
	size_t n;
	const uint8_t *buf = mb_pack(b, &n);

	*ret = onnx_model_load_mem(buf, n, flags, &m, err, len);
	return m;
}

/* Run m (compiled on sim when dev, else the CPU reference) on a [rows, K] input; y must be within the
 * operator tolerance of the double reference of A @ W^T (+ bias). */
static void expect_matmul(struct onnx_model *m, struct accel_dev *dev, const struct nb *q, bool bias, bool on_device)
{
	int64_t rows = 5, ad[2] = { rows, q->K };
	struct onnx_tensor a, y;
	struct onnx_run_stats st;
	struct onnx_compiled *cm = NULL;
	char err[512] = "";
	int ret;

	cr_assert_eq(onnx_tensor_alloc(&a, ONNX_FLOAT, 2, ad), 0);
	for (size_t i = 0; i < a.count; i++)
		((float *)a.data)[i] = mb_frand(&rng);
	if (dev) {
		cr_assert_eq(onnx_compile(m, dev, &a, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
		ret = onnx_compiled_run(cm, &a, 1, &y, 1, &st);
		cr_assert_eq(ret, 0, "run: %s", onnx_compiled_error(cm));
	} else {
		ret = onnx_run(m, NULL, &a, 1, &y, 1, &st);
		cr_assert_eq(ret, 0, "run: %s", onnx_model_error(m));
	}
	cr_assert_eq(y.ndim, 2);
	cr_assert_eq(y.dims[0], rows);
	cr_assert_eq(y.dims[1], q->N);
	for (int64_t i = 0; i < rows; i++)
		for (int64_t n = 0; n < q->N; n++) {
			double want = bias ? q->bias[n] : 0.0, got = ((float *)y.data)[i * q->N + n];

			for (int64_t k = 0; k < q->K; k++)
				want += (double)((float *)a.data)[i * q->K + k] * nb_weight(q, n, k);
			cr_expect(fabs(got - want) <= 1e-4 + 1e-3 * fabs(want), "y[%lld][%lld]: got %.7g, expected %.7g",
				  (long long)i, (long long)n, got, want);
		}
	if (on_device)
		cr_expect_eq(st.host_nodes, 0, "the MatMulNBits ran on the host (%u host nodes)", st.host_nodes);
	onnx_tensor_release(&a);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
}

static void check_form(int64_t K, int64_t N, int64_t bits, int64_t block, bool zp, bool bias)
{
	static struct nb q;
	struct accel_dev *dev;
	struct onnx_model *m;
	char err[512] = "";
	struct mb *b;
	int ret;

	nb_make(&q, K, N, bits, block, zp);
	b = nb_model(&q, zp, bias, NULL);
	m = load(b, ONNX_LOAD_NO_FOLD, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "load: %s", err);
	expect_matmul(m, NULL, &q, bias, false);	/* the host kernel */
	onnx_model_free(m);
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "load: %s", err);
	cr_assert_eq(accel_open("sim", &dev), 0);
	expect_matmul(m, dev, &q, bias, !bias);	/* folded into a device GEMM (with a bias: the host kernel) */
	onnx_model_free(m);
	accel_close(dev);
	mb_free(b);
}

Test(onnx_wq, matmulnbits_int4_symmetric_matches_spec_formula_on_host_and_device)
{
	check_form(40, 3, 4, 16, false, false);	/* K not a multiple of the block: a padded last block */
}

Test(onnx_wq, matmulnbits_int4_zero_points_odd_block_count_matches_spec_formula)
{
	check_form(80, 5, 4, 16, true, false);	/* 5 blocks: the zero points' last byte half used */
}

Test(onnx_wq, matmulnbits_int4_block_128_matches_spec_formula)
{
	check_form(200, 4, 4, 128, true, false);
}

Test(onnx_wq, matmulnbits_int8_default_zero_point_128_matches_spec_formula)
{
	check_form(48, 3, 8, 32, false, false);
}

Test(onnx_wq, matmulnbits_with_bias_adds_it_on_the_host_kernel)
{
	check_form(32, 2, 4, 16, true, true);
}

Test(onnx_wq, matmulnbits_folded_node_reports_its_own_operator_on_the_device)
{
	static struct nb q;
	struct onnx_node_info info;
	struct onnx_model *m;
	char err[512] = "";
	struct mb *b;
	int ret;

	nb_make(&q, 32, 2, 4, 32, false);
	b = nb_model(&q, false, false, NULL);
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "load: %s", err);
	cr_assert_eq(onnx_model_node_info(m, 0, &info), 0);
	cr_expect_str_eq(info.op, "MatMulNBits");
	cr_expect_eq(info.place, ONNX_PLACE_DEVICE, "placed %d: %s", info.place, info.reason);
	onnx_model_free(m);
	mb_free(b);
}

/* The model with one attribute or initializer broken must be refused at load (the fold dequantises it)
 * and at run time (the host kernel, no folding), each with the node's name and the reason. */
static void expect_refused(struct mb *b, const char *what)
{
	struct onnx_model *m;
	char err[512] = "";
	int ret;

	m = load(b, 0, &ret, err, sizeof(err));
	cr_expect(ret == -EINVAL || ret == -EOPNOTSUPP, "load returned %d (%s)", ret, err);
	cr_expect(strstr(err, "qproj") && strstr(err, what), "load message: %s", err);
	onnx_model_free(m);
	m = load(b, ONNX_LOAD_NO_FOLD, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "load: %s", err);
	{
		int64_t ad[2] = { 1, 64 };
		struct onnx_tensor a, y;

		cr_assert_eq(onnx_tensor_alloc(&a, ONNX_FLOAT, 2, ad), 0);
		ret = onnx_run(m, NULL, &a, 1, &y, 1, NULL);
		cr_expect(ret == -EINVAL || ret == -EOPNOTSUPP, "run returned %d (%s)", ret, onnx_model_error(m));
		cr_expect(strstr(onnx_model_error(m), "qproj") && strstr(onnx_model_error(m), what), "run message: %s",
			  onnx_model_error(m));
		if (!ret)
			onnx_tensor_release(&y);
		onnx_tensor_release(&a);
	}
	onnx_model_free(m);
}

static void set_attr(Onnx__NodeProto *n, const char *name, int64_t v)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (!strcmp(n->attribute[i]->name, name))
			n->attribute[i]->i = v;
}

Test(onnx_wq, matmulnbits_rejects_a_blob_of_the_wrong_size_for_k_n_bits_and_block)
{
	static struct nb q;
	static const struct {
		const char *attr;
		int64_t v;
		const char *what;
	} cases[] = {
		{ "K", 96, "input B is UINT8 [3,4,8], expected UINT8 [3,6,8]" },	/* K does not fit the blocks */
		{ "N", 4, "input B is UINT8 [3,4,8], expected UINT8 [4,4,8]" },
		{ "bits", 8, "input B is UINT8 [3,4,8], expected UINT8 [3,4,16]" },
		{ "block_size", 32, "input B is UINT8 [3,4,8], expected UINT8 [3,2,16]" },
		{ "bits", 3, "bits = 3 is not supported" },
		{ "block_size", 24, "block_size = 24 must be a power of two" },
		{ "block_size", 8, "block_size = 8 must be a power of two of at least 16" },
		{ "K", 0, "attributes K = 0 and N = 3" },
	};

	nb_make(&q, 64, 3, 4, 16, true);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		Onnx__NodeProto *n;
		struct mb *b = nb_model(&q, true, false, &n);

		set_attr(n, cases[i].attr, cases[i].v);
		expect_refused(b, cases[i].what);
		mb_free(b);
	}
}

Test(onnx_wq, matmulnbits_rejects_scales_and_zero_points_of_the_wrong_size_or_type)
{
	static struct nb q;
	Onnx__NodeProto *n;
	struct mb *b;

	nb_make(&q, 64, 3, 4, 16, true);
	b = nb_model(&q, true, false, &n);
	n->input[2] = (char *)"zp";	/* UINT8 scales */
	expect_refused(b, "input scales is UINT8 [6], expected FLOAT of N * ceil(K / block_size) = 12 elements");
	mb_free(b);
	b = nb_model(&q, true, false, &n);
	n->input[3] = (char *)"scales";	/* FLOAT zero points (ONNX Runtime allows them; not supported) */
	expect_refused(b, "input zero_points is FLOAT [12], expected UINT8 of N * ceil(blocks * bits / 8) = 6 elements");
	mb_free(b);
	b = nb_model(&q, true, false, &n);
	n->input[1] = (char *)"scales";	/* a FLOAT blob */
	expect_refused(b, "input B is FLOAT [12], expected UINT8 [3,4,8]");
	mb_free(b);
}

Test(onnx_wq, matmulnbits_only_in_the_com_microsoft_domain)
{
	static struct nb q;
	Onnx__NodeProto *n;
	struct onnx_model *m;
	char err[512] = "";
	struct mb *b;
	int ret;

	nb_make(&q, 32, 2, 4, 16, false);
	b = nb_model(&q, false, false, &n);
	n->domain = (char *)"";
	m = load(b, 0, &ret, err, sizeof(err));
	cr_expect_eq(ret, -EOPNOTSUPP);
	cr_expect(strstr(err, "unsupported operator 'MatMulNBits' (node 'qproj')"), "%s", err);
	onnx_model_free(m);
	n->domain = (char *)"com.microsoft";
	n->op_type = (char *)"Relu";
	m = load(b, 0, &ret, err, sizeof(err));
	cr_expect_eq(ret, -EOPNOTSUPP);
	cr_expect(strstr(err, "unsupported operator 'Relu' of domain 'com.microsoft'"), "%s", err);
	onnx_model_free(m);
	mb_free(b);
}

/* y = x @ DequantizeLinear(q int8 [K, N], s [N], axis 1): the DequantizeLinear folded at load time, the
 * MatMul a device GEMM; both equal q * s per the ONNX formula. */
Test(onnx_wq, dequantizelinear_int8_weight_folds_into_a_device_gemm)
{
	enum { K = 24, N = 6, ROWS = 3 };
	int64_t qd[2] = { K, N }, sd = N, xd[2] = { ROWS, K };
	int8_t qw[K * N];
	float s[N];
	struct mb *b = mb_new(13);
	struct onnx_node_info info;
	struct onnx_compiled *cm;
	struct onnx_run_stats st;
	struct onnx_tensor x, y;
	struct accel_dev *dev;
	struct onnx_model *m;
	Onnx__NodeProto *dq;
	char err[512] = "";
	int ret;

	for (int i = 0; i < K * N; i++) {
		mb_frand(&rng);
		qw[i] = (int8_t)((int)((rng >> 8) % 255) - 127);
	}
	for (int n = 0; n < N; n++)
		s[n] = 0.001f + 0.01f * (mb_frand(&rng) + 1.0f);
	mb_input(b, "x");
	mb_init(b, "q", ONNX_INT8, 2, qd, qw);
	mb_init(b, "s", ONNX_FLOAT, 1, &sd, s);
	dq = mb_node(b, "DequantizeLinear", "q,s", "w");
	dq->name = (char *)"dq";
	mb_attr_i(b, dq, "axis", 1);
	mb_node(b, "MatMul", "x,w", "y")->name = (char *)"mm";
	mb_output(b, "y");
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "load: %s", err);
	cr_assert_eq(onnx_model_node_info(m, 0, &info), 0);
	cr_expect_eq(info.place, ONNX_PLACE_FOLDED, "DequantizeLinear placed %d (%s)", info.place, info.reason);
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 2, xd), 0);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = mb_frand(&rng);
	cr_assert_eq(accel_open("sim", &dev), 0);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "compile: %s", err);
	cr_assert_eq(onnx_compiled_run(cm, &x, 1, &y, 1, &st), 0, "run: %s", onnx_compiled_error(cm));
	cr_expect_eq(st.host_nodes, 0);
	cr_expect_eq(st.accel_nodes, 1);
	for (int i = 0; i < ROWS; i++)
		for (int n = 0; n < N; n++) {
			double want = 0, got = ((float *)y.data)[i * N + n];

			for (int k = 0; k < K; k++)
				want += (double)((float *)x.data)[i * K + k] * (double)((float)qw[k * N + n] * s[n]);
			cr_expect(fabs(got - want) <= 1e-4 + 1e-3 * fabs(want), "y[%d][%d]: got %.7g, expected %.7g", i, n,
				  got, want);
		}
	onnx_tensor_release(&x);
	onnx_tensor_release(&y);
	onnx_compiled_free(cm);
	accel_close(dev);
	onnx_model_free(m);
	mb_free(b);
}

/*
 * The compiled plan on a device with the decompressing load (DMA_DEQ, CAP_FEATURES bit 23) keeps a
 * weight-only quantised weight packed (compile_wq.c): the weight image holds the codes, scales and zero
 * points, not K x N floats, and the GEMM step runs accel_qgemm.  Its outputs equal, bit for bit, those of
 * the same plan on a device without it (sim:wdecomp=off: the load-time fold's fp32 weight, the same
 * expanded values and tiling), which the tests above hold to the specification's formula.
 */
struct wq_run {
	struct onnx_tensor y;
	struct onnx_compiled_info info;
	struct onnx_compiled_step step;
	char reason[256];
};

static void wq_compile_run(struct onnx_model *m, unsigned node, const char *device, const struct onnx_tensor *x,
			   struct wq_run *r, bool round_trip)
{
	struct onnx_compiled *cm = NULL;
	struct onnx_run_stats st;
	struct accel_dev *dev;
	char err[512] = "";

	cr_assert_eq(accel_open(device, &dev), 0, "%s", device);
	cr_assert_eq(onnx_compile(m, dev, x, 1, 0, &cm, err, sizeof(err)), 0, "compile on %s: %s", device, err);
	if (round_trip) {	/* saved and loaded again: the packed GEMM's fields survive the file */
		char path[] = "/tmp/test-wq-XXXXXX";
		int fd = mkstemp(path);

		cr_assert_geq(fd, 0);
		close(fd);
		cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
		onnx_compiled_free(cm);
		cm = NULL;
		cr_assert_eq(onnx_compiled_load(m, dev, x, 1, path, &cm, err, sizeof(err)), 0, "%s", err);
		unlink(path);
	}
	cr_assert_eq(onnx_compiled_run(cm, x, 1, &r->y, 1, &st), 0, "run on %s: %s", device, onnx_compiled_error(cm));
	cr_expect_eq(st.host_nodes, 0, "%s: %u host nodes", device, st.host_nodes);
	cr_assert_eq(onnx_compiled_info(cm, &r->info), 0);
	cr_assert_eq(onnx_compiled_step_info(cm, node, &r->step), 0);
	snprintf(r->reason, sizeof(r->reason), "%s", r->step.reason ? r->step.reason : "");
	onnx_compiled_free(cm);
	accel_close(dev);
}

static void expect_same_bits(const struct wq_run *a, const struct wq_run *b)
{
	cr_assert_eq(a->y.count, b->y.count);
	for (size_t i = 0; i < a->y.count; i++)
		cr_expect_eq(memcmp((const float *)a->y.data + i, (const float *)b->y.data + i, 4), 0,
			     "y[%zu]: packed %.9g, fp32 fold %.9g", i, ((const float *)a->y.data)[i],
			     ((const float *)b->y.data)[i]);
}

Test(onnx_wq, matmulnbits_int4_compiled_plan_reads_the_packed_weights)
{
	static struct nb q;
	int64_t xd[2] = { 5, 256 };
	struct wq_run packed, fp32;
	struct onnx_tensor x;
	struct onnx_model *m;
	char err[512] = "";
	uint64_t packed_bytes;
	struct mb *b;
	int ret;

	nb_make(&q, 256, 8, 4, 32, true);	/* 8 blocks a column, 4-bit zero points */
	b = nb_model(&q, true, false, NULL);
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "load: %s", err);
	expect_matmul(m, NULL, &q, false, false);	/* the folded node on the CPU: the formula */
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 2, xd), 0);
	for (size_t i = 0; i < x.count; i++)
		((float *)x.data)[i] = mb_frand(&rng);
	wq_compile_run(m, 0, "sim", &x, &packed, true);
	wq_compile_run(m, 0, "sim:wdecomp=off", &x, &fp32, false);
	expect_same_bits(&packed, &fp32);
	/* codes 8 x 8 x 16 B, scales 8 x 8 x 4 B, zero points 8 x 4 B, each 64-byte aligned */
	packed_bytes = 8 * 8 * 16 + 8 * 8 * 4 + 8 * 4;
	cr_expect(packed.info.weight_bytes >= packed_bytes && packed.info.weight_bytes < packed_bytes + 3 * 64,
		  "weight image %llu bytes, the packed form is %llu", (unsigned long long)packed.info.weight_bytes,
		  (unsigned long long)packed_bytes);
	cr_expect_geq(fp32.info.weight_bytes, 256 * 8 * 4, "without DMA_DEQ: the fp32 weight");
	cr_expect_str_eq(packed.step.kind, "gemm");
	cr_expect(packed.step.device);
	cr_expect(strstr(packed.reason, "packed int4 weights"), "%s", packed.reason);
	cr_expect(!strstr(fp32.reason, "packed"), "%s", fp32.reason);
	onnx_tensor_release(&packed.y);
	onnx_tensor_release(&fp32.y);
	onnx_tensor_release(&x);
	onnx_model_free(m);
	mb_free(b);
}

/* x @ DequantizeLinear(q [K, N] of dt, s[, zp]) with ns scales (N: per column, 1: per tensor). */
static struct onnx_model *dq_model(enum onnx_dtype dt, int64_t K, int64_t N, int64_t ns, bool with_zp, unsigned flags)
{
	int64_t qd[2] = { K, N };
	uint8_t qw[64 * 32], zp[32];
	float s[32];
	struct mb *b = mb_new(13);
	struct onnx_model *m;
	Onnx__NodeProto *dq;
	char err[512] = "";
	int ret;

	for (int64_t i = 0; i < K * N; i++) {
		mb_frand(&rng);
		qw[i] = (uint8_t)(rng >> 8);
	}
	for (int64_t n = 0; n < ns; n++) {
		s[n] = 0.001f + 0.01f * (mb_frand(&rng) + 1.0f);
		zp[n] = (uint8_t)(rng >> 12);
	}
	mb_input(b, "x");
	mb_init(b, "q", dt, 2, qd, qw);
	mb_init(b, "s", ONNX_FLOAT, ns > 1, &ns, s);
	if (with_zp)
		mb_init(b, "zp", dt, ns > 1, &ns, zp);
	dq = mb_node(b, "DequantizeLinear", with_zp ? "q,s,zp" : "q,s", "w");
	mb_attr_i(b, dq, "axis", 1);
	mb_node(b, "MatMul", "x,w", "y");
	mb_output(b, "y");
	m = load(b, flags, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "load: %s", err);
	mb_free(b);
	return m;
}

Test(onnx_wq, dequantizelinear_weight_compiled_plan_reads_the_packed_codes)
{
	static const struct {
		enum onnx_dtype dt;
		int64_t ns;
		bool zp;
		const char *reason;
	} forms[] = {
		{ ONNX_INT8, 32, false, "packed int8 weights" },	/* the int8 scheme: per column, symmetric */
		{ ONNX_INT8, 32, true, "packed int8 weights" },
		{ ONNX_UINT8, 1, true, "packed uint8 weights" },	/* per tensor */
		{ ONNX_UINT8, 32, false, "packed uint8 weights" },	/* ONNX's zero point 0, not DMA_DEQ's 128 */
	};

	for (unsigned f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		enum { K = 40, N = 32, ROWS = 3 };
		int64_t xd[2] = { ROWS, K };
		uint32_t seed = rng;
		struct onnx_model *m = dq_model(forms[f].dt, K, N, forms[f].ns, forms[f].zp, 0), *ref;
		struct wq_run packed, fp32, cpu;
		struct onnx_tensor x;

		cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 2, xd), 0);
		for (size_t i = 0; i < x.count; i++)
			((float *)x.data)[i] = mb_frand(&rng);
		wq_compile_run(m, 1, "sim", &x, &packed, f == 2);
		wq_compile_run(m, 1, "sim:wdecomp=off", &x, &fp32, false);
		expect_same_bits(&packed, &fp32);
		cr_expect_lt(packed.info.weight_bytes, K * N + N * 4 + 3 * 64, "form %u: %llu weight bytes", f,
			     (unsigned long long)packed.info.weight_bytes);
		cr_expect_geq(fp32.info.weight_bytes, K * N * 4, "form %u", f);
		cr_expect(strstr(packed.reason, forms[f].reason), "form %u: %s", f, packed.reason);
		/* and the CPU reference: the same model unfolded, the DequantizeLinear and MatMul kernels */
		rng = seed;
		ref = dq_model(forms[f].dt, K, N, forms[f].ns, forms[f].zp, ONNX_LOAD_NO_FOLD);
		cr_assert_eq(onnx_run(ref, NULL, &x, 1, &cpu.y, 1, NULL), 0, "%s", onnx_model_error(ref));
		for (size_t i = 0; i < cpu.y.count; i++) {
			double want = ((float *)cpu.y.data)[i], got = ((float *)packed.y.data)[i];

			cr_expect(fabs(got - want) <= 1e-4 + 1e-3 * fabs(want), "form %u y[%zu]: %.9g, CPU %.9g", f, i, got,
				  want);
		}
		onnx_model_free(ref);
		onnx_tensor_release(&cpu.y);
		onnx_tensor_release(&packed.y);
		onnx_tensor_release(&fp32.y);
		onnx_tensor_release(&x);
		onnx_model_free(m);
	}
}

/* A saved packed plan whose step carries packed weights outside the weight image, or an unknown format,
 * is refused naming the field (CRC made valid again with zlib's crc32). */
Test(onnx_wq, compiled_file_with_bad_packed_weight_fields_is_refused)
{
	static struct nb q;
	static const struct {
		unsigned at;		/* byte of the step record (version 5's fields from 504) */
		uint64_t v;
		unsigned bytes;
	} edits[] = {
		{ 504, 4, 4 },			/* wq: 1 + enum accel_qformat, at most 3 */
		{ 508, 8, 4 },			/* wq_block: not 0 or a power of two 16..4096 */
		{ 512, 1u << 30, 4 },		/* the codes' pitch: columns past the weights */
		{ 524, 1ull << 40, 8 },		/* the scales' offset */
		{ 532, 4096, 8 },		/* the zero points' offset: past the weights */
	};
	char path[] = "/tmp/test-wq-XXXXXX", err[512] = "";
	int64_t xd[2] = { 2, 64 };
	struct onnx_compiled *cm = NULL;
	struct accel_dev *dev;
	struct onnx_tensor x;
	struct onnx_model *m;
	uint8_t *p, *e;
	size_t len, rec;
	struct mb *b;
	FILE *f;
	int ret, fd;

	nb_make(&q, 64, 4, 4, 16, true);
	b = nb_model(&q, true, false, NULL);
	m = load(b, 0, &ret, err, sizeof(err));
	cr_assert_eq(ret, 0, "load: %s", err);
	cr_assert_eq(onnx_tensor_alloc(&x, ONNX_FLOAT, 2, xd), 0);
	cr_assert_eq(accel_open("sim", &dev), 0);
	cr_assert_eq(onnx_compile(m, dev, &x, 1, 0, &cm, err, sizeof(err)), 0, "%s", err);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(onnx_compiled_save(cm, path, err, sizeof(err)), 0, "%s", err);
	onnx_compiled_free(cm);
	f = fopen(path, "rb");
	cr_assert(f);
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	rewind(f);
	p = malloc(len);
	e = malloc(len);
	cr_assert(p && e && fread(p, 1, len, f) == len);
	fclose(f);
	unlink(path);
	/* step 0's record: after the 104-byte header, the inputs (8 + 72 bytes a shape), the value records
	 * (100 bytes each) */
	rec = 104 + 8 + 72 * (size_t)(p[108] | p[109] << 8) + 100 * (size_t)(p[52] | p[53] << 8);
	cr_assert_eq(p[rec + 504], 1 + ACCEL_QFMT_UINT4, "step 0 is the packed int4 GEMM (wq %u)", p[rec + 504]);
	for (unsigned i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		uLong crc;

		memcpy(e, p, len);
		for (unsigned k = 0; k < edits[i].bytes; k++)
			e[rec + edits[i].at + k] = (uint8_t)(edits[i].v >> (8 * k));
		crc = crc32(0, e, (uInt)(len - 4));
		for (unsigned k = 0; k < 4; k++)
			e[len - 4 + k] = (uint8_t)(crc >> (8 * k));
		cm = NULL;
		cr_expect_eq(onnx_compiled_load_mem(m, dev, &x, 1, e, len, &cm, err, sizeof(err)), -EBADMSG, "edit %u", i);
		cr_expect(strstr(err, "field 'wq'"), "edit %u: %s", i, err);
		onnx_compiled_free(cm);
	}
	cr_assert_eq(onnx_compiled_load_mem(m, dev, &x, 1, p, len, &cm, err, sizeof(err)), 0, "unedited: %s", err);
	onnx_compiled_free(cm);
	free(p);
	free(e);
	onnx_tensor_release(&x);
	accel_close(dev);
	onnx_model_free(m);
	mb_free(b);
}
