/* SPDX-License-Identifier: MIT */
/* profile.c - accel-run --info / --profile (profile.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

static void print_value(const struct onnx_value_desc *vi)
{
	printf("  '%s': %s ", vi->name, vi->dtype ? onnx_dtype_name(vi->dtype) : "(type not declared)");
	if (vi->ndim < 0) {
		printf("(shape not declared)\n");
		return;
	}
	printf("[");
	for (int d = 0; d < vi->ndim; d++) {
		if (vi->dims[d] >= 0)
			printf("%s%" PRId64, d ? "," : "", vi->dims[d]);
		else
			printf("%s?", d ? "," : "");
	}
	printf("]\n");
}

void print_io(const struct onnx_model *m)
{
	struct onnx_value_desc vi;

	printf("inputs:\n");
	for (unsigned i = 0; i < onnx_model_n_inputs(m); i++)
		if (!onnx_model_input_desc(m, i, &vi))
			print_value(&vi);
	printf("outputs:\n");
	for (unsigned i = 0; i < onnx_model_n_outputs(m); i++)
		if (!onnx_model_output_desc(m, i, &vi))
			print_value(&vi);
}

/* Where a node ran: the run's fact (prof) with the library's static reason (onnx_model_node_info). */
static const char *where(const struct onnx_node_info *ni, const struct onnx_node_profile *p, bool cpu,
			 char *buf, size_t len)
{
	if (ni->place == ONNX_PLACE_FOLDED)
		snprintf(buf, len, "folded: %s", ni->reason);
	else if (cpu)
		snprintf(buf, len, "host: CPU reference executor (--cpu)");
	else if (!p || !p->ran)
		snprintf(buf, len, "not run (an earlier node failed)");
	else if (p->failed)
		snprintf(buf, len, "failed (the run's error names the node)");
	else if (p->on_device && !p->counters.hw_jobs)
		snprintf(buf, len, "device API, run on the host by libaccel (hw_jobs 0)");
	else if (p->on_device)
		snprintf(buf, len, "device");
	else if (ni->place == ONNX_PLACE_DEVICE)
		snprintf(buf, len, "host: the device lowering declined this node's attributes or types");
	else
		snprintf(buf, len, "host: %s", ni->reason ? ni->reason : "?");
	return buf;
}

void print_placement(const struct onnx_model *m, const struct onnx_node_profile *prof, bool cpu)
{
	unsigned n = onnx_model_n_graph_nodes(m), dev = 0, host = 0, folded = 0;
	struct onnx_node_info ni;
	char buf[256];

	printf("nodes (%u, model order):\n", n);
	for (unsigned i = 0; i < n; i++) {
		if (onnx_model_node_info(m, i, &ni))
			continue;
		printf("  %4u %-18s %-64s %s\n", i, ni.op, where(&ni, prof ? &prof[i] : NULL, cpu, buf, sizeof(buf)),
		       ni.name && ni.name[0] ? ni.name : "-");
		folded += ni.place == ONNX_PLACE_FOLDED;
		if (ni.place != ONNX_PLACE_FOLDED && !cpu && prof && prof[i].ran && !prof[i].failed)
			dev += prof[i].on_device, host += !prof[i].on_device;
		else if (ni.place != ONNX_PLACE_FOLDED && cpu)
			host++;
	}
	printf("placement: %u on the device, %u on the host, %u folded at load time\n", dev, host, folded);
}

/* Where a step of the compiled plan ran: its kind and device jobs, or why it stayed on the host. */
static const char *step_where(const struct onnx_compiled *cm, unsigned i, const struct onnx_node_profile *p,
			      char *buf, size_t len)
{
	struct onnx_compiled_step st;

	if (onnx_compiled_step_info(cm, i, &st))
		snprintf(buf, len, "?");
	else if (p->failed)
		snprintf(buf, len, "failed (the run's error names the node)");
	else if (p->on_device)
		snprintf(buf, len, "device: %s, %u job%s", st.kind, p->counters.hw_jobs, p->counters.hw_jobs == 1 ? "" : "s");
	else
		snprintf(buf, len, "host: %s", st.reason ? st.reason : "?");
	return buf;
}

void print_profile(const struct onnx_model *m, const struct onnx_node_profile *prof, bool cpu,
		   const struct onnx_compiled *cm)
{
	unsigned n = onnx_model_n_graph_nodes(m), merged = 0;
	double ms = 0;
	uint64_t cyc = 0, bytes = 0;
	struct onnx_node_info ni;
	char buf[256];

	if (cm)
		printf("profile (one run of the compiled plan, by step: a step's jobs on the node it was made from; "
		       "host ms = a host step's run or a device step's lowering and submission; bytes = DMA "
		       "host->device + device->host):\n");
	else
		printf("profile (one run; host ms = wall clock of the node, device waits included; bytes = DMA "
		       "host->device + device->host):\n");
	printf("  %4s %-18s %10s %12s %12s  %-64s %s\n", "node", "op", "host ms", "dev cycles", "bytes", "where", "name");
	for (unsigned i = 0; i < n; i++) {
		const struct onnx_node_profile *p = &prof[i];
		uint64_t b = p->counters.bytes_h2d + p->counters.bytes_d2h;

		if (onnx_model_node_info(m, i, &ni) || ni.place == ONNX_PLACE_FOLDED)
			continue;
		if (!p->ran) {
			merged += cm != NULL;
			continue;
		}
		printf("  %4u %-18s %10.3f %12" PRIu64 " %12" PRIu64 "  %-64s %s\n", i, ni.op, p->host_ms,
		       p->counters.total_cycles, b,
		       cm ? step_where(cm, i, p, buf, sizeof(buf)) : where(&ni, p, cpu, buf, sizeof(buf)),
		       ni.name && ni.name[0] ? ni.name : "-");
		ms += p->host_ms;
		cyc += p->counters.total_cycles;
		bytes += b;
	}
	printf("  %4s %-18s %10.3f %12" PRIu64 " %12" PRIu64 "\n", "", "total", ms, cyc, bytes);
	if (merged)
		printf("  (%u more nodes ran inside the steps above: fused, views, folded Q/DQ; accel-run --info "
		       "names the step of each)\n", merged);
}

/* JSON string contents: node names come from the model file. */
static void json_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long l;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (l = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
	    (buf = malloc((size_t)l + 1)) && fread(buf, 1, (size_t)l, f) == (size_t)l) {
		buf[l] = 0;
		*len = (size_t)l;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* The graph process (pid 0): lane 1 the nodes on the host's wall clock, lane 2 the device nodes laid
 * on the device time line (their jobs' cycles end to end, as libaccel lays out the jobs). */
static void graph_events(FILE *f, const struct onnx_model *m, const struct onnx_node_profile *prof, double mhz)
{
	uint64_t cyc = 0;
	struct onnx_node_info ni;

	fprintf(f, "\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"graph\"}},"
		"\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":1,\"args\":{\"name\":\"nodes (host wall clock)\"}},"
		"\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":2,\"args\":{\"name\":\"device nodes (device time)\"}}");
	for (unsigned i = 0; i < onnx_model_n_graph_nodes(m); i++) {
		const struct onnx_node_profile *p = &prof[i];

		if (onnx_model_node_info(m, i, &ni) || ni.place == ONNX_PLACE_FOLDED || !p->ran)
			continue;
		fprintf(f, ",\n{\"name\":\"");
		json_str(f, ni.op);
		fprintf(f, "\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":0,\"tid\":1,\"args\":{\"node\":%u,"
			"\"name\":\"", p->on_device ? "device" : "host", p->start_ms * 1e3, p->host_ms * 1e3, i);
		json_str(f, ni.name ? ni.name : "");
		fprintf(f, "\",\"device_cycles\":%" PRIu64 ",\"bytes\":%" PRIu64 "}}", p->counters.total_cycles,
			p->counters.bytes_h2d + p->counters.bytes_d2h);
		if (!p->counters.total_cycles)
			continue;
		fprintf(f, ",\n{\"name\":\"");
		json_str(f, ni.op);
		fprintf(f, "\",\"cat\":\"device\",\"ph\":\"X\",\"ts\":%.4f,\"dur\":%.4f,\"pid\":0,\"tid\":2,"
			"\"args\":{\"node\":%u,\"hw_jobs\":%u}}", (double)cyc / mhz, (double)p->counters.total_cycles / mhz,
			i, p->counters.hw_jobs);
		cyc += p->counters.total_cycles;
	}
}

int write_trace(const char *path, const char *dev_trace_json, const struct onnx_model *m,
		const struct onnx_node_profile *prof, unsigned clock_mhz)
{
	static const char key[] = "\"traceEvents\":[";
	char *dev = NULL, *events = NULL;
	size_t len = 0;
	FILE *f;
	int ret = 0;

	if (dev_trace_json) {
		dev = slurp(dev_trace_json, &len);
		events = dev ? strstr(dev, key) : NULL;
		if (!events) {
			fprintf(stderr, "accel-run: %s: not libaccel's trace JSON\n", dev_trace_json);
			free(dev);
			return -EINVAL;
		}
		events += sizeof(key) - 1;
	}
	f = fopen(path, "w");
	if (!f) {
		ret = -errno;
		fprintf(stderr, "accel-run: cannot create %s: %s\n", path, strerror(errno));
		free(dev);
		return ret;
	}
	if (dev) {
		fwrite(dev, 1, (size_t)(events - dev), f);
	} else {
		fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock_mhz\":%u},\n%s", clock_mhz, key);
	}
	graph_events(f, m, prof, clock_mhz ? clock_mhz : 1);
	if (dev) {
		const char *rest = events;

		while (*rest == '\n' || *rest == ' ')
			rest++;
		if (*rest != ']')
			fputc(',', f);
		fputs(events, f);
	} else {
		fprintf(f, "\n]}\n");
	}
	if (ferror(f))
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -EIO;
	if (ret)
		fprintf(stderr, "accel-run: write error on %s\n", path);
	free(dev);
	return ret;
}
