/* SPDX-License-Identifier: MIT */
/* vec_ops.h - vector-unit pieces used by pool.c (accel_activation, accel_pool2d). */
#ifndef ACCEL_VEC_OPS_H
#define ACCEL_VEC_OPS_H

#include "internal.h"

/* The validate-only halves of the operations (accel_op_supported, op.c): what the operation checks
 * before it lowers, nothing that needs a buffer's memory. */
int activation_vec_validate(struct accel_dev *dev, const struct accel_activation_desc *d);
int activation_validate(struct accel_dev *dev, const struct accel_activation_desc *d);
int eltwise_validate(struct accel_dev *dev, const struct accel_eltwise_desc *d);
int softmax_validate(struct accel_dev *dev, const struct accel_softmax_desc *d);
int layernorm_validate(struct accel_dev *dev, const struct accel_layernorm_desc *d);
int transpose_validate(struct accel_dev *dev, const struct accel_transpose_desc *d);
/* The vector units' functions of accel_activation: ACCEL_ACT_SIGMOID..SOFTSIGN. */
static inline bool act_is_vec(enum accel_act a)
{
	return a >= ACCEL_ACT_SIGMOID && a <= ACCEL_ACT_SOFTSIGN;
}
struct vx_job;
/* A vector-unit job's start (iteration shape and output operand from out) and its lowering and submission
 * with the tensors' buffers in use (vec_ops.c; the row operations of vec_rows.c use them too). */
void vx_job_init(struct vx_job *j, const struct accel_tensor *out);
int vx_run(struct accel_dev *dev, struct vx_job *j, const struct accel_tensor *const *ts, unsigned n_ts,
	   struct accel_buffer **owned, unsigned n_owned, const struct accel_submit *sub, struct accel_job **job);
/* VEC math's (CAP_FEATURES bit 25): -EOPNOTSUPP naming `what` on a device without it. */
int vm_need(struct accel_dev *dev, const char *what);
/* accel_activation for act_is_vec (descriptor and tensors already checked non-NULL). */
int accel_activation_vec(struct accel_dev *dev, const struct accel_activation_desc *d, const struct accel_submit *sub,
			 struct accel_job **job);
/* The INT8 table of function a: entry i for q = i - 128, sat8(rint(f(in_scale (q - in_zp)) / out_scale) + out_zp). */
void accel_act_lut(enum accel_act a, float alpha, float beta, float in_scale, int32_t in_zp, float out_scale,
		   int32_t out_zp, int8_t lut[256]);
/* Max pooling (and the fp32 average over the taps inside the input) on the vector units: 0 and *job, 1 = not
 * expressible (window/stride/pad fields too large or a row does not fit a half: the caller's host path), or
 * -errno. */
int accel_pool_vec(struct accel_dev *dev, const struct accel_pool2d_desc *d, uint32_t oh, uint32_t ow,
		       const struct accel_submit *sub, struct accel_job **job);

#endif
