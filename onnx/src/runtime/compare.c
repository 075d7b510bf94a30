/* SPDX-License-Identifier: MIT */
/* compare.c - outputs against expectations with the documented tolerances (accel-run, conformance). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

void onnx_tensor_describe(const struct onnx_tensor *t, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "%s [", onnx_dtype_name(t->dtype));

	for (unsigned i = 0; i < t->ndim && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)t->dims[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

/* The relative tolerance of a floating-point type: FLOAT's and DOUBLE's as given (DOUBLE is computed in
 * FLOAT), at least half an ulp of the 16-bit types (FLOAT16: 2^-11, BFLOAT16: 2^-8) plus FLOAT's, since a
 * result rounded to 16 bits may land one step from the reference's. */
static double tol_rtol(enum onnx_dtype dt, double rtol)
{
	if (dt == ONNX_FLOAT16)
		return rtol + 1.0 / 1024;
	if (dt == ONNX_BFLOAT16)
		return rtol + 1.0 / 128;
	return rtol;
}

int onnx_compare(const struct onnx_tensor *got, const struct onnx_tensor *exp, const struct onnx_tolerance *tol,
		 double *max_err, char *msg, size_t len)
{
	char a[96], b[96];
	size_t bad = 0, first = 0;
	double worst = 0, rtol = tol_rtol(got->dtype, tol->rtol);

	*max_err = 0;
	onnx_tensor_describe(got, a, sizeof(a));
	onnx_tensor_describe(exp, b, sizeof(b));
	if (got->dtype != exp->dtype || got->ndim != exp->ndim || memcmp(got->dims, exp->dims, got->ndim * sizeof(int64_t))) {
		snprintf(msg, len, "got %s, expected %s", a, b);
		return -EINVAL;
	}
	for (size_t i = 0; i < got->count; i++) {
		double g = tensor_get(got, i), e = tensor_get(exp, i), d = fabs(g - e);
		bool ok;

		if (onnx_dtype_is_float(got->dtype)) {
			ok = (isnan(g) && isnan(e)) || g == e || d <= tol->atol + rtol * fabs(e);
			if (isnan(d))
				d = 0;
		} else {
			ok = d <= (double)tol->itol;
		}
		if (d > worst)
			worst = d;
		if (!ok && !bad++)
			first = i;
	}
	*max_err = worst;
	if (!bad) {
		snprintf(msg, len, "%zu values match (max |err| %.3g)", got->count, worst);
		return 0;
	}
	snprintf(msg, len, "%zu of %zu values differ; first at %zu: got %.9g, expected %.9g (max |err| %.3g)", bad,
		 got->count, first, tensor_get(got, first), tensor_get(exp, first), worst);
	return 1;
}

int onnx_compare_scaled(const struct onnx_tensor *got, const struct onnx_tensor *exp, const struct onnx_tolerance *tol,
			double *max_err, char *msg, size_t len)
{
	char a[96], b[96];
	size_t bad = 0, first = 0;
	double worst = 0, scale = 0, bound;

	if (!onnx_dtype_is_float(got->dtype))
		return onnx_compare(got, exp, tol, max_err, msg, len);
	*max_err = 0;
	onnx_tensor_describe(got, a, sizeof(a));
	onnx_tensor_describe(exp, b, sizeof(b));
	if (got->dtype != exp->dtype || got->ndim != exp->ndim || memcmp(got->dims, exp->dims, got->ndim * sizeof(int64_t))) {
		snprintf(msg, len, "got %s, expected %s", a, b);
		return -EINVAL;
	}
	for (size_t i = 0; i < exp->count; i++) {
		double e = fabs(tensor_get(exp, i));

		if (isfinite(e) && e > scale)
			scale = e;
	}
	bound = tol->atol + tol_rtol(got->dtype, tol->rtol) * scale;
	for (size_t i = 0; i < got->count; i++) {
		double g = tensor_get(got, i), e = tensor_get(exp, i), d = fabs(g - e);
		bool ok = (isnan(g) && isnan(e)) || g == e || d <= bound;

		if (isnan(d))
			d = 0;
		if (d > worst)
			worst = d;
		if (!ok && !bad++)
			first = i;
	}
	*max_err = worst;
	if (!bad) {
		snprintf(msg, len, "%zu values match (max |err| %.3g = %.3g of the scale %.4g)", got->count, worst,
			 scale > 0 ? worst / scale : 0.0, scale);
		return 0;
	}
	snprintf(msg, len,
		 "%zu of %zu values differ; first at %zu: got %.9g, expected %.9g (max |err| %.3g = %.3g of the scale %.4g; bound %.3g)",
		 bad, got->count, first, tensor_get(got, first), tensor_get(exp, first), worst,
		 scale > 0 ? worst / scale : 0.0, scale, bound);
	return 1;
}
