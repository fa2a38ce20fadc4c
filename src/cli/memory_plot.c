/*
 * memory_plot.c - the timeline of a memory report as an SVG chart (see memory_plot.h).
 */
#include "cli/memory_plot.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/outfile.h"
#include "cli/output.h"

/* The canvas, in SVG user units (pixels at 100 %): the plot area and the margins for title, legend and axes. */
enum { WIDTH = 960, HEIGHT = 520, LEFT = 84, RIGHT = 24, TOP = 72, BOTTOM = 64 };
#define PLOT_W ((double)(WIDTH - LEFT - RIGHT))
#define PLOT_H ((double)(HEIGHT - TOP - BOTTOM))

/* One row per phase: its shade, and the colour its label is written in. */
static const struct {
	const char *fill, *text;
} phase_style[] = {
	[TI_PHASE_FORWARD] = {"#e3edf9", "#2f5d8f"},
	[TI_PHASE_BACKWARD] = {"#fbeadb", "#9a5418"},
	[TI_PHASE_OPTIMIZER] = {"#e3f3e1", "#2f7a3a"},
};
#define LIVE_COLOUR "#1f5fa8"
#define HIGH_COLOUR "#e0731b"
#define PEAK_COLOUR "#c81e1e"
#define LIMIT_COLOUR "#6a1b9a" /* --device-memory */

/* The length of a well-formed UTF-8 sequence at s (RFC 3629: no overlongs, no surrogates, nothing past U+10FFFF), or 0. */
static size_t utf8_length(const unsigned char *s)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	if (!n)
		return 0;
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/*
 * s as XML character data or an attribute value: the five markup characters
 * as entities, and every byte XML 1.0 forbids (control characters, broken
 * UTF-8) as '?', so that any step name still gives a well-formed document.
 */
static void put_escaped(cli_out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	while (*p) {
		switch (*p) {
		case '&': cli_out_puts(o, "&amp;"); p++; continue;
		case '<': cli_out_puts(o, "&lt;"); p++; continue;
		case '>': cli_out_puts(o, "&gt;"); p++; continue;
		case '"': cli_out_puts(o, "&quot;"); p++; continue;
		case '\'': cli_out_puts(o, "&apos;"); p++; continue;
		default: break;
		}
		size_t n = *p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r' ? 0 : *p == 0x7f ? 0 : utf8_length(p);
		if (!n) {
			cli_out_put(o, "?", 1);
			p++;
		} else {
			cli_out_put(o, (const char *)p, n);
			p += n;
		}
	}
}

/* The smallest of 1, 2, 5 times a power of ten that is at least x (x > 0). */
static double nice_step(double x)
{
	double p = pow(10, floor(log10(x)));
	for (int i = 0; i < 3; i++) {
		static const double m[] = {1, 2, 5};
		if (m[i] * p >= x * (1 - 1e-9))
			return m[i] * p;
	}
	return 10 * p;
}

typedef struct axis {
	double top;        /* bytes at the top of the plot: a whole number of ticks */
	double step;       /* bytes between ticks */
	double unit;       /* 1024^k */
	const char *name;  /* "MiB" */
} axis;

/* The y axis for values up to max: ticks at 1, 2 or 5 times a power of ten of the largest binary unit below max. */
static axis y_axis(int64_t max)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	axis a = {0, 0, 1, "B"};
	double v = max > 0 ? (double)max : 1024;
	for (int k = 1; k < 7 && v >= a.unit * 1024; k++) {
		a.unit *= 1024;
		a.name = names[k];
	}
	a.step = nice_step(v / a.unit / 5) * a.unit;
	if (a.unit == 1 && a.step < 1)
		a.step = 1;
	a.top = ceil(v / a.step * (1 - 1e-12)) * a.step;
	if (a.top <= 0)
		a.top = a.step;
	return a;
}

static double x_of(size_t i, size_t n) { return LEFT + (n > 1 ? (double)i * PLOT_W / (double)(n - 1) : PLOT_W / 2); }
static double y_of(int64_t bytes, const axis *a) { return TOP + PLOT_H - (double)bytes / a->top * PLOT_H; }

/* The edges of point i's slot: halfway to its neighbours, the plot's edges at the ends. */
static double slot_left(size_t i, size_t n) { return i == 0 ? LEFT : (x_of(i - 1, n) + x_of(i, n)) / 2; }
static double slot_right(size_t i, size_t n) { return i + 1 >= n ? LEFT + PLOT_W : (x_of(i, n) + x_of(i + 1, n)) / 2; }

static void put_polyline(cli_out *o, const ti_memory_report *r, const axis *a, bool high, const char *attrs)
{
	cli_out_puts(o, "<polyline fill=\"none\" ");
	cli_out_puts(o, attrs);
	cli_out_puts(o, " points=\"");
	for (size_t i = 0; i < r->point_count; i++)
		cli_out_printf(o, "%s%.1f,%.1f", i ? " " : "", x_of(i, r->point_count),
		               y_of(high ? r->timeline[i].high : r->timeline[i].live, a));
	cli_out_puts(o, "\"/>\n");
}

static void put_phases(cli_out *o, const ti_memory_report *r)
{
	size_t n = r->point_count;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		ti_memory_phase p = r->timeline[i].phase;
		while (j + 1 < n && r->timeline[j + 1].phase == p)
			j++;
		unsigned k = (unsigned)p < 3 ? (unsigned)p : 0;
		double x0 = slot_left(i, n), x1 = slot_right(j, n);
		cli_out_printf(o, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", x0, TOP, x1 - x0,
		               (int)PLOT_H, phase_style[k].fill);
		/* the label at the band's foot, where the curve is lowest; a band too narrow for it gets none */
		if (x1 - x0 >= 8.0 * (double)strlen(ti_memory_phase_name(p)))
			cli_out_printf(o,
			               "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\" fill=\"%s\">%s</text>\n",
			               (x0 + x1) / 2, TOP + (int)PLOT_H - 8, phase_style[k].text, ti_memory_phase_name(p));
		i = j + 1;
	}
}

static void put_axes(cli_out *o, const ti_memory_report *r, const axis *a)
{
	cli_out_puts(o, "<g font-size=\"12\" fill=\"#333\">\n");
	for (double v = 0; v <= a->top * (1 + 1e-9); v += a->step) {
		double y = TOP + PLOT_H - v / a->top * PLOT_H;
		cli_out_printf(o, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ccc\" stroke-width=\"0.6\"/>\n",
		               LEFT, y, LEFT + (int)PLOT_W, y);
		if (v == 0)
			cli_out_printf(o, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">0</text>\n", LEFT - 6, y + 4);
		else
			cli_out_printf(o, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g %s</text>\n", LEFT - 6, y + 4,
			               v / a->unit, a->name);
	}
	size_t n = r->point_count;
	if (n) {
		double step = nice_step(n > 8 ? (double)(n - 1) / 8 : 1);
		for (double i = 0; i <= (double)(n - 1); i += step) {
			double x = x_of((size_t)i, n);
			cli_out_printf(o, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333\"/>\n", x,
			               TOP + (int)PLOT_H, x, TOP + (int)PLOT_H + 5);
			cli_out_printf(o, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n", x,
			               TOP + (int)PLOT_H + 19, i);
		}
	}
	cli_out_printf(o, "<path d=\"M%d,%d V%d H%d\" fill=\"none\" stroke=\"#333\"/>\n", LEFT, TOP, TOP + (int)PLOT_H,
	               LEFT + (int)PLOT_W);
	cli_out_printf(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step (timeline index)</text>\n",
	               LEFT + (int)PLOT_W / 2, HEIGHT - 16);
	cli_out_printf(o, "<text transform=\"translate(18,%d) rotate(-90)\" text-anchor=\"middle\">live bytes</text>\n",
	               TOP + (int)PLOT_H / 2);
	cli_out_puts(o, "</g>\n");
}

/* The point that reached the peak: the first whose high is r->peak, else the highest. */
static size_t peak_index(const ti_memory_report *r)
{
	size_t best = 0;
	for (size_t i = 0; i < r->point_count; i++) {
		if (r->timeline[i].high == r->peak)
			return i;
		if (r->timeline[i].high > r->timeline[best].high)
			best = i;
	}
	return best;
}

static void put_peak(cli_out *o, const ti_memory_report *r, const axis *a)
{
	size_t i = peak_index(r);
	int64_t bytes = r->timeline[i].high;
	double x = x_of(i, r->point_count), y = y_of(bytes, a);
	char size[64];
	cli_out_printf(o, "<g id=\"peak\">\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" "
	                  "stroke-dasharray=\"4 3\"/>\n", x, y, x, TOP + (int)PLOT_H, PEAK_COLOUR);
	cli_out_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>\n", x, y, PEAK_COLOUR);
	/* beside the marker, on the side with room; never above the plot */
	bool left = x > LEFT + PLOT_W * 0.6;
	double ty = y - 10 < TOP + 14 ? TOP + 14 : y - 10;
	cli_out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"13\" font-weight=\"bold\" "
	                  "fill=\"%s\">peak %s at ", left ? x - 9 : x + 9, ty, left ? "end" : "start", PEAK_COLOUR,
	               cli_bytes(r->peak > bytes ? r->peak : bytes, size, sizeof(size)));
	put_escaped(o, r->peak_step ? r->peak_step : r->timeline[i].step);
	cli_out_printf(o, " (%s)</text>\n</g>\n", ti_memory_phase_name(r->peak_phase));
}

static void put_legend(cli_out *o)
{
	double x = LEFT, y = 52;
	cli_out_puts(o, "<g id=\"legend\" font-size=\"12\" fill=\"#333\">\n");
	cli_out_printf(o, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\"/>"
	                  "<text x=\"%.0f\" y=\"%.0f\">live after each step</text>\n",
	               x, y - 4, x + 22, y - 4, LIVE_COLOUR, x + 28, y);
	x += 170;
	cli_out_printf(o, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"1.2\"/>"
	                  "<text x=\"%.0f\" y=\"%.0f\">most during the step</text>\n",
	               x, y - 4, x + 22, y - 4, HIGH_COLOUR, x + 28, y);
	x += 170;
	cli_out_printf(o, "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"5\" fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">peak</text>\n",
	               x + 6, y - 4, PEAK_COLOUR, x + 16, y);
	x += 70;
	for (unsigned k = 0; k < 3; k++) {
		cli_out_printf(o, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"12\" fill=\"%s\" stroke=\"#999\" "
		                  "stroke-width=\"0.5\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
		               x, y - 10, phase_style[k].fill, x + 20, y, ti_memory_phase_name((ti_memory_phase)k));
		x += 100;
	}
	cli_out_puts(o, "</g>\n");
}

/* The device's size: a line across the plot, or a note when it is far above the highest point. */
static void put_limit(cli_out *o, const cli_plot_limit *limit, const axis *a, int64_t peak)
{
	char size[64];
	cli_bytes(limit->bytes, size, sizeof(size));
	if ((double)limit->bytes <= a->top) {
		double y = y_of(limit->bytes, a);
		cli_out_printf(o, "<g id=\"device-memory\">\n<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		                  "stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>\n",
		               LEFT, y, LEFT + PLOT_W, y, LIMIT_COLOUR);
		cli_out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"12\" fill=\"%s\">",
		               LEFT + PLOT_W - 4, y - 5, LIMIT_COLOUR);
	} else {
		cli_out_printf(o, "<g id=\"device-memory\">\n<text x=\"%.1f\" y=\"%d\" text-anchor=\"end\" "
		                  "font-size=\"12\" fill=\"%s\">&#8593; ", LEFT + PLOT_W - 4, TOP + 14, LIMIT_COLOUR);
	}
	put_escaped(o, limit->name ? limit->name : "device");
	cli_out_printf(o, ": %s%s (the step needs %.1f %% of it)</text>\n</g>\n", size,
	               (double)limit->bytes <= a->top ? "" : ", above the chart",
	               100.0 * (double)(limit->need ? limit->need : peak) / (double)limit->bytes);
}

bool cli_memory_plot_write(const ti_memory_report *r, const char *title, const cli_plot_limit *limit, FILE *f)
{
	cli_out o;
	cli_out_init(&o, f);
	if (!title)
		title = "memory";
	int64_t max = r->peak;
	for (size_t i = 0; i < r->point_count; i++) {
		if (r->timeline[i].high > max)
			max = r->timeline[i].high;
		if (r->timeline[i].live > max)
			max = r->timeline[i].live;
	}
	bool has_limit = limit && limit->bytes > 0;
	/* a device a little above the highest point (or below it) is drawn: the axis holds it */
	if (has_limit && limit->bytes > max && (double)limit->bytes <= 1.25 * (double)max)
		max = limit->bytes;
	axis a = y_axis(max);

	cli_out_puts(&o, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	cli_out_printf(&o,
	               "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
	               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
	               WIDTH, HEIGHT, WIDTH, HEIGHT);
	cli_out_puts(&o, "<title>");
	put_escaped(&o, title);
	cli_out_puts(&o, "</title>\n");
	cli_out_printf(&o, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", WIDTH, HEIGHT);
	cli_out_printf(&o, "<text x=\"%d\" y=\"26\" font-size=\"16\" font-weight=\"bold\" fill=\"#111\">", LEFT);
	put_escaped(&o, title);
	cli_out_puts(&o, "</text>\n");
	put_legend(&o);
	if (r->point_count) {
		put_phases(&o, r);
		put_axes(&o, r, &a);
		/* the area under the live bytes, then the two lines over it */
		size_t n = r->point_count;
		cli_out_printf(&o, "<polygon fill=\"%s\" fill-opacity=\"0.12\" points=\"%.1f,%d", LIVE_COLOUR, x_of(0, n),
		               TOP + (int)PLOT_H);
		for (size_t i = 0; i < n; i++)
			cli_out_printf(&o, " %.1f,%.1f", x_of(i, n), y_of(r->timeline[i].live, &a));
		cli_out_printf(&o, " %.1f,%d\"/>\n", x_of(n - 1, n), TOP + (int)PLOT_H);
		put_polyline(&o, r, &a, true, "stroke=\"" HIGH_COLOUR "\" stroke-width=\"1.2\"");
		put_polyline(&o, r, &a, false, "stroke=\"" LIVE_COLOUR "\" stroke-width=\"2\" stroke-linejoin=\"round\"");
		put_peak(&o, r, &a);
		if (has_limit)
			put_limit(&o, limit, &a, r->peak);
	} else {
		put_axes(&o, r, &a);
		cli_out_printf(&o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#666\">no timeline</text>\n",
		               LEFT + (int)PLOT_W / 2, TOP + (int)PLOT_H / 2);
	}
	cli_out_puts(&o, "</svg>\n");
	cli_out_close(&o);
	return fflush(f) == 0 && !ferror(f);
}

int cli_memory_plot_file(const ti_memory_report *r, const char *title, const cli_plot_limit *limit,
                         const char *path, const char *const *inputs, int input_count, bool force)
{
	cli_outfile out;
	int rc = cli_outfile_open(&out, path, inputs, input_count, force);
	if (rc)
		return rc;
	/* stdio on a copy of the descriptor: fclose closes the copy, cli_outfile_commit the original */
	int fd = dup(out.fd);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	bool ok = f && cli_memory_plot_write(r, title, limit, f);
	int saved = errno;
	if (f && fclose(f) && ok) {
		ok = false;
		saved = errno;
	} else if (!f && fd >= 0) {
		close(fd);
	}
	if (!ok) {
		fprintf(stderr, "tinspect: %s: cannot write the chart: %s\n", path, strerror(saved ? saved : EIO));
		cli_outfile_abort(&out);
		return EXIT_RESOURCE;
	}
	return cli_outfile_commit(&out);
}

int cli_memory_plot(const ti_memory_report *r, const char *title, const char *path)
{
	return cli_memory_plot_file(r, title, NULL, path, NULL, 0, false);
}
