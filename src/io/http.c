/*
 * http.c - a URL's bytes, by HTTP range requests (see tinspect/io.h).
 *
 * libcurl does the transfers. Like libzip (format/zip_lazy.c) it is not
 * linked: it is opened (dlopen) when a command first reads a URL, so a
 * command that reads local files never maps it and what it links.
 *
 * Reads go through a cache of BLOCK-byte blocks: a miss asks for one range
 * that covers every missing block of the read; a miss that starts where the
 * last one ended asks for twice as many blocks as that one did (a reader
 * walking a GGUF header or a pickle sequentially costs a few growing
 * requests, not one per block). A read larger than BYPASS goes straight
 * into the caller's buffer. The first request asks for FIRST bytes, as
 * huggingface_hub's get_safetensors_metadata asks for its first 100,000:
 * enough for most safetensors headers and a file's magic. A reader that
 * knows what it will read in pieces says so (ti_io_hint: a zip's directory,
 * its data.pkl), and a miss in that range asks for all of it (up to HINT_MAX
 * blocks).
 *
 * Redirects are followed here, not by libcurl (at most REDIRECTS), so that
 * the Authorization header is set per request, only for the Hub's origin.
 * The target of the first answer's redirects is kept for later requests (a
 * CDN's signed URL) and never shown.
 *
 * A server that ignores Range answers 200 with the whole body: a body of at
 * most WHOLE_MAX bytes is kept in memory and read from there; a longer one
 * is refused when its length is known, and cut at WHOLE_MAX when not.
 *
 * Server errors (5xx) and failed connections are tried again, at most
 * TRIES times in all, 250 ms, 500 ms, 1 s apart.
 */
#include "io/io_internal.h"

#include <ctype.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

/* the calls go through our pointers, which libcurl's type-checking macros would rename */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

enum {
	BLOCK = 64 << 10,
	CACHE_BLOCKS = 64,     /* 4 MiB at most */
	RUN_MAX = 32,          /* a sequential miss asks for at most 2 MiB */
	HINT_MAX = 48,         /* a miss in a hinted range (ti_io_hint) for at most 3 MiB */
	BYPASS = 1 << 20,
	FIRST = 2 * BLOCK,     /* 131,072 bytes */
	REDIRECTS = 10,
	TRIES = 4,
	URL_MAX = 8192,
	VALIDATOR_MAX = 256,
};
#define WHOLE_MAX_DEFAULT ((uint64_t)64 << 20)
#define TIMEOUT_DEFAULT 30L

/* ---- libcurl, opened on first use ---- */

#define CURL_FUNCTIONS(X)                                                        \
	X(CURLcode, curl_global_init, (long flags))                             \
	X(CURL *, curl_easy_init, (void))                                        \
	X(CURLcode, curl_easy_setopt, (CURL * c, CURLoption o, ...))            \
	X(CURLcode, curl_easy_perform, (CURL * c))                               \
	X(CURLcode, curl_easy_getinfo, (CURL * c, CURLINFO i, ...))             \
	X(void, curl_easy_cleanup, (CURL * c))                                   \
	X(void, curl_easy_reset, (CURL * c))                                     \
	X(const char *, curl_easy_strerror, (CURLcode code))                     \
	X(struct curl_slist *, curl_slist_append, (struct curl_slist * l, const char *s)) \
	X(void, curl_slist_free_all, (struct curl_slist * l))

#define CURL_POINTER(ret, name, params) ret(*name) params;
static struct {
	pthread_once_t once;
	struct {
		CURL_FUNCTIONS(CURL_POINTER)
	} fn;
	char why[200];
} lib = {.once = PTHREAD_ONCE_INIT};

#define CURL_LOOKUP(ret, name, params)                                         \
	if (ok && !(*(void **)&lib.fn.name = dlsym(handle, #name))) {          \
		snprintf(lib.why, sizeof(lib.why), "libcurl has no %s", #name); \
		ok = 0;                                                        \
	}

static void curl_load(void)
{
	static const char *const names[] = {"libcurl.so.4", "libcurl.so"};
	void *handle = NULL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !handle; i++)
		handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		const char *e = dlerror();
		snprintf(lib.why, sizeof(lib.why), "cannot load libcurl (libcurl.so.4: %s): install libcurl4 to read URLs",
		         e ? e : "not found");
		return;
	}
	int ok = 1;
	CURL_FUNCTIONS(CURL_LOOKUP)
	if (ok && lib.fn.curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(lib.why, sizeof(lib.why), "libcurl did not start (curl_global_init)");
		ok = 0;
	}
	if (!ok)
		memset(&lib.fn, 0, sizeof(lib.fn));
}

/* ---- settings and counts, process-wide ---- */

static char *token_set, *cacert_set;
static bool token_given, cacert_given;
static atomic_uint_fast64_t count_requests, count_bytes;
static _Thread_local uint64_t thread_requests, thread_bytes;

void ti_io_set_token(const char *token)
{
	free(token_set);
	token_set = token ? strdup(token) : NULL;
	token_given = token != NULL;
}

void ti_io_set_cacert(const char *file)
{
	free(cacert_set);
	cacert_set = file ? strdup(file) : NULL;
	cacert_given = file != NULL;
}

static const char *token(void)
{
	const char *t = token_given ? token_set : getenv("HF_TOKEN");
	return t && *t ? t : NULL;
}

static const char *cacert(void)
{
	const char *c = cacert_given ? cacert_set : getenv("TINSPECT_CACERT");
	return c && *c ? c : NULL;
}

ti_io_counts ti_io_remote_counts(void)
{
	return (ti_io_counts){atomic_load(&count_requests), atomic_load(&count_bytes)};
}

ti_io_counts ti_io_thread_counts(void)
{
	return (ti_io_counts){thread_requests, thread_bytes};
}

static uint64_t env_number(const char *name, uint64_t fallback)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n = v && *v ? strtoull(v, &end, 10) : 0;
	return v && *v && !*end ? (uint64_t)n : fallback;
}

/* ---- URLs ---- */

static const char *endpoint(void)
{
	const char *e = getenv("HF_ENDPOINT");
	return e && *e ? e : "https://huggingface.co";
}

/* The length of url's scheme://authority, or 0 when it has no authority. */
static size_t origin_length(const char *url)
{
	const char *sep = strstr(url, "://");
	if (!sep)
		return 0;
	const char *host = sep + 3;
	size_t n = strcspn(host, "/?#");
	return n ? (size_t)(host - url) + n : 0;
}

/* Whether two URLs have one origin: scheme, host and port alike, the host in any case. */
static bool same_origin(const char *a, const char *b)
{
	size_t n = origin_length(a), m = origin_length(b);
	if (!n || n != m)
		return false;
	for (size_t i = 0; i < n; i++)
		if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
			return false;
	return true;
}

/* Checks a http(s) URL tinspect will ask for: a host, no credentials, no spaces or control bytes. */
static ti_status check_url(const char *url, ti_error *err)
{
	size_t n = origin_length(url);
	const char *host = strstr(url, "://") + 3;
	if (!n || host == url + n)
		return TI_FAIL(err, TI_E_INVALID, "the URL names no host");
	if (memchr(host, '@', (size_t)(url + n - host)))
		return TI_FAIL(err, TI_E_INVALID, "credentials in a URL are refused: give HF_TOKEN or --token-file");
	for (const char *c = url; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return TI_FAIL(err, TI_E_INVALID, "the URL holds a space or a control character");
	return TI_OK;
}

/*
 * The http(s) URL a name stands for, into out: an hf:// name becomes
 * ENDPOINT/ORG/REPO/resolve/REVISION/PATH.
 */
static ti_status resolve_name(const char *name, char *out, size_t size, ti_error *err)
{
	if (strncmp(name, "hf://", 5)) {
		if (strlen(name) >= size)
			return TI_FAIL(err, TI_E_INVALID, "the URL is longer than %zu bytes", size - 1);
		strcpy(out, name);
		return check_url(out, err);
	}
	const char *org = name + 5, *slash = strchr(org, '/');
	if (!slash || slash == org)
		return TI_FAIL(err, TI_E_INVALID, "an hf:// URL is hf://ORG/REPO[@REVISION]/PATH");
	const char *repo = slash + 1;
	size_t repo_len = strcspn(repo, "@/");
	const char *rev = "main", *path = repo + repo_len;
	size_t rev_len = 4;
	if (*path == '@') {
		rev = path + 1;
		rev_len = strcspn(rev, "/");
		path = rev + rev_len;
	}
	if (!repo_len || !rev_len)
		return TI_FAIL(err, TI_E_INVALID, "an hf:// URL is hf://ORG/REPO[@REVISION]/PATH");
	if (*path != '/' || !path[1])
		return TI_FAIL(err, TI_E_INVALID, "an hf:// URL names a file in the repository: hf://ORG/REPO[@REVISION]/PATH");
	const char *e = endpoint();
	size_t e_len = strlen(e);
	while (e_len && e[e_len - 1] == '/')
		e_len--;
	int w = snprintf(out, size, "%.*s/%.*s/%.*s/resolve/%.*s%s", (int)e_len, e, (int)(slash - org), org,
	                 (int)repo_len, repo, (int)rev_len, rev, path);
	if (w < 0 || (size_t)w >= size)
		return TI_FAIL(err, TI_E_INVALID, "the URL is longer than %zu bytes", size - 1);
	if (strncmp(out, "http://", 7) && strncmp(out, "https://", 8))
		return TI_FAIL(err, TI_E_INVALID, "HF_ENDPOINT is no http:// or https:// URL");
	return check_url(out, err);
}

ti_status io_remote_check_name(const char *name, ti_error *err)
{
	char url[URL_MAX];
	if (strncmp(name, "hf://", 5))
		return resolve_name(name, url, sizeof(url), err);
	/* hf://ORG/REPO[@REVISION] alone is the repository: checked as its config.json would be */
	const char *org = name + 5, *slash = strchr(org, '/');
	const char *rest = slash ? strchr(slash + 1, '/') : NULL;
	if (slash && (!rest || !rest[1])) {
		size_t len = strlen(name);
		while (len && name[len - 1] == '/')
			len--;
		if (len + 13 >= sizeof(url))
			return TI_FAIL(err, TI_E_INVALID, "the URL is longer than %zu bytes", sizeof(url) - 14);
		char file[URL_MAX];
		snprintf(file, sizeof(file), "%.*s/config.json", (int)len, name);
		return resolve_name(file, url, sizeof(url), err);
	}
	return resolve_name(name, url, sizeof(url), err);
}

/* ---- the remote handle ---- */

typedef struct block {
	uint64_t index;
	uint64_t used; /* when last read: the least recent goes first */
	unsigned char *data;
	size_t len;    /* less than BLOCK only for the file's last block */
	bool valid;
} block;

struct ti_io_remote {
	pthread_mutex_t lock;
	CURL *curl;
	char url[URL_MAX];       /* what the name stands for */
	char target[URL_MAX];    /* where the first answer's redirects led: asked from now on */
	char validator[VALIDATOR_MAX]; /* the first answer's ETag, else its Last-Modified; "" when none */
	bool size_known;
	unsigned char *whole;    /* the body of a server that ignores Range */
	block blocks[CACHE_BLOCKS];
	uint64_t tick;
	uint64_t next_block;     /* the block after the last miss's */
	uint64_t hint_from, hint_to; /* bytes to be read soon (ti_io_hint): a miss in them asks for the rest */
	size_t run;              /* blocks the last miss asked for */
};

/* One answer, as the callbacks see it. */
typedef struct answer {
	long status;
	unsigned char *dst;      /* 206: the bytes go here */
	uint64_t want;           /* ... at most this many */
	uint64_t got;
	bool overflow;           /* a 206 longer than asked for */
	unsigned char *body;     /* 200: the whole body, grown */
	uint64_t body_len, body_cap, body_max;
	bool too_long;
	char etag[VALIDATOR_MAX], modified[VALIDATOR_MAX];
	char range[128];         /* Content-Range */
	uint64_t length;         /* Content-Length, 0 when none */
	bool has_length;
	char hub_error[128];     /* the Hub's X-Error-Code */
} answer;

static void copy_value(char *out, size_t size, const char *v, size_t n)
{
	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	if (n >= size)
		n = size - 1;
	memcpy(out, v, n);
	out[n] = '\0';
}

static size_t on_header(char *line, size_t size, size_t count, void *ctx)
{
	answer *a = ctx;
	size_t n = size * count;
	if (n > 5 && !strncmp(line, "HTTP/", 5)) { /* a new answer: what the last said is void */
		const char *sp = memchr(line, ' ', n);
		a->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		a->etag[0] = a->modified[0] = a->range[0] = a->hub_error[0] = '\0';
		a->has_length = false;
		return n;
	}
	static const struct {
		const char *name;
		size_t off, size;
	} fields[] = {
		{"etag:", offsetof(answer, etag), VALIDATOR_MAX},
		{"last-modified:", offsetof(answer, modified), VALIDATOR_MAX},
		{"content-range:", offsetof(answer, range), 128},
		{"x-error-code:", offsetof(answer, hub_error), 128},
	};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		size_t k = strlen(fields[i].name);
		if (n >= k && !strncasecmp(line, fields[i].name, k))
			copy_value((char *)a + fields[i].off, fields[i].size, line + k, n - k);
	}
	if (n >= 15 && !strncasecmp(line, "content-length:", 15)) {
		char v[32];
		copy_value(v, sizeof(v), line + 15, n - 15);
		a->length = strtoull(v, NULL, 10);
		a->has_length = true;
	}
	return n;
}

static size_t on_body(char *data, size_t size, size_t count, void *ctx)
{
	answer *a = ctx;
	size_t n = size * count;
	atomic_fetch_add(&count_bytes, n);
	thread_bytes += n;
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

/* What a status says, in words. */
static const char *status_words(long status)
{
	static const struct {
		long status;
		const char *words;
	} table[] = {
		{400, "bad request"}, {401, "unauthorized: give HF_TOKEN or --token-file"},
		{403, "forbidden: a gated or private file needs HF_TOKEN or --token-file with access to it"},
		{404, "not found"}, {410, "gone"}, {416, "the server refused the range asked for"},
		{429, "too many requests"}, {500, "internal server error"}, {502, "bad gateway"},
		{503, "service unavailable"}, {504, "gateway timeout"},
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].status == status)
			return table[i].words;
	return status >= 500 ? "server error" : "unexpected answer";
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR) {
	}
}

/* A libcurl failure worth another try: the connection, not the request. */
static bool transient(CURLcode c)
{
	return c == CURLE_COULDNT_CONNECT || c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR || c == CURLE_GOT_NOTHING ||
	       c == CURLE_PARTIAL_FILE || c == CURLE_OPERATION_TIMEDOUT;
}

/* The words for a libcurl failure: ours for those a reader meets, libcurl's for the rest. */
static const char *curl_words(CURLcode c, char *buf, size_t size)
{
	static const struct {
		CURLcode code;
		const char *words;
	} table[] = {
		{CURLE_OPERATION_TIMEDOUT, "the server stalled (no bytes for TINSPECT_HTTP_TIMEOUT seconds)"},
		{CURLE_PARTIAL_FILE, "the server's body ended before its Content-Length"},
		{CURLE_RECV_ERROR, "the connection broke while receiving (reset)"},
		{CURLE_SEND_ERROR, "the connection broke while sending"},
		{CURLE_GOT_NOTHING, "the server closed the connection without an answer"},
		{CURLE_COULDNT_CONNECT, "cannot connect to the server"},
		{CURLE_COULDNT_RESOLVE_HOST, "cannot resolve the host name"},
		{CURLE_COULDNT_RESOLVE_PROXY, "cannot resolve the proxy's name"},
		{CURLE_PEER_FAILED_VERIFICATION, "the server's certificate does not verify (give its CA with --cacert)"},
		{CURLE_SSL_CACERT_BADFILE, "cannot read the CA certificates (--cacert, TINSPECT_CACERT)"},
		{CURLE_SSL_CONNECT_ERROR, "the TLS handshake failed"},
		{CURLE_UNSUPPORTED_PROTOCOL, "a protocol tinspect does not read (http and https only)"},
		{CURLE_URL_MALFORMAT, "a malformed URL"},
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].code == c)
			return table[i].words;
	snprintf(buf, size, "%s", lib.fn.curl_easy_strerror(c));
	return buf;
}

/*
 * One ranged GET of [from, from + len): follows redirects, tries again
 * after server errors, checks the answer's version against the file's.
 * A 206 fills dst (*got bytes); a 200 (Range ignored) leaves its body in
 * a->body when it fits, for the caller to keep.
 */
static ti_status request(ti_io *io, uint64_t from, uint64_t len, unsigned char *dst, answer *a, ti_error *err)
{
	struct ti_io_remote *r = io->remote;
	char range[80], auth[4200], url[URL_MAX], words[256];
	snprintf(range, sizeof(range), "Range: bytes=%" PRIu64 "-%" PRIu64, from, from + len - 1);
	const char *tok = token();
	long timeout = (long)env_number("TINSPECT_HTTP_TIMEOUT", TIMEOUT_DEFAULT);
	uint64_t whole_max = env_number("TINSPECT_HTTP_WHOLE_MAX", WHOLE_MAX_DEFAULT);
	for (int attempt = 1;; attempt++) {
		snprintf(url, sizeof(url), "%s", r->target[0] ? r->target : r->url);
		CURLcode c = CURLE_OK;
		int hops = 0;
		for (;;) {
			memset(a, 0, sizeof(*a));
			a->dst = dst;
			a->want = len;
			a->body_max = whole_max;
			bool to_hub = tok && same_origin(url, endpoint());
			for (const char *t = to_hub ? tok : ""; *t; t++)
				if ((unsigned char)*t <= ' ' || *t == 0x7f) /* it would break the header, or add one */
					return TI_FAIL(err, TI_E_INVALID, "the Hub token holds a space or a control character");
			struct curl_slist *headers = lib.fn.curl_slist_append(NULL, range), *more = headers;
			if (headers && to_hub) {
				snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
				more = lib.fn.curl_slist_append(headers, auth);
			}
			if (!more) {
				lib.fn.curl_slist_free_all(headers);
				memset(auth, 0, sizeof(auth));
				return TI_FAIL(err, TI_E_NOMEM, "out of memory");
			}
			CURL *h = r->curl;
			lib.fn.curl_easy_reset(h);
			lib.fn.curl_easy_setopt(h, CURLOPT_URL, url);
			lib.fn.curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
			lib.fn.curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
			lib.fn.curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
			lib.fn.curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
			lib.fn.curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
			lib.fn.curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
			lib.fn.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
			lib.fn.curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
			lib.fn.curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, timeout);
			lib.fn.curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
			lib.fn.curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, timeout);
			lib.fn.curl_easy_setopt(h, CURLOPT_USERAGENT, "tinspect");
			lib.fn.curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, NULL); /* bytes as they lie, never gzip */
			if (cacert())
				lib.fn.curl_easy_setopt(h, CURLOPT_CAINFO, cacert());
			atomic_fetch_add(&count_requests, 1);
			thread_requests++;
			c = lib.fn.curl_easy_perform(h);
			char *next = NULL;
			if (c == CURLE_OK && a->status >= 300 && a->status < 400)
				lib.fn.curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &next);
			if (next && strlen(next) < sizeof(url)) {
				char hop[URL_MAX];
				snprintf(hop, sizeof(hop), "%s", next);
				lib.fn.curl_slist_free_all(headers);
				memset(auth, 0, sizeof(auth));
				if (++hops > REDIRECTS) {
					free(a->body);
					return TI_FAIL(err, TI_E_NETWORK, "more than %d redirects", REDIRECTS);
				}
				if (check_url(hop, err)) {
					free(a->body);
					return TI_FAIL(err, TI_E_NETWORK, "a redirect leads to a URL tinspect does not follow");
				}
				memcpy(url, hop, sizeof(url));
				continue;
			}
			lib.fn.curl_slist_free_all(headers);
			memset(auth, 0, sizeof(auth));
			break;
		}
		if (a->too_long) {
			free(a->body);
			a->body = NULL;
			if (a->has_length)
				return TI_FAIL(err, TI_E_NETWORK, "the server ignores range requests and sends all %" PRIu64
				               " bytes, more than the %" PRIu64 " tinspect reads without ranges "
				               "(TINSPECT_HTTP_WHOLE_MAX)", a->length, whole_max);
			return TI_FAIL(err, TI_E_NETWORK, "the server ignores range requests and sends more than the %" PRIu64
			               " bytes tinspect reads without ranges (TINSPECT_HTTP_WHOLE_MAX)", whole_max);
		}
		if (c == CURLE_WRITE_ERROR && a->overflow) {
			free(a->body);
			return TI_FAIL(err, TI_E_NETWORK, "the server sent more than the %" PRIu64 " bytes asked for", len);
		}
		bool again = (c != CURLE_OK && transient(c)) || (c == CURLE_OK && (a->status >= 500 || a->status == 429));
		if (again && attempt < TRIES) {
			free(a->body);
			pause_ms(250L << (attempt - 1));
			continue;
		}
		if (c != CURLE_OK) {
			free(a->body);
			return TI_FAIL(err, TI_E_NETWORK, "%s%s", curl_words(c, words, sizeof(words)),
			               again ? " (tried 4 times)" : "");
		}
		if (a->status >= 400 && a->status < 500 && r->target[0] && !hops) {
			/* the URL the first answer's redirects led to (a CDN's signed one) may have expired: from the start */
			free(a->body);
			r->target[0] = '\0';
			attempt--;
			continue;
		}
		if (a->status != 200 && a->status != 206) {
			free(a->body);
			if (a->status == 416 && from == 0 && !strcmp(a->range, "bytes */0")) /* an empty file */
				return TI_OK;
			return TI_FAIL(err, TI_E_NETWORK, "HTTP %ld, %s%s%s%s", a->status, status_words(a->status),
			               a->hub_error[0] ? " (the Hub says " : "", a->hub_error, a->hub_error[0] ? ")" : "");
		}
		if (!r->target[0] && hops)
			memcpy(r->target, url, sizeof(r->target));
		break;
	}
	/* one version of the file, or none */
	const char *v = a->etag[0] ? a->etag : a->modified;
	if (!r->size_known)
		snprintf(r->validator, sizeof(r->validator), "%s", v);
	else if (r->validator[0] && strcmp(v, r->validator)) {
		free(a->body);
		return TI_FAIL(err, TI_E_NETWORK, "the file changed on the server between two requests (%s %s, then %s): "
		               "run the command again", a->etag[0] ? "ETag" : "Last-Modified", r->validator, v[0] ? v : "none");
	}
	if (a->status == 206) {
		uint64_t first, last, total;
		if (sscanf(a->range, "bytes %" SCNu64 "-%" SCNu64 "/%" SCNu64, &first, &last, &total) != 3 || first != from ||
		    last < first || last - first >= len)
			return TI_FAIL(err, TI_E_NETWORK, "the server answered range bytes=%" PRIu64 "-%" PRIu64
			               " with Content-Range '%s'", from, from + len - 1, a->range);
		if (r->size_known && total != io->size)
			return TI_FAIL(err, TI_E_NETWORK, "the file changed on the server between two requests (%" PRIu64
			               " bytes, then %" PRIu64 "): run the command again", io->size, total);
		io->size = total;
		if (a->got != last - first + 1)
			return TI_FAIL(err, TI_E_NETWORK, "the server sent %" PRIu64 " of the %" PRIu64 " bytes of its range",
			               a->got, last - first + 1);
	}
	return TI_OK;
}

/* Keeps a 200's whole body as the file: every later read comes from it. */
static ti_status keep_whole(ti_io *io, answer *a, ti_error *err)
{
	struct ti_io_remote *r = io->remote;
	if (r->size_known && a->body_len != io->size) {
		free(a->body);
		return TI_FAIL(err, TI_E_NETWORK, "the file changed on the server between two requests (%" PRIu64
		               " bytes, then %" PRIu64 "): run the command again", io->size, a->body_len);
	}
	if (a->has_length && a->body_len != a->length) {
		free(a->body);
		return TI_FAIL(err, TI_E_NETWORK, "the server sent %" PRIu64 " of the %" PRIu64 " bytes of its body",
		               a->body_len, a->length);
	}
	r->whole = a->body ? a->body : calloc(1, 1);
	io->size = a->body_len;
	return r->whole ? TI_OK : TI_FAIL(err, TI_E_NOMEM, "out of memory");
}

static block *block_victim(struct ti_io_remote *r)
{
	block *oldest = &r->blocks[0];
	for (size_t i = 1; i < CACHE_BLOCKS && oldest->valid; i++)
		if (!r->blocks[i].valid || r->blocks[i].used < oldest->used)
			oldest = &r->blocks[i];
	return oldest;
}

/* Fetches blocks [first, first + count) into the cache, in one request. */
static ti_status fetch_blocks(ti_io *io, uint64_t first, uint64_t count, ti_error *err)
{
	struct ti_io_remote *r = io->remote;
	uint64_t from = first * BLOCK, len = count * BLOCK;
	if (r->size_known && from + len > io->size)
		len = io->size - from;
	unsigned char *buf = malloc(len);
	if (!buf)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	answer a;
	ti_status st = request(io, from, len, buf, &a, err);
	if (!st && a.status == 200) {
		st = keep_whole(io, &a, err);
		r->size_known = true;
		free(buf);
		return st;
	}
	if (st || a.status != 206) { /* an empty file answers 416 */
		if (!st)
			io->size = 0;
		r->size_known = !st;
		free(buf);
		return st;
	}
	r->size_known = true;
	for (uint64_t i = 0; i * BLOCK < a.got; i++) {
		block *b = block_victim(r);
		if (!b->data && !(b->data = malloc(BLOCK))) {
			free(buf);
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
		}
		b->len = a.got - i * BLOCK < BLOCK ? (size_t)(a.got - i * BLOCK) : BLOCK;
		memcpy(b->data, buf + i * BLOCK, b->len);
		b->index = first + i;
		b->valid = true;
		b->used = ++r->tick;
	}
	free(buf);
	return TI_OK;
}

static block *cached(struct ti_io_remote *r, uint64_t index)
{
	for (size_t i = 0; i < CACHE_BLOCKS; i++)
		if (r->blocks[i].valid && r->blocks[i].index == index)
			return &r->blocks[i];
	return NULL;
}

static ti_status read_locked(ti_io *io, uint64_t offset, void *buf, size_t n, size_t *got, ti_error *err)
{
	struct ti_io_remote *r = io->remote;
	*got = 0;
	if (offset >= io->size || !n)
		return TI_OK;
	if (n > io->size - offset)
		n = (size_t)(io->size - offset);
	if (r->whole) {
		memcpy(buf, r->whole + offset, n);
		*got = n;
		return TI_OK;
	}
	if (n >= BYPASS) {
		answer a;
		ti_status st = request(io, offset, n, buf, &a, err);
		if (!st && a.status == 200) {
			if ((st = keep_whole(io, &a, err)))
				return st;
			return read_locked(io, offset, buf, n, got, err);
		}
		*got = st ? 0 : (size_t)a.got;
		return st;
	}
	uint64_t first = offset / BLOCK, last = (offset + n - 1) / BLOCK;
	uint64_t miss_from = UINT64_MAX, miss_to = 0;
	for (uint64_t i = first; i <= last; i++)
		if (!cached(r, i)) {
			if (miss_from == UINT64_MAX)
				miss_from = i;
			miss_to = i;
		}
	if (miss_from != UINT64_MAX) {
		uint64_t count = miss_to - miss_from + 1;
		size_t run = miss_from == r->next_block && r->run ? r->run * 2 : 1;
		if (run > RUN_MAX)
			run = RUN_MAX;
		if (count < run)
			count = run;
		uint64_t at = miss_from * BLOCK;
		if (at < r->hint_to && at + BLOCK > r->hint_from) { /* all of the hint not cached, as the cache allows */
			uint64_t from = r->hint_from / BLOCK;
			while (from < miss_from && cached(r, from))
				from++;
			uint64_t want = (r->hint_to + BLOCK - 1) / BLOCK - from;
			if (want > HINT_MAX)
				want = HINT_MAX;
			if (want > miss_from - from + count) {
				count = want;
				miss_from = from;
			}
		}
		uint64_t blocks_in_file = (io->size + BLOCK - 1) / BLOCK;
		if (miss_from + count > blocks_in_file)
			count = blocks_in_file - miss_from;
		ti_status st = fetch_blocks(io, miss_from, count, err);
		if (st)
			return st;
		r->next_block = miss_from + count;
		r->run = (size_t)count;
		if (r->whole)
			return read_locked(io, offset, buf, n, got, err);
	}
	for (uint64_t i = first; i <= last; i++) {
		block *b = cached(r, i);
		if (!b)
			return TI_FAIL(err, TI_E_NETWORK, "the server sent fewer bytes than the file holds");
		b->used = ++r->tick;
		uint64_t start = i * BLOCK, lo = offset > start ? offset - start : 0;
		uint64_t hi = offset + n - start < b->len ? offset + n - start : b->len;
		if (hi <= lo)
			break;
		memcpy((char *)buf + (start + lo - offset), b->data + lo, hi - lo);
		*got = (size_t)(start + hi - offset);
	}
	return TI_OK;
}

void ti_io_remote_drop_cache(ti_io *io)
{
	struct ti_io_remote *r = io->remote;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < CACHE_BLOCKS; i++) {
		free(r->blocks[i].data);
		r->blocks[i].data = NULL;
		r->blocks[i].valid = false;
	}
	r->run = 0;
	pthread_mutex_unlock(&r->lock);
}

void ti_io_remote_hint(ti_io *io, uint64_t offset, uint64_t n)
{
	pthread_mutex_lock(&io->remote->lock);
	io->remote->hint_from = offset;
	io->remote->hint_to = offset + n;
	pthread_mutex_unlock(&io->remote->lock);
}

ti_status ti_io_remote_read(ti_io *io, uint64_t offset, void *buf, size_t n, size_t *got, ti_error *err)
{
	pthread_mutex_lock(&io->remote->lock);
	ti_status st = read_locked(io, offset, buf, n, got, err);
	pthread_mutex_unlock(&io->remote->lock);
	return st;
}

ti_status io_remote_open(ti_io *io, ti_error *err)
{
	pthread_once(&lib.once, curl_load);
	if (lib.why[0])
		return TI_FAIL(err, TI_E_NETWORK, "%s", lib.why);
	struct ti_io_remote *r = calloc(1, sizeof(*r));
	if (!r)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	pthread_mutex_init(&r->lock, NULL);
	io->remote = r;
	ti_status st = resolve_name(io->name, r->url, sizeof(r->url), err);
	if (st)
		return st;
	if (!(r->curl = lib.fn.curl_easy_init()))
		return TI_FAIL(err, TI_E_NOMEM, "libcurl cannot start a transfer");
	st = fetch_blocks(io, 0, FIRST / BLOCK, err);
	r->next_block = FIRST / BLOCK;
	r->run = 0; /* the first request is not a run: a read that follows it starts small */
	return st;
}

void io_remote_close(ti_io *io)
{
	struct ti_io_remote *r = io->remote;
	if (r->curl)
		lib.fn.curl_easy_cleanup(r->curl);
	for (size_t i = 0; i < CACHE_BLOCKS; i++)
		free(r->blocks[i].data);
	free(r->whole);
	pthread_mutex_destroy(&r->lock);
	free(r);
	io->remote = NULL;
}
