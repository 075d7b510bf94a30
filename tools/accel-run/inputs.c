/* SPDX-License-Identifier: MIT */
/* inputs.c - accel-run --random-input / --shape (inputs.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inputs.h"

#define MAX_ELEMS (1ull << 28)	/* 1 GiB of FLOAT: a declared shape beyond it is a mistake, not an input */

int shape_parse(const char *arg, struct shape_arg *out)
{
	const char *eq = strchr(arg, '='), *p;

	memset(out, 0, sizeof(*out));
	if (!eq || eq == arg)
		goto bad;
	out->name = arg;
	out->name_len = (size_t)(eq - arg);
	for (p = eq + 1;; p++) {
		char *end;
		long long d;

		if (out->ndim == ONNX_MAX_DIMS || *p < '0' || *p > '9')
			goto bad;
		d = strtoll(p, &end, 10);
		if (d < 1 || d > (1ll << 28))
			goto bad;
		out->dims[out->ndim++] = d;
		p = end;
		if (!*p)
			return 0;
		if (*p != 'x')
			goto bad;
	}
bad:
	fprintf(stderr, "accel-run: --shape '%s': expected NAME=D0xD1x... (at most %d dimensions, each 1..2^28)\n",
		arg, ONNX_MAX_DIMS);
	return -EINVAL;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill(struct onnx_tensor *t, uint64_t state)
{
	for (size_t i = 0; i < t->count; i++) {
		uint64_t r = splitmix64(&state);

		switch (t->dtype) {
		case ONNX_FLOAT:
			((float *)t->data)[i] = (float)((double)(r >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
			break;
		case ONNX_UINT8:
			((uint8_t *)t->data)[i] = (uint8_t)r;
			break;
		case ONNX_INT8:
			((int8_t *)t->data)[i] = (int8_t)(uint8_t)r;
			break;
		case ONNX_INT32:
			((int32_t *)t->data)[i] = (int32_t)(r % 10);
			break;
		case ONNX_INT64:
			((int64_t *)t->data)[i] = (int64_t)(r % 10);
			break;
		default:	/* other element types stay zero */
			break;
		}
	}
}

static const struct shape_arg *find_shape(const struct shape_arg *s, unsigned n, const char *name)
{
	for (unsigned i = 0; i < n; i++)
		if (strlen(name) == s[i].name_len && !strncmp(s[i].name, name, s[i].name_len))
			return &s[i];
	return NULL;
}

int random_inputs(const struct onnx_model *m, const struct shape_arg *shapes, unsigned n_shapes, uint64_t seed,
		  struct onnx_tensor *in, unsigned max_in)
{
	unsigned n = onnx_model_n_inputs(m);

	for (unsigned k = 0; k < n_shapes; k++) {
		bool known = false;

		for (unsigned i = 0; i < n; i++)
			known |= strlen(onnx_model_input_name(m, i)) == shapes[k].name_len &&
				 !strncmp(onnx_model_input_name(m, i), shapes[k].name, shapes[k].name_len);
		if (!known) {
			fprintf(stderr, "accel-run: --shape %.*s: the model has no input of that name\n",
				(int)shapes[k].name_len, shapes[k].name);
			return -EINVAL;
		}
	}
	if (n > max_in) {
		fprintf(stderr, "accel-run: more than %u inputs\n", max_in);
		return -EINVAL;
	}
	for (unsigned i = 0; i < n; i++) {
		const struct shape_arg *s;
		struct onnx_value_desc vi;
		int64_t dims[ONNX_MAX_DIMS];
		unsigned ndim;
		size_t count = 1;

		onnx_model_input_desc(m, i, &vi);
		s = find_shape(shapes, n_shapes, vi.name);
		if (!onnx_dtype_size((enum onnx_dtype)vi.dtype)) {
			fprintf(stderr, "accel-run: input '%s': %s element type: --random-input needs FLOAT, UINT8, INT8, "
				"INT32 or INT64\n", vi.name, vi.dtype ? onnx_dtype_name(vi.dtype) : "no declared");
			goto fail;
		}
		if (!s && vi.ndim < 0) {
			fprintf(stderr, "accel-run: input '%s' declares no shape: give --shape %s=D0xD1x...\n", vi.name,
				vi.name);
			goto fail;
		}
		ndim = s ? s->ndim : (unsigned)vi.ndim;
		for (unsigned d = 0; d < ndim; d++) {
			dims[d] = s ? s->dims[d] : vi.dims[d] < 0 ? 1 : vi.dims[d];
			if (dims[d] && count > MAX_ELEMS / (size_t)dims[d]) {
				count = MAX_ELEMS + 1;
				break;
			}
			count *= (size_t)dims[d];
		}
		if (count > MAX_ELEMS) {
			fprintf(stderr, "accel-run: input '%s': more than 2^28 elements\n", vi.name);
			goto fail;
		}
		if (onnx_tensor_alloc(&in[i], (enum onnx_dtype)vi.dtype, ndim, dims)) {
			fprintf(stderr, "accel-run: input '%s': out of memory\n", vi.name);
			goto fail;
		}
		fill(&in[i], seed * 0x100000001b3ull + i);
		continue;
fail:
		while (i--)
			onnx_tensor_release(&in[i]);
		return -EINVAL;
	}
	return 0;
}
