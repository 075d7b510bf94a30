/* SPDX-License-Identifier: MIT */
/* internal.h - the ONNX importer's graph, shared by the loader, the executor and the op kernels. */
#ifndef TNPU_ONNX_INTERNAL_H
#define TNPU_ONNX_INTERNAL_H

#include <errno.h>
#include <stdbool.h>

#include "dtype.h"
#include "onnx.pb-c.h"
#include "tnpu_onnx.h"

enum onnx_op {
	OP_CONV,
	OP_GEMM,
	OP_MATMUL,
	OP_RELU,
	OP_MAXPOOL,
	OP_AVGPOOL,
	OP_GLOBALAVGPOOL,
	OP_ADD,
	OP_FLATTEN,
	OP_RESHAPE,
	OP_BATCHNORM,
	OP_SOFTMAX,
	OP_QLINEARCONV,
	OP_QLINEARMATMUL,
	OP_CONVINTEGER,
	OP_MATMULINTEGER,
	OP_CONSTANT,
	OP_IDENTITY,
	/* issue 15 */
	OP_CLIP, OP_CONCAT, OP_SPLIT, OP_SLICE, OP_GATHER, OP_SHAPE, OP_UNSQUEEZE, OP_SQUEEZE, OP_EXPAND,
	OP_TRANSPOSE, OP_PAD, OP_SIGMOID, OP_HARDSIGMOID, OP_HARDSWISH, OP_TANH, OP_EXP, OP_LOG, OP_ERF,
	OP_GELU, OP_LEAKYRELU, OP_PRELU, OP_ELU, OP_SELU, OP_SOFTPLUS, OP_SOFTSIGN, OP_MUL, OP_DIV, OP_SUB,
	OP_POW, OP_SQRT, OP_RECIPROCAL, OP_NEG, OP_ABS, OP_FLOOR, OP_CEIL, OP_MIN, OP_MAX, OP_SUM, OP_MEAN,
	OP_REDUCEMEAN, OP_REDUCESUM, OP_REDUCEMAX, OP_REDUCEMIN, OP_REDUCEPROD, OP_REDUCESUMSQUARE,
	OP_REDUCEL1, OP_REDUCEL2, OP_REDUCELOGSUM, OP_REDUCELOGSUMEXP, OP_ARGMAX, OP_ARGMIN, OP_LOGSOFTMAX,
	OP_LAYERNORM, OP_RESIZE, OP_UPSAMPLE, OP_CONVTRANSPOSE, OP_CAST, OP_WHERE, OP_EQUAL, OP_GREATER,
	OP_LESS, OP_NOT, OP_DROPOUT, OP_QUANTIZELINEAR, OP_DEQUANTIZELINEAR, OP_CONSTANTOFSHAPE, OP_RANGE,
	OP_TILE, OP_GREATEREQUAL, OP_LESSEQUAL, OP_AND, OP_OR, OP_XOR, OP_SIZE,
	/* issue 30 (reach) */
	OP_SIN, OP_COS, OP_TAN, OP_ASIN, OP_ACOS, OP_ATAN, OP_SINH, OP_COSH, OP_ASINH, OP_ACOSH, OP_ATANH,
	OP_SHRINK, OP_THRESHOLDEDRELU, OP_MOD, OP_BITSHIFT, OP_TRILU, OP_CUMSUM, OP_DEPTHTOSPACE,
	OP_SPACETODEPTH, OP_GATHERELEMENTS, OP_ONEHOT, OP_SCATTERELEMENTS, OP_SCATTER, OP_SCATTERND,
	OP_EYELIKE, OP_HARDMAX,
	/* issue 30: the rest of the backend suite */
	OP_CASTLIKE, OP_GATHERND, OP_COMPRESS, OP_NONZERO, OP_ISNAN, OP_ISINF, OP_REVERSESEQUENCE, OP_ROUND,
	OP_SIGN, OP_CELU, OP_GLOBALMAXPOOL, OP_NLLLOSS, OP_SCELOSS, OP_TOPK, OP_INSTANCENORM, OP_LRN,
	OP_MVN, OP_DYNQUANTIZELINEAR, OP_EINSUM, OP_HANNWINDOW, OP_HAMMINGWINDOW, OP_BLACKMANWINDOW, OP_DET,
	OP_RNN, OP_GRU, OP_LSTM, OP_NMS, OP_GRIDSAMPLE, OP_UNIQUE, OP_MAXUNPOOL, OP_ROIALIGN,
	/* com.microsoft (issue 29): the weight-only quantised MatMul ONNX Runtime's quantiser writes */
	OP_MATMULNBITS,
	OP_COUNT
};

/* Bounds on what one node may declare (adversarial graphs: huge input/output/attribute lists). */
#define ONNX_MAX_NODE_IO 4096
/* Size of every error message buffer (the model's, a compiled model's, a run's). */
#define ONNX_ERR_LEN 512

struct onnx_value {
	const char *name;
	bool is_const;		/* initializer or folded constant: t is valid for the model's life */
	bool is_input;
	bool shape_known;	/* static shape (declared or inferred at load time) in sdims */
	bool shape_used;	/* a folded Shape relied on this value's declared shape: checked at run time */
	int shape_origin;	/* the value whose declared shape sdims derives from (-1: a constant) */
	unsigned sndim;
	int64_t sdims[ONNX_MAX_DIMS];
	struct onnx_tensor t;	/* constants (is_const), read-only after the load (whose shape inference
				 * also uses the others as scratch); a run's values live in its own tensors
				 * (struct onnx_ctx's vt), never here */
};

struct onnx_node {
	const Onnx__NodeProto *pb;
	enum onnx_op op;
	int *in;		/* value indices, -1 = absent optional input (at least 3 slots) */
	unsigned n_in;
	int *out;
	unsigned n_out;
	bool folded;		/* BatchNormalization/Relu/Clip folded into the node before it, or a Constant */
	bool const_folded;	/* evaluated at load time (all inputs constant, or a Shape of a static shape) */
	bool fused_relu;	/* Conv/Gemm: a following Relu applied to this node's output */
	bool fused_clamp;	/* Conv/Gemm: a following Clip to [clamp_lo, clamp_hi] */
	float clamp_lo, clamp_hi;
	int64_t extra_pads[4];	/* Conv/AveragePool: a zero Pad folded in (top, left, bottom, right) */
	bool pad_counts;	/* AveragePool: the folded Pad's zeros count (count_include_pad) */
	const char *op_name;	/* the operator this node now runs, when a fusion changed it (Gelu) */
	const char *fused_into;	/* folded as part of a pattern another node now runs (why, for node_info) */
	bool ln_fused;		/* LayerNormalization fused from its decomposed form: axis, epsilon here */
	int64_t ln_axis;
	float ln_eps;
	bool ran, ran_on_accel;	/* the last onnx_run with a device ran it, on the device */
	/* fold_wq.c: a weight-only quantised MatMul now reading its dequantised fp32 weight.  Its packed form,
	 * for a device with the decompressing load (compile_wq.c): wq_src the node whose attributes describe
	 * it (this MatMulNBits, or the DequantizeLinear), wq_in its codes, scales and zero points (-1 none). */
	bool wq;
	int wq_src, wq_in[3];
};

/* graph_index.c: a growable list of node indices, and the readers and writers of one value. */
struct onnx_ilist {
	int *v;
	unsigned n, cap;
};

struct onnx_vrefs {
	struct onnx_ilist prod;		/* nodes writing the value, folded ones included */
	struct onnx_ilist cons;		/* nodes reading it, once per input slot, folded ones included */
	unsigned n_graph_out;		/* times it is listed as a graph output */
};

struct onnx_model {
	Onnx__ModelProto *pb;
	int64_t opset;		/* default-domain opset */
	struct onnx_value *vals;
	unsigned n_vals, cap_vals;
	struct onnx_node *nodes;
	unsigned n_nodes, n_folded, n_const_folded;
	int *inputs, *outputs;
	unsigned n_inputs, n_outputs;
	struct {
		int *slot;	/* value index, -1 empty; cap a power of two, at most half full */
		unsigned cap, n;
	} names;		/* name -> value (graph_index.c) */
	struct onnx_vrefs *refs;	/* use-def index, cap_refs entries (NULL before onnx_graph_index) */
	unsigned cap_refs;
	unsigned load_flags;	/* onnx_model_load*'s flags: a compiled file that carries the model reloads it so */
	bool f16_promote;	/* a half-precision network computing in FLOAT (f16_promote.c) */
	int f16_type;		/* its weights' type: FLOAT16 or BFLOAT16 */
	bool digest_valid;	/* digest: the graph's part of a compiled form's digest (cmodel_file.c), computed
				 * once; the model's only field written after the load, under digest_lock */
	uint64_t digest;
	char err[ONNX_ERR_LEN];	/* the loader's message, and onnx_run()'s */
};

/*
 * Execution context of one node.  A run (onnx_run, a compiled model's run or its compile-time shape
 * probe) keeps the tensors of the model's non-constant values in its own array vt and its kernels'
 * messages in its own err, so a loaded model is read-only to the runs that share it (tnpu_onnx.h,
 * "Threads").  vt == NULL only while the loader folds constants: the values are then the model's.
 */
struct onnx_ctx {
	struct onnx_model *m;
	struct onnx_tensor *vt;		/* the run's values, indexed as m->vals (constants: m->vals[].t) */
	char *err;			/* ONNX_ERR_LEN bytes for the message (NULL: m->err) */
	struct accel_dev *dev;		/* NULL = CPU reference */
	const struct onnx_node *n;
	struct onnx_run_stats *stats;
	bool on_accel;			/* set by a kernel that ran on the device */
	const struct onnx_tensor *in_sub;	/* NULL, or n_in tensors: input i read as in_sub[i] when its
						 * data is set (FLOAT copies of FLOAT16/BFLOAT16/DOUBLE
						 * operands, dtype.c) */
};

int onnx_seterr(struct onnx_model *m, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The message of a run (c->err, else the model's). */
int ctx_seterr(const struct onnx_ctx *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *onnx_op_name(enum onnx_op op);
int onnx_value_add(struct onnx_model *m, const char *name);

/*
 * Graph indexes (graph_index.c).  onnx_value_find: the first value named name, -1 if none (O(1)).
 * onnx_graph_index builds the use-def index over the current nodes; from then on a pass rewires a node
 * only with onnx_node_set_inputs / onnx_node_set_out, which keep it current (flags such as folded need
 * no update: the lists hold every node, each pass filters).  onnx_producers / onnx_consumers: the raw
 * lists of node indices writing / reading value v (a node once per input slot that reads v), in no
 * particular order; valid until the next rewiring.  onnx_graph_verify: the graph's invariants and the
 * index against a fresh scan; -EINVAL and a message naming the pass and the value.
 */
int onnx_value_find(const struct onnx_model *m, const char *name);
int onnx_name_index_add(struct onnx_model *m, int v);
int onnx_graph_index(struct onnx_model *m);
int onnx_graph_index_fit(struct onnx_model *m);
void onnx_graph_index_free(struct onnx_model *m);
int onnx_node_set_inputs(struct onnx_model *m, struct onnx_node *n, unsigned n_in, const int *in);
int onnx_node_set_out(struct onnx_model *m, struct onnx_node *n, unsigned k, int v);
const int *onnx_producers(const struct onnx_model *m, int v, unsigned *n);
const int *onnx_consumers(const struct onnx_model *m, int v, unsigned *n);
unsigned onnx_graph_output_uses(const struct onnx_model *m, int v);
bool onnx_graph_verify_enabled(void);
int onnx_graph_verify(struct onnx_model *m, const char *after);
/*
 * f16_promote.c: a half-precision network (FLOAT16/BFLOAT16 Conv/Gemm/MatMul weights) computes in FLOAT:
 * onnx_promote_f16 at load converts its half constants; onnx_f16_inputs gives a run's or a compile's inputs
 * as FLOAT (*out NULL: use them as they are; else free with onnx_f16_inputs_free(*out, n)); onnx_f16_outputs
 * rounds the FLOAT outputs declared FLOAT16/BFLOAT16 back to that type.
 */
int onnx_promote_f16(struct onnx_model *m);
int onnx_f16_inputs(const struct onnx_model *m, const struct onnx_tensor *in, unsigned n, struct onnx_tensor **out);
void onnx_f16_inputs_free(struct onnx_tensor *t, unsigned n);
int onnx_f16_outputs(const struct onnx_model *m, struct onnx_tensor *out, unsigned n);
int onnx_fold_batchnorm(struct onnx_model *m);
int onnx_fuse_relu(struct onnx_model *m);
int onnx_fuse_clip(struct onnx_model *m);
int onnx_fuse_gelu(struct onnx_model *m);
int onnx_fuse_layernorm(struct onnx_model *m);
int onnx_fuse_pad(struct onnx_model *m);
int onnx_fold_weight_only(struct onnx_model *m);
int onnx_const_fold(struct onnx_model *m);
int onnx_static_shapes(struct onnx_model *m);

int onnx_op_lookup(const char *name);

/* Attributes of a node (absent: default). */
int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t def);
float attr_float(const Onnx__NodeProto *n, const char *name, float def);
/*
 * A LayerNormalization node's axis and epsilon: its attributes, or, when onnx_fuse_layernorm() made it from
 * the decomposed form, the values the fusion found (the node's protobuf is then the first ReduceMean's,
 * which has neither).  The one accessor for the host kernel and the device lowering.
 */
int64_t layernorm_axis(const struct onnx_node *n);
float layernorm_epsilon(const struct onnx_node *n);
const char *attr_string(const Onnx__NodeProto *n, const char *name, char *buf, size_t len, const char *def);
/* INTS attribute: count or -1 when absent; copies at most max into out. */
int attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max);
const Onnx__AttributeProto *attr_find(const Onnx__NodeProto *n, const char *name);

/* TensorProto -> onnx_tensor (copies). */
int tensor_from_proto(const Onnx__TensorProto *p, struct onnx_tensor *t, char *err, size_t errlen);
size_t tensor_count(unsigned ndim, const int64_t *dims);
/* A shape within tnpu_onnx.h's limits: 0; -EINVAL when dimension *bad is negative or above
 * ONNX_MAX_DIM_SIZE; -E2BIG when the product (zeros counted as 1) exceeds ONNX_MAX_SHAPE_ELEMS
 * (*bad = ndim).  bad may be NULL. */
int onnx_shape_check(unsigned ndim, const int64_t *dims, unsigned *bad);
/* Element i of a numeric tensor as double / int64. */
double tensor_get(const struct onnx_tensor *t, size_t i);
int64_t tensor_get_i(const struct onnx_tensor *t, size_t i);
void tensor_set(struct onnx_tensor *t, size_t i, double v);
void tensor_set_i(struct onnx_tensor *t, size_t i, int64_t v);
/* Largest tensor the importer allocates (node outputs, initializers, folded constants). */
#define ONNX_MAX_TENSOR_BYTES ((size_t)1 << 31)
int tensor_copy(struct onnx_tensor *dst, const struct onnx_tensor *src);

/* Value v's tensor in a run: a constant's is the model's, any other the run's. */
static inline struct onnx_tensor *ctx_val(const struct onnx_ctx *c, int v)
{
	return c->vt && !c->m->vals[v].is_const ? &c->vt[v] : &c->m->vals[v].t;
}
/* Node inputs/outputs. */
static inline const struct onnx_tensor *node_in(const struct onnx_ctx *c, unsigned i)
{
	if (i < c->n->n_in && c->in_sub && c->in_sub[i].data)
		return &c->in_sub[i];
	return i < c->n->n_in && c->n->in[i] >= 0 ? ctx_val(c, c->n->in[i]) : NULL;
}
static inline struct onnx_tensor *node_out(const struct onnx_ctx *c, unsigned i)
{
	return ctx_val(c, c->n->out[i]);
}
int node_err(const struct onnx_ctx *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The node has the inputs its operator requires and an output 0 (exec.c); else -EINVAL + message. */
int onnx_node_check_io(const struct onnx_ctx *c);

/* Window geometry of Conv / pooling, resolved for a 2-D (or 1-D as H = 1) spatial shape. */
struct win2d {
	int64_t kh, kw, sh, sw, dh, dw;
	int64_t pt, pl, pb, pr;
	int64_t oh, ow;
	int64_t ceil_extra_h, ceil_extra_w;	/* extra bottom/right padding that ceil_mode adds */
};
int win_resolve(const struct onnx_ctx *c, unsigned spatial, int64_t h, int64_t w, int64_t kh, int64_t kw,
		bool ceil_mode, struct win2d *out);

/* Op kernels: host (CPU reference / fallback) and accel lowering.  Accel kernels return -ENOTSUP
 * (== -EOPNOTSUPP on Linux, so use ONNX_FALLBACK) to ask for the host kernel. */
#define ONNX_FALLBACK 1
typedef int (*onnx_kernel)(struct onnx_ctx *c);
extern const onnx_kernel onnx_host_kernels[OP_COUNT];
/*
 * Element types (dtype.c).  onnx_dtype_needs_f32: the node is not one of the operators that take every
 * type as it is, and an input is FLOAT16, BFLOAT16 or DOUBLE.  onnx_dtype_compute_f32 runs host kernel k
 * on such a node with those inputs widened to FLOAT and its FLOAT outputs narrowed back to the first
 * widened input's type (any other node: k as it is).  The one way every caller runs a host kernel.
 */
bool onnx_dtype_needs_f32(const struct onnx_ctx *c);
int onnx_dtype_compute_f32(struct onnx_ctx *c, onnx_kernel k);
extern const onnx_kernel onnx_accel_kernels[OP_COUNT];
extern const onnx_kernel onnx_elem_kernels[OP_COUNT], onnx_shape_kernels[OP_COUNT], onnx_reduce_kernels[OP_COUNT],
	onnx_nn_kernels[OP_COUNT], onnx_index_kernels[OP_COUNT], onnx_loss_kernels[OP_COUNT],
	onnx_misc_kernels[OP_COUNT], onnx_norm_kernels[OP_COUNT], onnx_rnn_kernels[OP_COUNT],
	onnx_detect_kernels[OP_COUNT], onnx_wq_kernels[OP_COUNT],
	onnx_pool_kernels[OP_COUNT];
/* The host kernel of an operator (whichever ops_*.c defines it), NULL if none. */
onnx_kernel onnx_host_kernel(enum onnx_op op);
/* Value v computed as t in a run: the shape a folded Shape relied on (else -EINVAL, message in c's). */
int onnx_check_static_shape(const struct onnx_ctx *c, int v, const struct onnx_tensor *t);
/* Clip's bounds when min/max are constants (fusion); Shape's start/end clamped to rank. */
int clip_const_bounds(const struct onnx_model *m, const struct onnx_node *n, float *lo, float *hi);
int clip_runtime_bounds(const struct onnx_ctx *c, float *lo, float *hi);
int shape_range(const struct onnx_ctx *c, unsigned rank, int64_t *s, int64_t *e);

/*
 * Weight-only quantisation (ops_wq.c, issue 29).  onnx_wq_gemm_weight: the float32 [K, N] weight (MatMul's
 * B) that a weight-only quantised MatMul computes with -- a com.microsoft MatMulNBits node's packed blob
 * dequantised, or the output of the DequantizeLinear of a constant that feeds a MatMul's B.  The one seam
 * between a packed weight and a GEMM: the load-time pass (fold_wq.c) makes every such MatMul an fp32 one
 * with this constant, which the device runs as a GEMM step; a device with a weight-decompressing load
 * would take the packed form here instead.  -EINVAL and a message naming the node for a corrupted blob.
 */
int onnx_wq_gemm_weight(const struct onnx_ctx *c, struct onnx_tensor *w);

/* Shared int8 helpers (ops_int8.c). */
int qlinear_requant(struct onnx_ctx *c, const int32_t *acc, size_t count, const struct onnx_tensor *xs,
		    const struct onnx_tensor *ws, const struct onnx_tensor *ys, const struct onnx_tensor *yzp,
		    int64_t per_ch_stride, int64_t n_ch, struct onnx_tensor *out);

#endif /* TNPU_ONNX_INTERNAL_H */
