/* output.c - buffered output for the commands (see output.h). */
#include "cli/output.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cli_out_init(cli_out *o, FILE *file)
{
	cli_out_init_buffer(o, file, NULL, 0);
	o->owned = true;
}

void cli_out_init_buffer(cli_out *o, FILE *file, char *buf, size_t size)
{
	o->file = file;
	o->buf = buf;
	o->len = 0;
	o->cap = size;
	o->owned = false;
}

void cli_out_flush(cli_out *o)
{
	if (o->len)
		fwrite(o->buf, 1, o->len, o->file);
	o->len = 0;
}

void cli_out_close(cli_out *o)
{
	cli_out_flush(o);
	if (o->owned)
		free(o->buf);
	o->buf = NULL;
	o->cap = 0;
}

/* Room for n more bytes in the buffer, or NULL: then the caller writes straight to the FILE. */
static char *room(cli_out *o, size_t n)
{
	if (!o->buf && o->owned && (o->buf = malloc(CLI_OUT_BUFFER)))
		o->cap = CLI_OUT_BUFFER;
	if (!o->buf)
		return NULL;
	if (n > o->cap - o->len) {
		cli_out_flush(o);
		if (n > o->cap)
			return NULL;
	}
	return o->buf + o->len;
}

void cli_out_put_slow(cli_out *o, const char *s, size_t n)
{
	char *p = room(o, n);
	if (!p) {
		cli_out_flush(o);
		fwrite(s, 1, n, o->file);
		return;
	}
	memcpy(p, s, n);
	o->len += n;
}

void cli_out_printf(cli_out *o, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		cli_out_put(o, small, (size_t)n);
		return;
	}
	cli_out_flush(o);
	va_start(ap, fmt);
	vfprintf(o->file, fmt, ap);
	va_end(ap);
}

void cli_out_pad(cli_out *o, size_t n)
{
	static const char spaces[] = "                                                                ";
	while (n) {
		size_t k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;
		cli_out_put(o, spaces, k);
		n -= k;
	}
}

void cli_out_left(cli_out *o, const char *s, int width)
{
	size_t n = strlen(s);
	cli_out_put(o, s, n);
	if ((size_t)width > n && width > 0)
		cli_out_pad(o, (size_t)width - n);
}

void cli_out_right(cli_out *o, const char *s, int width)
{
	size_t n = strlen(s);
	if ((size_t)width > n && width > 0)
		cli_out_pad(o, (size_t)width - n);
	cli_out_put(o, s, n);
}

void cli_out_int(cli_out *o, int64_t v)
{
	char digits[24];
	int k = sizeof(digits);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do
		digits[--k] = (char)('0' + u % 10);
	while ((u /= 10));
	if (v < 0)
		digits[--k] = '-';
	cli_out_put(o, digits + k, sizeof(digits) - (size_t)k);
}

void cli_out_safe(cli_out *o, const char *s, int width)
{
	int n = 0;
	size_t plain = 0;
	while (s[plain] && (unsigned char)s[plain] >= 0x20 && s[plain] != 0x7f && !((unsigned char)s[plain] & 0x80))
		plain++;
	if (!s[plain]) { /* the common case: printable ASCII, written at once */
		cli_out_put(o, s, plain);
		if ((int)plain < width)
			cli_out_pad(o, (size_t)(width - (int)plain));
		return;
	}
	for (; *s; s++, n++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f) {
			char hex[5];
			snprintf(hex, sizeof(hex), "\\x%02x", c);
			cli_out_put(o, hex, 4);
			n += 3;
		} else {
			cli_out_put(o, (const char *)&c, 1);
		}
		if ((c & 0xc0) == 0x80)
			n--; /* continuation bytes take no column */
	}
	if (n < width)
		cli_out_pad(o, (size_t)(width - n));
}

/* True if a byte of w is below 0x20, '"' or '\\' (bit tricks from "Bit Twiddling Hacks": hasless, haszero). */
static bool needs_escape(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
	uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
	return ((w - ones * 0x20) & ~w & highs) | ((quote - ones) & ~quote & highs) |
	       ((backslash - ones) & ~backslash & highs);
}

/* cJSON 1.7's print_string_ptr: ", \ and the C escapes by name, other bytes below 0x20 as \u00xx, the rest as they are. */
void cli_out_json_string(cli_out *o, const char *s)
{
	const char *plain = s, *end = s + strlen(s);
	cli_out_put(o, "\"", 1);
	for (uint64_t w; end - s >= 8; s += 8) { /* eight bytes at a time while none needs escaping */
		memcpy(&w, s, 8);
		if (needs_escape(w))
			break;
	}
	for (;; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		cli_out_put(o, plain, (size_t)(s - plain));
		plain = s + 1;
		if (!c)
			break;
		char esc[8] = {'\\', 0};
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default: snprintf(esc + 1, sizeof(esc) - 1, "u%04x", c); break;
		}
		cli_out_puts(o, esc);
	}
	cli_out_put(o, "\"", 1);
}

/* ---- tables ---- */

int cli_text_width(const char *s)
{
	int n = 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f)
			n += 4; /* "\x1b" */
		else if ((c & 0xc0) != 0x80)
			n++; /* continuation bytes take no column */
	}
	return n;
}

/* s escaped as cli_out_safe writes it, into buf (size at least 4 * strlen(s) + 1). */
static void escape(const char *s, char *buf)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f)
			buf += snprintf(buf, 5, "\\x%02x", c);
		else
			*buf++ = (char)c;
	}
	*buf = '\0';
}

/* The byte offset of column col of the escaped text t (one column per character). */
static size_t column_at(const char *t, int col)
{
	size_t i = 0;
	for (int k = 0; t[i]; i++)
		if (((unsigned char)t[i] & 0xc0) != 0x80 && k++ == col)
			return i;
	return i;
}

void cli_out_cell(cli_out *o, const char *s, int width, cli_align align, bool last)
{
	int w = cli_text_width(s);
	if (w <= width || width < 3) {
		if (align == CLI_RIGHT && w < width)
			cli_out_pad(o, (size_t)(width - w));
		cli_out_safe(o, s, align == CLI_LEFT && !last ? width : 0);
		return;
	}
	size_t n = strlen(s);
	char small[1024], *t = 4 * n + 1 <= sizeof(small) ? small : malloc(4 * n + 1);
	if (!t) { /* no memory for the copy: the whole cell, alignment lost but nothing hidden */
		cli_out_safe(o, s, 0);
		return;
	}
	escape(s, t);
	/* keep more of the end: a name's last components say what the tensor is */
	int head = (width - 1) / 2, tail = width - 1 - head;
	size_t head_end = column_at(t, head), tail_start = column_at(t, w - tail);
	cli_out_put(o, t, head_end);
	cli_out_puts(o, CLI_ELLIPSIS);
	cli_out_puts(o, t + tail_start);
	if (t != small)
		free(t);
}

int cli_column_width(const cli_column *c, int widest_cell)
{
	int w = cli_text_width(c->header);
	if (widest_cell > w)
		w = widest_cell;
	if (c->max && w > c->max)
		w = c->max > (int)strlen(c->header) ? c->max : (int)strlen(c->header);
	return w;
}

void cli_table_init(cli_table *t, const cli_column *columns, int ncols)
{
	memset(t, 0, sizeof(*t));
	t->columns = columns;
	t->ncols = ncols;
}

void cli_table_add(cli_table *t, const char *const *cells)
{
	if (t->failed)
		return;
	if (t->rows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		char **bigger = realloc(t->cells, cap * (size_t)t->ncols * sizeof(*bigger));
		if (!bigger) {
			t->failed = true;
			return;
		}
		t->cells = bigger;
		t->cap = cap;
	}
	char **row = t->cells + t->rows * (size_t)t->ncols;
	for (int c = 0; c < t->ncols; c++) {
		row[c] = NULL;
		if (cells[c] && *cells[c] && !(row[c] = strdup(cells[c])))
			t->failed = true;
	}
	t->rows++;
}

bool cli_table_print(cli_table *t, cli_out *o)
{
	if (t->failed)
		return false;
	int width[32];
	int ncols = t->ncols < 32 ? t->ncols : 32;
	for (int c = 0; c < ncols; c++) {
		int widest = 0;
		for (size_t r = 0; r < t->rows; r++) {
			const char *cell = t->cells[r * (size_t)t->ncols + (size_t)c];
			int w = cell ? cli_text_width(cell) : 0;
			if (w > widest)
				widest = w;
		}
		width[c] = cli_column_width(&t->columns[c], widest);
	}
	for (size_t r = 0; r <= t->rows; r++) {
		char **row = r ? t->cells + (r - 1) * (size_t)t->ncols : NULL;
		int end = ncols; /* no trailing blanks: a row ends at its last cell with text */
		while (row && end > 1 && !row[end - 1])
			end--;
		for (int c = 0; c < end; c++) {
			const char *cell = row ? row[c] : t->columns[c].header;
			if (c)
				cli_out_pad(o, CLI_GAP);
			cli_out_cell(o, cell ? cell : "", width[c], t->columns[c].align, c == end - 1);
		}
		cli_out_put(o, "\n", 1);
	}
	return true;
}

void cli_table_free(cli_table *t)
{
	for (size_t i = 0; t->cells && i < t->rows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

/* ---- numbers ---- */

bool cli_raw_numbers;

const char *cli_human(int64_t n, const char *unit, char *buf, size_t size)
{
	static const char prefixes[] = "KMGTPE";
	if (cli_raw_numbers) {
		snprintf(buf, size, "%" PRId64, n);
		return buf;
	}
	if (n < 1000 && n > -1000) {
		snprintf(buf, size, *unit ? "%" PRId64 " %s" : "%" PRId64, n, unit);
		return buf;
	}
	double v = (double)n;
	int p = -1;
	while ((v >= 999.5 || v <= -999.5) && p < 5) {
		v /= 1000;
		p++;
	}
	double a = v < 0 ? -v : v;
	/* three significant figures, rounding up to the next prefix ("999.7 K" is "1.00 M") */
	snprintf(buf, size, a < 9.995 ? "%.2f %c%s" : a < 99.95 ? "%.1f %c%s" : "%.0f %c%s", v, prefixes[p], unit);
	return buf;
}

const char *cli_json_seconds(double seconds, char *buf, size_t size)
{
	snprintf(buf, size, "%.6f", seconds < 0 ? 0 : seconds);
	return buf;
}
