/* SPDX-License-Identifier: MIT */
/*
 * accel.h - libaccel, the user-space runtime of the tnpu accelerator.
 *
 * Reference: Documentation/libaccel.md.  Conventions:
 *  - every function returns 0 or a negative errno; a human-readable message for the last error of a
 *    device is in accel_last_error(dev); accel_strerror() names an errno.  Every failing call that has
 *    a device (directly, or through a buffer, job, graph, command stream or packed weights) leaves a
 *    message there; calls with no device to hold one (NULL handle, accel_program_*, accel_open: use
 *    accel_open_msg, accel_plan_*: accel_plan_last_error) return the errno only;
 *  - handles are opaque; out-parameters come last;
 *  - the library never aborts, exits or writes to stdout/stderr, and has no global mutable state
 *    (accel_strerror's text for an errno outside its table lives in a per-thread buffer).
 *
 * Ownership and lifetime (per object):
 *  - struct accel_dev: owns everything created from it.  accel_close(dev) first waits for every job
 *    still running, then frees every job, buffer, graph, packed weights and command stream of the
 *    device that the application did not free (and a plan's device copy; the plan itself lives on).
 *    After accel_close every such handle is invalid: passing it to any function, accel_buffer_free
 *    and accel_job_free included, is undefined behaviour (a use after free).
 *  - struct accel_buffer: owned by the caller until accel_buffer_free or accel_close.  The host
 *    pointer (accel_buffer_ptr) is valid as long as the buffer.  A buffer must outlive every job that
 *    reads or writes it.
 *  - struct accel_tensor and the descriptors (accel_*_desc, accel_submit): plain values owned by the
 *    caller, read only during the call that takes them (graphs copy them); they do not own the buffer.
 *  - struct accel_job: owned by the caller until accel_job_free (which waits) or accel_close.
 *  - struct accel_graph, accel_sparse_weights, accel_cmdstream: owned by the caller until their
 *    _free or accel_close; packed weights own their device buffer.
 *  - struct accel_program, accel_plan: not tied to a device; freed only by their _free.
 *
 * Aliasing: an operation's output must not overlap any of its inputs (operand, weights or bias) in the
 * same buffer: the device stores output tiles while it still reads later input tiles.  Overlapping byte
 * ranges (first to one past the last element) are refused with -EINVAL and a message naming both.
 * Inputs may alias each other (A == B is fine).
 *
 * Thread safety: a struct accel_dev and every object created from it must be used by one thread at a
 * time (the caller serialises); different devices are independent and may be used from different
 * threads concurrently.  accel_program objects are likewise single-threaded; accel_plan objects are
 * immutable after compile/load and may be shared (accel_plan_last_error is per thread).
 * accel_version, accel_strerror and accel_dtype_size are thread-safe.
 */
#ifndef ACCEL_H
#define ACCEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this header (the library's run-time version: accel_version()). Kept equal to the meson
 * project version; the build fails if they differ. */
#define ACCEL_VERSION_MAJOR 0
#define ACCEL_VERSION_MINOR 2
#define ACCEL_VERSION_PATCH 0
#define ACCEL_VERSION_STRING "0.2.0"
/* One number for compile-time comparisons: ACCEL_VERSION >= ACCEL_MKVERSION(0, 2, 0). */
#define ACCEL_MKVERSION(major, minor, patch) (((major) << 16) | ((minor) << 8) | (patch))
#define ACCEL_VERSION ACCEL_MKVERSION(ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH)

/* Marks the exported functions: libaccel is built with -fvisibility=hidden and a version script, so only
 * the accel_* functions declared here are visible to applications. */
#if defined(__GNUC__) || defined(__clang__)
#define ACCEL_API __attribute__((visibility("default")))
#else
#define ACCEL_API
#endif

struct accel_dev;
struct accel_buffer;
struct accel_job;
struct accel_program;
struct accel_cmdstream;

/* Run-time version of the loaded library: "MAJOR.MINOR.PATCH" (static string), and as ACCEL_MKVERSION
 * in *num when num != NULL.  An application built against a header may compare the two. */
ACCEL_API const char *accel_version(unsigned *num);

/* ---- device ------------------------------------------------------------------------------ */

/*
 * Open a device.  path: "/dev/accel/accelN" (drm backend), "sim" or "sim:rows=R,cols=C,pes=P,sram=B"
 * (in-process golden model), or NULL: $ACCEL_DEVICE if set, else /dev/accel/accel0 if it exists,
 * else sim.  An explicit path that cannot be opened is an error (no silent fallback).
 */
ACCEL_API int accel_open(const char *path, struct accel_dev **out);
/* accel_open that also reports why opening failed (no device exists yet to hold the message). */
ACCEL_API int accel_open_msg(const char *path, char *msg, size_t msglen, struct accel_dev **out);
/* Wait for the device's running jobs, free every object created from it, close it.  NULL is a no-op.
 * Every handle of the device is invalid afterwards (see "Ownership and lifetime"). */
ACCEL_API void accel_close(struct accel_dev *dev);

struct accel_caps {
	char backend[8];		/* "sim" or "drm" */
	uint32_t rows, cols, pes;	/* PE array geometry */
	uint32_t sram_bytes;		/* per storage unit (row); each ping/pong half is half of it */
	uint32_t acc_elems;		/* 32-bit elements per accumulator */
	uint32_t accumulators, slots, ibufs, ibuf_depth, rf_entries, semaphores;
	uint32_t rate_int8, rate_fp32;	/* MACs per cycle per PE */
	uint32_t rate_dma, rate_dispatch;	/* bytes per cycle */
	uint32_t clock_mhz;
	uint32_t max_cmdbuf;		/* bytes per hardware command buffer */
	uint32_t features;		/* hardware CAP_FEATURES bits */
};
ACCEL_API int accel_query_caps(struct accel_dev *dev, struct accel_caps *out);

/* Message describing the last failure on dev (never NULL; "" if none; "no device" for NULL). Valid until
 * the next call on dev. */
ACCEL_API const char *accel_last_error(const struct accel_dev *dev);
/* Name of a negative errno returned by libaccel ("-EINVAL: invalid argument"); any other errno is named
 * by the C library ("-EISDIR: Is a directory", valid until the next such call in the same thread). */
ACCEL_API const char *accel_strerror(int err);

/* ---- buffers ----------------------------------------------------------------------------- */

/* Device-visible memory, zero-filled, mapped into the host.  size >= 1.  Freed by accel_buffer_free or
 * accel_close (see "Ownership and lifetime" above).  NULL is a no-op for accel_buffer_free. */
ACCEL_API int accel_buffer_alloc(struct accel_dev *dev, uint64_t size, struct accel_buffer **out);
ACCEL_API void accel_buffer_free(struct accel_buffer *buf);
/* Host pointer of the buffer (valid until accel_buffer_free). */
ACCEL_API void *accel_buffer_ptr(const struct accel_buffer *buf);
ACCEL_API uint64_t accel_buffer_size(const struct accel_buffer *buf);
/* Device virtual address (for hand-built command streams). */
ACCEL_API uint64_t accel_buffer_va(const struct accel_buffer *buf);

/* ---- tensors ----------------------------------------------------------------------------- */

enum accel_dtype {
	ACCEL_INT8 = 0,
	ACCEL_INT32 = 1,
	ACCEL_FP32 = 2,
};

enum accel_layout {
	ACCEL_LAYOUT_ROWMAJOR = 0,	/* 2-D matrix: shape {rows, cols} */
	ACCEL_LAYOUT_NHWC = 1,		/* 4-D: shape always {N, C, H, W}; memory order N,H,W,C */
	ACCEL_LAYOUT_NCHW = 2,		/* 4-D: memory order N,C,H,W */
};

/* A view of a buffer.  shape/strides are in logical order ({rows, cols} or {N, C, H, W});
 * strides are in bytes.  Plain value type: fill it with accel_tensor_2d/_4d or by hand. */
struct accel_tensor {
	struct accel_buffer *buf;
	uint64_t offset;		/* bytes from the start of buf */
	enum accel_dtype dtype;
	enum accel_layout layout;
	uint32_t ndim;			/* 2 or 4 */
	uint32_t shape[4];
	int64_t strides[4];
};

ACCEL_API size_t accel_dtype_size(enum accel_dtype dt);
/* Packed row-major matrix rows x cols (row pitch = cols * elem).  buf == NULL, an unknown dtype or a
 * zero dimension: -EINVAL.  Both constructors zero *out first, on every path: on failure *out is
 * all-zero (buf NULL), which every operation rejects with -EINVAL. */
ACCEL_API int accel_tensor_2d(struct accel_buffer *buf, uint64_t offset, enum accel_dtype dt, uint32_t rows,
			      uint32_t cols, struct accel_tensor *out);
/* Packed 4-D tensor in the given layout (NHWC or NCHW), logical shape {n, c, h, w}; errors as
 * accel_tensor_2d (*out zeroed first). */
ACCEL_API int accel_tensor_4d(struct accel_buffer *buf, uint64_t offset, enum accel_dtype dt, enum accel_layout layout,
			      uint32_t n, uint32_t c, uint32_t h, uint32_t w, struct accel_tensor *out);
/* Bytes from the first to one past the last element; -EINVAL on a malformed tensor. */
ACCEL_API int accel_tensor_extent(const struct accel_tensor *t, uint64_t *bytes);
/* 0 if t is well formed and lies inside its buffer, else -EINVAL / -ERANGE. */
ACCEL_API int accel_tensor_check(const struct accel_tensor *t);

/* ---- jobs -------------------------------------------------------------------------------- */

/* Submission options of an operation. NULL = no dependencies. */
struct accel_submit {
	struct accel_job *const *deps;	/* jobs that must complete before this one starts */
	uint32_t n_deps;
	uint32_t flags;			/* 0 or ACCEL_SUBMIT_KEEP */
};

/* accel_submit.flags: keep the job's command buffers so accel_job_replay can run them again. */
#define ACCEL_SUBMIT_KEEP 0x1u

/* Per-job device counters (sum over the job's hardware command buffers). */
struct accel_counters {
	uint64_t total_cycles, compute_cycles, dma_cycles, stall_cycles;
	uint64_t macs_dense, macs_effective;
	uint64_t bytes_h2d, bytes_d2h, bytes_dispatch, bytes_config;
	uint64_t instructions, bank_swaps, mmu_faults, commands;
	uint64_t oq_accesses, sfu_ops, load_cycles, store_cycles;
	uint32_t hw_jobs;		/* hardware command buffers the job was split into */
	uint32_t pad;
	/* chain (#9): producer-consumer rings */
	uint64_t ring_rows;		/* ring rows published */
	uint64_t ring_wait_cycles;	/* consumer stalls waiting for published rows */
	uint64_t ring_full_cycles;	/* producer stalls on a full ring (back-pressure) */
	uint64_t ring_bytes;		/* bytes moved through on-chip ring memory */
	/* sparse (#8), counters 18..21: busiest row's busy cycles (summed over hardware jobs), all rows'
	 * busy cycles, rows used (max over hardware jobs), MACs moved by PE load balancing. */
	uint64_t row_busy_max, row_busy_sum, busy_rows, lb_macs_moved;
	uint64_t plan_hits, plan_misses;	/* PLAN_LOADs served from / uploaded into the plan cache */
	uint64_t vec_ops, vec_cycles;		/* ISA 2 vector units: element-operations, busy cycles (all rows) */
};

/*
 * Wait for a job.  timeout_ns < 0: forever; 0: poll.  Returns 0 when it completed successfully,
 * -ETIME if it is still running, or the job's error (-EIO device error, -ECANCELED failed
 * dependency, ...; message in accel_last_error).
 */
ACCEL_API int accel_job_wait(struct accel_job *job, int64_t timeout_ns);
/* Counters of a job (waits for it first).  A job the device stopped with an error (-EIO) still has
 * its counters up to the failure and returns 0 here; other job errors are returned. */
ACCEL_API int accel_job_counters(struct accel_job *job, struct accel_counters *out);
/*
 * Add every counter of add to sum: several jobs' counters summed as if they were one job (as
 * accel_job_counters sums the hardware jobs of one job).  Each counter is added, except busy_rows
 * (rows used), which becomes the maximum of the two.  Use it instead of adding fields by hand, so
 * that counters added to the struct later are summed too.  NULL sum or add: no-op.
 */
ACCEL_API void accel_counters_add(struct accel_counters *sum, const struct accel_counters *add);
/* Release a job (waits for it if still running). NULL is a no-op. */
ACCEL_API void accel_job_free(struct accel_job *job);
/*
 * Run a job's commands again, as a new job *out, without lowering the operation again: the same
 * operation on the same buffers at the same offsets (their contents may change between runs), after
 * the jobs in sub (sub->flags: 0 or ACCEL_SUBMIT_KEEP, which the new job inherits anyway).  The job
 * must come from a submission with ACCEL_SUBMIT_KEEP or from accel_job_replay; it may still be
 * running or have failed.  Its command buffers and the library's own constants live until the last
 * job that shares them is freed.  An automatic operation (accel_auto_gemm, accel_auto_conv2d) replays
 * the path its first lowering chose from the data.  -EINVAL: no job or out, unknown sub->flags;
 * -EOPNOTSUPP: the job kept no commands (submitted without ACCEL_SUBMIT_KEEP, or an operation that
 * ran on the host); -ESTALE: a buffer the commands use was freed; -ECANCELED: a dependency failed;
 * else the submission's error.
 */
ACCEL_API int accel_job_replay(struct accel_job *job, const struct accel_submit *sub, struct accel_job **out);

/* ---- job timelines (sim backend) --------------------------------------------------------- */
/*
 * Record the modeled timeline of every engine (LOAD: DMA in / IM2COL, DISPATCH, each cluster row's
 * compute + SFU, STORE: DMA out, semaphore stalls) for the jobs run between accel_trace_begin and
 * accel_trace_end, and write it as Chrome trace-event JSON (Perfetto, chrome://tracing).  One trace
 * "process" per hardware job, laid out one after another; timestamps in µs at caps.clock_mhz.
 * Sim backend only: on any other backend accel_trace_begin returns -EOPNOTSUPP (message in
 * accel_last_error).  Recording does not change results or counters.  A new begin discards the
 * previous recording; accel_close frees it.
 */
ACCEL_API int accel_trace_begin(struct accel_dev *dev);
/* Stop recording (-EINVAL if not recording); the events stay available to write. */
ACCEL_API int accel_trace_end(struct accel_dev *dev);
/* Events recorded so far (0 if none). */
ACCEL_API int accel_trace_event_count(struct accel_dev *dev, uint64_t *out);
/* Write the recording (during or after it) to path; -EINVAL if nothing was begun, -E2BIG / -ENOMEM
 * if the recording was cut short (more than 2^20 events / no memory), -errno of fopen, -EIO. */
ACCEL_API int accel_trace_write_json(struct accel_dev *dev, const char *path);

/* ---- operations -------------------------------------------------------------------------- */
/*
 * Every operation takes an optional struct accel_submit (dependencies) and an optional out-job:
 * with job == NULL the call is synchronous (returns when the result is in memory); otherwise it
 * returns at once with a job to wait on.  The operation's buffers must stay alive until then.
 * Outputs must not overlap inputs (see "Aliasing" at the top): -EINVAL.
 */

enum accel_act {
	ACCEL_ACT_NONE = 0,
	ACCEL_ACT_RELU = 1,
	ACCEL_ACT_CLAMP = 2,		/* clamp to [clamp_lo, clamp_hi] (ReLU6 = 0..6) */
	/* ISA 2 vector-unit functions (accel_activation only; Documentation/libaccel.md "Vector-unit
	 * operations"): FP32 through the device's fp32 approximations, INT8 through a 256-entry table. */
	ACCEL_ACT_SIGMOID = 3,
	ACCEL_ACT_TANH = 4,
	ACCEL_ACT_EXP = 5,
	ACCEL_ACT_GELU = 6,		/* x/2 * (1 + erf(x/sqrt 2)) */
	ACCEL_ACT_ERF = 7,
	ACCEL_ACT_HARDSIGMOID = 8,	/* clamp(alpha*x + beta, 0, 1) */
	ACCEL_ACT_HARDSWISH = 9,	/* x * clamp(x/6 + 1/2, 0, 1) */
	ACCEL_ACT_SILU = 10,		/* x * sigmoid(x) */
	ACCEL_ACT_RECIP = 11,		/* 1/x */
	ACCEL_ACT_RSQRT = 12,		/* 1/sqrt(x) */
	/* VEC math (CAP_FEATURES bit 25; -EOPNOTSUPP without it for FP32): vector-units.md */
	ACCEL_ACT_LOG = 13,		/* ln x */
	ACCEL_ACT_SQRT = 14,
	ACCEL_ACT_ABS = 15,
	ACCEL_ACT_NEG = 16,
	ACCEL_ACT_FLOOR = 17,
	ACCEL_ACT_CEIL = 18,
	ACCEL_ACT_ROUND = 19,		/* half to even */
	ACCEL_ACT_SIGN = 20,
	ACCEL_ACT_LEAKYRELU = 21,	/* x < 0 ? alpha*x : x */
	ACCEL_ACT_ELU = 22,		/* beta * (x > 0 ? x : alpha*(e^x - 1)), beta 0 = 1 (Selu: ONNX's gamma) */
	ACCEL_ACT_THRESHOLDEDRELU = 23,	/* x > alpha ? x : 0 */
	ACCEL_ACT_SOFTPLUS = 24,	/* ln(1 + e^x) */
	ACCEL_ACT_SOFTSIGN = 25,	/* x / (1 + |x|) */
};

/* Output epilogue, applied by the SFU in this order: bias, activation, requantisation. */
struct accel_epilogue {
	/* optional: 1 x N (2-D) of INT32 (int8 ops) or FP32; or, for an int8 -> INT8 op with multiplier
	 * and shift 0 (ISA 2, CAP_FEATURES bit 19), N x 3 INT32 contiguous column records {bias,
	 * multiplier, shift}: per-output-channel requantisation in the epilogue (libaccel.md). */
	const struct accel_tensor *bias;
	enum accel_act act;
	/* CLAMP bounds in the accumulator domain: int32 for int8 ops, float for fp32. */
	int32_t clamp_lo_i, clamp_hi_i;
	float clamp_lo_f, clamp_hi_f;
	/* Requantisation (int8 output): y = sat8(((x * multiplier + round) >> shift) + zero_point). */
	int32_t multiplier;
	uint8_t shift;			/* 0..62 */
	int16_t zero_point;		/* -128..127 */
	float scale_f;			/* fp32 output scale; 0 = none (1.0) */
	/* ISA 2 (CAP_FEATURES bit 16): optional residual of the output's shape in the accumulator type
	 * (FP32 for fp32 ops, INT32 for int8 ops) added after the bias, before the activation, in the SFU
	 * (out = act(A x B + bias + residual)); needs a 32-bit output (no requantisation).  accel_gemm: an
	 * M x N matrix with contiguous rows; accel_conv2d: a residual of the output's layout (NHWC or
	 * NCHW), shape and strides (the convolution then takes the implicit-im2col lowering; an NCHW
	 * residual is staged with a transposing load, one element per DMA cycle, like the NCHW store). */
	const struct accel_tensor *residual;
};

/* Turn a real scale (0 < scale < 2^31) into multiplier/shift for accel_epilogue. */
ACCEL_API int accel_quant_from_scale(double scale, int32_t *multiplier, uint8_t *shift);

/*
 * C = op(A) x op(B) (+ epilogue).  A: M x K (or K x M with trans_a), B: K x N (or N x K with
 * trans_b), 2-D tensors.  dtypes: A, B both INT8 (C INT32, or INT8 with requantisation) or both
 * FP32 (C FP32).  The inner (column) dimension of every tensor must be contiguous.
 */
struct accel_gemm_desc {
	const struct accel_tensor *a, *b, *c;
	bool trans_a, trans_b;
	struct accel_epilogue epi;
};
ACCEL_API int accel_gemm(struct accel_dev *dev, const struct accel_gemm_desc *d, const struct accel_submit *sub,
			 struct accel_job **job);

/*
 * 2-D convolution through the implicit-im2col load (no im2col buffer anywhere).
 * input {N, C, H, W}, weights {K, C/groups, R, S} in the same layout as the input (NHWC input: OHWI
 * weights; NCHW input: OIHW weights), output {N, K, OH, OW} (NHWC or NCHW) with
 * OH = (H + pad_top + pad_bottom - dil_h*(R-1) - 1) / stride_h + 1 (same for W).
 */
struct accel_conv2d_desc {
	const struct accel_tensor *input, *weights, *output;
	uint32_t stride_h, stride_w;		/* >= 1 */
	uint32_t pad_top, pad_left, pad_bottom, pad_right;
	uint32_t dil_h, dil_w;			/* >= 1 */
	uint32_t groups;			/* >= 1; groups == C == K is depthwise */
	int32_t input_zero_point;		/* int8: value used for padding (-128..127) */
	struct accel_epilogue epi;
};
ACCEL_API int accel_conv2d(struct accel_dev *dev, const struct accel_conv2d_desc *d, const struct accel_submit *sub,
			   struct accel_job **job);

/*
 * A pointwise convolution whose output feeds a depthwise convolution (a MobileNet inverted residual's
 * expansion and depthwise layers), in one job where the device can: the expansion's output tiles are
 * written straight into the depthwise layer's padded input image in the storage units and never leave
 * the chip (libaccel.md "Fused expansion and depthwise").  pw: 1x1, stride 1, unpadded, groups 1; dw:
 * depthwise (groups == C == K) reading pw's output: dw.input and pw.output are the same tensor, the
 * intermediate, which only the two-job form writes.  Each half is validated as accel_conv2d (its own
 * epilogue; int8: dw.input_zero_point is the intermediate's zero point, its padding value).  Where one
 * job cannot take the pair (layout, dtype, an epilogue residual, the storage units, the device) the
 * operation runs the two convolutions one after the other through the intermediate (two hardware jobs),
 * as it does where their plans are estimated faster than the one job's; with ACCEL_PWDW_ONE_JOB it runs
 * the one job whenever there is one, else fails with -E2BIG and a message naming the reason.
 */
#define ACCEL_PWDW_SPLIT 1u	/* always the two jobs (tests, before/after figures) */
#define ACCEL_PWDW_ONE_JOB 2u	/* one job or -E2BIG, never the two jobs */
struct accel_conv2d_pwdw_desc {
	struct accel_conv2d_desc pw, dw;
	uint32_t flags;		/* ACCEL_PWDW_* */
};
ACCEL_API int accel_conv2d_pwdw(struct accel_dev *dev, const struct accel_conv2d_pwdw_desc *d,
				const struct accel_submit *sub, struct accel_job **job);

enum accel_pool_kind {
	ACCEL_POOL_MAX = 0,
	ACCEL_POOL_AVG = 1,	/* average over the window including padding (count = R*S) */
	/* FP32 average over the window's taps inside the input (ONNX count_include_pad 0, and ceil_mode's
	 * overhang never counted): the vector units (ISA 2; -EOPNOTSUPP without CAP_FEATURES bit 15) */
	ACCEL_POOL_AVG_EXCL_PAD = 2,
};

struct accel_pool2d_desc {
	const struct accel_tensor *input, *output;	/* same dtype and layout */
	enum accel_pool_kind kind;
	uint32_t win_h, win_w, stride_h, stride_w;
	uint32_t pad_top, pad_left, pad_bottom, pad_right;
	/* AVG on INT8: requantisation of the window sum (default: multiplier/shift of 1/(R*S)). */
	int32_t multiplier;
	uint8_t shift;
};
ACCEL_API int accel_pool2d(struct accel_dev *dev, const struct accel_pool2d_desc *d, const struct accel_submit *sub,
			   struct accel_job **job);

/* Element-wise activation out = act(in) on tensors of identical shape and dtype (INT8/FP32).
 * NONE/RELU/CLAMP: the SFU epilogue (packed tensors of identical strides).  The ISA 2 functions
 * (ACCEL_ACT_SIGMOID..RSQRT) run on the vector units, any strides: FP32 -> FP32 through the device's
 * fp32 approximations; INT8 -> INT8 through a table of the exact function of the dequantised input,
 * requantised with the output parameters (in_scale/out_scale > 0; zero points -128..127). */
struct accel_activation_desc {
	const struct accel_tensor *input, *output;
	enum accel_act act;
	int32_t clamp_lo_i, clamp_hi_i;
	float clamp_lo_f, clamp_hi_f;
	float alpha, beta;		/* HARDSIGMOID (both 0 = ONNX defaults 0.2, 0.5); LEAKYRELU, ELU, THRESHOLDEDRELU */
	float in_scale, out_scale;	/* INT8 functions: real value = scale * (q - zero_point) */
	int32_t in_zero_point, out_zero_point;
};
ACCEL_API int accel_activation(struct accel_dev *dev, const struct accel_activation_desc *d,
			       const struct accel_submit *sub, struct accel_job **job);

/* ---- vector-unit operations (ISA 2, CAP_FEATURES bit 15; -EOPNOTSUPP without it) -------------- */

enum accel_eltwise_op {
	ACCEL_ELT_ADD = 0,
	ACCEL_ELT_SUB = 1,		/* a - b */
	ACCEL_ELT_MUL = 2,
	ACCEL_ELT_MAX = 3,
	ACCEL_ELT_MIN = 4,
	/* FP32 only, VEC math (CAP_FEATURES bit 25; -EOPNOTSUPP without it) */
	ACCEL_ELT_DIV = 5,		/* a / b */
	ACCEL_ELT_PRELU = 6,		/* a < 0 ? a * b : a (b the slope) */
	ACCEL_ELT_POW = 7,		/* a^b (vector-units.md POW: exp(b log a), negative a at integer b) */
	/* comparisons, FP32 in, INT8 out 1 or 0 (NaN compares false), act NONE */
	ACCEL_ELT_EQ = 8,
	ACCEL_ELT_LT = 9,
	ACCEL_ELT_LE = 10,
	ACCEL_ELT_GT = 11,
	ACCEL_ELT_GE = 12,
};

/*
 * out = act(a op b) with numpy broadcasting: a, b and out have the same ndim (2 or 4); every dim of a
 * and b equals out's or is 1 (broadcast).  Any layouts/strides (non-negative).  dtypes: FP32 -> FP32;
 * INT32 -> INT32 (wrap-around); INT8 -> INT32 (exact) or INT8: the exact int32 result requantised
 * sat8(((r * multiplier + round) >> shift) + zero_point) (multiplier 0: saturate r unchanged).
 * act: NONE or RELU (applied before the requantisation).  out may alias a or b only exactly.
 */
struct accel_eltwise_desc {
	const struct accel_tensor *a, *b, *out;
	enum accel_eltwise_op op;
	enum accel_act act;
	int32_t multiplier;
	uint8_t shift;			/* 0..62 */
	int16_t zero_point;		/* -128..127 */
};
ACCEL_API int accel_eltwise(struct accel_dev *dev, const struct accel_eltwise_desc *d, const struct accel_submit *sub,
			    struct accel_job **job);

/*
 * Quantised add (or sub) of two INT8 tensors with their own quantisations, one pass on the vector units
 * (ISA 2, CAP_FEATURES bit 20; -EOPNOTSUPP without it):
 *   r = act((a - a_zero_point) * a_multiplier +/- (b - b_zero_point) * b_multiplier)   exact, 64-bit
 *   out = sat8(((r + (shift ? 2^(shift-1) : 0)) >> shift) + zero_point)                 one rounding
 * For real scales sa, sb, sy: a_multiplier = round(sa / sy * 2^shift), b_multiplier likewise, with the
 * largest shift that keeps both within int32 (libaccel.md).  a, b, out INT8 of one ndim (2 or 4), each
 * dim of a and b equal to out's or 1 (broadcast), any strides; op ADD or SUB (a - b); act NONE or RELU
 * (max(r, 0)).  out may alias a or b only exactly.
 */
struct accel_qadd_desc {
	const struct accel_tensor *a, *b, *out;
	enum accel_eltwise_op op;	/* ACCEL_ELT_ADD or ACCEL_ELT_SUB */
	enum accel_act act;		/* ACCEL_ACT_NONE or ACCEL_ACT_RELU */
	int32_t a_multiplier, b_multiplier;
	int16_t a_zero_point, b_zero_point;	/* -128..127 */
	int16_t zero_point;		/* the output's, -128..127 */
	uint8_t shift;			/* 0..62 */
};
ACCEL_API int accel_qadd(struct accel_dev *dev, const struct accel_qadd_desc *d, const struct accel_submit *sub,
			 struct accel_job **job);

/*
 * FP32 <-> INT8 with one scale and zero point on the vector units (ISA 2), by the tensors' dtypes:
 * FP32 -> INT8: out = sat8(rint(in * scale) + zero_point) (round half to even; NaN -> zero_point);
 * INT8 -> FP32: out = (in - zero_point) * scale.  Same shape, any strides; scale finite, zero_point
 * -128..127.  ONNX QuantizeLinear divides by its scale: pass 1/scale (exact for a power of two).
 */
struct accel_quant_desc {
	const struct accel_tensor *input, *output;
	float scale;
	int16_t zero_point;
};
ACCEL_API int accel_quant(struct accel_dev *dev, const struct accel_quant_desc *d, const struct accel_submit *sub,
			  struct accel_job **job);

/* Softmax over the last axis of a 2-D FP32 matrix (rows x cols, any row pitch): exp(x - max) / sum. */
struct accel_softmax_desc {
	const struct accel_tensor *input, *output;
};
ACCEL_API int accel_softmax(struct accel_dev *dev, const struct accel_softmax_desc *d, const struct accel_submit *sub,
			    struct accel_job **job);
/* LogSoftmax likewise: (x - max) - ln(sum(exp(x - max))) (VEC math, CAP_FEATURES bit 25; -EOPNOTSUPP
 * without it). */
ACCEL_API int accel_log_softmax(struct accel_dev *dev, const struct accel_softmax_desc *d,
				const struct accel_submit *sub, struct accel_job **job);

/* LayerNorm over the last axis of a 2-D FP32 matrix: (x - mean) * rsqrt(var + epsilon) * gamma + beta,
 * var the biased variance; gamma, beta optional 1 x cols (or cols x 1) FP32 vectors. */
struct accel_layernorm_desc {
	const struct accel_tensor *input, *output;
	const struct accel_tensor *gamma, *beta;
	float epsilon;
};
ACCEL_API int accel_layernorm(struct accel_dev *dev, const struct accel_layernorm_desc *d, const struct accel_submit *sub,
			    struct accel_job **job);

/* Reduction over the last axis of a 2-D FP32 matrix: out (rows x 1) = SUM, MEAN, MAX or SUMSQ (sum of
 * squares) of every row (ONNX ReduceSum/ReduceMean/ReduceMax/ReduceSumSquare over the last axis, a
 * global average pool of an NCHW image viewed as (N*C) x (H*W)).  With VEC math (CAP_FEATURES bit 25;
 * -EOPNOTSUPP without it) also MIN, PROD, L1 (sum |x|), L2 (sqrt of the sum of squares), LOGSUM,
 * LOGSUMEXP (max + ln sum exp(x - max)), and ARGMAX/ARGMIN, whose output is INT32: the index of the
 * first extreme (the _LAST variants: the last; ONNX select_last_index). */
enum accel_reduce_op {
	ACCEL_REDUCE_SUM = 0, ACCEL_REDUCE_MEAN = 1, ACCEL_REDUCE_MAX = 2, ACCEL_REDUCE_SUMSQ = 3,
	ACCEL_REDUCE_MIN = 4, ACCEL_REDUCE_PROD = 5, ACCEL_REDUCE_L1 = 6, ACCEL_REDUCE_L2 = 7,
	ACCEL_REDUCE_LOGSUM = 8, ACCEL_REDUCE_LOGSUMEXP = 9, ACCEL_REDUCE_ARGMAX = 10, ACCEL_REDUCE_ARGMIN = 11,
	ACCEL_REDUCE_ARGMAX_LAST = 12, ACCEL_REDUCE_ARGMIN_LAST = 13,
};
struct accel_reduce_desc {
	const struct accel_tensor *input, *output;
	enum accel_reduce_op op;
};
ACCEL_API int accel_reduce(struct accel_dev *dev, const struct accel_reduce_desc *d, const struct accel_submit *sub,
			    struct accel_job **job);

/* out = input with its axes permuted: out.shape[i] = in.shape[perm[i]] (same ndim 2 or 4, same dtype,
 * any layouts/strides).  Layout changes (NCHW <-> NHWC) are perm {0,1,2,3} with different layouts;
 * Concat/Split are views (offset tensors) of one buffer copied with the identity perm. */
struct accel_transpose_desc {
	const struct accel_tensor *input, *output;
	uint32_t perm[4];
};
ACCEL_API int accel_transpose(struct accel_dev *dev, const struct accel_transpose_desc *d, const struct accel_submit *sub,
			    struct accel_job **job);

/* Per-channel requantisation int32 (or int8) -> int8 on the device:
 * out = sat8(((x * multiplier[c] + round) >> shift[c]) + zero_point), c = the index along `axis`.
 * multiplier/shift: n = shape[axis] entries (shift 0..62). */
struct accel_requant_desc {
	const struct accel_tensor *input, *output;
	uint32_t axis;
	const int32_t *multiplier;
	const uint8_t *shift;
	int16_t zero_point;
};
ACCEL_API int accel_requant(struct accel_dev *dev, const struct accel_requant_desc *d, const struct accel_submit *sub,
			    struct accel_job **job);

/* ---- cluster programs (CONFIG packets) ----------------------------------------------------- */

/* Register-file operand record (hardware struct tnpu_operand, isa.md). */
struct accel_operand {
	uint32_t addr;		/* byte offset in the storage-unit half */
	int32_t col_stride;	/* per-PE rewrite: + cluster column * col_stride */
	int32_t pe_stride;	/* + PE index * pe_stride */
	uint32_t pitch;		/* bytes between rows */
	uint16_t rows, cols;
	uint8_t dtype;		/* enum accel_dtype */
	uint8_t flags;		/* ACCEL_OPF_* */
	uint16_t su_wrap;	/* scalar unit (PIPE4 programs) */
	int32_t su_delta;
	int32_t su_wrap_delta;
};
#define ACCEL_OPF_TRANS		0x01u
#define ACCEL_OPF_SPARSE	0x02u

/* SFU parameter record (hardware struct tnpu_sfu_param). */
struct accel_sfu_param {
	uint32_t bias_addr;
	int32_t bias_col_stride, bias_pe_stride;
	uint32_t scale;		/* int32 multiplier or fp32 bits */
	uint8_t ops;		/* ACCEL_SFU_* */
	uint8_t shift;
	int16_t zero_point;
	uint8_t out_dtype;	/* enum accel_dtype */
	uint8_t reserved[3];
	uint32_t lo, hi;
};
#define ACCEL_SFU_BIAS		0x01u
#define ACCEL_SFU_RELU		0x02u
#define ACCEL_SFU_CLAMP		0x04u
#define ACCEL_SFU_REQUANT	0x08u

enum accel_wq_mode { ACCEL_WQ_SQ = 0, ACCEL_WQ_RQ = 1, ACCEL_WQ_SW = 2 };
#define ACCEL_MAC_LB		0x01u	/* load balancing */
#define ACCEL_MAC_CHAIN		0x02u	/* chained SFU (record set with accel_program_set_chain_sfu) */
enum accel_sfu_fn { ACCEL_SFU_FN_PASS = 0, ACCEL_SFU_FN_APPLY = 1 };

ACCEL_API int accel_program_new(struct accel_program **out);
ACCEL_API void accel_program_free(struct accel_program *p);
/* pipe4: 4-stage pipeline with scalar-unit operand updates; wq: weight-queue mode. */
ACCEL_API int accel_program_set_mode(struct accel_program *p, bool pipe4, enum accel_wq_mode wq);
ACCEL_API int accel_program_set_loop(struct accel_program *p, unsigned start, unsigned end, unsigned repeat);
/* Register-window base (0..48) of the program's records. */
ACCEL_API int accel_program_set_rf_base(struct accel_program *p, unsigned rf_base);
ACCEL_API int accel_program_set_chain_sfu(struct accel_program *p, unsigned rf);
/* Append a register-file record; *rf = its window index (0..15). */
ACCEL_API int accel_program_add_operand(struct accel_program *p, const struct accel_operand *op, unsigned *rf);
ACCEL_API int accel_program_add_sfu_param(struct accel_program *p, const struct accel_sfu_param *sp, unsigned *rf);
/* Append instructions (at most 64). */
ACCEL_API int accel_program_ld(struct accel_program *p, unsigned rf, unsigned slot, bool weight_queue, bool zskip);
ACCEL_API int accel_program_mac(struct accel_program *p, unsigned in_slot, unsigned wq_slot, unsigned acc,
				unsigned flags);
ACCEL_API int accel_program_sfu(struct accel_program *p, enum accel_sfu_fn fn, unsigned rf, unsigned acc);
ACCEL_API int accel_program_st(struct accel_program *p, unsigned acc, unsigned rf, bool raw);

/* ---- command streams ------------------------------------------------------------------------ */

#define ACCEL_CMD_ASYNC		0x01u	/* wait only for the command's own engine (commands.md) */
/* A preemption point before the command: nothing on-chip from before it is needed after it (CONFIG,
 * storage units, accumulators; hardware/queues.md "Preemption"); a device without CAP_FEATURES bit 24
 * refuses it with -EOPNOTSUPP. */
#define ACCEL_CMD_PREEMPT_POINT	0x02u
#define ACCEL_ROW_ALL		0xFFu
enum accel_engine { ACCEL_ENGINE_LOAD = 0, ACCEL_ENGINE_COMPUTE = 1, ACCEL_ENGINE_STORE = 2 };
#define ACCEL_EXE_SHIFT_OUT	0x02u
#define ACCEL_EXE_LAST		0x04u
#define ACCEL_EXE_RF_RESTORE	0x100u	/* DISPATCH flag: restore scalar-updated records first */

/* 3-D strided copy between a buffer and a storage-unit half. */
struct accel_dma {
	struct accel_buffer *buf;	/* NULL with fill */
	uint64_t offset, pitch_y, pitch_z;
	uint32_t sram_off, sram_pitch_y, sram_pitch_z;
	uint32_t width, height, depth;
	uint8_t row, half;
	bool fill;
	uint8_t fill_byte;
};

/* Implicit-im2col tile load (hardware struct tnpu_cmd_im2col with a buffer instead of a VA). */
struct accel_im2col {
	struct accel_buffer *buf;
	uint64_t offset;
	uint64_t stride_n, stride_c, stride_h, stride_w;
	uint16_t n, h, w, c, r, s, oh, ow;
	uint8_t stride_y, stride_x, dil_y, dil_x, pad_top, pad_left;
	uint8_t nchw;			/* 0 NHWC, 1 NCHW */
	uint8_t dtype;			/* ACCEL_INT8 or ACCEL_FP32 */
	uint32_t pad_value;
	uint32_t m0, mt, k0, kt, sram_off, sram_pitch;
	uint8_t row, half;
};

/* EXE register-file patch: field 0 addr, 1 rows, 2 cols, 3 pitch. */
struct accel_patch {
	uint8_t rf, field;
	uint32_t value;
};

ACCEL_API int accel_cs_new(struct accel_dev *dev, struct accel_cmdstream **out);
ACCEL_API void accel_cs_free(struct accel_cmdstream *cs);
/* Bytes of commands so far. */
ACCEL_API size_t accel_cs_size(const struct accel_cmdstream *cs);
ACCEL_API int accel_cs_dma_h2d(struct accel_cmdstream *cs, unsigned flags, const struct accel_dma *d);
ACCEL_API int accel_cs_dma_d2h(struct accel_cmdstream *cs, unsigned flags, const struct accel_dma *d);
ACCEL_API int accel_cs_im2col(struct accel_cmdstream *cs, unsigned flags, const struct accel_im2col *d);
/* CONFIG packet of program p into instruction buffer ibuf of row (or ACCEL_ROW_ALL). */
ACCEL_API int accel_cs_config(struct accel_cmdstream *cs, unsigned flags, unsigned row, unsigned ibuf,
			      const struct accel_program *p);
/* EXE of ibuf; exe_flags ACCEL_EXE_*; half = storage-unit half the operands address. */
ACCEL_API int accel_cs_exe(struct accel_cmdstream *cs, unsigned flags, unsigned row, unsigned half, unsigned ibuf,
			   unsigned exe_flags, const struct accel_patch *patches, unsigned n_patches);
ACCEL_API int accel_cs_sem_signal(struct accel_cmdstream *cs, unsigned flags, enum accel_engine e, unsigned sem,
				  unsigned count);
ACCEL_API int accel_cs_sem_wait(struct accel_cmdstream *cs, unsigned flags, enum accel_engine e, unsigned sem,
				unsigned count);
/* Barrier; with buf != NULL also writes value at buf + offset (8-byte aligned). */
ACCEL_API int accel_cs_fence(struct accel_cmdstream *cs, struct accel_buffer *buf, uint64_t offset, uint64_t value);
/* Submit the stream as one job (the stream can be reused or freed afterwards). */
ACCEL_API int accel_cs_submit(struct accel_cmdstream *cs, const struct accel_submit *sub, struct accel_job **job);

/*
 * ---- chain (#9): islands, producer-consumer chaining, graph scheduler (Documentation/chaining.md) ----
 *
 * An island is a group of consecutive cluster rows with its own capabilities (data types, clock)
 * and SRAM window.  A graph of operations is placed op by op on the island with the lowest
 * estimated finish time; independent ops run on different islands at the same time, and a GEMM
 * that consumes another op's output as its A operand is chained to it: the producer publishes row
 * bands into a ring in on-chip memory and the consumer starts on the first band while the
 * producer still computes the next ones, all inside one job.
 */
#define ACCEL_ISLAND_INT8	0x1u	/* island dtypes: int8 MACs */
#define ACCEL_ISLAND_FP32	0x2u	/* fp32 MACs */
#define ACCEL_ISLAND_BF16	0x4u	/* bf16 MACs */
#define ACCEL_MAX_ISLANDS	8

struct accel_island {
	uint32_t first_row, rows;	/* cluster rows [first_row, first_row + rows) */
	uint32_t dtypes;		/* ACCEL_ISLAND_* */
	uint32_t clkdiv;		/* the island's rows run at clock / clkdiv */
	uint64_t sram_base, sram_bytes;	/* the island's SRAM window */
};
/* Islands of the device (sim: the islands= option; drm: the driver's island query).  Fills up to
 * max entries, *n = number of islands.  0 or -errno. */
ACCEL_API int accel_query_islands(struct accel_dev *dev, struct accel_island *out, unsigned max, unsigned *n);

struct accel_graph;
/* A graph records operations (no work is done until accel_graph_run); tensors are copied by
 * value, their buffers must stay alive until the graph's job completed. */
ACCEL_API int accel_graph_new(struct accel_dev *dev, struct accel_graph **out);
ACCEL_API void accel_graph_free(struct accel_graph *g);
/* Add C = op(A) x op(B) (+ epilogue) (transposes not supported in graphs: -EINVAL).  A node
 * depends on every earlier node whose output buffer range it reads.  *node = node index. */
ACCEL_API int accel_graph_gemm(struct accel_graph *g, const struct accel_gemm_desc *d, unsigned *node);
/* Add an element-wise activation (2-D packed tensors; see accel_activation). */
ACCEL_API int accel_graph_activation(struct accel_graph *g, const struct accel_activation_desc *d, unsigned *node);

#define ACCEL_GRAPH_NO_CHAIN	0x1u	/* dependent ops wait for their producer's whole output */
struct accel_graph_opts {
	uint32_t flags;			/* ACCEL_GRAPH_* */
	int32_t island;			/* -1: the scheduler places every op; else every op on this island */
	uint32_t band_rows;		/* rows per chained band, 0 = automatic */
	uint32_t ring_slots;		/* bands a ring holds, 0 = automatic (3) */
};
/* Lower the whole graph into one job (one command buffer: -E2BIG if it does not fit). opts may
 * be NULL (scheduler, chaining, automatic bands). */
ACCEL_API int accel_graph_run(struct accel_graph *g, const struct accel_graph_opts *opts,
			      const struct accel_submit *sub, struct accel_job **job);

struct accel_graph_node_info {
	int32_t island;			/* where the last accel_graph_run placed the node */
	int32_t chained_from;		/* producer node it is chained to, or -1 */
	uint32_t bands;			/* row bands the node ran in (1 = not chained) */
	uint32_t pad;
	double est_cycles;		/* the cost model's estimate on that island */
	double est_start;		/* the scheduler's estimated start (cycles) */
};
ACCEL_API int accel_graph_node_info(const struct accel_graph *g, unsigned node, struct accel_graph_node_info *out);

/* Sim backend, while a trace is recorded (accel_trace_begin): busy cycles of each cluster row
 * (CONFIG + EXE intervals) summed over the recording; fills busy[0..min(max, rows)).  -EOPNOTSUPP
 * without a recording. */
ACCEL_API int accel_trace_row_busy(struct accel_dev *dev, uint64_t *busy, unsigned max);
/* ---- sparse (#8): packed weights, zero-skipping dispatch, sparsity-balanced partitioning ---------
 * Reference: Documentation/sparse.md.  Seeds 001 (zero skipping, (value, index) weights, LB) and 003. */

/* Weights packed once per model as (value, index) slots with zero weights dropped (opaque). */
struct accel_sparse_weights;

/*
 * Pack the weights W of C = A x W: w is K x N (trans == false) or N x K (trans == true, e.g. conv
 * weights viewed as {K_out, C*R*S}), INT8 or FP32, 2-D with a contiguous column dimension.
 * k_block: K rows per block (the K step of every sparse layer that uses these weights); 0 = 512
 * (capped at K, at most 65535).  The packed copy lives in a device buffer owned by the object.
 */
ACCEL_API int accel_sparse_pack(struct accel_dev *dev, const struct accel_tensor *w, bool trans, uint32_t k_block,
				struct accel_sparse_weights **out);
/* Convolution weights {K_out, C, R, S} (OHWI or OIHW, as accel_conv2d takes them; groups = 1). */
ACCEL_API int accel_sparse_pack_conv(struct accel_dev *dev, const struct accel_tensor *weights, uint32_t k_block,
				     struct accel_sparse_weights **out);
ACCEL_API void accel_sparse_free(struct accel_sparse_weights *sw);

struct accel_sparse_info {
	uint32_t k, n, k_block, n_kblocks;
	enum accel_dtype dtype;
	uint32_t max_slots;	/* slots per column of the fullest K block */
	uint64_t nnz;		/* non-zero weights */
	uint64_t slots;		/* packed slots including padding */
	uint64_t packed_bytes, dense_bytes;
	double density;		/* nnz / (k * n) */
};
ACCEL_API int accel_sparse_info(const struct accel_sparse_weights *sw, struct accel_sparse_info *out);
/* Expand the packed weights back to a dense K x N row-major array (elements of the packed dtype). */
ACCEL_API int accel_sparse_unpack(const struct accel_sparse_weights *sw, void *dense, size_t bytes);

#define ACCEL_SPARSE_ZSKIP_A	0x01u	/* activation bitmask path: LD A with ZSKIP */
#define ACCEL_SPARSE_LB		0x02u	/* MAC LB: neighbouring PEs share their effective work */

/* C = op(A) x W (+ epilogue) with packed weights; bit-identical to accel_gemm on the dense W. */
struct accel_sparse_gemm_desc {
	const struct accel_tensor *a, *c;
	bool trans_a;
	const struct accel_sparse_weights *w;
	struct accel_epilogue epi;
	uint32_t flags;		/* ACCEL_SPARSE_* */
};
ACCEL_API int accel_sparse_gemm(struct accel_dev *dev, const struct accel_sparse_gemm_desc *d,
				const struct accel_submit *sub, struct accel_job **job);
/* accel_conv2d with packed weights (w from accel_sparse_pack_conv; conv->weights gives the shape). */
ACCEL_API int accel_sparse_conv2d(struct accel_dev *dev, const struct accel_conv2d_desc *conv,
				  const struct accel_sparse_weights *w, uint32_t flags, const struct accel_submit *sub,
				  struct accel_job **job);

/* Dispatcher: measured densities route a layer (Documentation/sparse.md, "Dispatcher"). */
#define ACCEL_SPARSE_W_THRESHOLD	0.75	/* packed weights when weight density <= this */
#define ACCEL_SPARSE_A_THRESHOLD	0.90	/* activation bitmask when activation density <= this */
enum accel_route {
	ACCEL_ROUTE_DENSE = 0,		/* accel_gemm / accel_conv2d */
	ACCEL_ROUTE_ZSKIP = 1,		/* dense weights, activation bitmask */
	ACCEL_ROUTE_SPARSE = 2,		/* packed weights (+ activation bitmask when sparse enough) */
};
struct accel_route_info {
	double weight_density, act_density;
	enum accel_route route;
	uint32_t flags;			/* ACCEL_SPARSE_* used */
	/* accel_auto_gemm: the tiling planner's cycle estimates of both paths (0 = not estimated);
	 * packed weights below the threshold still go dense when their estimate is not lower. */
	double est_dense_cycles, est_sparse_cycles;
};
/* Density of non-zero elements of a host-visible INT8/FP32 tensor (2-D or 4-D). */
ACCEL_API int accel_tensor_density(const struct accel_tensor *t, double *out);
/* Route one layer by its densities: w_thr / a_thr <= 0 take the defaults above; have_packed = the
 * layer has packed weights (else SPARSE is never chosen). */
ACCEL_API int accel_sparse_route(double weight_density, double act_density, bool have_packed, double w_thr,
				 double a_thr, struct accel_route_info *out);
/* accel_gemm that routes by the measured densities of A and W (sw = packing of d->b or NULL). */
ACCEL_API int accel_auto_gemm(struct accel_dev *dev, const struct accel_gemm_desc *d,
			      const struct accel_sparse_weights *sw, const struct accel_submit *sub,
			      struct accel_job **job, struct accel_route_info *info);
/* accel_conv2d that routes by the measured densities of the input and the weights (sw = packing of
 * d->weights from accel_sparse_pack_conv, or NULL). */
ACCEL_API int accel_auto_conv2d(struct accel_dev *dev, const struct accel_conv2d_desc *d,
				const struct accel_sparse_weights *sw, const struct accel_submit *sub,
				struct accel_job **job, struct accel_route_info *info);
/* Busy cycles per array row of a job (ROW_BUSY registers; drm: QUERY type 5 right after the job,
 * -EOPNOTSUPP if another job completed first).  Returns the number of rows written (min(n, rows)). */
ACCEL_API int accel_job_row_busy(struct accel_job *job, uint64_t *rows, unsigned n);

/* ---- weight-only quantised GEMM: the decompressing load (CAP_FEATURES bit 23) ------------- */

enum accel_qformat {
	ACCEL_QFMT_INT8 = 0,	/* int8 codes and zero points (default zero point 0) */
	ACCEL_QFMT_UINT8 = 1,	/* uint8 codes and zero points (default 128) */
	ACCEL_QFMT_UINT4 = 2,	/* 4-bit codes, low nibble first along K; packed 4-bit zero points (default 8) */
};

/*
 * The B operand (K x N) of C = A x B stored packed and N-major, as ONNX Runtime's MatMulNBits blob and
 * PyTorch's nn.Linear.weight [N][K] are: output column n holds its K codes along K at
 * codes->va + codes_offset + n * code_pitch (1 byte per code, or half a byte with UINT4), its
 * ceil(K / block) fp32 scales (binary16 with scale_f16) at scales_offset + n * scale_pitch and, when
 * zero_points is not NULL, its zero points at zp_offset + n * zp_pitch (one byte per block, or two
 * 4-bit ones per byte with UINT4, low nibble first).  block: 0 = one scale per column (per output
 * channel), else a power of two 16..4096.  W[k][n] = (code - zero point) * scale in fp32, one rounding
 * (Documentation/hardware/commands.md "DMA_DEQ").  The buffers are the caller's; they must stay
 * alive until the jobs that read them have completed.
 */
struct accel_qweights {
	enum accel_qformat format;
	uint32_t k, n, block;
	bool scale_f16;
	struct accel_buffer *codes, *scales, *zero_points;
	uint64_t codes_offset, code_pitch;
	uint64_t scales_offset, scale_pitch;
	uint64_t zp_offset, zp_pitch;
};

/* C = op(A) x W (+ epilogue) with W packed (struct accel_qweights): A FP32 (M x K, or K x M with
 * trans_a), C FP32 M x N.  Each K x N weight tile is expanded on its way into the storage unit, so the
 * host reads the packed bytes only; the result equals accel_gemm on the dequantised W.  -EOPNOTSUPP on
 * a device without the decompressing load. */
struct accel_qgemm_desc {
	const struct accel_tensor *a, *c;
	bool trans_a;
	const struct accel_qweights *w;
	struct accel_epilogue epi;
};
ACCEL_API int accel_qgemm(struct accel_dev *dev, const struct accel_qgemm_desc *d, const struct accel_submit *sub,
			  struct accel_job **job);

/* Partitioner (seed 003): split an NHWC map into m horizontal sub-maps of whole rows. */
enum accel_part_metric { ACCEL_PART_NNZ = 0, ACCEL_PART_DENSITY = 1 };
enum accel_part_mode { ACCEL_PART_OVERLAP = 0, ACCEL_PART_NONOVERLAP = 1 };
#define ACCEL_PART_MAX 64
#define ACCEL_PART_MAX_CELLS 256
struct accel_part_opts {
	uint32_t m;			/* sub-maps, 1..ACCEL_PART_MAX */
	enum accel_part_metric metric;
	double threshold;		/* max (metric max - min) / mean; 0 = 0.03 (seed 003) */
	bool even;			/* even grid only (no balancing), the baseline */
	uint64_t fold_bytes;		/* time folding: max input bytes of a fold; 0 = no folding */
	uint32_t rows;			/* array rows to assign sub-maps to; 0 = the device's */
	uint32_t halo;			/* input rows of overlap each side (k - 1 split as needed) */
};
struct accel_part_cell {
	uint32_t y0, y1;		/* map rows [y0, y1) owned by the cell (disjoint, covering) */
	uint32_t in_y0, in_y1;		/* rows read in overlap mode (with halo, clipped to the map) */
	uint64_t nnz, elems;
	double metric;
	uint32_t row;			/* array row the cell runs on */
	uint32_t fold;			/* time-fold index inside its sub-map (0 = first) */
	uint32_t sub;			/* sub-map index (folds of one sub-map share it) */
};
struct accel_partition {
	uint32_t n_cells, m, iterations;
	double spread;			/* (max - min) / mean of the sub-maps' metric */
	bool within_threshold;
	struct accel_part_cell cell[ACCEL_PART_MAX_CELLS];
};
/* Partition the map t (host-visible NHWC {1, C, H, W}, INT8/INT32/FP32).  Re-partitioning a layer's
 * output for the next layer = calling this on the output (its measured density). */
ACCEL_API int accel_partition_map(struct accel_dev *dev, const struct accel_tensor *t, const struct accel_part_opts *o,
				  struct accel_partition *out);
/* Convolution through a partition: every cell is a sub-convolution pinned to its array row.
 * OVERLAP: cells read their halo and write their own output rows.  NONOVERLAP (stride 1, dilation 1,
 * input_zero_point 0, INT32 output, no epilogue): cells read only their rows, partial sums of the
 * boundary rows are combined on the host.  Synchronous; counters (if non-NULL) of the whole run,
 * row_busy (if non-NULL, rows entries) the per-row busy cycles. */
ACCEL_API int accel_partition_conv2d(struct accel_dev *dev, const struct accel_conv2d_desc *conv,
				     const struct accel_sparse_weights *w, uint32_t flags,
				     const struct accel_partition *part, enum accel_part_mode mode,
				     struct accel_counters *counters, uint64_t *row_busy);
/* ---- static address plans (issue #9, seed 004; Documentation/plans.md) ------------------- */
/*
 * A plan compiles one convolution layer ahead of time into per-output-pixel base addresses and one
 * offset list shared by all of them (borders as per-pixel validity masks).  The device gathers the
 * conv operand through it (GATHER) and keeps it in its plan cache, so a reused plan is not uploaded
 * again.  The layout lives only in the plan: one kernel runs NCHW, NHWC and NCHWc.
 * Plans are immutable after compile/load and may be shared between threads; a plan must outlive
 * the jobs that use it.
 */
struct accel_plan;

enum accel_plan_layout {
	ACCEL_PLAN_NCHW = 0,
	ACCEL_PLAN_NHWC = 1,
	ACCEL_PLAN_NCHWC = 2,		/* N, C/cb, H, W, cb (c_block = cb) */
};

struct accel_plan_conv_desc {
	enum accel_plan_layout layout;	/* of the (packed) input tensor */
	uint32_t c_block;		/* NCHWc: channels per block, divides c; else 0 */
	enum accel_dtype dtype;		/* ACCEL_INT8 or ACCEL_FP32 */
	uint32_t n, c, h, w;		/* input */
	uint32_t k, r, s;		/* output channels, filter height, width (r * s <= 64) */
	uint32_t stride_h, stride_w, dil_h, dil_w;	/* >= 1 */
	uint32_t pad_top, pad_left, pad_bottom, pad_right;
};

struct accel_plan_info {
	struct accel_plan_conv_desc desc;
	uint32_t oh, ow;		/* output height, width */
	uint32_t n_bases;		/* N * OH * OW */
	uint32_t n_offsets;		/* R * S * C = the K of the conv GEMM, in the plan's K order */
	uint32_t image_bytes;		/* device image uploaded on a plan-cache miss */
	uint64_t tag;			/* FNV-1a 64 of the image */
};

/* Compile: 0, or -EINVAL / -E2BIG / -ENOMEM with accel_plan_last_error() set. No device needed. */
ACCEL_API int accel_plan_compile(const struct accel_plan_conv_desc *d, struct accel_plan **out);
ACCEL_API void accel_plan_free(struct accel_plan *plan);
ACCEL_API int accel_plan_info(const struct accel_plan *plan, struct accel_plan_info *out);
/* Versioned, checksummed file (plans.md "File format"); load rejects corrupt or truncated files with
 * -EINVAL (-EIO / -ENOENT ... for I/O) and a message. */
ACCEL_API int accel_plan_save(const struct accel_plan *plan, const char *path);
ACCEL_API int accel_plan_load(const char *path, struct accel_plan **out);
/* Message of the calling thread's last failed accel_plan_compile/save/load/pack ("" if none). */
ACCEL_API const char *accel_plan_last_error(void);
/* Pack logical OIHW weights (k x c x r x s, int8 or float as the plan's dtype) into the plan's K
 * order: dst holds k rows of n_offsets elements (a 2-D k x n_offsets tensor for the conv). */
ACCEL_API int accel_plan_pack_weights(const struct accel_plan *plan, const void *oihw, void *dst);

struct accel_plan_conv_args {
	struct accel_buffer *input;	/* packed in the plan's layout */
	uint64_t input_offset;		/* bytes; 4-byte aligned for FP32 */
	const struct accel_tensor *weights;	/* 2-D k x n_offsets, rows packed by accel_plan_pack_weights */
	const struct accel_tensor *output;	/* 4-D {N, K, OH, OW}, NHWC or NCHW */
	int32_t input_zero_point;	/* int8: value of padding (-128..127) */
	struct accel_epilogue epi;
};
/* Convolution through the plan (PLAN_LOAD + GATHER tile loads); -EOPNOTSUPP without the device
 * feature, -E2BIG if the plan exceeds the device plan cache. */
ACCEL_API int accel_plan_conv2d(struct accel_dev *dev, const struct accel_plan *plan,
				const struct accel_plan_conv_args *a, const struct accel_submit *sub,
				struct accel_job **job);

#ifdef __cplusplus
}
#endif

/* The operation IR and the support query (accel_op, accel_op_supported). */
#include "accel_op.h"

#endif /* ACCEL_H */
