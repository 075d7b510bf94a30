/* SPDX-License-Identifier: MIT */
/*
 * json.h — a tiny streaming JSON writer shared by accel-info and accel-top.
 *
 * The writer tracks nesting and commas so callers only name keys and values; strings are escaped per
 * RFC 8259 (quote, backslash, control characters; bytes >= 0x80 are passed through, so UTF-8 stays UTF-8).
 * Output is compact (one line) so `accel-top --json` gives one JSON document per line.
 * Misuse (too deep, value without key in an object) is not checked beyond the depth bound: callers are
 * our own two tools.
 */
#ifndef ACCEL_TOOLS_JSON_H
#define ACCEL_TOOLS_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json_writer {
	FILE *out;
	int depth;
	bool need_comma[JSON_MAX_DEPTH];
};

void json_init(struct json_writer *w, FILE *out);
/* Writes the escaped, quoted form of s (NULL is written as null). */
void json_write_string(FILE *out, const char *s);

void json_begin_object(struct json_writer *w, const char *key);	/* key NULL inside arrays/top */
void json_end_object(struct json_writer *w);
void json_begin_array(struct json_writer *w, const char *key);
void json_end_array(struct json_writer *w);
void json_str(struct json_writer *w, const char *key, const char *val);
void json_u64(struct json_writer *w, const char *key, uint64_t val);
void json_i64(struct json_writer *w, const char *key, int64_t val);
/* Non-finite values are written as null (JSON has no NaN/Inf). */
void json_double(struct json_writer *w, const char *key, double val, int decimals);
void json_bool(struct json_writer *w, const char *key, bool val);
void json_null(struct json_writer *w, const char *key);

#endif
