// SPDX-License-Identifier: MIT
/*
 * compiled_submit.c - a compiled plan's device steps as libaccel operations: each step's descriptor is
 * built from its operands (compiled_operands.c) and submitted onto the run's chain (compiled_run.c).
 */
#include <string.h>

#include "compiled_operands.h"
#include "compiled_run.h"

int cr_step_err(struct onnx_compiled *cm, const struct cstep *s, int ret, const char *what)
{
	const Onnx__NodeProto *p = cm->m->nodes[s->node].pb;

	return cm_seterr(cm, ret, "node '%s' (%s): %s: %s", p->name && p->name[0] ? p->name : p->output[0],
			 p->op_type, what, accel_last_error(cm->dev));
}

/* An int8 QDQ step: its jobs from k0 on (compile_qdq.c), each depending on the one before. */
int cr_submit_qdq(struct run_state *rs, const struct cstep *s, unsigned k0)
{
	struct onnx_compiled *cm = rs->cm;

	for (unsigned k = k0;; k++) {
		struct accel_submit sub = cr_next_sub(rs);
		struct accel_job *job = NULL;
		const char *what = "";
		int ret = cm_qdq_job(cm, s, k, &sub, &job, &what);

		if (ret == 1)
			return 0;
		if (ret)
			return cr_step_err(cm, s, ret, what);
		if ((ret = cr_push_retire(rs, s, job)))
			return ret;
	}
}



/*
 * A batched CS_GEMM (compile_lower.c: a MatMul of two activations), slices from..ad[0]-1: one accel_gemm
 * job per slice, each after the chain's newest job.  The epilogue (a row bias, a residual slice) is the
 * plain GEMM's.
 */
int cr_lower_bgemm(struct run_state *rs, const struct cstep *s, uint32_t from)
{
	struct onnx_compiled *cm = rs->cm;

	for (uint32_t bi = from; bi < s->ad[0]; bi++) {
		struct accel_submit sub = cr_next_sub(rs);
		struct accel_tensor x, w, y, bt, rt;
		struct accel_gemm_desc d;
		struct accel_job *job = NULL;
		const char *what = "device tensor";
		int ret;

		memset(&d, 0, sizeof(d));
		if (!(ret = cm_t2_slice(cm, s->in[0], bi, (uint32_t)s->M, (uint32_t)s->K, &x)) &&
		    !(ret = cm_t2_slice(cm, s->in[1], bi, (uint32_t)s->K, (uint32_t)s->N, &w)) &&
		    !(ret = cm_t2_slice(cm, s->out, bi, (uint32_t)s->M, (uint32_t)s->N, &y)) &&
		    !(ret = s->b_off == UINT64_MAX ? 0 : accel_tensor_2d(cm->wbuf, s->b_off, ACCEL_FP32, 1, (uint32_t)s->N,
									 &bt)) &&
		    !(ret = s->res < 0 ? 0 : cm_t2_slice(cm, s->res, bi, (uint32_t)s->M, (uint32_t)s->N, &rt))) {
			d.a = &x;
			d.b = &w;
			d.c = &y;
			cm_step_epilogue(s, &bt, &rt, &d.epi);
			if (s->scale != 1.0f)
				d.epi.scale_f = s->scale;
			what = "accel_gemm";
			ret = accel_gemm(cm->dev, &d, &sub, &job);
		}
		if (ret)
			return cr_step_err(cm, s, ret, what);
		if ((ret = cr_push_retire(rs, s, job)))
			return ret;
	}
	return 0;
}

/*
 * CS_REDUCE (compile_reduce.c): M rows of N reduced to M x 1.  ad[0] == 0: the rows are the value's
 * consecutive runs of N (trailing axes).  ad[0] = A slices: a middle run of axes, the value seen as
 * [A, N, M]; slice a is the M x N matrix whose row r is column r of the slice (strides 4 and 4·M bytes),
 * one accel_reduce job each, from slice `from` on.
 */
int cr_lower_reduce(struct run_state *rs, const struct cstep *s, uint32_t from)
{
	struct onnx_compiled *cm = rs->cm;
	uint32_t slices = s->ad[0] ? (uint32_t)s->ad[0] : 1;

	for (uint32_t a = from; a < slices; a++) {
		struct accel_submit sub = cr_next_sub(rs);
		struct accel_tensor x, y;
		struct accel_reduce_desc d = { .input = &x, .output = &y, .op = (enum accel_reduce_op)s->op };
		struct accel_job *job = NULL;
		const char *what = "device tensor";
		int ret;

		if (!(ret = cm_t2_slice(cm, s->in[0], a, (uint32_t)s->M, (uint32_t)s->N, &x)) &&
		    !(ret = cm_t2_slice(cm, s->out, a, (uint32_t)s->M, 1, &y))) {
			if (s->ad[0]) {
				x.strides[0] = 4;
				x.strides[1] = 4 * s->M;
			}
			what = "accel_reduce";
			ret = accel_reduce(cm->dev, &d, &sub, &job);
		}
		if (ret)
			return cr_step_err(cm, s, ret, what);
		if ((ret = cr_push_retire(rs, s, job)))
			return ret;
	}
	return 0;
}

/* A CS_GEMM whose B stays packed (compile_wq.c): one accel_qgemm job, the plain GEMM's epilogue. */
static int lower_qgemm(struct run_state *rs, const struct cstep *s)
{
	struct onnx_compiled *cm = rs->cm;
	struct accel_submit sub = cr_next_sub(rs);
	struct accel_tensor x, y, bt, rt;
	struct accel_qgemm_desc d;
	struct accel_qweights w;
	struct accel_job *job = NULL;
	const char *what = "device tensor";
	int ret;

	memset(&d, 0, sizeof(d));
	cm_wq_weights(cm, s, &w);
	if (!(ret = cm_t2(cm, s->in[0], (uint32_t)s->M, (uint32_t)s->K, &x)) &&
	    !(ret = cm_t2(cm, s->out, (uint32_t)s->M, (uint32_t)s->N, &y)) &&
	    !(ret = s->b_off == UINT64_MAX ? 0 : accel_tensor_2d(cm->wbuf, s->b_off, ACCEL_FP32, 1, (uint32_t)s->N, &bt)) &&
	    !(ret = s->res < 0 ? 0 : cm_t2(cm, s->res, (uint32_t)s->M, (uint32_t)s->N, &rt))) {
		d.a = &x;
		d.c = &y;
		d.w = &w;
		cm_step_epilogue(s, &bt, &rt, &d.epi);
		if (s->scale != 1.0f)
			d.epi.scale_f = s->scale;
		what = "accel_qgemm";
		ret = accel_qgemm(cm->dev, &d, &sub, &job);
	}
	if (ret)
		return cr_step_err(cm, s, ret, what);
	return cr_push_retire(rs, s, job);
}

int cr_lower_step(struct run_state *rs, const struct cstep *s)
{
	struct onnx_compiled *cm = rs->cm;
	struct accel_submit sub = cr_next_sub(rs);
	struct accel_tensor x, w, y, bt, b2, rt;
	struct accel_job *job = NULL;
	/* until the operation is called: a shape libaccel's tensor constructors refuse (their message) */
	const char *what = "device tensor";
	int ret = -EINVAL;

	memset(&x, 0, sizeof(x));
	memset(&w, 0, sizeof(w));
	memset(&y, 0, sizeof(y));
	memset(&bt, 0, sizeof(bt));
	memset(&b2, 0, sizeof(b2));
	memset(&rt, 0, sizeof(rt));

	switch (s->kind) {
	case CS_CONV: {
		struct accel_conv2d_desc d;

		if (s->pair >= 0) {	/* compile_fuse_pwdw.c: the depthwise step's convolution after it */
			struct accel_conv2d_pwdw_desc pd = { .flags = 0 };
			struct accel_tensor x2, w2, y2, bt2, rt2;

			if ((ret = cm_conv_desc(cm, s, &pd.pw, &x, &w, &y, &bt, &rt)) ||
			    (ret = cm_conv_desc(cm, &cm->steps[s->pair], &pd.dw, &x2, &w2, &y2, &bt2, &rt2)))
				break;
			what = "accel_conv2d_pwdw";
			ret = accel_conv2d_pwdw(cm->dev, &pd, &sub, &job);
			break;
		}
		if ((ret = cm_conv_desc(cm, s, &d, &x, &w, &y, &bt, &rt)))
			break;
		what = "accel_conv2d";
		ret = accel_conv2d(cm->dev, &d, &sub, &job);
		break;
	}
	case CS_GEMM: {
		struct accel_gemm_desc d;

		if (s->ad[0] > 1)
			return cr_lower_bgemm(rs, s, 0);
		if (s->wq)
			return lower_qgemm(rs, s);
		memset(&d, 0, sizeof(d));
		if ((ret = cm_t2(cm, s->in[0], (uint32_t)(s->ta ? s->K : s->M), (uint32_t)(s->ta ? s->M : s->K), &x)) ||
		    (ret = s->in[1] >= 0 ? cm_t2(cm, s->in[1], (uint32_t)(s->tb ? s->N : s->K), (uint32_t)(s->tb ? s->K : s->N),
					      &w)
					 : accel_tensor_2d(cm->wbuf, s->w_off, ACCEL_FP32, (uint32_t)(s->tb ? s->N : s->K),
							   (uint32_t)(s->tb ? s->K : s->N), &w)) ||
		    (ret = cm_t2(cm, s->out, (uint32_t)s->M, (uint32_t)s->N, &y)) ||
		    (s->b_off != UINT64_MAX &&
		     (ret = accel_tensor_2d(cm->wbuf, s->b_off, ACCEL_FP32, 1, (uint32_t)s->N, &bt))) ||
		    (s->res >= 0 && (ret = cm_t2(cm, s->res, (uint32_t)s->M, (uint32_t)s->N, &rt))))
			break;
		d.a = &x;
		d.b = &w;
		d.c = &y;
		d.trans_a = s->ta;
		d.trans_b = s->tb;
		cm_step_epilogue(s, &bt, &rt, &d.epi);
		if (s->scale != 1.0f)
			d.epi.scale_f = s->scale;
		what = "accel_gemm";
		ret = accel_gemm(cm->dev, &d, &sub, &job);
		break;
	}
	case CS_POOL: {
		struct accel_pool2d_desc d;

		memset(&d, 0, sizeof(d));
		/* input and output share a layout (one group; a 1x1 output has the same bytes in both) */
		if ((ret = cm_t4l(cm, s->in[0], cm_nhwc(cm, s->in[0]), (uint32_t)s->n, (uint32_t)s->c, (uint32_t)s->h,
			       (uint32_t)s->w, &x)) ||
		    (ret = cm_t4l(cm, s->out, cm_nhwc(cm, s->in[0]), (uint32_t)s->n, (uint32_t)s->c, (uint32_t)s->oh,
			       (uint32_t)s->ow, &y)))
			break;
		d.input = &x;
		d.output = &y;
		d.kind = (enum accel_pool_kind)s->op;
		d.win_h = (uint32_t)s->kh, d.win_w = (uint32_t)s->kw;
		d.stride_h = (uint32_t)s->sh, d.stride_w = (uint32_t)s->sw;
		d.pad_top = (uint32_t)s->pt, d.pad_left = (uint32_t)s->pl;
		d.pad_bottom = (uint32_t)s->pb, d.pad_right = (uint32_t)s->pr;
		what = "accel_pool2d";
		ret = accel_pool2d(cm->dev, &d, &sub, &job);
		break;
	}
	case CS_ELT: {
		struct accel_eltwise_desc d;

		memset(&d, 0, sizeof(d));
		/* each operand in its own layout: a broadcast one ([N, C, 1, 1], a scalar: compile_layout.c)
		 * may be NCHW beside an NHWC output, the vector units broadcast it by its strides */
		if ((ret = cm_t4l(cm, s->in[0], cm_nhwc(cm, s->in[0]), s->ad[0], s->ad[1], s->ad[2], s->ad[3], &x)) ||
		    /* Div by a constant: its packed reciprocals */
		    (ret = s->b_off != UINT64_MAX ? accel_tensor_4d(cm->wbuf, s->b_off, ACCEL_FP32, ACCEL_LAYOUT_NCHW,
								    s->bd[0], s->bd[1], s->bd[2], s->bd[3], &b2)
						  : cm_t4l(cm, s->in[1], cm_nhwc(cm, s->in[1]), s->bd[0], s->bd[1], s->bd[2],
							s->bd[3], &b2)) ||
		    (ret = cm_t4l(cm, s->out, cm_nhwc(cm, s->out), s->od[0], s->od[1], s->od[2], s->od[3], &y)))
			break;
		d.a = &x;
		d.b = &b2;
		d.out = &y;
		d.op = (enum accel_eltwise_op)s->op;
		d.act = (enum accel_act)s->act;
		what = "accel_eltwise";
		ret = accel_eltwise(cm->dev, &d, &sub, &job);
		break;
	}
	case CS_ACT: {
		struct accel_activation_desc d;
		uint32_t cnt = (uint32_t)(cm->vals[s->out].bytes / 4);

		memset(&d, 0, sizeof(d));
		if ((ret = cm_t2(cm, s->in[0], 1, cnt, &x)) || (ret = cm_t2(cm, s->out, 1, cnt, &y)))
			break;
		d.input = &x;
		d.output = &y;
		d.act = (enum accel_act)s->act;
		if (s->act == ACCEL_ACT_HARDSIGMOID || s->act == ACCEL_ACT_LEAKYRELU || s->act == ACCEL_ACT_ELU ||
		    s->act == ACCEL_ACT_THRESHOLDEDRELU) {
			d.alpha = s->lo;
			d.beta = s->hi;
		} else {
			d.clamp_lo_f = s->lo;
			d.clamp_hi_f = s->hi;
		}
		what = "accel_activation";
		ret = accel_activation(cm->dev, &d, &sub, &job);
		break;
	}
	case CS_REDUCE:
		return cr_lower_reduce(rs, s, 0);
	case CS_SOFTMAX:
	case CS_LAYERNORM: {
		if ((ret = cm_t2(cm, s->in[0], (uint32_t)s->M, (uint32_t)s->N, &x)) ||
		    (ret = cm_t2(cm, s->out, (uint32_t)s->M, (uint32_t)s->N, &y)))
			break;
		if (s->kind == CS_SOFTMAX) {
			struct accel_softmax_desc d = { .input = &x, .output = &y };

			what = s->op ? "accel_log_softmax" : "accel_softmax";
			ret = (s->op ? accel_log_softmax : accel_softmax)(cm->dev, &d, &sub, &job);
		} else {
			struct accel_layernorm_desc d = { .input = &x, .output = &y, .epsilon = s->scale };

			if ((ret = accel_tensor_2d(cm->wbuf, s->w_off, ACCEL_FP32, 1, (uint32_t)s->N, &w)) ||
			    (s->b_off != UINT64_MAX &&
			     (ret = accel_tensor_2d(cm->wbuf, s->b_off, ACCEL_FP32, 1, (uint32_t)s->N, &bt))))
				break;
			d.gamma = &w;
			if (s->b_off != UINT64_MAX)
				d.beta = &bt;
			what = "accel_layernorm";
			ret = accel_layernorm(cm->dev, &d, &sub, &job);
		}
		break;
	}
	case CS_TRANSPOSE: {
		struct accel_transpose_desc d;

		memset(&d, 0, sizeof(d));
		if ((ret = cm_t4(cm, s->in[0], s->ad[0], s->ad[1], s->ad[2], s->ad[3], &x)) ||
		    (ret = cm_t4(cm, s->out, s->od[0], s->od[1], s->od[2], s->od[3], &y)))
			break;
		d.input = &x;
		d.output = &y;
		for (int k = 0; k < 4; k++)
			d.perm[k] = s->bd[k];
		what = "accel_transpose";
		ret = accel_transpose(cm->dev, &d, &sub, &job);
		break;
	}
	case CS_COPY: {
		struct accel_transpose_desc d;

		memset(&d, 0, sizeof(d));
		cm_copy_tensors(cm, s, &x, &y);
		d.input = &x;
		d.output = &y;
		for (int k = 0; k < 4; k++)
			d.perm[k] = (uint32_t)k;
		what = "accel_transpose (copy)";
		ret = accel_transpose(cm->dev, &d, &sub, &job);
		break;
	}
	default:
		if (CS_IS_QDQ(s->kind))
			return cr_submit_qdq(rs, s, 0);
		what = "";	/* no such step kind: -EINVAL */
		break;
	}
	if (ret) {
		const Onnx__NodeProto *p = cm->m->nodes[s->node].pb;

		return cm_seterr(cm, ret, "node '%s' (%s): %s: %s", p->name && p->name[0] ? p->name : p->output[0],
				 p->op_type, what, accel_last_error(cm->dev));
	}
	return cr_push_retire(rs, s, job);
}
