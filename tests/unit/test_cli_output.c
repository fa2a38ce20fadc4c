/*
 * test_cli_output.c - what every command prints through src/cli/output.c:
 * readable numbers, table cells cut in the middle, tables sized to their cells.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli/output.h"
#include "unit.h"

/* What f(o) writes through a cli_out, as a string (freed by the caller). */
static char *written(void (*f)(cli_out *o, const void *arg), const void *arg)
{
	char *text = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&text, &size);
	cr_assert(m);
	cli_out o;
	cli_out_init(&o, m);
	f(&o, arg);
	cli_out_close(&o);
	fclose(m);
	return text;
}

static void reset(void) { cli_raw_numbers = false; }

TestSuite(cli_output, .init = reset, .fini = reset);

Test(cli_output, counts_read_with_three_significant_figures_and_a_power_of_1000)
{
	char buf[32];
	EXPECT_STR(cli_human(0, "", buf, sizeof(buf)), "0");
	EXPECT_STR(cli_human(999, "", buf, sizeof(buf)), "999");
	EXPECT_STR(cli_human(1000, "", buf, sizeof(buf)), "1.00 K");
	EXPECT_STR(cli_human(25557032, "", buf, sizeof(buf)), "25.6 M");
	EXPECT_STR(cli_human(1822000000, "Mac", buf, sizeof(buf)), "1.82 GMac");
	EXPECT_STR(cli_human(999999, "", buf, sizeof(buf)), "1.00 M"); /* not "1000 K" */
	EXPECT_STR(cli_human(512, "Mac", buf, sizeof(buf)), "512 Mac");
	EXPECT_STR(cli_human(-2500, "", buf, sizeof(buf)), "-2.50 K");
}

Test(cli_output, raw_numbers_are_exact_integers)
{
	char buf[32];
	cli_raw_numbers = true;
	EXPECT_STR(cli_human(25557032, "Mac", buf, sizeof(buf)), "25557032");
}

typedef struct cell {
	const char *s;
	int width;
	cli_align align;
	bool last;
} cell;

static void put_cell(cli_out *o, const void *arg)
{
	const cell *c = arg;
	cli_out_cell(o, c->s, c->width, c->align, c->last);
	cli_out_puts(o, "|");
}

static void expect_cell(const char *s, int width, cli_align align, bool last, const char *want)
{
	cell c = {s, width, align, last};
	char *got = written(put_cell, &c);
	EXPECT_STR(got, want);
	free(got);
}

Test(cli_output, a_cell_is_padded_to_its_width_or_cut_in_the_middle)
{
	expect_cell("abc", 5, CLI_LEFT, false, "abc  |");
	expect_cell("abc", 5, CLI_RIGHT, false, "  abc|");
	expect_cell("abc", 5, CLI_LEFT, true, "abc|");
	/* 10 columns: 4 of the start, the ellipsis, 5 of the end */
	expect_cell("layers.12.attention.weight", 10, CLI_LEFT, false, "laye" CLI_ELLIPSIS "eight|");
	/* a control character is escaped before it is measured and cut */
	expect_cell("a\x1b" "bcdefghij", 8, CLI_LEFT, false, "a\\x" CLI_ELLIPSIS "ghij|");
	EXPECT_INT(cli_text_width("a\x1b" "b"), 6);
	EXPECT_INT(cli_text_width("caf\xc3\xa9"), 4);
}

static const cli_column columns[] = {{"NAME", CLI_LEFT, 8}, {"BYTES", CLI_RIGHT, 0}, {"NOTES", CLI_LEFT, 0}};

static void put_table(cli_out *o, const void *arg)
{
	(void)arg;
	cli_table t;
	cli_table_init(&t, columns, 3);
	cli_table_add(&t, (const char *const[]){"a", "4 B", "param"});
	cli_table_add(&t, (const char *const[]){"a.very.long.name", "1.50 KiB", NULL});
	cr_assert(cli_table_print(&t, o));
	cli_table_free(&t);
}

Test(cli_output, a_table_is_as_wide_as_its_cells_two_spaces_apart_without_trailing_blanks)
{
	char *got = written(put_table, NULL);
	EXPECT_STR(got, "NAME         BYTES  NOTES\n"
	                "a              4 B  param\n"
	                "a.v" CLI_ELLIPSIS "name  1.50 KiB\n");
	free(got);
}

static void put_rules(cli_out *o, const void *arg)
{
	(void)arg;
	static const cli_column cols[] = {{"TERM", CLI_LEFT, 0}, {"RULE", CLI_WRAP, 0}};
	cli_table t;
	cli_table_init(&t, cols, 2);
	const char *row[] = {"state", "Adam: exp_avg + exp_avg_sq per trainable parameter, a_word_longer_than_a_line_of_twenty"};
	cli_table_add(&t, row);
	cr_assert(cli_table_print(&t, o));
	cli_table_free(&t);
}

Test(cli_output, a_rule_wraps_at_spaces_to_the_terminal_and_is_never_cut)
{
	setenv("COLUMNS", "30", 1);
	char *got = written(put_rules, NULL);
	unsetenv("COLUMNS");
	EXPECT_STR(got, "TERM   RULE\n"
	                "state  Adam: exp_avg +\n"
	                "       exp_avg_sq per\n"
	                "       trainable parameter,\n"
	                "       a_word_longer_than_a_line_of_twenty\n");
	free(got);
}

Test(cli_output, a_rule_is_one_whole_line_when_the_width_is_unknown)
{
	unsetenv("COLUMNS");
	char *got = written(put_rules, NULL); /* a memory stream is no terminal */
	EXPECT_STR(got, "TERM   RULE\n"
	                "state  Adam: exp_avg + exp_avg_sq per trainable parameter, a_word_longer_than_a_line_of_twenty\n");
	free(got);
}

Test(cli_output, json_from_a_name_that_is_not_utf8_stays_json)
{
	char *text = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&text, &size);
	cr_assert(m);
	cli_json_doc d;
	cli_json_begin(&d, m);
	cli_json_member(&d, "record", cJSON_CreateString("a\xff" "b\xed\xa0\x80" "c\xc3\xa9"));
	cli_json_end(&d);
	fclose(m);
	/* each stray byte is U+FFFD; valid UTF-8 (é) passes through */
	cr_expect(strstr(text, "\"a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "c\xc3\xa9\""), "got %s", text);
	free(text);
}

static void put_ints(cli_out *o, const void *arg)
{
	(void)arg;
	static const int64_t v[] = {0, 7, 9, 10, 99, 100, 1024, 65536, -1, -10, 999999999999, INT64_MAX, INT64_MIN};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cli_out_int(o, v[i]);
		cli_out_put(o, " ", 1);
	}
}

Test(cli_output, integers_are_written_as_printf_writes_them)
{
	char *got = written(put_ints, NULL);
	EXPECT_STR(got, "0 7 9 10 99 100 1024 65536 -1 -10 999999999999 9223372036854775807 -9223372036854775808 ");
	free(got);
}

static void put_shapes(cli_out *o, const void *arg)
{
	(void)arg;
	static const int64_t d[] = {8, 3, -7, 7};
	cli_out_dims(o, d, 0);
	cli_out_dims(o, d, 1);
	cli_out_dims(o, d, 4);
}

Test(cli_output, dims_are_written_as_cli_dims_spells_them)
{
	static const int64_t d[] = {8, 3, -7, 7};
	char want[128], a[32], b[32], c[32];
	snprintf(want, sizeof(want), "%s%s%s", cli_dims(d, 0, a, sizeof(a)), cli_dims(d, 1, b, sizeof(b)),
	         cli_dims(d, 4, c, sizeof(c)));
	char *got = written(put_shapes, NULL);
	EXPECT_STR(got, want);
	EXPECT_STR(got, "[][8][8, 3, -7, 7]");
	free(got);
}

static void put_json_strings(cli_out *o, const void *arg)
{
	for (const char *const *s = arg; *s; s++) {
		cli_out_json_string(o, *s);
		cli_out_put(o, "\n", 1);
	}
}

Test(cli_output, json_strings_are_escaped_as_cjson_escapes_them_wherever_the_escape_falls)
{
	/* escapes in the first word, in a whole word, in the last few bytes; plain strings of every length */
	static const char *const strings[] = {
		"", "a", "blocks.0.p0", "layers.12.attention.weight", "exactly8", "sixteen-bytes-ok",
		"\"quoted\"", "tab\there", "0123456789abcde\\", "01234567\x01", "x\x1f", "caf\xc3\xa9 \xff", NULL,
	};
	char *got = written(put_json_strings, strings);
	char want[1024] = "";
	for (const char *const *s = strings; *s; s++) {
		cJSON *j = cJSON_CreateString(*s);
		char *text = cJSON_PrintUnformatted(j);
		strcat(want, text);
		strcat(want, "\n");
		cJSON_free(text);
		cJSON_Delete(j);
	}
	EXPECT_STR(got, want);
	free(got);
}
