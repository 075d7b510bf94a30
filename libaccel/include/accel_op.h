/* SPDX-License-Identifier: MIT */
/*
 * accel_op.h - libaccel's operation IR: one operation as data (struct accel_op) and the question
 * "can this device run it?" (accel_op_supported).  Reference: Documentation/libaccel.md, "Operation
 * IR and the support query".  Included by accel.h; may also be included on its own.
 *
 * An accel_op is a tagged union over the operations libaccel runs.  Each member points at the
 * operation's own public descriptor (struct accel_conv2d_desc, accel_gemm_desc, ...), so there is
 * one definition of every field: an op built for the query is the descriptor the operation call
 * takes.  accel_op_supported answers with the very validation the operation runs (one copy of the
 * device's limits, in libaccel), without lowering or running anything.
 *
 * Size and version (the perf_event_attr / clone3 / openat2 rule):
 *  - the caller sets size = sizeof(struct accel_op) of the header it was built with and version =
 *    ACCEL_OP_VERSION;
 *  - the library accepts any size >= ACCEL_OP_SIZE_VER0 (the first published layout); fields past
 *    the caller's size read as zero, so an older (smaller) op means what it meant then;
 *  - a size larger than the library knows is accepted only if every byte past the library's
 *    sizeof(struct accel_op) is zero (a newer caller that leaves the new fields unset); otherwise
 *    -E2BIG, with the offset of the first non-zero byte in the reason;
 *  - version 0 or greater than the library's ACCEL_OP_VERSION: -EINVAL;
 *  - members are only ever appended (kinds and union members included); the union never shrinks.
 */
#ifndef ACCEL_OP_H
#define ACCEL_OP_H

#include "accel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACCEL_OP_VERSION 1

/* The operation kinds (append only; 0 is never a valid kind). */
enum accel_op_kind {
	ACCEL_OP_NONE = 0,
	ACCEL_OP_CONV2D = 1,		/* accel_conv2d: grouped and depthwise (groups == C == K) included */
	ACCEL_OP_GEMM = 2,		/* accel_gemm: GEMM / MatMul with its epilogue (bias, act, requant, residual,
					 * per-column requantisation records) */
	ACCEL_OP_POOL2D = 3,		/* accel_pool2d */
	ACCEL_OP_ACTIVATION = 4,	/* accel_activation (SFU and vector-unit functions) */
	ACCEL_OP_ELTWISE = 5,		/* accel_eltwise */
	ACCEL_OP_SOFTMAX = 6,		/* accel_softmax */
	ACCEL_OP_LAYERNORM = 7,		/* accel_layernorm */
	ACCEL_OP_TRANSPOSE = 8,		/* accel_transpose (layout changes, copies) */
	ACCEL_OP_KIND_COUNT		/* one past the last kind this header knows */
};

/*
 * One operation.  Tensors in the descriptors may have buf == NULL in a support query: the query then
 * validates their dtype, layout, shape and strides (offset counts as the address for alignment
 * checks) and skips what needs memory (the buffer's size, its device, aliasing).  A tensor that has a
 * buffer is checked fully, as the operation call would.  The operation calls themselves still
 * refuse a tensor without a buffer (-EINVAL).
 */
struct accel_op {
	uint32_t size;			/* in: sizeof(struct accel_op) of the caller's header */
	uint32_t version;		/* in: ACCEL_OP_VERSION of the caller's header */
	uint32_t kind;			/* in: enum accel_op_kind */
	uint32_t flags;			/* in: 0 (reserved; non-zero: -EINVAL) */
	union {
		const struct accel_conv2d_desc *conv2d;
		const struct accel_gemm_desc *gemm;
		const struct accel_pool2d_desc *pool2d;
		const struct accel_activation_desc *activation;
		const struct accel_eltwise_desc *eltwise;
		const struct accel_softmax_desc *softmax;
		const struct accel_layernorm_desc *layernorm;
		const struct accel_transpose_desc *transpose;
		const void *desc;	/* any of the above */
		uint64_t pad_u[2];	/* the union's size is fixed at 16 bytes */
	} u;
	/* ---- end of version 1 (ACCEL_OP_SIZE_VER0); later members are appended here ---- */
};

/* Size of the first published layout (version 1). */
#define ACCEL_OP_SIZE_VER0 32u

/* Fill op for kind and descriptor desc (size, version set; flags 0). */
#define ACCEL_OP_INIT(k, member, d)                                                                     \
	((struct accel_op){ .size = sizeof(struct accel_op), .version = ACCEL_OP_VERSION, .kind = (k),      \
			    .u = { .member = (d) } })

/*
 * Can dev run op?  Validate only: nothing is lowered, allocated or submitted, and no buffer is
 * read.  Returns
 *   0            the device runs it (the operation call may still fail for run-time reasons:
 *                memory, a freed buffer, a device error);
 *   -EOPNOTSUPP  a well-formed operation outside what this device can do (a field beyond a hardware
 *                limit, e.g. "conv2d: stride_h 300 > 255", or a missing device feature);
 *   -EINVAL      a malformed op or descriptor (NULL, unknown kind, shapes that do not agree, ...);
 *   -E2BIG       op->size larger than the library knows with a non-zero unknown tail.
 * reason (if non-NULL and len > 0) receives a NUL-terminated message naming the operation, the
 * field and why ("" on success); the same text is in accel_last_error(dev).
 */
ACCEL_API int accel_op_supported(struct accel_dev *dev, const struct accel_op *op, char *reason, size_t len);

/* Name of an operation kind ("conv2d", "gemm", ...; "?" if unknown).  Thread-safe. */
ACCEL_API const char *accel_op_kind_name(uint32_t kind);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_OP_H */
