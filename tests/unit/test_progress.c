/*
 * test_progress.c - the CLI's progress bar (src/cli/progress.c): the line it
 * formats, when it draws, and that it stays silent off a terminal.
 */
#define _XOPEN_SOURCE 700 /* posix_openpt and friends, for the terminal test */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/progress.h"
#include "unit.h"
#include <criterion/parameterized.h>

#define KiB 1024ULL
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define TiB (1024 * GiB)

/* Criterion copies parameters into another process: rows hold their text, not pointers. */
typedef struct render_row {
	char label[16];
	uint64_t done, total;
	double elapsed;
	int width;
	char want[128];
} render_row;

static const render_row render_rows[] = {
	{"convert", 512 * MiB, 1 * GiB, 2.0, 80,
	 "convert  [##########...........]   50%  512 MiB / 1.00 GiB  256 MiB/s  ETA 0:02"},
	/* A wide terminal: the bar stops growing at 30. */
	{"convert", 1 * MiB, 10 * GiB, 1.0, 120,
	 "convert  [..............................]    0%  1.00 MiB / 10.0 GiB  1.00 MiB/s  ETA 2:50:39"},
	{"", 0, 100, 0.5, 80, "[..............................]    0%  0 B / 100 B  0 B/s  ETA --:--"},
	{"all", 100, 100, 4.0, 80, "all  [##############################]  100%  100 B / 100 B  25 B/s  ETA 0:00"},
	/* More than announced: still 100%, never past it. */
	{"x", 2000, 1000, 1.0, 60, "x  100%  1.95 KiB / 1000 B  1.95 KiB/s  ETA 0:00"},
	/* A byte short of the end is not 100%. */
	{"x", 1000 * MiB - 1, 1000 * MiB, 10.0, 100,
	 "x  [#############################.]   99%  1000 MiB / 1000 MiB  100.0 MiB/s  ETA 0:00"},
	/* So close that the fraction rounds to 1 in floating point. */
	{"x", (1ULL << 60) - 1, 1ULL << 60, 10.0, 100,
	 "x  [#############################.]   99%  1.00 EiB / 1.00 EiB  102 PiB/s  ETA 0:00"},
	/* An unknown total: no bar, no percentage, no ETA. */
	{"copy", 1 * KiB, 0, 2.0, 80, "copy  1.00 KiB  512 B/s"},
	{"copy", 3 * GiB, 0, 0.0, 80, "copy  3.00 GiB  0 B/s"},
	/* Narrow terminals drop the bar, then the label, then the sizes. */
	{"convert", 1 * GiB, 4 * GiB, 1.0, 60, "convert   25%  1.00 GiB / 4.00 GiB  1.00 GiB/s  ETA 0:03"},
	{"convert", 1 * GiB, 4 * GiB, 1.0, 50, " 25%  1.00 GiB / 4.00 GiB  1.00 GiB/s  ETA 0:03"},
	{"convert", 1 * GiB, 4 * GiB, 1.0, 45, " 25%  ETA 0:03"},
	{"big", 1, 1 * TiB, 1.0, 20, "  0%  ETA >99h"},
	{"big", 1, 1 * TiB, 1.0, 1, "  0%  ETA >99h"},
	{"big", 5 * GiB, 0, 1.0, 21, "5.00 GiB  5.00 GiB/s"},
	{"big", 5 * GiB, 0, 1.0, 20, "5.00 GiB"},
	/* Control characters in a label cannot reach the terminal. */
	{"a\x1b[31mb", 1, 2, 1.0, 80, "a?[31mb  [###############...............]   50%  1 B / 2 B  1 B/s  ETA 0:01"},
};

ParameterizedTestParameters(progress, renders_one_line)
{
	return cr_make_param_array(render_row, render_rows, sizeof(render_rows) / sizeof(render_rows[0]));
}

ParameterizedTest(const render_row *r, progress, renders_one_line)
{
	char line[256];
	size_t n = cli_progress_render(line, sizeof(line), r->label, r->done, r->total, r->elapsed, r->width);
	EXPECT_STR(line, r->want);
	EXPECT_INT(n, strlen(line));
}

Test(progress, never_fills_the_last_column_or_the_buffer)
{
	static const uint64_t totals[] = {0, 1, 100, 5 * GiB, UINT64_MAX};
	char line[CLI_PROGRESS_WIDTH_MAX + 1], small[12];
	for (int width = -3; width <= CLI_PROGRESS_WIDTH_MAX + 50; width++)
		for (size_t k = 0; k < sizeof(totals) / sizeof(totals[0]); k++) {
			size_t n = cli_progress_render(line, sizeof(line), "a longer label than most", totals[k] / 3,
			                               totals[k], 7.5, width);
			int limit = width < CLI_PROGRESS_WIDTH_MIN   ? CLI_PROGRESS_WIDTH_MIN
			            : width > CLI_PROGRESS_WIDTH_MAX ? CLI_PROGRESS_WIDTH_MAX
			                                             : width;
			cr_expect(n == strlen(line) && n < (size_t)limit, "width %d: %zu columns \"%s\"", width, n,
			          line);
			n = cli_progress_render(small, sizeof(small), "x", totals[k] / 3, totals[k], 7.5, width);
			cr_expect(n == strlen(small) && n < sizeof(small), "a %zu-byte buffer got %zu", sizeof(small), n);
		}
	EXPECT_INT(cli_progress_render(line, 0, "x", 1, 2, 1.0, 80), 0);
}

/* ---- drawing ---- */

static double fake_time;
static double fake_now(void)
{
	return fake_time;
}

/* Everything written to f so far. */
static char *contents(FILE *f)
{
	static char buf[4096];
	fflush(f);
	rewind(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	return buf;
}

Test(progress, redraws_at_most_ten_times_a_second_and_erases_its_line)
{
	FILE *f = tmpfile();
	cr_assert(f);
	cli_progress p;
	fake_time = 10.0;
	cli_progress_start(&p, f, "copy", 1000, 80, fake_now);
	fake_time = 10.05;
	cli_progress_add(&p, 100);
	EXPECT_STR(contents(f), ""); /* nothing for a quick job */
	fake_time = 10.15;
	cli_progress_add(&p, 100);
	fake_time = 10.20;
	cli_progress_add(&p, 100); /* too soon */
	fake_time = 10.30;
	cli_progress_add(&p, 100);
	char first[128], second[128], want[512];
	cli_progress_render(first, sizeof(first), "copy", 200, 1000, 10.15 - 10.0, 80);
	cli_progress_render(second, sizeof(second), "copy", 400, 1000, 10.30 - 10.0, 80);
	cr_assert(strlen(second) >= strlen(first));
	snprintf(want, sizeof(want), "\r%s\r%s", first, second);
	EXPECT_STR(contents(f), want);
	cli_progress_end(&p);
	size_t drawn = strlen(second);
	snprintf(want, sizeof(want), "\r%s\r%s\r%*s\r", first, second, (int)drawn, "");
	EXPECT_STR(contents(f), want);
	/* Ended: further calls write nothing. */
	cli_progress_add(&p, 100);
	cli_progress_end(&p);
	EXPECT_STR(contents(f), want);
	fclose(f);
}

Test(progress, pads_a_shorter_line_over_a_longer_one)
{
	FILE *f = tmpfile();
	cr_assert(f);
	cli_progress p;
	fake_time = 0;
	cli_progress_start(&p, f, "", 0, 80, fake_now);
	fake_time = 1.0;
	cli_progress_add(&p, 100 * KiB);
	fake_time = 2.0;
	cli_progress_add(&p, 1);
	EXPECT_STR(contents(f), "\r100 KiB  100 KiB/s\r100 KiB  50.0 KiB/s");
	fake_time = 1000.0;
	cli_progress_add(&p, 0); /* three columns shorter: blanked */
	EXPECT_STR(contents(f), "\r100 KiB  100 KiB/s\r100 KiB  50.0 KiB/s\r100 KiB  102 B/s   ");
	cli_progress_end(&p);
	EXPECT_STR(contents(f), "\r100 KiB  100 KiB/s\r100 KiB  50.0 KiB/s\r100 KiB  102 B/s   \r"
	                        "                   \r");
	fclose(f);
}

Test(progress, ends_silently_when_nothing_was_drawn)
{
	FILE *f = tmpfile();
	cr_assert(f);
	cli_progress p;
	fake_time = 0;
	cli_progress_start(&p, f, "copy", 10, 80, fake_now);
	cli_progress_add(&p, 10);
	cli_progress_end(&p);
	EXPECT_STR(contents(f), "");
	fclose(f);
}

/* ---- only on a terminal ---- */

Test(progress, prints_nothing_into_a_pipe)
{
	int fds[2];
	cr_assert(pipe(fds) == 0);
	FILE *w = fdopen(fds[1], "w");
	cr_assert(w);
	cli_progress p;
	cli_progress_begin(&p, w, "convert", 1000, true);
	cr_expect(p.stream == NULL, "the bar is on for a pipe");
	for (int i = 0; i < 10; i++)
		cli_progress_add(&p, 100);
	cli_progress_end(&p);
	fclose(w);
	char buf[64];
	EXPECT_INT(read(fds[0], buf, sizeof(buf)), 0);
	close(fds[0]);
}

Test(progress, prints_nothing_into_a_file)
{
	FILE *f = tmpfile();
	cr_assert(f);
	cli_progress p;
	cli_progress_begin(&p, f, "convert", 1000, true);
	cr_expect(p.stream == NULL, "the bar is on for a file");
	cli_progress_add(&p, 1000);
	cli_progress_end(&p);
	EXPECT_STR(contents(f), "");
	fclose(f);
	cli_progress_begin(&p, NULL, "convert", 1000, true);
	cli_progress_add(&p, 1000);
	cli_progress_end(&p);
}

/* A pseudo-terminal 60 columns wide; returns the master, or -1 to skip. */
static int open_terminal(FILE **slave)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0 || grantpt(master) || unlockpt(master))
		return -1;
	struct winsize ws = {.ws_row = 24, .ws_col = 60};
	ioctl(master, TIOCSWINSZ, &ws);
	const char *name = ptsname(master);
	int fd = name ? open(name, O_RDWR | O_NOCTTY) : -1;
	*slave = fd >= 0 ? fdopen(fd, "w") : NULL;
	return *slave ? master : -1;
}

static size_t read_terminal(int master, char *buf, size_t size)
{
	size_t n = 0;
	struct pollfd pfd = {.fd = master, .events = POLLIN};
	while (n + 1 < size && poll(&pfd, 1, 200) > 0) {
		ssize_t got = read(master, buf + n, size - 1 - n);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	return n;
}

Test(progress, draws_on_a_terminal_as_wide_as_the_terminal)
{
	FILE *tty;
	int master = open_terminal(&tty);
	if (master < 0)
		cr_skip_test("no pseudo-terminal here");
	cli_progress p;
	cli_progress_begin(&p, tty, "materialize", 4 * GiB, true);
	cr_assert(p.stream == tty, "the bar is off on a terminal");
	EXPECT_INT(p.width, 60);
	p.now = fake_now; /* from here on, our clock */
	p.start = p.last_draw = fake_time = 0;
	fake_time = 1.0;
	cli_progress_add(&p, 1 * GiB);
	cli_progress_end(&p);
	char buf[512], line[128];
	read_terminal(master, buf, sizeof(buf));
	cli_progress_render(line, sizeof(line), "materialize", 1 * GiB, 4 * GiB, 1.0, 60);
	cr_expect(strlen(line) < 60);
	char want[512];
	snprintf(want, sizeof(want), "\r%s\r%*s\r", line, (int)strlen(line), "");
	EXPECT_STR(buf, want);
	fclose(tty);
	close(master);
}

Test(progress, stays_off_on_a_terminal_when_quiet)
{
	FILE *tty;
	int master = open_terminal(&tty);
	if (master < 0)
		cr_skip_test("no pseudo-terminal here");
	cli_progress p;
	cli_progress_begin(&p, tty, "materialize", 100, false);
	cr_expect(p.stream == NULL, "the bar is on despite --quiet");
	cli_progress_add(&p, 100);
	cli_progress_end(&p);
	char buf[64];
	EXPECT_INT(read_terminal(master, buf, sizeof(buf)), 0);
	fclose(tty);
	close(master);
}

Test(progress, clock_is_monotonic)
{
	double a = cli_progress_clock(), b = cli_progress_clock();
	cr_expect(a > 0 && b >= a, "got %f then %f", a, b);
}
