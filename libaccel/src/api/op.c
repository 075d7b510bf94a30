/* SPDX-License-Identifier: MIT */
/*
 * op.c - the operation IR (struct accel_op) and the support query accel_op_supported: the one answer
 * to "can this device run this operation?" (Documentation/libaccel.md, "Operation IR and the support
 * query").  Each kind is answered by the validate-only half of its operation (conv2d_validate,
 * gemm_validate, ...), the same code the operation call runs before it lowers: the device's limits
 * have one copy, in the operation's source.
 */
#include <stdio.h>
#include <string.h>

#include "epilogue.h"
#include "vec_ops.h"

static const char *const kind_names[ACCEL_OP_KIND_COUNT] = {
	[ACCEL_OP_NONE] = "none",	  [ACCEL_OP_CONV2D] = "conv2d",	    [ACCEL_OP_GEMM] = "gemm",
	[ACCEL_OP_POOL2D] = "pool2d",	  [ACCEL_OP_ACTIVATION] = "activation", [ACCEL_OP_ELTWISE] = "eltwise",
	[ACCEL_OP_SOFTMAX] = "softmax",	  [ACCEL_OP_LAYERNORM] = "layernorm", [ACCEL_OP_TRANSPOSE] = "transpose",
};

const char *accel_op_kind_name(uint32_t kind)
{
	return kind < ACCEL_OP_KIND_COUNT && kind_names[kind] ? kind_names[kind] : "?";
}

/* The caller's op, copied into the library's layout: a smaller (older) size reads as zeros past its end, a
 * larger (newer) one must be zero past the library's end (copy_struct_from_user's rule). */
static int op_copy(struct accel_dev *dev, const struct accel_op *uop, struct accel_op *op)
{
	uint32_t size = uop->size;

	if (size < ACCEL_OP_SIZE_VER0)
		return accel_seterr(dev, -EINVAL, "op: size %u < %u (ACCEL_OP_SIZE_VER0): set size = sizeof(struct "
				    "accel_op)", size, ACCEL_OP_SIZE_VER0);
	if (size > sizeof(*op)) {
		const unsigned char *tail = (const unsigned char *)uop;

		for (uint32_t i = sizeof(*op); i < size; i++)
			if (tail[i])
				return accel_seterr(dev, -E2BIG, "op: size %u > %zu known to this library and byte %u "
						    "is not zero (a field this library does not know)", size, sizeof(*op), i);
		size = sizeof(*op);
	}
	memset(op, 0, sizeof(*op));
	memcpy(op, uop, size);
	if (!op->version || op->version > ACCEL_OP_VERSION)
		return accel_seterr(dev, -EINVAL, "op: version %u unknown (this library: 1..%u)", op->version,
				    ACCEL_OP_VERSION);
	if (op->flags)
		return accel_seterr(dev, -EINVAL, "op: flags 0x%x: must be 0", op->flags);
	return 0;
}

static int op_check(struct accel_dev *dev, const struct accel_op *op)
{
	struct mm_problem p;

	if (op->kind == ACCEL_OP_NONE || op->kind >= ACCEL_OP_KIND_COUNT)
		return accel_seterr(dev, -EINVAL, "op: kind %u unknown", op->kind);
	if (!op->u.desc)
		return accel_seterr(dev, -EINVAL, "%s: descriptor is NULL", accel_op_kind_name(op->kind));
	switch ((enum accel_op_kind)op->kind) {
	case ACCEL_OP_CONV2D:
		return conv2d_validate(dev, op->u.conv2d);
	case ACCEL_OP_GEMM:
		return gemm_validate(dev, op->u.gemm, &p);
	case ACCEL_OP_POOL2D:
		return pool2d_validate(dev, op->u.pool2d);
	case ACCEL_OP_ACTIVATION:
		return activation_validate(dev, op->u.activation);
	case ACCEL_OP_ELTWISE:
		return eltwise_validate(dev, op->u.eltwise);
	case ACCEL_OP_SOFTMAX:
		return softmax_validate(dev, op->u.softmax);
	case ACCEL_OP_LAYERNORM:
		return layernorm_validate(dev, op->u.layernorm);
	case ACCEL_OP_TRANSPOSE:
		return transpose_validate(dev, op->u.transpose);
	default:
		return accel_seterr(dev, -EINVAL, "op: kind %u unknown", op->kind);
	}
}

int accel_op_supported(struct accel_dev *dev, const struct accel_op *uop, char *reason, size_t len)
{
	struct accel_op op;
	int ret;

	if (reason && len)
		reason[0] = 0;
	if (!dev) {
		if (reason && len)
			snprintf(reason, len, "no device");
		return -EINVAL;
	}
	accel_clearerr(dev);
	if (!uop)
		ret = accel_seterr(dev, -EINVAL, "op is NULL");
	else if (!(ret = op_copy(dev, uop, &op))) {
		dev->query = true;
		ret = op_check(dev, &op);
		dev->query = false;
	}
	if (reason && len)
		snprintf(reason, len, "%s", dev->err);
	return ret;
}
