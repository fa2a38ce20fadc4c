/*
 * pickle.h - a pickle machine that builds values and never executes.
 *
 * ti_pickle_load() runs Python's pickle opcodes (protocols 0 to 5) over a
 * byte buffer and returns the value STOP leaves. GLOBAL and STACK_GLOBAL
 * make TI_GLOBAL references; REDUCE, NEWOBJ, NEWOBJ_EX, INST and OBJ make
 * TI_OBJECT records of the call; BUILD records state. Hooks let a caller
 * interpret known globals (the torch layer turns _rebuild_tensor_v2 calls
 * into tensors) and persistent ids; without hooks the raw structure is kept.
 *
 * Bytes are read as CPython's C unpickler reads the file torch.load hands
 * it, frames and all (pickle.c says how that differs from pickletools).
 *
 * All values are allocated in the caller's arena. Every resource has a
 * ceiling (ti_pickle_limits); passing one is an error that names it.
 * Errors carry the byte offset of the opcode that failed.
 */
#ifndef TINSPECT_PICKLE_H
#define TINSPECT_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "tinspect/arena.h"
#include "tinspect/error.h"
#include "tinspect/value.h"

typedef enum ti_call_kind { TI_CALL_REDUCE, TI_CALL_NEWOBJ, TI_CALL_INST } ti_call_kind;

typedef struct ti_pickle_hooks {
	void *ctx;
	/*
	 * Tells what a global is; may return NULL. Sees every GLOBAL/STACK_GLOBAL/INST
	 * but the repeats of one it recognised: that global is made once per
	 * pickle and shared, so the answer must depend on module and name alone.
	 */
	const struct ti_known_global *(*lookup)(void *ctx, const char *module,
	                                        const char *name, int64_t offset);
	/*
	 * Interprets a call; leaves *out NULL to let the machine record it as an
	 * object. A value it returns may hold args' items only through the
	 * containers of value_build.h, which count their references: once the
	 * call is made, args may go back to the arena.
	 */
	ti_status (*call)(void *ctx, ti_arena *arena, ti_value *callable, ti_value *args,
	                  ti_call_kind how, ti_value **out, ti_error *err);
	/* Interprets BUILD; sets *handled to 1 if it did. */
	ti_status (*build)(void *ctx, ti_arena *arena, ti_value *object, ti_value *state,
	                   int *handled, ti_error *err);
	/* Interprets a persistent id; leaves *out NULL to keep a TI_PERSID. */
	ti_status (*persistent_load)(void *ctx, ti_arena *arena, ti_value *pid,
	                             ti_value **out, ti_error *err);
	/*
	 * For scanning: sees every global as it is named (GLOBAL, STACK_GLOBAL,
	 * INST, EXT*: target is the TI_GLOBAL), every call (REDUCE, NEWOBJ,
	 * NEWOBJ_EX, INST, OBJ: target is the callable), every BUILD (the
	 * object built) and every persistent id (PERSID, BINPERSID: the id),
	 * before anything interprets them, with the opcode and
	 * its offset; and a STACK_GLOBAL whose operands are not strings, with
	 * target NULL, before the load fails on it. Failing stops the load.
	 */
	ti_status (*observe)(void *ctx, uint8_t opcode, const ti_value *target, int64_t offset,
	                     ti_error *err);
	/*
	 * For scanning a call with what it is given: when set, sees every call
	 * (REDUCE, NEWOBJ, NEWOBJ_EX, INST, OBJ) in observe's place, with the
	 * tuple of its arguments too.
	 */
	ti_status (*observe_call)(void *ctx, uint8_t opcode, const ti_value *callable, const ti_value *args,
	                          int64_t offset, ti_error *err);
	/*
	 * For scanning: where CPython's C unpickler (the one torch.load runs)
	 * and a by-the-book reader (pickletools, the pure-Python unpickler)
	 * part ways: an opcode's argument that crosses the end of a FRAME, a
	 * FRAME opened inside another. what says how, offset is the opcode's.
	 * The load goes on as the C unpickler reads; failing stops it.
	 */
	ti_status (*diverge)(void *ctx, uint8_t opcode, const char *what, int64_t offset, ti_error *err);
} ti_pickle_hooks;

typedef struct ti_pickle_limits {
	size_t stack_max;   /* values on the stack, all marks together */
	size_t marks_max;   /* open MARKs, i.e. nesting depth while loading */
	size_t memo_max;    /* memo entries */
	size_t string_max;  /* bytes in one str/bytes/bigint */
	size_t items_max;   /* items in one container */
} ti_pickle_limits;

void ti_pickle_limits_default(ti_pickle_limits *limits);

/*
 * Loads one pickle from data[0..size). hooks and limits may be NULL.
 * On success *out is the value and *consumed the bytes read up to STOP.
 */
ti_status ti_pickle_load(const uint8_t *data, size_t size, ti_arena *arena,
                         const ti_pickle_hooks *hooks, const ti_pickle_limits *limits,
                         ti_value **out, size_t *consumed, ti_error *err);

/*
 * A pickle that is not in memory: read fills buf with the n bytes at offset
 * (always within size) or fails with err set. The machine reads it in
 * windows of 64 KiB (more for a longer argument), twice over.
 */
typedef struct ti_pickle_source {
	uint64_t size;
	ti_status (*read)(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *err);
	void *ctx;
	/* Optional: the n bytes at offset will be read soon, in pieces (ti_io_hint); NULL when nothing gains. */
	void (*hint)(void *ctx, uint64_t offset, uint64_t n);
} ti_pickle_source;

ti_status ti_pickle_load_source(const ti_pickle_source *src, ti_arena *arena,
                                const ti_pickle_hooks *hooks, const ti_pickle_limits *limits,
                                ti_value **out, size_t *consumed, ti_error *err);

/* The name of an opcode ("BINUNICODE"), or NULL if the byte is none. */
const char *ti_pickle_opcode_name(uint8_t opcode);

#endif
