// SPDX-License-Identifier: MIT
/*
 * errors.c - library failures as Python exceptions.  tnpu.Error subclasses OSError so that
 * `e.errno` is the library's errno (positive, as everywhere in Python) and `e.strerror` its message.
 */
#include <string.h>

#include "tnpu_py.h"

PyObject *tnpu_Error;

PyObject *tnpu_raise(int err, const char *msg)
{
	PyObject *exc;

	if (!msg || !*msg)
		msg = accel_strerror(err);
	exc = PyObject_CallFunction(tnpu_Error, "is", err < 0 ? -err : err, msg);
	if (exc) {
		PyErr_SetObject(tnpu_Error, exc);
		Py_DECREF(exc);
	}
	return NULL;
}

PyObject *tnpu_raise_dev(int err, struct accel_dev *dev, const char *what)
{
	const char *last = dev ? accel_last_error(dev) : "";
	char msg[1024];

	size_t wl = strlen(what);

	if (*last && !strncmp(last, what, wl) && last[wl] == ':')
		snprintf(msg, sizeof(msg), "%s", last);	/* the library named the operation already */
	else
		snprintf(msg, sizeof(msg), "%s: %s", what, *last ? last : accel_strerror(err));
	return tnpu_raise(err, msg);
}
