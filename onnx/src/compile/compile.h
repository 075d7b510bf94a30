/* SPDX-License-Identifier: MIT */
/*
 * compile.h - the whole-graph compiler's intermediate form (compile.c builds it, compiled_run.c runs
 * it, cmodel_save.c saves it, cmodel_file.c and cmodel_open.c load it).  A compiled model is a list of
 * steps in graph order over values that live in one activation arena (a device buffer, offsets from
 * plan_mem.c) or in one weight buffer packed and uploaded at compile time.  Nothing here refers to
 * ONNX's protobuf types: a host step names its graph node by index and the executor hands it to the
 * node-by-node kernels.
 */
#ifndef TNPU_ONNX_COMPILE_H
#define TNPU_ONNX_COMPILE_H

#include <pthread.h>

#include "internal.h"

enum cstep_kind {
	CS_CONV,	/* accel_conv2d, NCHW or NHWC fp32, bias + activation in the SFU epilogue */
	CS_GEMM,	/* accel_gemm fp32, row bias + scale + activation in the epilogue; in[1] -1: B is the
			 * K x N matrix packed at w_off (ReduceMean's column of 1/K); ad[0] > 1: a batched
			 * MatMul of two activations, ad[0] GEMMs of M x K by K x N on consecutive slices of
			 * in[0], in[1], out (and res) -- one job each (attention's scores and context) */
	CS_POOL,	/* accel_pool2d fp32 */
	CS_ELT,		/* accel_eltwise fp32 (ISA 2), optional fused ReLU */
	CS_ACT,		/* accel_activation fp32 (ReLU, CLAMP; ISA 2: sigmoid, tanh, exp, erf, GELU, hard*) */
	CS_SOFTMAX,	/* accel_softmax fp32 over the last axis (ISA 2) */
	CS_LAYERNORM,	/* accel_layernorm fp32 over the last axis (ISA 2) */
	CS_TRANSPOSE,	/* accel_transpose, rank <= 4 (ISA 2) */
	CS_COPY,	/* a strided 4-D box copied on the device (accel_transpose, identity perm; ISA 2):
			 * a Concat input that could not be written in place, a Slice that is no contiguous view */
	CS_ALIAS,	/* Reshape/Flatten/Squeeze/...: the output is the input's bytes (no step runs) */
	CS_HOST,	/* the node-by-node kernel (host, or the device with its own buffers and copies) */
	CS_FUSED,	/* fused into the step before it (a Relu after an Add) */
	/* int8 QDQ steps (compile_qdq.c): device steps appended after the fp32 kinds, so those keep their
	 * numbers in compiled-model files */
	CS_QCONV,	/* int8 conv (or pooling as a depthwise conv), requantised on the device; optional max pool first */
	CS_QGEMM,	/* int8 GEMM/MatMul, requantised on the device */
	CS_QADD,	/* DQ + DQ -> Add (-> Relu) -> Q on the vector units (accel_qadd, or int32 rescale, add,
			 * requant) */
	CS_QPOOL,	/* int8 max pool whose output keeps the input's quantisation */
	CS_QFUSED,	/* a Q/DQ (or Relu) node folded into an int8 step: no step runs */
	CS_KNOWN,	/* computed at compile time from the input shapes (compile_known.c): no step runs, its
			 * outputs are LOC_WEIGHT values */
	CS_REDUCE,	/* accel_reduce fp32 (ISA 2): M rows of N, op (enum accel_reduce_op); a Reduce over
			 * trailing axes (ad[0] 0), or over a middle run as ad[0] strided slices
			 * (compile_reduce.c) */
	CS_KIND_COUNT
};
#define CS_QFIRST CS_QCONV
#define CS_IS_QDQ(k) ((k) >= CS_QFIRST && (k) < CS_QFUSED)
#define CS_IS_DEVICE(k) ((k) < CS_ALIAS || CS_IS_QDQ(k) || (k) == CS_REDUCE)
/*
 * Most device jobs one step submits: a batched CS_GEMM, one per batch slice (Swin-T's window attention at
 * 224: 64 windows x 3 heads; issue #30), and a CS_REDUCE over a middle run of axes, one per leading slice
 * (at most CS_REDUCE_MAX_SLICES: more slices run on the host).  A run's job arrays and the kept jobs
 * (compiled_run.c) grow with the jobs actually submitted; this bounds one step's.
 */
#define CS_MAX_JOBS 256
#define CS_REDUCE_MAX_SLICES 16

/* Where a value lives at run time. */
enum cval_loc {
	LOC_NONE = 0,	/* not used */
	LOC_ARENA = 1,	/* activation arena, offset off (of the alias root) */
	LOC_WEIGHT = 2,	/* weight buffer, offset off */
	LOC_CONST = 3,	/* a model constant only host steps read */
};

struct cval {
	int dtype;
	unsigned ndim;
	int64_t dims[ONNX_MAX_DIMS];
	uint64_t bytes;
	enum cval_loc loc;
	uint64_t off;
	int root;		/* alias root (itself when not an alias) */
	uint64_t voff;		/* bytes from the root's start (a view: Split/Slice part, Concat input) */
	int def, last;		/* live range in steps (arena roots) */
	int nhwc;		/* arena value stored channels-last (compile_layout.c) */
};

/* Alignment of every arena and weight-image offset (bytes). */
#define CM_ALIGN 64

/* The kept jobs of one device step (struct onnx_compiled kept).  off: the step's jobs keep no
 * commands (an operation run on the host), so it is lowered on every run. */
struct cm_kept {
	struct accel_job **jobs;
	unsigned n, cap;
	bool off;
};

struct cstep {
	enum cstep_kind kind;
	int node;		/* graph node index */
	int in[2], out;		/* value indices of the device operands (-1 absent) */
	int act;		/* enum accel_act */
	float lo, hi, scale;
	/* CS_CONV */
	int64_t n, c, h, w, k, cg, kh, kw, groups, oh, ow, sh, sw, dh, dw, pt, pl, pb, pr;
	uint64_t w_off, b_off;	/* weight buffer offsets; b_off UINT64_MAX: no bias */
	/* CS_GEMM: M x K times K x N */
	int64_t M, K, N;
	int ta, tb;
	/* CS_POOL: pool kind; CS_ELT: eltwise op */
	int op;
	/* CS_ELT: 4-D shapes of a, b, out; CS_TRANSPOSE: ad input, od output, bd the permutation;
	 * CS_COPY: ad the box */
	uint32_t ad[4], bd[4], od[4];
	/* CS_CONV/CS_GEMM: the epilogue residual (compile_fuse_residual.c), -1 none */
	int res;
	/* CS_CONV/CS_QCONV, a 1x1 expansion: the depthwise step fused into it (compile_fuse_pwdw.c; that step
	 * is CS_FUSED/CS_QFUSED and keeps its fields): the two run as one accel_conv2d_pwdw job; -1 none */
	int pair;
	/* CS_COPY (compile_views.c): element size; element offsets and strides of the box in in[0]
	 * (source) and out (destination), relative to the value's own start */
	int64_t esz, src_off, dst_off, sst[4], dstr[4];
	const char *reason;
	/* CS_HOST: why the device refused the node (accel_op_supported's reason; not saved).  reason does
	 * not point here: steps are copied and reallocated; onnx_compiled_step_info reads it. */
	char why[160];
	/* int8 QDQ steps (compile_qdq.c).  Activations are INT8 on the device: a UINT8 value is stored
	 * in the arena as value - 128 (byte ^ 0x80), so zero points here are in that domain. */
	int32_t izp, izp2, ozp;	/* input zero points (a, b), output zero point */
	int32_t mult;		/* per-tensor requantisation (0: per channel, arrays at rq_off) */
	int32_t shift;
	int odt;		/* CS_QCONV/CS_QGEMM's first job output: ACCEL_INT8 (epilogue requant) or ACCEL_INT32 */
	uint64_t rq_off;	/* per channel: int32 multipliers[nrq] then uint8 shifts[nrq] (weight image) */
	uint32_t nrq;
	uint64_t sc_bytes, sc_off;	/* scratch in the arena, live during this step only */
	uint64_t k_off[4];	/* CS_QADD: za (INT8), Ma (INT32), zb, Mb constants; with nrq 0 (one accel_qadd
				 * job) Ma, Mb are sa/sy, sb/sy * 2^shift, else sa/S, sb/S * 2^21 */
	int qpool;		/* CS_QCONV: a max pool first; pool input dims in ad[], window in pw[] */
	uint32_t pw[8];		/* kh, kw, sh, sw, pt, pl, pb, pr of that pool (or CS_QPOOL's) */
	/* CS_GEMM whose B is a weight-only quantised K x N matrix kept packed (compile_wq.c), run by accel_qgemm
	 * (the decompressing load, CAP_FEATURES bit 23; in[1] -1): wq = 1 + enum accel_qformat (0: B is fp32);
	 * column n's codes at w_off + n * wq_pitch[0], its fp32 scales (one per wq_block codes along K, 0: one)
	 * at wq_off[0] + n * wq_pitch[1], its zero points at wq_off[1] + n * wq_pitch[2] (UINT64_MAX: none) */
	uint32_t wq, wq_block, wq_pitch[3];
	uint64_t wq_off[2];
	uint8_t ran;		/* CS_HOST, the last run (under the lock; not saved): 0 not run, 1 the host
				 * kernel, 2 the node's device kernel (onnx_compiled_step_info) */
};

struct onnx_compiled {
	struct onnx_model *m;
	struct accel_dev *dev;
	unsigned flags;
	uint64_t digest;	/* of the model and input shapes (cmodel_file.c) */
	struct onnx_tensor *shapes;	/* the input shapes it was compiled for (dtype, ndim, dims; no data) */
	unsigned n_shapes;
	struct onnx_model *own_m;	/* onnx_compiled_open: the model the file carried, freed with cm */
	uint32_t geom[8];	/* rows, cols, rate_fp32, rate_int8, sram_bytes, acc_elems, features, isa */
	struct cval *vals;	/* one per model value */
	unsigned n_vals;
	struct cstep *steps;
	unsigned n_steps;
	uint8_t *wimg;		/* packed weights (kept for saving) */
	uint64_t wbytes, wcap;
	uint64_t arena_bytes, lower_bound;
	struct accel_buffer *arena, *wbuf;	/* wbuf: the image's first wprefix bytes, shared (weight_share.c) */
	struct accel_buffer *wtail;	/* the image from wprefix on (the known values), this form's own */
	uint64_t wprefix;
	struct wshare *wshare;
	unsigned n_before;	/* graph nodes left to run after the loader's folding */
	unsigned n_device, n_host, n_alias, n_fused;
	uint8_t *qrole;		/* per graph node: the QDQ matcher's role (compile_qdq.c), compile time only */
	uint8_t *known;		/* per value: computed at compile time (compile_known.c), compile time only */
	/* Replays (compiled_run.c): kept[i] holds the jobs of device step i's first run, kept
	 * (ACCEL_SUBMIT_KEEP); later runs replay them instead of lowering again.  NULL until the first
	 * run; each step's array grows with its jobs.  run_jobs: the last run's job count (the next
	 * run's job arrays start at that size). */
	struct cm_kept *kept;
	unsigned run_jobs;
	/* Compile time only: the shape probe's value tensors, indexed as the model's values (a constant's
	 * slot unused: cm_val gives the model's).  The model itself is never written. */
	struct onnx_tensor *probe;
	/* A run's host copies of the values (compiled_run.c: allocated by the first run, empty between
	 * runs: a host step releases them); the run's own, as the lock makes it the only one. */
	struct onnx_tensor *run_vals;
	/* Held for a whole run: the arena, the kept jobs, the steps' ran and err are one run's at a time
	 * (tnpu_onnx.h, "Threads"). */
	pthread_mutex_t lock;
	char err[ONNX_ERR_LEN];
};

/* A zeroed compiled model with its lock (NULL: out of memory); onnx_compiled_free releases it. */
struct onnx_compiled *cm_alloc(void);
/* Value v's probe tensor while compiling (a constant: the model's, read-only). */
static inline struct onnx_tensor *cm_val(const struct onnx_compiled *cm, int v)
{
	return cm->m->vals[v].is_const ? &cm->m->vals[v].t : &cm->probe[v];
}
/* A node context of the compile-time probe (kernel messages into err, ONNX_ERR_LEN bytes). */
static inline struct onnx_ctx cm_probe_ctx(const struct onnx_compiled *cm, unsigned node, char *err)
{
	return (struct onnx_ctx){ .m = cm->m, .vt = cm->probe, .err = err, .n = &cm->m->nodes[node] };
}

int cm_seterr(struct onnx_compiled *cm, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Free the kept jobs of every step (compiled_run.c): before the buffers they use. */
void cm_drop_kept(struct onnx_compiled *cm);
/*
 * A run whose inputs i with resident[i] set are already in the arena (their tensors give the shape; data
 * may be NULL) and whose outputs stay there (read them with cm_value_host / cm_value_rows): the
 * generator's device-resident KV cache (generate_kv.c).  Errors as onnx_compiled_run.
 */
int cm_run_resident(struct onnx_compiled *cm, const struct onnx_tensor *inputs, unsigned n_inputs,
		    const uint8_t *resident, struct onnx_run_stats *stats);
/* Internal compile flag (never in a file): graph inputs stay live to the end of the plan, so a run
 * never reuses their arena bytes and a resident input keeps its contents from one run to the next. */
#define CM_COMPILE_KEEP_INPUTS 0x80000000u
/* Lower graph node i into step s (compile_lower.c); the probe tensors of its outputs are set. */
int cm_lower_node(struct onnx_compiled *cm, unsigned i, struct cstep *s);
/* Fusion: an element-wise step whose only consumer is a Relu takes it. */
void cm_fuse_elt_relu(struct onnx_compiled *cm);
/* Addressing (compile_views.c): Split/Slice/Gather as views or device copies, Concat inputs
 * written in place (zero-copy) or copied on the device; sets every value's root and voff. */
int cm_plan_views(struct onnx_compiled *cm);
/* compile_known.c: node i as a CS_KNOWN step when its outputs follow from the input shapes and constants
 * (ONNX_FALLBACK: not), the known values' bytes into the weight image; cm_is_const: a model constant or
 * a known value (its tensor: cm_val, during compilation). */
int cm_lower_known(struct onnx_compiled *cm, unsigned i, struct cstep *s);
/* compile_datadep.c: -EOPNOTSUPP (message naming the node, operand and graph input) when an output shape
 * depends on input data (Reshape's shape, Slice's starts, NonZero, ... fed by a graph input), else 0. */
int cm_check_data_shapes(struct onnx_compiled *cm);
/* compile_reduce.c: ReduceSum/Mean/Max/SumSquare over trailing axes as a CS_REDUCE step (ONNX_FALLBACK:
 * not); the output's probe tensor is set. */
int cm_lower_reduce(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s);
int cm_place_known(struct onnx_compiled *cm);
bool cm_is_const(const struct onnx_compiled *cm, int v);
/* compile_rownorm.c: Pow(x, 2), Neg, ReduceMean over the last axis, Div(1, Sqrt(y)) as device steps
 * (RMSNorm, rotary embeddings); ONNX_FALLBACK when the node is not one of those forms. */
int cm_lower_rownorm(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s);
/* A transpose of rank r as one of rank 4 (compile_views.c): size-1 dimensions dropped, dimensions the
 * permutation keeps adjacent merged, leading 1s; ad the 4-D input shape, bd the permutation.  -1 if
 * more than 4 dimensions remain or one exceeds 2^32. */
int cm_transpose_collapse(const int64_t *dims, unsigned r, const int64_t *perm, uint32_t ad[4], uint32_t bd[4]);
/* Append bytes (NULL: zeros) to the weight image, 64-byte aligned: the offset, UINT64_MAX when out of
 * memory (compile_lower.c). */
uint64_t cm_wimg_add(struct onnx_compiled *cm, const void *src, uint64_t bytes);
/* A standalone BatchNormalization as a multiply and an add on the vector units (compile_bn.c):
 * cm_lower_bn the multiply step, cm_expand_bn (after fusion) the add after it. */
int cm_lower_bn(struct onnx_compiled *cm, struct onnx_ctx *c, struct cstep *s);
int cm_expand_bn(struct onnx_compiled *cm);
/* Residual fusion (compile_fuse_residual.c): Conv/Gemm -> Add(other) [-> Relu] becomes one step with
 * the SFU's residual operand (ISA 2, CAP_FEATURES bit 16). */
void cm_fuse_residual(struct onnx_compiled *cm);
/* Expansion + depthwise fusion (compile_fuse_pwdw.c, after the layout pass): a 1x1 Conv whose output only
 * a depthwise Conv reads runs with it as one accel_conv2d_pwdw job (fp32 and int8 QDQ). */
void cm_fuse_pwdw(struct onnx_compiled *cm);
/* Layout pass (after the views): which 4-D activations are NHWC; repacks their convolutions' weights
 * (compile_layout.c). */
int cm_plan_layouts(struct onnx_compiled *cm);
/* Memory plan and buffers of a compiled model whose steps and values are filled (compile.c). */
int cm_plan_and_upload(struct onnx_compiled *cm);
/* weight_share.c: upload the weight image (its first wprefix bytes into a device buffer shared by the
 * compiled forms with the same bytes on the device, the rest into wtail), release it, and the buffer
 * and offset in it of image offset off. */
int cm_weights_upload(struct onnx_compiled *cm);
void cm_weights_release(struct onnx_compiled *cm);
struct accel_buffer *cm_wbuf_at(const struct onnx_compiled *cm, uint64_t off, uint64_t *boff);
/* Weight-only quantised MatMuls (compile_wq.c).  cm_wq_lower: graph node n (fold_wq.c kept its packed
 * form), already a CS_GEMM step of M x K by K x N, reads its packed weight on a device with the
 * decompressing load: the bytes into the weight image, s->wq and its fields set, in[1] -1; ONNX_FALLBACK:
 * not (no such device, a form accel_qgemm does not take), the fp32 weight stays.  cm_wq_weights: a step's
 * struct accel_qweights over the weight buffer; cm_wq_check: a loaded step's fields inside wbytes. */
int cm_wq_lower(struct onnx_compiled *cm, const struct onnx_node *n, struct cstep *s);
void cm_wq_weights(const struct onnx_compiled *cm, const struct cstep *s, struct accel_qweights *w);
bool cm_wq_check(const struct onnx_compiled *cm, const struct cstep *s);
/* int8 QDQ lowering (compile_qdq.c).  cm_qdq_match marks the nodes of the QDQ patterns before
 * lowering; cm_qdq_lower lowers node i if it is part of one (returns ONNX_FALLBACK if not);
 * cm_qdq_job submits job k of a QDQ step (1: the step has no job k); cm_qdq_jobs counts them. */
int cm_qdq_match(struct onnx_compiled *cm);
int cm_qdq_lower(struct onnx_compiled *cm, unsigned i, struct cstep *s);
int cm_qdq_job(struct onnx_compiled *cm, const struct cstep *s, unsigned k, const struct accel_submit *sub,
	       struct accel_job **job, const char **what);
unsigned cm_qdq_jobs(const struct cstep *s);
/* A QCONV/QGEMM step whose b_off holds K x 3 column records {bias, multiplier, shift} (per-channel
 * requantisation in the SFU epilogue, CAP_FEATURES bit 19): INT8 output with mult 0. */
bool cm_qdq_qcol(const struct cstep *s);
/* A CS_QADD step of one accel_qadd job (CAP_FEATURES bit 20): nrq 0, no scratch, the multipliers at
 * k_off[1], k_off[3] scaled by 2^shift; else six jobs through int32 temporaries and accel_requant. */
bool cm_qdq_qadd1(const struct cstep *s);
uint64_t cm_model_digest(const struct onnx_model *m, const struct onnx_tensor *shapes, unsigned n);
/* Keeps a copy of the input shapes (dtype, ndim, dims) in cm->shapes: 0 or -ENOMEM. */
int cm_keep_shapes(struct onnx_compiled *cm, const struct onnx_tensor *shapes, unsigned n);
/* The node-by-node executor's per-node entry (exec.c). */
int onnx_run_node(struct onnx_ctx *c);

#endif /* TNPU_ONNX_COMPILE_H */
