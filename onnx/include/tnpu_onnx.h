/* SPDX-License-Identifier: MIT */
/*
 * tnpu_onnx.h - ONNX import for tnpu (issue #10): load a model (protobuf-c code generated from Debian's
 * onnx.proto), run it on a libaccel device or on the plain-C CPU reference executor.
 * Reference: Documentation/onnx.md.  Conventions as libaccel: 0 or a negative errno, a message in
 * onnx_model_error() (or the caller's buffer for loads); never aborts, exits or prints.
 */
#ifndef TNPU_ONNX_H
#define TNPU_ONNX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel.h"

/* Marks the exported functions (libtnpu-onnx is built with -fvisibility=hidden and a version script). */
#if defined(__GNUC__) || defined(__clang__)
#define ONNX_API __attribute__((visibility("default")))
#else
#define ONNX_API
#endif

#define ONNX_MAX_DIMS 8
/*
 * Shape limits (Documentation/onnx.md, "Limits"): every dimension a model declares (graph inputs and
 * outputs, value_info, initializers, Constant values) or a run computes is at most ONNX_MAX_DIM_SIZE,
 * and the product of a shape's dimensions, a 0 counted as 1, at most ONNX_MAX_SHAPE_ELEMS (the most
 * elements a tensor may hold: 2 GiB of 1-byte elements).  So no sum, product or stride of shapes
 * downstream overflows int64; a model beyond them is refused at load (-EINVAL, the message names the
 * value and the dimension).
 */
#define ONNX_MAX_DIM_SIZE INT32_MAX
#define ONNX_MAX_SHAPE_ELEMS ((int64_t)1 << 31)

/* Element types: the values of onnx.proto's TensorProto.DataType (STRING and the complex types are not
 * tensor types of this importer).  Documentation/onnx.md, "Element types". */
enum onnx_dtype {
	ONNX_FLOAT = 1,
	ONNX_UINT8 = 2,
	ONNX_INT8 = 3,
	ONNX_UINT16 = 4,
	ONNX_INT16 = 5,
	ONNX_INT32 = 6,
	ONNX_INT64 = 7,
	ONNX_BOOL = 9,		/* one byte, 0 or 1 */
	ONNX_FLOAT16 = 10,	/* IEEE binary16, as uint16_t bits */
	ONNX_DOUBLE = 11,
	ONNX_UINT32 = 12,
	ONNX_UINT64 = 13,
	ONNX_BFLOAT16 = 16,	/* the top 16 bits of a binary32, as uint16_t bits */
};

/* A dense host tensor (row-major, as ONNX).  data holds count elements of dtype. */
struct onnx_tensor {
	enum onnx_dtype dtype;
	unsigned ndim;
	int64_t dims[ONNX_MAX_DIMS];
	size_t count;
	void *data;
};

struct onnx_model;

/*
 * Threads (Documentation/onnx.md, "Threads").  A loaded model is read-only once onnx_model_load*()
 * returns, except for what onnx_run()/onnx_run_profile() record in it (onnx_model_error(), the nodes'
 * ran_on_device).  Runs keep their values (host steps' tensors, scratch) in their own state, so:
 *  - one model may be compiled (onnx_compile, onnx_compiled_load*) for several devices, from several
 *    threads at once, and its compiled forms run concurrently from different threads;
 *  - one compiled model may be run from several threads: its runs are serialised (a lock held for
 *    the whole run, as they share its activation arena and kept jobs), so there is no parallelism;
 *    onnx_compiled_error() is then the message of its most recent failed call from any thread.  For
 *    parallel runs, compile the model once per device;
 *  - onnx_run()/onnx_run_profile(): one call at a time per model (they may overlap compilations and
 *    compiled runs of it);
 *  - libaccel's rule (accel.h) still holds: a device is used by one thread at a time, so compiling
 *    for a device, running and freeing its compiled models and onnx_run() on it are serialised by the
 *    caller, except for the runs of one compiled model, which the lock above serialises;
 *  - a plan cache (onnx_plan_cache_*) serialises its own calls with a lock, as one compiled model does
 *    (onnx_plan_cache_error() is then the message of its most recent failed call from any thread);
 *    onnx_plan_cache_free() when no call of it is in progress;
 *  - onnx_compiled_free() when no run of it is in progress, onnx_model_free() after every compiled
 *    form and plan cache of the model is freed.
 */

/* Load flags. */
#define ONNX_LOAD_NO_FOLD 0x1u	/* run the graph as written: no BatchNormalization folding, no Relu fusion */

/*
 * Parse an ONNX model and build its graph.  -ENOENT/-errno (file), -EBADMSG (not a ModelProto),
 * -EINVAL (malformed graph: message names the node/value), -EOPNOTSUPP (an operator or attribute
 * outside the supported set: the message names the operator).  err gets the message (may be NULL).
 */
ONNX_API int onnx_model_load(const char *path, unsigned flags, struct onnx_model **out, char *err, size_t errlen);
ONNX_API int onnx_model_load_mem(const void *buf, size_t len, unsigned flags, struct onnx_model **out, char *err,
				 size_t errlen);
ONNX_API void onnx_model_free(struct onnx_model *m);
ONNX_API const char *onnx_model_error(const struct onnx_model *m);

/* Graph inputs that are not initializers, and graph outputs, in model order. */
ONNX_API unsigned onnx_model_n_inputs(const struct onnx_model *m);
ONNX_API unsigned onnx_model_n_outputs(const struct onnx_model *m);
ONNX_API const char *onnx_model_input_name(const struct onnx_model *m, unsigned i);
ONNX_API const char *onnx_model_output_name(const struct onnx_model *m, unsigned i);
/* Input i's element type and shape as the model declares them: "FLOAT [1,1,28,28]" (symbolic dims by name). */
ONNX_API void onnx_model_input_describe(const struct onnx_model *m, unsigned i, char *buf, size_t len);
/* Number of graph nodes after folding, and BatchNormalization nodes folded into a Conv. */
ONNX_API unsigned onnx_model_n_nodes(const struct onnx_model *m);
ONNX_API unsigned onnx_model_n_folded(const struct onnx_model *m);

/*
 * Per node of the graph file, in model order (accel-run --info): where it runs when a device is given.
 * DEVICE: lowered onto libaccel (a case its lowering cannot express still runs on the host:
 * ran_on_device says what the last onnx_run did); HOST: host kernel; FOLDED: nothing left to run
 * (a Constant, evaluated at load time, or fused into the node before it).  reason says why (static).
 */
enum onnx_placement {
	ONNX_PLACE_DEVICE = 0,
	ONNX_PLACE_HOST = 1,
	ONNX_PLACE_FOLDED = 2,
};
struct onnx_node_info {
	const char *name;		/* the node's name, else its first output's */
	const char *op;			/* op_type */
	enum onnx_placement place;
	const char *reason;
	int ran_on_device;		/* last onnx_run with a device: 1 device, 0 host, -1 not run there */
};
ONNX_API unsigned onnx_model_n_graph_nodes(const struct onnx_model *m);
ONNX_API int onnx_model_node_info(const struct onnx_model *m, unsigned i, struct onnx_node_info *out);
/* A node folded into another at load time (BatchNormalization into its Conv, Relu/Clip into the epilogue of
 * its Conv/Gemm, a zero Pad into the padding of the Conv after it, the inner nodes of a fused pattern whose
 * result the fused node writes): the index of the node that now does its work; -1 when the node is not
 * folded into another (it runs itself, or was evaluated at load time, or is an inner node of a pattern
 * whose result it does not write); -EINVAL when i is out of range. */
ONNX_API int onnx_model_node_fused_into(const struct onnx_model *m, unsigned i);

/* A graph input or output as the model declares it (dtype 0 / ndim -1 when not declared; a dimension
 * of -1 is symbolic or unknown). */
struct onnx_value_desc {
	const char *name;
	int dtype;			/* enum onnx_dtype value (or another TensorProto type number) */
	int ndim;
	int64_t dims[ONNX_MAX_DIMS];
};
ONNX_API int onnx_model_input_desc(const struct onnx_model *m, unsigned i, struct onnx_value_desc *out);
ONNX_API int onnx_model_output_desc(const struct onnx_model *m, unsigned i, struct onnx_value_desc *out);

/* Per-run statistics. */
struct onnx_run_stats {
	unsigned accel_nodes;	/* nodes lowered onto libaccel */
	unsigned host_nodes;	/* nodes run on the host (fallbacks and host-only ops) */
	struct accel_counters counters;	/* summed device counters of the accel nodes */
	uint64_t copy_bytes;	/* host<->device bytes the compiled executor copied (inputs, outputs, host
				 * steps' operands); 0 for onnx_run() */
};

/*
 * Run the graph.  dev != NULL: supported ops are lowered onto libaccel (accel_conv2d, accel_gemm,
 * accel_pool2d, accel_activation), the others run on the host; dev == NULL: everything runs on the
 * plain-C CPU reference.  inputs[i] feeds onnx_model_input_name(m, i); outputs are allocated here
 * (release with onnx_tensor_release).  stats may be NULL.
 */
ONNX_API int onnx_run(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *inputs, unsigned n_inputs,
		      struct onnx_tensor *outputs, unsigned n_outputs, struct onnx_run_stats *stats);

/* What one node cost in one onnx_run_profile() (index = onnx_model_node_info's). */
struct onnx_node_profile {
	bool ran;			/* false: folded at load time, or after a failed node */
	bool failed;			/* its kernel returned the run's error */
	bool on_device;			/* lowered onto libaccel (its jobs' counters below) */
	double host_ms;			/* wall-clock time of the node, waiting for its jobs included */
	double start_ms;		/* when it started, from the start of the run */
	struct accel_counters counters;	/* summed over the node's jobs */
};
/* onnx_run() that also fills prof[onnx_model_n_graph_nodes(m)] (NULL: same as onnx_run). */
ONNX_API int onnx_run_profile(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *inputs,
		     unsigned n_inputs, struct onnx_tensor *outputs, unsigned n_outputs, struct onnx_run_stats *stats,
		     struct onnx_node_profile *prof);

/*
 * Whole-graph compilation (issue 15; Documentation/onnx.md "The compiler").  onnx_compile() plans a
 * model for one device and one set of input shapes (shapes[i]: dtype, ndim, dims of input i; data is
 * not read): fused steps, one activation arena laid out by live ranges, the weights packed into one
 * device buffer uploaded here, once.  onnx_compiled_run() then runs it any number of times: the
 * device steps between two host steps are submitted as a chain of asynchronous jobs, each depending
 * on the one before, with no host copy in between; the first run keeps each device step's commands
 * and later runs replay them (accel_job_replay) instead of lowering the steps again, unless compiled
 * with ONNX_COMPILE_NO_REPLAY.  The model must outlive the compiled form (onnx_compiled_open: the
 * compiled form owns its model), and the compiled form must be freed (onnx_compiled_free) before its
 * device is closed: it owns device buffers and kept jobs.
 * Every value's shape must follow from the input shapes: a model whose shapes depend on input *data*
 * (Reshape's shape, Slice's starts, Resize's scales, TopK's K, ... computed from a graph input, or
 * NonZero, Compress, Unique, NonMaxSuppression on it) is refused with -EOPNOTSUPP and a message naming
 * the node, the operand and the graph input; onnx_run() runs such a model (accel-run falls back to it).
 * Errors: negative errno, message in onnx_compiled_error() (compile: in err).
 */
struct onnx_compiled;
#define ONNX_COMPILE_NO_FUSE 0x1u	/* no compiler fusion (the loader's Conv+BN/Relu/Clip folding stays) */
#define ONNX_COMPILE_NO_QDQ 0x2u	/* QDQ patterns run node by node (Q/DQ on the host), no int8 lowering */
#define ONNX_COMPILE_NO_VIEWS 0x4u	/* Split/Slice/Gather/Concat as host steps, no in-place Concat inputs */
#define ONNX_COMPILE_NCHW 0x8u	/* every activation NCHW (no NHWC layout pass; comparisons, tests) */
#define ONNX_COMPILE_NO_PWDW 0x10u	/* no expansion + depthwise fusion (accel_conv2d_pwdw); the rest as usual */
#define ONNX_COMPILE_NO_REPLAY 0x20u	/* every run lowers its device steps again (default: the first run keeps
					 * their commands, later runs replay them: accel_job_replay) */
ONNX_API int onnx_compile(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *shapes, unsigned n_shapes,
		 unsigned flags, struct onnx_compiled **out, char *err, size_t errlen);
ONNX_API int onnx_compiled_run(struct onnx_compiled *cm, const struct onnx_tensor *inputs, unsigned n_inputs,
		      struct onnx_tensor *outputs, unsigned n_outputs, struct onnx_run_stats *stats);
/*
 * onnx_compiled_run() that also fills prof[onnx_model_n_graph_nodes(m)] by step: the node a step was
 * made from (its anchor) gets the counters summed over the step's device jobs, on_device, and as host_ms
 * the host time of the step (a host step's run; a device step's lowering and submission, its jobs run
 * asynchronously); a host step whose node kernel ran on the device (its own buffers and copies) is
 * on_device with its jobs' counters, as in onnx_run_profile(); nodes fused into another node's step,
 * aliases and folded nodes stay !ran.  The
 * nodes' counters add up to stats->counters.  NULL prof: same as onnx_compiled_run().
 */
ONNX_API int onnx_compiled_run_profile(struct onnx_compiled *cm, const struct onnx_tensor *inputs, unsigned n_inputs,
			      struct onnx_tensor *outputs, unsigned n_outputs, struct onnx_run_stats *stats,
			      struct onnx_node_profile *prof);
ONNX_API void onnx_compiled_free(struct onnx_compiled *cm);
ONNX_API const char *onnx_compiled_error(const struct onnx_compiled *cm);

/*
 * Plan cache, a model's compiled plans kept by input shapes: one per set of input dtypes and shapes for
 * one device (Documentation/onnx.md, "Plan cache"), so a model with symbolic dimensions compiles once
 * per shape set, not once per call.  onnx_plan_cache_run() looks the inputs' dtypes and shapes up,
 * compiles on a miss (onnx_compile with the cache's flags; a failed compile is not kept), evicting the
 * least recently used plan when the cache holds capacity plans already, and runs the plan
 * (onnx_compiled_run).
 * capacity: 1 .. ONNX_PLAN_CACHE_MAX plans, 0 at creation = ONNX_PLAN_CACHE_DEFAULT; lowering it
 * evicts the least recently used plans at once.  Each plan owns device buffers (its arena and weights).
 * Threads: a cache may be called from several threads; its calls are serialised by its lock (lookup,
 * compile and run), as one compiled model's runs are.  It uses its device from inside its calls, so
 * libaccel's rule applies: the caller serialises the device's other users with the cache's calls.  Free
 * the cache before its device is closed and before its model is freed.  Errors: negative errno, the
 * message in onnx_plan_cache_error() ("compile: ..." when the compile failed; creation: in err).
 */
struct onnx_plan_cache;
#define ONNX_PLAN_CACHE_DEFAULT 4u
#define ONNX_PLAN_CACHE_MAX 256u
struct onnx_plan_cache_stats {
	unsigned capacity;		/* plans kept at most */
	unsigned plans;			/* plans held now */
	uint64_t runs;			/* onnx_plan_cache_run() calls that found or compiled a plan */
	uint64_t hits;			/* of those, runs whose shapes had a plan */
	uint64_t compiles;		/* successful compiles (misses) */
	uint64_t evictions;		/* plans freed to make room or by a lower capacity */
};
ONNX_API int onnx_plan_cache_new(struct onnx_model *m, struct accel_dev *dev, unsigned flags, unsigned capacity,
				 struct onnx_plan_cache **out, char *err, size_t errlen);
ONNX_API int onnx_plan_cache_run(struct onnx_plan_cache *pc, const struct onnx_tensor *inputs, unsigned n_inputs,
				 struct onnx_tensor *outputs, unsigned n_outputs, struct onnx_run_stats *stats);
/*
 * The plan for these inputs' dtypes and shapes (their data is not read), compiled now on a miss as
 * onnx_plan_cache_run() would, without running it: ahead of the first run, or to save it
 * (onnx_compiled_save).  out (may be NULL) borrows the plan until the cache evicts it or is freed; it is
 * not counted as a run.  Since TNPU_ONNX_0.2.
 */
ONNX_API int onnx_plan_cache_compile(struct onnx_plan_cache *pc, const struct onnx_tensor *inputs, unsigned n_inputs,
				     const struct onnx_compiled **out);
ONNX_API int onnx_plan_cache_set_capacity(struct onnx_plan_cache *pc, unsigned capacity);
ONNX_API int onnx_plan_cache_stats(struct onnx_plan_cache *pc, struct onnx_plan_cache_stats *out);
ONNX_API const char *onnx_plan_cache_error(const struct onnx_plan_cache *pc);
ONNX_API void onnx_plan_cache_free(struct onnx_plan_cache *pc);

/* The plan's summary (accel-run --info). */
struct onnx_compiled_info {
	unsigned nodes_before;		/* graph nodes left after the loader's folding */
	unsigned steps;			/* steps after fusion (device + host; aliases and fused excluded) */
	unsigned device_steps, host_steps, alias_steps, fused_nodes;
	unsigned buffers;		/* device buffer objects: the arena and the weights */
	unsigned jobs_per_run;		/* device jobs submitted by one run */
	unsigned chains;		/* runs of device jobs between host steps */
	uint64_t arena_bytes;		/* activation arena (the memory plan) */
	uint64_t weight_bytes;		/* packed weights, uploaded once */
	uint64_t peak_bytes;		/* arena + weights */
	uint64_t lower_bound;		/* the largest live set + weights */
};
ONNX_API int onnx_compiled_info(const struct onnx_compiled *cm, struct onnx_compiled_info *out);
/* Step i (0 .. n_graph_nodes-1, graph node order): what the compiler made of graph node i. */
struct onnx_compiled_step {
	const char *name, *op;
	const char *kind;		/* "conv", "gemm", "pool", "eltwise", "act", "alias", "host", "fused",
					 * "folded" */
	bool device;			/* a device job of the plan */
	const char *reason;		/* why it runs where it does, or what it was fused into */
	int64_t out_offset;		/* arena offset of its output (-1: none) */
	uint64_t out_bytes;
	int ran_on_device;		/* a host step, the compiled model's last run (ask between runs): 1 its
					 * node's device kernel (own buffers and copies), 0 the host kernel; -1 not
					 * run or not a host step */
};
ONNX_API int onnx_compiled_step_info(const struct onnx_compiled *cm, unsigned node, struct onnx_compiled_step *out);

/*
 * Save / load a compiled model (Documentation/onnx.md, "Compiled-model files"): magic, format version,
 * the device geometry it was compiled for, a digest of the model and input shapes, the input shapes and
 * the model's load flags, the steps, the memory plan, the packed weights and the ONNX model itself, all
 * under a CRC-32.  onnx_compiled_load() loads the plan against a model the caller loaded (the same
 * model, the same input shapes); a device of the same geometry is needed either way; any mismatch,
 * truncation or corruption is -EINVAL/-EBADMSG/-ENODEV with a message naming the field.
 */
ONNX_API int onnx_compiled_save(const struct onnx_compiled *cm, const char *path, char *err, size_t errlen);
ONNX_API int onnx_compiled_load(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *shapes,
		       unsigned n_shapes, const char *path, struct onnx_compiled **out, char *err, size_t errlen);
ONNX_API int onnx_compiled_load_mem(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *shapes,
			   unsigned n_shapes, const void *buf, size_t len, struct onnx_compiled **out, char *err,
			   size_t errlen);
/*
 * A self-contained compiled model: onnx_compiled_open() reads the model from the file (with the load
 * flags it was loaded with) and the plan against it and the input shapes it was compiled for, so it
 * runs without the ONNX file and without planning again.  The compiled form owns that model:
 * onnx_compiled_free() frees it (never onnx_model_free() it), and onnx_compiled_model() lends it (its
 * inputs', outputs' and nodes' descriptions; valid until onnx_compiled_free).  Errors as onnx_compiled_load(), plus -ENOENT for a
 * file that does not carry its model; err names the field.  Since TNPU_ONNX_0.2.
 */
ONNX_API int onnx_compiled_open(struct accel_dev *dev, const char *path, struct onnx_compiled **out, char *err,
				size_t errlen);
ONNX_API int onnx_compiled_open_mem(struct accel_dev *dev, const void *buf, size_t len, struct onnx_compiled **out,
				    char *err, size_t errlen);
/* The model a compiled form runs: the caller's (onnx_compile, onnx_compiled_load*) or its own
 * (onnx_compiled_open*).  NULL cm: NULL.  Since TNPU_ONNX_0.2. */
ONNX_API struct onnx_model *onnx_compiled_model(const struct onnx_compiled *cm);
/* The shape input i was compiled for (dtype, ndim, dims and count; data NULL): what onnx_compiled_run()
 * takes.  0, or -EINVAL for i out of range.  Since TNPU_ONNX_0.2. */
ONNX_API int onnx_compiled_input_shape(const struct onnx_compiled *cm, unsigned i, struct onnx_tensor *out);

/* Tensors. */
ONNX_API size_t onnx_dtype_size(enum onnx_dtype dt);
ONNX_API const char *onnx_dtype_name(int dt);
ONNX_API int onnx_tensor_alloc(struct onnx_tensor *t, enum onnx_dtype dt, unsigned ndim, const int64_t *dims);
ONNX_API void onnx_tensor_release(struct onnx_tensor *t);
/* Read a serialized TensorProto (.pb file of the ONNX test data); name may be NULL. */
ONNX_API int onnx_tensor_load_pb(const char *path, struct onnx_tensor *out, char *name, size_t namelen, char *err,
				 size_t errlen);
/* Write a TensorProto (.pb). */
ONNX_API int onnx_tensor_save_pb(const char *path, const struct onnx_tensor *t, const char *name, char *err,
				 size_t errlen);

/*
 * Compare an output with its expectation.  Float: |got - exp| <= atol + rtol * |exp| (NaN matches
 * NaN); integer types: |got - exp| <= itol.  Returns 0 (match), 1 (mismatch: msg says where) or
 * -EINVAL (different dtype/shape: msg says how).  max_err gets the largest |got - exp|.
 */
struct onnx_tolerance {
	double atol, rtol;
	int64_t itol;
};
#define ONNX_TOL_ATOL 1e-4	/* the documented defaults (Documentation/onnx.md, "Tolerances") */
#define ONNX_TOL_RTOL 1e-3
#define ONNX_TOL_ITOL 0
ONNX_API int onnx_compare(const struct onnx_tensor *got, const struct onnx_tensor *exp,
			  const struct onnx_tolerance *tol, double *max_err, char *msg, size_t len);
/*
 * A model's output against its reference (Documentation/onnx.md, "Tolerances"): float outputs within
 * |got - exp| <= atol + rtol * max|exp|, max over the output's finite values (the output's scale: an fp32
 * network's rounding error grows with the magnitude of what it sums, not with each element's own value,
 * so a per-element bound fails near zero crossings); NaN matches NaN, an infinity only the same infinity;
 * integer types as onnx_compare.  Same returns; msg also gives the largest error as a fraction of the
 * scale.  accel-run --expect, the model zoo, accel-bench model and the Python tests use it with
 * ONNX_MODEL_ATOL / ONNX_MODEL_RTOL unless told otherwise; onnx_compare (per element) is the ONNX backend
 * tests' rule.
 */
#define ONNX_MODEL_ATOL 1e-6
#define ONNX_MODEL_RTOL 1e-4
ONNX_API int onnx_compare_scaled(const struct onnx_tensor *got, const struct onnx_tensor *exp,
				 const struct onnx_tolerance *tol, double *max_err, char *msg, size_t len);
/* "FLOAT [1,3,224,224]" */
ONNX_API void onnx_tensor_describe(const struct onnx_tensor *t, char *buf, size_t len);

/* Text generation with a decoder language model: onnx_generator_* (issue #29). */
#include "tnpu_onnx_generate.h"

#endif /* TNPU_ONNX_H */
