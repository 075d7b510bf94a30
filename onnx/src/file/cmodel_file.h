/* SPDX-License-Identifier: MIT */
/*
 * cmodel_file.h - the compiled-model file format (Documentation/onnx.md, "Compiled-model files"), shared
 * by its writer (cmodel_save.c), its reader (cmodel_file.c) and onnx_compiled_open (cmodel_open.c).
 * Little-endian, every field fixed-width:
 *
 *   header   magic "TNPUCMDL", u32 version, u32 geometry[8], u64 model digest, u32 n_vals, u32 n_steps,
 *            u64 arena_bytes, u64 lower_bound, u64 weight_bytes, u32 counts[5]
 *   inputs   u32 load_flags, u32 n_shapes, n_shapes records (u32 dtype, u32 ndim, u64 dims[8]): the
 *            model's load flags and the input shapes it was compiled for (version 4)
 *   values   n_vals records (dtype, ndim, dims[8], bytes, loc, off, root, nhwc)
 *   steps    n_steps records (every field of struct cstep but the reason)
 *   weights  weight_bytes bytes (the packed image)
 *   model    u64 model_bytes, then the ONNX ModelProto the model was loaded from (version 4; 0 bytes:
 *            not carried, the reader needs the ONNX file)
 *   trailer  u32 CRC-32 (IEEE) of everything before it
 *
 * A file that carries its model is self-contained: onnx_compiled_open() loads the model from it (with
 * the recorded load flags) and the compiled plan against it, so it runs with the ONNX file deleted.
 */
#ifndef TNPU_ONNX_CMODEL_FILE_H
#define TNPU_ONNX_CMODEL_FILE_H

#include "compile.h"

#define CM_MAGIC "TNPUCMDL"
#define CM_VERSION 5u	/* 2: CS_COPY steps, the epilogue residual, the values' nhwc field, the int8 QDQ steps;
			 * 3: the expansion + depthwise pairs (the steps' pair field);
			 * 4: the input shapes and load flags, the model itself (self-contained files);
			 * 5: GEMMs by packed weight-only quantised weights (the steps' wq fields), and NHWC Concat
			 *    parts (an nhwc view's offset is its first channel's, its pixel stride the root's:
			 *    compile_layout.c), which a version 4 reader would misplace */
#define CM_MAX_SHAPES 4096u	/* input shape records (a model has at most this many inputs here) */
#define SHAPE_REC 72u	/* bytes of one input shape record */
#define CM_MAX_FILE ((uint64_t)1 << 33)
#define VAL_REC 100u	/* bytes of one value record */
#define STEP_REC 540u	/* bytes of one step record */

/* The step fields in file order (one list for the writer and the reader). */
#define STEP_I64_FIELDS(X)                                                                                     \
	X(n) X(c) X(h) X(w) X(k) X(cg) X(kh) X(kw) X(groups) X(oh) X(ow) X(sh) X(sw) X(dh) X(dw) X(pt) X(pl) \
	X(pb) X(pr) X(M) X(K) X(N)

/* The int8 QDQ steps' fields (version 2), in file order. */
#define STEP_QDQ_FIELDS(Q32, Q64) \
	Q32(izp) Q32(izp2) Q32(ozp) Q32(mult) Q32(shift) Q32(odt) Q32(nrq) Q32(qpool) \
	Q64(rq_off) Q64(sc_bytes) Q64(sc_off) Q64(k_off[0]) Q64(k_off[1]) Q64(k_off[2]) Q64(k_off[3]) \
	Q32(pw[0]) Q32(pw[1]) Q32(pw[2]) Q32(pw[3]) Q32(pw[4]) Q32(pw[5]) Q32(pw[6]) Q32(pw[7])

/* The packed-weight GEMM's fields (version 5), in file order. */
#define STEP_WQ_FIELDS(Q32, Q64) \
	Q32(wq) Q32(wq_block) Q32(wq_pitch[0]) Q32(wq_pitch[1]) Q32(wq_pitch[2]) Q64(wq_off[0]) Q64(wq_off[1])

/* CRC-32 (IEEE, zlib's) of n bytes: the trailer. */
uint32_t cm_crc32(const uint8_t *p, size_t n);

/* What onnx_compiled_open needs before the model exists: the envelope checked (magic, version, CRC),
 * the load flags, the recorded input shapes (*shapes, the caller frees it) and the model section
 * (model, model_bytes: inside buf).  0, or a negative errno with the field in err (-ENOENT: the file
 * does not carry its model). */
struct cm_file_head {
	uint32_t load_flags;
	struct onnx_tensor *shapes;
	unsigned n_shapes;
	const uint8_t *model;
	size_t model_bytes;
};
int cm_file_head(const void *buf, size_t len, struct cm_file_head *h, char *err, size_t errlen);

/* The reader's cursor over a file (cmodel_file.c), and its first error: the message in err. */
struct rbuf {
	const uint8_t *p;
	size_t n, pos;
	char *err;
	size_t errlen;
	int ret;
};

/* Record the reader's first error (formatted into r->err); returns r->ret. */
int cm_rbad(struct rbuf *r, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline bool in_range(uint64_t off, uint64_t bytes, uint64_t size)
{
	return off <= size && bytes <= size - off;
}

/* cmodel_check.c: every value and step read against the model, the device and their buffers, naming
 * the field that fails (0, or r->ret with the message). */
int cm_check_vals(struct rbuf *r, struct onnx_compiled *cm);
int cm_check_steps(struct rbuf *r, struct onnx_compiled *cm);

#endif
