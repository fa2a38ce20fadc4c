/*
 * output.h - buffered output for the commands that print a line per tensor.
 *
 * A cli_out gathers text in a buffer and hands it to stdio 64 KiB at a time:
 * formatting 20,000 rows with printf, and writing each through stdio's
 * locked calls, cost more than reading the checkpoint did. Text goes in
 * through the functions below, in order; whatever else writes to the same
 * FILE must wait for cli_out_flush. Without memory for the buffer, text goes
 * straight to the FILE: slower, never lost.
 */
#ifndef TINSPECT_CLI_OUTPUT_H
#define TINSPECT_CLI_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CLI_OUT_BUFFER (64 * 1024)

typedef struct cli_out {
	FILE *file;
	char *buf; /* NULL until the first write, or when malloc said no */
	size_t len, cap;
	bool owned; /* buf is ours to free */
} cli_out;

/* A buffer of CLI_OUT_BUFFER bytes, made on the first write. */
void cli_out_init(cli_out *o, FILE *file);
/* The caller's buffer instead, for a few words at a time (cli_put_safe). */
void cli_out_init_buffer(cli_out *o, FILE *file, char *buf, size_t size);
/* Hands what is buffered to the FILE (no fflush); the buffer stays for more. */
void cli_out_flush(cli_out *o);
/* Flushes, and frees the buffer if it made it. */
void cli_out_close(cli_out *o);

void cli_out_put_slow(cli_out *o, const char *s, size_t n);

/* Inline, so that short constant pieces cost a move and a compare. */
static inline void cli_out_put(cli_out *o, const char *s, size_t n)
{
	if (o->buf && n <= o->cap - o->len) { /* no buffer yet: not even memcpy of 0 bytes to NULL */
		memcpy(o->buf + o->len, s, n);
		o->len += n;
	} else {
		cli_out_put_slow(o, s, n);
	}
}

static inline void cli_out_puts(cli_out *o, const char *s) { cli_out_put(o, s, strlen(s)); }

void cli_out_printf(cli_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n spaces. */
void cli_out_pad(cli_out *o, size_t n);
/* s in width columns, left- or right-aligned, never cut: printf's %-*s and %*s. */
void cli_out_left(cli_out *o, const char *s, int width);
void cli_out_right(cli_out *o, const char *s, int width);
void cli_out_int(cli_out *o, int64_t v);
/* s with control characters escaped, padded to width columns (see cli_put_safe). */
void cli_out_safe(cli_out *o, const char *s, int width);
/* s as a JSON string, escaped as cJSON prints strings, so both writers agree byte for byte. */
void cli_out_json_string(cli_out *o, const char *s);

#endif
