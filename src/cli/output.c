/* output.c - buffered output, tables, numbers and JSON for the commands (see output.h). */
#include "cli/output.h"

#include <cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/exit.h"

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
	return cli_out_room_slow(o, n);
}

char *cli_out_room_slow(cli_out *o, size_t n)
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

/* The decimal digits of u, written backwards from end: two at a time, as a table gives them. */
static char *digits_before(char *end, uint64_t u)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	                            "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	                            "8081828384858687888990919293949596979899";
	while (u >= 100) {
		unsigned r = (unsigned)(u % 100);
		u /= 100;
		end -= 2;
		memcpy(end, pairs + 2 * r, 2);
	}
	if (u >= 10) {
		end -= 2;
		memcpy(end, pairs + 2 * u, 2);
	} else {
		*--end = (char)('0' + u);
	}
	return end;
}

enum { INT_TEXT_MAX = CLI_INT_TEXT_MAX }; /* "-9223372036854775808" */

/* v in decimal at p (at most INT_TEXT_MAX bytes); returns the end. */
char *cli_int_at(char *p, int64_t v)
{
	if (v >= 0 && v < 10) { /* a tensor row's offsets, flags and small sizes */
		*p = (char)('0' + v);
		return p + 1;
	}
	if (v >= 10 && v < 10000) { /* its sizes and byte counts, mostly: two or four digits, or three */
		size_t n = v < 100 ? 2 : v < 1000 ? 3 : 4;
		digits_before(p + n, (uint64_t)v);
		return p + n;
	}
	static const uint64_t tens[] = {
		10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u, 1000000000u, 10000000000u,
		100000000000u, 1000000000000u, 10000000000000u, 100000000000000u, 1000000000000000u,
		10000000000000000u, 100000000000000000u, 1000000000000000000u, 10000000000000000000u,
	};
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	size_t n = 1; /* digits: one more for each power of ten u reaches */
	while (n < sizeof(tens) / sizeof(tens[0]) + 1 && u >= tens[n - 1])
		n++;
	if (v < 0)
		*p++ = '-';
	digits_before(p + n, u);
	return p + n;
}

/* No buffer to write in: through a small one of its own. */
static __attribute__((noinline)) void out_int_slow(cli_out *o, int64_t v)
{
	char small[INT_TEXT_MAX];
	cli_out_put(o, small, (size_t)(cli_int_at(small, v) - small));
}

void cli_out_int(cli_out *o, int64_t v)
{
	char *p = cli_out_room(o, INT_TEXT_MAX);
	if (p)
		cli_out_wrote(o, (size_t)(cli_int_at(p, v) - p));
	else
		out_int_slow(o, v);
}

char *cli_dims_at(char *p, const int64_t *d, int n)
{
	*p++ = '[';
	for (int i = 0; i < n; i++) {
		if (i) {
			memcpy(p, ", ", 2);
			p += 2;
		}
		p = cli_int_at(p, d[i]);
	}
	*p++ = ']';
	return p;
}

void cli_out_dims(cli_out *o, const int64_t *d, int n)
{
	char *p = cli_out_room(o, CLI_DIMS_TEXT_MAX(n > 0 ? n : 0));
	if (!p) { /* no buffer, or more dims than it holds: a piece at a time */
		cli_out_put(o, "[", 1);
		for (int i = 0; i < n; i++) {
			char t[INT_TEXT_MAX];
			if (i)
				cli_out_put(o, ", ", 2);
			cli_out_put(o, t, (size_t)(cli_int_at(t, d[i]) - t));
		}
		cli_out_put(o, "]", 1);
		return;
	}
	cli_out_wrote(o, (size_t)(cli_dims_at(p, d, n) - p));
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
/*
 * The length of s's first stretch that needs no escape: eight bytes at a
 * time, and the last few as the string's last eight (read again) when it
 * has eight, so that a name is a few word tests and no byte loop.
 */
static inline size_t plain_json(const char *s, size_t n)
{
	size_t i = 0;
	uint64_t w;
	for (; n - i >= 8; i += 8) {
		memcpy(&w, s + i, 8);
		if (needs_escape(w))
			break;
	}
	if (i < n && n - i < 8 && n >= 8) {
		memcpy(&w, s + n - 8, 8);
		if (!needs_escape(w))
			return n;
	}
	while (i < n && (unsigned char)s[i] >= 0x20 && s[i] != '"' && s[i] != '\\')
		i++;
	return i;
}

/* The escape of c (below 0x20, '"' or '\\') at p; returns its end. */
static char *escape_at(char *p, unsigned char c)
{
	*p++ = '\\';
	switch (c) {
	case '"': *p++ = '"'; break;
	case '\\': *p++ = '\\'; break;
	case '\b': *p++ = 'b'; break;
	case '\f': *p++ = 'f'; break;
	case '\n': *p++ = 'n'; break;
	case '\r': *p++ = 'r'; break;
	case '\t': *p++ = 't'; break;
	default:
		memcpy(p, "u00", 3);
		p[3] = "0123456789abcdef"[c >> 4];
		p[4] = "0123456789abcdef"[c & 15];
		p += 5;
		break;
	}
	return p;
}

char *cli_json_string_at(char *p, const char *s, size_t n)
{
	*p++ = '"';
	if (n < 8) { /* a storage key, a device: byte by byte, copied as checked */
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)s[i];
			if (c < 0x20 || c == '"' || c == '\\')
				p = escape_at(p, c);
			else
				*p++ = (char)c;
		}
		*p++ = '"';
		return p;
	}
	for (size_t i = 0;;) {
		size_t k = plain_json(s + i, n - i);
		memcpy(p, s + i, k);
		p += k;
		i += k;
		if (i == n)
			break;
		p = escape_at(p, (unsigned char)s[i++]);
	}
	*p++ = '"';
	return p;
}

void cli_out_json_string(cli_out *o, const char *s)
{
	size_t n = strlen(s);
	char *p = n < CLI_OUT_BUFFER / 6 ? cli_out_room(o, 6 * n + 2) : NULL;
	if (p) {
		cli_out_wrote(o, (size_t)(cli_json_string_at(p, s, n) - p));
		return;
	}
	cli_out_put(o, "\"", 1); /* too long for the buffer, or none: a stretch at a time */
	for (size_t i = 0;;) {
		size_t k = plain_json(s + i, n - i);
		cli_out_put(o, s + i, k);
		i += k;
		if (i == n)
			break;
		char esc[8];
		cli_out_put(o, esc, (size_t)(escape_at(esc, (unsigned char)s[i++]) - esc));
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

int cli_terminal_columns(int fd)
{
	const char *columns = getenv("COLUMNS");
	long v = columns ? strtol(columns, NULL, 10) : 0;
	if (v > 0 && v < 10000)
		return (int)v;
	struct winsize ws;
	if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 0;
}

/*
 * A CLI_WRAP cell starting at column `start`: its words on lines of at most
 * `limit` columns (0: one line), each next line indented to `start`. A word
 * longer than a line is printed whole: a sentence is never cut.
 */
static void out_wrapped(cli_out *o, const char *s, int start, int limit)
{
	size_t n = strlen(s);
	char small[1024], *t = 4 * n + 1 <= sizeof(small) ? small : malloc(4 * n + 1);
	if (!t) {
		cli_out_safe(o, s, 0);
		return;
	}
	escape(s, t);
	int col = 0;
	for (const char *w = t; *w;) {
		while (*w == ' ')
			w++;
		const char *end = w;
		while (*end && *end != ' ')
			end++;
		if (end == w)
			break;
		char word[1024];
		size_t len = (size_t)(end - w) < sizeof(word) - 1 ? (size_t)(end - w) : sizeof(word) - 1;
		memcpy(word, w, len);
		word[len] = '\0';
		int ww = cli_text_width(word);
		if (col && limit > 0 && col + 1 + ww > limit) {
			cli_out_put(o, "\n", 1);
			cli_out_pad(o, (size_t)start);
			col = 0;
		} else if (col) {
			cli_out_put(o, " ", 1);
			col++;
		}
		cli_out_put(o, w, (size_t)(end - w));
		col += ww;
		w = end;
	}
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

int cli_table_flush(cli_table *t)
{
	cli_out o;
	cli_out_init(&o, stdout);
	bool ok = cli_table_print(t, &o);
	cli_out_close(&o);
	cli_table_free(t);
	if (ok)
		return EXIT_OK;
	fprintf(stderr, "tinspect: out of memory\n");
	return EXIT_RESOURCE;
}

bool cli_table_print(cli_table *t, cli_out *o)
{
	if (t->failed)
		return false;
	int width[32];
	int ncols = t->ncols < 32 ? t->ncols : 32;
	int terminal = cli_terminal_columns(fileno(o->file));
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
		int start = 0;
		for (int c = 0; c < end; c++) {
			const char *cell = row ? row[c] : t->columns[c].header;
			if (c) {
				cli_out_pad(o, CLI_GAP);
				start += CLI_GAP;
			}
			if (t->columns[c].align == CLI_WRAP && c == end - 1)
				out_wrapped(o, cell ? cell : "", start, terminal > start ? terminal - start : 0);
			else
				cli_out_cell(o, cell ? cell : "", width[c], t->columns[c].align, c == end - 1);
			start += width[c];
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

/* ---- numbers ---- (cli_human above) */

const char *cli_bytes(int64_t n, char *buf, size_t size)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (cli_raw_numbers) {
		snprintf(buf, size, "%" PRId64, n);
		return buf;
	}
	double v = (double)n;
	int u = 0;
	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0 && n >= 0 && size >= 7) { /* "1023 B" at most: by hand, as it is a column of every row */
		char digits[4];
		size_t k = 0, len = 0;
		do
			digits[k++] = (char)('0' + n % 10);
		while ((n /= 10));
		while (k)
			buf[len++] = digits[--k];
		memcpy(buf + len, " B", 3);
	} else if (u == 0)
		snprintf(buf, size, "%" PRId64 " B", n);
	else
		snprintf(buf, size, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
	return buf;
}

const char *cli_count(int64_t n, char *buf, size_t size)
{
	char digits[32];
	int len = snprintf(digits, sizeof(digits), "%" PRId64, n);
	if (cli_raw_numbers) {
		snprintf(buf, size, "%s", digits);
		return buf;
	}
	size_t j = 0;
	for (int i = 0; i < len && j + 2 < size; i++) {
		buf[j++] = digits[i];
		int rest = len - i - 1;
		if (rest > 0 && rest % 3 == 0 && digits[i] != '-')
			buf[j++] = ',';
	}
	buf[j] = '\0';
	return buf;
}

const char *cli_quantity(int64_t n, bool bytes, char *buf, size_t size)
{
	char readable[32], exact[32];
	if (bytes)
		cli_bytes(n, readable, sizeof(readable));
	else
		cli_human(n, "", readable, sizeof(readable));
	cli_count(n, exact, sizeof(exact));
	if (cli_raw_numbers || !strcmp(readable, exact) || (bytes && n < 1024))
		snprintf(buf, size, "%s", readable);
	else
		snprintf(buf, size, "%s (%s)", readable, exact);
	return buf;
}

const char *cli_dims(const int64_t *d, int n, char *buf, size_t size)
{
	/* By hand, not snprintf: this runs for every tensor of 20,000-tensor checkpoints. */
	size_t len = 0;
	if (size < 24 + 3)
		return buf[0] = '\0', buf;
	buf[len++] = '[';
	for (int i = 0; i < n; i++) {
		char digits[24];
		int k = 0;
		uint64_t u = d[i] < 0 ? 0 - (uint64_t)d[i] : (uint64_t)d[i];
		do
			digits[k++] = (char)('0' + u % 10);
		while ((u /= 10));
		if (d[i] < 0)
			digits[k++] = '-';
		if (len + (size_t)k + 4 + 3 >= size) {
			memcpy(buf + len, "...", 3);
			len += 3;
			break;
		}
		if (i) {
			buf[len++] = ',';
			buf[len++] = ' ';
		}
		while (k)
			buf[len++] = digits[--k];
	}
	buf[len++] = ']';
	buf[len] = '\0';
	return buf;
}


/* ---- JSON ---- */

cJSON *cli_json_root(void)
{
	cJSON *root = cJSON_CreateObject();
	if (root)
		cJSON_AddItemToObject(root, "schema", cJSON_CreateRaw(TI_STRINGIFY(CLI_JSON_SCHEMA)));
	return root;
}

void cli_json_begin(cli_json_doc *d, FILE *f)
{
	*d = (cli_json_doc){f, 0, 0, false};
	fputc('{', f);
}

/*
 * JSON text as cJSON printed it, less any byte that is not UTF-8: a name
 * from a file (a zip record's, a pickle's) may hold any bytes, and cJSON
 * copies them through; each such byte becomes U+FFFD, so the document
 * stays JSON (RFC 8259 section 8.1).
 */
static void put_utf8(FILE *f, const char *text)
{
	const unsigned char *s = (const unsigned char *)text, *run = s; /* run: valid bytes not yet written */
	while (*s) {
		if (*s < 0x80) {
			s++;
			continue;
		}
		size_t len = (*s >> 5) == 6 ? 2 : (*s >> 4) == 14 ? 3 : (*s >> 3) == 30 ? 4 : 0;
		bool ok = len && *s >= 0xc2 && *s <= 0xf4;
		for (size_t k = 1; ok && k < len; k++)
			ok = (s[k] & 0xc0) == 0x80;
		if (ok && len > 2)
			ok = !((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) || (s[0] == 0xf0 && s[1] < 0x90) ||
			       (s[0] == 0xf4 && s[1] > 0x8f));
		if (ok) {
			s += len;
			continue;
		}
		fwrite(run, 1, (size_t)(s - run), f);
		fputs("\xef\xbf\xbd", f);
		run = ++s;
	}
	fwrite(run, 1, (size_t)(s - run), f);
}

static void put_key(cli_json_doc *d, const char *key)
{
	fputs(d->members++ ? ",\n  " : "\n  ", d->f);
	cJSON *k = cJSON_CreateString(key);
	char *text = k ? cJSON_PrintUnformatted(k) : NULL;
	cJSON_Delete(k);
	if (!text) {
		d->failed = true;
		return;
	}
	put_utf8(d->f, text);
	fputs(": ", d->f);
	cJSON_free(text);
}

static void put_compact(cli_json_doc *d, cJSON *value)
{
	char *text = value ? cJSON_PrintUnformatted(value) : NULL;
	cJSON_Delete(value);
	if (!text) {
		d->failed = true;
		fputs("null", d->f);
		return;
	}
	put_utf8(d->f, text);
	cJSON_free(text);
}

void cli_json_array_begin(cli_json_doc *d, const char *key)
{
	put_key(d, key);
	fputc('[', d->f);
	d->rows = 0;
}

void cli_json_array_row(cli_json_doc *d, cJSON *row)
{
	fputs(d->rows++ ? ",\n    " : "\n    ", d->f);
	put_compact(d, row);
}

void cli_json_array_end(cli_json_doc *d) { fputs(d->rows ? "\n  ]" : "]", d->f); }

void cli_json_member(cli_json_doc *d, const char *key, cJSON *value)
{
	if (!value) {
		d->failed = true;
		return;
	}
	if (!cJSON_IsArray(value)) {
		put_key(d, key);
		put_compact(d, value);
		return;
	}
	cli_json_array_begin(d, key);
	while (value->child)
		cli_json_array_row(d, cJSON_DetachItemViaPointer(value, value->child));
	cli_json_array_end(d);
	cJSON_Delete(value);
}

void cli_json_members(cli_json_doc *d, cJSON *object)
{
	if (!object) {
		d->failed = true;
		return;
	}
	while (object->child) {
		cJSON *item = cJSON_DetachItemViaPointer(object, object->child);
		char *key = item->string;
		item->string = NULL;
		cli_json_member(d, key, item);
		cJSON_free(key);
	}
	cJSON_Delete(object);
}

int cli_json_end(cli_json_doc *d)
{
	fputs(d->members ? "\n}\n" : "}\n", d->f);
	if (d->failed) {
		fprintf(stderr, "tinspect: out of memory writing JSON\n");
		return EXIT_RESOURCE;
	}
	return EXIT_OK;
}

const char *cli_fetched_words(ti_io_counts c, char *buf, size_t size)
{
	char num[32];
	if (!c.requests)
		return NULL;
	snprintf(buf, size, "%s in %" PRIu64 " HTTP request%s", cli_quantity((int64_t)c.bytes, true, num, sizeof(num)),
	         c.requests, c.requests == 1 ? "" : "s");
	return buf;
}

cJSON *cli_fetched_json(ti_io_counts c)
{
	cJSON *o = cJSON_CreateObject();
	if (o) {
		cJSON_AddNumberToObject(o, "requests", (double)c.requests);
		cJSON_AddNumberToObject(o, "bytes", (double)c.bytes);
	}
	return o;
}

int cli_json_print(cJSON *root)
{
	/* every command's document says what its URLs cost, as inspect's does */
	ti_io_counts c = ti_io_remote_counts();
	if (c.requests && cJSON_IsObject(root) && !cJSON_GetObjectItemCaseSensitive(root, "fetched"))
		cJSON_AddItemToObject(root, "fetched", cli_fetched_json(c));
	cli_json_doc d;
	cli_json_begin(&d, stdout);
	cli_json_members(&d, root);
	return cli_json_end(&d);
}
