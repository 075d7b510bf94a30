// SPDX-License-Identifier: MIT
/* JSON writer: escaping and structure (tools/accel-info/json.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "json.h"

struct capture {
	char *buf;
	size_t len;
	FILE *f;
};

static void cap_open(struct capture *c)
{
	c->buf = NULL;
	c->f = open_memstream(&c->buf, &c->len);
	cr_assert_not_null(c->f);
}

static const char *cap_close(struct capture *c)
{
	fclose(c->f);
	return c->buf;
}

static char *escaped(const char *s)
{
	struct capture c;

	cap_open(&c);
	json_write_string(c.f, s);
	return (char *)cap_close(&c);
}

Test(json, quote_and_backslash_are_escaped)
{
	char *s = escaped("a\"b\\c");

	cr_assert_str_eq(s, "\"a\\\"b\\\\c\"");
	free(s);
}

Test(json, short_escapes_for_newline_tab_and_friends)
{
	char *s = escaped("\n\r\t\b\f");

	cr_assert_str_eq(s, "\"\\n\\r\\t\\b\\f\"");
	free(s);
}

Test(json, other_control_characters_and_del_become_unicode_escapes)
{
	char *s = escaped("\x01\x1f\x7f");

	cr_assert_str_eq(s, "\"\\u0001\\u001f\\u007f\"");
	free(s);
}

Test(json, utf8_and_slash_pass_through_unchanged)
{
	char *s = escaped("µs/é");

	cr_assert_str_eq(s, "\"µs/é\"");
	free(s);
}

Test(json, null_string_is_json_null)
{
	char *s = escaped(NULL);

	cr_assert_str_eq(s, "null");
	free(s);
}

Test(json, nested_containers_get_commas_only_between_members)
{
	struct capture c;
	struct json_writer w;

	cap_open(&c);
	json_init(&w, c.f);
	json_begin_object(&w, NULL);
	json_str(&w, "a", "x");
	json_begin_array(&w, "list");
	json_u64(&w, NULL, 1);
	json_begin_object(&w, NULL);
	json_end_object(&w);
	json_i64(&w, NULL, -2);
	json_end_array(&w);
	json_begin_array(&w, "empty");
	json_end_array(&w);
	json_bool(&w, "t", true);
	json_null(&w, "n");
	json_end_object(&w);
	char *s = (char *)cap_close(&c);

	cr_assert_str_eq(s, "{\"a\":\"x\",\"list\":[1,{},-2],\"empty\":[],\"t\":true,\"n\":null}");
	free(s);
}

Test(json, keys_are_escaped_too)
{
	struct capture c;
	struct json_writer w;

	cap_open(&c);
	json_init(&w, c.f);
	json_begin_object(&w, NULL);
	json_u64(&w, "k\"ey", 18446744073709551615ull);
	json_end_object(&w);
	char *s = (char *)cap_close(&c);

	cr_assert_str_eq(s, "{\"k\\\"ey\":18446744073709551615}");
	free(s);
}

Test(json, non_finite_doubles_are_null_and_finite_use_fixed_decimals)
{
	struct capture c;
	struct json_writer w;

	cap_open(&c);
	json_init(&w, c.f);
	json_begin_array(&w, NULL);
	json_double(&w, NULL, NAN, 2);
	json_double(&w, NULL, INFINITY, 2);
	json_double(&w, NULL, 1.5, 2);
	json_double(&w, NULL, 3.0, 0);
	json_end_array(&w);
	char *s = (char *)cap_close(&c);

	cr_assert_str_eq(s, "[null,null,1.50,3]");
	free(s);
}
