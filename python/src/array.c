// SPDX-License-Identifier: MIT
/*
 * array.c - numpy arrays in and out of libaccel buffers.  Every input is copied into a device
 * buffer of its own (so results never alias an input and the caller's array may be any layout);
 * results are copied out into new numpy arrays.
 */
#include <string.h>

#include "tnpu_py.h"

PyArrayObject *tnpu_array(PyObject *obj, const char *op, const char *name)
{
	PyArrayObject *a;

	if (obj == Py_None) {
		PyErr_Format(PyExc_TypeError, "%s: %s must be a numpy array, not None", op, name);
		return NULL;
	}
	a = (PyArrayObject *)PyArray_FROM_OF(obj, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
	if (!a && PyErr_ExceptionMatches(PyExc_ValueError)) {
		/* ragged nested sequences and the like */
		PyErr_Clear();
		PyErr_Format(PyExc_TypeError, "%s: %s is not convertible to a numpy array", op, name);
	}
	return a;
}

int tnpu_accel_dtype(PyArrayObject *a, const char *op, const char *name, enum accel_dtype *out)
{
	switch (PyArray_TYPE(a)) {
	case NPY_FLOAT32:
		*out = ACCEL_FP32;
		return 0;
	case NPY_INT8:
		*out = ACCEL_INT8;
		return 0;
	default: {
		PyObject *s = PyObject_Str((PyObject *)PyArray_DESCR(a));

		PyErr_Format(PyExc_TypeError, "%s: %s has dtype %s; tnpu computes on float32 or int8 arrays "
			     "(convert with .astype(numpy.float32))", op, name, s ? PyUnicode_AsUTF8(s) : "?");
		Py_XDECREF(s);
		return -1;
	}
	}
}

int tnpu_dim32(PyArrayObject *a, int axis, const char *op, const char *name, uint32_t *out)
{
	npy_intp v = PyArray_DIM(a, axis);

	if (v <= 0 || (uint64_t)v > UINT32_MAX) {
		PyErr_Format(PyExc_ValueError, "%s: dimension %d of %s is %zd (must be 1..%u)", op, axis, name,
			     (Py_ssize_t)v, UINT32_MAX);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

int tnpu_stage_in(DeviceObject *d, PyArrayObject *a, struct accel_buffer **out)
{
	uint64_t bytes = (uint64_t)PyArray_NBYTES(a);
	int ret = accel_buffer_alloc(d->dev, bytes ? bytes : 1, out);

	if (ret) {
		tnpu_raise_dev(ret, d->dev, "buffer allocation");
		return -1;
	}
	memcpy(accel_buffer_ptr(*out), PyArray_DATA(a), bytes);
	return 0;
}
