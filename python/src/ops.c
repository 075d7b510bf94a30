// SPDX-License-Identifier: MIT
/*
 * ops.c - Device.gemm and Device.conv2d: check the arrays on the Python side (wrong types and shapes
 * are TypeError/ValueError before the device is touched), stage them into device buffers, run the
 * operation synchronously with the GIL released, copy the result into a new numpy array.
 */
#include <string.h>

#include "tnpu_py.h"

#define MAX_BUFS 4

/* The device buffers of one call, freed together. */
struct staging {
	struct accel_buffer *buf[MAX_BUFS];
	unsigned n;
};

static int stage(DeviceObject *d, struct staging *s, PyArrayObject *a, struct accel_buffer **out)
{
	if (tnpu_stage_in(d, a, out) < 0)
		return -1;
	s->buf[s->n++] = *out;
	return 0;
}

static int stage_empty(DeviceObject *d, struct staging *s, uint64_t bytes, struct accel_buffer **out)
{
	int ret = accel_buffer_alloc(d->dev, bytes ? bytes : 1, out);

	if (ret) {
		tnpu_raise_dev(ret, d->dev, "buffer allocation");
		return -1;
	}
	s->buf[s->n++] = *out;
	return 0;
}

static void staging_free(struct staging *s)
{
	while (s->n)
		accel_buffer_free(s->buf[--s->n]);
}

/* The result array (dtype of the accumulator) of the given shape; MemoryError past the address space. */
static PyArrayObject *new_result(int ndim, const uint32_t *shape, int npy_type)
{
	npy_intp dims[4];
	uint64_t count = 1;

	for (int i = 0; i < ndim; i++) {
		dims[i] = shape[i];
		if (count > (uint64_t)NPY_MAX_INTP / 8 / (shape[i] ? shape[i] : 1)) {
			PyErr_SetString(PyExc_MemoryError, "result too large");
			return NULL;
		}
		count *= shape[i];
	}
	return (PyArrayObject *)PyArray_SimpleNew(ndim, dims, npy_type);
}

/* Optional bias: 1-D of n elements, float32 for float32 operations, int32 for int8 ones. */
static int check_bias(PyObject *obj, const char *op, enum accel_dtype dt, uint32_t n, PyArrayObject **out)
{
	int want = dt == ACCEL_FP32 ? NPY_FLOAT32 : NPY_INT32;

	*out = NULL;
	if (obj == Py_None)
		return 0;
	*out = tnpu_array(obj, op, "bias");
	if (!*out)
		return -1;
	if (PyArray_TYPE(*out) != want) {
		PyErr_Format(PyExc_TypeError, "%s: bias must be %s for %s operands", op,
			     want == NPY_FLOAT32 ? "float32" : "int32", dt == ACCEL_FP32 ? "float32" : "int8");
		return -1;
	}
	if (PyArray_NDIM(*out) != 1 || PyArray_DIM(*out, 0) != (npy_intp)n) {
		PyErr_Format(PyExc_ValueError, "%s: bias must be 1-D of %u elements (one per output column/channel)",
			     op, n);
		return -1;
	}
	return 0;
}

/* c= of gemm: a writeable ndarray of the result's shape and dtype. */
static int check_out(PyObject *obj, const char *op, PyArrayObject *res)
{
	PyArrayObject *c = (PyArrayObject *)obj;

	if (!PyArray_Check(obj)) {
		PyErr_Format(PyExc_TypeError, "%s: c must be a numpy array", op);
		return -1;
	}
	if (PyArray_TYPE(c) != PyArray_TYPE(res)) {
		PyErr_Format(PyExc_TypeError, "%s: c must be %s", op,
			     PyArray_TYPE(res) == NPY_FLOAT32 ? "float32" : PyArray_TYPE(res) == NPY_INT8 ? "int8" : "int32");
		return -1;
	}
	if (PyArray_NDIM(c) != 2 || PyArray_DIM(c, 0) != PyArray_DIM(res, 0) ||
	    PyArray_DIM(c, 1) != PyArray_DIM(res, 1)) {
		PyErr_Format(PyExc_ValueError, "%s: c must have shape (%zd, %zd)", op, (Py_ssize_t)PyArray_DIM(res, 0),
			     (Py_ssize_t)PyArray_DIM(res, 1));
		return -1;
	}
	if (!PyArray_ISWRITEABLE(c)) {
		PyErr_Format(PyExc_ValueError, "%s: c is read-only", op);
		return -1;
	}
	return 0;
}

static int check_ndim(PyArrayObject *a, int ndim, const char *op, const char *name)
{
	if (PyArray_NDIM(a) == ndim)
		return 0;
	PyErr_Format(PyExc_ValueError, "%s: %s must be %d-D, got %d-D", op, name, ndim, PyArray_NDIM(a));
	return -1;
}

static int check_same_dtype(PyArrayObject *a, PyArrayObject *b, const char *op, const char *na, const char *nb,
			    enum accel_dtype *dt)
{
	enum accel_dtype db;

	if (tnpu_accel_dtype(a, op, na, dt) < 0 || tnpu_accel_dtype(b, op, nb, &db) < 0)
		return -1;
	if (*dt != db) {
		PyErr_Format(PyExc_TypeError, "%s: %s and %s must have the same dtype (float32 or int8)", op, na, nb);
		return -1;
	}
	return 0;
}

/*
 * out_scale= / out_zero_point=: int8 operands give an int8 result requantised by the epilogue
 * (y = sat8(round(acc * out_scale) + out_zero_point), multiplier/shift from accel_quant_from_scale);
 * float32 operands scale the result (epilogue scale_f).  Fills the epilogue and the result dtypes.
 */
static int parse_requant(PyObject *scale_o, int zp, enum accel_dtype dt, const char *op, struct accel_epilogue *epi,
			 enum accel_dtype *odt, int *npy_out)
{
	double scale;

	*odt = dt == ACCEL_FP32 ? ACCEL_FP32 : ACCEL_INT32;
	*npy_out = dt == ACCEL_FP32 ? NPY_FLOAT32 : NPY_INT32;
	if (scale_o == Py_None) {
		if (zp) {
			PyErr_Format(PyExc_ValueError, "%s: out_zero_point needs out_scale", op);
			return -1;
		}
		return 0;
	}
	scale = PyFloat_AsDouble(scale_o);
	if (scale == -1.0 && PyErr_Occurred())
		return -1;
	if (!(scale > 0) || scale >= 2147483648.0) {
		PyErr_Format(PyExc_ValueError, "%s: out_scale must be > 0 and < 2**31", op);
		return -1;
	}
	if (dt == ACCEL_FP32) {
		if (zp) {
			PyErr_Format(PyExc_ValueError, "%s: out_zero_point applies to int8 operands only", op);
			return -1;
		}
		epi->scale_f = (float)scale;
		return 0;
	}
	if (zp < -128 || zp > 127) {
		PyErr_Format(PyExc_ValueError, "%s: out_zero_point must be -128..127", op);
		return -1;
	}
	if (accel_quant_from_scale(scale, &epi->multiplier, &epi->shift)) {
		PyErr_Format(PyExc_ValueError, "%s: out_scale %g cannot be represented as multiplier/shift", op, scale);
		return -1;
	}
	epi->zero_point = (int16_t)zp;
	*odt = ACCEL_INT8;
	*npy_out = NPY_INT8;
	return 0;
}

PyObject *tnpu_device_gemm(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "a", "b", "c", "trans_a", "trans_b", "bias", "relu", "out_scale", "out_zero_point",
				  NULL };
	DeviceObject *d = (DeviceObject *)self;
	PyObject *ao, *bo, *co = Py_None, *biaso = Py_None, *scale_o = Py_None, *ret = NULL;
	PyArrayObject *a = NULL, *b = NULL, *bias = NULL, *res = NULL;
	int trans_a = 0, trans_b = 0, relu = 0, out_zp = 0, npy_out, rc;
	struct accel_epilogue epi = { .act = ACCEL_ACT_NONE };
	enum accel_dtype odt;
	uint32_t m, k, kb, n;
	enum accel_dtype dt;
	struct staging s = { .n = 0 };
	struct accel_buffer *abuf, *bbuf, *cbuf, *biasbuf;
	struct accel_tensor ta, tb, tc, tbias;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$ppOpOi:gemm", kwlist, &ao, &bo, &co, &trans_a, &trans_b,
					 &biaso, &relu, &scale_o, &out_zp))
		return NULL;
	a = tnpu_array(ao, "gemm", "a");
	b = a ? tnpu_array(bo, "gemm", "b") : NULL;
	if (!b || check_same_dtype(a, b, "gemm", "a", "b", &dt) < 0 || check_ndim(a, 2, "gemm", "a") < 0 ||
	    check_ndim(b, 2, "gemm", "b") < 0)
		goto out;
	if (tnpu_dim32(a, trans_a ? 1 : 0, "gemm", "a", &m) < 0 ||
	    tnpu_dim32(a, trans_a ? 0 : 1, "gemm", "a", &k) < 0 ||
	    tnpu_dim32(b, trans_b ? 1 : 0, "gemm", "b", &kb) < 0 ||
	    tnpu_dim32(b, trans_b ? 0 : 1, "gemm", "b", &n) < 0)
		goto out;
	if (k != kb) {
		PyErr_Format(PyExc_ValueError, "gemm: inner dimensions differ: op(a) is %u x %u, op(b) is %u x %u",
			     m, k, kb, n);
		goto out;
	}
	if (check_bias(biaso, "gemm", dt, n, &bias) < 0 || parse_requant(scale_o, out_zp, dt, "gemm", &epi, &odt,
									  &npy_out) < 0)
		goto out;
	res = new_result(2, (uint32_t[]){ m, n }, npy_out);
	if (!res || (co != Py_None && check_out(co, "gemm", res) < 0))
		goto out;

	if (tnpu_device_acquire(d) < 0)
		goto out;
	if (stage(d, &s, a, &abuf) < 0 || stage(d, &s, b, &bbuf) < 0 ||
	    stage_empty(d, &s, (uint64_t)PyArray_NBYTES(res), &cbuf) < 0 ||
	    (bias && stage(d, &s, bias, &biasbuf) < 0))
		goto unlock;
	struct accel_gemm_desc desc = { .a = &ta, .b = &tb, .c = &tc, .trans_a = trans_a, .trans_b = trans_b,
					.epi = epi };

	desc.epi.act = relu ? ACCEL_ACT_RELU : ACCEL_ACT_NONE;
	rc = accel_tensor_2d(abuf, 0, dt, (uint32_t)PyArray_DIM(a, 0), (uint32_t)PyArray_DIM(a, 1), &ta);
	if (!rc)
		rc = accel_tensor_2d(bbuf, 0, dt, (uint32_t)PyArray_DIM(b, 0), (uint32_t)PyArray_DIM(b, 1), &tb);
	if (!rc)
		rc = accel_tensor_2d(cbuf, 0, odt, m, n, &tc);
	if (!rc && bias) {
		rc = accel_tensor_2d(biasbuf, 0, dt == ACCEL_FP32 ? ACCEL_FP32 : ACCEL_INT32, 1, n, &tbias);
		desc.epi.bias = &tbias;
	}
	if (!rc) {
		Py_BEGIN_ALLOW_THREADS
		rc = accel_gemm(d->dev, &desc, NULL, NULL);
		Py_END_ALLOW_THREADS
	}
	if (rc) {
		tnpu_raise_dev(rc, d->dev, "gemm");
		goto unlock;
	}
	memcpy(PyArray_DATA(res), accel_buffer_ptr(cbuf), (size_t)PyArray_NBYTES(res));
	if (co != Py_None) {
		if (PyArray_CopyInto((PyArrayObject *)co, res) == 0)
			ret = Py_NewRef(co);
	} else {
		ret = Py_NewRef((PyObject *)res);
	}
unlock:
	staging_free(&s);
	tnpu_device_release(d);
out:
	Py_XDECREF(a);
	Py_XDECREF(b);
	Py_XDECREF(bias);
	Py_XDECREF(res);
	return ret;
}

/* stride=/dilation=: an int or (h, w), each >= 1. */
static int parse_pair(PyObject *obj, const char *op, const char *name, uint32_t *h, uint32_t *w)
{
	long v[2];

	if (PyLong_Check(obj)) {
		v[0] = v[1] = PyLong_AsLong(obj);
	} else if ((PyTuple_Check(obj) || PyList_Check(obj)) && PySequence_Fast_GET_SIZE(obj) == 2) {
		v[0] = PyLong_AsLong(PySequence_Fast_GET_ITEM(obj, 0));
		v[1] = v[0] == -1 && PyErr_Occurred() ? -1 : PyLong_AsLong(PySequence_Fast_GET_ITEM(obj, 1));
	} else {
		PyErr_Format(PyExc_TypeError, "%s: %s must be an int or a pair (h, w)", op, name);
		return -1;
	}
	if (PyErr_Occurred())
		return -1;
	if (v[0] < 1 || v[1] < 1 || v[0] > 65535 || v[1] > 65535) {
		PyErr_Format(PyExc_ValueError, "%s: %s must be 1..65535", op, name);
		return -1;
	}
	*h = (uint32_t)v[0];
	*w = (uint32_t)v[1];
	return 0;
}

/* padding=: an int, (h, w) or (top, left, bottom, right) as ONNX pads, each >= 0. */
static int parse_padding(PyObject *obj, const char *op, uint32_t pad[4])
{
	long v[4];
	Py_ssize_t n;

	if (PyLong_Check(obj)) {
		v[0] = v[1] = v[2] = v[3] = PyLong_AsLong(obj);
	} else if ((PyTuple_Check(obj) || PyList_Check(obj)) && ((n = PySequence_Fast_GET_SIZE(obj)) == 2 || n == 4)) {
		for (Py_ssize_t i = 0; i < 4 && !PyErr_Occurred(); i++)
			v[i] = PyLong_AsLong(PySequence_Fast_GET_ITEM(obj, n == 2 ? i % 2 : i));
	} else {
		PyErr_Format(PyExc_TypeError, "%s: padding must be an int, (h, w) or (top, left, bottom, right)", op);
		return -1;
	}
	if (PyErr_Occurred())
		return -1;
	for (int i = 0; i < 4; i++) {
		if (v[i] < 0 || v[i] > 65535) {
			PyErr_Format(PyExc_ValueError, "%s: padding must be 0..65535", op);
			return -1;
		}
		pad[i] = (uint32_t)v[i];
	}
	return 0;
}

/* One output dimension; ValueError when the (dilated) kernel does not fit the padded input. */
static int out_dim(uint32_t in, uint32_t pad_lo, uint32_t pad_hi, uint32_t kern, uint32_t dil, uint32_t stride,
		   const char *axis, uint32_t *out)
{
	int64_t span = (int64_t)in + pad_lo + pad_hi - (int64_t)dil * (kern - 1) - 1;

	if (span < 0) {
		PyErr_Format(PyExc_ValueError,
			     "conv2d: the kernel (%u, dilation %u) is larger than the padded input %s (%u + %u + %u)",
			     kern, dil, axis, in, pad_lo, pad_hi);
		return -1;
	}
	*out = (uint32_t)(span / stride + 1);
	return 0;
}

PyObject *tnpu_device_conv2d(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "x", "w", "bias", "stride", "padding", "dilation", "groups", "relu",
				  "input_zero_point", "out_scale", "out_zero_point", NULL };
	DeviceObject *d = (DeviceObject *)self;
	PyObject *xo, *wo, *biaso = Py_None, *stride_o = NULL, *pad_o = NULL, *dil_o = NULL, *scale_o = Py_None;
	PyObject *ret = NULL;
	struct accel_epilogue epi = { .act = ACCEL_ACT_NONE };
	enum accel_dtype odt;
	int out_zp = 0, npy_out;
	PyArrayObject *x = NULL, *w = NULL, *bias = NULL, *res = NULL;
	int groups = 1;
	int relu = 0, zp = 0, rc;
	uint32_t xs[4], ws[4], os[4], sh = 1, sw = 1, dh = 1, dw = 1, pad[4] = { 0 };
	enum accel_dtype dt;
	struct staging s = { .n = 0 };
	struct accel_buffer *xbuf, *wbuf, *obuf, *biasbuf;
	struct accel_tensor tx, tw, to, tbias;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$OOOipiOi:conv2d", kwlist, &xo, &wo, &biaso, &stride_o, &pad_o,
					 &dil_o, &groups, &relu, &zp, &scale_o, &out_zp))
		return NULL;
	if ((stride_o && parse_pair(stride_o, "conv2d", "stride", &sh, &sw) < 0) ||
	    (dil_o && parse_pair(dil_o, "conv2d", "dilation", &dh, &dw) < 0) ||
	    (pad_o && parse_padding(pad_o, "conv2d", pad) < 0))
		return NULL;
	x = tnpu_array(xo, "conv2d", "x");
	w = x ? tnpu_array(wo, "conv2d", "w") : NULL;
	if (!w || check_same_dtype(x, w, "conv2d", "x", "w", &dt) < 0 || check_ndim(x, 4, "conv2d", "x") < 0 ||
	    check_ndim(w, 4, "conv2d", "w") < 0)
		goto out;
	for (int i = 0; i < 4; i++)
		if (tnpu_dim32(x, i, "conv2d", "x", &xs[i]) < 0 || tnpu_dim32(w, i, "conv2d", "w", &ws[i]) < 0)
			goto out;
	if (groups < 1) {
		PyErr_Format(PyExc_ValueError, "conv2d: groups must be >= 1, got %d", groups);
		goto out;
	}
	if (xs[1] % (uint32_t)groups || ws[0] % (uint32_t)groups || ws[1] != xs[1] / (uint32_t)groups) {
		PyErr_Format(PyExc_ValueError,
			     "conv2d: x has %u channels and w is (%u, %u, %u, %u): w must be (K, C/groups, R, S) with "
			     "groups (%d) dividing C and K", xs[1], ws[0], ws[1], ws[2], ws[3], groups);
		goto out;
	}
	if (zp && dt != ACCEL_INT8) {
		PyErr_SetString(PyExc_ValueError, "conv2d: input_zero_point applies to int8 operands only");
		goto out;
	}
	if (zp < -128 || zp > 127) {
		PyErr_SetString(PyExc_ValueError, "conv2d: input_zero_point must be -128..127");
		goto out;
	}
	os[0] = xs[0];
	os[1] = ws[0];
	if (out_dim(xs[2], pad[0], pad[2], ws[2], dh, sh, "height", &os[2]) < 0 ||
	    out_dim(xs[3], pad[1], pad[3], ws[3], dw, sw, "width", &os[3]) < 0 ||
	    check_bias(biaso, "conv2d", dt, ws[0], &bias) < 0 ||
	    parse_requant(scale_o, out_zp, dt, "conv2d", &epi, &odt, &npy_out) < 0)
		goto out;
	res = new_result(4, os, npy_out);
	if (!res)
		goto out;

	if (tnpu_device_acquire(d) < 0)
		goto out;
	if (stage(d, &s, x, &xbuf) < 0 || stage(d, &s, w, &wbuf) < 0 ||
	    stage_empty(d, &s, (uint64_t)PyArray_NBYTES(res), &obuf) < 0 || (bias && stage(d, &s, bias, &biasbuf) < 0))
		goto unlock;
	struct accel_conv2d_desc desc = {
		.input = &tx, .weights = &tw, .output = &to,
		.stride_h = sh, .stride_w = sw, .dil_h = dh, .dil_w = dw, .groups = groups,
		.pad_top = pad[0], .pad_left = pad[1], .pad_bottom = pad[2], .pad_right = pad[3],
		.input_zero_point = zp, .epi = epi,
	};
	enum accel_dtype bias_dt = dt == ACCEL_FP32 ? ACCEL_FP32 : ACCEL_INT32;

	desc.epi.act = relu ? ACCEL_ACT_RELU : ACCEL_ACT_NONE;
	rc = accel_tensor_4d(xbuf, 0, dt, ACCEL_LAYOUT_NCHW, xs[0], xs[1], xs[2], xs[3], &tx);
	if (!rc)
		rc = accel_tensor_4d(wbuf, 0, dt, ACCEL_LAYOUT_NCHW, ws[0], ws[1], ws[2], ws[3], &tw);
	if (!rc)
		rc = accel_tensor_4d(obuf, 0, odt, ACCEL_LAYOUT_NCHW, os[0], os[1], os[2], os[3], &to);
	if (!rc && bias) {
		rc = accel_tensor_2d(biasbuf, 0, bias_dt, 1, ws[0], &tbias);
		desc.epi.bias = &tbias;
	}
	if (!rc) {
		Py_BEGIN_ALLOW_THREADS
		rc = accel_conv2d(d->dev, &desc, NULL, NULL);
		Py_END_ALLOW_THREADS
	}
	if (rc) {
		tnpu_raise_dev(rc, d->dev, "conv2d");
		goto unlock;
	}
	memcpy(PyArray_DATA(res), accel_buffer_ptr(obuf), (size_t)PyArray_NBYTES(res));
	ret = Py_NewRef((PyObject *)res);
unlock:
	staging_free(&s);
	tnpu_device_release(d);
out:
	Py_XDECREF(x);
	Py_XDECREF(w);
	Py_XDECREF(bias);
	Py_XDECREF(res);
	return ret;
}
