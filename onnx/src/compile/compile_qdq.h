/* SPDX-License-Identifier: MIT */
/*
 * compile_qdq.h - the int8 QDQ lowering's shared types: the pattern matcher (compile_qdq_match.c) finds
 * what the lowering (compile_qdq.c) turns into int8 steps; their jobs are built at run time
 * (runtime/compiled_qdq_jobs.c).
 */
#ifndef TNPU_ONNX_COMPILE_QDQ_H
#define TNPU_ONNX_COMPILE_QDQ_H

#include <stdbool.h>

#include "compile.h"

enum { QR_NONE = 0, QR_ANCHOR = 1, QR_ABSORBED = 2 };

/* A tensor's quantisation: real = scale * (q - zp); zp in the device's int8 domain. */
struct qparam {
	double scale;
	float scale_f;
	int32_t zp;
	int dtype;	/* ONNX_UINT8 or ONNX_INT8 */
};

struct qpat {
	int anchor, q, relu;	/* node indices (-1: none) */
	int xdq[2], wdq, bdq;	/* the DQ nodes read (-1) */
	int x[2];		/* their int8 inputs */
	int y;			/* the Q's output */
	struct qparam xq[2], yq;
	int bias_f;		/* a float constant bias (no DQ), -1 */
};

/* compile_qdq_match.c */
const struct onnx_tensor *qdq_cval(const struct onnx_model *m, int v);
void qdq_uses_of(const struct onnx_model *m, int *uses, int *cons);
bool qdq_match(const struct onnx_model *m, const int *uses, const int *cons, unsigned a, struct qpat *p);

#endif
