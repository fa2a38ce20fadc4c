/*
 * http_parse.c - the server's bytes and a .netrc, read by pure functions
 * (see http_parse.h).
 */
#include "io/http_parse.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void http_answer_start(http_answer *a, unsigned char *dst, uint64_t want, uint64_t body_max)
{
	memset(a, 0, sizeof(*a));
	a->dst = dst;
	a->want = want;
	a->body_max = body_max;
}

bool http_status_line(const char *line, size_t n, long *status)
{
	if (n < 5 || memcmp(line, "HTTP/", 5))
		return false;
	size_t i = 5;
	for (; i < n && line[i] != ' '; i++)
		if (!isdigit((unsigned char)line[i]) && line[i] != '.')
			return false;
	if (i == 5 || n - i < 4)
		return false;
	const char *code = line + i + 1;
	for (int k = 0; k < 3; k++)
		if (!isdigit((unsigned char)code[k]))
			return false;
	if (n - i > 4 && code[3] != ' ' && code[3] != '\r' && code[3] != '\n')
		return false;
	*status = (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
	return *status >= 100;
}

/* Digits alone into *out, no overflow; *end after them. */
static bool parse_u64(const char *v, const char **end, uint64_t *out)
{
	uint64_t n = 0;
	const char *p = v;
	for (; isdigit((unsigned char)*p); p++) {
		if (n > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return false;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	*end = p;
	*out = n;
	return p != v;
}

bool http_content_length(const char *v, uint64_t *out)
{
	const char *end;
	return parse_u64(v, &end, out) && !*end;
}

bool http_content_range(const char *v, uint64_t *first, uint64_t *last, uint64_t *total)
{
	if (strncmp(v, "bytes ", 6))
		return false;
	const char *p = v + 6;
	if (!parse_u64(p, &p, first) || *p++ != '-' || !parse_u64(p, &p, last) || *p++ != '/' ||
	    !parse_u64(p, &p, total) || *p)
		return false;
	return *first <= *last && *last < *total;
}

bool http_validator_usable(const char *v)
{
	if (!*v)
		return false;
	for (; *v; v++)
		if ((unsigned char)*v < ' ' || (unsigned char)*v >= 0x7f)
			return false;
	return true;
}

/* The value of a header line after its name: blanks around it and the CR LF taken off, cut to size. */
static void copy_value(char *out, size_t size, const char *v, size_t n)
{
	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (n >= size)
		n = size - 1;
	memcpy(out, v, n);
	out[n] = '\0';
	/* a NUL inside the value ends it here: what follows it was never a header's */
}

void http_answer_header(http_answer *a, const char *line, size_t n)
{
	if (n >= 5 && !memcmp(line, "HTTP/", 5)) { /* a new answer: what the last said is void */
		if (!http_status_line(line, n, &a->status))
			a->status = 0;
		a->etag[0] = a->modified[0] = a->range[0] = a->hub_error[0] = '\0';
		a->has_length = false;
		return;
	}
	static const struct {
		const char *name;
		size_t off, size;
	} fields[] = {
		{"etag:", offsetof(http_answer, etag), HTTP_VALIDATOR_MAX},
		{"last-modified:", offsetof(http_answer, modified), HTTP_VALIDATOR_MAX},
		{"content-range:", offsetof(http_answer, range), HTTP_FIELD_MAX},
		{"x-error-code:", offsetof(http_answer, hub_error), HTTP_FIELD_MAX},
	};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		size_t k = strlen(fields[i].name);
		if (n >= k && !strncasecmp(line, fields[i].name, k))
			copy_value((char *)a + fields[i].off, fields[i].size, line + k, n - k);
	}
	if (n >= 15 && !strncasecmp(line, "content-length:", 15)) {
		char v[32];
		copy_value(v, sizeof(v), line + 15, n - 15);
		a->has_length = http_content_length(v, &a->length);
	}
}

size_t http_answer_body(http_answer *a, const char *data, size_t n)
{
	if (!n) /* nothing to copy, and nowhere yet to copy it to (memcpy's pointers must not be NULL) */
		return 0;
	if (a->status == 206) {
		if (n > a->want - a->got) {
			a->overflow = true;
			return 0;
		}
		memcpy(a->dst + a->got, data, n);
		a->got += n;
	} else if (a->status == 200) {
		if ((a->has_length && a->length > a->body_max) || n > a->body_max - a->body_len) {
			a->too_long = true;
			return 0;
		}
		if (a->body_len + n > a->body_cap) {
			uint64_t cap = a->body_cap ? a->body_cap : 1 << 20;
			while (cap < a->body_len + n)
				cap *= 2;
			unsigned char *b = realloc(a->body, cap);
			if (!b)
				return 0;
			a->body = b;
			a->body_cap = cap;
		}
		memcpy(a->body + a->body_len, data, n);
		a->body_len += n;
	}
	return n; /* any other answer's body is read and dropped */
}

/* ---- URLs ---- */

size_t http_origin_length(const char *url)
{
	const char *sep = strstr(url, "://");
	if (!sep)
		return 0;
	const char *host = sep + 3;
	size_t n = strcspn(host, "/?#");
	return n ? (size_t)(host - url) + n : 0;
}

bool http_same_origin(const char *a, const char *b)
{
	size_t n = http_origin_length(a), m = http_origin_length(b);
	if (!n || n != m)
		return false;
	for (size_t i = 0; i < n; i++)
		if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
			return false;
	return true;
}

const char *http_url_refusal(const char *url)
{
	if (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8))
		return "not an http:// or https:// URL";
	size_t n = http_origin_length(url);
	if (!n)
		return "the URL names no host";
	const char *host = strstr(url, "://") + 3;
	if (memchr(host, '@', (size_t)(url + n - host)))
		return "credentials in a URL are refused: give HF_TOKEN or --token-file";
	for (const char *c = url; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return "the URL holds a space or a control character";
	return NULL;
}

bool http_url_host(const char *url, char *out, size_t size)
{
	size_t n = http_origin_length(url);
	if (!n)
		return false;
	const char *host = strstr(url, "://") + 3;
	size_t len = (size_t)(url + n - host);
	const char *at = NULL;
	for (const char *c = host; c < host + len; c++)
		if (*c == '@')
			at = c;
	if (at) { /* user:password@host: the host after it */
		len -= (size_t)(at + 1 - host);
		host = at + 1;
	}
	if (len && *host == '[') {
		const char *close = memchr(host, ']', len);
		if (!close)
			return false;
		host++;
		len = (size_t)(close - host);
	} else {
		const char *colon = memchr(host, ':', len);
		if (colon)
			len = (size_t)(colon - host);
	}
	if (!len || len >= size)
		return false;
	memcpy(out, host, len);
	out[len] = '\0';
	return true;
}

/* ---- .netrc ---- */

typedef struct netrc_reader {
	const char *p, *end;
	char token[HTTP_CREDENTIAL_MAX];
	bool cut; /* the last token did not fit */
} netrc_reader;

/* The next blank-separated token (a "quoted" one unquoted); false at the end. */
static bool netrc_next(netrc_reader *r)
{
	while (r->p < r->end && isspace((unsigned char)*r->p))
		r->p++;
	if (r->p >= r->end)
		return false;
	size_t n = 0;
	r->cut = false;
	bool quoted = *r->p == '"';
	if (quoted)
		r->p++;
	while (r->p < r->end) {
		char c = *r->p;
		if (quoted ? c == '"' : isspace((unsigned char)c) != 0)
			break;
		if (quoted && c == '\\' && r->p + 1 < r->end)
			c = *++r->p;
		r->p++;
		if (n + 1 < sizeof(r->token))
			r->token[n++] = c;
		else
			r->cut = true;
	}
	if (quoted && r->p < r->end)
		r->p++; /* the closing quote */
	r->token[n] = '\0';
	return true;
}

/* After "macdef NAME": the macro's lines, to the first empty line. */
static void netrc_skip_macro(netrc_reader *r)
{
	const char *blank = NULL;
	for (const char *q = r->p; q + 1 < r->end && !blank; q++)
		if (q[0] == '\n' && q[1] == '\n')
			blank = q + 2;
	r->p = blank ? blank : r->end;
}

static bool copy_credential(char *out, size_t size, const netrc_reader *r)
{
	size_t n = strlen(r->token);
	if (r->cut || n >= size)
		return false;
	memcpy(out, r->token, n + 1);
	return true;
}

bool http_netrc_find(const char *text, size_t n, const char *host, char *login, size_t login_size, char *password,
                     size_t password_size)
{
	netrc_reader r = {.p = text, .end = text + n};
	bool in_host = false, have_login = false, have_password = false;
	while (netrc_next(&r)) {
		bool starts_entry = !strcmp(r.token, "machine") || !strcmp(r.token, "default");
		if (starts_entry && in_host)
			break; /* the host's entry ended */
		if (!strcmp(r.token, "machine")) {
			in_host = netrc_next(&r) && !r.cut && !strcasecmp(r.token, host);
		} else if (!strcmp(r.token, "default")) {
			in_host = false;
		} else if (!strcmp(r.token, "macdef")) {
			if (netrc_next(&r))
				netrc_skip_macro(&r);
		} else if (!strcmp(r.token, "login") || !strcmp(r.token, "password") || !strcmp(r.token, "account")) {
			bool is_login = r.token[0] == 'l', is_password = r.token[0] == 'p';
			if (!netrc_next(&r) || !in_host)
				continue;
			if (is_login)
				have_login = copy_credential(login, login_size, &r);
			else if (is_password)
				have_password = copy_credential(password, password_size, &r);
		}
	}
	memset(r.token, 0, sizeof(r.token));
	if (!have_login || !have_password) {
		if (login_size)
			login[0] = '\0';
		if (password_size)
			password[0] = '\0';
		return false;
	}
	return true;
}
