// SPDX-License-Identifier: MIT
/* json.c — see json.h. */
#include "json.h"

#include <math.h>

void json_init(struct json_writer *w, FILE *out)
{
	w->out = out;
	w->depth = 0;
	w->need_comma[0] = false;
}

void json_write_string(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\b': fputs("\\b", out); break;
		case '\f': fputs("\\f", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		default:
			/* RFC 8259 §7: U+0000..U+001F must be escaped; DEL is legal but unreadable. */
			if (*p < 0x20 || *p == 0x7f)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

/* Comma and key before any value; marks the current level as non-empty. */
static void json_prefix(struct json_writer *w, const char *key)
{
	if (w->need_comma[w->depth])
		fputc(',', w->out);
	w->need_comma[w->depth] = true;
	if (key) {
		json_write_string(w->out, key);
		fputc(':', w->out);
	}
}

static void json_open(struct json_writer *w, const char *key, char c)
{
	json_prefix(w, key);
	fputc(c, w->out);
	if (w->depth + 1 < JSON_MAX_DEPTH)
		w->depth++;
	w->need_comma[w->depth] = false;
}

static void json_close(struct json_writer *w, char c)
{
	fputc(c, w->out);
	if (w->depth > 0)
		w->depth--;
}

void json_begin_object(struct json_writer *w, const char *key) { json_open(w, key, '{'); }
void json_end_object(struct json_writer *w) { json_close(w, '}'); }
void json_begin_array(struct json_writer *w, const char *key) { json_open(w, key, '['); }
void json_end_array(struct json_writer *w) { json_close(w, ']'); }

void json_str(struct json_writer *w, const char *key, const char *val)
{
	json_prefix(w, key);
	json_write_string(w->out, val);
}

void json_u64(struct json_writer *w, const char *key, uint64_t val)
{
	json_prefix(w, key);
	fprintf(w->out, "%llu", (unsigned long long)val);
}

void json_i64(struct json_writer *w, const char *key, int64_t val)
{
	json_prefix(w, key);
	fprintf(w->out, "%lld", (long long)val);
}

void json_double(struct json_writer *w, const char *key, double val, int decimals)
{
	json_prefix(w, key);
	if (!isfinite(val))
		fputs("null", w->out);
	else
		fprintf(w->out, "%.*f", decimals, val);
}

void json_bool(struct json_writer *w, const char *key, bool val)
{
	json_prefix(w, key);
	fputs(val ? "true" : "false", w->out);
}

void json_null(struct json_writer *w, const char *key)
{
	json_prefix(w, key);
	fputs("null", w->out);
}
