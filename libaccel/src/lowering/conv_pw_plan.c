// SPDX-License-Identifier: MIT
/*
 * conv_pw_plan.c - the pointwise lowering's plan search: the channel mapping, flat and row modes, the
 * remainder, each candidate costed by the replay (conv_pw_sim.c).
 */
#include "conv_pw_int.h"

/* ---- planning ---- */

/* The parts of a plan that do not depend on the pixel tiling: mapping, channel tiles, weights. */
bool pw_chan(const struct pwg *g, bool over_n, unsigned map, uint32_t tn, struct pwp *d)
{
	memset(d, 0, sizeof(*d));
	d->over_n = over_n;
	d->cl_pix = map & 1;
	d->pe_pix = map & 2;
	d->gp = (d->cl_pix ? g->cols : 1) * (d->pe_pix ? g->pes : 1);
	d->gch = g->cols * g->pes / d->gp;
	d->tn = tn;
	d->kr = over_n ? (uint32_t)cdiv(g->K, g->rows) : g->K;
	d->nct = (uint32_t)cdiv(d->kr, (uint64_t)d->gch * tn);
	d->ku = d->nct * d->gch * tn;
	d->w_off = 0;
	d->b_off = al64((uint64_t)d->ku * g_wrow(g));
	d->in_off[0] = al64((uint64_t)d->b_off + (uint64_t)d->ku * (g->colb ? g->colb : 4));
	d->qw = pw_row_elems(d->kr, g_wrow(g));
	return d->ku <= 65535;
}

/* The rest of the plan once the pixel tiling is set (sg, T, tm, row geometry), and its replay unless
 * its MACs, SFU and ST alone already exceed `bound` (most candidates: the replay is the planner's cost;
 * est is then infinite). */
static bool pw_finish(const struct pwg *g, struct pwp *d, uint64_t in_bytes, uint64_t out_pix, double bound)
{
	uint64_t sub = (uint64_t)d->gp * d->tm;

	if (!d->tm || (uint64_t)d->tm * d->tn > g->acc || d->tm > 65535 || !d->T || d->T > PW_MAX_SUB)
		return false;
	d->spe = ACCEL_MIN(d->T, TNPU_NUM_ACCS);
	d->out_off[0] = d->in_off[0] + al64(in_bytes);
	d->in_off[1] = d->one_half ? d->out_off[0] + al64(out_pix * d->ku * g->oe) : d->in_off[0];
	d->out_off[1] = d->one_half ? d->in_off[1] + al64(in_bytes) : d->out_off[0];
	if ((uint64_t)d->out_off[1] + out_pix * d->ku * g->oe > g->half)
		return false;
	/* row mode: whole fractions of an output row (every segment's unit share is a multiple) */
	d->qo = d->over_n || d->ku != g->K ? 1 : pw_row_elems(g->rowm ? g->OW : d->sg, (uint64_t)g->K * g->oe);
	if (d->sg / d->qo > 4 * PW_MAX_ROWS_PER_BAND)
		return false;
	/* the first EXE's data first: its first sub-tile's pixels, its channel tile's weights (EXEs run the
	 * channel tiles of a pixel group in turn) */
	if (!g->rowm) {
		d->qi = pw_row_elems(d->sg, (uint64_t)g->C * g->e);
		if (d->sg / d->qi > PW_MAX_ROWS_PER_BAND)
			return false;
		d->in0 = (uint32_t)ACCEL_MIN(cdiv(sub, d->qi) * d->qi, d->sg);
	}
	d->w0 = (uint32_t)ACCEL_MIN(cdiv((uint64_t)d->gch * d->tn, d->qw) * d->qw, d->kr);
	d->res0 = (uint32_t)ACCEL_MIN(cdiv(sub, d->qo) * d->qo, d->sg);
	/* host reads (issue #6: at most 1.1 x the footprint, input + weights): every half used holds its
	 * own copy of the weights and records; row mode reads the halo rows of each segment again */
	d->h2d = (uint64_t)(d->one_half ? 1 : ACCEL_MIN(d->nseg, 2)) * g->K * (g_wrow(g) + g->colb);
	if (g->rowm) {	/* every image has the same nsi segments */
		for (uint32_t s = 0; s < d->nsi; s++) {
			struct pw_seg sg = seg_at(g, d, s);
			int64_t r0 = ACCEL_MAX((int64_t)sg.y0 * g->sy - g->pt, 0);
			int64_t r1 = ACCEL_MIN((int64_t)(sg.y0 + sg.nrows - 1) * g->sy - g->pt + (g->R - 1) * g->dy + 1, g->H);

			d->h2d += r1 > r0 ? (uint64_t)g->N * (uint64_t)(r1 - r0) * g->cin * g->C * g->e : 0;
		}
	} else {	/* the segments tile the M pixels */
		d->h2d += (uint64_t)g->M * g->C * g->e;
	}
	if (d->h2d * 10 > ((g->rowm ? (uint64_t)g->N * g->H * g->W : g->M) * g->C * g->e + g->K * g_wrow(g)) * 11 +
				  20ull * g->K * g->colb)
		return false;
	if (g->res)	/* read once, as the output is written once */
		d->h2d += (uint64_t)(g->rowm ? g->N * g->OH * g->OW : g->M) * g->K * g->oe;
	{
		uint64_t per = g_taps(g) * cdiv((uint64_t)d->tm * d->tn * g_cpt(g), g->rate) +
			       cdiv((uint64_t)d->tm * d->tn, g->sfu ? TNPU_RATE_SFU : TNPU_RATE_OQ) +
			       cdiv((uint64_t)d->tm * d->tn * g->oe * g->pes, TNPU_RATE_ST), lb = TNPU_CYC_JOB;

		if (g->rowm)	/* per image, as above */
			for (uint32_t s = 0; s < d->nsi; s++)
				lb += (uint64_t)g->N * seg_at(g, d, s).T * d->nct * per;
		else
			lb += (uint64_t)d->nseg * d->T * d->nct * per;
		if ((double)lb > bound) {
			d->est = 1e300;	/* a valid plan, not worth replaying (a remainder may still be) */
			return true;
		}
	}
	d->est = pw_sim(g, d);
	return true;
}

/* Flat mode: T sub-tiles of gp * tm pixels per unit and segment. */
static bool pw_try_flat(const struct pwg *g, struct pwp *d, uint32_t T, double bound)
{
	uint64_t pix_b = (uint64_t)g->C * g->e + (uint64_t)d->ku * g->oe, cap, mu, sub, nb = d->one_half ? 2 : 1;

	if ((uint64_t)d->in_off[0] + 256 + nb * pix_b > g->half)
		return false;
	cap = (g->half - d->in_off[0] - 256) / (nb * pix_b);
	mu = d->over_n ? g->M : cdiv(g->M, g->rows);
	d->nseg = (uint32_t)cdiv(mu, cap);
	d->sg = (uint32_t)cdiv(mu, d->nseg);
	d->T = T;
	d->tm = (uint32_t)cdiv(d->sg, (uint64_t)d->gp * T);
	sub = (uint64_t)d->gp * d->tm;
	if (!d->tm || (uint64_t)(T - 1) * sub >= d->sg)
		return false;	/* an empty last sub-tile: fewer sub-tiles do the same */
	if (nb * T * sub * pix_b + d->in_off[0] + 256 > g->half)
		return false;	/* the sub-tiles' rounding does not fit: more segments would */
	if (d->one_half && d->nseg == 1)
		return false;	/* the same plan as with two halves */
	return pw_finish(g, d, (uint64_t)T * sub * g->C * g->e, (uint64_t)T * sub, bound);
}

/* Plan d with its last sub-tile replaced by a remainder of mapping rmap (flat, units on channel
 * blocks, one segment: the remainder's output leaves by its own axis-X band). */
static bool pw_try_rem(const struct pwg *g, const struct pwp *d, unsigned rmap, double bound, struct pwp *r)
{
	uint32_t gp, gch, rpix;
	uint64_t end;

	if (g->rowm || !d->over_n || d->nseg != 1 || d->T < 2)
		return false;
	rpix = d->sg - (d->T - 1) * d->gp * d->tm;
	*r = *d;
	r->rem = true;
	r->rcl = rmap & 1;
	r->rpe = rmap & 2;
	gp = (r->rcl ? g->cols : 1) * (r->rpe ? g->pes : 1);
	gch = g->cols * g->pes / gp;
	r->rpix = rpix;
	r->rtm = (uint32_t)cdiv(rpix, gp);
	r->rtn = (uint32_t)cdiv(d->kr, gch);
	r->rku = gch * r->rtn;
	if ((uint64_t)r->rtm * r->rtn > g->acc || (uint64_t)gp * r->rtm >= (uint64_t)d->gp * d->tm || r->rku > 65535)
		return false;	/* no fewer pixel slots than the sub-tile it replaces */
	r->rem_off = al64((uint64_t)d->out_off[1] + (uint64_t)(d->T * d->gp * d->tm) * d->ku * g->oe);
	end = (uint64_t)r->rem_off + (uint64_t)gp * r->rtm * r->rku * g->oe;
	if (end > g->half)
		return false;
	r->est = pw_sim(g, r);
	return r->est <= bound;
}

/* Row mode: x chunks of OW / xch pixels and nsi segments per image (their rows must fit a half). */
static bool pw_try_rows(const struct pwg *g, struct pwp *d, uint32_t xch, uint32_t nsi, double bound)
{
	uint32_t units = d->over_n ? 1 : g->rows, ru = (uint32_t)cdiv(g->OH, (uint64_t)units * nsi);
	uint32_t rg = (uint32_t)cdiv(ru, d->gp);
	uint64_t in_b = (uint64_t)g_band_rows(g, rg * d->gp) * g_prow(g), out_pix = (uint64_t)rg * d->gp * g->OW;

	if (g->OW % xch || d->in_off[0] + (d->one_half ? 2 : 1) * (al64(in_b) + al64(out_pix * d->ku * g->oe)) > g->half)
		return false;
	d->xch = xch;
	d->tm = g->OW / xch;
	d->ru = ru;
	d->nsi = (uint32_t)cdiv(g->OH, (uint64_t)units * ru);
	if (d->nsi != nsi)
		return false;	/* the same rows per unit as fewer segments */
	d->br = g_band_rows(g, ru);
	d->sg = ru * g->OW;
	d->T = rg * xch;
	d->nseg = g->N * d->nsi;
	if (d->one_half && d->nseg == 1)
		return false;	/* the same plan as with two halves */
	return pw_finish(g, d, in_b, out_pix, bound);
}

/* Pass 0 finds the fastest replay; pass 1 takes, among the plans within 1 % of it, the one that reads
 * the fewest host bytes (more segments can save a few cycles by idling fewer rows, but read their halo
 * rows again). */
static void pw_keep(const struct pwp *d, unsigned pass, double fastest, struct pwp *best, bool *found)
{
	if (pass == 0) {
		if (!*found || d->est < best->est)
			*best = *d;
	} else if (d->est <= fastest * 1.01 &&
		   (!*found || d->h2d < best->h2d || (d->h2d == best->h2d && d->est < best->est))) {
		*best = *d;
	} else {
		return;
	}
	*found = true;
}

bool pw_plan(const struct pwg *g, struct pwp *best)
{
	bool found = false;
	double fastest = 0, bound = 1e300;

	for (unsigned pass = 0; pass < 2; pass++) {
		if (pass) {
			if (!found)
				return false;
			fastest = best->est;
			bound = fastest * 1.01;
			found = false;
		}
		for (unsigned over_n = 0; over_n < (g->rows > 1 ? 2u : 1u); over_n++) {
			uint32_t kr = over_n ? (uint32_t)cdiv(g->K, g->rows) : g->K;
			uint64_t mu = over_n ? g->M : cdiv(g->M, g->rows);

			if (over_n && (uint64_t)(g->rows - 1) * kr >= g->K)
				continue;	/* a unit without channels */
			for (unsigned map = 0; map < 4; map++) {
				uint32_t gp = (map & 1 ? g->cols : 1) * (map & 2 ? g->pes : 1);
				uint32_t gch = g->cols * g->pes / gp;

				for (uint32_t tn = 1; tn <= ACCEL_MIN(g->acc, (uint32_t)cdiv(kr, gch)); tn++) {
					uint32_t nct = (uint32_t)cdiv(kr, (uint64_t)gch * tn), tmax = g->acc / tn, t0;
					struct pwp base, d;

					/* at most 1/8 of the MACs on padding channels, no smaller tn with the same nct */
					if ((uint64_t)nct * gch * tn * 8 > (uint64_t)kr * 9 ||
					    (tn > 1 && cdiv(kr, (uint64_t)gch * (tn - 1)) == nct))
						continue;
					if (!pw_chan(g, over_n, map, tn, &base))
						continue;
					for (unsigned oh = 0; oh < 2; oh++) {
						base.one_half = oh;
						if (g->rowm) {
							/* the fewest segments that fit, and a few more (fewer idle rows) */
							for (uint32_t xch = 1; xch <= g->OW && xch <= 8; xch++) {
								uint32_t tried = 0;

								for (uint32_t nsi = 1; nsi <= g->OH && tried < 6; nsi++) {
									d = base;
									if (g->OW / xch > tmax || !pw_try_rows(g, &d, xch, nsi, bound))
										continue;
									tried++;
									if (d.est > bound)
										continue;
									pw_keep(&d, pass, fastest, best, &found);
									bound = pass ? fastest * 1.01 : best->est;
								}
							}
							continue;
						}
						t0 = (uint32_t)ACCEL_MAX(1, cdiv(mu, (uint64_t)gp * tmax));
						for (uint32_t T = t0; T <= t0 + 24 && T <= PW_MAX_SUB; T++) {
							struct pwp rd;

							d = base;
							if (!pw_try_flat(g, &d, T, bound))
								continue;
							if (d.est <= bound) {
								pw_keep(&d, pass, fastest, best, &found);
								bound = pass ? fastest * 1.01 : best->est;
							}
							for (unsigned rmap = 0; rmap < 4; rmap++) {
								if (!pw_try_rem(g, &d, rmap, bound, &rd))
									continue;
								pw_keep(&rd, pass, fastest, best, &found);
								bound = pass ? fastest * 1.01 : best->est;
							}
						}
					}
				}
			}
		}
	}
	return found;
}
