// SPDX-License-Identifier: MIT
/*
 * generate.c - tnpu.Model.generate(): text generation with a decoder language model through the
 * generation runtime (tnpu_onnx_generate.h; Documentation/python.md, Documentation/llm.md).  A
 * generator is created for the call (its shape buckets compiled on the model's device, or the CPU
 * reference with dev=None) and freed before it returns, all under the model's and the device's locks.
 */
#include <string.h>

#include "tnpu_onnx.h"
#include "tnpu_py.h"

/* ids: a sequence of ints -> a PyMem array (NULL with an exception set). */
static int64_t *ids_of(PyObject *obj, size_t *n)
{
	PyObject *seq = PySequence_Fast(obj, "Model.generate: ids must be a sequence of token ids");
	int64_t *ids;

	if (!seq)
		return NULL;
	*n = (size_t)PySequence_Fast_GET_SIZE(seq);
	if (!*n) {
		Py_DECREF(seq);
		PyErr_SetString(PyExc_ValueError, "Model.generate: ids is empty (give at least one prompt token)");
		return NULL;
	}
	ids = PyMem_Calloc(*n, sizeof(*ids));
	for (size_t i = 0; ids && i < *n; i++) {
		long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)i));

		if (v == -1 && PyErr_Occurred()) {
			PyErr_Format(PyExc_TypeError, "Model.generate: ids[%zu] is not an integer", i);
			PyMem_Free(ids);
			ids = NULL;
			break;
		}
		ids[i] = v;
	}
	if (!ids && !PyErr_Occurred())
		PyErr_NoMemory();
	Py_DECREF(seq);
	return ids;
}

struct gen_call {
	struct onnx_model *m;
	struct accel_dev *dev;
	const int64_t *ids;
	size_t n;
	long max_new;
	uint32_t max_len;
	struct onnx_sampling s;
	uint64_t seed;
	int64_t *out;
	char err[768];
};

/* Without the GIL: create, prefill, sample / step, free. */
static int gen_run(struct gen_call *c)
{
	struct onnx_generator_opts o = { .max_len = c->max_len };
	struct onnx_generator *g;
	int ret;

	ret = onnx_generator_create(c->m, c->dev, &o, &g, c->err, sizeof(c->err));
	if (ret)
		return ret;
	onnx_generator_seed(g, c->seed);
	ret = onnx_generator_prefill(g, c->ids, c->n, NULL);
	for (long i = 0; !ret && i < c->max_new; i++) {
		ret = onnx_generator_sample(g, &c->s, &c->out[i]);
		if (!ret && i + 1 < c->max_new)
			ret = onnx_generator_step(g, c->out[i], NULL);
	}
	if (ret)
		snprintf(c->err, sizeof(c->err), "%s", onnx_generator_error(g));
	onnx_generator_free(g);
	return ret;
}

PyObject *tnpu_model_generate(struct onnx_model *m, PyObject *dev, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "ids", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "max_len", NULL };
	struct gen_call c = { .m = m };
	DeviceObject *d = dev != Py_None ? (DeviceObject *)dev : NULL;
	PyObject *ids_obj, *result = NULL;
	unsigned long long seed = 0;
	unsigned top_k = 0, max_len = 0;
	float temperature = 0, top_p = 0;
	int64_t *ids;
	int ret;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "Ol|$fIfKI:generate", kwlist, &ids_obj, &c.max_new, &temperature,
					 &top_k, &top_p, &seed, &max_len))
		return NULL;
	if (c.max_new < 1)
		return PyErr_Format(PyExc_ValueError, "Model.generate: max_new_tokens must be at least 1 (got %ld)",
				    c.max_new);
	if (c.max_new > ONNX_GEN_MAX_LEN)
		return PyErr_Format(PyExc_ValueError, "Model.generate: max_new_tokens %ld is over %u", c.max_new,
				    ONNX_GEN_MAX_LEN);
	if (!(ids = ids_of(ids_obj, &c.n)))
		return NULL;
	c.ids = ids;
	c.s = (struct onnx_sampling){ temperature, top_k, top_p };
	c.seed = seed;
	/* Default context: the prompt and the new tokens (the last sampled one is not run). */
	c.max_len = max_len ? max_len : (uint32_t)(c.n + (size_t)c.max_new > ONNX_GEN_MAX_LEN ? ONNX_GEN_MAX_LEN :
						   c.n + (size_t)c.max_new);
	c.out = PyMem_Calloc((size_t)c.max_new, sizeof(*c.out));
	if (!c.out) {
		PyErr_NoMemory();
		goto out;
	}
	if (d) {
		if (tnpu_device_acquire(d) < 0)
			goto out;
		c.dev = d->dev;
	}
	Py_BEGIN_ALLOW_THREADS
	ret = gen_run(&c);
	Py_END_ALLOW_THREADS
	if (d)
		tnpu_device_release(d);
	if (ret) {
		char msg[900];

		snprintf(msg, sizeof(msg), "Model.generate: %s", c.err);
		tnpu_raise(ret, msg);
		goto out;
	}
	result = PyList_New(c.max_new);
	for (long i = 0; result && i < c.max_new; i++) {
		PyObject *v = PyLong_FromLongLong(c.out[i]);

		if (!v)
			Py_CLEAR(result);
		else
			PyList_SET_ITEM(result, i, v);
	}
out:
	PyMem_Free(ids);
	PyMem_Free(c.out);
	return result;
}
