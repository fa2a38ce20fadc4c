/*
 * test_ci_report.c - check's and diff's results as CI systems read them
 * (src/cli/ci_report.c): JUnit XML and GitHub workflow commands, byte for
 * byte, escaping and invalid UTF-8 included.
 *
 * With CI_REPORT_SAMPLE set to a path, sample_document_has_every_outcome
 * also writes its document there, for tests/ci/run.sh to validate against
 * tests/ci/junit.xsd with xmllint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/ci_report.h"
#include "unit.h"

/* What a writer puts in a file, as a string (freed by the caller); *rc its return value. */
static char *junit(const char *name, const ci_case *cases, size_t count, int *rc)
{
	char *text = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&text, &size);
	cr_assert(m);
	*rc = ci_write_junit(m, name, cases, count);
	cr_assert(fclose(m) == 0);
	return text;
}

static char *github(const ci_case *cases, size_t count, int *rc)
{
	char *text = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&text, &size);
	cr_assert(m);
	*rc = ci_write_github(m, cases, count);
	cr_assert(fclose(m) == 0);
	return text;
}

#define EXPECT_JUNIT(name, cases, count, want)                                                \
	do {                                                                                  \
		int rc_;                                                                      \
		char *text_ = junit(name, cases, count, &rc_);                                \
		EXPECT_INT(rc_, 0);                                                           \
		EXPECT_STR(text_, want);                                                      \
		free(text_);                                                                  \
	} while (0)

#define EXPECT_GITHUB(cases, count, want)                                                     \
	do {                                                                                  \
		int rc_;                                                                      \
		char *text_ = github(cases, count, &rc_);                                     \
		EXPECT_INT(rc_, 0);                                                           \
		EXPECT_STR(text_, want);                                                      \
		free(text_);                                                                  \
	} while (0)

#define HEADER "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define PAIR "m.json &lt;- m.pt"

Test(ci_report, writes_an_empty_report_as_a_document_without_suites)
{
	EXPECT_JUNIT("tinspect check", NULL, 0,
	             HEADER "<testsuites name=\"tinspect check\" tests=\"0\" failures=\"0\" errors=\"0\" "
	                    "skipped=\"0\" time=\"0.000\">\n"
	                    "</testsuites>\n");
}

Test(ci_report, writes_one_testcase_per_check_with_every_outcome)
{
	ci_case cases[] = {
		{"m.json <- m.pt", "load_state_dict", "m.pt", CI_FAIL, "size mismatch for fc.weight",
		 "Error(s) in loading state_dict for Net:\n\tsize mismatch for fc.weight", 0.0126},
		{"m.json <- m.pt", "shapes", NULL, CI_SKIPPED, "load_state_dict failed", NULL, 0},
		{"m.json <- m.pt", "memory", NULL, CI_PASS, NULL, NULL, 1.5},
		{"m.json <- m.pt", "dtype", "m.pt", CI_ERROR, NULL, "cannot read 'data/3'", 2},
	};
	EXPECT_JUNIT("tinspect check", cases, 4,
	             HEADER "<testsuites name=\"tinspect check\" tests=\"4\" failures=\"1\" errors=\"1\" "
	                    "skipped=\"1\" time=\"3.513\">\n"
	                    "  <testsuite name=\"" PAIR "\" tests=\"4\" failures=\"1\" errors=\"1\" "
	                    "skipped=\"1\" time=\"3.513\">\n"
	                    "    <testcase name=\"load_state_dict\" classname=\"" PAIR "\" time=\"0.013\">\n"
	                    "      <failure message=\"size mismatch for fc.weight\" type=\"load_state_dict\">"
	                    "Error(s) in loading state_dict for Net:\n\tsize mismatch for fc.weight</failure>\n"
	                    "    </testcase>\n"
	                    "    <testcase name=\"shapes\" classname=\"" PAIR "\" time=\"0.000\">\n"
	                    "      <skipped message=\"load_state_dict failed\"/>\n"
	                    "    </testcase>\n"
	                    "    <testcase name=\"memory\" classname=\"" PAIR "\" time=\"1.500\"/>\n"
	                    "    <testcase name=\"dtype\" classname=\"" PAIR "\" time=\"2.000\">\n"
	                    "      <error message=\"dtype\" type=\"dtype\">cannot read 'data/3'</error>\n"
	                    "    </testcase>\n"
	                    "  </testsuite>\n"
	                    "</testsuites>\n");
}

Test(ci_report, groups_cases_into_suites_in_first_seen_order)
{
	ci_case cases[] = {
		{"b", "load_state_dict", NULL, CI_PASS, NULL, NULL, 0.001},
		{"a", "load_state_dict", NULL, CI_FAIL, "t", NULL, 0.002},
		{"b", "shapes", NULL, CI_PASS, NULL, NULL, 0.003},
	};
	EXPECT_JUNIT("x", cases, 3,
	             HEADER "<testsuites name=\"x\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"0\" "
	                    "time=\"0.006\">\n"
	                    "  <testsuite name=\"b\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"0\" "
	                    "time=\"0.004\">\n"
	                    "    <testcase name=\"load_state_dict\" classname=\"b\" time=\"0.001\"/>\n"
	                    "    <testcase name=\"shapes\" classname=\"b\" time=\"0.003\"/>\n"
	                    "  </testsuite>\n"
	                    "  <testsuite name=\"a\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" "
	                    "time=\"0.002\">\n"
	                    "    <testcase name=\"load_state_dict\" classname=\"a\" time=\"0.002\">\n"
	                    "      <failure message=\"t\" type=\"load_state_dict\"/>\n"
	                    "    </testcase>\n"
	                    "  </testsuite>\n"
	                    "</testsuites>\n");
}

Test(ci_report, escapes_markup_quotes_and_line_breaks_in_attributes)
{
	ci_case c = {"<a> & \"b\"", "it's", NULL, CI_FAIL, "line 1\nline 2\r\tend", NULL, 0};
	EXPECT_JUNIT("n", &c, 1,
	             HEADER "<testsuites name=\"n\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" "
	                    "time=\"0.000\">\n"
	                    "  <testsuite name=\"&lt;a&gt; &amp; &quot;b&quot;\" tests=\"1\" failures=\"1\" "
	                    "errors=\"0\" skipped=\"0\" time=\"0.000\">\n"
	                    "    <testcase name=\"it&apos;s\" classname=\"&lt;a&gt; &amp; &quot;b&quot;\" "
	                    "time=\"0.000\">\n"
	                    "      <failure message=\"line 1&#10;line 2&#13;&#9;end\" type=\"it&apos;s\"/>\n"
	                    "    </testcase>\n"
	                    "  </testsuite>\n"
	                    "</testsuites>\n");
}

Test(ci_report, escapes_markup_in_text_and_keeps_its_line_breaks)
{
	ci_case c = {"s", "n", NULL, CI_ERROR, "t", "a < b && c > d ]]>\n\"q\"\r\n", 0};
	EXPECT_JUNIT("n", &c, 1,
	             HEADER "<testsuites name=\"n\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" "
	                    "time=\"0.000\">\n"
	                    "  <testsuite name=\"s\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" "
	                    "time=\"0.000\">\n"
	                    "    <testcase name=\"n\" classname=\"s\" time=\"0.000\">\n"
	                    "      <error message=\"t\" type=\"n\">a &lt; b &amp;&amp; c &gt; d ]]&gt;\n"
	                    "\"q\"&#13;\n</error>\n"
	                    "    </testcase>\n"
	                    "  </testsuite>\n"
	                    "</testsuites>\n");
}

Test(ci_report, writes_invalid_utf8_and_forbidden_characters_as_replacement_characters)
{
	/* A lone continuation byte, a truncated 3-byte sequence (one U+FFFD, then the 'x'), an
	 * overlong '/', a surrogate, a C0 control and U+FFFF; then é and 😀, which stay. */
	ci_case c = {"s", "n", NULL, CI_FAIL, "\x80|\xE2\x82x|\xC0\xAF|\xED\xA0\x80|\x01|\xEF\xBF\xBF",
	             "\xC3\xA9\xF0\x9F\x98\x80\x1b[0m", 0};
	EXPECT_JUNIT("n", &c, 1,
	             HEADER "<testsuites name=\"n\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" "
	                    "time=\"0.000\">\n"
	                    "  <testsuite name=\"s\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" "
	                    "time=\"0.000\">\n"
	                    "    <testcase name=\"n\" classname=\"s\" time=\"0.000\">\n"
	                    "      <failure message=\"\xEF\xBF\xBD|\xEF\xBF\xBDx|\xEF\xBF\xBD\xEF\xBF\xBD|"
	                    "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD|\xEF\xBF\xBD\" type=\"n\">"
	                    "\xC3\xA9\xF0\x9F\x98\x80\xEF\xBF\xBD[0m</failure>\n"
	                    "    </testcase>\n"
	                    "  </testsuite>\n"
	                    "</testsuites>\n");
}

Test(ci_report, replaces_a_sequence_cut_by_the_end_of_the_string)
{
	ci_case c = {"\xF0\x9F\x98", "n", NULL, CI_PASS, NULL, NULL, 0};
	int rc;
	char *got = junit("n", &c, 1, &rc);
	EXPECT_INT(rc, 0);
	EXPECT_CONTAINS(got, "<testsuite name=\"\xEF\xBF\xBD\" ");
	free(got);
}

Test(ci_report, writes_times_with_three_decimals_and_clamps_nonsense)
{
	ci_case cases[] = {
		{"s", "a", NULL, CI_PASS, NULL, NULL, 0.0004},
		{"s", "b", NULL, CI_PASS, NULL, NULL, 0.0006},
		{"s", "c", NULL, CI_PASS, NULL, NULL, -3},
		{"s", "d", NULL, CI_PASS, NULL, NULL, NAN},
		{"s", "e", NULL, CI_PASS, NULL, NULL, 12.3456},
	};
	int rc;
	char *got = junit("n", cases, 5, &rc);
	EXPECT_INT(rc, 0);
	EXPECT_CONTAINS(got, "name=\"a\" classname=\"s\" time=\"0.000\"");
	EXPECT_CONTAINS(got, "name=\"b\" classname=\"s\" time=\"0.001\"");
	EXPECT_CONTAINS(got, "name=\"c\" classname=\"s\" time=\"0.000\"");
	EXPECT_CONTAINS(got, "name=\"d\" classname=\"s\" time=\"0.000\"");
	EXPECT_CONTAINS(got, "name=\"e\" classname=\"s\" time=\"12.346\"");
	EXPECT_CONTAINS(got, "skipped=\"0\" time=\"12.347\">\n  <testsuite");
	free(got);
}

Test(ci_report, defaults_a_missing_suite_to_the_report_name)
{
	ci_case c = {NULL, "n", NULL, CI_PASS, NULL, NULL, 0};
	int rc;
	char *got = junit(NULL, &c, 1, &rc);
	EXPECT_INT(rc, 0);
	EXPECT_CONTAINS(got, "<testsuites name=\"tinspect\" ");
	EXPECT_CONTAINS(got, "<testsuite name=\"tinspect\" ");
	free(got);
}

Test(ci_report, counts_an_unknown_outcome_as_an_error)
{
	ci_case c = {"s", "n", NULL, (ci_outcome)42, NULL, NULL, 0};
	int rc;
	char *got = junit("n", &c, 1, &rc);
	EXPECT_INT(rc, 0);
	EXPECT_CONTAINS(got, "errors=\"1\"");
	EXPECT_CONTAINS(got, "<error message=\"n\" type=\"n\"/>");
	free(got);
	got = github(&c, 1, &rc);
	EXPECT_STR(got, "::error title=n::n\n");
	free(got);
}

Test(ci_report, reports_a_failed_write)
{
	ci_case c = {"s", "n", NULL, CI_FAIL, NULL, NULL, 0};
	FILE *f = fopen("/dev/full", "w");
	if (!f)
		cr_skip_test("no /dev/full");
	EXPECT_INT(ci_write_junit(f, "n", &c, 1), -1);
	EXPECT_INT(ci_write_github(f, &c, 1), -1);
	fclose(f);
}

Test(ci_report, writes_one_github_error_per_failed_or_errored_case)
{
	ci_case cases[] = {
		{"s", "load_state_dict", "m.pt", CI_FAIL, "size mismatch for fc.weight", "the whole text", 0},
		{"s", "shapes", "m.pt", CI_SKIPPED, "skipped", "not made", 0},
		{"s", "memory", NULL, CI_PASS, NULL, NULL, 0},
		{"s", "dtype", NULL, CI_ERROR, NULL, "cannot read 'm.pt'", 0},
	};
	EXPECT_GITHUB(cases, 4,
	              "::error file=m.pt,title=size mismatch for fc.weight::the whole text\n"
	              "::error title=dtype::cannot read 'm.pt'\n");
}

Test(ci_report, writes_nothing_for_github_when_every_check_passed)
{
	ci_case c = {"s", "n", "f", CI_PASS, "t", "m", 0};
	EXPECT_GITHUB(&c, 1, "");
	EXPECT_GITHUB(NULL, 0, "");
}

Test(ci_report, escapes_newlines_in_github_messages)
{
	ci_case c = {"s", "n", NULL, CI_FAIL, "t", "Error(s):\r\n\tsize mismatch: 100% wrong, a::b", 0};
	EXPECT_GITHUB(&c, 1, "::error title=t::Error(s):%0D%0A\tsize mismatch: 100%25 wrong, a::b\n");
}

Test(ci_report, escapes_colons_and_commas_in_github_properties)
{
	ci_case c = {"s", "n", "C:\\models\\a,b.pt", CI_FAIL, "50% of a,b: bad\nreally", NULL, 0};
	EXPECT_GITHUB(&c, 1,
	              "::error file=C%3A\\models\\a%2Cb.pt,title=50%25 of a%2Cb%3A bad%0Areally"
	              "::50%25 of a,b: bad%0Areally\n");
}

Test(ci_report, writes_invalid_utf8_in_github_commands_as_replacement_characters)
{
	ci_case c = {"s", "n", "\xFF.pt", CI_FAIL, NULL, "caf\xC3\xA9 \xE9", 0};
	EXPECT_GITHUB(&c, 1, "::error file=\xEF\xBF\xBD.pt,title=n::caf\xC3\xA9 \xEF\xBF\xBD\n");
}

/*
 * Every outcome, every escape, invalid UTF-8 and two suites in one document:
 * what tests/ci/run.sh validates against tests/ci/junit.xsd (it sets
 * CI_REPORT_SAMPLE to the file to write). Without the variable the document
 * is still written, to memory, and its counts checked.
 */
Test(ci_report, sample_document_has_every_outcome)
{
	ci_case cases[] = {
		{"model.json <- model.pt", "load_state_dict", "model.pt", CI_FAIL,
		 "size mismatch for fc.weight: \"a\" & 'b' <c>",
		 "Error(s) in loading state_dict for Net:\n\tsize mismatch for fc.weight: copying a param "
		 "with shape torch.Size([10, 5]) from checkpoint, the shape in current model is "
		 "torch.Size([10, 4]).\r\n]]> \x01\x7f \xC3\xA9 \xFF\xFE \xED\xA0\x80",
		 0.0421},
		{"model.json <- model.pt", "shapes", NULL, CI_SKIPPED, "load_state_dict failed", NULL, 0},
		{"model.json <- model.pt", "memory", NULL, CI_SKIPPED, NULL, "not made: load failed", 0},
		{"model.json <- model.pt", "max_params", NULL, CI_PASS, NULL, NULL, 0.0001},
		{"a.pt <-> b.pt", "dtype", "b.pt", CI_ERROR, "cannot read 'b.pt'\nat offset 12",
		 "b.pt: bad pickle opcode 0x8f in 'archive/data.pkl' at offset 12", 0.002},
		{"a.pt <-> b.pt", "ties", NULL, CI_ERROR, NULL, NULL, 0},
		{"a.pt <-> b.pt", "shapes", NULL, CI_FAIL, NULL, NULL, 1.0},
		{"a.pt <-> b.pt", "memory", NULL, CI_PASS, NULL, NULL, 0},
	};
	size_t count = sizeof(cases) / sizeof(cases[0]);
	const char *path = getenv("CI_REPORT_SAMPLE");
	int rc;
	char *got = junit("tinspect check <\xC0>", cases, count, &rc);
	EXPECT_INT(rc, 0);
	EXPECT_CONTAINS(got, "<testsuites name=\"tinspect check &lt;\xEF\xBF\xBD&gt;\" tests=\"8\" failures=\"2\" "
	                     "errors=\"2\" skipped=\"2\" time=\"1.044\">");
	if (path && *path) {
		FILE *f = fopen(path, "w");
		cr_assert(f, "cannot write CI_REPORT_SAMPLE '%s'", path);
		EXPECT_INT(ci_write_junit(f, "tinspect check <\xC0>", cases, count), 0);
		cr_assert(fclose(f) == 0, "cannot write CI_REPORT_SAMPLE '%s'", path);
	}
	free(got);
}
