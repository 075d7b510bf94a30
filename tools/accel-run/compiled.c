/* SPDX-License-Identifier: MIT */
/* compiled.c - accel-run's compiled path (see compiled.h; Documentation/onnx.md, "The compiler"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "compiled.h"

int compiled_prepare(struct onnx_model *m, struct accel_dev *dev, const struct onnx_tensor *in, unsigned n_in,
		     unsigned flags, const char *load_cm, const char *save_cm, struct onnx_compiled **out)
{
	char err[600];
	int ret;

	if (load_cm)
		ret = onnx_compiled_load(m, dev, in, n_in, load_cm, out, err, sizeof(err));
	else
		ret = onnx_compile(m, dev, in, n_in, flags, out, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "accel-run: %s: %s\n", load_cm ? load_cm : "compile", err);
		return ret;
	}
	return save_cm ? compiled_save(*out, save_cm) : 0;
}

int compiled_save(const struct onnx_compiled *cm, const char *save_cm)
{
	char err[600];
	int ret = onnx_compiled_save(cm, save_cm, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "accel-run: --save-compiled %s: %s\n", save_cm, err);
		return ret;
	}
	printf("compiled model saved to %s\n", save_cm);
	return 0;
}

int compiled_open(struct accel_dev *dev, const char *path, struct onnx_compiled **out)
{
	char err[600];
	int ret = onnx_compiled_open(dev, path, out, err, sizeof(err));

	if (ret)
		fprintf(stderr, "accel-run: --compiled %s: %s\n", path, err);
	return ret;
}

int compiled_check(const char *path, const struct onnx_compiled *cm)
{
	const struct onnx_model *m = onnx_compiled_model(cm);
	struct onnx_compiled_info ci;

	if (onnx_compiled_info(cm, &ci))
		return -EINVAL;
	printf("%s: compatible with this device: %u steps (%u device jobs, %u host), arena %llu bytes, weights "
	       "%llu bytes; the model inside: %u nodes, inputs %u, outputs %u\n", path, ci.steps, ci.device_steps,
	       ci.host_steps, (unsigned long long)ci.arena_bytes, (unsigned long long)ci.weight_bytes,
	       onnx_model_n_graph_nodes(m), onnx_model_n_inputs(m), onnx_model_n_outputs(m));
	for (unsigned i = 0; i < onnx_model_n_inputs(m); i++) {
		struct onnx_tensor t;
		char desc[96];

		if (onnx_compiled_input_shape(cm, i, &t))
			return -EINVAL;
		onnx_tensor_describe(&t, desc, sizeof(desc));
		printf("  input '%s': %s\n", onnx_model_input_name(m, i), desc);
	}
	return 0;
}

int compiled_shapes(const struct onnx_compiled *cm, struct shape_arg *shapes, unsigned max, unsigned *n)
{
	const struct onnx_model *m = onnx_compiled_model(cm);
	unsigned k = onnx_model_n_inputs(m);

	if (k > max) {
		fprintf(stderr, "accel-run: more than %u inputs\n", max);
		return -EINVAL;
	}
	for (unsigned i = 0; i < k; i++) {
		struct onnx_tensor t;

		if (onnx_compiled_input_shape(cm, i, &t)) {
			fprintf(stderr, "accel-run: input %u: no compiled shape\n", i);
			return -EINVAL;
		}
		shapes[i].name = onnx_model_input_name(m, i);
		shapes[i].name_len = strlen(shapes[i].name);
		shapes[i].ndim = t.ndim;
		memcpy(shapes[i].dims, t.dims, sizeof(t.dims));
	}
	*n = k;
	return 0;
}

/* The placement table of print_placement() (profile.c), from the plan and the last compiled run. */
static void print_compiled_placement(const struct onnx_model *m, const struct onnx_compiled *cm)
{
	unsigned n = onnx_model_n_graph_nodes(m), dev = 0, host = 0, folded = 0, known = 0;

	printf("nodes (%u, model order):\n", n);
	for (unsigned i = 0; i < n; i++) {
		struct onnx_compiled_step s;
		struct onnx_node_info ni;
		char buf[256];

		if (onnx_model_node_info(m, i, &ni) || onnx_compiled_step_info(cm, i, &s))
			continue;
		if (ni.place == ONNX_PLACE_FOLDED) {
			snprintf(buf, sizeof(buf), "folded: %s", ni.reason);
			folded++;
		} else if (s.device) {
			snprintf(buf, sizeof(buf), "device");
			dev++;
		} else if (!strcmp(s.kind, "alias")) {
			snprintf(buf, sizeof(buf), "device: %s", s.reason);	/* a view, or a Concat in place */
			dev++;
		} else if (!strcmp(s.kind, "fused")) {
			snprintf(buf, sizeof(buf), "device: %s", s.reason);
			dev++;
		} else if (!strcmp(s.kind, "folded")) {	/* shape arithmetic computed when compiling */
			snprintf(buf, sizeof(buf), "folded: %s", s.reason);
			known++;
		} else if (s.ran_on_device == 1) {
			snprintf(buf, sizeof(buf), "device (node by node: own buffers and copies)");
			dev++;
		} else {
			snprintf(buf, sizeof(buf), "host: %s", ni.place == ONNX_PLACE_DEVICE ?
				 "the device lowering declined this node's attributes or types" : ni.reason);
			host++;
		}
		printf("  %4u %-18s %-64s %s\n", i, ni.op, buf, ni.name && ni.name[0] ? ni.name : "-");
	}
	printf("placement: %u on the device, %u on the host, %u folded at load time", dev, host, folded);
	if (known)
		printf(", %u computed at compile time", known);
	printf("\n");
}

void print_compiled(const struct onnx_model *m, const struct onnx_compiled *cm)
{
	struct onnx_compiled_info ci;

	print_compiled_placement(m, cm);

	onnx_compiled_info(cm, &ci);
	printf("compiled plan: %u nodes before fusion, %u steps after (%u device jobs, %u host), %u views, %u fused\n",
	       ci.nodes_before, ci.steps, ci.device_steps, ci.host_steps, ci.alias_steps, ci.fused_nodes);
	printf("  buffers: %u device buffer objects: activation arena %llu bytes + weights %llu bytes (uploaded "
	       "once)\n", ci.buffers, (unsigned long long)ci.arena_bytes, (unsigned long long)ci.weight_bytes);
	printf("  peak device memory %llu bytes; planner lower bound (largest live set + weights) %llu bytes: "
	       "%.3fx\n", (unsigned long long)ci.peak_bytes, (unsigned long long)ci.lower_bound,
	       ci.lower_bound ? (double)ci.peak_bytes / (double)ci.lower_bound : 1.0);
	printf("  jobs per run: %u, in %u chain%s of device-side dependencies (host steps between chains)\n",
	       ci.jobs_per_run, ci.chains, ci.chains == 1 ? "" : "s");
	printf("  steps (graph order; out@ = the output's arena offset):\n");
	printf("  %-4s %-28s %-18s %-8s %-7s %10s %10s  %s\n", "#", "node", "op", "step", "where", "out@", "bytes",
	       "reason");
	for (unsigned i = 0; i < onnx_model_n_graph_nodes(m); i++) {
		struct onnx_compiled_step s;
		char off[24] = "-", bytes[24] = "-";

		if (onnx_compiled_step_info(cm, i, &s))
			continue;
		if (s.out_offset >= 0) {
			snprintf(off, sizeof(off), "%lld", (long long)s.out_offset);
			snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)s.out_bytes);
		}
		printf("  %-4u %-28.28s %-18.18s %-8s %-7s %10s %10s  %s\n", i, s.name, s.op, s.kind,
		       s.device ? "device" : (s.kind[0] == 'h' ? "host" : "-"), off, bytes, s.reason ? s.reason : "");
	}
}
