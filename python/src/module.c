// SPDX-License-Identifier: MIT
/*
 * module.c - `import tnpu`: the tnpu accelerator's runtime (libaccel) and ONNX runtime from Python,
 * numpy in and out.  Reference: Documentation/python.md.
 */
#define TNPU_PY_MODULE_C
#include "tnpu_onnx.h"
#include "tnpu_py.h"

#ifndef TNPU_VERSION
#define TNPU_VERSION "unknown"
#endif

PyDoc_STRVAR(module_doc,
	     "tnpu - the tnpu accelerator from Python (Documentation/python.md).\n\n"
	     "Device(path=None): an open device ('sim', '/dev/accel/accelN' or None for the default);\n"
	     "Device.gemm / Device.conv2d on numpy arrays; Model(path, dev=None).run(inputs);\n"
	     "failures of the library raise tnpu.Error (an OSError with errno and the library's message).");

static struct PyModuleDef tnpu_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "tnpu",
	.m_doc = module_doc,
	.m_size = -1,
};

PyMODINIT_FUNC PyInit_tnpu(void);
PyMODINIT_FUNC PyInit_tnpu(void)
{
	PyObject *m;

	import_array();
	m = PyModule_Create(&tnpu_module);
	if (!m)
		return NULL;
	tnpu_Error = PyErr_NewExceptionWithDoc("tnpu.Error",
					       "A libaccel or ONNX runtime failure: errno is the library's errno, "
					       "strerror its message.", PyExc_OSError, NULL);
	if (!tnpu_Error || PyModule_AddObjectRef(m, "Error", tnpu_Error) < 0)
		goto fail;
	if (PyModule_AddStringConstant(m, "__version__", TNPU_VERSION) < 0 ||
	    PyModule_AddObject(m, "ACCEL_VERSION", Py_BuildValue("(ii)", ACCEL_VERSION_MAJOR,
								  ACCEL_VERSION_MINOR)) < 0)
		goto fail;
	/* a model output's tolerance, |got - want| <= MODEL_ATOL + MODEL_RTOL * max|want| (onnx.md "Tolerances") */
	if (PyModule_AddObject(m, "MODEL_ATOL", PyFloat_FromDouble(ONNX_MODEL_ATOL)) < 0 ||
	    PyModule_AddObject(m, "MODEL_RTOL", PyFloat_FromDouble(ONNX_MODEL_RTOL)) < 0)
		goto fail;
	if (tnpu_device_type_init(m) < 0 || tnpu_model_type_init(m) < 0)
		goto fail;
	return m;
fail:
	Py_DECREF(m);
	return NULL;
}
