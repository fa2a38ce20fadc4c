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
 *
 * Blocks go through the cache on disk (cache.h) too: a block is looked for
 * there before it is asked for, and kept there when it arrives. A URL the
 * cache holds is opened with a conditional request (If-None-Match, else
 * If-Modified-Since); a 304 says the version held is the server's, and its
 * size and validator are taken from the cache. Offline, no request at all.
 *
 * Credentials: the Hub token as said in io.h; for any other host, the
 * login and password of its "machine" entry in $NETRC (default ~/.netrc),
 * per request, so a redirect to another host never carries them.
 * The answers' bytes are read by http_parse.c's pure functions.
 */
#include "io/cache.h"
#include "io/http_parse.h"
#include "io/io_internal.h"

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
	URL_MAX = IO_CACHE_URL_MAX,
	VALIDATOR_MAX = HTTP_VALIDATOR_MAX,
};
_Static_assert((int)BLOCK == (int)IO_CACHE_BLOCK, "the cache on disk keeps http.c's blocks");
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
static ti_io_cache_mode cache_mode_set;
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

void ti_io_set_cache_mode(ti_io_cache_mode mode)
{
	cache_mode_set = mode;
}

/* An environment variable set to 1, true, yes or on (any case), as huggingface_hub reads HF_HUB_OFFLINE. */
static bool env_true(const char *name)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	const char *v = getenv(name);
	for (size_t i = 0; v && i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!strcasecmp(v, yes[i]))
			return true;
	return false;
}

ti_io_cache_mode ti_io_cache_mode_now(void)
{
	if (cache_mode_set != TI_IO_CACHE_DEFAULT)
		return cache_mode_set;
	return env_true("TINSPECT_OFFLINE") || env_true("HF_HUB_OFFLINE") ? TI_IO_CACHE_ONLY : TI_IO_CACHE_USE;
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

/* Checks a http(s) URL tinspect will ask for (http_url_refusal). */
static ti_status check_url(const char *url, ti_error *err)
{
	const char *why = http_url_refusal(url);
	return why ? TI_FAIL(err, TI_E_INVALID, "%s", why) : TI_OK;
}

ti_status io_resolve_name(const char *name, char *out, size_t size, ti_error *err)
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
		return io_resolve_name(name, url, sizeof(url), err);
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
		return io_resolve_name(file, url, sizeof(url), err);
	}
	return io_resolve_name(name, url, sizeof(url), err);
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
	CURL *curl;              /* NULL offline */
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
	io_cache *cache;         /* the cache on disk, or NULL */
	bool cache_versioned;    /* the cache's version is this file's: blocks may be read and kept */
	bool offline;            /* the cache alone: no request */
};

static size_t on_header(char *line, size_t size, size_t count, void *ctx)
{
	http_answer_header(ctx, line, size * count);
	return size * count;
}

static size_t on_body(char *data, size_t size, size_t count, void *ctx)
{
	atomic_fetch_add(&count_bytes, size * count);
	thread_bytes += size * count;
	return http_answer_body(ctx, data, size * count);
}

/* ---- .netrc ---- */

/* The login and password $NETRC (default ~/.netrc) gives for url's host; false when none. */
static bool netrc_credentials(const char *url, char *login, size_t login_size, char *password, size_t password_size)
{
	char host[256], path[4096];
	const char *file = getenv("NETRC"), *home = getenv("HOME");
	if (!http_url_host(url, host, sizeof(host)))
		return false;
	if (!file || !*file) {
		if (!home || !*home || (size_t)snprintf(path, sizeof(path), "%s/.netrc", home) >= sizeof(path))
			return false;
		file = path;
	}
	char *text = malloc(HTTP_NETRC_MAX);
	ssize_t n = text ? io_read_small_file(file, text, HTTP_NETRC_MAX) : -1;
	bool found = n > 0 && http_netrc_find(text, (size_t)n, host, login, login_size, password, password_size);
	if (n > 0)
		memset(text, 0, (size_t)n);
	free(text);
	return found;
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


/* Credentials gone from memory: an Authorization header, a .netrc's login and password. */
static void forget(char *auth, size_t auth_size, char *login, size_t login_size, char *password, size_t password_size)
{
	memset(auth, 0, auth_size);
	memset(login, 0, login_size);
	memset(password, 0, password_size);
}

/*
 * One ranged GET of [from, from + len): follows redirects, tries again
 * after server errors, checks the answer's version against the file's.
 * A 206 fills dst (*got bytes); a 200 (Range ignored) leaves its body in
 * a->body when it fits, for the caller to keep. condition (NULL: none) is
 * an If-None-Match or If-Modified-Since header line: a 304 to it is no
 * failure (a->status 304, nothing read).
 */
static ti_status request(ti_io *io, uint64_t from, uint64_t len, unsigned char *dst, const char *condition,
                         http_answer *a, ti_error *err)
{
	struct ti_io_remote *r = io->remote;
	char range[80], auth[4200], url[URL_MAX], words[256];
	char login[HTTP_CREDENTIAL_MAX], password[HTTP_CREDENTIAL_MAX];
	snprintf(range, sizeof(range), "Range: bytes=%" PRIu64 "-%" PRIu64, from, from + len - 1);
	const char *tok = token();
	long timeout = (long)env_number("TINSPECT_HTTP_TIMEOUT", TIMEOUT_DEFAULT);
	uint64_t whole_max = env_number("TINSPECT_HTTP_WHOLE_MAX", WHOLE_MAX_DEFAULT);
	for (int attempt = 1;; attempt++) {
		snprintf(url, sizeof(url), "%s", r->target[0] ? r->target : r->url);
		CURLcode c = CURLE_OK;
		int hops = 0;
		for (;;) {
			http_answer_start(a, dst, len, whole_max);
			bool hub = http_same_origin(url, endpoint()), to_hub = tok && hub;
			for (const char *t = to_hub ? tok : ""; *t; t++)
				if ((unsigned char)*t <= ' ' || *t == 0x7f) /* it would break the header, or add one */
					return TI_FAIL(err, TI_E_INVALID, "the Hub token holds a space or a control character");
			/* .netrc: for this request's own host alone, never the Hub's (its token is HF_TOKEN) */
			bool netrc = !hub && netrc_credentials(url, login, sizeof(login), password, sizeof(password));
			struct curl_slist *headers = lib.fn.curl_slist_append(NULL, range), *more = headers;
			if (more && to_hub) {
				snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
				more = lib.fn.curl_slist_append(headers, auth);
			}
			if (more && condition)
				more = lib.fn.curl_slist_append(headers, condition);
			if (!more) {
				lib.fn.curl_slist_free_all(headers);
				forget(auth, sizeof(auth), login, sizeof(login), password, sizeof(password));
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
			if (netrc) {
				lib.fn.curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
				lib.fn.curl_easy_setopt(h, CURLOPT_USERNAME, login);
				lib.fn.curl_easy_setopt(h, CURLOPT_PASSWORD, password);
			}
			if (cacert())
				lib.fn.curl_easy_setopt(h, CURLOPT_CAINFO, cacert());
			atomic_fetch_add(&count_requests, 1);
			thread_requests++;
			c = lib.fn.curl_easy_perform(h);
			lib.fn.curl_easy_setopt(h, CURLOPT_USERNAME, NULL); /* libcurl's copies, freed now */
			lib.fn.curl_easy_setopt(h, CURLOPT_PASSWORD, NULL);
			char *next = NULL;
			if (c == CURLE_OK && a->status >= 300 && a->status < 400 && a->status != 304)
				lib.fn.curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &next);
			lib.fn.curl_slist_free_all(headers);
			forget(auth, sizeof(auth), login, sizeof(login), password, sizeof(password));
			if (next && strlen(next) < sizeof(url)) {
				char hop[URL_MAX];
				snprintf(hop, sizeof(hop), "%s", next);
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
		if (a->status != 200 && a->status != 206 && !(condition && a->status == 304)) {
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
	if (a->status == 304) { /* the version the condition named: the caller's to take */
		free(a->body);
		a->body = NULL;
		return TI_OK;
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
		if (!http_content_range(a->range, &first, &last, &total) || first != from || last - first >= len)
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

/* ---- the cache on disk ---- */

/* The length of block index: BLOCK, less for the file's last. */
static size_t block_length(const ti_io *io, uint64_t index)
{
	uint64_t start = index * BLOCK;
	return start >= io->size ? 0 : io->size - start < BLOCK ? (size_t)(io->size - start) : BLOCK;
}

/* The file's size and version are known now: the cache keeps this version (or nothing, when it has no validator). */
static void cache_version_known(ti_io *io)
{
	struct ti_io_remote *r = io->remote;
	if (r->cache && !r->cache_versioned && !(r->cache_versioned = io_cache_set_version(r->cache, r->validator, io->size))) {
		io_cache_close(r->cache);
		r->cache = NULL;
	}
}

/* Keeps the whole blocks among the n bytes at offset (the file's last block whole when it ends there). */
static void cache_keep(ti_io *io, uint64_t offset, const unsigned char *bytes, uint64_t n)
{
	struct ti_io_remote *r = io->remote;
	if (!r->cache_versioned)
		return;
	for (uint64_t i = (offset + BLOCK - 1) / BLOCK; i * BLOCK < offset + n; i++) {
		size_t len = block_length(io, i);
		if (!len || i * BLOCK + len > offset + n)
			break;
		io_cache_put(r->cache, i, bytes + (i * BLOCK - offset), len);
	}
}

/* Bytes [offset, offset + n) are not in the cache, offline: one line saying which. */
static ti_status offline_miss(uint64_t offset, uint64_t n, ti_error *err)
{
	return TI_FAIL(err, TI_E_NETWORK, "offline (--offline, TINSPECT_OFFLINE or HF_HUB_OFFLINE): bytes %" PRIu64
	               "-%" PRIu64 " of the file are not in the cache", offset, offset + n - 1);
}

/* ---- reads ---- */

/* Keeps a 200's whole body as the file: every later read comes from it. */
static ti_status keep_whole(ti_io *io, http_answer *a, ti_error *err)
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
	if (!r->whole)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	r->size_known = true;
	cache_version_known(io);
	cache_keep(io, 0, r->whole, io->size);
	return TI_OK;
}

static block *block_victim(struct ti_io_remote *r)
{
	block *oldest = &r->blocks[0];
	for (size_t i = 1; i < CACHE_BLOCKS && oldest->valid; i++)
		if (!r->blocks[i].valid || r->blocks[i].used < oldest->used)
			oldest = &r->blocks[i];
	return oldest;
}

/* A memory block for block index, len bytes from data (NULL: from the cache on disk); NULL when it cannot be had. */
static block *block_fill(struct ti_io_remote *r, uint64_t index, const unsigned char *data, size_t len)
{
	block *b = block_victim(r);
	if (!b->data && !(b->data = malloc(BLOCK)))
		return NULL;
	b->valid = false;
	if (data)
		memcpy(b->data, data, len);
	else if (!io_cache_get(r->cache, index, b->data, len))
		return NULL;
	b->len = len;
	b->index = index;
	b->valid = true;
	b->used = ++r->tick;
	return b;
}

/* Fetches blocks [first, first + count) into the cache, in one request (or with a condition: see request()). */
static ti_status fetch_blocks(ti_io *io, uint64_t first, uint64_t count, const char *condition, long *status,
                              ti_error *err)
{
	struct ti_io_remote *r = io->remote;
	uint64_t from = first * BLOCK, len = count * BLOCK;
	if (r->size_known && from + len > io->size)
		len = io->size - from;
	unsigned char *buf = malloc(len);
	if (!buf)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	http_answer a;
	ti_status st = request(io, from, len, buf, condition, &a, err);
	*status = st ? 0 : a.status;
	if (!st && a.status == 200) {
		st = keep_whole(io, &a, err);
		free(buf);
		return st;
	}
	if (st || a.status != 206) { /* an empty file answers 416; a condition met, 304 */
		if (!st && a.status != 304)
			io->size = 0;
		r->size_known = !st && a.status != 304;
		free(buf);
		return st;
	}
	r->size_known = true;
	cache_version_known(io);
	cache_keep(io, from, buf, a.got);
	for (uint64_t i = 0; i * BLOCK < a.got; i++) {
		size_t n = a.got - i * BLOCK < BLOCK ? (size_t)(a.got - i * BLOCK) : BLOCK;
		if (!block_fill(r, first + i, buf + i * BLOCK, n)) {
			free(buf);
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
		}
	}
	free(buf);
	return TI_OK;
}

/* Block index from memory, else from the cache on disk; NULL when neither holds it. */
static block *cached(struct ti_io_remote *r, const ti_io *io, uint64_t index)
{
	for (size_t i = 0; i < CACHE_BLOCKS; i++)
		if (r->blocks[i].valid && r->blocks[i].index == index) {
			r->blocks[i].used = ++r->tick; /* not the victim of a block loaded for the same read */
			return &r->blocks[i];
		}
	return r->cache_versioned ? block_fill(r, index, NULL, block_length(io, index)) : NULL;
}

/* A read of BYPASS bytes or more, straight into buf: from the cache on disk when it holds all of them. */
static ti_status read_large(ti_io *io, uint64_t offset, void *buf, size_t n, size_t *got, ti_error *err)
{
	struct ti_io_remote *r = io->remote;
	uint64_t first = offset / BLOCK, last = (offset + n - 1) / BLOCK;
	bool all = r->cache_versioned;
	unsigned char *piece = all ? malloc(BLOCK) : NULL;
	for (uint64_t i = first; all && piece && i <= last; i++) {
		size_t len = block_length(io, i);
		all = io_cache_get(r->cache, i, piece, len);
		uint64_t start = i * BLOCK, lo = offset > start ? offset - start : 0;
		uint64_t hi = offset + n - start < len ? offset + n - start : len;
		if (all)
			memcpy((char *)buf + (start + lo - offset), piece + lo, hi - lo);
	}
	free(piece);
	if (all && piece) {
		*got = n;
		return TI_OK;
	}
	if (r->offline)
		return offline_miss(offset, n, err);
	/* kept in the cache: whole blocks asked for, so that every block the read touches is kept */
	uint64_t from = offset, len = n;
	unsigned char *dst = buf, *whole = NULL;
	if (r->cache_versioned) {
		from = first * BLOCK;
		len = ((last + 1) * BLOCK < io->size ? (last + 1) * BLOCK : io->size) - from;
		if (!(dst = whole = malloc(len)))
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	}
	http_answer a;
	ti_status st = request(io, from, len, dst, NULL, &a, err);
	if (!st && a.status == 200) {
		free(whole);
		if ((st = keep_whole(io, &a, err)))
			return st;
		memcpy(buf, r->whole + offset, n);
		*got = n;
		return TI_OK;
	}
	*got = 0;
	if (!st) {
		cache_keep(io, from, dst, a.got);
		uint64_t skip = offset - from;
		*got = a.got > skip ? (size_t)(a.got - skip < n ? a.got - skip : n) : 0;
		if (whole)
			memcpy(buf, whole + skip, *got);
	}
	free(whole);
	return st;
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
	if (n >= BYPASS)
		return read_large(io, offset, buf, n, got, err);
	uint64_t first = offset / BLOCK, last = (offset + n - 1) / BLOCK;
	uint64_t miss_from = UINT64_MAX, miss_to = 0;
	for (uint64_t i = first; i <= last; i++)
		if (!cached(r, io, i)) {
			if (miss_from == UINT64_MAX)
				miss_from = i;
			miss_to = i;
		}
	if (miss_from != UINT64_MAX && r->offline)
		return offline_miss(miss_from * BLOCK, (miss_to - miss_from) * BLOCK + block_length(io, miss_to), err);
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
			while (from < miss_from && cached(r, io, from))
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
		long status;
		ti_status st = fetch_blocks(io, miss_from, count, NULL, &status, err);
		if (st)
			return st;
		r->next_block = miss_from + count;
		r->run = (size_t)count;
		if (r->whole)
			return read_locked(io, offset, buf, n, got, err);
	}
	for (uint64_t i = first; i <= last; i++) {
		block *b = cached(r, io, i);
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

/* The version the cache holds is the file's (a 304, or offline): its size and validator, from the cache. */
static void take_cached_version(ti_io *io, const char *validator, uint64_t size)
{
	struct ti_io_remote *r = io->remote;
	snprintf(r->validator, sizeof(r->validator), "%s", validator);
	io->size = size;
	r->size_known = true;
	cache_version_known(io);
}

ti_status io_remote_open(ti_io *io, ti_error *err)
{
	struct ti_io_remote *r = calloc(1, sizeof(*r));
	if (!r)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	pthread_mutex_init(&r->lock, NULL);
	io->remote = r;
	ti_status st = io_resolve_name(io->name, r->url, sizeof(r->url), err);
	if (st)
		return st;
	ti_io_cache_mode mode = ti_io_cache_mode_now();
	r->cache = mode != TI_IO_CACHE_BYPASS ? io_cache_open(r->url) : NULL;
	const char *held = NULL;
	uint64_t held_size = 0;
	bool has = io_cache_head(r->cache, &held, &held_size);
	if (mode == TI_IO_CACHE_ONLY) { /* no request, no libcurl */
		r->offline = true;
		if (!has)
			return TI_FAIL(err, TI_E_NETWORK, "%s", TI_IO_OFFLINE_ABSENT);
		take_cached_version(io, held, held_size);
		return TI_OK;
	}
	pthread_once(&lib.once, curl_load);
	if (lib.why[0])
		return TI_FAIL(err, TI_E_NETWORK, "%s", lib.why);
	if (!(r->curl = lib.fn.curl_easy_init()))
		return TI_FAIL(err, TI_E_NOMEM, "libcurl cannot start a transfer");
	/* held: asked for on a condition; a 304 says the cache's version is the server's */
	char condition[VALIDATOR_MAX + 32] = "";
	if (has)
		snprintf(condition, sizeof(condition), "%s: %s", held[0] == '"' || !strncmp(held, "W/", 2) ? "If-None-Match"
		         : "If-Modified-Since", held);
	long status = 0;
	st = fetch_blocks(io, 0, FIRST / BLOCK, has ? condition : NULL, &status, err);
	if (!st && status == 304)
		take_cached_version(io, held, held_size);
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
	io_cache_close(r->cache);
	pthread_mutex_destroy(&r->lock);
	free(r);
	io->remote = NULL;
}

ti_status ti_io_cache_clear(const char *name, uint64_t *entries, uint64_t *bytes, ti_error *err)
{
	*entries = *bytes = 0;
	char *url = name ? malloc(URL_MAX) : NULL;
	if (name && !url)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	ti_status st = name ? io_resolve_name(name, url, URL_MAX, err) : TI_OK;
	if (!st)
		st = io_cache_clear(url, entries, bytes, err);
	free(url);
	return st;
}
