/* SPDX-License-Identifier: MIT */
/*
 * partition.c - sparse (#8): seed 003's sparsity-balanced partitioner.  An input map is split into
 * m sub-maps of whole rows; starting from the even grid, single rows move between neighbouring
 * sub-maps while that narrows the neighbours' metric difference (non-zero count or density), until
 * the spread (max - min) / mean is within the threshold.  Sub-maps larger than a storage unit are
 * time-folded; sub-map i runs on array row i * rows / m (neighbours on neighbouring rows).
 * accel_partition_conv2d runs a convolution through a partition in overlap (halo) or non-overlap
 * (partial-sum combine) mode.  Documentation/sparse.md, "Partitioner".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "epilogue.h"
#include "sparse.h"

struct rowstats {
	uint32_t H;
	uint64_t *pnz;		/* prefix sums of non-zeros per map row, H + 1 entries */
	uint64_t row_elems;
	enum accel_part_metric metric;
};

static double metric(const struct rowstats *rs, uint32_t y0, uint32_t y1)
{
	double nz = (double)(rs->pnz[y1] - rs->pnz[y0]);

	return rs->metric == ACCEL_PART_NNZ ? nz : nz / ((double)(y1 - y0) * (double)rs->row_elems);
}

/* Spread (max - min) / mean of the metric over boundaries b[0..m] (b[0] = 0, b[m] = H). */
static double evaluate(const struct rowstats *rs, const uint32_t *b, uint32_t m)
{
	double mn = INFINITY, mx = -INFINITY, sum = 0, mean;

	for (uint32_t i = 0; i < m; i++) {
		double v = metric(rs, b[i], b[i + 1]);

		mn = fmin(mn, v);
		mx = fmax(mx, v);
		sum += v;
	}
	mean = sum / m;
	return mean > 0 ? (mx - mn) / mean : 0.0;
}

int accel_partition_map(struct accel_dev *dev, const struct accel_tensor *t, const struct accel_part_opts *o,
			struct accel_partition *out)
{
	struct rowstats rs;
	uint32_t b[ACCEL_PART_MAX + 1], m, H, rows;
	double thr, spread;
	const uint8_t *base;
	int ret;

	if (!dev)
		return -EINVAL;
	accel_clearerr(dev);
	if (!t || !o || !out)
		return accel_seterr(dev, -EINVAL, "accel_partition_map: NULL argument");
	ret = arg_tensor(dev, t, "map");
	if (ret)
		return ret;
	if (t->ndim != 4 || t->layout != ACCEL_LAYOUT_NHWC || t->shape[0] != 1)
		return accel_seterr(dev, -EINVAL, "accel_partition_map: the map must be an NHWC {1, C, H, W} tensor");
	m = o->m;
	H = t->shape[2];
	if (!m || m > ACCEL_PART_MAX || m > H)
		return accel_seterr(dev, -EINVAL, "accel_partition_map: m = %u must be 1..%u and at most H = %u", m,
				    ACCEL_PART_MAX, H);
	if (o->metric != ACCEL_PART_NNZ && o->metric != ACCEL_PART_DENSITY)
		return accel_seterr(dev, -EINVAL, "accel_partition_map: unknown metric %d", (int)o->metric);
	rows = o->rows ? o->rows : dev->caps.rows;
	thr = o->threshold > 0 ? o->threshold : 0.03;
	memset(out, 0, sizeof(*out));
	rs.H = H;
	rs.metric = o->metric;
	rs.row_elems = (uint64_t)t->shape[1] * t->shape[3];
	rs.pnz = calloc(H + 1, sizeof(*rs.pnz));
	if (!rs.pnz)
		return accel_seterr(dev, -ENOMEM, "out of memory");
	base = (const uint8_t *)accel_buffer_ptr(t->buf) + t->offset;
	for (uint32_t y = 0; y < H; y++) {
		uint64_t nz = 0;

		for (uint32_t x = 0; x < t->shape[3]; x++)
			for (uint32_t c = 0; c < t->shape[1]; c++) {
				const uint8_t *p = base + (int64_t)y * t->strides[2] + (int64_t)x * t->strides[3] +
						   (int64_t)c * t->strides[1];
				float f;
				int32_t v;

				if (t->dtype == ACCEL_INT8) {
					nz += *p != 0;
				} else if (t->dtype == ACCEL_INT32) {
					/* a layer's raw output, re-partitioned for the next layer */
					memcpy(&v, p, 4);
					nz += v != 0;
				} else {
					memcpy(&f, p, 4);
					nz += f != 0.0f;
				}
			}
		rs.pnz[y + 1] = rs.pnz[y] + nz;
	}
	/* Even grid (seed 003: start from m equal cells). */
	for (uint32_t i = 0; i <= m; i++)
		b[i] = (uint32_t)((uint64_t)i * H / m);
	spread = evaluate(&rs, b, m);
	/* Then move whole rows between neighbours (seed 003) while the spread is above the threshold. */
	if (!o->even && spread > thr && o->metric == ACCEL_PART_NNZ) {
		/* Count metric: boundary i walks row by row towards the row where the non-zeros above
		 * it are closest to i/m of the total (each step moves one row between neighbours). */
		for (bool moved = true; moved;) {
			moved = false;
			for (uint32_t i = 1; i < m; i++) {
				double target = (double)rs.pnz[H] * i / m;

				while (b[i] - 1 > b[i - 1] && fabs((double)rs.pnz[b[i] - 1] - target) <
								      fabs((double)rs.pnz[b[i]] - target)) {
					b[i]--;
					moved = true;
					out->iterations++;
				}
				while (b[i] + 1 < b[i + 1] && fabs((double)rs.pnz[b[i] + 1] - target) <
								      fabs((double)rs.pnz[b[i]] - target)) {
					b[i]++;
					moved = true;
					out->iterations++;
				}
			}
		}
		spread = evaluate(&rs, b, m);
	}
	/* Both metrics: sweep over the neighbour pairs and move their shared boundary row by row while
	 * that narrows the pair's metric difference, until the spread is within the threshold or a
	 * sweep moves nothing (the cap only guards against cycling). */
	while (!o->even && spread > thr && out->iterations < 1000000) {
		bool moved = false;

		for (uint32_t i = 1; i < m; i++) {
			for (;;) {
				double l = metric(&rs, b[i - 1], b[i]), r = metric(&rs, b[i], b[i + 1]), nl, nr;
				uint32_t nb;

				if (l > r && b[i] - 1 > b[i - 1])
					nb = b[i] - 1;
				else if (r > l && b[i] + 1 < b[i + 1])
					nb = b[i] + 1;
				else
					break;
				nl = metric(&rs, b[i - 1], nb);
				nr = metric(&rs, nb, b[i + 1]);
				if (fabs(nl - nr) >= fabs(l - r))
					break;
				b[i] = nb;
				moved = true;
				out->iterations++;
			}
		}
		spread = evaluate(&rs, b, m);
		if (!moved)
			break;
	}
	out->m = m;
	out->spread = spread;
	out->within_threshold = spread <= thr;
	/* Cells, time folding and row assignment. */
	for (uint32_t i = 0; i < m; i++) {
		uint64_t bytes = (uint64_t)(b[i + 1] - b[i]) * rs.row_elems * accel_dtype_size(t->dtype);
		uint32_t n = b[i + 1] - b[i], f = 1;

		if (o->fold_bytes && bytes > o->fold_bytes)
			f = (uint32_t)ACCEL_MIN((uint64_t)n, ACCEL_DIV_UP(bytes, o->fold_bytes));
		/* Equal folds of whole rows: every fold must fit (more folds if rounding overflows one). */
		while (o->fold_bytes && f < n &&
		       (uint64_t)ACCEL_DIV_UP(n, f) * rs.row_elems * accel_dtype_size(t->dtype) > o->fold_bytes)
			f++;
		if (out->n_cells + f > ACCEL_PART_MAX_CELLS) {
			free(rs.pnz);
			return accel_seterr(dev, -E2BIG, "accel_partition_map: more than %u cells after time folding",
					    ACCEL_PART_MAX_CELLS);
		}
		for (uint32_t j = 0; j < f; j++) {
			struct accel_part_cell *c = &out->cell[out->n_cells++];

			c->y0 = b[i] + (uint32_t)((uint64_t)j * n / f);
			c->y1 = b[i] + (uint32_t)((uint64_t)(j + 1) * n / f);
			c->in_y0 = c->y0 > o->halo ? c->y0 - o->halo : 0;
			c->in_y1 = ACCEL_MIN(H, c->y1 + o->halo);
			c->nnz = rs.pnz[c->y1] - rs.pnz[c->y0];
			c->elems = (uint64_t)(c->y1 - c->y0) * rs.row_elems;
			c->metric = metric(&rs, c->y0, c->y1);
			c->row = (uint32_t)((uint64_t)i * rows / m);
			c->fold = j;
			c->sub = i;
		}
	}
	free(rs.pnz);
	return 0;
}

/* View of rows [y0, y0 + n) of an NHWC {1, C, H, W} tensor as its own {1, C, n, W} tensor. */
static struct accel_tensor rows_view(const struct accel_tensor *t, uint32_t y0, uint32_t n)
{
	struct accel_tensor v = *t;

	v.offset += (uint64_t)y0 * (uint64_t)t->strides[2];
	v.shape[2] = n;
	v.strides[0] = t->strides[2] * n;
	return v;
}

int accel_partition_conv2d(struct accel_dev *dev, const struct accel_conv2d_desc *conv,
			   const struct accel_sparse_weights *w, uint32_t flags, const struct accel_partition *part,
			   enum accel_part_mode mode, struct accel_counters *counters, uint64_t *row_busy)
{
	const struct accel_tensor *in, *out;
	struct accel_buffer *tmp[ACCEL_PART_MAX_CELLS];
	uint32_t oy_lo[ACCEL_PART_MAX_CELLS], n_out[ACCEL_PART_MAX_CELLS];
	struct accel_cmdstream cs;
	struct accel_job *job = NULL;
	struct mm_ctx x;
	uint32_t H, OH, R, eh;
	int ret;

	if (!dev)
		return -EINVAL;
	accel_clearerr(dev);
	if (!conv || !part || !conv->input || !conv->output || !conv->weights)
		return accel_seterr(dev, -EINVAL, "accel_partition_conv2d: NULL argument");
	ret = sparse_conv_check(dev, conv, w, flags);
	if (ret)
		return ret;
	in = conv->input;
	out = conv->output;
	if (in->ndim != 4 || out->ndim != 4 || in->layout != ACCEL_LAYOUT_NHWC || out->layout != ACCEL_LAYOUT_NHWC ||
	    in->shape[0] != 1 || conv->weights->ndim != 4 || !conv->stride_h || !conv->dil_h)
		return accel_seterr(dev, -EINVAL, "accel_partition_conv2d: NHWC input and output with N = 1 only");
	H = in->shape[2];
	OH = out->shape[2];
	R = conv->weights->shape[2];
	eh = conv->dil_h * (R - 1) + 1;
	if (!part->n_cells || part->n_cells > ACCEL_PART_MAX_CELLS || part->cell[part->n_cells - 1].y1 != H)
		return accel_seterr(dev, -EINVAL, "accel_partition_conv2d: the partition does not cover the input's %u rows",
				    H);
	if (mode == ACCEL_PART_NONOVERLAP &&
	    (conv->stride_h != 1 || conv->dil_h != 1 || conv->input_zero_point || out->dtype != ACCEL_INT32 ||
	     conv->epi.bias || conv->epi.act != ACCEL_ACT_NONE))
		return accel_seterr(dev, -EINVAL, "accel_partition_conv2d: non-overlap mode needs stride 1, dilation 1, "
				    "input_zero_point 0 and an INT32 output without epilogue (partial sums)");
	if (mode != ACCEL_PART_OVERLAP && mode != ACCEL_PART_NONOVERLAP)
		return accel_seterr(dev, -EINVAL, "accel_partition_conv2d: unknown mode %d", (int)mode);
	memset(tmp, 0, sizeof(tmp));
	cs_init(&cs, dev);
	mm_ctx_init(&x, dev, &cs);
	x.conv_sp = w;
	x.conv_zskip_lb = flags;
	ret = 0;
	for (uint32_t i = 0; i < part->n_cells && !ret; i++) {
		const struct accel_part_cell *c = &part->cell[i];
		struct accel_conv2d_desc d = *conv;
		struct accel_tensor iv, ov;
		int64_t first, last, ia, ib;
		uint32_t oys, oye;

		if (c->y0 >= c->y1 || (i && c->y0 != part->cell[i - 1].y1) || (!i && c->y0) || c->row >= dev->caps.rows) {
			ret = accel_seterr(dev, -EINVAL, "accel_partition_conv2d: cell %u is not a valid row range / row", i);
			break;
		}
		x.pin_row = (uint8_t)c->row;
		if (mode == ACCEL_PART_OVERLAP) {
			/* Own the output rows proportional to the input rows; read them plus the halo. */
			oys = (uint32_t)((uint64_t)c->y0 * OH / H);
			oye = (uint32_t)((uint64_t)c->y1 * OH / H);
			if (oys == oye)
				continue;
			first = (int64_t)oys * conv->stride_h - conv->pad_top;
			last = (int64_t)(oye - 1) * conv->stride_h - conv->pad_top + eh - 1;
			ia = first < 0 ? 0 : first;
			ib = last > (int64_t)H - 1 ? (int64_t)H - 1 : last;
			d.pad_top = (uint32_t)(ia - first);
			d.pad_bottom = (uint32_t)(last - ib);
			iv = rows_view(in, (uint32_t)ia, (uint32_t)(ib - ia + 1));
			ov = rows_view(out, oys, oye - oys);
		} else {
			/* Only the cell's own rows; every output row they touch gets a partial sum. */
			int64_t lo = (int64_t)c->y0 + conv->pad_top - (R - 1), hi = (int64_t)c->y1 - 1 + conv->pad_top;
			uint32_t hs = c->y1 - c->y0;
			int64_t pb;

			lo = lo < 0 ? 0 : lo;
			hi = hi > (int64_t)OH - 1 ? (int64_t)OH - 1 : hi;
			if (hi < lo)
				continue;
			oy_lo[i] = (uint32_t)lo;
			n_out[i] = (uint32_t)(hi - lo + 1);
			d.pad_top = (uint32_t)((int64_t)c->y0 + conv->pad_top - lo);
			pb = (int64_t)n_out[i] - hs - d.pad_top + R - 1;
			if (pb < 0 || d.pad_top > 255 || pb > 255) {
				ret = accel_seterr(dev, -EINVAL, "accel_partition_conv2d: cell %u: unsupported geometry", i);
				break;
			}
			d.pad_bottom = (uint32_t)pb;
			iv = rows_view(in, c->y0, hs);
			ret = accel_buffer_alloc(dev, (uint64_t)n_out[i] * out->shape[3] * out->shape[1] * 4, &tmp[i]);
			if (ret)
				break;
			ret = accel_tensor_4d(tmp[i], 0, ACCEL_INT32, ACCEL_LAYOUT_NHWC, 1, out->shape[1], n_out[i],
					      out->shape[3], &ov);
			if (ret)
				break;
		}
		d.input = &iv;
		d.output = &ov;
		ret = conv_lower(dev, &x, &d);
	}
	if (!ret)
		ret = cs_submit(&cs, NULL, &job);
	cs_fini(&cs);
	if (!ret)
		ret = accel_job_wait(job, -1);
	if (!ret && counters)
		ret = accel_job_counters(job, counters);
	if (!ret && row_busy && accel_job_row_busy(job, row_busy, dev->caps.rows) < 0)
		memset(row_busy, 0, sizeof(*row_busy) * dev->caps.rows);
	if (!ret && mode == ACCEL_PART_NONOVERLAP) {
		/* Combine: every output row is the sum of the partial rows of the cells touching it. */
		uint8_t *ob = (uint8_t *)accel_buffer_ptr(out->buf) + out->offset;
		uint32_t K = out->shape[1], OW = out->shape[3];

		for (uint32_t y = 0; y < OH; y++)
			for (uint32_t xx = 0; xx < OW; xx++)
				for (uint32_t k = 0; k < K; k++)
					memset(ob + (int64_t)y * out->strides[2] + (int64_t)xx * out->strides[3] +
						       (int64_t)k * out->strides[1], 0, 4);
		for (uint32_t i = 0; i < part->n_cells; i++) {
			const int32_t *pp;

			if (!tmp[i])
				continue;
			pp = accel_buffer_ptr(tmp[i]);
			for (uint32_t j = 0; j < n_out[i]; j++)
				for (uint32_t xx = 0; xx < OW; xx++)
					for (uint32_t k = 0; k < K; k++) {
						uint8_t *q = ob + (int64_t)(oy_lo[i] + j) * out->strides[2] +
							     (int64_t)xx * out->strides[3] + (int64_t)k * out->strides[1];
						int32_t v;

						memcpy(&v, q, 4);
						v = (int32_t)((uint32_t)v + (uint32_t)pp[((size_t)j * OW + xx) * K + k]);
						memcpy(q, &v, 4);
					}
		}
	}
	accel_job_free(job);
	for (uint32_t i = 0; i < ACCEL_PART_MAX_CELLS; i++)
		accel_buffer_free(tmp[i]);
	return ret;
}
