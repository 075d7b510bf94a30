// SPDX-License-Identifier: MIT
/*
 * model.c - tnpu.Model: an ONNX model loaded by the ONNX runtime (tnpu_onnx.h), run on a Device
 * (supported operators lowered onto libaccel) or, with dev=None, on the runtime's plain-C CPU
 * reference executor.
 *
 * .inputs and .outputs describe the values as the model declares them (onnx_model_input_desc; an
 * output after a run: that run's dtype and shape).  On a device the model runs through the runtime's
 * plan cache (onnx_plan_cache_run): compiled once per set of input dtypes and shapes it meets, the
 * last ONNX_PLAN_CACHE_DEFAULT plans kept (least recently used evicted).  compile=False runs node by
 * node (onnx_run).  A model holds a per-model lock (its runs take turns) and takes the device's lock
 * for a run.  compile() fills the plan cache ahead of a run, save() writes a plan as a self-contained
 * compiled-model file and Model.open() runs one without its ONNX file (onnx_compiled_open).
 */
#include <stddef.h>
#include <string.h>

#include "tnpu_onnx.h"
#include "tnpu_py.h"


typedef struct {
	PyObject_HEAD
	struct onnx_model *m;
	int compile;			/* on a device: compile per input shapes (default), else node by node */
	struct onnx_plan_cache *plans;	/* on a device with compile: its compiled plans (NULL before a run) */
	struct onnx_compiled *opened;	/* Model.open: the compiled-model file's plan, which owns m */
	struct tnpu_dev_user user;	/* registered with the device while it has a plan cache */
	PyObject *dev;			/* a tnpu.Device, or None: CPU reference */
	PyThread_type_lock lock;
	PyObject *out_dtype, *out_shape;	/* lists from the last run (None entries before one) */
	PyObject *last_stats;		/* dict or None */
} ModelObject;

static int npy_of_onnx(int dt)
{
	switch (dt) {
	case ONNX_FLOAT: return NPY_FLOAT32;
	case ONNX_UINT8: return NPY_UINT8;
	case ONNX_INT8: return NPY_INT8;
	case ONNX_INT32: return NPY_INT32;
	case ONNX_INT64: return NPY_INT64;
	case ONNX_FLOAT16: return NPY_FLOAT16;
	case ONNX_DOUBLE: return NPY_FLOAT64;
	case ONNX_UINT16: return NPY_UINT16;
	case ONNX_INT16: return NPY_INT16;
	case ONNX_UINT32: return NPY_UINT32;
	case ONNX_UINT64: return NPY_UINT64;
	default: return -1;	/* BOOL, BFLOAT16: numpy has no such type here */
	}
}

static int onnx_of_npy(int t)
{
	switch (t) {
	case NPY_FLOAT32: return ONNX_FLOAT;
	case NPY_UINT8: return ONNX_UINT8;
	case NPY_INT8: return ONNX_INT8;
	case NPY_INT32: return ONNX_INT32;
	case NPY_INT64: return ONNX_INT64;
	case NPY_FLOAT16: return ONNX_FLOAT16;
	default: return -1;	/* inputs: the six types Model.run documents (a float64 array is a mistake
				 * far more often than a DOUBLE model) */
	}
}

static PyObject *model_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	ModelObject *mo = (ModelObject *)type->tp_alloc(type, 0);

	if (!mo)
		return NULL;
	mo->dev = Py_NewRef(Py_None);
	mo->last_stats = Py_NewRef(Py_None);
	mo->lock = PyThread_allocate_lock();
	if (!mo->lock) {
		Py_DECREF(mo);
		return PyErr_NoMemory();
	}
	return (PyObject *)mo;
}

/* The outputs' last-run dtypes and shapes: None until a run. */
static int init_outputs(ModelObject *mo, const struct onnx_model *m)
{
	unsigned n_out = onnx_model_n_outputs(m);

	mo->out_dtype = PyList_New(n_out);
	mo->out_shape = PyList_New(n_out);
	if (!mo->out_dtype || !mo->out_shape)
		return -1;
	for (unsigned i = 0; i < n_out; i++) {
		PyList_SET_ITEM(mo->out_dtype, i, Py_NewRef(Py_None));
		PyList_SET_ITEM(mo->out_shape, i, Py_NewRef(Py_None));
	}
	return 0;
}

static int model_init(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "dev", "fold", "compile", NULL };
	ModelObject *mo = (ModelObject *)self;
	PyObject *path_bytes = NULL, *dev = Py_None;
	struct onnx_model *m = NULL;
	int fold = 1, compile = 1, ret;
	char err[512] = "";

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O$pp:Model", kwlist, PyUnicode_FSConverter, &path_bytes, &dev,
					 &fold, &compile))
		return -1;
	if (mo->m) {
		Py_DECREF(path_bytes);
		PyErr_SetString(PyExc_ValueError, "Model is already loaded");
		return -1;
	}
	if (dev != Py_None && !PyObject_TypeCheck(dev, &tnpu_DeviceType)) {
		Py_DECREF(path_bytes);
		PyErr_SetString(PyExc_TypeError, "Model: dev must be a tnpu.Device or None (CPU reference)");
		return -1;
	}
	const char *path = PyBytes_AS_STRING(path_bytes);

	Py_BEGIN_ALLOW_THREADS
	ret = onnx_model_load(path, fold ? 0 : ONNX_LOAD_NO_FOLD, &m, err, sizeof(err));
	Py_END_ALLOW_THREADS
	if (ret) {
		char msg[1100];

		snprintf(msg, sizeof(msg), "%s: %s", path, *err ? err : accel_strerror(ret));
		Py_DECREF(path_bytes);
		tnpu_raise(ret, msg);
		return -1;
	}
	Py_DECREF(path_bytes);
	if (init_outputs(mo, m) < 0) {
		onnx_model_free(m);
		return -1;
	}
	mo->m = m;
	mo->compile = compile;
	Py_SETREF(mo->dev, Py_NewRef(dev));
	return 0;
}

static void free_forms(ModelObject *mo)
{
	onnx_plan_cache_free(mo->plans);
	mo->plans = NULL;
	if (mo->opened) {	/* it owns the model */
		onnx_compiled_free(mo->opened);
		mo->opened = NULL;
		mo->m = NULL;
	}
}

/* The device closes: its compiled plans go first (the next run on it raises: the device is closed). */
static void release_forms(struct tnpu_dev_user *u)
{
	free_forms((ModelObject *)((char *)u - offsetof(ModelObject, user)));
}

static void model_dealloc(PyObject *self)
{
	ModelObject *mo = (ModelObject *)self;

	if (mo->dev && mo->dev != Py_None)
		tnpu_device_remove_user((DeviceObject *)mo->dev, &mo->user);
	free_forms(mo);	/* before the device (mo->dev) and the model they use; an opened one's model too */
	if (mo->m)
		onnx_model_free(mo->m);
	if (mo->lock)
		PyThread_free_lock(mo->lock);
	Py_XDECREF(mo->dev);
	Py_XDECREF(mo->out_dtype);
	Py_XDECREF(mo->out_shape);
	Py_XDECREF(mo->last_stats);
	Py_TYPE(self)->tp_free(self);
}

static int model_ready(ModelObject *mo)
{
	if (mo->m)
		return 0;
	PyErr_SetString(PyExc_ValueError, "tnpu.Model was not loaded (or its compiled file's device was closed)");
	return -1;
}

static PyObject *value_info(const char *name, PyObject *dtype, PyObject *shape)
{
	return Py_BuildValue("{s:s,s:O,s:O}", "name", name, "dtype", dtype, "shape", shape);
}

/* A declared value: {name, dtype (numpy, None if undeclared or not a runtime type), shape (a tuple, None
 * per symbolic dimension; None if undeclared)}; an opened compiled model's inputs: their compiled shapes. */
static PyObject *declared_info(const struct onnx_value_desc *d)
{
	PyObject *dtype = Py_None, *shape = Py_None, *v;
	int t = npy_of_onnx(d->dtype);

	dtype = t >= 0 ? (PyObject *)PyArray_DescrFromType(t) : Py_NewRef(Py_None);
	if (d->ndim >= 0) {
		shape = PyTuple_New(d->ndim);
		for (int k = 0; shape && k < d->ndim; k++)
			PyTuple_SET_ITEM(shape, k, d->dims[k] < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(d->dims[k]));
	} else {
		Py_INCREF(shape);
	}
	v = dtype && shape ? value_info(d->name, dtype, shape) : NULL;
	Py_XDECREF(dtype);
	Py_XDECREF(shape);
	return v;
}

static PyObject *model_get_inputs(PyObject *self, void *closure)
{
	ModelObject *mo = (ModelObject *)self;

	if (model_ready(mo) < 0)
		return NULL;
	unsigned n = onnx_model_n_inputs(mo->m);
	PyObject *list = PyList_New(n);

	for (unsigned i = 0; list && i < n; i++) {
		struct onnx_value_desc d;
		struct onnx_tensor t;
		PyObject *v;

		if (onnx_model_input_desc(mo->m, i, &d)) {
			d.name = onnx_model_input_name(mo->m, i);
			d.dtype = 0;
			d.ndim = -1;
		}
		if (mo->opened && !onnx_compiled_input_shape(mo->opened, i, &t)) {
			d.dtype = t.dtype;
			d.ndim = (int)t.ndim;
			memcpy(d.dims, t.dims, t.ndim * sizeof(t.dims[0]));
		}
		v = declared_info(&d);
		if (!v)
			Py_CLEAR(list);
		else
			PyList_SET_ITEM(list, i, v);
	}
	return list;
}

static PyObject *model_get_outputs(PyObject *self, void *closure)
{
	ModelObject *mo = (ModelObject *)self;

	if (model_ready(mo) < 0)
		return NULL;
	unsigned n = onnx_model_n_outputs(mo->m);
	PyObject *list = PyList_New(n);

	for (unsigned i = 0; list && i < n; i++) {
		struct onnx_value_desc d;
		PyObject *v;

		/* the last run's dtype and shape; before one, as the model declares them */
		if (PyList_GET_ITEM(mo->out_dtype, i) == Py_None && !onnx_model_output_desc(mo->m, i, &d))
			v = declared_info(&d);
		else
			v = value_info(onnx_model_output_name(mo->m, i), PyList_GET_ITEM(mo->out_dtype, i),
				       PyList_GET_ITEM(mo->out_shape, i));

		if (!v)
			Py_CLEAR(list);
		else
			PyList_SET_ITEM(list, i, v);
	}
	return list;
}

static PyObject *model_get_device(PyObject *self, void *closure)
{
	return Py_NewRef(((ModelObject *)self)->dev);
}

static PyObject *model_get_last_stats(PyObject *self, void *closure)
{
	return Py_NewRef(((ModelObject *)self)->last_stats);
}

/* The i-th input object of run(): a dict by name, a list/tuple by position, or one array. */
static PyObject *pick_input(ModelObject *mo, PyObject *inputs, unsigned i, unsigned n)
{
	const char *name = onnx_model_input_name(mo->m, i);
	PyObject *v;

	if (PyDict_Check(inputs)) {
		v = PyDict_GetItemString(inputs, name);
		if (!v)
			PyErr_Format(PyExc_KeyError, "Model.run: missing input '%s'", name);
		return v;
	}
	if (PyList_Check(inputs) || PyTuple_Check(inputs)) {
		if (PySequence_Fast_GET_SIZE(inputs) != (Py_ssize_t)n) {
			PyErr_Format(PyExc_ValueError, "Model.run: the model has %u inputs, %zd given", n,
				     PySequence_Fast_GET_SIZE(inputs));
			return NULL;
		}
		return PySequence_Fast_GET_ITEM(inputs, i);
	}
	if (n != 1) {
		PyErr_Format(PyExc_ValueError, "Model.run: the model has %u inputs: pass a dict or a list", n);
		return NULL;
	}
	return inputs;
}

/* Every key of an input dict must name an input (a typo must not be ignored). */
static int check_dict_keys(ModelObject *mo, PyObject *inputs, unsigned n)
{
	PyObject *key, *val;
	Py_ssize_t pos = 0;

	while (PyDict_Next(inputs, &pos, &key, &val)) {
		const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
		unsigned i;

		if (!k) {
			PyErr_Clear();
			PyErr_SetString(PyExc_TypeError, "Model.run: input names must be str");
			return -1;
		}
		for (i = 0; i < n && strcmp(k, onnx_model_input_name(mo->m, i)); i++)
			;
		if (i == n) {
			PyErr_Format(PyExc_KeyError, "Model.run: the model has no input '%s'", k);
			return -1;
		}
	}
	return 0;
}

static int to_onnx_tensor(PyObject *obj, const char *name, PyArrayObject **arr, struct onnx_tensor *t)
{
	PyArrayObject *a = tnpu_array(obj, "Model.run", name);
	int dt;

	*arr = a;
	if (!a)
		return -1;
	dt = onnx_of_npy(PyArray_TYPE(a));
	if (dt < 0) {
		PyObject *s = PyObject_Str((PyObject *)PyArray_DESCR(a));

		PyErr_Format(PyExc_TypeError, "Model.run: input '%s' has dtype %s (float32, float16, uint8, int8, "
			     "int32 or int64 expected)", name, s ? PyUnicode_AsUTF8(s) : "?");
		Py_XDECREF(s);
		return -1;
	}
	if (PyArray_NDIM(a) > ONNX_MAX_DIMS) {
		PyErr_Format(PyExc_ValueError, "Model.run: input '%s' has %d dimensions (at most %d)", name,
			     PyArray_NDIM(a), ONNX_MAX_DIMS);
		return -1;
	}
	memset(t, 0, sizeof(*t));
	t->dtype = dt;
	t->ndim = (unsigned)PyArray_NDIM(a);
	for (unsigned d = 0; d < t->ndim; d++)
		t->dims[d] = PyArray_DIM(a, (int)d);
	t->count = (size_t)PyArray_SIZE(a);
	t->data = PyArray_DATA(a);
	return 0;
}

static PyObject *from_onnx_tensor(const struct onnx_tensor *t)
{
	npy_intp dims[ONNX_MAX_DIMS];
	int type = npy_of_onnx(t->dtype);
	PyArrayObject *a;

	if (type < 0 || t->ndim > ONNX_MAX_DIMS)
		return tnpu_raise(-EPROTO, "the ONNX runtime returned an output of an unsupported dtype");
	for (unsigned d = 0; d < t->ndim; d++)
		dims[d] = (npy_intp)t->dims[d];
	a = (PyArrayObject *)PyArray_SimpleNew((int)t->ndim, dims, type);
	if (a && PyArray_NBYTES(a) > 0)
		memcpy(PyArray_DATA(a), t->data, (size_t)PyArray_NBYTES(a));
	return (PyObject *)a;
}

static void lock_wait(PyThread_type_lock lock)
{
	if (!PyThread_acquire_lock(lock, NOWAIT_LOCK)) {
		Py_BEGIN_ALLOW_THREADS
		PyThread_acquire_lock(lock, WAIT_LOCK);
		Py_END_ALLOW_THREADS
	}
}

static PyObject *stats_dict(const struct onnx_run_stats *st)
{
	const struct accel_counters *c = &st->counters;

	return Py_BuildValue("{s:I,s:I,s:K,s:K,s:K,s:K}", "accel_nodes", st->accel_nodes, "host_nodes",
			     st->host_nodes, "total_cycles", (unsigned long long)c->total_cycles, "macs",
			     (unsigned long long)c->macs_dense, "bytes_h2d", (unsigned long long)c->bytes_h2d,
			     "bytes_d2h", (unsigned long long)c->bytes_d2h);
}

/* run()'s, compile()'s and save()'s inputs as onnx tensors borrowing the arrays' data (*arrs: n_in
 * references to drop with drop_inputs); -1 with an exception set. */
static int gather_inputs(ModelObject *mo, PyObject *inputs, PyArrayObject ***arrs, struct onnx_tensor **tin)
{
	unsigned n_in = onnx_model_n_inputs(mo->m);

	*arrs = NULL;
	*tin = NULL;
	if (PyDict_Check(inputs) && check_dict_keys(mo, inputs, n_in) < 0)
		return -1;
	*arrs = PyMem_Calloc(n_in + 1, sizeof(**arrs));
	*tin = PyMem_Calloc(n_in + 1, sizeof(**tin));
	if (!*arrs || !*tin) {
		PyErr_NoMemory();
		return -1;
	}
	for (unsigned i = 0; i < n_in; i++) {
		PyObject *obj = pick_input(mo, inputs, i, n_in);

		if (!obj || to_onnx_tensor(obj, onnx_model_input_name(mo->m, i), &(*arrs)[i], &(*tin)[i]) < 0)
			return -1;
	}
	return 0;
}

static void drop_inputs(PyArrayObject **arrs, struct onnx_tensor *tin, unsigned n_in)
{
	if (arrs)
		for (unsigned i = 0; i < n_in; i++)
			Py_XDECREF(arrs[i]);
	PyMem_Free(arrs);
	PyMem_Free(tin);
}

static PyObject *model_run(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "inputs", NULL };
	ModelObject *mo = (ModelObject *)self;
	PyObject *inputs, *result = NULL, *seq = NULL;
	PyArrayObject **arrs = NULL;
	struct onnx_tensor *tin = NULL, *tout = NULL;
	struct onnx_run_stats st;
	DeviceObject *d = NULL;
	unsigned n_in, n_out, i;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:run", kwlist, &inputs) || model_ready(mo) < 0)
		return NULL;
	n_in = onnx_model_n_inputs(mo->m);
	n_out = onnx_model_n_outputs(mo->m);
	if (PyList_Check(inputs) || PyTuple_Check(inputs))
		seq = Py_NewRef(inputs);
	if (gather_inputs(mo, inputs, &arrs, &tin) < 0)
		goto out;
	tout = PyMem_Calloc(n_out + 1, sizeof(*tout));
	if (!tout) {
		PyErr_NoMemory();
		goto out;
	}

	lock_wait(mo->lock);
	if (mo->dev != Py_None) {
		d = (DeviceObject *)mo->dev;
		if (tnpu_device_acquire(d) < 0) {
			PyThread_release_lock(mo->lock);
			goto out;
		}
	}
	{
		char err[600] = "";
		bool compiled = d && mo->compile;

		Py_BEGIN_ALLOW_THREADS
		if (mo->opened) {	/* a compiled-model file: its own plan, at its shapes */
			ret = onnx_compiled_run(mo->opened, tin, n_in, tout, n_out, &st);
			if (ret)
				snprintf(err, sizeof(err), "%s", onnx_compiled_error(mo->opened));
		} else if (compiled) {
			/* the plan cache's errors say "compile: ..." when the compile failed */
			ret = mo->plans ? 0 : onnx_plan_cache_new(mo->m, d->dev, 0, 0, &mo->plans, err, sizeof(err));
			if (!ret && (ret = onnx_plan_cache_run(mo->plans, tin, n_in, tout, n_out, &st)))
				snprintf(err, sizeof(err), "%s", onnx_plan_cache_error(mo->plans));
			/* shapes that depend on input data (onnx_compile refuses them): node by node */
			compiled = !(ret == -EOPNOTSUPP && !strncmp(err, "compile:", 8));
		}
		if (!compiled && !mo->opened) {
			ret = onnx_run(mo->m, d ? d->dev : NULL, tin, n_in, tout, n_out, &st);
			if (ret)
				snprintf(err, sizeof(err), "%s", onnx_model_error(mo->m));
		}
		Py_END_ALLOW_THREADS
		if (ret) {
			char msg[1024];

			snprintf(msg, sizeof(msg), "Model.run: %s", err);
			tnpu_raise(ret, msg);
		}
	}
	if (d) {
		if (mo->compile) {
			mo->user.release = release_forms;
			tnpu_device_add_user(d, &mo->user);
		}
		tnpu_device_release(d);
	}
	PyThread_release_lock(mo->lock);
	if (ret)
		goto out;

	result = PyDict_New();
	for (i = 0; result && i < n_out; i++) {
		PyObject *a = from_onnx_tensor(&tout[i]);
		PyObject *shape = a ? PyObject_GetAttrString(a, "shape") : NULL;
		PyObject *dtype = a ? PyObject_GetAttrString(a, "dtype") : NULL;

		if (!shape || !dtype || PyDict_SetItemString(result, onnx_model_output_name(mo->m, i), a) < 0) {
			Py_CLEAR(result);
		} else {
			PyList_SetItem(mo->out_dtype, i, Py_NewRef(dtype));
			PyList_SetItem(mo->out_shape, i, Py_NewRef(shape));
		}
		Py_XDECREF(a);
		Py_XDECREF(shape);
		Py_XDECREF(dtype);
	}
	if (result) {
		PyObject *sd = stats_dict(&st);

		if (sd)
			Py_SETREF(mo->last_stats, sd);
		else
			Py_CLEAR(result);
	}
	for (i = 0; i < n_out; i++)
		onnx_tensor_release(&tout[i]);
out:
	drop_inputs(arrs, tin, n_in);
	PyMem_Free(tout);
	Py_XDECREF(seq);
	return result;
}

/*
 * The plan for these inputs' shapes in the model's plan cache, compiled now if missing (onnx_plan_cache_compile),
 * then save it to path if path is not NULL; an opened compiled model's own plan.  -1 with an exception set.
 */
static int plan_and_save(ModelObject *mo, const char *what, PyObject *inputs, const char *path)
{
	PyArrayObject **arrs = NULL;
	struct onnx_tensor *tin = NULL;
	unsigned n_in = onnx_model_n_inputs(mo->m);
	DeviceObject *d;
	char err[600] = "";
	int ret = 0;

	if (mo->dev == Py_None || !mo->compile) {
		PyErr_Format(PyExc_ValueError, "Model.%s: needs a Device and compile=True (a compiled plan is for a device)",
			     what);
		return -1;
	}
	if (inputs != Py_None && gather_inputs(mo, inputs, &arrs, &tin) < 0) {
		drop_inputs(arrs, tin, n_in);
		return -1;
	}
	if (inputs == Py_None && !mo->opened) {
		PyErr_Format(PyExc_TypeError, "Model.%s: inputs (arrays of the shapes to compile for) are required", what);
		return -1;
	}
	d = (DeviceObject *)mo->dev;
	lock_wait(mo->lock);
	if (tnpu_device_acquire(d) < 0) {
		PyThread_release_lock(mo->lock);
		drop_inputs(arrs, tin, n_in);
		return -1;
	}
	Py_BEGIN_ALLOW_THREADS
	{
		const struct onnx_compiled *cm = mo->opened;

		if (!cm) {
			ret = mo->plans ? 0 : onnx_plan_cache_new(mo->m, d->dev, 0, 0, &mo->plans, err, sizeof(err));
			if (!ret && (ret = onnx_plan_cache_compile(mo->plans, tin, n_in, &cm)))
				snprintf(err, sizeof(err), "%s", onnx_plan_cache_error(mo->plans));
		}
		if (!ret && path)
			ret = onnx_compiled_save(cm, path, err, sizeof(err));
	}
	Py_END_ALLOW_THREADS
	if (mo->plans) {
		mo->user.release = release_forms;
		tnpu_device_add_user(d, &mo->user);
	}
	tnpu_device_release(d);
	PyThread_release_lock(mo->lock);
	drop_inputs(arrs, tin, n_in);
	if (ret) {
		char msg[700];

		snprintf(msg, sizeof(msg), "Model.%s: %s", what, err);
		tnpu_raise(ret, msg);
		return -1;
	}
	return 0;
}

static PyObject *model_compile(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "inputs", NULL };
	ModelObject *mo = (ModelObject *)self;
	PyObject *inputs;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:compile", kwlist, &inputs) || model_ready(mo) < 0)
		return NULL;
	if (plan_and_save(mo, "compile", inputs, NULL) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *model_save(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "inputs", NULL };
	ModelObject *mo = (ModelObject *)self;
	PyObject *path_bytes = NULL, *inputs = Py_None;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O:save", kwlist, PyUnicode_FSConverter, &path_bytes, &inputs))
		return NULL;
	if (model_ready(mo) < 0) {
		Py_DECREF(path_bytes);
		return NULL;
	}
	ret = plan_and_save(mo, "save", inputs, PyBytes_AS_STRING(path_bytes));
	Py_DECREF(path_bytes);
	if (ret < 0)
		return NULL;
	Py_RETURN_NONE;
}

/* Model.open(path, dev): a compiled-model file (onnx_compiled_open), run without its ONNX file. */
static PyObject *model_open(PyObject *cls, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "dev", NULL };
	PyObject *path_bytes = NULL, *dev;
	struct onnx_compiled *cm = NULL;
	ModelObject *mo;
	DeviceObject *d;
	char err[600] = "";
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O!:open", kwlist, PyUnicode_FSConverter, &path_bytes,
					 &tnpu_DeviceType, &dev))
		return NULL;
	d = (DeviceObject *)dev;
	if (tnpu_device_acquire(d) < 0) {
		Py_DECREF(path_bytes);
		return NULL;
	}
	const char *path = PyBytes_AS_STRING(path_bytes);

	Py_BEGIN_ALLOW_THREADS
	ret = onnx_compiled_open(d->dev, path, &cm, err, sizeof(err));
	Py_END_ALLOW_THREADS
	tnpu_device_release(d);
	if (ret) {
		char msg[1200];

		snprintf(msg, sizeof(msg), "Model.open: %s: %s", path, *err ? err : accel_strerror(ret));
		Py_DECREF(path_bytes);
		return tnpu_raise(ret, msg);
	}
	Py_DECREF(path_bytes);
	mo = (ModelObject *)model_new((PyTypeObject *)cls, NULL, NULL);
	if (!mo || init_outputs(mo, onnx_compiled_model(cm)) < 0) {
		onnx_compiled_free(cm);
		Py_XDECREF(mo);
		return NULL;
	}
	mo->opened = cm;
	mo->m = onnx_compiled_model(cm);
	mo->compile = 1;
	Py_SETREF(mo->dev, Py_NewRef(dev));
	mo->user.release = release_forms;
	tnpu_device_add_user(d, &mo->user);
	return (PyObject *)mo;
}

static PyObject *model_get_plan_cache(PyObject *self, void *closure)
{
	ModelObject *mo = (ModelObject *)self;
	struct onnx_plan_cache_stats st;

	(void)closure;
	lock_wait(mo->lock);	/* a run creates the cache without the GIL, under this lock */
	if (!mo->plans || onnx_plan_cache_stats(mo->plans, &st)) {
		PyThread_release_lock(mo->lock);
		Py_RETURN_NONE;
	}
	PyThread_release_lock(mo->lock);
	return Py_BuildValue("{s:I,s:I,s:K,s:K,s:K,s:K}", "capacity", st.capacity, "plans", st.plans, "runs",
			     (unsigned long long)st.runs, "hits", (unsigned long long)st.hits, "compiles",
			     (unsigned long long)st.compiles, "evictions", (unsigned long long)st.evictions);
}

static PyObject *model_repr(PyObject *self)
{
	ModelObject *mo = (ModelObject *)self;

	if (!mo->m)
		return PyUnicode_FromString("<tnpu.Model not loaded>");
	return PyUnicode_FromFormat("<tnpu.Model %u inputs, %u outputs, %u nodes, on %s>", onnx_model_n_inputs(mo->m),
				    onnx_model_n_outputs(mo->m), onnx_model_n_nodes(mo->m),
				    mo->dev == Py_None ? "the CPU reference" : "a device");
}

/* Model.generate(): python/src/generate.c, under the model's lock (the CPU reference runs onnx_run). */
static PyObject *model_generate(PyObject *self, PyObject *args, PyObject *kw)
{
	ModelObject *mo = (ModelObject *)self;
	PyObject *r;

	if (model_ready(mo) < 0)
		return NULL;
	lock_wait(mo->lock);
	r = tnpu_model_generate(mo->m, mo->dev, args, kw);
	PyThread_release_lock(mo->lock);
	return r;
}

static PyMethodDef model_methods[] = {
	{ "run", (PyCFunction)(void (*)(void))model_run, METH_VARARGS | METH_KEYWORDS,
	  "run(inputs) -> dict of numpy arrays by output name\n\n"
	  "inputs: a dict {name: array}, a list of arrays in .inputs order, or one array for a one-input model." },
	{ "compile", (PyCFunction)(void (*)(void))model_compile, METH_VARARGS | METH_KEYWORDS,
	  "compile(inputs)\n\n"
	  "Compiles the model now for the dtypes and shapes of inputs (as run() takes them; their values are not\n"
	  "read) into its plan cache, so the first run() with those shapes does not compile.  Needs a Device." },
	{ "save", (PyCFunction)(void (*)(void))model_save, METH_VARARGS | METH_KEYWORDS,
	  "save(path, inputs=None)\n\n"
	  "Writes the compiled plan for the shapes of inputs (compiled now if the cache lacks it) as a\n"
	  "self-contained compiled-model file: tnpu.Model.open(path, dev) runs it without the ONNX file, as\n"
	  "accel-run --compiled does.  A model that Model.open() returned saves its own plan (inputs None)." },
	{ "open", (PyCFunction)(void (*)(void))model_open, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
	  "Model.open(path, dev) -> Model\n\n"
	  "Opens a compiled-model file (Model.save, accel-run --save-compiled) on dev: it runs at the input\n"
	  "shapes it was compiled for, without its ONNX file.  Another version or geometry raises tnpu.Error." },
	{ "generate", (PyCFunction)(void (*)(void))model_generate, METH_VARARGS | METH_KEYWORDS,
	  "generate(ids, max_new_tokens, *, temperature=0, top_k=0, top_p=0, seed=0, max_len=0) -> list of ids\n\n"
	  "A decoder language model (inputs input_ids, attention_mask, past_key_values.N.key/value; outputs\n"
	  "logits, present.N.key/value) generates max_new_tokens tokens after the prompt ids through the\n"
	  "generation runtime (Documentation/llm.md): temperature 0 or top_k 1 is greedy; top_p 0 or 1 keeps\n"
	  "every candidate; seed seeds the sampler.  max_len: the context (0: len(ids) + max_new_tokens).\n"
	  "Returns the generated ids (the prompt excluded)." },
	{ NULL }
};

static PyGetSetDef model_getset[] = {
	{ "inputs", model_get_inputs, NULL, "Graph inputs: list of {'name', 'dtype', 'shape'} (dtype/shape None: "
	  "not reported by the runtime).", NULL },
	{ "outputs", model_get_outputs, NULL, "Graph outputs: list of {'name', 'dtype', 'shape'} (of the last run; "
	  "None before one).", NULL },
	{ "device", model_get_device, NULL, "The Device the model runs on, or None (CPU reference).", NULL },
	{ "last_stats", model_get_last_stats, NULL, "Statistics of the last run (dict) or None.", NULL },
	{ "plan_cache", model_get_plan_cache, NULL, "The plan cache's counters (dict: capacity, plans, runs, hits, "
	  "compiles, evictions), or None before the first compiled run.", NULL },
	{ NULL }
};

PyTypeObject tnpu_ModelType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "tnpu.Model",
	.tp_basicsize = sizeof(ModelObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Model(path, dev=None, *, fold=True, compile=True): load an ONNX model.\n\n"
		  "dev: a tnpu.Device (supported operators run on it, the rest on the host) or None (everything on\n"
		  "the runtime's CPU reference executor).  fold=False runs the graph as written (ONNX_LOAD_NO_FOLD).\n"
		  "On a device the model is compiled once per set of input shapes and runs compiled (the runtime's\n"
		  "plan cache, onnx_plan_cache_run: the last 4 plans kept); compile=False runs it node by node\n"
		  "(onnx_run), as does a model whose shapes depend on input data.  plan_cache: the cache's counters.",
	.tp_new = model_new,
	.tp_init = model_init,
	.tp_dealloc = model_dealloc,
	.tp_repr = model_repr,
	.tp_methods = model_methods,
	.tp_getset = model_getset,
};

int tnpu_model_type_init(PyObject *module)
{
	if (PyType_Ready(&tnpu_ModelType) < 0)
		return -1;
	return PyModule_AddObjectRef(module, "Model", (PyObject *)&tnpu_ModelType);
}
