/* SPDX-License-Identifier: MIT */
/* inputs.h - accel-run --random-input / --shape: inputs generated from the model's declared shapes. */
#ifndef ACCEL_RUN_INPUTS_H
#define ACCEL_RUN_INPUTS_H

#include "tnpu_onnx.h"

#define MAX_SHAPES 256

/* --shape NAME=D0xD1x...: the shape of one input, overriding its declared one. */
struct shape_arg {
	const char *name;	/* points into argv */
	size_t name_len;
	unsigned ndim;
	int64_t dims[ONNX_MAX_DIMS];
};

/* Parse "NAME=1x3x224x224"; -EINVAL (message on stderr) when malformed. */
int shape_parse(const char *arg, struct shape_arg *out);

/*
 * The inputs of m filled with seeded pseudo-random values (splitmix64 of seed and the input's index):
 * FLOAT uniform in [-1, 1), UINT8 0..255, INT8 -128..127, INT32/INT64 0..9.  The shape is the --shape
 * given for the input, else the declared one with every dynamic dimension 1.  Prints (stderr) and
 * returns -EINVAL when an input has no declared type or shape and no --shape, or more than 2^28
 * elements.  in[] is released by the caller.
 */
int random_inputs(const struct onnx_model *m, const struct shape_arg *shapes, unsigned n_shapes, uint64_t seed,
		  struct onnx_tensor *in, unsigned max_in);

#endif
