/*
 * test_memory_plot.c - the SVG chart of a memory report (src/cli/memory_plot.c):
 * a well-formed standalone document, the peak labelled, names escaped, and
 * written through outfile.c (no half-written or replaced file).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/memory_plot.h"
#include "unit.h"

/* common.c's unknown-command hint reads main.c's list, which the unit tests do not link. */
const char *const cli_command_names[] = {NULL};

#define MIB ((int64_t)1 << 20)

/* Forward, backward and optimizer over 7 points; the peak at point 3, a name full of markup. */
static ti_memory_point points[] = {
	{TI_PHASE_FORWARD, "fc1 (linear)", 100 * MIB, 100 * MIB},
	{TI_PHASE_FORWARD, "act (gelu)", 180 * MIB, 190 * MIB},
	{TI_PHASE_FORWARD, "fc2 (linear)", 260 * MIB, 260 * MIB},
	{TI_PHASE_BACKWARD, "a<b> & \"c\" (matmul)", 300 * MIB, 420 * MIB},
	{TI_PHASE_BACKWARD, "fc1 (linear)", 200 * MIB, 280 * MIB},
	{TI_PHASE_OPTIMIZER, "adam", 150 * MIB, 220 * MIB},
	{TI_PHASE_OPTIMIZER, "zero_grad", 120 * MIB, 150 * MIB},
};

static ti_memory_report report(void)
{
	ti_memory_report r;
	memset(&r, 0, sizeof(r));
	r.peak = 420 * MIB;
	r.peak_phase = TI_PHASE_BACKWARD;
	r.peak_step = "a<b> & \"c\" (matmul)";
	r.timeline = points;
	r.point_count = sizeof(points) / sizeof(points[0]);
	return r;
}

static char *chart(const ti_memory_report *r, const char *title)
{
	char *text = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&text, &size);
	cr_assert(m);
	cr_assert(cli_memory_plot_write(r, title, NULL, m));
	fclose(m);
	return text;
}

/*
 * A small XML check, enough for what the chart writes: one root element,
 * every start tag closed in order, quoted attributes, and no '<' or '&' in
 * text or attribute values other than as markup or entities. Returns NULL or
 * what is wrong.
 */
static const char *xml_problem(const char *s)
{
	static char why[160];
	const char *stack[64];
	size_t stack_len[64];
	int depth = 0, roots = 0;
	if (!strncmp(s, "<?xml", 5)) {
		s = strstr(s, "?>");
		if (!s)
			return "unterminated XML declaration";
		s += 2;
	}
	while (*s) {
		if (*s == '&') {
			static const char *const entities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
			bool ok = false;
			for (int i = 0; i < 5; i++)
				ok = ok || !strncmp(s, entities[i], strlen(entities[i]));
			if (!ok)
				return "a bare '&' in text";
			s++;
			continue;
		}
		if (*s == '>')
			return "a bare '>' in text";
		if (*s != '<') {
			s++;
			continue;
		}
		bool closing = s[1] == '/';
		const char *name = s + 1 + closing;
		size_t len = strcspn(name, " \t\n/>");
		if (!len)
			return "a tag without a name";
		const char *p = name + len;
		while (*p && *p != '>' && *p != '/') { /* attributes: name="value" */
			while (*p == ' ' || *p == '\n')
				p++;
			if (*p == '>' || *p == '/')
				break;
			p += strcspn(p, "=> ");
			if (*p != '=' || p[1] != '"')
				return "an attribute without a quoted value";
			const char *end = strchr(p + 2, '"');
			if (!end)
				return "an unterminated attribute value";
			for (const char *v = p + 2; v < end; v++) {
				if (*v == '<')
					return "a '<' in an attribute value";
				if (*v == '&' && strncmp(v, "&amp;", 5) && strncmp(v, "&lt;", 4) && strncmp(v, "&gt;", 4) &&
				    strncmp(v, "&quot;", 6) && strncmp(v, "&apos;", 6))
					return "a bare '&' in an attribute value";
			}
			p = end + 1;
		}
		bool empty = *p == '/';
		if (empty)
			p++;
		if (*p != '>')
			return "an unterminated tag";
		if (closing) {
			if (!depth || stack_len[depth - 1] != len || strncmp(stack[depth - 1], name, len)) {
				snprintf(why, sizeof(why), "</%.*s> closes %s", (int)len, name,
				         depth ? "another element" : "nothing");
				return why;
			}
			depth--;
		} else if (!empty) {
			if (depth == 64)
				return "nested too deep";
			if (!depth)
				roots++;
			stack[depth] = name;
			stack_len[depth++] = len;
		} else if (!depth) {
			roots++;
		}
		s = p + 1;
	}
	if (depth) {
		snprintf(why, sizeof(why), "<%.*s> is never closed", (int)stack_len[depth - 1], stack[depth - 1]);
		return why;
	}
	return roots == 1 ? NULL : "not exactly one root element";
}

Test(memory_plot, writes_a_well_formed_standalone_svg)
{
	ti_memory_report r = report();
	char *svg = chart(&r, "model.json: training step");
	const char *why = xml_problem(svg);
	cr_expect(!why, "not well-formed: %s", why);
	cr_expect(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\""), "no SVG 1.1 root with xmlns");
	cr_expect(strstr(svg, "</svg>\n"), "the root is not closed at the end");
	/* nothing from elsewhere: no links, images, scripts or stylesheets */
	cr_expect(!strstr(svg, "href") && !strstr(svg, "<image") && !strstr(svg, "<script") && !strstr(svg, "url("));
	free(svg);
}

Test(memory_plot, labels_the_peak_with_its_size_and_escaped_step)
{
	ti_memory_report r = report();
	char *svg = chart(&r, NULL);
	cr_expect(strstr(svg, "peak 420 MiB at a&lt;b&gt; &amp; &quot;c&quot; (matmul) (backward)"),
	          "no peak label in:\n%s", svg);
	cr_expect(!strstr(svg, "a<b>"), "a step name is not escaped");
	/* the marker sits at the fourth point's x, 3/6 of the way across the plot */
	cr_expect(strstr(svg, "<circle cx=\"510.0\""), "the peak marker is not at point 3");
	free(svg);
}

Test(memory_plot, shades_and_names_every_phase_and_has_a_legend)
{
	ti_memory_report r = report();
	char *svg = chart(&r, NULL);
	for (int p = 0; p < 3; p++) {
		char want[64];
		snprintf(want, sizeof(want), ">%s</text>", ti_memory_phase_name((ti_memory_phase)p));
		size_t count = 0;
		for (const char *s = svg; (s = strstr(s, want)); s++)
			count++;
		EXPECT_INT(count, 2); /* the band's label and the legend's */
	}
	cr_expect(strstr(svg, "id=\"legend\"") && strstr(svg, "live after each step") && strstr(svg, "most during the step"));
	free(svg);
}

Test(memory_plot, ticks_the_y_axis_in_binary_units)
{
	ti_memory_report r = report();
	char *svg = chart(&r, NULL);
	/* 420 MiB: ticks of 100 MiB up to 500 MiB; 3 GiB: of 1 GiB */
	cr_expect(strstr(svg, ">100 MiB</text>") && strstr(svg, ">500 MiB</text>"), "no MiB ticks in:\n%s", svg);
	cr_expect(!strstr(svg, ">600 MiB</text>"));
	points[3].high = r.peak = 3 * (int64_t)1 << 30;
	char *big = chart(&r, NULL);
	points[3].high = 420 * MIB;
	cr_expect(strstr(big, ">1 GiB</text>") && strstr(big, ">3 GiB</text>") && !strstr(big, "MiB</text>"), "no GiB ticks in:\n%s", big);
	free(svg);
	free(big);
}

Test(memory_plot, escapes_the_title_and_replaces_bytes_xml_forbids)
{
	ti_memory_report r = report();
	char *svg = chart(&r, "a&b <c> \x01 \xff caf\xc3\xa9");
	cr_expect(strstr(svg, "<title>a&amp;b &lt;c&gt; ? ? caf\xc3\xa9</title>"), "title not escaped in:\n%s", svg);
	cr_expect(!xml_problem(svg));
	free(svg);
}

Test(memory_plot, an_empty_timeline_still_makes_a_chart)
{
	ti_memory_report r;
	memset(&r, 0, sizeof(r));
	char *svg = chart(&r, "empty");
	cr_expect(!xml_problem(svg), "%s", xml_problem(svg));
	cr_expect(strstr(svg, "no timeline"));
	free(svg);
}

Test(memory_plot, writes_the_file_in_place_and_refuses_to_replace_one)
{
	char dir[] = "/tmp/tinspect-plot-XXXXXX";
	cr_assert(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/chart.svg", dir);
	ti_memory_report r = report();
	EXPECT_INT(cli_memory_plot(&r, "t", path), EXIT_OK);
	struct stat st;
	cr_expect(!stat(path, &st) && st.st_size > 1000);
	/* a second time: the file exists, so it is kept and the call is a usage error */
	fflush(stderr);
	EXPECT_INT(cli_memory_plot(&r, "t", path), EXIT_USAGE);
	EXPECT_INT(cli_memory_plot_file(&r, "t", NULL, path, NULL, 0, true), EXIT_OK);
	/* the model itself is never the output */
	const char *inputs[] = {path};
	EXPECT_INT(cli_memory_plot_file(&r, "t", NULL, path, inputs, 1, true), EXIT_USAGE);
	/* a directory that does not exist: a resource error, and nothing left behind */
	char missing[160];
	snprintf(missing, sizeof(missing), "%s/no/chart.svg", dir);
	EXPECT_INT(cli_memory_plot(&r, "t", missing), EXIT_RESOURCE);
	cr_expect(!unlink(path));
	cr_expect(!rmdir(dir), "the directory is not empty: a temporary file was left behind");
}

Test(memory_plot, a_device_memory_is_drawn_as_a_line_or_noted_above_the_chart)
{
	ti_memory_point points[] = {{TI_PHASE_FORWARD, "a", 10 << 20, 12 << 20}, {TI_PHASE_FORWARD, "b", 40 << 20, 50 << 20}};
	ti_memory_report r = {.peak = 50 << 20, .peak_step = "b", .timeline = points, .point_count = 2};
	cli_plot_limit near = {56 << 20, "RTX-XYZ", 0}, far = {(int64_t)80 << 30, "H100-80GB", 0};
	char *text = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&text, &size);
	cr_assert(cli_memory_plot_write(&r, "t", &near, m));
	fclose(m);
	cr_expect(strstr(text, "<g id=\"device-memory\">\n<line"), "a line at 56 MiB, within the chart");
	cr_expect(strstr(text, "RTX-XYZ: 56.0 MiB (the step needs 89.3 % of it)"), "%s", strstr(text, "device-memory"));
	free(text);
	m = open_memstream(&text, &size);
	cr_assert(cli_memory_plot_write(&r, "t", &far, m));
	fclose(m);
	cr_expect(strstr(text, "H100-80GB: 80.0 GiB, above the chart"), "a note, not a line that would flatten the plot");
	cr_expect(!strstr(text, "<g id=\"device-memory\">\n<line"));
	free(text);
}
