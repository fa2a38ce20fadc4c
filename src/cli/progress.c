/* progress.c - the progress bar of long copies; see progress.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/progress.h"

#define BAR_MIN 10 /* narrower than this, the bar says nothing: drop it */
#define BAR_MAX 30
#define ETA_MAX (99.0 * 3600 + 59 * 60 + 59)

double cli_progress_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "16 B", "4.59 KiB", "512 MiB": the units and precision of cli_bytes(). */
static void format_bytes(double v, char *buf, size_t size)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	int u = 0;
	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%.0f B", floor(v));
	else
		snprintf(buf, size, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* "0:05", "1:02:03", ">99h", or "--:--" when unknown (negative). */
static void format_eta(double seconds, char *buf, size_t size)
{
	if (!(seconds >= 0)) {
		snprintf(buf, size, "--:--");
		return;
	}
	if (seconds > ETA_MAX) {
		snprintf(buf, size, ">99h");
		return;
	}
	unsigned long s = (unsigned long)(seconds + 0.5);
	if (s >= 3600)
		snprintf(buf, size, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, size, "%lu:%02lu", s / 60, s % 60);
}

/* The label as it may reach a terminal: no control characters, bounded. */
static void clean_label(char *out, const char *label)
{
	size_t n = 0;
	for (const unsigned char *s = (const unsigned char *)(label ? label : ""); *s && n + 1 < CLI_PROGRESS_LABEL_MAX;
	     s++)
		out[n++] = *s < 0x20 || *s == 0x7f ? '?' : (char)*s;
	out[n] = '\0';
}

size_t cli_progress_render(char *buf, size_t size, const char *label, uint64_t done, uint64_t total,
                           double elapsed, int width)
{
	if (size == 0)
		return 0;
	if (width < CLI_PROGRESS_WIDTH_MIN)
		width = CLI_PROGRESS_WIDTH_MIN;
	if (width > CLI_PROGRESS_WIDTH_MAX)
		width = CLI_PROGRESS_WIDTH_MAX;
	size_t avail = (size_t)width - 1; /* the last column would wrap on some terminals */
	if (avail > size - 1)
		avail = size - 1;

	double rate = elapsed > 0 ? (double)done / elapsed : 0;
	char done_text[24], total_text[24], rate_text[32], eta[32], stats[160], name[CLI_PROGRESS_LABEL_MAX];
	format_bytes((double)done, done_text, sizeof(done_text));
	format_bytes(rate, rate_text, sizeof(rate_text));
	strcat(rate_text, "/s");
	double fraction = 0;
	char brief[48]; /* what still fits a narrow terminal */
	if (total > 0) {
		fraction = done >= total ? 1 : (double)done / (double)total;
		int percent = (int)(fraction * 100);
		if (percent == 100 && done < total)
			percent = 99; /* 100% only when it is done */
		format_bytes((double)total, total_text, sizeof(total_text));
		format_eta(done >= total ? 0 : rate > 0 ? (double)(total - done) / rate : -1, eta, sizeof(eta));
		snprintf(stats, sizeof(stats), "%3d%%  %s / %s  %s  ETA %s", percent, done_text, total_text,
		         rate_text, eta);
		snprintf(brief, sizeof(brief), "%3d%%  ETA %s", percent, eta);
	} else {
		snprintf(stats, sizeof(stats), "%s  %s", done_text, rate_text);
		snprintf(brief, sizeof(brief), "%s", done_text);
	}
	clean_label(name, label);

	size_t stats_len = strlen(stats), name_len = strlen(name);
	size_t prefix = name_len ? name_len + 2 : 0; /* "label  " */
	size_t len;
	if (total > 0 && prefix + 1 + BAR_MIN + 3 + stats_len <= avail) { /* "[" bar "]  " */
		size_t bar = avail - (prefix + 4 + stats_len);
		if (bar > BAR_MAX)
			bar = BAR_MAX;
		size_t filled = (size_t)(fraction * (double)bar);
		if (filled == bar && done < total)
			filled--; /* a full bar only when it is done */
		char bar_text[BAR_MAX + 1];
		for (size_t i = 0; i < bar; i++)
			bar_text[i] = i < filled ? '#' : '.';
		bar_text[bar] = '\0';
		len = (size_t)snprintf(buf, size, "%s%s[%s]  %s", name, name_len ? "  " : "", bar_text, stats);
	} else if (name_len && prefix + stats_len <= avail) {
		len = (size_t)snprintf(buf, size, "%s  %s", name, stats);
	} else {
		const char *text = stats_len <= avail ? stats : brief;
		len = strlen(text) < avail ? strlen(text) : avail;
		memcpy(buf, text, len);
		buf[len] = '\0';
	}
	return len;
}

static int terminal_width(int fd)
{
	struct winsize ws;
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	const char *columns = getenv("COLUMNS");
	long v = columns ? strtol(columns, NULL, 10) : 0;
	return v > 0 && v < 10000 ? (int)v : 80;
}

void cli_progress_start(cli_progress *p, FILE *stream, const char *label, uint64_t total_bytes, int width,
                        cli_clock now)
{
	memset(p, 0, sizeof(*p));
	p->stream = stream;
	clean_label(p->label, label);
	p->total = total_bytes;
	p->width = width;
	p->now = now ? now : cli_progress_clock;
	p->start = p->last_draw = p->now();
}

void cli_progress_begin(cli_progress *p, FILE *stream, const char *label, uint64_t total_bytes, bool enabled)
{
	memset(p, 0, sizeof(*p));
	if (!enabled || !stream)
		return;
	int fd = fileno(stream);
	if (fd < 0 || !isatty(fd))
		return;
	cli_progress_start(p, stream, label, total_bytes, terminal_width(fd), NULL);
}

static void draw(cli_progress *p, double t)
{
	char line[CLI_PROGRESS_WIDTH_MAX + 1];
	size_t n = cli_progress_render(line, sizeof(line), p->label, p->done, p->total, t - p->start, p->width);
	fputc('\r', p->stream);
	fwrite(line, 1, n, p->stream);
	for (size_t i = n; i < p->drawn; i++) /* the rest of a longer earlier line */
		fputc(' ', p->stream);
	if (n > p->drawn)
		p->drawn = n;
	fflush(p->stream);
	p->last_draw = t;
}

void cli_progress_add(cli_progress *p, uint64_t n)
{
	if (!p->stream)
		return;
	p->done = UINT64_MAX - p->done < n ? UINT64_MAX : p->done + n;
	double t = p->now();
	if (t - p->last_draw >= CLI_PROGRESS_INTERVAL)
		draw(p, t);
}

void cli_progress_end(cli_progress *p)
{
	if (p->stream && p->drawn) {
		fputc('\r', p->stream);
		for (size_t i = 0; i < p->drawn; i++)
			fputc(' ', p->stream);
		fputc('\r', p->stream);
		fflush(p->stream);
	}
	p->stream = NULL;
	p->drawn = 0;
}
