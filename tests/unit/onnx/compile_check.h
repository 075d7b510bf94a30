/* SPDX-License-Identifier: MIT */
/*
 * compile_check.h - helpers of the compiled-plan tests (test-compile): load a built model, random
 * inputs, the kind of the step that writes a value, and a compiled run checked against the CPU
 * reference (onnx_run without a device).
 */
#ifndef TNPU_TEST_COMPILE_CHECK_H
#define TNPU_TEST_COMPILE_CHECK_H

#include "../../../onnx/src/compile/compile.h"
#include "builder.h"

/* Pack and load b (freed); a failed assertion on a load error. */
struct onnx_model *cc_load(struct mb *b);
/* An fp32 tensor of uniform values from mb_frand. */
void cc_rand(struct onnx_tensor *t, unsigned nd, const int64_t *dims, uint32_t *rng);
/* The kind (CS_*) of the step that writes value name, -1 for none. */
int cc_kind_of(const struct onnx_compiled *cm, const char *name);
/* Run cm twice (the second replays the kept jobs) and compare every output with the CPU reference:
 * shape, dtype, values (fp32 within 1e-5 + 1e-4 |ref|, the same infinity, NaN where the reference is NaN;
 * others exact). */
void cc_check_against_cpu(struct onnx_compiled *cm, const struct onnx_tensor *in, unsigned n_in, unsigned n_out);

#endif
