/* SPDX-License-Identifier: MIT */
/*
 * ops_einsum.c - Einsum (opset 12), the host kernel written from the ONNX specification (numpy's
 * einsum): explicit ("ij,jk->ik") and implicit ("ij,jk": the labels seen once, alphabetically) outputs,
 * "..." broadcast dimensions, repeated labels in one operand (diagonals).  A direct sum over the
 * labels' index space in double.
 */
#include <ctype.h>
#include <stdio.h>

#include "ops_common.h"

#define EIN_LABELS 64	/* 52 letters, then the broadcast ("...") dimensions, right-aligned */
#define EIN_ELL 52

struct ein_term {
	int label[ONNX_MAX_DIMS];
	unsigned n;
};

static int ein_label(char ch)
{
	return ch >= 'a' && ch <= 'z' ? ch - 'a' : ch >= 'A' && ch <= 'Z' ? 26 + ch - 'A' : -1;
}

/* One term of the equation (s .. e) for an operand of rank r (r < 0: the output, ellipsis of rank ell). */
static int ein_parse(const struct onnx_ctx *c, const char *s, const char *e, int r, unsigned ell, struct ein_term *t)
{
	unsigned letters = 0, k = 0;
	bool has_ell = false;

	for (const char *p = s; p < e; p++) {
		if (*p == '.') {
			if (has_ell || e - p < 3 || p[1] != '.' || p[2] != '.')
				return node_err(c, -EINVAL, "equation: a misplaced '.'");
			has_ell = true;
			p += 2;
		} else if (ein_label(*p) < 0) {
			return node_err(c, -EINVAL, "equation: '%c' is not a label (a-z, A-Z)", *p);
		} else {
			letters++;
		}
	}
	{
		unsigned ne = r < 0 ? (has_ell ? ell : 0) : has_ell ? (unsigned)r - letters : 0;

		if (r >= 0 && (letters > (unsigned)r || (!has_ell && letters != (unsigned)r)))
			return node_err(c, -EINVAL, "equation: a term has %u labels for an operand of rank %d", letters, r);
		if (letters + ne > ONNX_MAX_DIMS)
			return node_err(c, -EINVAL, "equation: more than %d dimensions", ONNX_MAX_DIMS);
		for (const char *p = s; p < e; p++) {
			if (*p == '.') {
				for (unsigned j = 0; j < ne; j++)
					t->label[k++] = EIN_ELL + (int)(ell - ne + j);
				p += 2;
			} else {
				t->label[k++] = ein_label(*p);
			}
		}
		t->n = k;
		return (int)ne;
	}
}

int host_einsum(struct onnx_ctx *c)
{
	char eq[256], *arrow;
	struct ein_term in[8], out = { { 0 }, 0 };
	const struct onnx_tensor *x[8];
	int64_t size[EIN_LABELS], st[8][ONNX_MAX_DIMS], dims[ONNX_MAX_DIMS], val[EIN_LABELS];
	int order[EIN_LABELS], n_order = 0, seen[EIN_LABELS] = { 0 };
	unsigned n = c->n->n_in, ell = 0;
	const char *s;
	int ret;

	attr_string(c->n->pb, "equation", eq, sizeof(eq), "");
	{	/* drop spaces */
		char *w = eq;

		for (char *r = eq; *r; r++)
			if (!isspace((unsigned char)*r))
				*w++ = *r;
		*w = '\0';
	}
	if (!eq[0])
		return node_err(c, -EINVAL, "attribute 'equation' is missing");
	if (n < 1 || n > 8)
		return node_err(c, -EINVAL, "%u inputs (1 to 8)", n);
	for (unsigned i = 0; i < n; i++) {
		if ((ret = in_req(c, i, "Inputs", &x[i])))
			return ret;
		if (x[i]->dtype == ONNX_BOOL || x[i]->dtype != x[0]->dtype)
			return node_err(c, -EINVAL, "input %u: element type %s (numbers, all of one type)", i,
					onnx_dtype_name(x[i]->dtype));
	}
	arrow = strstr(eq, "->");
	for (int l = 0; l < EIN_LABELS; l++)
		size[l] = -1;
	/* the broadcast rank: the most dimensions any "..." stands for */
	s = eq;
	for (unsigned i = 0; i < n; i++) {
		const char *e = s + strcspn(s, ",-");
		unsigned letters = 0;
		bool has_ell = false;

		for (const char *p = s; p < e; p++)
			has_ell |= *p == '.', letters += ein_label(*p) >= 0;
		if (has_ell && x[i]->ndim >= letters && x[i]->ndim - letters > ell)
			ell = x[i]->ndim - letters;
		if ((i + 1 < n) != (*e == ','))
			return node_err(c, -EINVAL, "equation has %s terms than the %u inputs", i + 1 < n ? "fewer" : "more", n);
		s = e + (*e == ',');
	}
	s = eq;
	for (unsigned i = 0; i < n; i++) {
		const char *e = s + strcspn(s, ",-");

		if ((ret = ein_parse(c, s, e, (int)x[i]->ndim, ell, &in[i])) < 0)
			return ret;
		strides_of(x[i]->ndim, x[i]->dims, st[i]);
		for (unsigned d = 0; d < in[i].n; d++) {
			int l = in[i].label[d];
			int64_t dn = x[i]->dims[d];

			seen[l]++;
			if (size[l] < 0 || size[l] == 1)
				size[l] = dn;
			else if (dn != size[l] && !(l >= EIN_ELL && dn == 1))
				return node_err(c, -EINVAL, "label '%c' has sizes %lld and %lld", l < 26 ? 'a' + l :
						l < EIN_ELL ? 'A' + l - 26 : '.', (long long)size[l], (long long)dn);
		}
		s = e + (*e == ',');
	}
	if (arrow) {
		if ((ret = ein_parse(c, arrow + 2, arrow + strlen(arrow), -1, ell, &out)) < 0)
			return ret;
		for (unsigned d = 0; d < out.n; d++) {
			if (size[out.label[d]] < 0)
				return node_err(c, -EINVAL, "output label %u is in no input", d);
			for (unsigned e = 0; e < d; e++)
				if (out.label[e] == out.label[d])
					return node_err(c, -EINVAL, "output label %u is repeated", d);
		}
	} else {	/* implicit: the broadcast dimensions, then the labels seen once, alphabetically */
		static const int alpha[52] = { 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
					       44, 45, 46, 47, 48, 49, 50, 51, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
					       12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25 };

		for (unsigned j = 0; j < ell; j++)
			out.label[out.n++] = EIN_ELL + (int)j;
		for (int k = 0; k < 52; k++)
			if (seen[alpha[k]] == 1) {
				if (out.n >= ONNX_MAX_DIMS)
					return node_err(c, -EINVAL, "the output would have more than %d dimensions", ONNX_MAX_DIMS);
				out.label[out.n++] = alpha[k];
			}
	}
	for (unsigned d = 0; d < out.n; d++) {
		dims[d] = size[out.label[d]];
		order[n_order++] = out.label[d];
	}
	for (int l = 0; l < EIN_LABELS; l++) {
		bool in_out = false;

		for (unsigned d = 0; d < out.n; d++)
			in_out |= out.label[d] == l;
		if (size[l] >= 0 && !in_out)
			order[n_order++] = l;
	}
	if ((ret = out_alloc(c, 0, x[0]->dtype, out.n, dims)))
		return ret < 0 ? ret : 0;
	{
		struct onnx_tensor *y = node_out(c, 0);
		size_t inner = 1;

		for (int k = (int)out.n; k < n_order; k++)
			inner *= (size_t)size[order[k]];
		memset(val, 0, sizeof(val));
		for (size_t o = 0; o < y->count; o++) {
			double acc = 0;

			for (int k = (int)out.n; k < n_order; k++)
				val[order[k]] = 0;
			for (size_t r = 0; r < inner; r++) {
				double p = 1;

				for (unsigned i = 0; i < n; i++) {
					size_t off = 0;

					for (unsigned d = 0; d < in[i].n; d++)
						if (x[i]->dims[d] > 1)
							off += (size_t)(val[in[i].label[d]] * st[i][d]);
					p *= tensor_get(x[i], off);
				}
				acc += p;
				for (int k = n_order - 1; k >= (int)out.n; k--) {	/* next contraction index */
					if (++val[order[k]] < size[order[k]])
						break;
					val[order[k]] = 0;
				}
			}
			tensor_set(y, o, acc);
			for (int k = (int)out.n - 1; k >= 0; k--) {	/* next output index */
				if (++val[order[k]] < size[order[k]])
					break;
				val[order[k]] = 0;
			}
		}
	}
	return 0;
}
