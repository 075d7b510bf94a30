/* SPDX-License-Identifier: MIT */
/*
 * placement.c - accel-run --placement json (issue 30: proof of placement).  One JSON object: the model,
 * the device, whether the compiled plan ran, and per graph node (model order) "placement" "device" or
 * "host", the reason when host, the device jobs of this run that computed it (their ordinals in
 * submission order, and the hardware command buffers and counters they add up to), so a reader can
 * check that a node claiming the device did device work.  Facts come from the run's profile
 * (onnx_node_profile) and the plan (onnx_compiled_step_info); the static reasons from
 * onnx_model_node_info.
 */
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "placement.h"

struct node_fact {
	const char *placement;	/* "device" or "host" */
	const char *how;	/* device: "job", "fused", "view", "node-kernel"; host: "kernel", "folded", "cpu" */
	const char *reason;	/* host: why; device: NULL, or what it was fused into / viewed as */
	bool jobs;		/* its own device jobs ran (counters below) */
};

static struct node_fact fact_of(const struct onnx_node_info *ni, const struct onnx_compiled *cm, unsigned i,
				const struct onnx_node_profile *p, bool cpu)
{
	struct onnx_compiled_step s;

	if (ni->place == ONNX_PLACE_FOLDED)
		return (struct node_fact){ "host", "folded", ni->reason, false };
	if (cpu)
		return (struct node_fact){ "host", "cpu", "the CPU reference executor (--cpu)", false };
	if (cm && !onnx_compiled_step_info(cm, i, &s)) {
		if (s.device)
			return (struct node_fact){ "device", "job", NULL, true };
		if (!strcmp(s.kind, "fused"))
			return (struct node_fact){ "device", "fused", s.reason, false };
		if (!strcmp(s.kind, "alias"))
			return (struct node_fact){ "device", "view", s.reason, false };
		if (!strcmp(s.kind, "folded"))
			return (struct node_fact){ "host", "folded", s.reason, false };
		if (s.ran_on_device == 1)
			return (struct node_fact){ "device", "node-kernel", NULL, true };
		return (struct node_fact){ "host", "kernel", ni->place == ONNX_PLACE_DEVICE ?
			"the device lowering declined this node's attributes or types" : ni->reason, false };
	}
	if (p && p->ran && p->on_device)
		return (struct node_fact){ "device", "node-kernel", NULL, true };
	if (p && !p->ran)
		return (struct node_fact){ "host", "not-run", "not run (an earlier node failed, or fused)", false };
	return (struct node_fact){ "host", "kernel", ni->place == ONNX_PLACE_DEVICE ?
		"the device lowering declined this node's attributes or types" : ni->reason, false };
}

void placement_json(FILE *out, const char *model, const char *device, const struct onnx_model *m,
		    const struct onnx_compiled *cm, const struct onnx_node_profile *prof, bool cpu)
{
	unsigned n = onnx_model_n_graph_nodes(m), n_dev = 0, n_host = 0, job = 0;
	struct json_writer w;

	json_init(&w, out);
	json_begin_object(&w, NULL);
	json_str(&w, "model", model);
	json_str(&w, "device", cpu ? "cpu" : device ? device : "default");
	json_bool(&w, "compiled", cm != NULL);
	json_begin_array(&w, "nodes");
	for (unsigned i = 0; i < n; i++) {
		const struct onnx_node_profile *p = prof ? &prof[i] : NULL;
		const char *fused_into = NULL;
		struct onnx_node_info ni;
		struct node_fact f;

		if (onnx_model_node_info(m, i, &ni))
			continue;
		f = fact_of(&ni, cm, i, p, cpu);
		if (!strcmp(f.how, "folded")) {	/* folded into another node: where that one ran */
			int a = onnx_model_node_fused_into(m, i);
			struct onnx_node_info ai;

			if (a >= 0 && !onnx_model_node_info(m, (unsigned)a, &ai)) {
				struct node_fact af = fact_of(&ai, cm, (unsigned)a, prof ? &prof[a] : NULL, cpu);

				f = (struct node_fact){ af.placement, "fused", ni.reason, false };
				fused_into = ai.name;
			}
		}
		json_begin_object(&w, NULL);
		json_u64(&w, "index", i);
		json_str(&w, "name", ni.name);
		json_str(&w, "op", ni.op);
		json_str(&w, "placement", f.placement);
		json_str(&w, "how", f.how);
		if (f.reason)
			json_str(&w, "reason", f.reason);
		else
			json_null(&w, "reason");
		if (fused_into)
			json_str(&w, "fused_into", fused_into);
		json_begin_array(&w, "jobs");	/* this run's device jobs that computed the node */
		if (f.jobs && p && p->counters.hw_jobs)
			for (uint32_t k = 0; k < p->counters.hw_jobs; k++)
				json_u64(&w, NULL, job++);
		json_end_array(&w);
		json_begin_object(&w, "counters");	/* summed over those jobs */
		json_u64(&w, "hw_jobs", f.jobs && p ? p->counters.hw_jobs : 0);
		json_u64(&w, "instructions", f.jobs && p ? p->counters.instructions : 0);
		json_u64(&w, "commands", f.jobs && p ? p->counters.commands : 0);
		json_u64(&w, "macs", f.jobs && p ? p->counters.macs_effective : 0);
		json_u64(&w, "vec_ops", f.jobs && p ? p->counters.vec_ops : 0);
		json_u64(&w, "cycles", f.jobs && p ? p->counters.total_cycles : 0);
		json_end_object(&w);
		json_end_object(&w);
		if (!strcmp(f.placement, "device"))
			n_dev++;
		else
			n_host++;
	}
	json_end_array(&w);
	json_begin_object(&w, "summary");
	json_u64(&w, "nodes", n);
	json_u64(&w, "device", n_dev);
	json_u64(&w, "host", n_host);
	json_u64(&w, "jobs", job);
	json_end_object(&w);
	json_end_object(&w);
	fputc('\n', out);
}

FILE *placement_stdout(void)
{
	int fd = dup(STDOUT_FILENO);
	FILE *f;

	/* the JSON keeps the real stdout; every other line accel-run prints goes to stderr */
	if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 || !(f = fdopen(fd, "w"))) {
		perror("accel-run: --placement");
		return NULL;
	}
	return f;
}
