/*
 * npy.c - the .npy header: a strict reader of its Python dict literal, and
 * the header np.save writes (see tinspect/npy.h).
 */
#include "tinspect/npy.h"

#include <stdio.h>
#include <string.h>

static const char magic[6] = "\x93NUMPY";

/* NumPy's ARRAY_ALIGN: np.save pads the header so that the data starts at a multiple of it. */
enum { ARRAY_ALIGN = 64 };
/* np.save's GROWTH_AXIS_MAX_DIGITS: room left after the dict for the growing axis to get longer. */
enum { GROWTH_AXIS_MAX_DIGITS = 21 };

/* One row per dtype NumPy and tinspect share: the kind letter and item size descr spells. */
static const struct {
	char kind;
	int size;
	ti_dtype dtype;
} dtypes[] = {
	{'b', 1, TI_DT_BOOL},     {'i', 1, TI_DT_INT8},    {'u', 1, TI_DT_UINT8},
	{'i', 2, TI_DT_INT16},    {'u', 2, TI_DT_UINT16},  {'f', 2, TI_DT_FLOAT16},
	{'i', 4, TI_DT_INT32},    {'u', 4, TI_DT_UINT32},  {'f', 4, TI_DT_FLOAT32},
	{'i', 8, TI_DT_INT64},    {'u', 8, TI_DT_UINT64},  {'f', 8, TI_DT_FLOAT64},
	{'c', 8, TI_DT_COMPLEX64}, {'c', 16, TI_DT_COMPLEX128},
};

bool ti_npy_sniff(const void *head, size_t n)
{
	return n >= sizeof(magic) && !memcmp(head, magic, sizeof(magic));
}

const char *ti_npy_descr(ti_dtype dtype)
{
	static const char *const names[] = {
		[TI_DT_BOOL] = "|b1",     [TI_DT_INT8] = "|i1",    [TI_DT_UINT8] = "|u1",
		[TI_DT_INT16] = "<i2",    [TI_DT_UINT16] = "<u2",  [TI_DT_FLOAT16] = "<f2",
		[TI_DT_INT32] = "<i4",    [TI_DT_UINT32] = "<u4",  [TI_DT_FLOAT32] = "<f4",
		[TI_DT_INT64] = "<i8",    [TI_DT_UINT64] = "<u8",  [TI_DT_FLOAT64] = "<f8",
		[TI_DT_COMPLEX64] = "<c8", [TI_DT_COMPLEX128] = "<c16",
	};
	return (unsigned)dtype < sizeof(names) / sizeof(names[0]) ? names[dtype] : NULL;
}

/* ---- the dict literal ---- */

typedef struct parser {
	const char *text;
	size_t pos, len;
	uint64_t base; /* the header's offset in the file, for errors */
	ti_error *err;
} parser;

static ti_status fail(parser *p, ti_status code, const char *what)
{
	TI_FAIL(p->err, code, "bad .npy header: %s at offset %llu", what, (unsigned long long)(p->base + p->pos));
	return code;
}

static void skip_space(parser *p)
{
	while (p->pos < p->len && (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n' ||
	                           p->text[p->pos] == '\r'))
		p->pos++;
}

static bool eat(parser *p, char c)
{
	skip_space(p);
	if (p->pos < p->len && p->text[p->pos] == c) {
		p->pos++;
		return true;
	}
	return false;
}

/* A quoted string without escapes ('...' or "..."), copied into out (size bytes). */
static ti_status string(parser *p, char *out, size_t size)
{
	skip_space(p);
	if (p->pos >= p->len || (p->text[p->pos] != '\'' && p->text[p->pos] != '"'))
		return fail(p, TI_E_CORRUPT, "a string was expected");
	char quote = p->text[p->pos++];
	size_t start = p->pos;
	while (p->pos < p->len && p->text[p->pos] != quote) {
		if (p->text[p->pos] == '\\')
			return fail(p, TI_E_CORRUPT, "an escape sequence in a string");
		if (p->text[p->pos] == '\n' || !p->text[p->pos])
			return fail(p, TI_E_CORRUPT, "an unterminated string");
		p->pos++;
	}
	if (p->pos >= p->len)
		return fail(p, TI_E_CORRUPT, "an unterminated string");
	size_t n = p->pos - start;
	p->pos++;
	if (n >= size) {
		p->pos = start;
		return fail(p, TI_E_CORRUPT, "a string too long for a key or dtype");
	}
	memcpy(out, p->text + start, n);
	out[n] = '\0';
	return TI_OK;
}

/* A non-negative decimal integer below 2^63, with an optional Python 2 'L'. */
static ti_status integer(parser *p, int64_t *out)
{
	skip_space(p);
	size_t start = p->pos;
	if (p->pos < p->len && p->text[p->pos] == '-')
		return fail(p, TI_E_CORRUPT, "a negative dimension");
	uint64_t v = 0;
	while (p->pos < p->len && p->text[p->pos] >= '0' && p->text[p->pos] <= '9') {
		unsigned d = (unsigned)(p->text[p->pos] - '0');
		if (v > ((uint64_t)INT64_MAX - d) / 10) {
			p->pos = start;
			return fail(p, TI_E_LIMIT, "a dimension of 2^63 or more");
		}
		v = v * 10 + d;
		p->pos++;
	}
	if (p->pos == start)
		return fail(p, TI_E_CORRUPT, "a dimension was expected");
	if (p->text[start] == '0' && p->pos - start > 1) { /* Python 3 reads 07 as a syntax error */
		p->pos = start;
		return fail(p, TI_E_CORRUPT, "a dimension with a leading zero");
	}
	if (p->pos < p->len && (p->text[p->pos] == 'L' || p->text[p->pos] == 'l'))
		p->pos++;
	*out = (int64_t)v;
	return TI_OK;
}

/* '(' [int (',' int)* [',']] ')': a Python tuple; one element needs its comma, or it is an int in parentheses. */
static ti_status shape(parser *p, ti_npy_header *h)
{
	if (!eat(p, '('))
		return fail(p, TI_E_CORRUPT, "the shape is not a tuple");
	h->ndim = 0;
	bool comma = false;
	while (!eat(p, ')')) {
		if (h->ndim && !comma)
			return fail(p, TI_E_CORRUPT, "',' or ')' was expected in the shape");
		if (h->ndim == TI_MAX_DIMS)
			return fail(p, TI_E_LIMIT, "a shape of more than 64 dimensions");
		ti_status st = integer(p, &h->shape[h->ndim]);
		if (st)
			return st;
		h->ndim++;
		comma = eat(p, ',');
	}
	if (h->ndim == 1 && !comma) {
		p->pos--;
		return fail(p, TI_E_CORRUPT, "the shape is an integer in parentheses, not a tuple (a 1-tuple needs its comma)");
	}
	return TI_OK;
}

static ti_status boolean(parser *p, bool *out)
{
	skip_space(p);
	const char *s = p->text + p->pos;
	size_t left = p->len - p->pos;
	if (left >= 4 && !memcmp(s, "True", 4))
		*out = true, p->pos += 4;
	else if (left >= 5 && !memcmp(s, "False", 5))
		*out = false, p->pos += 5;
	else
		return fail(p, TI_E_CORRUPT, "fortran_order is not True or False");
	return TI_OK;
}

/* The descr string: byte order, kind, item size. */
static ti_status descr(parser *p, ti_npy_header *h)
{
	skip_space(p);
	size_t at = p->pos;
	if (p->pos < p->len && (p->text[p->pos] == '[' || p->text[p->pos] == '(')) {
		h->structured = true;
		TI_FAIL(p->err, TI_E_UNSUPPORTED,
		        "a structured dtype (fields or a subarray) at offset %llu: only arrays of numbers are read",
		        (unsigned long long)(p->base + at));
		return TI_E_UNSUPPORTED;
	}
	ti_status st = string(p, h->descr, sizeof(h->descr));
	if (st)
		return st;
	const char *d = h->descr;
	char order = d[0];
	if (order != '<' && order != '>' && order != '|' && order != '=') {
		p->pos = at;
		return fail(p, TI_E_CORRUPT, "the dtype has no byte order ('<', '>', '|' or '=')");
	}
	char kind = d[1];
	if (kind == 'O' && (!d[2] || !strcmp(d + 2, "8"))) {
		h->object = true;
		return TI_OK;
	}
	int size = 0;
	const char *q = d + 2;
	while (*q >= '0' && *q <= '9' && size < 1000)
		size = size * 10 + (*q++ - '0');
	if (*q || q == d + 2)
		size = -1;
	const char *why = NULL;
	switch (kind) {
	case 'V':
		why = "raw bytes (void): NumPy writes ml_dtypes' bfloat16 and float8 so too, and nothing in the file says which";
		break;
	case 'S': case 'U': case 'a':
		why = "strings have no tensor dtype";
		break;
	case 'M': case 'm':
		why = "datetimes have no tensor dtype";
		break;
	case 'O':
		why = "an object dtype of an odd size";
		break;
	default:
		for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
			if (dtypes[i].kind == kind && dtypes[i].size == size) {
				h->dtype = dtypes[i].dtype;
				h->big_endian = order == '>' && size > 1;
				return TI_OK;
			}
		if ((kind == 'f' && (size == 10 || size == 12 || size == 16)) ||
		    (kind == 'c' && (size == 20 || size == 24 || size == 32))) /* x87 and quad: 80 bits, padded */
			why = "extended precision (long double) has no tensor dtype";
	}
	if (why) {
		TI_FAIL(p->err, TI_E_UNSUPPORTED, "dtype '%s' at offset %llu is not read: %s", d,
		        (unsigned long long)(p->base + at), why);
		return TI_E_UNSUPPORTED;
	}
	p->pos = at;
	return fail(p, TI_E_CORRUPT, "an unknown dtype");
}

static ti_status dict(parser *p, ti_npy_header *h)
{
	if (!eat(p, '{'))
		return fail(p, TI_E_CORRUPT, "the header is not a dict ('{' expected)");
	bool seen[3] = {false, false, false};
	bool comma = true;
	while (!eat(p, '}')) {
		if (!comma)
			return fail(p, TI_E_CORRUPT, "',' or '}' was expected");
		char key[16];
		size_t at = (skip_space(p), p->pos);
		ti_status st = string(p, key, sizeof(key));
		if (st)
			return st;
		int k = !strcmp(key, "descr") ? 0 : !strcmp(key, "fortran_order") ? 1 : !strcmp(key, "shape") ? 2 : -1;
		if (k < 0 || seen[k]) {
			p->pos = at;
			return fail(p, TI_E_CORRUPT, k < 0 ? "a key other than 'descr', 'fortran_order' and 'shape'"
			                                   : "a key given twice");
		}
		seen[k] = true;
		if (!eat(p, ':'))
			return fail(p, TI_E_CORRUPT, "':' was expected");
		st = k == 0 ? descr(p, h) : k == 1 ? boolean(p, &h->fortran_order) : shape(p, h);
		if (st)
			return st;
		comma = eat(p, ',');
	}
	for (int k = 0; k < 3; k++)
		if (!seen[k])
			return fail(p, TI_E_CORRUPT, k == 0 ? "no 'descr'" : k == 1 ? "no 'fortran_order'" : "no 'shape'");
	skip_space(p);
	if (p->pos < p->len)
		return fail(p, TI_E_CORRUPT, "bytes after the dict");
	return TI_OK;
}

ti_status ti_npy_parse(const void *data, size_t n, uint64_t size, ti_npy_header *h, ti_error *err)
{
	const uint8_t *b = data;
	memset(h, 0, sizeof(*h));
	if (n > size)
		n = (size_t)size;
	if (!ti_npy_sniff(b, n))
		return TI_FAIL(err, TI_E_CORRUPT, "not a .npy array (no \\x93NUMPY magic)");
	if (n < 10)
		return TI_FAIL(err, TI_E_CORRUPT, "a .npy array of %zu bytes ends in its version and header length", n);
	h->major = b[6];
	h->minor = b[7];
	if ((h->major < 1 || h->major > 3) || h->minor != 0)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "a .npy array of format version %d.%d at offset 6: 1.0, 2.0 and 3.0 are read",
		               h->major, h->minor);
	uint64_t hlen = b[8] | (uint64_t)b[9] << 8, prefix = 10;
	if (h->major > 1) {
		if (n < 12)
			return TI_FAIL(err, TI_E_CORRUPT, "a .npy array of %zu bytes ends in its header length", n);
		hlen |= (uint64_t)b[10] << 16 | (uint64_t)b[11] << 24;
		prefix = 12;
	}
	if (hlen > TI_NPY_HEADER_MAX)
		return TI_FAIL(err, TI_E_LIMIT, "a .npy header of %llu bytes at offset 8, more than NumPy's %u",
		               (unsigned long long)hlen, TI_NPY_HEADER_MAX);
	if (prefix + hlen > n)
		return TI_FAIL(err, TI_E_CORRUPT, "the .npy header of %llu bytes runs past the end (offset %llu)",
		               (unsigned long long)hlen, (unsigned long long)n);
	const char *text = (const char *)b + prefix;
	if (memchr(text, '\0', (size_t)hlen))
		return TI_FAIL(err, TI_E_CORRUPT, "bad .npy header: a NUL byte at offset %llu",
		               (unsigned long long)(prefix + (uint64_t)((const char *)memchr(text, '\0', (size_t)hlen) - text)));
	parser p = {text, 0, (size_t)hlen, prefix, err};
	ti_status st = dict(&p, h);
	if (st)
		return st;
	h->data_offset = prefix + hlen;
	/* numel and bytes below 2^63, so that every later offset fits an int64_t */
	uint64_t numel = 1;
	for (int i = 0; i < h->ndim; i++) {
		uint64_t d = (uint64_t)h->shape[i];
		if (d && numel > (uint64_t)INT64_MAX / d)
			return TI_FAIL(err, TI_E_LIMIT, "a .npy shape whose element count passes 2^63 (dimension %d)", i);
		numel *= d;
	}
	h->numel = (int64_t)numel;
	if (h->object)
		return h->data_offset < size ? TI_OK
		                             : TI_FAIL(err, TI_E_CORRUPT, "an object array with no pickle after its header "
		                                                          "(offset %llu)", (unsigned long long)h->data_offset);
	size_t esize = ti_dtype_size(h->dtype);
	if (numel > (uint64_t)INT64_MAX / esize)
		return TI_FAIL(err, TI_E_LIMIT, "a .npy array of %llu elements of %zu bytes passes 2^63 bytes",
		               (unsigned long long)numel, esize);
	h->nbytes = numel * esize;
	if (h->data_offset > size || h->nbytes > size - h->data_offset)
		return TI_FAIL(err, TI_E_CORRUPT, "the .npy array's %llu bytes of data at offset %llu run past its end (%llu bytes)",
		               (unsigned long long)h->nbytes, (unsigned long long)h->data_offset, (unsigned long long)size);
	return TI_OK;
}

/* ---- writing ---- */

ti_status ti_npy_header_format(ti_dtype dtype, int ndim, const int64_t *shape, char *buf, size_t size, size_t *len,
                               ti_error *err)
{
	const char *d = ti_npy_descr(dtype);
	if (!d)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "NumPy has no dtype %s", ti_dtype_name(dtype));
	if (ndim < 0 || ndim > TI_MAX_DIMS)
		return TI_FAIL(err, TI_E_INVALID, "a shape of %d dimensions", ndim);
	/* the dict as np.save's repr() spells it, keys sorted */
	char dict[TI_NPY_HEADER_MAX];
	size_t n = (size_t)snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (", d);
	for (int i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return TI_FAIL(err, TI_E_INVALID, "a negative dimension");
		n += (size_t)snprintf(dict + n, sizeof(dict) - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
	}
	n += (size_t)snprintf(dict + n, sizeof(dict) - n, "%s), }", ndim == 1 ? "," : "");
	if (ndim > 0) { /* spare room for the first axis to grow in place */
		char first[24];
		int digits = snprintf(first, sizeof(first), "%lld", (long long)shape[0]);
		for (int i = digits; i < GROWTH_AXIS_MAX_DIGITS; i++)
			dict[n++] = ' ';
	}
	/* version 1.0 when the length fits a u16, else 2.0; spaces and '\n' to the next multiple of 64 (at least 1 space) */
	int major = n + 1 + 64 + 10 > 65535 ? 2 : 1;
	size_t prefix = major == 1 ? 10 : 12;
	size_t pad = ARRAY_ALIGN - (prefix + n + 1) % ARRAY_ALIGN;
	size_t hlen = n + pad + 1;
	if (prefix + hlen > size)
		return TI_FAIL(err, TI_E_INVALID, "no room for a .npy header of %zu bytes", prefix + hlen);
	memcpy(buf, magic, sizeof(magic));
	buf[6] = (char)major;
	buf[7] = 0;
	for (size_t i = 0; i < prefix - 8; i++)
		buf[8 + i] = (char)(hlen >> (8 * i));
	memcpy(buf + prefix, dict, n);
	memset(buf + prefix + n, ' ', pad);
	buf[prefix + hlen - 1] = '\n';
	*len = prefix + hlen;
	return TI_OK;
}
