/* SPDX-License-Identifier: MIT */
/*
 * cmdstream.c - command-stream builder (commands.md): raw appends used by the lowering and the
 * public accel_cs_* API.  A stream may be cut into segments; each segment is submitted as its own
 * hardware command buffer (jobs start from a clean device state, so a segment must be complete).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "packet.h"
#include "tnpu/tnpu_hw.h"

void cs_init(struct accel_cmdstream *cs, struct accel_dev *dev)
{
	memset(cs, 0, sizeof(*cs));
	cs->dev = dev;
}

int cs_report(struct accel_cmdstream *cs)
{
	if (!cs->err)
		return 0;
	if (cs->err == -ENOMEM || !cs->msg[0])
		return accel_seterr(cs->dev, cs->err, "out of memory while building the command stream");
	return accel_seterr(cs->dev, cs->err, "%s", cs->msg);
}

void cs_fini(struct accel_cmdstream *cs)
{
	free(cs->buf);
	free(cs->bos);
	free(cs->cuts);
	memset(cs, 0, sizeof(*cs));
}

void cs_raw(struct accel_cmdstream *cs, const void *p, size_t n)
{
	if (cs->err)
		return;
	if (cs->len + n > cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 8192;
		uint8_t *nb;

		while (cap < cs->len + n)
			cap *= 2;
		nb = realloc(cs->buf, cap);
		if (!nb) {
			cs->err = -ENOMEM;
			return;
		}
		cs->buf = nb;
		cs->cap = cap;
	}
	memcpy(cs->buf + cs->len, p, n);
	cs->len += n;
}

void cs_use(struct accel_cmdstream *cs, struct accel_buffer *buf)
{
	if (!buf || cs->err)
		return;
	for (unsigned i = 0; i < cs->n_bos; i++)
		if (cs->bos[i] == buf)
			return;
	if (cs->n_bos == cs->cap_bos) {
		unsigned cap = cs->cap_bos ? cs->cap_bos * 2 : 8;
		struct accel_buffer **nb = realloc(cs->bos, cap * sizeof(*nb));

		if (!nb) {
			cs->err = -ENOMEM;
			return;
		}
		cs->bos = nb;
		cs->cap_bos = cap;
	}
	cs->bos[cs->n_bos++] = buf;
}

void cs_cut(struct accel_cmdstream *cs)
{
	size_t start = cs->n_cuts ? cs->cuts[cs->n_cuts - 1] : 0;

	if (cs->err || cs->len == start)
		return;
	if (cs->n_cuts == cs->cap_cuts) {
		unsigned cap = cs->cap_cuts ? cs->cap_cuts * 2 : 8;
		size_t *nc = realloc(cs->cuts, cap * sizeof(*nc));

		if (!nc) {
			cs->err = -ENOMEM;
			return;
		}
		cs->cuts = nc;
		cs->cap_cuts = cap;
	}
	cs->cuts[cs->n_cuts++] = cs->len;
}

size_t cs_segment_len(const struct accel_cmdstream *cs)
{
	return cs->len - (cs->n_cuts ? cs->cuts[cs->n_cuts - 1] : 0);
}

static struct tnpu_cmd_hdr hdr(uint8_t op, unsigned flags, uint32_t size)
{
	struct tnpu_cmd_hdr h = { .opcode = op, .flags = (uint8_t)flags, .size = size };

	return h;
}

void cs_dma(struct accel_cmdstream *cs, bool h2d, unsigned flags, uint64_t va, uint64_t py, uint64_t pz,
	    unsigned row, unsigned half, uint32_t off, uint32_t spy, uint32_t spz, uint32_t width, uint32_t height,
	    uint32_t depth)
{
	struct tnpu_cmd_dma d = {
		.hdr = hdr(h2d ? TNPU_CMD_DMA_H2D : TNPU_CMD_DMA_D2H, flags, sizeof(d)),
		.host_va = va, .host_pitch_y = py, .host_pitch_z = pz,
		.sram_off = off, .sram_pitch_y = spy, .sram_pitch_z = spz,
		.width = width, .height = height, .depth = depth, .row = (uint8_t)row, .half = (uint8_t)half,
	};

	cs_raw(cs, &d, sizeof(d));
}

void cs_im2col_raw(struct accel_cmdstream *cs, unsigned flags, const void *hwdesc)
{
	struct tnpu_cmd_im2col x;

	memcpy(&x, hwdesc, sizeof(x));
	x.hdr = hdr(TNPU_CMD_IM2COL, flags, sizeof(x));
	cs_raw(cs, &x, sizeof(x));
}

void cs_dispatch(struct accel_cmdstream *cs, unsigned flags, unsigned row, unsigned half, unsigned dflags,
		 const void *pkt, uint32_t len)
{
	static const uint8_t zero[8];
	uint32_t padded = (len + 7) & ~7u;
	struct tnpu_cmd_dispatch d = {
		.hdr = hdr(TNPU_CMD_DISPATCH, flags, 16 + padded),
		.row = (uint8_t)row, .half = (uint8_t)half, .dflags = (uint8_t)dflags, .packet_len = len,
	};

	cs_raw(cs, &d, sizeof(d));
	cs_raw(cs, pkt, len);
	cs_raw(cs, zero, padded - len);
}

void cs_sem(struct accel_cmdstream *cs, bool signal, unsigned flags, unsigned engine, unsigned sem, unsigned count)
{
	struct tnpu_cmd_sem c = {
		.hdr = hdr(signal ? TNPU_CMD_SEM_SIGNAL : TNPU_CMD_SEM_WAIT, flags, sizeof(c)),
		.engine = (uint8_t)engine, .sem = (uint8_t)sem, .count = count,
	};

	cs_raw(cs, &c, sizeof(c));
}

/* ---- public builder ------------------------------------------------------------------------ */

int accel_cs_new(struct accel_dev *dev, struct accel_cmdstream **out)
{
	struct accel_cmdstream *cs;

	if (!out)
		return accel_seterr(dev, -EINVAL, "accel_cs_new: out is NULL");
	*out = NULL;
	if (!dev)
		return -EINVAL;
	cs = malloc(sizeof(*cs));
	if (!cs)
		return accel_seterr(dev, -ENOMEM, "out of memory");
	cs_init(cs, dev);
	accel_obj_add(&dev->objs, &cs->link, ACCEL_OBJ_CS);
	*out = cs;
	return 0;
}

void accel_cs_free(struct accel_cmdstream *cs)
{
	if (!cs)
		return;
	accel_obj_del(&cs->link);
	cs_fini(cs);
	free(cs);
}

size_t accel_cs_size(const struct accel_cmdstream *cs)
{
	return cs ? cs->len : 0;
}

static int check_flags(struct accel_cmdstream *cs, unsigned flags)
{
	_Static_assert(ACCEL_CMD_ASYNC == TNPU_CMD_F_ASYNC && ACCEL_CMD_PREEMPT_POINT == TNPU_CMD_F_PREEMPT,
		       "command flags are the header's");
	if (flags & ~(ACCEL_CMD_ASYNC | ACCEL_CMD_PREEMPT_POINT))
		return accel_seterr(cs->dev, -EINVAL,
				    "command flags 0x%x: only ACCEL_CMD_ASYNC and ACCEL_CMD_PREEMPT_POINT are defined",
				    flags);
	if ((flags & ACCEL_CMD_PREEMPT_POINT) && !(cs->dev->caps.features & TNPU_FEAT_PREEMPT))
		return accel_seterr(cs->dev, -EOPNOTSUPP,
				    "ACCEL_CMD_PREEMPT_POINT: the device has no preemption (CAP_FEATURES bit 24)");
	return cs->err;
}

static int cs_dma_pub(struct accel_cmdstream *cs, bool h2d, unsigned flags, const struct accel_dma *d)
{
	struct accel_dev *dev;
	int ret;

	if (!cs)
		return -EINVAL;
	if (!d)
		return accel_seterr(cs->dev, -EINVAL, "command stream: descriptor is NULL");
	dev = cs->dev;
	ret = check_flags(cs, flags);
	if (ret)
		return ret;
	if (!d->width || !d->height || !d->depth)
		return accel_seterr(dev, -EINVAL, "DMA width/height/depth must be >= 1");
	if (d->row >= dev->caps.rows && !(h2d && d->row == ACCEL_ROW_ALL))
		return accel_seterr(dev, -EINVAL, "DMA row %u out of range (rows %u)", d->row, dev->caps.rows);
	if (d->half > 1)
		return accel_seterr(dev, -EINVAL, "DMA half must be 0 or 1");
	if ((uint64_t)d->sram_off + (uint64_t)(d->depth - 1) * d->sram_pitch_z +
	    (uint64_t)(d->height - 1) * d->sram_pitch_y + d->width > dev->caps.sram_bytes / 2)
		return accel_seterr(dev, -ERANGE, "DMA exceeds the storage-unit half (%u bytes)",
				    dev->caps.sram_bytes / 2);
	if (d->fill) {
		struct tnpu_cmd_dma x = {
			.hdr = { .opcode = TNPU_CMD_DMA_H2D, .flags = (uint8_t)flags, .size = sizeof(x) },
			.sram_off = d->sram_off, .sram_pitch_y = d->sram_pitch_y, .sram_pitch_z = d->sram_pitch_z,
			.width = d->width, .height = d->height, .depth = d->depth, .row = d->row, .half = d->half,
			.dma_flags = TNPU_DMA_F_FILL, .fill = d->fill_byte,
		};

		if (!h2d)
			return accel_seterr(dev, -EINVAL, "DMA fill is only valid for host-to-device");
		cs_raw(cs, &x, sizeof(x));
		return cs->err;
	}
	if (!d->buf || d->buf->dev != dev)
		return accel_seterr(dev, -EINVAL, "DMA needs a buffer of this device");
	{
		uint64_t last = d->offset + (uint64_t)(d->depth - 1) * d->pitch_z + (uint64_t)(d->height - 1) * d->pitch_y +
				d->width;

		if (last > d->buf->size)
			return accel_seterr(dev, -ERANGE, "DMA reads/writes past the end of its buffer");
	}
	cs_use(cs, d->buf);
	cs_dma(cs, h2d, flags, d->buf->va + d->offset, d->pitch_y, d->pitch_z, d->row, d->half, d->sram_off,
	       d->sram_pitch_y, d->sram_pitch_z, d->width, d->height, d->depth);
	return cs->err;
}

int accel_cs_dma_h2d(struct accel_cmdstream *cs, unsigned flags, const struct accel_dma *d)
{
	return cs_dma_pub(cs, true, flags, d);
}

int accel_cs_dma_d2h(struct accel_cmdstream *cs, unsigned flags, const struct accel_dma *d)
{
	return cs_dma_pub(cs, false, flags, d);
}

int accel_cs_im2col(struct accel_cmdstream *cs, unsigned flags, const struct accel_im2col *d)
{
	struct tnpu_cmd_im2col x;
	int ret;

	if (!cs)
		return -EINVAL;
	if (!d)
		return accel_seterr(cs->dev, -EINVAL, "command stream: descriptor is NULL");
	ret = check_flags(cs, flags);
	if (ret)
		return ret;
	if (!d->buf || d->buf->dev != cs->dev)
		return accel_seterr(cs->dev, -EINVAL, "IM2COL needs an input buffer of this device");
	if (d->dtype != ACCEL_INT8 && d->dtype != ACCEL_FP32)
		return accel_seterr(cs->dev, -EINVAL, "IM2COL dtype must be INT8 or FP32");
	memset(&x, 0, sizeof(x));
	x.src_va = d->buf->va + d->offset;
	x.stride_n = d->stride_n;
	x.stride_c = d->stride_c;
	x.stride_h = d->stride_h;
	x.stride_w = d->stride_w;
	x.n = d->n; x.h = d->h; x.w = d->w; x.c = d->c; x.r = d->r; x.s = d->s; x.oh = d->oh; x.ow = d->ow;
	x.stride_y = d->stride_y; x.stride_x = d->stride_x; x.dil_y = d->dil_y; x.dil_x = d->dil_x;
	x.pad_top = d->pad_top; x.pad_left = d->pad_left;
	x.layout = d->nchw ? TNPU_LAYOUT_NCHW : TNPU_LAYOUT_NHWC;
	x.dtype = d->dtype;
	x.pad_value = d->pad_value;
	x.m0 = d->m0; x.mt = d->mt; x.k0 = d->k0; x.kt = d->kt;
	x.sram_off = d->sram_off; x.sram_pitch = d->sram_pitch; x.row = d->row; x.half = d->half;
	cs_use(cs, d->buf);
	cs_im2col_raw(cs, flags, &x);
	return cs->err;
}

int accel_cs_config(struct accel_cmdstream *cs, unsigned flags, unsigned row, unsigned ibuf,
		    const struct accel_program *p)
{
	struct pkt pk;
	int ret;

	if (!cs)
		return -EINVAL;
	if (!p)
		return accel_seterr(cs->dev, -EINVAL, "accel_cs_config: program is NULL");
	ret = check_flags(cs, flags);
	if (ret)
		return ret;
	if (row >= cs->dev->caps.rows && row != ACCEL_ROW_ALL)
		return accel_seterr(cs->dev, -EINVAL, "CONFIG row %u out of range", row);
	ret = accel_program_pkt(p, ibuf, &pk);
	if (ret < 0)
		return accel_seterr(cs->dev, ret, "CONFIG: invalid program or buffer id %u", ibuf);
	pkt_dispatch(cs, &pk, flags, row, 0, 0);
	return cs->err ? cs_report(cs) : 0;
}

int accel_cs_exe(struct accel_cmdstream *cs, unsigned flags, unsigned row, unsigned half, unsigned ibuf,
		 unsigned exe_flags, const struct accel_patch *patches, unsigned n_patches)
{
	struct pkt pk;

	if (!cs)
		return -EINVAL;
	if (check_flags(cs, flags))
		return check_flags(cs, flags);
	if (row >= cs->dev->caps.rows && row != ACCEL_ROW_ALL)
		return accel_seterr(cs->dev, -EINVAL, "EXE row %u out of range", row);
	if (half > 1 || ibuf >= TNPU_NUM_IBUFS)
		return accel_seterr(cs->dev, -EINVAL, "EXE half %u / buffer %u out of range", half, ibuf);
	if (exe_flags & ~(unsigned)(ACCEL_EXE_SHIFT_OUT | ACCEL_EXE_LAST | ACCEL_EXE_RF_RESTORE))
		return accel_seterr(cs->dev, -EINVAL, "EXE flags 0x%x invalid", exe_flags);
	if (n_patches > 16 || (n_patches && !patches))
		return accel_seterr(cs->dev, -EINVAL, "EXE: at most 16 patches");
	exe_begin(&pk, ibuf, exe_flags & (ACCEL_EXE_SHIFT_OUT | ACCEL_EXE_LAST));
	for (unsigned i = 0; i < n_patches; i++) {
		if (patches[i].rf >= 16 || patches[i].field > 3)
			return accel_seterr(cs->dev, -EINVAL, "EXE patch %u: rf/field out of range", i);
		exe_patch_raw(&pk, patches[i].rf, patches[i].field, patches[i].value);
	}
	pkt_dispatch(cs, &pk, flags, row, half, (exe_flags & ACCEL_EXE_RF_RESTORE) ? TNPU_DISPATCH_F_RF_RESTORE : 0);
	return cs->err ? cs_report(cs) : 0;
}

static int cs_sem_pub(struct accel_cmdstream *cs, bool signal, unsigned flags, enum accel_engine e, unsigned sem,
		      unsigned count)
{
	if (!cs)
		return -EINVAL;
	if (check_flags(cs, flags))
		return check_flags(cs, flags);
	if ((unsigned)e > ACCEL_ENGINE_STORE || sem >= TNPU_NUM_SEMS || !count || count > 65535)
		return accel_seterr(cs->dev, -EINVAL, "semaphore: engine %u, sem %u, count %u out of range",
				    (unsigned)e, sem, count);
	cs_sem(cs, signal, flags, e, sem, count);
	return cs->err;
}

int accel_cs_sem_signal(struct accel_cmdstream *cs, unsigned flags, enum accel_engine e, unsigned sem,
			unsigned count)
{
	return cs_sem_pub(cs, true, flags, e, sem, count);
}

int accel_cs_sem_wait(struct accel_cmdstream *cs, unsigned flags, enum accel_engine e, unsigned sem,
		      unsigned count)
{
	return cs_sem_pub(cs, false, flags, e, sem, count);
}

int accel_cs_fence(struct accel_cmdstream *cs, struct accel_buffer *buf, uint64_t offset, uint64_t value)
{
	struct tnpu_cmd_fence f = { .hdr = { .opcode = TNPU_CMD_FENCE, .size = sizeof(f) }, .value = value };

	if (!cs)
		return -EINVAL;
	if (buf) {
		if (buf->dev != cs->dev || offset % 8 || offset + 8 > buf->size)
			return accel_seterr(cs->dev, -EINVAL, "fence target must be 8 aligned inside the buffer");
		f.va = buf->va + offset;
		cs_use(cs, buf);
	}
	cs_raw(cs, &f, sizeof(f));
	return cs->err;
}

int accel_cs_submit(struct accel_cmdstream *cs, const struct accel_submit *sub, struct accel_job **job)
{
	if (!cs)
		return -EINVAL;
	if (!job)
		return accel_seterr(cs->dev, -EINVAL, "accel_cs_submit: job is NULL (command streams are always asynchronous)");
	return cs_submit(cs, sub, job);
}
