// SPDX-License-Identifier: MIT
/*
 * device.c - tnpu.Device: one open libaccel device (accel_open), its capabilities and lifetime.
 *
 * libaccel allows one thread per device at a time; a Device therefore carries a lock that every
 * method takes (waiting for it, and doing the device work, with the GIL released), so Python threads
 * may share a Device safely.  close() is idempotent; any use after it raises ValueError, as a closed
 * Python file does.
 */
#include <string.h>

#include "tnpu_py.h"

int tnpu_device_acquire(DeviceObject *d)
{
	if (!d->lock) {
		PyErr_SetString(PyExc_ValueError, "device was not initialised");
		return -1;
	}
	if (!PyThread_acquire_lock(d->lock, NOWAIT_LOCK)) {
		Py_BEGIN_ALLOW_THREADS
		PyThread_acquire_lock(d->lock, WAIT_LOCK);
		Py_END_ALLOW_THREADS
	}
	if (!d->dev) {
		PyThread_release_lock(d->lock);
		PyErr_SetString(PyExc_ValueError, "operation on a closed tnpu.Device");
		return -1;
	}
	return 0;
}

void tnpu_device_release(DeviceObject *d)
{
	PyThread_release_lock(d->lock);
}

static PyObject *device_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	DeviceObject *d = (DeviceObject *)type->tp_alloc(type, 0);

	if (!d)
		return NULL;
	d->lock = PyThread_allocate_lock();
	if (!d->lock) {
		Py_DECREF(d);
		return PyErr_NoMemory();
	}
	return (PyObject *)d;
}

static int device_init(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", NULL };
	DeviceObject *d = (DeviceObject *)self;
	PyObject *path_obj = Py_None, *path_bytes = NULL;
	const char *path = NULL;
	struct accel_dev *dev = NULL;
	struct accel_caps caps;
	char msg[512] = "";
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:Device", kwlist, &path_obj))
		return -1;
	if (d->dev) {
		PyErr_SetString(PyExc_ValueError, "Device is already open");
		return -1;
	}
	if (path_obj != Py_None) {
		if (!PyUnicode_FSConverter(path_obj, &path_bytes))
			return -1;
		path = PyBytes_AS_STRING(path_bytes);
	}
	Py_BEGIN_ALLOW_THREADS
	ret = accel_open_msg(path, msg, sizeof(msg), &dev);
	if (!ret)
		ret = accel_query_caps(dev, &caps);
	Py_END_ALLOW_THREADS
	if (ret) {
		if (dev) {
			snprintf(msg, sizeof(msg), "%s", accel_last_error(dev));
			accel_close(dev);
		}
		char full[700];

		/* accel_open_msg's message names the path already. */
		if (*msg)
			snprintf(full, sizeof(full), "%s", msg);
		else
			snprintf(full, sizeof(full), "cannot open %s: %s", path ? path : "the default device",
				 accel_strerror(ret));
		Py_XDECREF(path_bytes);
		tnpu_raise(ret, full);
		return -1;
	}
	Py_XDECREF(path_bytes);
	d->dev = dev;
	memcpy(d->backend, caps.backend, sizeof(d->backend));
	d->backend[sizeof(d->backend) - 1] = '\0';
	return 0;
}

void tnpu_device_add_user(DeviceObject *d, struct tnpu_dev_user *u)
{
	for (struct tnpu_dev_user *p = d->users; p; p = p->next)
		if (p == u)
			return;
	u->next = d->users;
	d->users = u;
}

void tnpu_device_remove_user(DeviceObject *d, struct tnpu_dev_user *u)
{
	for (struct tnpu_dev_user **p = &d->users; *p; p = &(*p)->next)
		if (*p == u) {
			*p = u->next;
			u->next = NULL;
			return;
		}
}

static void device_close_now(DeviceObject *d)
{
	struct accel_dev *dev = d->dev;

	/* what still holds device buffers (compiled models) lets go first: never freed after accel_close */
	while (d->users) {
		struct tnpu_dev_user *u = d->users;

		d->users = u->next;
		u->next = NULL;
		u->release(u);
	}
	d->dev = NULL;
	if (dev) {
		Py_BEGIN_ALLOW_THREADS
		accel_close(dev);
		Py_END_ALLOW_THREADS
	}
}

static void device_dealloc(PyObject *self)
{
	DeviceObject *d = (DeviceObject *)self;

	/* Nothing else can hold the lock: every user holds a reference. */
	device_close_now(d);
	if (d->lock)
		PyThread_free_lock(d->lock);
	Py_TYPE(self)->tp_free(self);
}

static PyObject *device_close(PyObject *self, PyObject *unused)
{
	DeviceObject *d = (DeviceObject *)self;

	if (!d->lock)
		Py_RETURN_NONE;
	if (!PyThread_acquire_lock(d->lock, NOWAIT_LOCK)) {
		Py_BEGIN_ALLOW_THREADS
		PyThread_acquire_lock(d->lock, WAIT_LOCK);
		Py_END_ALLOW_THREADS
	}
	device_close_now(d);
	PyThread_release_lock(d->lock);
	Py_RETURN_NONE;
}

static PyObject *device_enter(PyObject *self, PyObject *unused)
{
	if (!((DeviceObject *)self)->dev) {
		PyErr_SetString(PyExc_ValueError, "operation on a closed tnpu.Device");
		return NULL;
	}
	return Py_NewRef(self);
}

static PyObject *device_exit(PyObject *self, PyObject *args)
{
	PyObject *r = device_close(self, NULL);

	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE;
}

/* CAP_FEATURES bit names (Documentation/hardware/registers.md; accel-info prints the same). */
static const char *const feature_names[] = {
	"zero-skip", "sparse-weights", "load-balance", "chained-sfu", "im2col", "semaphores",
	"dma-fill", [7] = "depthwise", [8] = "row-busy", [9] = "sparse-counters", [10] = "islands",
	[11] = "rings", [12] = "ring-dma", [13] = "static-plans", [14] = "line-stream",
};

static PyObject *feature_list(uint32_t features)
{
	PyObject *list = PyList_New(0);

	for (unsigned i = 0; list && i < 32; i++) {
		PyObject *name;

		if (!(features & (1u << i)))
			continue;
		if (i < sizeof(feature_names) / sizeof(feature_names[0]) && feature_names[i])
			name = PyUnicode_FromString(feature_names[i]);
		else
			name = PyUnicode_FromFormat("bit%u", i);
		if (!name || PyList_Append(list, name) < 0)
			Py_CLEAR(list);
		Py_XDECREF(name);
	}
	return list;
}

/* Islands (accel_query_islands) with the field names of `accel-info --json`. */
static PyObject *island_list(const struct accel_island *isl, unsigned n)
{
	static const char *const dtype_names[] = { "int8", "fp32", "bf16" };
	PyObject *list = PyList_New(0);

	for (unsigned i = 0; list && i < n && i < ACCEL_MAX_ISLANDS; i++) {
		PyObject *dts = PyList_New(0), *item = NULL;

		for (unsigned b = 0; dts && b < 3; b++) {
			if (!(isl[i].dtypes & (1u << b)))
				continue;
			PyObject *s = PyUnicode_FromString(dtype_names[b]);

			if (!s || PyList_Append(dts, s) < 0)
				Py_CLEAR(dts);
			Py_XDECREF(s);
		}
		if (dts)
			item = Py_BuildValue("{s:I,s:I,s:N,s:I,s:K,s:K}", "first_row", isl[i].first_row, "rows",
					     isl[i].rows, "dtypes", dts, "clkdiv", isl[i].clkdiv, "sram_base",
					     (unsigned long long)isl[i].sram_base, "sram_bytes",
					     (unsigned long long)isl[i].sram_bytes);
		if (!item || PyList_Append(list, item) < 0)
			Py_CLEAR(list);
		Py_XDECREF(item);
	}
	return list;
}

static PyObject *device_get_caps(PyObject *self, void *closure)
{
	DeviceObject *d = (DeviceObject *)self;
	struct accel_island isl[ACCEL_MAX_ISLANDS];
	unsigned n_isl = 0;
	struct accel_caps c;
	int ret;

	if (tnpu_device_acquire(d) < 0)
		return NULL;
	ret = accel_query_caps(d->dev, &c);
	if (!ret)
		ret = accel_query_islands(d->dev, isl, ACCEL_MAX_ISLANDS, &n_isl);
	if (ret) {
		tnpu_raise_dev(ret, d->dev, "capability query");
		tnpu_device_release(d);
		return NULL;
	}
	tnpu_device_release(d);
	c.backend[sizeof(c.backend) - 1] = '\0';
	PyObject *names = feature_list(c.features);
	PyObject *islands = names ? island_list(isl, n_isl) : NULL;

	if (!islands) {
		Py_XDECREF(names);
		return NULL;
	}
	return Py_BuildValue(
		"{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:N,s:N}",
		"backend", c.backend, "rows", c.rows, "cols", c.cols, "pes", c.pes,
		"sram_bytes", c.sram_bytes, "acc_elems", c.acc_elems, "accumulators", c.accumulators,
		"slots", c.slots, "ibufs", c.ibufs, "ibuf_depth", c.ibuf_depth, "rf_entries", c.rf_entries,
		"semaphores", c.semaphores, "rate_int8", c.rate_int8, "rate_fp32", c.rate_fp32,
		"rate_dma", c.rate_dma, "rate_dispatch", c.rate_dispatch, "clock_mhz", c.clock_mhz,
		"max_cmdbuf", c.max_cmdbuf, "features", c.features, "feature_names", names, "islands", islands);
}

static PyObject *device_get_backend(PyObject *self, void *closure)
{
	DeviceObject *d = (DeviceObject *)self;

	if (!d->dev) {
		PyErr_SetString(PyExc_ValueError, "operation on a closed tnpu.Device");
		return NULL;
	}
	return PyUnicode_FromString(d->backend);
}

static PyObject *device_get_closed(PyObject *self, void *closure)
{
	return PyBool_FromLong(((DeviceObject *)self)->dev == NULL);
}

static PyObject *device_repr(PyObject *self)
{
	DeviceObject *d = (DeviceObject *)self;

	if (!d->dev)
		return PyUnicode_FromString("<tnpu.Device closed>");
	return PyUnicode_FromFormat("<tnpu.Device backend=%s>", d->backend);
}

static PyMethodDef device_methods[] = {
	{ "gemm", (PyCFunction)(void (*)(void))tnpu_device_gemm, METH_VARARGS | METH_KEYWORDS,
	  "gemm(a, b, c=None, *, trans_a=False, trans_b=False, bias=None, relu=False, out_scale=None,\n"
	  "     out_zero_point=0) -> numpy array\n\n"
	  "op(a) @ op(b) on the device: float32 x float32 -> float32, int8 x int8 -> int32 (int8 with out_scale).\n"
	  "c, if given, receives the result (shape (M, N), the result's dtype) and is returned." },
	{ "conv2d", (PyCFunction)(void (*)(void))tnpu_device_conv2d, METH_VARARGS | METH_KEYWORDS,
	  "conv2d(x, w, bias=None, *, stride=1, padding=0, dilation=1, groups=1, relu=False,\n"
	  "       input_zero_point=0, out_scale=None, out_zero_point=0) -> numpy array\n\n"
	  "NCHW convolution: x (N, C, H, W), w (K, C/groups, R, S); float32 -> float32, int8 -> int32\n"
	  "(int8 with out_scale)." },
	{ "close", device_close, METH_NOARGS, "Close the device (idempotent)." },
	{ "__enter__", device_enter, METH_NOARGS, NULL },
	{ "__exit__", device_exit, METH_VARARGS, NULL },
	{ NULL }
};

static PyGetSetDef device_getset[] = {
	{ "caps", device_get_caps, NULL, "Capabilities (accel_query_caps) as a dict.", NULL },
	{ "backend", device_get_backend, NULL, "'sim' or 'drm'.", NULL },
	{ "closed", device_get_closed, NULL, "True after close().", NULL },
	{ NULL }
};

PyTypeObject tnpu_DeviceType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "tnpu.Device",
	.tp_basicsize = sizeof(DeviceObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Device(path=None): open a tnpu device.\n\n"
		  "path: 'sim' or 'sim:rows=R,cols=C,...' (the in-process golden model), '/dev/accel/accelN', or\n"
		  "None: $ACCEL_DEVICE if set, else /dev/accel/accel0 if it exists, else sim.",
	.tp_new = device_new,
	.tp_init = device_init,
	.tp_dealloc = device_dealloc,
	.tp_repr = device_repr,
	.tp_methods = device_methods,
	.tp_getset = device_getset,
};

int tnpu_device_type_init(PyObject *module)
{
	if (PyType_Ready(&tnpu_DeviceType) < 0)
		return -1;
	return PyModule_AddObjectRef(module, "Device", (PyObject *)&tnpu_DeviceType);
}
