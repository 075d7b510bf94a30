/* SPDX-License-Identifier: MIT */
/* compile_check.c - the helpers of compile_check.h. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "compile_check.h"
#include "model_values.h"

struct onnx_model *cc_load(struct mb *b)
{
	struct onnx_model *m = NULL;
	char err[512] = "";
	size_t len;
	const uint8_t *buf = mb_pack(b, &len);

	cr_assert_eq(onnx_model_load_mem(buf, len, 0, &m, err, sizeof(err)), 0, "load: %s", err);
	mb_free(b);
	return m;
}

void cc_rand(struct onnx_tensor *t, unsigned nd, const int64_t *dims, uint32_t *rng)
{
	cr_assert_eq(onnx_tensor_alloc(t, ONNX_FLOAT, nd, dims), 0);
	for (size_t i = 0; i < t->count; i++)
		((float *)t->data)[i] = mb_frand(rng);
}

int cc_kind_of(const struct onnx_compiled *cm, const char *name)
{
	int v = value_index(cm->m, name);

	for (unsigned i = 0; i < cm->n_steps; i++)
		if (cm->steps[i].out == v)
			return cm->steps[i].kind;
	return -1;
}

void cc_check_against_cpu(struct onnx_compiled *cm, const struct onnx_tensor *in, unsigned n_in, unsigned n_out)
{
	for (int run = 0; run < 2; run++) {
		struct onnx_tensor ref[4], got[4];

		cr_assert_leq(n_out, 4);
		cr_assert_eq(onnx_run(cm->m, NULL, in, n_in, ref, n_out, NULL), 0);
		cr_assert_eq(onnx_compiled_run(cm, in, n_in, got, n_out, NULL), 0, "run: %s", onnx_compiled_error(cm));
		for (unsigned o = 0; o < n_out; o++) {
			cr_assert_eq(got[o].ndim, ref[o].ndim, "output %u: rank %u, reference %u", o, got[o].ndim,
				     ref[o].ndim);
			cr_assert_eq(memcmp(got[o].dims, ref[o].dims, ref[o].ndim * sizeof(ref[o].dims[0])), 0,
				     "output %u: another shape than the reference's", o);
			cr_assert_eq(got[o].dtype, ref[o].dtype);
			for (size_t i = 0; i < ref[o].count && ref[o].dtype == ONNX_FLOAT; i++) {
				float g = ((const float *)got[o].data)[i], r = ((const float *)ref[o].data)[i];

				cr_assert(isnan(r) ? isnan(g) : (g == r || fabsf(g - r) <= 1e-5f + 1e-4f * fabsf(r)),
					  "output %u [%zu] = %g, CPU reference %g", o, i, g, r);
			}
			if (ref[o].dtype != ONNX_FLOAT)
				cr_assert_eq(
					memcmp(got[o].data, ref[o].data, ref[o].count * onnx_dtype_size(ref[o].dtype)),
					0, "output %u differs from the reference", o);
			onnx_tensor_release(&got[o]);
			onnx_tensor_release(&ref[o]);
		}
	}
}
