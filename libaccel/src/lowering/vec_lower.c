/* SPDX-License-Identifier: MIT */
/*
 * vec_lower.c - the chunked, pipelined lowering of vector-unit operations (vec_lower.h).
 *
 * Shape handling: the iteration space is 4-D; dims of size 1 are dropped and adjacent dims whose
 * strides are contiguous for every operand are merged (a packed tensor becomes one long dim), so a
 * chunk is usually one contiguous run per operand.  A chunk is a box: dims above level k fixed, a
 * range along k, dims below k whole.  In SRAM each operand's box is packed in the order of its own
 * host strides (so every DMA moves contiguous rows, also for transposes) and the VEC command
 * addresses it with the matching strides.
 *
 * Pipeline (per hardware job): chunk i runs on row i mod R, half (i / R) mod 2:
 *   load:    [i >= 2R: SEM_WAIT FREE] H2D boxes, SEM_SIGNAL FULL
 *   compute: SEM_WAIT FULL, VEC..., SEM_SIGNAL DONE
 *   store:   SEM_WAIT DONE, D2H box, SEM_SIGNAL FREE
 * all ASYNC, so chunk i+1 loads while chunk i computes and chunk i-1 stores.
 * Waves: when every operand's chunk is a run of planes along the split dim (packed tensors), the R
 * chunks of a wave (one per row, same half) move in one DMA_BANDS per operand through all rows'
 * host ports at once (axis X for one contiguous run, Z for planes), with the same semaphores per
 * wave; the pooling lowering and strided shapes use the per-chunk path.
 */
#include <string.h>

#include "vec_lower.h"

enum { SEM_FULL = 0, SEM_DONE = 1, SEM_FREE = 2 };

uint32_t vx_f32(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

int vx_need(struct accel_dev *dev, const char *what)
{
	if (!(dev->caps.features & TNPU_FEAT_VEC))
		return accel_seterr(dev, -EOPNOTSUPP, "%s: the device has no vector units (ISA 2, CAP_FEATURES bit 15)",
				    what);
	return 0;
}

void vx_opnd_of(const struct accel_tensor *t, struct vx_opnd *o)
{
	unsigned sh = 4 - t->ndim;

	memset(o, 0, sizeof(*o));
	o->va = t->buf->va + t->offset;
	o->e = (unsigned)accel_dtype_size(t->dtype);
	for (unsigned i = 0; i < t->ndim; i++)
		o->st[sh + i] = t->shape[i] > 1 ? (uint64_t)t->strides[i] : 0;
}

struct tnpu_cmd_vec vx_cmd(uint8_t op, uint8_t fn, uint8_t in_dt, uint8_t out_dt)
{
	struct tnpu_cmd_vec v;

	memset(&v, 0, sizeof(v));
	v.hdr.opcode = TNPU_CMD_VEC;
	v.hdr.size = sizeof(v);
	v.op = op;
	v.func = fn;
	v.in_dtype = in_dt;
	v.out_dtype = out_dt;
	for (int k = 0; k < 4; k++)
		v.n[k] = 1;
	return v;
}

void vx_fill(struct tnpu_cmd_vec *v, const struct vx_chunk *c, int ia, int ib)
{
	for (int k = 0; k < 4; k++) {
		v->n[k] = c->sz[k];
		v->d_st[k] = c->out.st[k];
		v->a_st[k] = ia >= 0 ? c->in[ia].st[k] : 0;
		v->b_st[k] = ib >= 0 ? c->in[ib].st[k] : 0;
	}
	v->d_off = c->out.off;
	v->a_off = ia >= 0 ? c->in[ia].off : 0;
	v->b_off = ib >= 0 ? c->in[ib].off : 0;
	v->row = (uint8_t)c->row;
	v->half = (uint8_t)c->half;
}

static void default_emit(struct accel_cmdstream *cs, const struct vx_job *j, const struct vx_chunk *c,
			 unsigned flags)
{
	struct tnpu_cmd_vec v = j->tmpl;

	vx_fill(&v, c, 0, j->n_in > 1 ? 1 : -1);
	if (j->chan_in >= 0) {	/* the table: b_off, its strides stay 0 */
		v.b_off = c->in[j->chan_in].off;
		memset(v.b_st, 0, sizeof(v.b_st));
	}
	v.hdr.flags = (uint8_t)flags;
	cs_raw(cs, &v, sizeof(v));
}

/* ---- shape normalisation ------------------------------------------------------------------- */

static struct vx_opnd *opnd(struct vx_job *j, unsigned i)
{
	return i == 0 ? &j->out : &j->in[i - 1];
}

/* Drop size-1 dims and merge contiguous neighbours; the channel dim of a PER_CHANNEL job and the
 * last dim of a keep_last job stay separate.  Updates tmpl.chan_dim. */
static void normalise(struct vx_job *j)
{
	unsigned nop = 1 + j->n_in, chan = j->tmpl.chan_dim;
	bool pc = j->chan_in >= 0;
	uint32_t n[4];
	uint64_t st[1 + VX_MAX_IN][4];
	int m = 0, cm = -1;

	/* iterate in the output's memory order (outermost first) so chunks are contiguous runs */
	if (!j->keep_last) {
		for (unsigned a = 0; a < 4; a++)
			for (unsigned b = a + 1; b < 4; b++)
				if (j->out.st[b] > j->out.st[a]) {
					uint32_t tn = j->n[a];

					j->n[a] = j->n[b];
					j->n[b] = tn;
					for (unsigned o = 0; o < nop; o++) {
						uint64_t t = opnd(j, o)->st[a];

						opnd(j, o)->st[a] = opnd(j, o)->st[b];
						opnd(j, o)->st[b] = t;
					}
					if (pc && chan == a)
						chan = b;
					else if (pc && chan == b)
						chan = a;
				}
	}

	for (unsigned d = 0; d < 4; d++) {
		bool fixed = (pc && d == chan) || (j->keep_last && d == 3);

		if (j->n[d] == 1 && !fixed)
			continue;
		if (m > 0 && !fixed && !(pc && cm == m - 1) && !(j->keep_last && d == 3)) {
			bool ok = true;

			for (unsigned o = 0; o < nop && ok; o++)
				ok = st[o][m - 1] == opnd(j, o)->st[d] * j->n[d];
			if (ok) {
				n[m - 1] *= j->n[d];
				for (unsigned o = 0; o < nop; o++)
					st[o][m - 1] = opnd(j, o)->st[d];
				continue;
			}
		}
		n[m] = j->n[d];
		for (unsigned o = 0; o < nop; o++)
			st[o][m] = opnd(j, o)->st[d];
		if (pc && d == chan)
			cm = m;
		m++;
	}
	/* right-align into 4 dims */
	for (int d = 3; d >= 0; d--) {
		int s = d - (4 - m);

		j->n[d] = s >= 0 ? n[s] : 1;
		for (unsigned o = 0; o < nop; o++)
			opnd(j, o)->st[d] = s >= 0 ? st[o][s] : 0;
	}
	if (pc)
		j->tmpl.chan_dim = (uint8_t)(cm + (4 - m));
}

/* ---- SRAM placement and box DMAs ---------------------------------------------------------- */

/* Pack op's box (sizes bs) in the order of its host strides; returns the bytes. */
uint64_t vx_place_box(const struct vx_opnd *o, const uint32_t *sz, uint32_t off, struct vx_place *p)
{
	unsigned ord[4] = { 0, 1, 2, 3 };
	uint64_t s = o->e;

	/* innermost first: ascending host stride, broadcast dims (stride 0) get SRAM stride 0 */
	for (unsigned a = 0; a < 4; a++)
		for (unsigned b = a + 1; b < 4; b++)
			if (o->st[ord[b]] < o->st[ord[a]] || (o->st[ord[b]] == o->st[ord[a]] && ord[b] > ord[a])) {
				unsigned t = ord[a];

				ord[a] = ord[b];
				ord[b] = t;
			}
	p->off = off;
	for (unsigned a = 0; a < 4; a++) {
		unsigned d = ord[a];

		if (!o->st[d] || sz[d] == 1) {
			p->st[d] = 0;
			continue;
		}
		p->st[d] = (int32_t)s;
		s *= sz[d];
	}
	return s;
}

/* One 3-D copy between host memory and one storage unit.  With per-unit host ports it is a
 * DMA_BANDS (axis Z) whose only non-empty band is the row's (256 B/cycle instead of the shared
 * 128 B/cycle DMA stream; same bytes, same SRAM layout). */
static void vx_dma(struct accel_cmdstream *cs, bool h2d, unsigned flags, uint64_t va, uint64_t hpy, uint64_t hpz,
		   unsigned row, unsigned half, uint32_t off, uint32_t spy, uint32_t spz, uint32_t width, uint32_t height,
		   uint32_t depth)
{
	struct tnpu_cmd_dma_bands b;

	/* per-unit host ports: the depthwise block (CAP_FEATURES bit 7) */
	if (!(cs->dev->caps.features & TNPU_FEAT_DEPTHWISE) || depth > (1u << 26)) {
		cs_dma(cs, h2d, flags, va, hpy, hpz, row, half, off, spy, spz, width, height, depth);
		return;
	}
	memset(&b, 0, sizeof(b));
	b.hdr.opcode = h2d ? TNPU_CMD_DMA_BANDS_H2D : TNPU_CMD_DMA_BANDS_D2H;
	b.hdr.flags = (uint8_t)flags;
	b.hdr.size = sizeof(b);
	b.host_va = va;
	b.host_pitch_y = hpy;
	b.host_pitch_z = hpz;
	b.sram_off = off;
	b.sram_pitch_y = spy;
	b.sram_pitch_z = spz;
	b.width = width;
	b.height = height;
	b.depth = depth;
	b.band_first = -(int32_t)(row * depth);	/* unit u's band [(u - row) * depth, + depth) */
	b.band_step = depth;
	b.band_len = depth;
	b.half = (uint8_t)half;
	b.axis = TNPU_BANDS_AXIS_Z;
	cs_raw(cs, &b, sizeof(b));
}

/* The box dims from dim `from` on of operand o (non-broadcast, size > 1) in ascending SRAM stride,
 * merged where host and SRAM are both contiguous; returns their count. */
static unsigned sorted_dims(const struct vx_opnd *o, const uint32_t *sz, const struct vx_place *p, unsigned from,
			    uint64_t *n, uint64_t *hs, uint64_t *ss)
{
	unsigned nd = 0;

	for (unsigned d = from; d < 4; d++)
		if (p->st[d]) {
			unsigned a = nd++;

			while (a > 0 && ss[a - 1] > (uint64_t)p->st[d]) {
				n[a] = n[a - 1];
				hs[a] = hs[a - 1];
				ss[a] = ss[a - 1];
				a--;
			}
			n[a] = sz[d];
			hs[a] = o->st[d];
			ss[a] = (uint64_t)p->st[d];
		}
	for (unsigned a = 0; a + 1 < nd;) {
		if (hs[a + 1] == hs[a] * n[a] && ss[a + 1] == ss[a] * n[a]) {
			n[a] *= n[a + 1];
			for (unsigned b = a + 1; b + 1 < nd; b++) {
				n[b] = n[b + 1];
				hs[b] = hs[b + 1];
				ss[b] = ss[b + 1];
			}
			nd--;
		} else {
			a++;
		}
	}
	return nd;
}

/* Box DMA between host (o, from lo) and SRAM placement p: the innermost SRAM dim with host stride e is
 * the DMA width, the next two dims height and depth, any other dim a loop of commands. */
void vx_dma_box(struct accel_cmdstream *cs, bool h2d, unsigned flags, const struct vx_opnd *o, const uint32_t *lo,
		const uint32_t *sz, const struct vx_place *p, unsigned row, unsigned half)
{
	uint64_t n[4], hs[4], ss[4], va = o->va;
	uint32_t width = o->e;
	unsigned nd = 0, first = 0;

	for (unsigned d = 0; d < 4; d++)
		va += (uint64_t)lo[d] * o->st[d];
	nd = sorted_dims(o, sz, p, 0, n, hs, ss);
	if (nd && hs[0] == o->e && n[0] * o->e <= UINT32_MAX) {
		width = (uint32_t)(o->e * n[0]);
		first = 1;
	}
	{
		unsigned rest = nd - first;
		uint32_t h = rest > 0 ? (uint32_t)n[first] : 1, dd = rest > 1 ? (uint32_t)n[first + 1] : 1;
		uint64_t hpy = rest > 0 ? hs[first] : 0, hpz = rest > 1 ? hs[first + 1] : 0;
		uint32_t spy = rest > 0 ? (uint32_t)ss[first] : 0, spz = rest > 1 ? (uint32_t)ss[first + 1] : 0;
		uint64_t l0 = rest > 2 ? n[first + 2] : 1, l1 = rest > 3 ? n[first + 3] : 1;

		for (uint64_t i1 = 0; i1 < l1; i1++)
			for (uint64_t i0 = 0; i0 < l0; i0++) {
				uint64_t hv = va, so = p->off;

				if (rest > 2) {
					hv += i0 * hs[first + 2];
					so += i0 * ss[first + 2];
				}
				if (rest > 3) {
					hv += i1 * hs[first + 3];
					so += i1 * ss[first + 3];
				}
				vx_dma(cs, h2d, flags, hv, hpy, hpz, row, half, (uint32_t)so, spy, spz, width, h, dd);
			}
	}
}

/* ---- the chunk loop ----------------------------------------------------------------------- */

static uint64_t box_bytes(const struct vx_opnd *o, const uint32_t *sz)
{
	uint64_t b = o->e;

	for (unsigned d = 0; d < 4; d++)
		if (o->st[d])
			b *= sz[d];
	return b;
}

static uint32_t al64(uint64_t x)
{
	return (uint32_t)((x + 63) & ~63ull);
}

/* Bytes of the chunk with dims < k fixed, cnt along k, dims > k whole (each operand 64-aligned). */
static uint64_t chunk_bytes(const struct vx_job *j, unsigned k, uint32_t cnt)
{
	uint32_t sz[4];
	uint64_t units = 1, b = 0;

	for (unsigned d = 0; d < 4; d++)
		sz[d] = d < k ? 1 : (d == k ? cnt : j->n[d]);
	b += al64(box_bytes(&j->out, sz));
	for (unsigned i = 0; i < j->n_in; i++)
		b += al64(box_bytes(&j->in[i], sz));
	for (unsigned d = 0; d < 3; d++)
		units *= sz[d];
	return b + al64(units * j->extra_per_unit);
}

static uint64_t chunk_elems(const struct vx_job *j, unsigned k, uint32_t cnt)
{
	uint64_t e = cnt;

	for (unsigned d = k + 1; d < 4; d++)
		e *= j->n[d];
	return e;
}

/* ---- waves: one DMA_BANDS per operand loads (stores) the chunks of every row at once ---------- */

/* Can o's chunk boxes of one wave move as the planes (dim k) of one DMA_BANDS axis Z? */
static bool wave_opnd_ok(const struct vx_opnd *o, const uint32_t *sz, const struct vx_place *p, unsigned k)
{
	uint64_t n[4], hs[4], ss[4];
	unsigned nd = sorted_dims(o, sz, p, k + 1, n, hs, ss);

	for (unsigned d = k + 1; d < 4; d++)
		if (o->st[k] && p->st[d] && o->st[d] >= o->st[k])
			return false;
	if (nd > 2 || (nd == 2 && hs[0] != o->e))
		return false;
	for (unsigned a = 0; a < nd; a++)
		if (n[a] * o->e > UINT32_MAX || hs[a] > (1ull << 40))
			return false;
	return true;
}

static void wave_dma(struct accel_cmdstream *cs, bool h2d, unsigned flags, const struct vx_opnd *o, const uint32_t *lo,
		     const uint32_t *sz, const struct vx_place *p, unsigned k, uint32_t cnt, uint32_t planes, unsigned half)
{
	uint64_t n[4], hs[4], ss[4], va = o->va;
	unsigned nd = sorted_dims(o, sz, p, k + 1, n, hs, ss), first = 0;
	struct tnpu_cmd_dma_bands b;

	for (unsigned d = 0; d < 4; d++)
		va += (uint64_t)lo[d] * o->st[d];
	memset(&b, 0, sizeof(b));
	b.hdr.opcode = h2d ? TNPU_CMD_DMA_BANDS_H2D : TNPU_CMD_DMA_BANDS_D2H;
	b.hdr.flags = (uint8_t)flags;
	b.hdr.size = sizeof(b);
	b.host_va = va;
	b.width = o->e;
	b.height = 1;
	b.axis = TNPU_BANDS_AXIS_Z;
	if (nd && hs[0] == o->e) {
		b.width = (uint32_t)(n[0] * o->e);
		first = 1;
	}
	if (nd > first) {
		b.height = (uint32_t)n[first];
		b.host_pitch_y = hs[first];
		b.sram_pitch_y = (uint32_t)ss[first];
	}
	b.sram_off = p->off;
	if (!nd && o->st[k] == o->e) {	/* one contiguous run: unit u gets bytes [u * cnt, + cnt) (axis X) */
		b.width = planes * o->e;
		b.depth = 1;
		b.band_step = cnt * o->e;
		b.band_len = cnt * o->e;
		b.axis = TNPU_BANDS_AXIS_X;
	} else if (o->st[k] || !h2d) {	/* unit u: planes [u * cnt, + cnt) of the wave */
		b.depth = planes;
		b.host_pitch_z = o->st[k];
		b.sram_pitch_z = (uint32_t)p->st[k];
		b.band_step = cnt;
		b.band_len = cnt;
	} else {	/* an input broadcast along k: the same box in every unit */
		b.depth = 1;
		b.band_len = 1;
	}
	b.half = (uint8_t)half;
	cs_raw(cs, &b, sizeof(b));
}

static int wave_walk(struct accel_dev *dev, struct accel_cmdstream *cs, const struct vx_job *j, unsigned k, uint32_t cnt,
		     const struct vx_chunk *proto)
{
	uint32_t rows = dev->caps.rows, idx[4] = { 0, 0, 0, 0 };
	uint64_t w = 0;
	unsigned A = TNPU_CMD_F_ASYNC;

	for (;;) {
		uint32_t planes = ACCEL_MIN((uint64_t)rows * cnt, (uint64_t)j->n[k] - idx[k]);
		uint32_t nrow = (uint32_t)ACCEL_DIV_UP(planes, cnt), lo[4];
		unsigned half = (unsigned)(w % 2);

		for (unsigned d = 0; d < 4; d++)
			lo[d] = d <= k ? idx[d] : 0;
		if (!w && j->prologue)
			cs_raw(cs, j->prologue, j->prologue_len);
		if (w >= 2)
			cs_sem(cs, false, A, TNPU_ENGINE_LOAD, SEM_FREE, 1);
		for (unsigned n = 0; n < j->n_in; n++)
			wave_dma(cs, true, A, &j->in[n], lo, proto->sz, &proto->in[n], k, cnt, planes, half);
		cs_sem(cs, true, A, TNPU_ENGINE_LOAD, SEM_FULL, 1);
		cs_sem(cs, false, A, TNPU_ENGINE_COMPUTE, SEM_FULL, 1);
		for (uint32_t r = 0; r < nrow; r++) {
			struct vx_chunk c = *proto;

			c.lo[k] = idx[k] + r * cnt;
			for (unsigned d = 0; d < k; d++)
				c.lo[d] = idx[d];
			c.sz[k] = ACCEL_MIN(cnt, j->n[k] - c.lo[k]);
			c.row = r;
			c.half = half;
			(j->emit ? j->emit : default_emit)(cs, j, &c, A);
		}
		cs_sem(cs, true, A, TNPU_ENGINE_COMPUTE, SEM_DONE, 1);
		cs_sem(cs, false, A, TNPU_ENGINE_STORE, SEM_DONE, 1);
		wave_dma(cs, false, A, &j->out, lo, proto->sz, &proto->out, k, cnt, planes, half);
		cs_sem(cs, true, A, TNPU_ENGINE_STORE, SEM_FREE, 1);
		w++;
		idx[k] += planes;
		if (idx[k] >= j->n[k]) {
			int d = (int)k - 1;

			idx[k] = 0;
			while (d >= 0 && ++idx[d] >= j->n[d])
				idx[d--] = 0;
			if (d < 0)
				break;
		}
		if (cs_segment_len(cs) > dev->caps.max_cmdbuf / 2) {
			cs_cut(cs);
			w = 0;
		}
		if (cs->err)
			break;
	}
	if (cs->err)
		return accel_seterr(dev, cs->err, "command stream: out of memory");
	return 0;
}

int vx_lower(struct accel_dev *dev, struct accel_cmdstream *cs, struct vx_job *j)
{
	uint32_t half = dev->caps.sram_bytes / 2, rows = dev->caps.rows;
	uint64_t taps = 1, i = 0;
	unsigned k;
	uint32_t cnt = 0;
	uint32_t idx[4] = { 0, 0, 0, 0 };
	int ret = vx_need(dev, "vector-unit operation");

	if (ret)
		return ret;
	normalise(j);
	if (j->tmpl.op == TNPU_VEC_REDUCE)
		taps = j->tmpl.win.red.red_len;
	/* outermost level whose unit fits, from the first dim with more than one index (so the work can
	 * be spread over the rows); keep_last: never split dim 3 */
	for (k = 0; k < (j->keep_last ? 2u : 3u) && j->n[k] == 1; k++)
		;
	for (; k < 4; k++) {
		if (j->keep_last && k == 3)
			break;
		if (chunk_bytes(j, k, 1) <= half && chunk_elems(j, k, 1) * taps <= TNPU_VEC_MAX_WORK)
			break;
	}
	if (k == 4 || (j->keep_last && k == 3))
		return accel_seterr(dev, -E2BIG, "vector-unit operation: one %s does not fit a storage-unit half (%u bytes)",
				    j->keep_last ? "row" : "element", half);
	/* as many units along k as fit (binary search on the monotone byte count) */
	{
		uint32_t lo = 1, hi = j->n[k];

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo + 1) / 2;

			if (chunk_bytes(j, k, mid) <= half && chunk_elems(j, k, mid) <= TNPU_VEC_MAX_ELEMS &&
			    chunk_elems(j, k, mid) * taps <= TNPU_VEC_MAX_WORK)
				lo = mid;
			else
				hi = mid - 1;
		}
		cnt = lo;
	}
	/* at least two chunks per row when there is enough work: every row's vector unit works and
	 * each row's loads overlap its neighbours' compute */
	if (k == 0 || j->n[0] * j->n[1] * j->n[2] * (uint64_t)j->n[3] >= 4096ull * rows) {
		uint64_t outer = 1;

		for (unsigned d = 0; d < k; d++)
			outer *= j->n[d];
		if (outer * ACCEL_DIV_UP(j->n[k], cnt) < 2ull * rows)
			cnt = ACCEL_MAX(1u, (uint32_t)ACCEL_MIN((uint64_t)cnt, ACCEL_DIV_UP(j->n[k] * outer, 2ull * rows)));
	}
	/* all rows' chunks of a wave in one DMA_BANDS per operand when every operand allows it */
	if ((dev->caps.features & TNPU_FEAT_DEPTHWISE) && rows > 1) {
		struct vx_chunk proto;
		uint32_t off = 0;
		bool ok;

		memset(&proto, 0, sizeof(proto));
		for (unsigned d = 0; d < 4; d++)
			proto.sz[d] = d < k ? 1 : (d == k ? cnt : j->n[d]);
		off = al64(vx_place_box(&j->out, proto.sz, 0, &proto.out));
		for (unsigned n = 0; n < j->n_in; n++)
			off += al64(vx_place_box(&j->in[n], proto.sz, off, &proto.in[n]));
		proto.scratch = off;
		ok = wave_opnd_ok(&j->out, proto.sz, &proto.out, k);
		for (unsigned n = 0; n < j->n_in && ok; n++)
			ok = wave_opnd_ok(&j->in[n], proto.sz, &proto.in[n], k);
		if (ok)
			return wave_walk(dev, cs, j, k, cnt, &proto);
	}
	/* walk the chunks: idx[0..k-1] fixed, idx[k] steps by cnt */
	for (;;) {
		struct vx_chunk c;
		uint32_t off = 0;
		uint64_t units = 1;
		uint64_t seg_i = i;	/* chunk number inside the current hardware job */
		unsigned A = TNPU_CMD_F_ASYNC;

		memset(&c, 0, sizeof(c));
		for (unsigned d = 0; d < 4; d++) {
			c.lo[d] = d <= k ? idx[d] : 0;
			c.sz[d] = d < k ? 1 : (d == k ? ACCEL_MIN(cnt, j->n[k] - idx[k]) : j->n[d]);
		}
		c.row = (unsigned)(seg_i % rows);
		c.half = (unsigned)((seg_i / rows) % 2);
		off = al64(vx_place_box(&j->out, c.sz, off, &c.out)) + off;
		for (unsigned n = 0; n < j->n_in; n++)
			off += al64(vx_place_box(&j->in[n], c.sz, off, &c.in[n]));
		c.scratch = off;
		for (unsigned d = 0; d < 3; d++)
			units *= c.sz[d];
		(void)units;
		if (!seg_i && j->prologue)
			cs_raw(cs, j->prologue, j->prologue_len);
		/* load */
		if (seg_i >= 2ull * rows)
			cs_sem(cs, false, A, TNPU_ENGINE_LOAD, SEM_FREE, 1);
		for (unsigned n = 0; n < j->n_in; n++)
			vx_dma_box(cs, true, A, &j->in[n], c.lo, c.sz, &c.in[n], c.row, c.half);
		cs_sem(cs, true, A, TNPU_ENGINE_LOAD, SEM_FULL, 1);
		/* compute */
		cs_sem(cs, false, A, TNPU_ENGINE_COMPUTE, SEM_FULL, 1);
		(j->emit ? j->emit : default_emit)(cs, j, &c, A);
		cs_sem(cs, true, A, TNPU_ENGINE_COMPUTE, SEM_DONE, 1);
		/* store */
		cs_sem(cs, false, A, TNPU_ENGINE_STORE, SEM_DONE, 1);
		vx_dma_box(cs, false, A, &j->out, c.lo, c.sz, &c.out, c.row, c.half);
		cs_sem(cs, true, A, TNPU_ENGINE_STORE, SEM_FREE, 1);
		i++;
		/* next chunk */
		idx[k] += cnt;
		if (idx[k] >= j->n[k]) {
			int d = (int)k - 1;

			idx[k] = 0;
			while (d >= 0 && ++idx[d] >= j->n[d])
				idx[d--] = 0;
			if (d < 0)
				break;
		}
		/* a new hardware job well before the command-buffer limit (semaphores restart) */
		if (cs_segment_len(cs) > dev->caps.max_cmdbuf / 2) {
			cs_cut(cs);
			i = 0;
		}
		if (cs->err)
			break;
	}
	if (cs->err)
		return accel_seterr(dev, cs->err, "command stream: out of memory");
	return 0;
}
