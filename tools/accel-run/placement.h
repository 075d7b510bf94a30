/* SPDX-License-Identifier: MIT */
/* placement.h - accel-run --placement json: where every node of one run went, as one JSON document. */
#ifndef ACCEL_RUN_PLACEMENT_H
#define ACCEL_RUN_PLACEMENT_H

#include <stdbool.h>
#include <stdio.h>

#include "tnpu_onnx.h"

/* The document for the run just made: prof[] of that run (onnx_run_profile or
 * onnx_compiled_run_profile), cm its compiled form (NULL: node by node), cpu: the CPU reference ran it.
 * Fields: Documentation/tools.md, "accel-run --placement json". */
void placement_json(FILE *out, const char *model, const char *device, const struct onnx_model *m,
		    const struct onnx_compiled *cm, const struct onnx_node_profile *prof, bool cpu);

/* The stream the document goes to: the process's stdout, whose descriptor then points to stderr so the
 * run's other output cannot mix into the JSON.  NULL (and a message) on failure. */
FILE *placement_stdout(void);

#endif
