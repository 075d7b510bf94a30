/* SPDX-License-Identifier: MIT */
/* internal.h - the ONNX importer's graph, shared by the loader, the executor and the op kernels. */
#ifndef TNPU_ONNX_INTERNAL_H
#define TNPU_ONNX_INTERNAL_H

#include <errno.h>
#include <stdbool.h>

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
	OP_COUNT
};

struct onnx_value {
	const char *name;
	bool is_const;		/* initializer or folded constant: t is valid for the model's life */
	bool is_input;
	struct onnx_tensor t;	/* runtime values: valid during onnx_run */
};

struct onnx_node {
	const Onnx__NodeProto *pb;
	enum onnx_op op;
	int in[9];		/* value indices, -1 = absent optional input */
	unsigned n_in;
	int out[3];
	unsigned n_out;
	bool folded;		/* BatchNormalization/Relu folded into the node before it, or a Constant */
	bool fused_relu;	/* Conv/Gemm: a following Relu applied to this node's output */
};

struct onnx_model {
	Onnx__ModelProto *pb;
	int64_t opset;		/* default-domain opset */
	struct onnx_value *vals;
	unsigned n_vals, cap_vals;
	struct onnx_node *nodes;
	unsigned n_nodes, n_folded;
	int *inputs, *outputs;
	unsigned n_inputs, n_outputs;
	char err[512];
};

/* Execution context of one node. */
struct onnx_ctx {
	struct onnx_model *m;
	struct accel_dev *dev;		/* NULL = CPU reference */
	const struct onnx_node *n;
	struct onnx_run_stats *stats;
	bool on_accel;			/* set by a kernel that ran on the device */
};

int onnx_seterr(struct onnx_model *m, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *onnx_op_name(enum onnx_op op);
int onnx_value_add(struct onnx_model *m, const char *name);
int onnx_fold_batchnorm(struct onnx_model *m);
void onnx_fuse_relu(struct onnx_model *m);
int onnx_op_lookup(const char *name);

/* Attributes of a node (absent: default). */
int64_t attr_int(const Onnx__NodeProto *n, const char *name, int64_t def);
float attr_float(const Onnx__NodeProto *n, const char *name, float def);
const char *attr_string(const Onnx__NodeProto *n, const char *name, char *buf, size_t len, const char *def);
/* INTS attribute: count or -1 when absent; copies at most max into out. */
int attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max);
const Onnx__AttributeProto *attr_find(const Onnx__NodeProto *n, const char *name);

/* TensorProto -> onnx_tensor (copies). */
int tensor_from_proto(const Onnx__TensorProto *p, struct onnx_tensor *t, char *err, size_t errlen);
size_t tensor_count(unsigned ndim, const int64_t *dims);
/* Element i of a numeric tensor as double / int64. */
double tensor_get(const struct onnx_tensor *t, size_t i);
int64_t tensor_get_i(const struct onnx_tensor *t, size_t i);
int tensor_copy(struct onnx_tensor *dst, const struct onnx_tensor *src);

/* Node inputs/outputs. */
static inline const struct onnx_tensor *node_in(const struct onnx_ctx *c, unsigned i)
{
	return i < c->n->n_in && c->n->in[i] >= 0 ? &c->m->vals[c->n->in[i]].t : NULL;
}
static inline struct onnx_tensor *node_out(const struct onnx_ctx *c, unsigned i)
{
	return &c->m->vals[c->n->out[i]].t;
}
int node_err(const struct onnx_ctx *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

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
extern const onnx_kernel onnx_accel_kernels[OP_COUNT];

/* Shared int8 helpers (ops_int8.c). */
int qlinear_requant(struct onnx_ctx *c, const int32_t *acc, size_t count, const struct onnx_tensor *xs,
		    const struct onnx_tensor *ws, const struct onnx_tensor *ys, const struct onnx_tensor *yzp,
		    int64_t per_ch_stride, int64_t n_ch, struct onnx_tensor *out);

#endif /* TNPU_ONNX_INTERNAL_H */
