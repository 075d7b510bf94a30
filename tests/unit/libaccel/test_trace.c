/* SPDX-License-Identifier: MIT */
/* Job timelines: accel_trace_* on the sim backend and the Chrome trace-event JSON they write. */
#include <ctype.h>
#include <unistd.h>

#include "common.h"

/* ---- a minimal structural JSON checker (RFC 8259 grammar, no semantics) ------------------------ */

static bool js_value(const char **p, int depth);

static void js_ws(const char **p)
{
	while (**p == ' ' || **p == '\n' || **p == '\r' || **p == '\t')
		(*p)++;
}

static bool js_string(const char **p)
{
	if (**p != '"')
		return false;
	for ((*p)++; **p != '"'; (*p)++) {
		if (!**p || (unsigned char)**p < 0x20)
			return false;
		if (**p == '\\') {
			(*p)++;
			if (!strchr("\"\\/bfnrtu", **p) || !**p)
				return false;
		}
	}
	(*p)++;
	return true;
}

static bool js_number(const char **p)
{
	const char *s = *p;

	if (**p == '-')
		(*p)++;
	if (!isdigit((unsigned char)**p))
		return false;
	if (**p == '0' && isdigit((unsigned char)(*p)[1]))
		return false;
	while (isdigit((unsigned char)**p))
		(*p)++;
	if (**p == '.') {
		(*p)++;
		if (!isdigit((unsigned char)**p))
			return false;
		while (isdigit((unsigned char)**p))
			(*p)++;
	}
	if (**p == 'e' || **p == 'E') {
		(*p)++;
		if (**p == '+' || **p == '-')
			(*p)++;
		if (!isdigit((unsigned char)**p))
			return false;
		while (isdigit((unsigned char)**p))
			(*p)++;
	}
	return *p > s;
}

static bool js_list(const char **p, int depth, char close, bool object)
{
	(*p)++;
	js_ws(p);
	if (**p == close) {
		(*p)++;
		return true;
	}
	for (;;) {
		js_ws(p);
		if (object) {
			if (!js_string(p))
				return false;
			js_ws(p);
			if (*(*p)++ != ':')
				return false;
		}
		if (!js_value(p, depth + 1))
			return false;
		js_ws(p);
		if (**p == close) {
			(*p)++;
			return true;
		}
		if (*(*p)++ != ',')
			return false;
	}
}

static bool js_value(const char **p, int depth)
{
	if (depth > 64)
		return false;
	js_ws(p);
	switch (**p) {
	case '{': return js_list(p, depth, '}', true);
	case '[': return js_list(p, depth, ']', false);
	case '"': return js_string(p);
	case 't': return !strncmp(*p, "true", 4) && (*p += 4);
	case 'f': return !strncmp(*p, "false", 5) && (*p += 5);
	case 'n': return !strncmp(*p, "null", 4) && (*p += 4);
	default: return js_number(p);
	}
}

static bool json_valid(const char *text)
{
	const char *p = text;

	if (!js_value(&p, 0))
		return false;
	js_ws(&p);
	return !*p;
}

static unsigned count_of(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	cr_assert_not_null(f, "%s not written", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

/* ---- helpers ------------------------------------------------------------------------------- */

static void gemm_i8(struct accel_dev *dev, uint32_t m, uint32_t n, uint32_t k, struct accel_counters *cnt)
{
	struct accel_buffer *ba = alloc_buf(dev, (uint64_t)m * k), *bb = alloc_buf(dev, (uint64_t)k * n);
	struct accel_buffer *bc = alloc_buf(dev, (uint64_t)m * n * 4);
	struct accel_tensor A, B, C;
	struct accel_gemm_desc d = { .a = &A, .b = &B, .c = &C };
	struct accel_job *job = NULL;
	uint64_t s = 5;
	int ret;

	accel_tensor_2d(ba, 0, ACCEL_INT8, m, k, &A);
	accel_tensor_2d(bb, 0, ACCEL_INT8, k, n, &B);
	accel_tensor_2d(bc, 0, ACCEL_INT32, m, n, &C);
	fill_i8(accel_buffer_ptr(ba), (size_t)m * k, &s);
	fill_i8(accel_buffer_ptr(bb), (size_t)k * n, &s);
	ret = accel_gemm(dev, &d, NULL, &job);
	cr_assert_eq(ret, 0, "gemm: %s", accel_last_error(dev));
	cr_assert_eq(accel_job_counters(job, cnt), 0);
	accel_job_free(job);
	accel_buffer_free(ba);
	accel_buffer_free(bb);
	accel_buffer_free(bc);
}

static void tmp_path(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/libaccel-trace-%ld.json", (long)getpid());
}

/* ---- tests --------------------------------------------------------------------------------- */

Test(trace, gemm_trace_is_chrome_json_with_named_lanes_and_one_slice_per_event)
{
	struct accel_dev *dev;
	struct accel_counters cnt;
	struct accel_caps caps;
	uint64_t n_ev = 0;
	char path[64], *text;

	if (!test_is_sim())
		cr_skip_test("job timelines need the sim backend");
	dev = open_dev(NULL);
	accel_query_caps(dev, &caps);
	tmp_path(path, sizeof(path));
	cr_assert_eq(accel_trace_begin(dev), 0, "%s", accel_last_error(dev));
	gemm_i8(dev, 256, 256, 256, &cnt);
	cr_assert_eq(accel_trace_end(dev), 0);
	cr_assert_eq(accel_trace_event_count(dev, &n_ev), 0);
	cr_assert_gt(n_ev, 0);
	cr_assert_eq(accel_trace_write_json(dev, path), 0, "%s", accel_last_error(dev));
	text = slurp(path);
	unlink(path);
	cr_assert(json_valid(text), "not valid JSON:\n%.400s", text);
	cr_assert_not_null(strstr(text, "\"traceEvents\":["));
	cr_assert_eq(count_of(text, "\"ph\":\"X\""), n_ev);
	cr_assert_geq(count_of(text, "\"name\":\"thread_name\""), 4 + caps.rows);
	cr_assert_not_null(strstr(text, "\"name\":\"LOAD (DMA in, IM2COL)\""));
	cr_assert_not_null(strstr(text, "\"name\":\"STORE (DMA out)\""));
	cr_assert_not_null(strstr(text, "\"name\":\"row 0 (compute + SFU)\""));
	cr_assert_gt(count_of(text, "\"name\":\"DMA_H2D\""), 0);
	cr_assert_gt(count_of(text, "\"name\":\"EXE\""), 0);
	cr_assert_gt(count_of(text, "\"name\":\"DMA_D2H\""), 0);
	free(text);
	accel_close(dev);
}

Test(trace, recording_changes_no_counter)
{
	struct accel_dev *dev;
	struct accel_counters off, on;

	if (!test_is_sim())
		cr_skip_test("job timelines need the sim backend");
	dev = open_dev(NULL);
	gemm_i8(dev, 128, 96, 160, &off);
	cr_assert_eq(accel_trace_begin(dev), 0);
	gemm_i8(dev, 128, 96, 160, &on);
	cr_assert_eq(memcmp(&off, &on, sizeof(on)), 0);
	accel_close(dev);	/* frees a recording still running */
}

Test(trace, jobs_outside_a_recording_are_not_traced_and_begin_starts_afresh)
{
	struct accel_dev *dev;
	struct accel_counters cnt;
	uint64_t first = 0, n = 0;

	if (!test_is_sim())
		cr_skip_test("job timelines need the sim backend");
	dev = open_dev(NULL);
	cr_assert_eq(accel_trace_begin(dev), 0);
	gemm_i8(dev, 64, 64, 64, &cnt);
	cr_assert_eq(accel_trace_end(dev), 0);
	cr_assert_eq(accel_trace_event_count(dev, &first), 0);
	gemm_i8(dev, 64, 64, 64, &cnt);
	cr_assert_eq(accel_trace_event_count(dev, &n), 0);
	cr_assert_eq(n, first, "a job after accel_trace_end was recorded");
	cr_assert_eq(accel_trace_begin(dev), 0);
	cr_assert_eq(accel_trace_event_count(dev, &n), 0);
	cr_assert_eq(n, 0);
	accel_close(dev);
}

Test(trace, misuse_is_rejected_with_a_message)
{
	struct accel_dev *dev = open_dev(NULL);
	uint64_t n;

	cr_assert_eq(accel_trace_begin(NULL), -EINVAL);
	cr_assert_eq(accel_trace_event_count(dev, NULL), -EINVAL);
	cr_assert_eq(accel_trace_end(dev), -EINVAL);
	cr_assert_neq(accel_last_error(dev)[0], 0);
	cr_assert_eq(accel_trace_write_json(dev, "/tmp/never-written.json"), -EINVAL);
	cr_assert_eq(accel_trace_event_count(dev, &n), 0);
	cr_assert_eq(n, 0);
	if (test_is_sim()) {
		cr_assert_eq(accel_trace_begin(dev), 0);
		cr_assert_eq(accel_trace_write_json(dev, "/nonexistent-dir/t.json"), -ENOENT);
		cr_assert_not_null(strstr(accel_last_error(dev), "/nonexistent-dir/t.json"));
	}
	accel_close(dev);
}

Test(trace, begin_on_a_drm_device_is_not_supported)
{
	struct accel_dev *dev;

	if (test_is_sim())
		cr_skip_test("needs a drm device (ACCEL_DEVICE=/dev/accel/accel0)");
	dev = open_dev(NULL);
	cr_assert_eq(accel_trace_begin(dev), -EOPNOTSUPP);
	cr_assert_not_null(strstr(accel_last_error(dev), "sim backend"), "message: %s", accel_last_error(dev));
	accel_close(dev);
}

Test(trace, json_checker_rejects_malformed_text)
{
	cr_assert(json_valid("{\"a\":[1,-2.5e3,\"x\\n\",true,null,{}]}"));
	cr_assert_not(json_valid("{\"a\":[1,]}"));
	cr_assert_not(json_valid("{\"a\":1"));
	cr_assert_not(json_valid("{\"a\":01}"));
	cr_assert_not(json_valid("{\"a\":1} x"));
	cr_assert_not(json_valid("{a:1}"));
}
