/* SPDX-License-Identifier: MIT */
/*
 * vec_act.h - which vector-unit function (accel_activation) an fp32 ONNX node is, with its attributes:
 * one table for the compiled plan's activation steps (compile_lower.c) and the node kernels
 * (ops_accel_vec.c).
 */
#ifndef TNPU_ONNX_VEC_ACT_H
#define TNPU_ONNX_VEC_ACT_H

#include "internal.h"

struct vec_act {
	enum accel_act act;
	float alpha, beta;	/* accel_activation_desc's: HardSigmoid, LeakyRelu, Elu/Selu, ThresholdedRelu */
	bool vmath;		/* VEC math's (CAP_FEATURES bit 25), else ISA 2's (bit 15) */
};

/* 0 and *va for Sigmoid, Tanh, Exp, Erf, Gelu (approximate none), HardSigmoid, HardSwish, Reciprocal,
 * and VEC math's Log, Sqrt, Abs, Neg, Floor, Ceil, Round, Sign, LeakyRelu, Elu, Selu, ThresholdedRelu,
 * Softplus, Softsign; ONNX_FALLBACK for any other node. */
int vec_act_of(const struct onnx_node *n, struct vec_act *va);

#endif /* TNPU_ONNX_VEC_ACT_H */
