/*
 * output.h - what every command prints goes through here: buffered output,
 * tables, numbers for a person, and the one JSON layout.
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

#include "tinspect/io.h"

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
char *cli_out_room_slow(cli_out *o, size_t n);

/*
 * Room for up to n bytes written in place: the caller writes them at the
 * pointer, then says how many with cli_out_wrote. NULL when there is no
 * buffer or n is more than it holds: then the caller writes through
 * cli_out_put instead. A number or a shape is written this way, without
 * a copy through a buffer of its own.
 */
static inline char *cli_out_room(cli_out *o, size_t n)
{
	return o->buf && n <= o->cap - o->len ? o->buf + o->len : cli_out_room_slow(o, n);
}

static inline void cli_out_wrote(cli_out *o, size_t n) { o->len += n; }

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
/* d as JSON writes it and cli_dims spells it: "[8, 3, 7, 7]". */
void cli_out_dims(cli_out *o, const int64_t *d, int n);

/*
 * The same written at p, for a caller that took cli_out_room for a whole
 * row: each returns the end of what it wrote. At most CLI_INT_TEXT_MAX bytes
 * for an integer, CLI_DIMS_TEXT_MAX(n) for dims, 6 * n + 2 for a JSON string
 * of n bytes (escaped as cli_out_json_string escapes it).
 */
#define CLI_INT_TEXT_MAX 20
#define CLI_DIMS_TEXT_MAX(n) (2 + (size_t)(n) * (CLI_INT_TEXT_MAX + 2))
char *cli_int_at(char *p, int64_t v);
char *cli_dims_at(char *p, const int64_t *d, int n);
char *cli_json_string_at(char *p, const char *s, size_t n);
/* s with control characters escaped, padded to width columns (see cli_put_safe). */
void cli_out_safe(cli_out *o, const char *s, int width);
/* s as a JSON string, escaped as cJSON prints strings, so both writers agree byte for byte. */
void cli_out_json_string(cli_out *o, const char *s);

/*
 * Tables: one look for every command. Columns are as wide as their widest
 * cell (within a column's ceiling), CLI_GAP spaces apart, numbers to the
 * right; a cell longer than its column loses its middle to an ellipsis, so a
 * long name never pushes the next column out of line (JSON output always has
 * the whole name). The last column is not padded.
 */
#define CLI_GAP 2
#define CLI_ELLIPSIS "\xe2\x80\xa6" /* U+2026, one column */

/* CLI_WRAP: a last, left column of sentences, wrapped at spaces to the terminal's width, never cut. */
typedef enum { CLI_LEFT, CLI_RIGHT, CLI_WRAP } cli_align;

/* The terminal's columns: $COLUMNS, else the width of fd when it is a terminal, else 0 (unknown). */
int cli_terminal_columns(int fd);

/* The columns s takes on a terminal once cli_out_safe has escaped it. */
int cli_text_width(const char *s);
/* s in exactly width columns: escaped, cut in the middle if longer, padded unless last. */
void cli_out_cell(cli_out *o, const char *s, int width, cli_align align, bool last);

typedef struct cli_column {
	const char *header; /* upper case, the same word for the same thing in every command */
	cli_align align;
	int max;            /* ceiling on the width, 0 for none; cells past it are cut in the middle */
} cli_column;

/* A table gathered row by row (cells copied), then printed at once: for the short tables. */
typedef struct cli_table {
	const cli_column *columns;
	int ncols;
	char **cells; /* rows * ncols, NULL for an empty cell */
	size_t rows, cap;
	bool failed;  /* memory ran out: cli_table_print says so */
} cli_table;

void cli_table_init(cli_table *t, const cli_column *columns, int ncols);
/* Adds a row of ncols cells (NULL or "" for an empty one). */
void cli_table_add(cli_table *t, const char *const *cells);
/* Prints the header and rows; false when memory ran out while gathering. */
bool cli_table_print(cli_table *t, cli_out *o);
void cli_table_free(cli_table *t);
/* Prints t on stdout and frees it: EXIT_OK, or EXIT_RESOURCE, said on stderr, when memory ran out. */
int cli_table_flush(cli_table *t);
/* The widths a streamed table's columns need: max(header, cell) within the ceiling. */
int cli_column_width(const cli_column *c, int widest_cell);

/*
 * Numbers a person reads: "25.6 M", "1.82 G" (three significant figures,
 * powers of 1000), followed by unit ("Mac" for "1.82 GMac"); exact below
 * 1000. With --raw (cli_raw_numbers) every count and byte size is printed
 * as an exact integer instead, for scripts that read text.
 */
extern bool cli_raw_numbers;
const char *cli_human(int64_t n, const char *unit, char *buf, size_t size);
const char *cli_bytes(int64_t n, char *buf, size_t size);   /* "4.59 KiB", "16 B" */
const char *cli_count(int64_t n, char *buf, size_t size);   /* "1,234,567" */
/* For a summary: "1.23 M (1,234,567)", "698 KiB (714,408)" (bytes), "122"; the exact integer alone with --raw. */
const char *cli_quantity(int64_t n, bool bytes, char *buf, size_t size);
const char *cli_dims(const int64_t *d, int n, char *buf, size_t size); /* "[8, 3, 7, 7]" */

/* A JSON document's top-level object, with "schema": 1 as its first member (tinspect(1): JSON OUTPUT). */
#define CLI_JSON_SCHEMA 1
#define TI_STRINGIFY_(x) #x
#define TI_STRINGIFY(x) TI_STRINGIFY_(x)
struct cJSON;
struct cJSON *cli_json_root(void);
/*
 * What the URLs read cost: "6.00 MiB (6,291,456) in 3 HTTP requests" into
 * buf, or NULL when no request was made (only local files were read).
 */
const char *cli_fetched_words(ti_io_counts c, char *buf, size_t size);
/* {"requests": N, "bytes": N}, as every --json names it "fetched" */
struct cJSON *cli_fetched_json(ti_io_counts c);

/*
 * One JSON layout for every command: the top-level object's members one a
 * line, indented two spaces; a top-level array's elements one a line,
 * indented four; everything inside them compact, as cJSON prints it. So a
 * document is valid JSON and also greps a tensor or a step a line.
 * cli_json_print writes root that way and frees it; a command whose rows
 * come one at a time streams them with the cli_json_doc calls instead.
 */
typedef struct cli_json_doc {
	FILE *f;
	size_t members, rows;
	bool failed; /* memory ran out */
} cli_json_doc;
void cli_json_begin(cli_json_doc *d, FILE *f);
/* Writes "key": value (consumed); an array value gets one element a line. */
void cli_json_member(cli_json_doc *d, const char *key, struct cJSON *value);
/* Every member of object (consumed) in turn. */
void cli_json_members(cli_json_doc *d, struct cJSON *object);
void cli_json_array_begin(cli_json_doc *d, const char *key);
void cli_json_array_row(cli_json_doc *d, struct cJSON *row); /* consumed */
void cli_json_array_end(cli_json_doc *d);
/* Closes the document; EXIT_OK, or EXIT_RESOURCE (printed) when memory ran out. */
int cli_json_end(cli_json_doc *d);
int cli_json_print(struct cJSON *root);
/* Seconds in JSON, never in exponent notation: "0.000123". */
const char *cli_json_seconds(double seconds, char *buf, size_t size);

#endif
