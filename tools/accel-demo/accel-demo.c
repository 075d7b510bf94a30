/* SPDX-License-Identifier: MIT */
/*
 * accel-demo - the `make demo` workload (issue #7): an int8 GEMM, an fp32 GEMM and an int8 conv layer
 * through libaccel, each checked against the CPU references of ref.c, with wall time and the job's
 * device counters in one table.  Documentation/tools.md, section accel-demo.
 *
 *   accel-demo [--device PATH|sim[:...]] [--seed N]
 *
 * Exit status: 0 every result verified, 1 a result did not verify or libaccel failed, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accel.h"
#include "cli.h"
#include "ref.h"

#define DEFAULT_NODE "/dev/accel/accel0"
#define DEFAULT_SEED 1

/* libaccel.md, Numerics: |got - ref| <= 1e-4 * (1 + sum |a_i * b_i|) against a double reference. */
#define FP32_TOL 1e-4

struct opts {
	const char *device;	/* NULL: libaccel's default */
	uint64_t seed;
};

/* xorshift64*: small, seedable and the same on every host, so a seed reproduces a run anywhere. */
struct rng {
	uint64_t s;
};

struct demo {
	struct accel_dev *dev;
	struct accel_caps caps;
	struct rng rng;
	uint64_t seed;
};

/* One line of the table. */
struct row {
	char op[40];
	const char *dtype;
	char result[48];
	bool ok;
	double wall_ms;
	double macs;		/* the operation's own multiply-accumulates (no padding of edge tiles) */
	bool f32;
	struct accel_counters cnt;
};

/* The buffers of one operation, freed together. */
struct bufs {
	struct accel_buffer *b[5];
	unsigned n;
};

static uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1Dull;
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	/* splitmix64 step: any seed (0 included) gives a non-zero xorshift state. */
	uint64_t z = seed + 0x9E3779B97F4A7C15ull;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	r->s = (z ^ (z >> 31)) | 1;
}

static void fill_i8(struct rng *r, int8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (int8_t)(rng_next(r) >> 56);
}

/* Uniform in [-1, 1) with 24 significant bits, so every value is an exact float. */
static void fill_f32(struct rng *r, float *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (float)((int32_t)(rng_next(r) >> 40) - (1 << 23)) / (float)(1 << 23);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* A libaccel call failed: say which step and why, as the library reports it. */
static int lib_fail(const struct demo *d, const char *step, int ret)
{
	const char *msg = d->dev ? accel_last_error(d->dev) : "";

	fprintf(stderr, "accel-demo: %s: %s%s%s\n", step, accel_strerror(ret), *msg ? ": " : "", msg);
	return -1;
}

static int alloc(struct demo *d, struct bufs *bs, uint64_t size, const char *step, struct accel_buffer **out)
{
	int ret = accel_buffer_alloc(d->dev, size, out);

	if (ret)
		return lib_fail(d, step, ret);
	bs->b[bs->n++] = *out;
	return 0;
}

static void free_bufs(struct bufs *bs)
{
	while (bs->n)
		accel_buffer_free(bs->b[--bs->n]);
}

/* Finish an operation submitted at t0 (ret: what the accel_* call returned): wait, time, read the counters. */
static int finish_job(struct demo *d, const char *what, int ret, struct accel_job *job, double t0, struct row *r)
{
	char step[64];

	if (ret) {
		snprintf(step, sizeof(step), "%s: submit", what);
		return lib_fail(d, step, ret);
	}
	ret = accel_job_wait(job, -1);
	r->wall_ms = now_ms() - t0;
	if (ret) {
		snprintf(step, sizeof(step), "%s: wait", what);
		accel_job_free(job);
		return lib_fail(d, step, ret);
	}
	ret = accel_job_counters(job, &r->cnt);
	accel_job_free(job);
	if (ret) {
		snprintf(step, sizeof(step), "%s: counters", what);
		return lib_fail(d, step, ret);
	}
	return 0;
}

/* Compare int8-path results exactly; report the first mismatch (as "<rows> i <cols> j") on stderr. */
static void check_exact(const struct demo *d, struct row *r, const char *what, const int32_t *ref, const void *got,
			bool got_i8, size_t count, uint32_t cols, const char *rows_name, const char *cols_name)
{
	size_t bad = 0;

	for (size_t i = 0; i < count; i++) {
		int32_t g = got_i8 ? ((const int8_t *)got)[i] : ((const int32_t *)got)[i];

		if (g == ref[i])
			continue;
		if (!bad++)
			fprintf(stderr, "accel-demo: %s: output %s %zu %s %zu = %" PRId32 ", expected %" PRId32
				" (seed %" PRIu64 ")\n", what, rows_name, i / cols, cols_name, i % cols, g, ref[i], d->seed);
	}
	r->ok = !bad;
	if (bad)
		snprintf(r->result, sizeof(r->result), "FAIL %zu/%zu", bad, count);
	else
		snprintf(r->result, sizeof(r->result), "ok (exact)");
}

/* Operands of C[MxN] = A[MxK] B[KxN] in three new buffers; the step names say which GEMM failed. */
struct gemm_io {
	struct accel_buffer *ba, *bb, *bc;
	struct accel_tensor A, B, C;
	struct accel_gemm_desc g;
};

static int gemm_setup(struct demo *d, struct bufs *bs, const char *what, enum accel_dtype in, enum accel_dtype out,
		      uint32_t M, uint32_t N, uint32_t K, struct gemm_io *io)
{
	char step[64];
	size_t ei = accel_dtype_size(in), eo = accel_dtype_size(out);
	int ret;

	snprintf(step, sizeof(step), "%s: alloc A", what);
	if (alloc(d, bs, (uint64_t)M * K * ei, step, &io->ba))
		return -1;
	snprintf(step, sizeof(step), "%s: alloc B", what);
	if (alloc(d, bs, (uint64_t)K * N * ei, step, &io->bb))
		return -1;
	snprintf(step, sizeof(step), "%s: alloc C", what);
	if (alloc(d, bs, (uint64_t)M * N * eo, step, &io->bc))
		return -1;
	snprintf(step, sizeof(step), "%s: tensors", what);
	if ((ret = accel_tensor_2d(io->ba, 0, in, M, K, &io->A)) ||
	    (ret = accel_tensor_2d(io->bb, 0, in, K, N, &io->B)) ||
	    (ret = accel_tensor_2d(io->bc, 0, out, M, N, &io->C)))
		return lib_fail(d, step, ret);
	memset(&io->g, 0, sizeof(io->g));
	io->g.a = &io->A;
	io->g.b = &io->B;
	io->g.c = &io->C;
	return 0;
}

/* (1) int8 GEMM, raw int32 accumulators: the exact check sees every bit of every sum. */
static int demo_gemm_i8(struct demo *d, struct row *r)
{
	enum { M = 256, N = 256, K = 256 };
	const char *what = "gemm int8";
	struct gemm_io io;
	struct ref_epi epi = { 0 };
	struct bufs bs = { 0 };
	struct accel_job *job = NULL;
	int32_t *ref = NULL;
	double t0;
	int ret = -1;

	snprintf(r->op, sizeof(r->op), "gemm %ux%ux%u", M, N, K);
	r->dtype = "int8->int32";
	r->macs = (double)M * N * K;
	if (gemm_setup(d, &bs, what, ACCEL_INT8, ACCEL_INT32, M, N, K, &io))
		goto out;
	fill_i8(&d->rng, accel_buffer_ptr(io.ba), (size_t)M * K);
	fill_i8(&d->rng, accel_buffer_ptr(io.bb), (size_t)K * N);

	t0 = now_ms();
	ret = accel_gemm(d->dev, &io.g, NULL, &job);
	if ((ret = finish_job(d, what, ret, job, t0, r)))
		goto out;

	ref = malloc(sizeof(*ref) * M * N);
	if (!ref) {
		fprintf(stderr, "accel-demo: %s: reference: out of memory\n", what);
		ret = -1;
		goto out;
	}
	ref_gemm_i8(accel_buffer_ptr(io.ba), accel_buffer_ptr(io.bb), M, N, K, &epi, ref);
	check_exact(d, r, what, ref, accel_buffer_ptr(io.bc), false, (size_t)M * N, N, "row", "col");
out:
	free(ref);
	free_bufs(&bs);
	return ret;
}

/* (2) fp32 GEMM, every output against a double reference with libaccel's documented tolerance. */
static int demo_gemm_f32(struct demo *d, struct row *r)
{
	enum { M = 192, N = 160, K = 224 };
	const char *what = "gemm fp32";
	struct gemm_io io;
	struct bufs bs = { 0 };
	struct accel_job *job = NULL;
	const float *a, *b, *c;
	double t0, worst = 0;
	size_t bad = 0;
	int ret = -1;

	snprintf(r->op, sizeof(r->op), "gemm %ux%ux%u", M, N, K);
	r->dtype = "fp32";
	r->f32 = true;
	r->macs = (double)M * N * K;
	if (gemm_setup(d, &bs, what, ACCEL_FP32, ACCEL_FP32, M, N, K, &io))
		goto out;
	fill_f32(&d->rng, accel_buffer_ptr(io.ba), (size_t)M * K);
	fill_f32(&d->rng, accel_buffer_ptr(io.bb), (size_t)K * N);

	t0 = now_ms();
	ret = accel_gemm(d->dev, &io.g, NULL, &job);
	if ((ret = finish_job(d, what, ret, job, t0, r)))
		goto out;

	a = accel_buffer_ptr(io.ba);
	b = accel_buffer_ptr(io.bb);
	c = accel_buffer_ptr(io.bc);
	for (uint32_t i = 0; i < M; i++)
		for (uint32_t j = 0; j < N; j++) {
			double sum, mag, got = c[(size_t)i * N + j], err;

			ref_gemm_f32_at(a, b, N, K, i, j, &sum, &mag);
			err = fabs(got - sum) / (1 + mag);
			/* !(err <= tol) also catches NaN. */
			if (!(err <= FP32_TOL)) {
				if (!bad++)
					fprintf(stderr, "accel-demo: %s: output row %u col %u = %.9g, expected %.9g (seed %"
						PRIu64 ")\n", what, i, j, got, sum, d->seed);
				worst = INFINITY;
			} else if (err > worst) {
				worst = err;
			}
		}
	r->ok = !bad;
	if (bad)
		snprintf(r->result, sizeof(r->result), "FAIL %zu/%u", bad, M * N);
	else
		snprintf(r->result, sizeof(r->result), "ok (%.0e)", worst);
out:
	free_bufs(&bs);
	return ret;
}

/*
 * (3) A quantised conv layer: NHWC int8 input, OHWI int8 weights, int32 bias, ReLU and requantisation
 * to int8 fused in the SFU, padding with the input zero point (0).
 */
static int demo_conv_i8(struct demo *d, struct row *r)
{
	const struct ref_conv geo = {
		.n = 1, .h = 28, .w = 28, .c = 32, .k = 64, .r = 3, .s = 3, .stride = 1, .pad = 1,
		.pad_value = 0, .oh = 28, .ow = 28,
	};
	const char *what = "conv int8";
	uint64_t in_bytes = (uint64_t)geo.n * geo.h * geo.w * geo.c;
	uint64_t wt_bytes = (uint64_t)geo.k * geo.r * geo.s * geo.c;
	uint64_t out_elems = (uint64_t)geo.n * geo.oh * geo.ow * geo.k;
	struct accel_buffer *bi, *bw, *bbias, *bo;
	struct accel_tensor I, W, Bias, O;
	struct accel_conv2d_desc cd;
	struct ref_epi epi = { .relu = true };
	struct bufs bs = { 0 };
	struct accel_job *job = NULL;
	int32_t *bias, *ref = NULL;
	double t0;
	int ret = -1;

	snprintf(r->op, sizeof(r->op), "conv%ux%u %ux%ux%u->%u", geo.r, geo.s, geo.h, geo.w, geo.c, geo.k);
	r->dtype = "int8->int8";
	r->macs = (double)out_elems * geo.r * geo.s * geo.c;
	if (alloc(d, &bs, in_bytes, "conv int8: alloc input", &bi) ||
	    alloc(d, &bs, wt_bytes, "conv int8: alloc weights", &bw) ||
	    alloc(d, &bs, (uint64_t)geo.k * 4, "conv int8: alloc bias", &bbias) ||
	    alloc(d, &bs, out_elems, "conv int8: alloc output", &bo))
		goto out;
	if ((ret = accel_tensor_4d(bi, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, geo.n, geo.c, geo.h, geo.w, &I)) ||
	    (ret = accel_tensor_4d(bw, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, geo.k, geo.c, geo.r, geo.s, &W)) ||
	    (ret = accel_tensor_2d(bbias, 0, ACCEL_INT32, 1, geo.k, &Bias)) ||
	    (ret = accel_tensor_4d(bo, 0, ACCEL_INT8, ACCEL_LAYOUT_NHWC, geo.n, geo.k, geo.oh, geo.ow, &O))) {
		ret = lib_fail(d, "conv int8: tensors", ret);
		goto out;
	}
	fill_i8(&d->rng, accel_buffer_ptr(bi), in_bytes);
	fill_i8(&d->rng, accel_buffer_ptr(bw), wt_bytes);
	bias = accel_buffer_ptr(bbias);
	for (uint32_t o = 0; o < geo.k; o++)
		bias[o] = (int32_t)(rng_next(&d->rng) >> 47) - (1 << 16);	/* +-65536: ~1 sigma of the sums */

	memset(&cd, 0, sizeof(cd));
	cd.input = &I;
	cd.weights = &W;
	cd.output = &O;
	cd.stride_h = cd.stride_w = geo.stride;
	cd.pad_top = cd.pad_left = cd.pad_bottom = cd.pad_right = geo.pad;
	cd.dil_h = cd.dil_w = 1;
	cd.groups = 1;
	cd.input_zero_point = geo.pad_value;
	cd.epi.bias = &Bias;
	cd.epi.act = ACCEL_ACT_RELU;
	/*
	 * A sum of 288 products of uniform int8 values has a standard deviation of about 9.3e4; scaling by
	 * 1/2500 maps ~3.4 sigma onto 127, so the output uses the int8 range and rarely saturates.
	 */
	if ((ret = accel_quant_from_scale(1.0 / 2500, &cd.epi.multiplier, &cd.epi.shift))) {
		lib_fail(d, "conv int8: quant_from_scale", ret);
		goto out;
	}
	t0 = now_ms();
	ret = accel_conv2d(d->dev, &cd, NULL, &job);
	if ((ret = finish_job(d, what, ret, job, t0, r)))
		goto out;

	ref = malloc(sizeof(*ref) * out_elems);
	if (!ref) {
		fprintf(stderr, "accel-demo: %s: reference: out of memory\n", what);
		ret = -1;
		goto out;
	}
	epi.bias = bias;
	epi.multiplier = cd.epi.multiplier;
	epi.shift = cd.epi.shift;
	epi.zero_point = cd.epi.zero_point;
	ref_conv_i8(&geo, accel_buffer_ptr(bi), accel_buffer_ptr(bw), &epi, ref);
	check_exact(d, r, what, ref, accel_buffer_ptr(bo), true, out_elems, geo.k, "pixel", "channel");
out:
	free(ref);
	free_bufs(&bs);
	return ret;
}

/* "192 KiB", "42.5 KiB", "1.50 MiB", "96 B". */
static const char *fmt_bytes(uint64_t b, char *buf, size_t len)
{
	if (b < 1024)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else if (b < 1024 * 1024)
		snprintf(buf, len, b % 1024 ? "%.1f KiB" : "%.0f KiB", (double)b / 1024);
	else
		snprintf(buf, len, "%.2f MiB", (double)b / (1024 * 1024));
	return buf;
}

static void print_header(void)
{
	printf("%-21s %-11s %-12s %8s %12s %7s %9s %9s\n", "op", "dtype", "result", "wall ms", "model cycles",
	       "PE util", "DMA in", "DMA out");
}

/* PE utilisation = ideal MAC cycles (own MACs at the peak rate of the whole array) / modeled cycles. */
static void print_row(const struct demo *d, const struct row *r)
{
	double peak = (double)d->caps.rows * d->caps.cols * d->caps.pes *
		      (r->f32 ? d->caps.rate_fp32 : d->caps.rate_int8);
	double cyc = (double)r->cnt.total_cycles;
	char in[16], out[16], util[16];

	if (cyc > 0 && peak > 0)
		snprintf(util, sizeof(util), "%.2f", r->macs / peak / cyc);
	else
		snprintf(util, sizeof(util), "-");
	printf("%-21s %-11s %-12s %8.1f %12" PRIu64 " %7s %9s %9s\n", r->op, r->dtype, r->result, r->wall_ms,
	       r->cnt.total_cycles, util, fmt_bytes(r->cnt.bytes_h2d, in, sizeof(in)),
	       fmt_bytes(r->cnt.bytes_d2h, out, sizeof(out)));
	fflush(stdout);
}

/* Which device accel_open(opt) picks, for the banner (the rule of accel.h / libaccel.md). */
static void device_label(const char *opt, char *buf, size_t len)
{
	const char *env = getenv("ACCEL_DEVICE");

	if (opt && *opt)
		snprintf(buf, len, "%s", opt);
	else if (env && *env)
		snprintf(buf, len, "%s (from $ACCEL_DEVICE)", env);
	else if (access(DEFAULT_NODE, F_OK) == 0)
		snprintf(buf, len, "%s (default)", DEFAULT_NODE);
	else
		snprintf(buf, len, "sim (default: no %s)", DEFAULT_NODE);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: accel-demo [--device PATH|sim[:rows=R,cols=C,pes=P,sram=B]] [--seed N]\n"
		"  -d, --device SPEC   device for accel_open(): /dev/accel/accelN or sim (default: $ACCEL_DEVICE,\n"
		"                      else " DEFAULT_NODE " if it exists, else sim)\n"
		"  -s, --seed N        seed of the random inputs (default %d)\n"
		"  -h, --help          this help\n"
		"  -V, --version       print the version\n"
		"Runs an int8 GEMM, an fp32 GEMM and an int8 conv layer on the device, checks each against a CPU\n"
		"reference and prints wall time, modeled cycles, PE utilisation and DMA bytes. Exit status 0 when\n"
		"every result verified, 1 otherwise, 2 on a usage error.\n", DEFAULT_SEED);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->device = NULL;
	o->seed = DEFAULT_SEED;
	while ((c = getopt_long(argc, argv, "d:s:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->device = optarg;
			break;
		case 's': {
			char *end;

			errno = 0;
			o->seed = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || *optarg == '-')
				return cli_usage_error("accel-demo", "--seed: '%s' is not a number", optarg);
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			return cli_version("accel-demo");
		default:
			return cli_usage_error("accel-demo", "bad option (see the line above)");
		}
	}
	if (optind < argc)
		return cli_usage_error("accel-demo", "unexpected argument '%s'", argv[optind]);
	return -1;
}

int main(int argc, char **argv)
{
	int (*const steps[])(struct demo *, struct row *) = { demo_gemm_i8, demo_gemm_f32, demo_conv_i8 };
	enum { NSTEPS = sizeof(steps) / sizeof(steps[0]) };
	struct demo d = { 0 };
	struct opts o;
	char label[160], msg[256] = "";
	unsigned ok = 0;
	int ret;

	ret = parse_opts(argc, argv, &o);
	if (ret >= 0)
		return ret;
	device_label(o.device, label, sizeof(label));
	ret = accel_open_msg(o.device, msg, sizeof(msg), &d.dev);
	if (ret) {
		fprintf(stderr, "accel-demo: open %s: %s%s%s\n", label, accel_strerror(ret), *msg ? ": " : "", msg);
		return 1;
	}
	ret = accel_query_caps(d.dev, &d.caps);
	if (ret) {
		lib_fail(&d, "query caps", ret);
		accel_close(d.dev);
		return 1;
	}
	d.seed = o.seed;
	rng_seed(&d.rng, o.seed);

	printf("accel-demo: %s, %s backend, %ux%ux%u = %u PEs at %u MHz, seed %" PRIu64 "\n", label, d.caps.backend,
	       d.caps.rows, d.caps.cols, d.caps.pes, d.caps.rows * d.caps.cols * d.caps.pes, d.caps.clock_mhz, o.seed);
	print_header();
	for (unsigned i = 0; i < NSTEPS; i++) {
		struct row r = { 0 };

		if (steps[i](&d, &r)) {
			accel_close(d.dev);
			return 1;
		}
		print_row(&d, &r);
		ok += r.ok;
	}
	printf("gemm MxNxK: C = A(MxK) B(KxN). conv RxS HxWxC->K: NHWC, stride 1, pad 1, bias + ReLU +\n"
	       "requantisation to int8 fused. int8 results are compared bit for bit with a CPU reference; fp32\n"
	       "shows the worst |got-ref|/(1+sum|a*b|) against a double reference (tolerance %.0e).\n"
	       "PE util = MACs / (PEs x MACs/cycle/PE) / model cycles. DMA = host<->device bytes moved.\n",
	       FP32_TOL);
	if (ok == NSTEPS)
		printf("accel-demo: all %u results verified\n", NSTEPS);
	else
		printf("accel-demo: %u of %u results FAILED verification (seed %" PRIu64 ")\n", NSTEPS - ok, NSTEPS,
		       o.seed);
	accel_close(d.dev);
	return ok == NSTEPS ? 0 : 1;
}
