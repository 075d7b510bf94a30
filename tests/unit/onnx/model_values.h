/* SPDX-License-Identifier: MIT */
/*
 * model_values.h - criterion tests that look inside a loaded model (onnx/src/internal.h): the index of
 * a value by name, to check the compiler's decisions about it (layout, placement, aliasing).
 */
#ifndef TNPU_TEST_MODEL_VALUES_H
#define TNPU_TEST_MODEL_VALUES_H

#include <criterion/criterion.h>
#include <string.h>

#include "../../../onnx/src/internal.h"

/* The value named name in m (a failed assertion when there is none). */
static inline int value_index(const struct onnx_model *m, const char *name)
{
	for (unsigned v = 0; v < m->n_vals; v++)
		if (m->vals[v].name && !strcmp(m->vals[v].name, name))
			return (int)v;
	cr_assert_fail("no value '%s'", name);
	return -1;
}

#endif
