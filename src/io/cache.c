/*
 * cache.c - the remote-read cache on disk (see cache.h; the public half,
 * ti_io_cache_*, lists and clears it for `tinspect cache`).
 */
#include "io/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinspect/io.h"

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL
#define HEAD_MAGIC "tinspect cache 1\n"
#define TMP_STALE_SECONDS 3600 /* a temporary file this old is a dead writer's */
static const unsigned char block_magic[8] = {'T', 'I', 'C', 'A', 'C', 'H', 'E', '1'};

/* ---- the format ---- */

uint64_t io_cache_fnv1a(const void *data, size_t n, uint64_t hash)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++)
		hash = (hash ^ p[i]) * FNV_PRIME;
	return hash;
}

uint64_t io_cache_key(const char *url)
{
	return io_cache_fnv1a(url, strlen(url), FNV_OFFSET);
}

uint64_t io_cache_version(const char *url, const char *validator, uint64_t size)
{
	char tail[32];
	snprintf(tail, sizeof(tail), "\n%" PRIu64, size);
	uint64_t h = io_cache_fnv1a(url, strlen(url) + 1, FNV_OFFSET); /* its NUL separates it from the validator */
	h = io_cache_fnv1a(validator, strlen(validator), h);
	return io_cache_fnv1a(tail, strlen(tail), h);
}

size_t io_cache_head_format(char *out, size_t out_size, const char *url, const char *validator, uint64_t size)
{
	if (!http_validator_usable(validator) || !*url || strpbrk(url, "\r\n"))
		return 0;
	int n = snprintf(out, out_size, HEAD_MAGIC "url %s\nvalidator %s\nsize %" PRIu64 "\n", url, validator, size);
	if (n < 0 || (size_t)n >= out_size)
		return 0;
	uint64_t check = io_cache_fnv1a(out, (size_t)n, FNV_OFFSET);
	int m = snprintf(out + n, out_size - (size_t)n, "check %016" PRIx64 "\n", check);
	if (m < 0 || (size_t)m >= out_size - (size_t)n)
		return 0;
	return (size_t)n + (size_t)m;
}

/* The line after prefix at *p (up to its LF) into out; *p moves past it. */
static bool head_field(const char **p, const char *end, const char *prefix, char *out, size_t out_size)
{
	size_t k = strlen(prefix);
	if ((size_t)(end - *p) < k || memcmp(*p, prefix, k))
		return false;
	const char *v = *p + k, *lf = memchr(v, '\n', (size_t)(end - v));
	if (!lf || (size_t)(lf - v) >= out_size || memchr(v, '\0', (size_t)(lf - v)))
		return false;
	memcpy(out, v, (size_t)(lf - v));
	out[lf - v] = '\0';
	*p = lf + 1;
	return true;
}

bool io_cache_head_parse(const char *text, size_t n, char *url, size_t url_size, char *validator,
                         size_t validator_size, uint64_t *size)
{
	const char *p = text, *end = text + n;
	char number[32], check[32];
	size_t magic = strlen(HEAD_MAGIC);
	if (n < magic || memcmp(text, HEAD_MAGIC, magic))
		return false;
	p += magic;
	if (!head_field(&p, end, "url ", url, url_size) || !head_field(&p, end, "validator ", validator, validator_size) ||
	    !head_field(&p, end, "size ", number, sizeof(number)) || !http_content_length(number, size))
		return false;
	size_t body = (size_t)(p - text);
	if (!head_field(&p, end, "check ", check, sizeof(check)) || p != end)
		return false;
	char want[32];
	snprintf(want, sizeof(want), "%016" PRIx64, io_cache_fnv1a(text, body, FNV_OFFSET));
	return !strcmp(check, want) && http_validator_usable(validator) && *url;
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/*
 * A block file's header: bytes 0-7 the magic "TICACHE1", then little-endian
 * words: 8 the block's index, 16 its length, 24 the version, 32 the FNV-1a
 * of the data, 40 the FNV-1a of bytes 0-39.
 */
void io_cache_block_header(unsigned char out[IO_CACHE_HEADER], uint64_t version, uint64_t index,
                           const unsigned char *data, size_t len)
{
	memcpy(out, block_magic, 8);
	put_le64(out + 8, index);
	put_le64(out + 16, len);
	put_le64(out + 24, version);
	put_le64(out + 32, io_cache_fnv1a(data, len, FNV_OFFSET));
	put_le64(out + 40, io_cache_fnv1a(out, 40, FNV_OFFSET));
}

bool io_cache_block_check(const unsigned char *file, size_t n, uint64_t version, uint64_t index, size_t len)
{
	return n == IO_CACHE_HEADER + len && !memcmp(file, block_magic, 8) && get_le64(file + 8) == index &&
	       get_le64(file + 16) == len && get_le64(file + 24) == version &&
	       get_le64(file + 40) == io_cache_fnv1a(file, 40, FNV_OFFSET) &&
	       get_le64(file + 32) == io_cache_fnv1a(file + IO_CACHE_HEADER, len, FNV_OFFSET);
}

static int by_last_use(const void *a, const void *b)
{
	const io_cache_usage *x = *(io_cache_usage *const *)a, *y = *(io_cache_usage *const *)b;
	return (x->last_used > y->last_used) - (x->last_used < y->last_used);
}

size_t io_cache_plan_eviction(io_cache_usage *entries, size_t n, uint64_t max)
{
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += entries[i].bytes;
	if (total <= max || !n)
		return 0;
	io_cache_usage **order = malloc(n * sizeof(*order));
	if (!order)
		return 0;
	for (size_t i = 0; i < n; i++)
		order[i] = &entries[i];
	qsort(order, n, sizeof(*order), by_last_use);
	size_t marked = 0;
	for (size_t i = 0; i < n && total > max; i++) {
		if (order[i]->keep)
			continue;
		order[i]->evict = true;
		total -= order[i]->bytes;
		marked++;
	}
	free(order);
	return marked;
}

uint64_t io_cache_max(void)
{
	const char *v = getenv("TINSPECT_CACHE_MAX");
	if (!v || !*v)
		return IO_CACHE_MAX_DEFAULT;
	static const struct {
		char suffix;
		int shift;
	} units[] = {{'K', 10}, {'M', 20}, {'G', 30}, {'T', 40}};
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (end == v || *v == '-' || errno)
		return IO_CACHE_MAX_DEFAULT;
	int shift = 0;
	for (size_t i = 0; *end && i < sizeof(units) / sizeof(units[0]); i++)
		if ((*end & ~0x20) == units[i].suffix)
			shift = units[i].shift, end++;
	if (*end || (shift && n > (UINT64_MAX >> shift)))
		return IO_CACHE_MAX_DEFAULT;
	return (uint64_t)n << shift;
}

/* ---- the folder ---- */

bool ti_io_cache_dir(char *out, size_t size)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;
	if (xdg && xdg[0] == '/') /* the XDG specification: a relative path is to be ignored */
		n = snprintf(out, size, "%s/tinspect", xdg);
	else if (home && home[0] == '/')
		n = snprintf(out, size, "%s/.cache/tinspect", home);
	else
		return false;
	return n > 0 && (size_t)n < size;
}

/* The folders above path and path itself, made when missing. */
static bool make_dirs(char *path)
{
	for (char *p = path + 1;; p++) {
		if (*p && *p != '/')
			continue;
		char c = *p;
		*p = '\0';
		bool ok = !mkdir(path, 0700) || errno == EEXIST;
		*p = c;
		if (!ok || !c)
			return ok;
	}
}

/* Up to max bytes of path; -1 when it cannot be read. */
ssize_t io_read_small_file(const char *path, void *buf, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < max) {
		ssize_t r = read(fd, (char *)buf + done, max - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r < 0)
				done = (size_t)-1;
			break;
		}
		done += (size_t)r;
	}
	close(fd);
	return done == (size_t)-1 ? -1 : (ssize_t)done;
}

/* Writes the parts to dir/name through a temporary file renamed over it: readers see all of it or none. */
static bool write_file(const char *dir, const char *name, const void *a, size_t an, const void *b, size_t bn)
{
	char path[IO_CACHE_PATH_MAX], tmp[IO_CACHE_PATH_MAX];
	static unsigned counter;
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	int m = snprintf(tmp, sizeof(tmp), "%s/.tmp-%ld-%u-%s", dir, (long)getpid(),
	                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED), name);
	if (n < 0 || (size_t)n >= sizeof(path) || m < 0 || (size_t)m >= sizeof(tmp))
		return false;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return false;
	const void *parts[2] = {a, b};
	size_t sizes[2] = {an, bn};
	bool ok = true;
	for (int i = 0; i < 2 && ok; i++)
		for (size_t done = 0; ok && done < sizes[i];) {
			ssize_t w = write(fd, (const char *)parts[i] + done, sizes[i] - done);
			if (w < 0 && errno == EINTR)
				continue;
			ok = w > 0;
			done += ok ? (size_t)w : 0;
		}
	ok = !close(fd) && ok && !rename(tmp, path);
	if (!ok)
		unlink(tmp);
	return ok;
}

/* ---- one entry ---- */

struct io_cache {
	char dir[IO_CACHE_PATH_MAX]; /* ROOT/v1/KEY */
	char root[IO_CACHE_PATH_MAX];
	char url[IO_CACHE_URL_MAX];
	char validator[HTTP_VALIDATOR_MAX]; /* the head's, then the version set's */
	uint64_t size, version;
	bool has_head, has_version, wrote;
	uint64_t budget; /* bytes this process may still write (the bound) */
};

/* ROOT/v1/KEY of url into out. */
static bool entry_dir(const char *root, const char *url, char *out, size_t size)
{
	int n = snprintf(out, size, "%s/v1/%016" PRIx64, root, io_cache_key(url));
	return n > 0 && (size_t)n < size;
}

/* Reads dir/head into the fields given: false when there is none or it is not whole. */
static bool read_head(const char *dir, char *url, size_t url_size, char *validator, uint64_t *size)
{
	char path[IO_CACHE_PATH_MAX];
	char *text = malloc(IO_CACHE_HEAD_MAX); /* not on the stack: 8 KiB of a URL */
	if (!text || (size_t)snprintf(path, sizeof(path), "%s/head", dir) >= sizeof(path)) {
		free(text);
		return false;
	}
	ssize_t n = io_read_small_file(path, text, IO_CACHE_HEAD_MAX);
	bool ok = n > 0 && io_cache_head_parse(text, (size_t)n, url, url_size, validator, HTTP_VALIDATOR_MAX, size);
	free(text);
	return ok;
}

io_cache *io_cache_open(const char *url)
{
	io_cache *c = calloc(1, sizeof(*c));
	if (!c || strlen(url) >= sizeof(c->url) || !ti_io_cache_dir(c->root, sizeof(c->root)) ||
	    !entry_dir(c->root, url, c->dir, sizeof(c->dir))) {
		free(c);
		return NULL;
	}
	strcpy(c->url, url);
	c->budget = io_cache_max();
	char *held = malloc(IO_CACHE_URL_MAX);
	if (held && read_head(c->dir, held, IO_CACHE_URL_MAX, c->validator, &c->size))
		c->has_head = !strcmp(held, url); /* another URL with the same key is a miss */
	free(held);
	return c;
}

bool io_cache_head(const io_cache *c, const char **validator, uint64_t *size)
{
	if (!c || !c->has_head)
		return false;
	*validator = c->validator;
	*size = c->size;
	return true;
}

/* Removes the files of dir that are not version's blocks or the head (NULL version: all of them), and stale temporaries. */
static void remove_others(const char *dir, const uint64_t *version, bool keep_head)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	char prefix[24] = "";
	if (version)
		snprintf(prefix, sizeof(prefix), "%016" PRIx64 "-", *version);
	struct dirent *e;
	time_t now = time(NULL);
	while ((e = readdir(d))) {
		const char *name = e->d_name;
		if (!strcmp(name, ".") || !strcmp(name, "..") || (keep_head && !strcmp(name, "head")))
			continue;
		char path[IO_CACHE_PATH_MAX];
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
			continue;
		struct stat st;
		if (!strncmp(name, ".tmp-", 5)) { /* another process's write in flight, unless it is old */
			if (version && (lstat(path, &st) || now - st.st_mtime < TMP_STALE_SECONDS))
				continue;
		} else if (version && !strncmp(name, prefix, strlen(prefix))) {
			continue;
		}
		unlink(path);
	}
	closedir(d);
}

bool io_cache_set_version(io_cache *c, const char *validator, uint64_t size)
{
	if (!http_validator_usable(validator) || strlen(validator) >= sizeof(c->validator))
		return false;
	c->version = io_cache_version(c->url, validator, size);
	c->has_version = true;
	if (c->has_head && !strcmp(c->validator, validator) && c->size == size) {
		char path[IO_CACHE_PATH_MAX];
		if ((size_t)snprintf(path, sizeof(path), "%s/head", c->dir) < sizeof(path))
			utimensat(AT_FDCWD, path, NULL, 0); /* used now: the last to be evicted */
		return true;
	}
	char *text = malloc(IO_CACHE_HEAD_MAX);
	size_t n = text ? io_cache_head_format(text, IO_CACHE_HEAD_MAX, c->url, validator, size) : 0;
	if (n && make_dirs(c->dir) && write_file(c->dir, "head", text, n, NULL, 0)) {
		remove_others(c->dir, &c->version, true); /* the blocks of the version it replaces */
		c->wrote = true;
	}
	free(text);
	snprintf(c->validator, sizeof(c->validator), "%s", validator);
	c->size = size;
	c->has_head = true;
	return true;
}

/* The name of a block file of the version set. */
static void block_name(const io_cache *c, uint64_t index, char *out, size_t size)
{
	snprintf(out, size, "%016" PRIx64 "-%016" PRIx64, c->version, index);
}

bool io_cache_get(io_cache *c, uint64_t index, unsigned char *buf, size_t len)
{
	if (!c || !c->has_version || len > IO_CACHE_BLOCK)
		return false;
	char name[40], path[IO_CACHE_PATH_MAX];
	block_name(c, index, name, sizeof(name));
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", c->dir, name) >= sizeof(path))
		return false;
	unsigned char *file = malloc(IO_CACHE_HEADER + IO_CACHE_BLOCK + 1);
	if (!file)
		return false;
	ssize_t n = io_read_small_file(path, file, IO_CACHE_HEADER + len + 1); /* one more: a longer file is no block */
	bool ok = n >= 0 && io_cache_block_check(file, (size_t)n, c->version, index, len);
	if (ok)
		memcpy(buf, file + IO_CACHE_HEADER, len);
	else if (n >= 0)
		unlink(path); /* torn or corrupt: never trusted, fetched again */
	free(file);
	return ok;
}

void io_cache_put(io_cache *c, uint64_t index, const unsigned char *data, size_t len)
{
	if (!c || !c->has_version || len > IO_CACHE_BLOCK || c->budget < IO_CACHE_HEADER + len)
		return;
	unsigned char header[IO_CACHE_HEADER];
	char name[40];
	io_cache_block_header(header, c->version, index, data, len);
	block_name(c, index, name, sizeof(name));
	if (make_dirs(c->dir) && write_file(c->dir, name, header, sizeof(header), data, len)) {
		c->budget -= IO_CACHE_HEADER + len;
		c->wrote = true;
	}
}

/* ---- the whole cache: its entries, their use, eviction ---- */

/* Calls each(ctx, dir) for each entry folder of root/v1. */
static void each_entry(const char *root, void (*each)(void *ctx, const char *dir), void *ctx)
{
	char v1[IO_CACHE_PATH_MAX];
	if ((size_t)snprintf(v1, sizeof(v1), "%s/v1", root) >= sizeof(v1))
		return;
	DIR *d = opendir(v1);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strlen(e->d_name) != 16 || strspn(e->d_name, "0123456789abcdef") != 16)
			continue;
		char dir[IO_CACHE_PATH_MAX];
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", v1, e->d_name) < sizeof(dir))
			each(ctx, dir);
	}
	closedir(d);
}

/* What one entry folder holds: its head's version and the bytes of that version's blocks. */
typedef struct entry_info {
	char *url;
	char validator[HTTP_VALIDATOR_MAX];
	uint64_t size, bytes, disk; /* disk: every file's bytes, the other versions' too */
	time_t last_used;
	bool has_head;
} entry_info;

static void entry_read(const char *dir, entry_info *info)
{
	info->has_head = read_head(dir, info->url, IO_CACHE_URL_MAX, info->validator, &info->size);
	struct stat st;
	char path[IO_CACHE_PATH_MAX];
	info->last_used = !stat(dir, &st) ? st.st_mtime : 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/head", dir) < sizeof(path) && !stat(path, &st))
		info->last_used = st.st_mtime;
	char prefix[24];
	snprintf(prefix, sizeof(prefix), "%016" PRIx64 "-",
	         info->has_head ? io_cache_version(info->url, info->validator, info->size) : 0);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path) || lstat(path, &st) ||
		    !S_ISREG(st.st_mode))
			continue;
		info->disk += (uint64_t)st.st_size;
		if (info->has_head && !strncmp(e->d_name, prefix, 17) && (uint64_t)st.st_size > IO_CACHE_HEADER)
			info->bytes += (uint64_t)st.st_size - IO_CACHE_HEADER;
	}
	if (d)
		closedir(d);
}

static void remove_entry(const char *dir)
{
	remove_others(dir, NULL, false);
	rmdir(dir);
}

typedef struct eviction {
	const char *keep;
	char (*dirs)[IO_CACHE_PATH_MAX];
	io_cache_usage *usage;
	size_t n, cap;
	bool failed;
} eviction;

static void eviction_add(void *ctx, const char *dir)
{
	eviction *ev = ctx;
	if (ev->failed)
		return;
	if (ev->n == ev->cap) {
		size_t cap = ev->cap ? 2 * ev->cap : 64;
		void *dirs = realloc(ev->dirs, cap * sizeof(*ev->dirs));
		if (dirs)
			ev->dirs = dirs;
		void *usage = dirs ? realloc(ev->usage, cap * sizeof(*ev->usage)) : NULL;
		if (usage)
			ev->usage = usage;
		if (!dirs || !usage) {
			ev->failed = true;
			return;
		}
		ev->cap = cap;
	}
	entry_info info = {.url = malloc(IO_CACHE_URL_MAX)};
	if (!info.url) {
		ev->failed = true;
		return;
	}
	entry_read(dir, &info);
	free(info.url);
	bool keep = !strcmp(dir, ev->keep);
	if (!info.has_head && !keep && time(NULL) - info.last_used > TMP_STALE_SECONDS) {
		remove_entry(dir); /* no version: a dead writer's, or a corrupt head */
		return;
	}
	snprintf(ev->dirs[ev->n], IO_CACHE_PATH_MAX, "%s", dir);
	ev->usage[ev->n++] = (io_cache_usage){.bytes = info.disk, .last_used = info.last_used, .keep = keep};
}

static void evict(const char *root, const char *keep, uint64_t max)
{
	eviction ev = {.keep = keep};
	each_entry(root, eviction_add, &ev);
	if (!ev.failed && io_cache_plan_eviction(ev.usage, ev.n, max))
		for (size_t i = 0; i < ev.n; i++)
			if (ev.usage[i].evict)
				remove_entry(ev.dirs[i]);
	free(ev.dirs);
	free(ev.usage);
}

void io_cache_close(io_cache *c)
{
	if (!c)
		return;
	if (c->wrote)
		evict(c->root, c->dir, io_cache_max());
	free(c);
}

/* ---- the public half: tinspect cache list|clear ---- */

typedef struct listing {
	ti_io_cache_entry *entries;
	size_t n, cap;
	bool failed;
} listing;

static void listing_add(void *ctx, const char *dir)
{
	listing *l = ctx;
	entry_info info = {.url = malloc(IO_CACHE_URL_MAX)};
	if (!info.url) {
		l->failed = true;
		return;
	}
	entry_read(dir, &info);
	if (info.has_head && l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		ti_io_cache_entry *e = realloc(l->entries, cap * sizeof(*e));
		if (e) {
			l->entries = e;
			l->cap = cap;
		}
	}
	if (!info.has_head || l->n == l->cap) {
		l->failed |= info.has_head;
		free(info.url);
		return;
	}
	ti_io_cache_entry *e = &l->entries[l->n];
	*e = (ti_io_cache_entry){.url = info.url, .validator = strdup(info.validator), .size = info.size,
	                         .bytes = info.bytes, .last_used = (int64_t)info.last_used};
	if (!e->validator) {
		free(info.url);
		l->failed = true;
		return;
	}
	l->n++;
}

static int by_url(const void *a, const void *b)
{
	return strcmp(((const ti_io_cache_entry *)a)->url, ((const ti_io_cache_entry *)b)->url);
}

ti_status ti_io_cache_list(ti_io_cache_entry **out, size_t *count, ti_error *err)
{
	*out = NULL;
	*count = 0;
	char root[IO_CACHE_PATH_MAX];
	if (!ti_io_cache_dir(root, sizeof(root)))
		return TI_OK;
	listing l = {0};
	each_entry(root, listing_add, &l);
	if (l.failed) {
		ti_io_cache_list_free(l.entries, l.n);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	}
	if (l.n)
		qsort(l.entries, l.n, sizeof(*l.entries), by_url);
	*out = l.entries;
	*count = l.n;
	return TI_OK;
}

void ti_io_cache_list_free(ti_io_cache_entry *entries, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		free(entries[i].url);
		free(entries[i].validator);
	}
	free(entries);
}

typedef struct clearing {
	uint64_t entries, bytes;
} clearing;

static void clear_one(void *ctx, const char *dir)
{
	clearing *c = ctx;
	entry_info info = {.url = malloc(IO_CACHE_URL_MAX)};
	if (!info.url)
		return;
	entry_read(dir, &info);
	free(info.url);
	remove_entry(dir);
	c->entries++;
	c->bytes += info.disk;
}

ti_status io_cache_clear(const char *url, uint64_t *entries, uint64_t *bytes, ti_error *err)
{
	*entries = *bytes = 0;
	char root[IO_CACHE_PATH_MAX], dir[IO_CACHE_PATH_MAX];
	if (!ti_io_cache_dir(root, sizeof(root)))
		return TI_FAIL(err, TI_E_INVALID, "no cache folder: neither XDG_CACHE_HOME nor HOME is set");
	clearing c = {0};
	struct stat st;
	if (!url)
		each_entry(root, clear_one, &c);
	else if (entry_dir(root, url, dir, sizeof(dir)) && !stat(dir, &st))
		clear_one(&c, dir);
	*entries = c.entries;
	*bytes = c.bytes;
	return TI_OK;
}
