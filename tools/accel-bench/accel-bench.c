/* SPDX-License-Identifier: MIT */
/*
 * accel-bench - GEMM and convolution through libaccel; prints one JSON object.
 *
 *   accel-bench gemm --m M --n N --k K --dtype int8|fp32 [--device PATH|sim] [--json] [--trace FILE]
 *   accel-bench conv --n N --h H --w W --c C --k K --r R --s S --stride S --pad P [--groups G]
 *                    [--dilation D] --dtype int8|fp32 [--device PATH|sim] [--json] [--trace FILE]
 *
 * --trace FILE writes the job's engine timeline as Chrome trace-event JSON (accel_trace_*).  Only
 * the sim backend can record it; on a drm device the measured run is followed by the same job on an
 * in-process sim of the device's geometry and clock, and that run's timeline is written.
 *
 * pe_utilization = useful MACs / (rows*cols*pes * MACs per cycle per PE) / total cycles, where the
 * useful MACs are the operation's own (M*N*K, or N*OH*OW*K*R*S*C/G); model_pe_utilization uses the
 * model's MACS_DENSE counter instead (cycle-model.md), which also counts MACs on padding in edge tiles.
 * explicit_im2col_bytes is what an explicit im2col matrix would have made the device read.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel.h"
#include "cli.h"
#include "subcommands.h"

struct opts {
	const char *op, *device, *trace;
	uint32_t m, n, k, h, w, c, r, s, stride, pad, groups, dil;
	int32_t zp;		/* int8 conv: the input zero point (padding taps read it) */
	bool f32, json, requant;
	bool quiet;		/* the trace re-run: no JSON line */
};

static uint64_t rng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: accel-bench gemm --m M --n N --k K --dtype int8|fp32 [--device PATH|sim] [--json]\n"
		"                        [--trace FILE]\n"
		"       accel-bench conv --n N --h H --w W --c C --k K --r R --s S --stride S --pad P [--groups G]\n"
		"                        [--dilation D] --dtype int8|fp32 [--requant] [--zp Z] [--device PATH|sim] [--json]\n"
		"                        [--trace FILE]\n"
		"  --requant: int8 conv with requantised int8 output (default: int32 output)\n"
		"  --zp Z: int8 conv whose input zero point is Z (-128..127; padding taps read it, as in a QDQ model)\n"
		"  --trace FILE: write the job's engine timeline (Chrome trace-event JSON, Perfetto); on a drm\n"
		"                device it is recorded by re-running the job on a sim of the same geometry\n");
	for (const struct bench_subcommand *sc = bench_subcommands; sc->name; sc++)
		fprintf(out, "       accel-bench %s %s\n", sc->name, sc->usage);
	fprintf(out, "       accel-bench --help | --version\n"
		"Exit status: 0 ok and verified, 1 a result did not verify or libaccel failed, 2 usage error.\n"
		"Reference: Documentation/tools.md.\n");
}

#define PROG "accel-bench"

/* 0, or the usage error's exit status (2) after naming the option and the reason. */
static int parse(int argc, char **argv, struct opts *o)
{
	/* Required per operation; every one must be given (no silent defaults). */
	static const char *const gemm_req[] = { "--m", "--n", "--k", "--dtype", NULL };
	static const char *const conv_req[] = { "--n", "--h", "--w", "--c", "--k", "--r", "--s", "--stride", "--pad",
						"--dtype", NULL };
	const char *const *req;
	bool seen[16] = { false };
	bool dtype_seen = false;

	memset(o, 0, sizeof(*o));
	o->n = o->h = o->w = o->c = o->k = o->r = o->s = o->stride = o->groups = o->dil = 1;
	o->m = 0;
	if (argc < 2)
		return cli_usage_error(PROG, "missing the operation (gemm, conv, %s, ...)", bench_subcommands[0].name);
	o->op = argv[1];
	if (strcmp(o->op, "gemm") && strcmp(o->op, "conv"))
		return cli_usage_error(PROG, "unknown operation '%s'", o->op);
	req = !strcmp(o->op, "gemm") ? gemm_req : conv_req;
	struct { const char *name; uint32_t *v; uint32_t min, max; } nums[] = {
		{ "--m", &o->m, 1, 1000000 }, { "--n", &o->n, 1, 1000000 }, { "--k", &o->k, 1, 1000000 },
		{ "--h", &o->h, 1, 1000000 }, { "--w", &o->w, 1, 1000000 }, { "--c", &o->c, 1, 1000000 },
		{ "--r", &o->r, 1, 1000000 }, { "--s", &o->s, 1, 1000000 }, { "--stride", &o->stride, 1, 1000000 },
		{ "--pad", &o->pad, 0, 1000000 }, { "--groups", &o->groups, 1, 1000000 },
		{ "--dilation", &o->dil, 1, 1000000 },
	};
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		bool done = false;
		int ret;

		if (!strcmp(a, "--json")) {
			o->json = true;
			continue;
		}
		if (!strcmp(a, "--requant")) {
			o->requant = true;
			continue;
		}
		if (!strcmp(a, "--zp")) {
			char *end;
			long v = i + 1 < argc ? strtol(argv[i + 1], &end, 0) : 0;

			if (i + 1 >= argc || *end || end == argv[i + 1] || v < -128 || v > 127)
				return cli_usage_error(PROG, "--zp: needs a value in -128..127");
			o->zp = (int32_t)v;
			i++;
			continue;
		}
		if (!strcmp(a, "--dtype") || !strcmp(a, "--device") || !strcmp(a, "--trace")) {
			if (i + 1 >= argc)
				return cli_usage_error(PROG, "%s: needs a value", a);
			const char *v = argv[++i];

			if (!strcmp(a, "--device")) {
				o->device = v;
			} else if (!strcmp(a, "--trace")) {
				o->trace = v;
			} else if (!strcmp(v, "fp32") || !strcmp(v, "int8")) {
				o->f32 = !strcmp(v, "fp32");
				dtype_seen = true;
			} else {
				return cli_usage_error(PROG, "--dtype: '%s' is not supported (int8 or fp32)", v);
			}
			continue;
		}
		for (unsigned j = 0; j < sizeof(nums) / sizeof(nums[0]); j++) {
			if (!strcmp(a, nums[j].name)) {
				ret = cli_u32(PROG, a, i + 1 < argc ? argv[++i] : NULL, nums[j].min, nums[j].max, nums[j].v);
				if (ret)
					return ret;
				seen[j] = true;
				done = true;
				break;
			}
		}
		if (!done)
			return cli_usage_error(PROG, "%s: unknown option for %s", a, o->op);
	}
	for (unsigned r = 0; req[r]; r++) {
		bool have = !strcmp(req[r], "--dtype") ? dtype_seen : false;

		for (unsigned j = 0; j < sizeof(nums) / sizeof(nums[0]); j++)
			if (!strcmp(req[r], nums[j].name))
				have = seen[j];
		if (!have)
			return cli_usage_error(PROG, "%s %s: missing %s (required)", PROG, o->op, req[r]);
	}
	if (o->requant && (o->f32 || strcmp(o->op, "conv")))
		return cli_usage_error(PROG, "--requant: only for an int8 conv");
	if (o->zp && (o->f32 || strcmp(o->op, "conv")))
		return cli_usage_error(PROG, "--zp: only for an int8 conv");
	return 0;
}

static void fill(void *p, size_t n, bool f32, uint64_t *s)
{
	for (size_t i = 0; i < n; i++) {
		if (f32)
			((float *)p)[i] = (float)((int)(rng(s) % 128) - 64) / 32.0f;
		else
			((int8_t *)p)[i] = (int8_t)rng(s);
	}
}

static void print_common(const struct opts *o, const struct accel_caps *caps, const struct accel_counters *c,
			 double wall, double useful_macs, bool ok)
{
	double peak = (double)caps->rows * caps->cols * caps->pes * (o->f32 ? caps->rate_fp32 : caps->rate_int8);
	double cyc = (double)c->total_cycles;

	printf("\"device\":\"%s\",\"dtype\":\"%s\",\"wall_ms\":%.3f,\"model_cycles\":%llu,\"model_ms\":%.4f,"
	       "\"pe_utilization\":%.4f,\"model_pe_utilization\":%.4f,\"macs\":%.0f,\"macs_dense\":%llu,"
	       "\"dma_in_bytes\":%llu,\"dma_out_bytes\":%llu,\"dispatch_bytes\":%llu,\"config_bytes\":%llu,"
	       "\"compute_cycles\":%llu,\"stall_cycles\":%llu,\"commands\":%llu,\"bank_swaps\":%llu,\"hw_jobs\":%u,"
	       "\"verified\":%s",
	       caps->backend, o->f32 ? "fp32" : "int8", wall, (unsigned long long)c->total_cycles,
	       cyc / (caps->clock_mhz * 1e3), cyc ? useful_macs / peak / cyc : 0.0,
	       cyc ? (double)c->macs_dense / peak / cyc : 0.0, useful_macs, (unsigned long long)c->macs_dense,
	       (unsigned long long)c->bytes_h2d, (unsigned long long)c->bytes_d2h,
	       (unsigned long long)c->bytes_dispatch, (unsigned long long)c->bytes_config,
	       (unsigned long long)c->compute_cycles, (unsigned long long)c->stall_cycles,
	       (unsigned long long)c->commands, (unsigned long long)c->bank_swaps, c->hw_jobs, ok ? "true" : "false");
}

static int fail(struct accel_dev *dev, const char *what, int ret)
{
	fprintf(stderr, "accel-bench: %s: %s: %s\n", what, accel_strerror(ret), accel_last_error(dev));
	return 1;
}

/* Start recording if this run is the one that writes the trace (sim backend only). */
static int trace_begin(struct accel_dev *dev, const struct opts *o, const struct accel_caps *caps)
{
	if (!o->trace || strcmp(caps->backend, "sim"))
		return 0;
	return accel_trace_begin(dev);
}

static int trace_finish(struct accel_dev *dev, const struct opts *o, const struct accel_caps *caps)
{
	int ret;

	if (!o->trace || strcmp(caps->backend, "sim"))
		return 0;
	ret = accel_trace_end(dev);
	if (!ret)
		ret = accel_trace_write_json(dev, o->trace);
	return ret;
}

static int run_gemm(struct accel_dev *dev, const struct opts *o, const struct accel_caps *caps)
{
	uint32_t e = o->f32 ? 4 : 1;
	struct accel_buffer *ba, *bb, *bc;
	struct accel_tensor A, B, C;
	struct accel_gemm_desc d;
	struct accel_counters cnt;
	struct accel_job *job;
	uint64_t s = 42;
	double t0, wall;
	bool ok = true;
	int ret;

	if ((ret = accel_buffer_alloc(dev, (uint64_t)o->m * o->k * e, &ba)) ||
	    (ret = accel_buffer_alloc(dev, (uint64_t)o->k * o->n * e, &bb)) ||
	    (ret = accel_buffer_alloc(dev, (uint64_t)o->m * o->n * 4, &bc)))
		return fail(dev, "buffer", ret);
	if ((ret = accel_tensor_2d(ba, 0, o->f32 ? ACCEL_FP32 : ACCEL_INT8, o->m, o->k, &A)) ||
	    (ret = accel_tensor_2d(bb, 0, o->f32 ? ACCEL_FP32 : ACCEL_INT8, o->k, o->n, &B)) ||
	    (ret = accel_tensor_2d(bc, 0, o->f32 ? ACCEL_FP32 : ACCEL_INT32, o->m, o->n, &C)))
		return fail(dev, "tensor", ret);
	fill(accel_buffer_ptr(ba), (size_t)o->m * o->k, o->f32, &s);
	fill(accel_buffer_ptr(bb), (size_t)o->k * o->n, o->f32, &s);
	memset(&d, 0, sizeof(d));
	d.a = &A;
	d.b = &B;
	d.c = &C;
	if ((ret = trace_begin(dev, o, caps)))
		return fail(dev, "trace", ret);
	t0 = now_ms();
	ret = accel_gemm(dev, &d, NULL, &job);
	if (!ret)
		ret = accel_job_wait(job, -1);
	wall = now_ms() - t0;
	if (ret)
		return fail(dev, "gemm", ret);
	if ((ret = trace_finish(dev, o, caps)))
		return fail(dev, "trace", ret);
	accel_job_counters(job, &cnt);
	accel_job_free(job);
	for (int t = 0; t < 2048 && ok; t++) {
		uint32_t i = (uint32_t)(rng(&s) % o->m), j = (uint32_t)(rng(&s) % o->n);
		double ref = 0, mag = 0;

		for (uint32_t p = 0; p < o->k; p++) {
			double x = o->f32 ? ((float *)accel_buffer_ptr(ba))[(size_t)i * o->k + p]
					  : ((int8_t *)accel_buffer_ptr(ba))[(size_t)i * o->k + p];
			double y = o->f32 ? ((float *)accel_buffer_ptr(bb))[(size_t)p * o->n + j]
					  : ((int8_t *)accel_buffer_ptr(bb))[(size_t)p * o->n + j];

			ref += x * y;
			mag += fabs(x * y);
		}
		if (o->f32)
			ok = fabs(((float *)accel_buffer_ptr(bc))[(size_t)i * o->n + j] - ref) <= 1e-4 * (1 + mag);
		else
			ok = ((int32_t *)accel_buffer_ptr(bc))[(size_t)i * o->n + j] == (int32_t)ref;
	}
	if (o->quiet)
		goto out;
	printf("{\"op\":\"gemm\",\"m\":%u,\"n\":%u,\"k\":%u,", o->m, o->n, o->k);
	print_common(o, caps, &cnt, wall, (double)o->m * o->n * o->k, ok);
	printf(",\"input_bytes\":%llu}\n", (unsigned long long)(((uint64_t)o->m * o->k + (uint64_t)o->k * o->n) * e));
out:
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bc);
	return ok ? 0 : 1;
}

static int run_conv(struct accel_dev *dev, const struct opts *o, const struct accel_caps *caps)
{
	uint32_t e = o->f32 ? 4 : 1, cg = o->c / (o->groups ? o->groups : 1);
	uint32_t oh, ow, eh = o->dil * (o->r - 1) + 1, ew = o->dil * (o->s - 1) + 1;
	struct accel_buffer *bi, *bw, *bo;
	struct accel_tensor I, W, O;
	struct accel_conv2d_desc d;
	struct accel_counters cnt;
	struct accel_job *job;
	enum accel_dtype dt = o->f32 ? ACCEL_FP32 : ACCEL_INT8;
	uint64_t s = 7, in_b, w_b;
	double t0, wall;
	bool ok = true;
	int ret;

	if (!o->groups || o->h + 2 * o->pad < eh || o->w + 2 * o->pad < ew || !o->stride) {
		fprintf(stderr, "accel-bench: invalid convolution shape\n");
		return 2;
	}
	oh = (o->h + 2 * o->pad - eh) / o->stride + 1;
	ow = (o->w + 2 * o->pad - ew) / o->stride + 1;
	in_b = (uint64_t)o->n * o->h * o->w * o->c * e;
	w_b = (uint64_t)o->k * cg * o->r * o->s * e;
	if ((ret = accel_buffer_alloc(dev, in_b, &bi)) || (ret = accel_buffer_alloc(dev, w_b, &bw)) ||
	    (ret = accel_buffer_alloc(dev, (uint64_t)o->n * o->k * oh * ow * 4, &bo)))
		return fail(dev, "buffer", ret);
	if ((ret = accel_tensor_4d(bi, 0, dt, ACCEL_LAYOUT_NHWC, o->n, o->c, o->h, o->w, &I)) ||
	    (ret = accel_tensor_4d(bw, 0, dt, ACCEL_LAYOUT_NHWC, o->k, cg, o->r, o->s, &W)) ||
	    (ret = accel_tensor_4d(bo, 0, o->f32 ? ACCEL_FP32 : (o->requant ? ACCEL_INT8 : ACCEL_INT32),
				   ACCEL_LAYOUT_NHWC, o->n, o->k, oh, ow, &O)))
		return fail(dev, "tensor", ret);
	fill(accel_buffer_ptr(bi), in_b / e, o->f32, &s);
	fill(accel_buffer_ptr(bw), w_b / e, o->f32, &s);
	memset(&d, 0, sizeof(d));
	d.input = &I;
	d.weights = &W;
	d.output = &O;
	d.stride_h = d.stride_w = o->stride;
	d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = o->pad;
	d.dil_h = d.dil_w = o->dil;
	d.groups = o->groups;
	d.input_zero_point = o->zp;
	if (o->requant && !o->f32)
		accel_quant_from_scale(1.0 / 64, &d.epi.multiplier, &d.epi.shift);
	if ((ret = trace_begin(dev, o, caps)))
		return fail(dev, "trace", ret);
	t0 = now_ms();
	ret = accel_conv2d(dev, &d, NULL, &job);
	if (!ret)
		ret = accel_job_wait(job, -1);
	wall = now_ms() - t0;
	if (ret)
		return fail(dev, "conv", ret);
	if ((ret = trace_finish(dev, o, caps)))
		return fail(dev, "trace", ret);
	accel_job_counters(job, &cnt);
	accel_job_free(job);
	for (int t = 0; t < 1024 && ok; t++) {
		uint32_t b = (uint32_t)(rng(&s) % o->n), k = (uint32_t)(rng(&s) % o->k);
		uint32_t y = (uint32_t)(rng(&s) % oh), x = (uint32_t)(rng(&s) % ow), g = k / (o->k / o->groups);
		double ref = 0, mag = 0, got;

		for (uint32_t ry = 0; ry < o->r; ry++)
			for (uint32_t rx = 0; rx < o->s; rx++) {
				int64_t iy = (int64_t)y * o->stride - o->pad + (int64_t)ry * o->dil;
				int64_t ix = (int64_t)x * o->stride - o->pad + (int64_t)rx * o->dil;

				bool pad = iy < 0 || iy >= o->h || ix < 0 || ix >= o->w;

				if (pad && !o->zp)
					continue;
				for (uint32_t c = 0; c < cg; c++) {
					size_t ii = pad ? 0 : (((size_t)b * o->h + iy) * o->w + ix) * o->c + g * cg + c;
					size_t wi = (((size_t)k * o->r + ry) * o->s + rx) * cg + c;
					double xv = pad ? o->zp
						   : o->f32 ? ((float *)accel_buffer_ptr(bi))[ii] : ((int8_t *)accel_buffer_ptr(bi))[ii];
					double wv = o->f32 ? ((float *)accel_buffer_ptr(bw))[wi] : ((int8_t *)accel_buffer_ptr(bw))[wi];

					ref += xv * wv;
					mag += fabs(xv * wv);
				}
			}
		{
			size_t oi = (((size_t)b * oh + y) * ow + x) * o->k + k;

			got = o->f32 ? ((float *)accel_buffer_ptr(bo))[oi]
			      : o->requant ? ((int8_t *)accel_buffer_ptr(bo))[oi] : ((int32_t *)accel_buffer_ptr(bo))[oi];
		}
		if (o->requant && !o->f32) {
			/* sat8((acc + 32) >> 6): the requantisation of scale 1/64 */
			int64_t q = ((int64_t)ref + 32) >> 6;

			ref = (double)(q < -128 ? -128 : q > 127 ? 127 : q);
		}
		ok = o->f32 ? fabs(got - ref) <= 1e-4 * (1 + mag) : got == ref;
	}
	if (o->quiet)
		goto out;
	printf("{\"op\":\"conv\",\"n\":%u,\"h\":%u,\"w\":%u,\"c\":%u,\"k\":%u,\"r\":%u,\"s\":%u,\"stride\":%u,"
	       "\"pad\":%u,\"groups\":%u,\"dilation\":%u,\"oh\":%u,\"ow\":%u,",
	       o->n, o->h, o->w, o->c, o->k, o->r, o->s, o->stride, o->pad, o->groups, o->dil, oh, ow);
	print_common(o, caps, &cnt, wall, (double)o->n * oh * ow * o->k * o->r * o->s * cg, ok);
	printf(",\"output_dtype\":\"%s\"", o->f32 ? "fp32" : o->requant ? "int8" : "int32");
	printf(",\"input_bytes\":%llu,\"weight_bytes\":%llu,\"input_footprint_bytes\":%llu,"
	       "\"dma_in_over_footprint\":%.3f,\"explicit_im2col_bytes\":%llu}\n",
	       (unsigned long long)in_b, (unsigned long long)w_b, (unsigned long long)(in_b + w_b),
	       (double)cnt.bytes_h2d / (double)(in_b + w_b),
	       (unsigned long long)((uint64_t)o->n * oh * ow * o->r * o->s * o->c * e + w_b));
out:
	accel_buffer_free(bi);
	accel_buffer_free(bw);
	accel_buffer_free(bo);
	return ok ? 0 : 1;
}

static int run_op(struct accel_dev *dev, const struct opts *o, const struct accel_caps *caps)
{
	return !strcmp(o->op, "gemm") ? run_gemm(dev, o, caps) : run_conv(dev, o, caps);
}

/*
 * A drm device cannot show its engines (accel_trace_begin: -EOPNOTSUPP), so record the same job on
 * an in-process sim with the device's geometry and clock.  The model is the one the device runs,
 * so the timeline is the device's modeled timeline.
 */
static int trace_on_sim(const struct opts *o, const struct accel_caps *caps)
{
	struct accel_dev *sim;
	struct accel_caps sc;
	struct opts q = *o;
	char path[128], msg[256];
	int ret;

	snprintf(path, sizeof(path), "sim:rows=%u,cols=%u,pes=%u,sram=%u,clock=%u", caps->rows, caps->cols,
		 caps->pes, caps->sram_bytes, caps->clock_mhz);
	fprintf(stderr, "accel-bench: the %s backend cannot record engine timelines; recording %s on %s\n",
		caps->backend, o->trace, path);
	ret = accel_open_msg(path, msg, sizeof(msg), &sim);
	if (ret) {
		fprintf(stderr, "accel-bench: %s: %s: %s\n", path, accel_strerror(ret), msg);
		return 1;
	}
	accel_query_caps(sim, &sc);
	q.quiet = true;
	ret = run_op(sim, &q, &sc);
	accel_close(sim);
	return ret;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct accel_dev *dev = NULL;
	struct accel_caps caps;
	int ret;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")))
		return cli_version(PROG);
	for (const struct bench_subcommand *sc = bench_subcommands; argc >= 2 && sc->name; sc++) {
		if (strcmp(argv[1], sc->name))
			continue;
		for (int i = 2; i < argc; i++)
			if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
				printf("usage: accel-bench %s %s\n", sc->name, sc->usage);
				return 0;
			}
		return sc->main(argc - 1, argv + 1);
	}
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
	ret = parse(argc, argv, &o);
	if (ret)
		return ret;
	char msg[256];

	ret = accel_open_msg(o.device, msg, sizeof(msg), &dev);
	if (ret) {
		fprintf(stderr, "accel-bench: %s: %s\n", accel_strerror(ret), msg);
		return 1;
	}
	accel_query_caps(dev, &caps);
	ret = run_op(dev, &o, &caps);
	fflush(stdout);
	accel_close(dev);
	if (!ret && o.trace && strcmp(caps.backend, "sim"))
		ret = trace_on_sim(&o, &caps);
	return ret;
}
