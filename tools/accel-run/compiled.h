/* SPDX-License-Identifier: MIT */
/* compiled.h - accel-run's compiled path: compile (or load a compiled file), save, print the plan. */
#ifndef ACCEL_RUN_COMPILED_H
#define ACCEL_RUN_COMPILED_H

#include "inputs.h"
#include "tnpu_onnx.h"

/* load_cm: read the compiled form from that file (it must match the model, the inputs' shapes and the
 * device); else compile.  save_cm: then write it there.  Prints the reason on failure. */
int compiled_prepare(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *in, unsigned n_in,
		     unsigned flags, const char *load_cm, const char *save_cm, struct onnx_compiled **out);
/* --save-compiled: write cm there; prints the outcome. */
int compiled_save(const struct onnx_compiled *cm, const char *save_cm);
/* --compiled FILE without MODEL: the self-contained file (its model inside) on dev; prints the reason on
 * failure (a wrong, truncated or corrupted file, another format version or device geometry). */
int compiled_open(struct accel_dev *dev, const char *path, struct onnx_compiled **out);
/* --check: what an opened file holds (the plan's size, the model's inputs and their compiled shapes). */
int compiled_check(const char *path, const struct onnx_compiled *cm);
/* The compiled input shapes as --shape arguments (names point into the model cm owns). */
int compiled_shapes(const struct onnx_compiled *cm, struct shape_arg *shapes, unsigned max, unsigned *n);
/* --info: the plan's summary and, per graph node, what the compiler made of it. */
void print_compiled(const struct onnx_model *m, const struct onnx_compiled *cm);

#endif
