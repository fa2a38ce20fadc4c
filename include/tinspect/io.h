/*
 * io.h - the bytes of one input file, wherever they lie.
 *
 * Every reader (safetensors, torch zip, GGUF, npy, an index) reads through
 * a ti_io instead of a descriptor: a local file, read with pread and nothing
 * between (no copy, no allocation per read), or a URL, read with HTTP range
 * requests for only the bytes asked for, through a small cache of blocks so
 * that a reader's many small reads of one region cost one request.
 *
 * Names: a path; http://HOST/PATH; https://HOST/PATH (the certificate is
 * always verified, against TINSPECT_CACERT's file when set); and
 * hf://ORG/REPO[@REVISION]/PATH, the Hugging Face Hub's
 * $HF_ENDPOINT/ORG/REPO/resolve/REVISION/PATH (endpoint
 * https://huggingface.co, revision main by default). $HF_TOKEN (or the
 * token ti_io_set_token gives) goes as "Authorization: Bearer" to the
 * endpoint's host alone, never to a host a redirect leads to.
 *
 * One remote file is one version: the ETag (else Last-Modified) of its
 * first answer is held, and an answer with another fails (TI_E_NETWORK),
 * so no read mixes two versions of a file. Every failure of a server or of
 * the network is TI_E_NETWORK, said in one line that names the URL as it
 * was given (a redirect's target may carry a signature: it is never shown).
 *
 * A handle is counted: each reader that keeps one takes a reference
 * (ti_io_ref) and gives it back (ti_io_close), so a file a source opens
 * once is read by its readers through one cache and one version.
 */
#ifndef TINSPECT_IO_H
#define TINSPECT_IO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "tinspect/error.h"

typedef struct ti_io ti_io;

/* What a handle is: readers read fd (a local file's, for what must be local), size and name. */
struct ti_io {
	int fd;                      /* a local file's descriptor; -1 for a URL */
	uint64_t size;               /* the file's length in bytes */
	const char *name;            /* as given (a URL holds no credentials: they are refused) */
	int refs;
	bool borrowed;               /* fd is the caller's: not closed */
	struct ti_io_remote *remote; /* NULL for a local file */
};

/* True when name is a URL tinspect reads (http://, https://, hf://), not a path. */
bool ti_io_is_url(const char *name);
/* True when name starts as a URL does (SCHEME://, RFC 3986's scheme), whether tinspect reads that scheme or not. */
bool ti_io_looks_like_url(const char *name);
/*
 * Checks a name that looks like a URL before any request: a scheme tinspect
 * reads, a host, no credentials, no space or control byte; an hf:// name is
 * hf://ORG/REPO[@REVISION][/PATH] (no PATH: the repository, as a folder).
 * Otherwise TI_E_INVALID, in one line that never repeats a credential.
 */
ti_status ti_io_check_url(const char *name, ti_error *err);

/*
 * Opens a path or a URL. A path: a regular file (a folder, a FIFO or a
 * device is refused, TI_E_IO: reading one could block forever). A URL: its
 * first answer is asked for now (one range request for its first 128 KiB),
 * which gives its size and version. A URL
 * tinspect cannot use (another scheme, credentials in it, no host) is
 * TI_E_INVALID; a server's failure TI_E_NETWORK.
 */
ti_status ti_io_open(const char *name, ti_io **out, ti_error *err);
/* A handle on a local descriptor the caller keeps (closing the handle does not close it). */
ti_status ti_io_wrap_fd(int fd, ti_io **out, ti_error *err);
/* Another reference to io (NULL stays NULL). */
ti_io *ti_io_ref(ti_io *io);
/* Gives back a reference; the last closes the file. NULL is a no-op. */
void ti_io_close(ti_io *io);

/* What ti_io_open says, offline, of a URL the cache holds nothing of. */
#define TI_IO_OFFLINE_ABSENT "offline (--offline, TINSPECT_OFFLINE or HF_HUB_OFFLINE): the file is not in the cache"
/*
 * True when err, from ti_io_open, says the file is not there to read: the
 * server answered 404, or offline the cache holds nothing of it. A
 * repository's candidate files (from_pretrained's order) go on to the next.
 */
bool ti_io_error_is_absent(ti_status st, const ti_error *err);

/* The remote part of ti_io_read: what its inline path calls for a URL. */
ti_status ti_io_remote_read(ti_io *io, uint64_t offset, void *buf, size_t n, size_t *got, ti_error *err);

/*
 * Reads up to n bytes at offset into buf; *got says how many arrived,
 * fewer only at the end of the file. A failure is TI_E_IO (a local read,
 * strerror's words) or TI_E_NETWORK.
 */
static inline ti_status ti_io_read(ti_io *io, uint64_t offset, void *buf, size_t n, size_t *got, ti_error *err)
{
	if (io->remote)
		return ti_io_remote_read(io, offset, buf, n, got, err);
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(io->fd, (char *)buf + done, n - done, (off_t)(offset + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*got = done;
			return TI_FAIL(err, TI_E_IO, "cannot read: %s", strerror(errno));
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	*got = done;
	return TI_OK;
}

/*
 * Says that the n bytes at offset will be read soon, in pieces (a zip's
 * directory): a URL's next miss in them asks for all of them at once (up to
 * 3 MiB). Nothing for a local file; no request now.
 */
void ti_io_remote_hint(ti_io *io, uint64_t offset, uint64_t n);
static inline void ti_io_hint(ti_io *io, uint64_t offset, uint64_t n)
{
	if (io->remote)
		ti_io_remote_hint(io, offset, n);
}

/* Frees what a URL's cache holds (its header is parsed: its blocks will not be read again soon). */
void ti_io_remote_drop_cache(ti_io *io);
static inline void ti_io_drop_cache(ti_io *io)
{
	if (io->remote)
		ti_io_remote_drop_cache(io);
}

/* Reads exactly n bytes at offset: a file that ends first is TI_E_IO ("the file ends at ..."). */
ti_status ti_io_read_full(ti_io *io, uint64_t offset, void *buf, size_t n, ti_error *err);

/*
 * The token sent to the Hub's host, in place of $HF_TOKEN (--token-file's).
 * The string is copied. NULL goes back to $HF_TOKEN.
 */
void ti_io_set_token(const char *token);
/* The CA bundle https verification uses, in place of $TINSPECT_CACERT (--cacert). NULL: the system's. */
void ti_io_set_cacert(const char *file);

/* What the URLs read so far cost, all files of the process together. */
typedef struct ti_io_counts {
	uint64_t requests; /* HTTP requests made, retries and redirects included */
	uint64_t bytes;    /* body bytes received */
} ti_io_counts;
ti_io_counts ti_io_remote_counts(void);
/* The same, of the calling thread alone: a worker that reads one file at a time tells each file's cost. */
ti_io_counts ti_io_thread_counts(void);

/*
 * The remote-read cache (docs/inspect.md, "The remote-read cache"): the
 * blocks read from a URL are kept under $XDG_CACHE_HOME/tinspect (default
 * ~/.cache/tinspect), keyed by the URL and its version (ETag, else
 * Last-Modified, and size), at most $TINSPECT_CACHE_MAX bytes (default
 * 2G; the least recently used entries go first). A URL read before costs
 * one conditional request (304: unchanged, its blocks read from disk); a
 * new version replaces the old. A file whose server gives no validator is
 * not kept. Only blocks, a URL and its validator are written: never a
 * header, a token or a redirect's target.
 */
typedef enum ti_io_cache_mode {
	TI_IO_CACHE_DEFAULT, /* TI_IO_CACHE_ONLY when $TINSPECT_OFFLINE or $HF_HUB_OFFLINE is 1/true/yes/on, else USE */
	TI_IO_CACHE_USE,     /* read through the cache, and keep what is fetched */
	TI_IO_CACHE_BYPASS,  /* neither read nor written (--no-cache) */
	TI_IO_CACHE_ONLY,    /* the cache alone, no request (--offline): what it lacks is TI_E_NETWORK */
} ti_io_cache_mode;
void ti_io_set_cache_mode(ti_io_cache_mode mode);
/* The mode in force (DEFAULT resolved from the environment). */
ti_io_cache_mode ti_io_cache_mode_now(void);
/* The cache's folder into out; false when none can be named (neither XDG_CACHE_HOME nor HOME). */
bool ti_io_cache_dir(char *out, size_t size);

/* One URL the cache holds. */
typedef struct ti_io_cache_entry {
	char *url;         /* the http(s) URL (an hf:// name's resolve URL) */
	char *validator;   /* its ETag, else Last-Modified */
	uint64_t size;     /* the file's length */
	uint64_t bytes;    /* how many of its bytes are kept */
	int64_t last_used; /* seconds since 1970 */
} ti_io_cache_entry;
/* Every entry, by URL; the array and its strings are the caller's (ti_io_cache_list_free). */
ti_status ti_io_cache_list(ti_io_cache_entry **out, size_t *count, ti_error *err);
void ti_io_cache_list_free(ti_io_cache_entry *entries, size_t count);
/* Removes the entry of the URL name stands for (NULL: every entry); how many entries and disk bytes went. */
ti_status ti_io_cache_clear(const char *name, uint64_t *entries, uint64_t *bytes, ti_error *err);

#endif
