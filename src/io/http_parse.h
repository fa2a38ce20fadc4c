/*
 * http_parse.h - what http.c reads from a server and from the user's
 * files, as pure functions of bytes: a status line, header lines,
 * Content-Range, the pieces of a body, a .netrc. libcurl's callbacks only
 * call them, so the unit tests feed them anything (tests/unit/
 * test_http_parse.c: seeded random and mutated input, under ASan too).
 *
 * Nothing here allocates except http_answer_body, whose buffer (a 200's
 * whole body) the caller frees.
 */
#ifndef TINSPECT_IO_HTTP_PARSE_H
#define TINSPECT_IO_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { HTTP_VALIDATOR_MAX = 256, HTTP_FIELD_MAX = 128, HTTP_NETRC_MAX = 64 << 10, HTTP_CREDENTIAL_MAX = 256 };

/* One answer, as the callbacks see it. */
typedef struct http_answer {
	long status;             /* 0 until a status line, or when it is not one */
	unsigned char *dst;      /* 206: the bytes go here */
	uint64_t want;           /* ... at most this many */
	uint64_t got;
	bool overflow;           /* a 206 longer than asked for */
	unsigned char *body;     /* 200: the whole body, grown (the caller frees it) */
	uint64_t body_len, body_cap, body_max;
	bool too_long;
	char etag[HTTP_VALIDATOR_MAX], modified[HTTP_VALIDATOR_MAX];
	char range[HTTP_FIELD_MAX];     /* Content-Range */
	uint64_t length;                /* Content-Length, when has_length */
	bool has_length;
	char hub_error[HTTP_FIELD_MAX]; /* the Hub's X-Error-Code */
} http_answer;

/* An empty answer whose 206 body goes to dst (at most want bytes) and whose 200 body may grow to body_max. */
void http_answer_start(http_answer *a, unsigned char *dst, uint64_t want, uint64_t body_max);
/*
 * One header line as libcurl hands it over: n bytes, not NUL-terminated,
 * its CR LF included. A status line ("HTTP/1.1 206 ...") starts a new
 * answer (a redirect's, a 100 Continue's fields are forgotten); a field it
 * does not know is skipped; a value longer than its buffer is cut.
 */
void http_answer_header(http_answer *a, const char *line, size_t n);
/*
 * A piece of the body: n when taken (or dropped: the body of an answer
 * that is neither 200 nor 206), 0 to stop the transfer: a 206 longer than
 * asked for (overflow), a 200 longer than body_max (too_long), no memory.
 */
size_t http_answer_body(http_answer *a, const char *data, size_t n);

/* The status of "HTTP/VERSION NNN[ reason]": a three-digit code; false for anything else. */
bool http_status_line(const char *line, size_t n, long *status);
/* A Content-Length value: decimal digits alone, no overflow. */
bool http_content_length(const char *v, uint64_t *out);
/* A Content-Range value "bytes FIRST-LAST/TOTAL", FIRST <= LAST < TOTAL; nothing else passes. */
bool http_content_range(const char *v, uint64_t *first, uint64_t *last, uint64_t *total);
/*
 * Whether a validator (an ETag, a Last-Modified) may be sent back in an
 * If-None-Match or If-Modified-Since header and kept in the cache: not
 * empty, printable ASCII and spaces only (a CR LF would add a header).
 */
bool http_validator_usable(const char *v);

/* ---- URLs: the one given, a redirect's Location as libcurl resolves it ---- */

/* The length of url's scheme://authority, 0 when it has none. */
size_t http_origin_length(const char *url);
/* Whether two URLs have one origin: scheme, host and port alike, the host in any case. */
bool http_same_origin(const char *a, const char *b);
/* Why tinspect refuses to ask for url (not http(s), no host, credentials, a space or a control byte); NULL when it does not. */
const char *http_url_refusal(const char *url);
/* url's host into out (size bytes), without its port or an IPv6 address's brackets; false when it has none or it does not fit. */
bool http_url_host(const char *url, char *out, size_t size);

/*
 * The login and password a .netrc's text gives for host (its "machine"
 * entry, the name compared without case). "default" entries are ignored:
 * credentials go to the host they name, never to any host. Tokens are
 * separated by blanks and may be "quoted" (\" and \\ inside); "macdef"
 * skips to the next empty line. False when the host has no entry or its
 * login or password does not fit.
 */
bool http_netrc_find(const char *text, size_t n, const char *host, char *login, size_t login_size, char *password,
                     size_t password_size);

#endif
