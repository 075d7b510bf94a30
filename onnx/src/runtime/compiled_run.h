/* SPDX-License-Identifier: MIT */
/*
 * compiled_run.h - one run of a compiled plan: its state, shared by the executor (compiled_run.c: the
 * chain of jobs, replays, host steps, inputs and outputs) and the lowering of device steps into libaccel
 * operations (compiled_submit.c).
 */
#ifndef TNPU_ONNX_COMPILED_RUN_H
#define TNPU_ONNX_COMPILED_RUN_H

#include "compile.h"

struct run_state {
	struct onnx_compiled *cm;
	struct onnx_tensor *vt;	/* the host steps' values, indexed as the model's: cm->run_vals, never the
				 * model's own */
	struct accel_job **jobs;
	bool *kept;		/* jobs[i] is also a step's kept job (cm->kept): waited for, not freed */
	unsigned cap;		/* entries of jobs, kept (and job_node) */
	bool keep_failed;	/* the step being kept could not keep a job (out of memory) */
	int rec;		/* the step whose first run is being kept, -1 none */
	int *job_node;		/* with prof: the graph node (its step's anchor) of each job */
	unsigned n_jobs, done;	/* submitted; retired (waited and freed) */
	struct accel_job *prev;	/* the chain's last job */
	struct onnx_run_stats *stats;
	struct onnx_node_profile *prof;	/* onnx_compiled_run_profile: per graph node, else NULL */
};

/* compiled_run.c: the chain */
/* The submission options of a step's next job: after the chain's last job; kept while recording. */
struct accel_submit cr_next_sub(struct run_state *rs);
/* Push a step's submitted job onto the chain (and its kept jobs), retiring the oldest when too many are in flight. */
int cr_push_retire(struct run_state *rs, const struct cstep *s, struct accel_job *job);

/* compiled_submit.c: a device step's jobs */
int cr_step_err(struct onnx_compiled *cm, const struct cstep *s, int ret, const char *what);
int cr_submit_qdq(struct run_state *rs, const struct cstep *s, unsigned k0);
int cr_lower_bgemm(struct run_state *rs, const struct cstep *s, uint32_t from);
int cr_lower_reduce(struct run_state *rs, const struct cstep *s, uint32_t from);
/* Lower device step s into its libaccel operation(s), submitted onto the chain. */
int cr_lower_step(struct run_state *rs, const struct cstep *s);

#endif
