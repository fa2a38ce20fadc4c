/*
 * symdim.h - sizes that may be symbolic: 8, N, 2*N, (T - 1)//2 + 1.
 *
 * A ti_dim is an integer, or (sym != NULL) a polynomial with integer
 * coefficients over atoms: named symbols ("N") and floor divisions of a
 * polynomial by a positive integer. Polynomials are kept canonical (like terms
 * combined, terms sorted, exact divisions done), so two dims are equal exactly
 * when their canonical forms are equal, and a dim whose polynomial reduces to a
 * constant is stored as that integer. Symbols stand for sizes: each is assumed
 * to be at least 1, which is what lets `N + 2 >= 3` be proved.
 *
 * Everything lives in the arena of a ti_symctx and is immutable. Arithmetic
 * never fails in a way the caller must check at once: an overflow, a division
 * by zero or a polynomial past the term ceiling sets ctx->status (sticky) and
 * yields 0; callers check ti_sym_ok() at the end of a step.
 */
#ifndef TINSPECT_SYMDIM_H
#define TINSPECT_SYMDIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/arena.h"
#include "tinspect/error.h"

typedef struct ti_sym ti_sym;

typedef struct ti_dim {
	int64_t value;     /* the size, when sym == NULL */
	const ti_sym *sym; /* a canonical polynomial, never a constant */
} ti_dim;

#define TI_SYM_MAX_NAME 64    /* bytes in a symbol's name */
#define TI_SYM_MAX_TERMS 64   /* a polynomial past this is refused (limit) */
#define TI_SYM_MAX_ATOMS 4096 /* distinct symbols and floor divisions per context */
#define TI_SYM_MAX_ASSUMPTIONS 256

typedef struct ti_sym_atom ti_sym_atom;

typedef struct ti_symctx {
	ti_arena *arena;
	ti_sym_atom **atoms;
	size_t atom_count, atom_capacity;
	/* --bind NAME=VALUE: symbols replaced by integers wherever they appear */
	const char **bound_names;
	int64_t *bound_values;
	size_t bound_count;
	/* facts a rule assumed because it could not prove them ("T == 5") */
	const char *assumptions[TI_SYM_MAX_ASSUMPTIONS];
	size_t assumption_count;
	ti_status status; /* sticky: the first failure */
	char message[TI_ERROR_MESSAGE_MAX];
} ti_symctx;

void ti_symctx_init(ti_symctx *ctx, ti_arena *arena);
/* Binds a symbol to an integer; later ti_dim_symbol(name) yields it. */
ti_status ti_symctx_bind(ti_symctx *ctx, const char *name, int64_t value, ti_error *err);
/* TI_E_INVALID naming the symbols there are when a bound symbol was never used. */
ti_status ti_symctx_check_bound(const ti_symctx *ctx, ti_error *err);
/* TI_OK, or the first failure with its message copied into err. */
ti_status ti_sym_ok(const ti_symctx *ctx, ti_error *err);

static inline ti_dim ti_dim_int(int64_t v) { return (ti_dim){v, NULL}; }
static inline bool ti_dim_is_int(ti_dim d) { return d.sym == NULL; }
/* A symbol by name (a C identifier), or its bound value. */
ti_dim ti_dim_symbol(ti_symctx *ctx, const char *name);

ti_dim ti_dim_add(ti_symctx *ctx, ti_dim a, ti_dim b);
ti_dim ti_dim_sub(ti_symctx *ctx, ti_dim a, ti_dim b);
ti_dim ti_dim_mul(ti_symctx *ctx, ti_dim a, ti_dim b);
/* Python's a // b and a % b; b must be a positive integer when a is symbolic. */
ti_dim ti_dim_floordiv(ti_symctx *ctx, ti_dim a, ti_dim b);
ti_dim ti_dim_mod(ti_symctx *ctx, ti_dim a, ti_dim b);
/* -(-a // b): ceil_mode pooling, split counts. */
ti_dim ti_dim_ceildiv(ti_symctx *ctx, ti_dim a, ti_dim b);
/* a / b when b divides a exactly (a reshape's -1); sets *exact false (and yields 0) otherwise. */
ti_dim ti_dim_exactdiv(ti_symctx *ctx, ti_dim a, ti_dim b, bool *exact);

typedef enum ti_cmp { TI_CMP_EQ, TI_CMP_NE, TI_CMP_LT, TI_CMP_LE, TI_CMP_GT, TI_CMP_GE } ti_cmp;
typedef enum ti_truth { TI_FALSE = 0, TI_TRUE = 1, TI_UNKNOWN = 2 } ti_truth;

/* Decides a CMP b when it can be proved either way (symbols are >= 1). */
ti_truth ti_dim_compare(ti_symctx *ctx, ti_dim a, ti_cmp cmp, ti_dim b);
/*
 * Like ti_dim_compare, but a fact that cannot be decided is assumed true and
 * recorded ("assuming T == 5"); returns false only when it is proved false.
 */
bool ti_dim_assume(ti_symctx *ctx, ti_dim a, ti_cmp cmp, ti_dim b);
/* Exactly equal (same integer or same canonical polynomial). */
bool ti_dim_same(ti_dim a, ti_dim b);

/*
 * Parses a formula as ti_dim_format writes it: integers, symbol names, + - *
 * // % and parentheses ("N*197", "(T - 1)//2 + 1"). False when it is not one;
 * arithmetic failures (division by zero) are the context's sticky status.
 */
bool ti_dim_parse(ti_symctx *ctx, const char *text, ti_dim *out);
/* Python syntax: "8", "N", "2*N", "(T - 1)//2 + 1". Returns buf; truncates with "...". */
const char *ti_dim_format(ti_dim d, char *buf, size_t size);
/* The same, copied into the context's arena (NULL when out of memory). */
const char *ti_dim_str(ti_symctx *ctx, ti_dim d);

#endif
