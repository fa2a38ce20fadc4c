/*
 * zip_lazy.c - libzip, opened when a command first needs it.
 *
 * Reading a torch checkpoint's zip never calls libzip (zip_archive.c walks the
 * central directory itself); libzip inflates compressed members (npz, scan)
 * and opens archives in memory. Linked, it would be mapped by every command
 * with what it links (libcrypto, libbz2, libz): 1.5 MB of resident pages and
 * thousands of relocations at every start, for nothing.
 *
 * So tinspect is not linked against libzip. This file defines the libzip
 * functions the rest of the code calls, with libzip's own prototypes from
 * <zip.h>: each opens the library on first use (dlopen, once) and forwards.
 * Only the functions that make an archive (zip_open, zip_open_from_source,
 * zip_source_buffer_create) can be reached before the library is open; when
 * it cannot be opened they fail as libzip does, and the zip_error_*
 * functions the callers then use to word the failure say why.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zip.h>

/* Debian's runtime package gives the first; the others in case of a rebuild. */
static const char *const zip_names[] = {"libzip.so.4", "libzip.so.5", "libzip.so"};
/* names the library instead; "none" opens none (what a machine without it sees) */
#define ZIP_LIBRARY_ENV "TINSPECT_LIBZIP"

/* Every function forwarded: X(return type, name, parameters, arguments). */
#define ZIP_FUNCTIONS(X)                                                                                            \
	X(void, zip_discard, (zip_t * za), (za))                                                                   \
	X(int, zip_error_code_zip, (const zip_error_t *e), (e))                                                    \
	X(void, zip_error_fini, (zip_error_t * e), (e))                                                            \
	X(void, zip_error_init, (zip_error_t * e), (e))                                                            \
	X(void, zip_error_init_with_code, (zip_error_t * e, int code), (e, code))                                  \
	X(const char *, zip_error_strerror, (zip_error_t * e), (e))                                                \
	X(int, zip_fclose, (zip_file_t * f), (f))                                                                  \
	X(zip_error_t *, zip_file_get_error, (zip_file_t * f), (f))                                                \
	X(const char *, zip_file_strerror, (zip_file_t * f), (f))                                                  \
	X(zip_file_t *, zip_fopen_index, (zip_t * za, zip_uint64_t i, zip_flags_t fl), (za, i, fl))                \
	X(zip_int64_t, zip_fread, (zip_file_t * f, void *buf, zip_uint64_t n), (f, buf, n))                        \
	X(zip_error_t *, zip_get_error, (zip_t * za), (za))                                                        \
	X(zip_t *, zip_open, (const char *path, int flags, int *errorp), (path, flags, errorp))                    \
	X(zip_t *, zip_open_from_source, (zip_source_t * src, int flags, zip_error_t *e), (src, flags, e))         \
	X(zip_source_t *, zip_source_buffer_create, (const void *data, zip_uint64_t n, int freep, zip_error_t *e), \
	  (data, n, freep, e))                                                                                     \
	X(void, zip_source_free, (zip_source_t * src), (src))                                                      \
	X(const char *, zip_strerror, (zip_t * za), (za))

#define ZIP_POINTER(ret, name, params, args) ret(*name) params;
static struct {
	pthread_once_t once;
	struct {
		ZIP_FUNCTIONS(ZIP_POINTER)
	} fn;
	char why[200]; /* why the library could not be opened; empty when it was */
} lib = {.once = PTHREAD_ONCE_INIT};

#define ZIP_LOOKUP(ret, name, params, args)                                        \
	if (ok && !(*(void **)&lib.fn.name = dlsym(handle, #name))) {              \
		snprintf(lib.why, sizeof(lib.why), "libzip has no %s", #name);     \
		ok = 0;                                                            \
	}

static void zip_load(void)
{
	const char *path = getenv(ZIP_LIBRARY_ENV);
	void *handle = NULL;
	if (path && *path && strcmp(path, "none"))
		handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	for (size_t i = 0; !(path && *path) && i < sizeof(zip_names) / sizeof(zip_names[0]) && !handle; i++)
		handle = dlopen(zip_names[i], RTLD_NOW | RTLD_LOCAL);
	if (!handle && path && !strcmp(path, "none")) {
		snprintf(lib.why, sizeof(lib.why), "libzip is not loaded (" ZIP_LIBRARY_ENV "=none)");
		return;
	}
	if (!handle) {
		const char *e = dlerror();
		snprintf(lib.why, sizeof(lib.why), "cannot load libzip (%s): %s", path && *path ? path : zip_names[0],
		         e ? e : "not found");
		return;
	}
	int ok = 1;
	ZIP_FUNCTIONS(ZIP_LOOKUP)
	if (!ok)
		memset(&lib.fn, 0, sizeof(lib.fn));
}

/* Whether libzip is open, opening it the first time. */
static int zip_ready(void)
{
	pthread_once(&lib.once, zip_load);
	return lib.why[0] == 0;
}

/* The functions reachable before an archive exists: they fail, as libzip would, when it cannot be opened. */
zip_t *zip_open(const char *path, int flags, int *errorp)
{
	if (zip_ready())
		return lib.fn.zip_open(path, flags, errorp);
	if (errorp)
		*errorp = ZIP_ER_INTERNAL;
	return NULL;
}

zip_t *zip_open_from_source(zip_source_t *src, int flags, zip_error_t *e)
{
	if (zip_ready())
		return lib.fn.zip_open_from_source(src, flags, e);
	if (e)
		*e = (zip_error_t){.zip_err = ZIP_ER_INTERNAL};
	return NULL;
}

zip_source_t *zip_source_buffer_create(const void *data, zip_uint64_t n, int freep, zip_error_t *e)
{
	if (zip_ready())
		return lib.fn.zip_source_buffer_create(data, n, freep, e);
	if (e)
		*e = (zip_error_t){.zip_err = ZIP_ER_INTERNAL};
	return NULL;
}

/* A zip_error_t is the caller's own: without the library, kept and worded here. */
void zip_error_init(zip_error_t *e)
{
	if (zip_ready())
		lib.fn.zip_error_init(e);
	else
		*e = (zip_error_t){0};
}

void zip_error_init_with_code(zip_error_t *e, int code)
{
	if (zip_ready())
		lib.fn.zip_error_init_with_code(e, code);
	else
		*e = (zip_error_t){.zip_err = code};
}

void zip_error_fini(zip_error_t *e)
{
	if (zip_ready())
		lib.fn.zip_error_fini(e);
}

int zip_error_code_zip(const zip_error_t *e)
{
	return zip_ready() ? lib.fn.zip_error_code_zip(e) : e->zip_err;
}

const char *zip_error_strerror(zip_error_t *e)
{
	return zip_ready() ? lib.fn.zip_error_strerror(e) : lib.why;
}

/* NULL is a source libzip frees without complaint: one that failed to be made. */
void zip_source_free(zip_source_t *src)
{
	if (src)
		lib.fn.zip_source_free(src);
}

/* The rest take an archive, a file or a source that only an open library made. */
#define ZIP_FORWARD(ret, name, params, args) \
	ret name params { return lib.fn.name args; }
#define ZIP_FORWARD_VOID(ret, name, params, args) \
	void name params { lib.fn.name args; }

ZIP_FORWARD_VOID(void, zip_discard, (zip_t * za), (za))
ZIP_FORWARD(int, zip_fclose, (zip_file_t * f), (f))
ZIP_FORWARD(zip_error_t *, zip_file_get_error, (zip_file_t * f), (f))
ZIP_FORWARD(const char *, zip_file_strerror, (zip_file_t * f), (f))
ZIP_FORWARD(zip_file_t *, zip_fopen_index, (zip_t * za, zip_uint64_t i, zip_flags_t fl), (za, i, fl))
ZIP_FORWARD(zip_int64_t, zip_fread, (zip_file_t * f, void *buf, zip_uint64_t n), (f, buf, n))
ZIP_FORWARD(zip_error_t *, zip_get_error, (zip_t * za), (za))
ZIP_FORWARD(const char *, zip_strerror, (zip_t * za), (za))
