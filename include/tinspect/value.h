/*
 * value.h - what a pickle builds: small tagged values.
 *
 * Values are made by the pickle machine (pickle.h) and the torch interpreter
 * (checkpoint.h) inside an arena, and live exactly as long as it. They are
 * immutable once the pickle has finished. Kinds come from untrusted input, so
 * accessors return a status instead of asserting; a value graph may share
 * nodes and may even contain cycles (a list appended to itself), so walkers
 * must bound their depth.
 *
 * Nothing here is ever executed: a reference to any Python callable is a
 * TI_GLOBAL that records its module and name, and calling it makes a
 * TI_OBJECT that records the callable, its arguments and its state.
 */
#ifndef TINSPECT_VALUE_H
#define TINSPECT_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/dtype.h"
#include "tinspect/error.h"

typedef enum ti_kind {
	TI_NONE, TI_BOOL, TI_INT, TI_BIGINT, TI_FLOAT, TI_COMPLEX,
	TI_STR, TI_BYTES,
	TI_TUPLE, TI_LIST, TI_DICT, TI_SET, TI_FROZENSET,
	TI_GLOBAL,  /* a reference to module.name, never resolved to code */
	TI_OBJECT,  /* the result of calling a callable we do not interpret */
	TI_PERSID,  /* a persistent id no one interpreted */
	TI_TENSOR,  /* a tensor's metadata (tensor.h) */
	TI_STORAGE, /* a storage from a persistent id (tensor.h) */
	TI_DEVICE,  /* torch.device: str holds "cuda:0" */
	TI_MARK,    /* the pickle machine's mark; never in a finished value */
	TI_KIND_COUNT
} ti_kind;

/* Flags refine a kind: which Python type a dict, tuple or bytes came from. */
enum {
	TI_F_ORDERED = 1u << 0,   /* dict: collections.OrderedDict */
	TI_F_TORCH_SIZE = 1u << 1,/* tuple: torch.Size */
	TI_F_BYTEARRAY = 1u << 2, /* bytes: bytearray */
	TI_F_NEWOBJ = 1u << 3,    /* object: made by NEWOBJ (cls.__new__) */
	TI_F_INST = 1u << 4       /* object: made by protocol 0/1 INST or OBJ */
};

typedef struct ti_value ti_value;
typedef struct ti_tensor ti_tensor;
typedef struct ti_storage ti_storage;
struct ti_known_global;

/* Items of a tuple, list, set or frozenset. A tuple's array is exactly its length. */
typedef struct ti_seq {
	ti_value **items;
	uint32_t count, capacity;
} ti_seq;

typedef struct ti_dict {
	ti_value **keys, **values;
	size_t count, capacity;
	/*
	 * Each key's hash (util/strsort.h) while every key is a str, made as it
	 * is pushed, when the key is still in the cache; NULL once one is not.
	 * Naming a state_dict's 20,000 entries then reads no key to find repeats.
	 */
	uint32_t *hashes;
	size_t hashes_capacity;
	ti_value *attributes; /* a dict set by BUILD, e.g. {'_metadata': ...}; or NULL */
} ti_dict;

typedef struct ti_global {
	const char *module, *name; /* builtins, not __builtin__ */
	int64_t offset;            /* of the opcode that named it (a known global: the first) */
	const struct ti_known_global *known; /* NULL if we know nothing of it */
} ti_global;

typedef struct ti_object {
	ti_value *callable;   /* usually a TI_GLOBAL */
	ti_value *args;       /* a tuple */
	ti_value *kwargs;     /* NEWOBJ_EX keyword arguments, or NULL */
	ti_value *state;      /* set by BUILD, or NULL */
	ti_value *list_items; /* a list, if APPEND(S) went to it, or NULL */
	ti_value *dict_items; /* a dict, if SETITEM(S) went to it, or NULL */
} ti_object;

/*
 * 24 bytes: what is rare or big (a dict's arrays, an object's parts, a
 * global's names) sits behind a pointer, so the many small values of a
 * torch pickle stay small.
 */
struct ti_value {
	ti_kind kind;
	uint16_t flags;
	uint16_t refs; /* the pickle machine's count of references (see pickle.c); no meaning after */
	union {
		bool boolean;
		int64_t integer;
		double real;
		struct { double re, im; } complex;
		/* str (UTF-8), bytes, and bigint (little-endian two's complement) */
		struct { const char *data; size_t size; } bytes;
		ti_seq seq;   /* tuple, list, set, frozenset */
		/* Never NULL: dicts with no items and no attributes share one empty
		 * ti_dict, so a dict changes only through value_build.h. */
		ti_dict *dict;
		ti_global *global;
		ti_object *object;
		ti_value *persid;
		ti_tensor *tensor;
		ti_storage *storage;
	} as;
};

/* Queries: each returns TI_OK or TI_E_CORRUPT with a message naming the kinds. */
ti_status ti_value_as_int(const ti_value *v, int64_t *out, ti_error *err);
ti_status ti_value_as_bool(const ti_value *v, bool *out, ti_error *err);
ti_status ti_value_as_float(const ti_value *v, double *out, ti_error *err); /* int too */
ti_status ti_value_as_str(const ti_value *v, const char **out, ti_error *err);
/* Tuple or list. */
ti_status ti_value_as_seq(const ti_value *v, const ti_seq **out, ti_error *err);
/* A tuple or list of ints with at most max_count items. */
ti_status ti_value_as_int_array(const ti_value *v, int64_t *out, size_t max_count,
                                size_t *count, ti_error *err);

/* Python's name for the value's type: "int", "collections.OrderedDict", "torch.Size". */
const char *ti_value_type_name(const ti_value *v, char *buf, size_t size);

/*
 * A Python-like repr, cut to at most max_chars characters (ending in "...")
 * (0: only the buffer limits it), nesting cut at 32 levels. Returns buf. Cycles print as "[...]" as Python does.
 */
const char *ti_value_repr(const ti_value *v, char *buf, size_t size, size_t max_chars);

/*
 * Python's str(v), whole, as a dict key becomes part of a name: a str is
 * itself, a class "<class 'module.Name'>", anything else its repr. Writes
 * at most size - 1 bytes and a NUL, as snprintf does, and returns the
 * length the whole text has: call again with more room when it is size or more.
 */
size_t ti_value_str(const ti_value *v, char *buf, size_t size);

/* Python's float repr: the shortest digits that read back as the same double. */
void ti_format_float(double d, char *buf, size_t size);

/* Dict lookup by str key; NULL if absent. */
const ti_value *ti_dict_get(const ti_value *dict, const char *key);

const char *ti_kind_name(ti_kind kind);

/*
 * The name of a value that is the pickle's root itself (torch.save(tensor)):
 * the table, the JSON and a converted file all call it this.
 */
#define TI_ROOT_NAME "(root)"

/* A named thing in a checkpoint: a tensor (value->kind == TI_TENSOR) or another value. */
typedef struct ti_entry {
	const char *name;       /* dotted path: "optimizer.state.0.exp_avg"; TI_ROOT_NAME for the root itself */
	const ti_value *value;
} ti_entry;

#endif
