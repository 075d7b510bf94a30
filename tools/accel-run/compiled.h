/* SPDX-License-Identifier: MIT */
/* compiled.h - accel-run's compiled path: compile (or load a compiled file), save, print the plan. */
#ifndef ACCEL_RUN_COMPILED_H
#define ACCEL_RUN_COMPILED_H

#include "tnpu_onnx.h"

/* load_cm: read the compiled form from that file (it must match the model, the inputs' shapes and the
 * device); else compile.  save_cm: then write it there.  Prints the reason on failure. */
int compiled_prepare(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *in, unsigned n_in,
		     unsigned flags, const char *load_cm, const char *save_cm, struct onnx_compiled **out);
/* --info: the plan's summary and, per graph node, what the compiler made of it. */
void print_compiled(const struct onnx_model *m, const struct onnx_compiled *cm);

#endif
