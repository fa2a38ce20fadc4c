/*
 * pickle_writer.h - a protocol-2 pickle emitter (library-internal).
 *
 * A ti_pickler appends opcodes to a growing byte buffer that it owns, with
 * the encodings CPython's pickle.py chooses at protocol 2 (the smallest
 * BININT form, LONG1 past 32 bits, BINUNICODE for every str, BINPUT and
 * LONG_BINPUT by memo index), so that a caller that makes the same calls in
 * the same order as the Python pickler would gets the same bytes. It knows
 * nothing of objects: memoizing is explicit (ti_pickler_put after the value
 * is on the stack, as Pickler.memoize does), and so is reusing (ti_pickler_get).
 *
 * Errors are sticky: the first failure (the buffer would pass its ceiling,
 * or malloc failed) is recorded in the ti_error given to ti_pickler_init,
 * every later call does nothing, and ti_pickler_status() reports it. So a
 * caller emits a whole pickle and checks once, as with git's strbuf.
 * ti_pickler_release() frees the buffer; ti_pickler_take() hands it over.
 */
#ifndef TINSPECT_FORMAT_PICKLE_WRITER_H
#define TINSPECT_FORMAT_PICKLE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/error.h"

/* The opcodes without an argument that a torch state dict needs (pickletools names). */
enum {
	TI_PICKLER_MARK = '(',
	TI_PICKLER_STOP = '.',
	TI_PICKLER_BINPERSID = 'Q',
	TI_PICKLER_REDUCE = 'R',
	TI_PICKLER_BUILD = 'b',
	TI_PICKLER_EMPTY_DICT = '}',
	TI_PICKLER_EMPTY_TUPLE = ')',
	TI_PICKLER_SETITEM = 's',
	TI_PICKLER_SETITEMS = 'u',
	TI_PICKLER_TUPLE = 't',
	TI_PICKLER_TUPLE1 = 0x85,
	TI_PICKLER_TUPLE2 = 0x86,
	TI_PICKLER_TUPLE3 = 0x87,
	TI_PICKLER_NEWTRUE = 0x88,
	TI_PICKLER_NEWFALSE = 0x89
};

typedef struct ti_pickler {
	uint8_t *data;
	size_t size, capacity;
	size_t max;          /* ceiling on size */
	uint32_t memo_count; /* the index the next ti_pickler_put assigns */
	ti_status status;    /* TI_OK until a call fails */
	ti_error *err;       /* where the first failure is recorded */
} ti_pickler;

/* Starts an empty pickle that may grow to max bytes; failures go to err. */
void ti_pickler_init(ti_pickler *p, size_t max, ti_error *err);
void ti_pickler_release(ti_pickler *p);
/* Gives the caller the buffer (malloc'd, *size bytes) and leaves p empty; NULL after a failure. */
uint8_t *ti_pickler_take(ti_pickler *p, size_t *size);

/* TI_OK, or the first failure's status. */
ti_status ti_pickler_status(const ti_pickler *p);

/* PROTO n. */
void ti_pickler_proto(ti_pickler *p, int protocol);
/* One of the TI_PICKLER_* opcodes above. */
void ti_pickler_op(ti_pickler *p, uint8_t opcode);
/* GLOBAL 'module\nname\n'. */
void ti_pickler_global(ti_pickler *p, const char *module, const char *name);
/* BINUNICODE: len bytes of UTF-8. */
void ti_pickler_str(ti_pickler *p, const char *s, size_t len);
/* BININT1, BININT2, BININT or LONG1, as save_long() chooses. */
void ti_pickler_int(ti_pickler *p, int64_t v);
/* NEWTRUE or NEWFALSE. */
void ti_pickler_bool(ti_pickler *p, bool v);
/* BINPUT or LONG_BINPUT of the next memo index; returns that index. */
uint32_t ti_pickler_put(ti_pickler *p);
/* BINGET or LONG_BINGET. */
void ti_pickler_get(ti_pickler *p, uint32_t index);

#endif
