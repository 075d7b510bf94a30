/* SPDX-License-Identifier: MIT */
/* profile.h - accel-run --info and --profile: the model's interface, where each node runs, per-node cost
 * and the Perfetto trace of a run. */
#ifndef ACCEL_RUN_PROFILE_H
#define ACCEL_RUN_PROFILE_H

#include "tnpu_onnx.h"

/* Inputs and outputs: name, element type, declared shape (dynamic dimensions by name or '?'). */
void print_io(const struct onnx_model *m);
/* One line per graph node: index, op, name, device/host (and why) or folded.  prof: from a run (NULL:
 * nothing ran, e.g. --cpu: every node on the CPU reference). */
void print_placement(const struct onnx_model *m, const struct onnx_node_profile *prof, bool cpu);
/* --profile: per node host ms, device cycles, bytes moved (host<->device DMA), placement; then totals.
 * cm: the compiled plan the run used (one line per step, on the node it was made from), or NULL. */
void print_profile(const struct onnx_model *m, const struct onnx_node_profile *prof, bool cpu,
		   const struct onnx_compiled *cm);
/*
 * The Perfetto (Chrome trace-event JSON) trace of a run: a "graph" process with the nodes on the
 * host's wall clock and the device nodes on the device's time line, plus — when dev_trace_json is
 * the file libaccel wrote (accel_trace_write_json, sim backend) — one process per hardware job with its
 * engines, on the same device time line.  Writes path (rewriting dev_trace_json if it is path).
 * Returns 0 or -errno (message on stderr).
 */
int write_trace(const char *path, const char *dev_trace_json, const struct onnx_model *m,
		const struct onnx_node_profile *prof, unsigned clock_mhz);

#endif
