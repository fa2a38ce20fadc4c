/*
 * progress.h - a progress bar for long copies (materialize, convert).
 *
 * One line on a terminal:
 *   convert  [##########..........]  50%  512 MiB / 1.00 GiB  256 MiB/s  ETA 0:02
 * redrawn in place (carriage return, no escape sequences) at most once every
 * CLI_PROGRESS_INTERVAL seconds of a monotonic clock, and erased by
 * cli_progress_end() so that what the command prints next starts on a clean
 * line. Sizes and rates use the binary units of the rest of the CLI.
 *
 * The bar is drawn only when it was enabled (not --quiet) and the stream is a
 * terminal; otherwise every call is a no-op, so commands call them
 * unconditionally. A cli_progress is the caller's (usually on the stack) and
 * owns nothing; the label is copied. Not thread-safe: one thread adds.
 */
#ifndef TINSPECT_CLI_PROGRESS_H
#define TINSPECT_CLI_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_PROGRESS_INTERVAL 0.1 /* seconds between redraws: ~10 a second */
#define CLI_PROGRESS_WIDTH_MIN 20 /* columns assumed at the least */
#define CLI_PROGRESS_WIDTH_MAX 200
#define CLI_PROGRESS_LABEL_MAX 48

/* Seconds on a clock that never goes back; tests substitute their own. */
typedef double (*cli_clock)(void);

typedef struct cli_progress {
	FILE *stream;                         /* NULL: the bar is off */
	char label[CLI_PROGRESS_LABEL_MAX];   /* control characters replaced by '?' */
	uint64_t total, done;                 /* bytes; total 0 is unknown */
	double start, last_draw;              /* clock readings */
	int width;                            /* terminal columns */
	size_t drawn;                         /* columns written on the current line, 0 when none */
	cli_clock now;
} cli_progress;

/* The monotonic clock (CLOCK_MONOTONIC), in seconds. */
double cli_progress_clock(void);

/*
 * Starts a bar of total_bytes on stream when enabled and the stream is a
 * terminal (isatty), as wide as the terminal; otherwise the bar stays off.
 * Nothing is drawn until CLI_PROGRESS_INTERVAL has passed, so quick jobs
 * never flicker.
 */
void cli_progress_begin(cli_progress *p, FILE *stream, const char *label, uint64_t total_bytes, bool enabled);

/* Starts a bar that draws whatever the stream is, width columns wide, on the
 * given clock (NULL: cli_progress_clock). For tests, and for callers that
 * have decided themselves. */
void cli_progress_start(cli_progress *p, FILE *stream, const char *label, uint64_t total_bytes, int width,
                        cli_clock now);

/* Counts n more bytes done; redraws when the interval has passed. */
void cli_progress_add(cli_progress *p, uint64_t n);

/* Erases the line if one was drawn and turns the bar off; safe to repeat. */
void cli_progress_end(cli_progress *p);

/*
 * Formats one line, without a newline, into buf (size bytes, NUL-terminated):
 * the pure function under the bar. The line is shorter than width (clamped to
 * CLI_PROGRESS_WIDTH_MIN..MAX) so that the terminal never wraps it; pieces are
 * dropped as room runs out: the bar first, then the label, then the sizes
 * and rate (leaving the percentage and ETA). elapsed is in
 * seconds. Returns the line's length.
 */
size_t cli_progress_render(char *buf, size_t size, const char *label, uint64_t done, uint64_t total,
                           double elapsed, int width);

#endif
