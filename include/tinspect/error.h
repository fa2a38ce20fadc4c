/*
 * error.h - what failed, and where.
 *
 * Every fallible library function returns a ti_status and takes a ti_error *
 * as its last argument. On failure the error says what failed (message), in
 * which input (member: an archive record such as 'archive/data.pkl'), where in
 * it (offset: a byte offset into that member, or -1), and which line of our
 * source raised it (like SQLite's SQLITE_CORRUPT_BKPT), for bug reports.
 * The library never prints and never exits: the caller formats the error.
 * A ti_error owns no heap memory; it may be copied and discarded freely.
 */
#ifndef TINSPECT_ERROR_H
#define TINSPECT_ERROR_H

#include <stddef.h>
#include <stdint.h>

typedef enum ti_status {
	TI_OK = 0,
	TI_E_CORRUPT,     /* input is malformed: bad zip, bad pickle, bad shape */
	TI_E_UNSUPPORTED, /* input is well formed but of a kind we do not read */
	TI_E_LIMIT,       /* input exceeds a resource ceiling (depth, length, count) */
	TI_E_IO,          /* the operating system failed us: open, read, write */
	TI_E_NOMEM,       /* an allocation failed */
	TI_E_INVALID,     /* the caller passed a bad argument (a usage error) */
	TI_E_SHAPE,       /* a model's shapes do not line up: PyTorch would raise */
	TI_E_NETWORK      /* a server or the network failed us: an HTTP error, a timeout, a file that changed */
} ti_status;

#define TI_ERROR_MESSAGE_MAX 512
#define TI_ERROR_MEMBER_MAX 160

typedef struct ti_error {
	ti_status code;
	char message[TI_ERROR_MESSAGE_MAX];
	char member[TI_ERROR_MEMBER_MAX]; /* "" when the error is not inside a member */
	int64_t offset;                   /* byte offset in member, or -1 */
	const char *source_file;          /* our source that raised it */
	int source_line;
} ti_error;

/* Resets err to "no error". */
void ti_error_clear(ti_error *err);

/*
 * Records an error and returns code, so that raising reads as
 * `return TI_FAIL(err, TI_E_CORRUPT, "bad opcode 0x%02x", op);`.
 * The member and offset are left as they were: callers that know them set
 * them with ti_error_at() on the way out.
 */
ti_status ti_error_set(ti_error *err, ti_status code, const char *file, int line,
                       const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
#define TI_FAIL(err, code, ...) ti_error_set((err), (code), __FILE__, __LINE__, __VA_ARGS__)

/* Sets the location (member may be NULL to keep it; offset -1 keeps it). */
void ti_error_at(ti_error *err, const char *member, int64_t offset);

/*
 * Writes the message with its location, git style: what failed first, the
 * location last, no full stop. Example:
 *   bad pickle opcode 0xff in 'archive/data.pkl' at offset 1234
 */
void ti_error_format(const ti_error *err, char *buf, size_t size);

/* A stable lowercase name for a status ("corrupt input", "limit exceeded"). */
const char *ti_status_name(ti_status code);

#endif
