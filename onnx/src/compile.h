/* SPDX-License-Identifier: MIT */
/*
 * compile.h - the whole-graph compiler's intermediate form (compile.c builds it, compiled_run.c runs
 * it, cmodel_file.c saves and loads it).  A compiled model is a list of steps in graph order over
 * values that live in one activation arena (a device buffer, offsets from plan_mem.c) or in one
 * weight buffer packed and uploaded at compile time.  Nothing here refers to ONNX's protobuf types:
 * a host step names its graph node by index and the executor hands it to the node-by-node kernels.
 */
#ifndef TNPU_ONNX_COMPILE_H
#define TNPU_ONNX_COMPILE_H

#include "internal.h"

enum cstep_kind {
	CS_CONV,	/* accel_conv2d, NCHW or NHWC fp32, bias + activation in the SFU epilogue */
	CS_GEMM,	/* accel_gemm fp32, row bias + scale + activation in the epilogue */
	CS_POOL,	/* accel_pool2d fp32 */
	CS_ELT,		/* accel_eltwise fp32 (ISA 2), optional fused ReLU */
	CS_ACT,		/* accel_activation fp32 (ReLU, CLAMP; ISA 2: sigmoid, tanh, exp, erf, GELU, hard*) */
	CS_SOFTMAX,	/* accel_softmax fp32 over the last axis (ISA 2) */
	CS_LAYERNORM,	/* accel_layernorm fp32 over the last axis (ISA 2) */
	CS_TRANSPOSE,	/* accel_transpose, rank <= 4 (ISA 2) */
	CS_ALIAS,	/* Reshape/Flatten/Squeeze/...: the output is the input's bytes (no step runs) */
	CS_HOST,	/* the node-by-node kernel (host, or the device with its own buffers and copies) */
	CS_FUSED,	/* fused into the step before it (a Relu after an Add) */
	CS_KIND_COUNT
};
#define CS_IS_DEVICE(k) ((k) < CS_ALIAS)

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
	int def, last;		/* live range in steps (arena roots) */
	int nhwc;		/* arena value stored channels-last (compile_layout.c) */
};

/* Alignment of every arena and weight-image offset (bytes). */
#define CM_ALIGN 64

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
	/* CS_ELT: 4-D shapes of a, b, out; CS_TRANSPOSE: ad input, od output, bd the permutation */
	uint32_t ad[4], bd[4], od[4];
	const char *reason;
};

struct onnx_compiled {
	struct onnx_model *m;
	struct accel_dev *dev;
	unsigned flags;
	uint64_t digest;	/* of the model and input shapes (cmodel_file.c) */
	uint32_t geom[8];	/* rows, cols, rate_fp32, rate_int8, sram_bytes, acc_elems, features, isa */
	struct cval *vals;	/* one per model value */
	unsigned n_vals;
	struct cstep *steps;
	unsigned n_steps;
	uint8_t *wimg;		/* packed weights (kept for saving) */
	uint64_t wbytes, wcap;
	uint64_t arena_bytes, lower_bound;
	struct accel_buffer *arena, *wbuf;
	unsigned n_before;	/* graph nodes left to run after the loader's folding */
	unsigned n_device, n_host, n_alias, n_fused;
	char err[512];
};

int cm_seterr(struct onnx_compiled *cm, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Lower graph node i into step s (compile_lower.c); the probe tensors of its outputs are set. */
int cm_lower_node(struct onnx_compiled *cm, unsigned i, struct cstep *s);
/* Fusion: an element-wise step whose only consumer is a Relu takes it. */
void cm_fuse_elt_relu(struct onnx_compiled *cm);
/* Append bytes (or zeros when src is NULL) to the weight image; the offset or UINT64_MAX. */
uint64_t cm_wimg_add(struct onnx_compiled *cm, const void *src, uint64_t bytes);
/* Layout pass: which 4-D activations are NHWC; repacks their convolutions' weights (compile_layout.c). */
int cm_plan_layouts(struct onnx_compiled *cm);
/* Memory plan and buffers of a compiled model whose steps and values are filled (compile.c). */
int cm_plan_and_upload(struct onnx_compiled *cm);
uint64_t cm_model_digest(const struct onnx_model *m, const struct onnx_tensor *shapes, unsigned n);
/* The node-by-node executor's per-node entry (exec.c). */
int onnx_run_node(struct onnx_ctx *c);

#endif /* TNPU_ONNX_COMPILE_H */
