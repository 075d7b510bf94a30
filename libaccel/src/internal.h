/* SPDX-License-Identifier: MIT */
/* internal.h - libaccel internals shared by the sources (not installed). */
#ifndef ACCEL_INTERNAL_H
#define ACCEL_INTERNAL_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "accel.h"

#define ACCEL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define ACCEL_MAX(a, b) ((a) > (b) ? (a) : (b))
#define ACCEL_DIV_UP(a, b) (((a) + (b) - 1) / (b))
#define ACCEL_MAX_COUNTERS 32
#define ACCEL_PAGE 4096u

struct accel_hwjob;

/* Objects created from a device (buffers, jobs, graphs, packed weights, command streams) are linked
 * into one of its lists, so accel_close can wait for the jobs and release what the application did
 * not (device.c). An unlinked node has prev == next == NULL. */
struct accel_link {
	struct accel_link *prev, *next;
	uint8_t kind;		/* enum accel_obj_kind */
};
enum accel_obj_kind { ACCEL_OBJ_BUFFER, ACCEL_OBJ_JOB, ACCEL_OBJ_GRAPH, ACCEL_OBJ_SPARSE, ACCEL_OBJ_CS };
#define accel_container_of(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))
void accel_obj_add(struct accel_link *head, struct accel_link *l, enum accel_obj_kind kind);
void accel_obj_del(struct accel_link *l);

/* One backend: drm (tnpu.ko through libdrm) or sim (golden model in process). */
struct accel_backend_ops {
	const char *name;
	int (*buf_alloc)(struct accel_dev *dev, struct accel_buffer *buf);
	void (*buf_free)(struct accel_dev *dev, struct accel_buffer *buf);
	/* Submit one hardware command buffer; deps are earlier hw jobs (possibly of other jobs). */
	int (*submit)(struct accel_dev *dev, const uint8_t *cmds, size_t len, struct accel_buffer *const *bos,
		      unsigned n_bos, struct accel_hwjob *const *deps, unsigned n_deps, struct accel_hwjob *hw);
	/* 0 done (hw->status/counters valid), -ETIME still running, other errors fatal. */
	int (*wait)(struct accel_dev *dev, struct accel_hwjob *hw, int64_t timeout_ns);
	void (*hw_release)(struct accel_dev *dev, struct accel_hwjob *hw);
	void (*close)(struct accel_dev *dev);
};

struct accel_dev {
	const struct accel_backend_ops *ops;
	void *priv;
	struct accel_caps caps;
	uint8_t conv_mode;	/* sim option conv=auto|im2col|direct (0/1/2): convolution lowering */
	uint8_t dw_off;		/* sim option dw=off: no depthwise block lowering (conv_dw.c) */
	uint8_t dw_map;		/* sim option dw=col|col-kc|ch|ch-kc: 1 + forced mapping (conv_dw.c); 0 auto */
	uint8_t dw_narrow;	/* sim option dw-wide=off: depthwise windows without WIDE multicast (before/after) */
	uint8_t stream_off;	/* sim option stream=off (1): depthwise without STREAM bands; =only (2): only with */
	uint8_t pw_mode;	/* sim option pw=auto|off|on (0/1/2): the pointwise lowering (conv_pw.c) when
				 * faster / never / whenever eligible */
	uint8_t pwdw_off;		/* sim option pwdw=off: accel_conv2d_pwdw always runs two jobs (before/after) */
	uint8_t pwdw_host;	/* sim option pwdw-host=auto|off|on|all (0..3): the fused job's main EXEs host
				 * depthwise iterations when faster / never / in every plan / in plans of one
				 * sub-tile per EXE, as soon as the rows are stored (tests; conv_pwdw.c) */
	uint8_t pwdw_ovl;	/* sim option pwdw-ovl=auto|off|all (0..2): the fused job's row groups overlap
				 * (no EXE of its own for the last one) when faster / never / wherever they can
				 * (before/after figures, tests; conv_pwdw.c) */
	uint8_t qcol_off;		/* sim option qcol=off: CAP_FEATURES without bit 19 (SFU QCOL) */
	uint8_t qadd_off;		/* sim option qadd=off: CAP_FEATURES without bit 20 (VEC QADD) */
	uint8_t wdecomp_off;		/* sim option wdecomp=off: CAP_FEATURES without bit 23 (DMA_DEQ) */
	uint8_t vecmath_off;		/* sim option vecmath=off: CAP_FEATURES without bit 25 (VEC math) */
	uint8_t wrap_mode;	/* sim option wrap: 0 on, 1 off (CAP_FEATURES without bit 22, WRAP operands),
				 * 2 all (the fused lowering's remainders only as row wraps: tests) */
	uint8_t cpair_mode;	/* sim option cpair: 0 on, 1 off (CAP_FEATURES without bit 21, CPAIR operands),
				 * 2 all (the fused lowering's remainders only as cluster pairs: tests) */
	uint8_t submit_off;	/* sim option submit=off: every hardware job submission fails (-EPERM): tests
				 * that something only plans (accel-run --info) */
	struct accel_trace *trace;	/* job-timeline recording (trace.c), NULL if never begun */
	struct pwdw_cache *pwdw_cache;	/* accel_conv2d_pwdw's recent plans (conv_pwdw.c), NULL if none yet */
	char err[320];
	/* accel_op_supported is validating (op.c): tensors without a buffer are checked for their shape
	 * only (arg_tensor, tensor_usable), and nothing that needs memory is looked at */
	bool query;
	/* chain #9: islands (filled by the backend) */
	unsigned n_islands;
	struct accel_island islands[ACCEL_MAX_ISLANDS];
	uint32_t ring_mem;	/* on-chip ring-memory bytes, 0 = no ring DMA */
	uint32_t rings;		/* ring descriptors per job, 0 = no rings */
	uint64_t buf_serial;	/* the last accel_buffer.serial given */
	struct accel_link jobs;	/* live jobs (waited for and freed first by accel_close) */
	struct accel_link objs;	/* live buffers, graphs, packed weights, command streams (newest at next) */
};

struct accel_buffer {
	struct accel_link link;	/* in dev->objs (NULL links: a backend-internal buffer) */
	struct accel_dev *dev;
	void *ptr;
	uint64_t size;		/* requested */
	uint64_t alloc;		/* rounded to pages */
	uint64_t va;
	uint32_t handle;	/* drm GEM handle */
	uint32_t pad;
	uint64_t serial;	/* unique per device (accel_buffer_alloc): a kept stream's check that its
				 * buffers are the ones it was lowered for, not new ones at a freed address */
	void *priv;
	/* A library object's pointer to this buffer (a plan's device copy): cleared when the buffer is
	 * freed, so accel_close can free it while the object lives on. */
	struct accel_buffer **owner_ref;
};

struct accel_hwjob {
	bool done;
	int status;		/* 0 or -errno */
	uint32_t hw_error, err_info, err_cmd_offset;
	uint64_t err_addr;
	uint64_t counters[ACCEL_MAX_COUNTERS];
	uint32_t syncobj;	/* drm */
	struct accel_buffer *cmd_bo, *cnt_bo;	/* drm */
	bool has_row_busy;	/* sparse (#8): row_busy valid (sim backend: ROW_BUSY of the job) */
	uint64_t row_busy[16];
};

struct accel_job {
	struct accel_link link;	/* in dev->jobs */
	struct accel_dev *dev;
	unsigned n_hw;
	struct accel_hwjob *hw;
	int status;		/* 1 = not yet known */
	struct accel_counters sum;
	struct accel_buffer *owned[4];	/* library-internal buffers (constants), freed with the job */
	unsigned n_owned;
	struct accel_kept *kept;	/* ACCEL_SUBMIT_KEEP: the commands, shared with its replays */
};

/*
 * A job's command stream kept for accel_job_replay: the bytes, segment cuts and referenced buffers
 * (with their serials), and the library constants the commands read (moved here from the job).
 * Shared by the job and its replays; freed with the last of them.
 */
struct accel_kept {
	unsigned refs;
	uint8_t *buf;
	size_t len;
	size_t *cuts;
	unsigned n_cuts;
	struct accel_buffer **bos;
	uint64_t *serials;
	unsigned n_bos;
	struct accel_buffer *owned[4];
	unsigned n_owned;
};

/* Command stream: bytes + the buffers it references + cut points (independent hw jobs). */
struct accel_cmdstream {
	struct accel_link link;	/* in dev->objs when made by accel_cs_new (not for the library's own) */
	struct accel_dev *dev;
	uint8_t *buf;
	size_t len, cap;
	struct accel_buffer **bos;
	unsigned n_bos, cap_bos;
	size_t *cuts;		/* end offsets of segments except the last */
	unsigned n_cuts, cap_cuts;
	int err;		/* sticky: first append failure, or a packet that failed its check */
	char msg[256];		/* that check's message (packet.c); empty: out of memory */
};

/* Address of a tensor's first element; a support query's bufferless tensor: its offset (so the
 * alignment checks still see it). */
static inline uint64_t tensor_addr(const struct accel_tensor *t)
{
	return (t->buf ? t->buf->va : 0) + t->offset;
}

/* error.c */
int accel_seterr(struct accel_dev *dev, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void accel_clearerr(struct accel_dev *dev);
/* A well-formed operation beyond a limit of the device (a field too wide for a hardware encoding): the
 * message names the field.  The operation calls return err, their documented errno (-EINVAL, -E2BIG);
 * a support query (dev->query, accel_op_supported) answers -EOPNOTSUPP. */
int accel_limit(struct accel_dev *dev, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* backends */
int accel_sim_open(struct accel_dev *dev, const char *opts);
int accel_drm_open(struct accel_dev *dev, const char *path);

/* cmdstream.c (raw appends with device VAs, used by the lowering) */
void cs_init(struct accel_cmdstream *cs, struct accel_dev *dev);
void cs_fini(struct accel_cmdstream *cs);
void cs_raw(struct accel_cmdstream *cs, const void *p, size_t n);
void cs_use(struct accel_cmdstream *cs, struct accel_buffer *buf);
void cs_cut(struct accel_cmdstream *cs);
size_t cs_segment_len(const struct accel_cmdstream *cs);
void cs_dma(struct accel_cmdstream *cs, bool h2d, unsigned flags, uint64_t va, uint64_t py, uint64_t pz,
	    unsigned row, unsigned half, uint32_t off, uint32_t spy, uint32_t spz, uint32_t width, uint32_t height,
	    uint32_t depth);
void cs_im2col_raw(struct accel_cmdstream *cs, unsigned flags, const void *hwdesc);
void cs_dispatch(struct accel_cmdstream *cs, unsigned flags, unsigned row, unsigned half, unsigned dflags,
		 const void *pkt, uint32_t len);
void cs_sem(struct accel_cmdstream *cs, bool signal, unsigned flags, unsigned engine, unsigned sem, unsigned count);
/* 0, or the stream's sticky error with its message set on the device (out of memory, or the packet
 * check that failed: packet.c) */
int cs_report(struct accel_cmdstream *cs);
int cs_submit(struct accel_cmdstream *cs, const struct accel_submit *sub, struct accel_job **job);
/* submit.c: drop a reference to a kept stream (frees it and its constants with the last) */
void accel_kept_put(struct accel_kept *k);

/* program.c */
struct accel_program {
	uint8_t n_instr, n_ops, rf_base, mode, loop_start, loop_end, sfu_rf;
	bool loop_set;
	uint16_t repeat;
	uint16_t instr[64];
	uint8_t recs[16][32];
};
/* The program's CONFIG packet in the builder (isa/packet.h), for pkt_dispatch; 0 or -EINVAL. */
struct pkt;
int accel_program_pkt(const struct accel_program *p, unsigned ibuf, struct pkt *out);

/* job.c */
int accel_job_new(struct accel_dev *dev, unsigned n_hw, struct accel_job **out);
/* Common op entry: clears *job, rejects a NULL dev (-EINVAL, no message), clears the error
 * text and rejects a NULL descriptor ("<fn>: descriptor is NULL"). Returns 0 to proceed. */
int accel_op_begin(struct accel_dev *dev, const void *desc, const char *fn, struct accel_job **job);
int accel_op_finish(struct accel_dev *dev, struct accel_job *j, struct accel_job **job);
/* Common tail of an op that lowered into cs with result ret: submit cs unless ret is already an
 * error, release cs, then accel_op_finish_owned (owned[0..n) pass to the job) on success, or free
 * the owned buffers and return the error. */
int accel_op_submit(struct accel_dev *dev, struct accel_cmdstream *cs, int ret, const struct accel_submit *sub,
		    struct accel_buffer **owned, unsigned n, struct accel_job **job);
/* accel_op_finish for an op that owns constant buffers (ownership passes to the job). */
int accel_op_finish_owned(struct accel_dev *dev, struct accel_job *j, struct accel_buffer **owned, unsigned n,
			  struct accel_job **job);

/* trace.c (the sim backend brackets each hardware job while a recording is on) */
struct tnpu_exec;
bool accel_trace_on(const struct accel_dev *dev);
void accel_trace_job_begin(struct accel_dev *dev, struct tnpu_exec *ex);
void accel_trace_job_end(struct accel_dev *dev, struct tnpu_exec *ex, uint64_t total_cycles);
void accel_trace_free(struct accel_dev *dev);

/* conv_pwdw.c: free the device's plan cache */
void accel_pwdw_cache_free(struct accel_dev *dev);

/* tensor.c */
int accel_tensor_va(const struct accel_tensor *t, uint64_t *va);

#endif
