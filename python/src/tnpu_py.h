/* SPDX-License-Identifier: MIT */
/*
 * tnpu_py.h - shared declarations of the `tnpu` CPython extension (Documentation/python.md):
 * the Device and Model types, the tnpu.Error exception and the numpy staging helpers.
 *
 * numpy's C API is a table imported once per extension: module.c imports it (TNPU_PY_MODULE_C),
 * the other files use the same table through PY_ARRAY_UNIQUE_SYMBOL.
 */
#ifndef TNPU_PY_H
#define TNPU_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#define PY_ARRAY_UNIQUE_SYMBOL tnpu_ARRAY_API
#ifndef TNPU_PY_MODULE_C
#define NO_IMPORT_ARRAY
#endif
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "accel.h"

/* ---- errors (errors.c) ---- */
extern PyObject *tnpu_Error;
/* Raise tnpu.Error(errno = -err, message); an empty message falls back to accel_strerror(err). */
PyObject *tnpu_raise(int err, const char *msg);
/* Raise tnpu.Error with the device's accel_last_error() prefixed by what was being done. */
PyObject *tnpu_raise_dev(int err, struct accel_dev *dev, const char *what);

/* ---- Device (device.c) ---- */
/* What holds device resources beyond a call (a Model's compiled forms): released before the device closes. */
struct tnpu_dev_user {
	struct tnpu_dev_user *next;
	void (*release)(struct tnpu_dev_user *u);	/* with the GIL and the device lock held */
};

typedef struct {
	PyObject_HEAD
	struct accel_dev *dev;		/* NULL once closed */
	PyThread_type_lock lock;	/* libaccel: one thread per device at a time */
	char backend[8];
	struct tnpu_dev_user *users;	/* registered with tnpu_device_add_user (GIL held) */
} DeviceObject;

extern PyTypeObject tnpu_DeviceType;
int tnpu_device_type_init(PyObject *module);
/* Take the device lock, waiting with the GIL released; then fail with ValueError if closed. */
int tnpu_device_acquire(DeviceObject *d);
void tnpu_device_release(DeviceObject *d);
/* Register / unregister u (GIL held); registering twice is a no-op.  Close calls u->release first. */
void tnpu_device_add_user(DeviceObject *d, struct tnpu_dev_user *u);
void tnpu_device_remove_user(DeviceObject *d, struct tnpu_dev_user *u);

/* ---- operations (ops.c): methods of Device ---- */
PyObject *tnpu_device_gemm(PyObject *self, PyObject *args, PyObject *kw);
PyObject *tnpu_device_conv2d(PyObject *self, PyObject *args, PyObject *kw);

/* ---- Model (model.c) ---- */
extern PyTypeObject tnpu_ModelType;
int tnpu_model_type_init(PyObject *module);
struct onnx_model;
/* Model.generate(ids, max_new_tokens, ...) on model m, dev a tnpu.Device or None (generate.c). */
PyObject *tnpu_model_generate(struct onnx_model *m, PyObject *dev, PyObject *args, PyObject *kw);

/* ---- numpy staging (array.c) ---- */
/* obj as a C-contiguous, aligned, native-order array (a copy when it is not one already). */
PyArrayObject *tnpu_array(PyObject *obj, const char *op, const char *name);
/* The accel dtype of an array: float32 -> FP32, int8 -> INT8; else TypeError naming op and name. */
int tnpu_accel_dtype(PyArrayObject *a, const char *op, const char *name, enum accel_dtype *out);
/* A device buffer holding a copy of the array's bytes (caller holds the device lock). */
int tnpu_stage_in(DeviceObject *d, PyArrayObject *a, struct accel_buffer **out);
/* A dimension of an array as the uint32 the library takes; ValueError when 0 or too large. */
int tnpu_dim32(PyArrayObject *a, int axis, const char *op, const char *name, uint32_t *out);

#endif /* TNPU_PY_H */
