/*
 * symdim.c - symbolic sizes as canonical polynomials (see symdim.h).
 *
 * A ti_sym is a sorted array of terms; a term is a coefficient times a
 * monomial, and a monomial is a sorted multiset of atom ids (its degree is its
 * size, 0 for the constant term). Atoms (symbols and floor divisions) are
 * interned in the context, so ids compare for equality and their interning
 * order gives a deterministic term order: higher degree first, then atom ids
 * lexicographically, the constant last.
 *
 * Work is done in "polys": term arrays on the stack, sorted and combined when
 * done. Only a finished, canonical, non-constant result is copied to the arena.
 */
#include "tinspect/symdim.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	MAX_DEGREE = 16,  /* atoms in one monomial; a 6-d tensor's numel has degree 6 */
	MAX_NESTING = 32, /* floor divisions inside floor divisions */
	MAX_NAME = TI_SYM_MAX_NAME,
	SUM_TERMS = 2 * TI_SYM_MAX_TERMS + 2,
	/* the partial sums of a product may hold terms that cancel later */
	PRODUCT_TERMS = 4 * TI_SYM_MAX_TERMS,
	STR_MAX = 4096, /* ti_dim_str and assumptions: longer text is cut with "..." */
};

/* Atom ids are stored in 16 bits. */
_Static_assert(TI_SYM_MAX_ATOMS <= UINT16_MAX, "atom ids must fit in uint16_t");

typedef struct sym_term {
	int64_t coef;
	uint16_t degree;            /* 0 for the constant term */
	uint16_t atoms[MAX_DEGREE]; /* ids into the atom table, ascending */
} sym_term;

struct ti_sym {
	/*
	 * The context's atom table when this was made. It holds every id used
	 * here: a grown table is a new array, and old ones stay valid in the
	 * arena, so ti_dim_format needs no context.
	 */
	ti_sym_atom *const *atoms;
	size_t count;
	sym_term terms[];
};

typedef enum atom_kind { ATOM_SYMBOL, ATOM_FLOORDIV } atom_kind;

struct ti_sym_atom {
	atom_kind kind;
	const char *name;    /* ATOM_SYMBOL */
	const ti_sym *inner; /* ATOM_FLOORDIV: canonical, never a constant */
	int64_t divisor;     /* ATOM_FLOORDIV: at least 2 */
	bool has_lower;      /* the value is known to be >= lower */
	int64_t lower;
	int depth; /* floor divisions around the deepest symbol: 0 for a symbol */
};

typedef struct poly {
	size_t count, capacity;
	sym_term *terms;
} poly;

#define POLY(buf) ((poly){0, sizeof(buf) / sizeof((buf)[0]), (buf)})

static const ti_dim zero = {0, NULL};

/* ---- errors ---- */

__attribute__((format(printf, 3, 4))) static bool fail(ti_symctx *ctx, ti_status code, const char *fmt, ...)
{
	if (ctx->status == TI_OK) {
		ctx->status = code;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(ctx->message, sizeof(ctx->message), fmt, ap);
		va_end(ap);
	}
	return false;
}

static bool overflow(ti_symctx *ctx) { return fail(ctx, TI_E_LIMIT, "size arithmetic overflows int64"); }
static bool out_of_memory(ti_symctx *ctx) { return fail(ctx, TI_E_NOMEM, "out of memory for symbolic sizes"); }
static bool division_by_zero(ti_symctx *ctx) { return fail(ctx, TI_E_SHAPE, "division by zero"); }

/* ---- integers, with Python's rounding ---- */

/* Python's a // b; b != 0 and not (INT64_MIN, -1). */
static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if (a % b != 0 && ((a % b < 0) != (b < 0)))
		q--;
	return q;
}

static uint64_t magnitude(int64_t v) { return v < 0 ? 0 - (uint64_t)v : (uint64_t)v; }

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/*
 * Bounds that may saturate only in the safe direction: a lower bound that
 * grows past INT64_MAX may stay INT64_MAX (still a lower bound); one that falls
 * past INT64_MIN is no bound at all. Upper bounds the other way round.
 */
static bool lower_add(int64_t a, int64_t b, int64_t *out)
{
	if (!__builtin_add_overflow(a, b, out))
		return true;
	*out = INT64_MAX;
	return b > 0;
}

static bool lower_mul(int64_t a, int64_t b, int64_t *out)
{
	if (!__builtin_mul_overflow(a, b, out))
		return true;
	*out = INT64_MAX;
	return (a < 0) == (b < 0);
}

static bool upper_add(int64_t a, int64_t b, int64_t *out)
{
	if (!__builtin_add_overflow(a, b, out))
		return true;
	*out = INT64_MIN;
	return b < 0;
}

static bool upper_mul(int64_t a, int64_t b, int64_t *out)
{
	if (!__builtin_mul_overflow(a, b, out))
		return true;
	*out = INT64_MIN;
	return (a < 0) != (b < 0);
}

/* ---- terms and polys ---- */

/* The canonical order: higher degree first, then atom ids, so the constant is last. */
static int term_order(const void *pa, const void *pb)
{
	const sym_term *a = pa, *b = pb;
	if (a->degree != b->degree)
		return a->degree > b->degree ? -1 : 1;
	for (unsigned i = 0; i < a->degree; i++)
		if (a->atoms[i] != b->atoms[i])
			return a->atoms[i] < b->atoms[i] ? -1 : 1;
	return 0;
}

static bool term_equal(const sym_term *a, const sym_term *b)
{
	return a->coef == b->coef && term_order(a, b) == 0;
}

static sym_term constant_term(int64_t c) { return (sym_term){.coef = c}; }

static sym_term atom_term(int64_t coef, uint16_t id)
{
	sym_term t = {.coef = coef, .degree = 1};
	t.atoms[0] = id;
	return t;
}

/* The monomials multiplied (merged); false past the degree ceiling. */
static bool monomial_mul(const sym_term *a, const sym_term *b, sym_term *out)
{
	if (a->degree + b->degree > MAX_DEGREE)
		return false;
	unsigned i = 0, j = 0, n = 0;
	while (i < a->degree || j < b->degree) {
		if (j == b->degree || (i < a->degree && a->atoms[i] <= b->atoms[j]))
			out->atoms[n++] = a->atoms[i++];
		else
			out->atoms[n++] = b->atoms[j++];
	}
	out->degree = (uint16_t)n;
	return true;
}

/* a / b when b's monomial is a sub-multiset of a's and b's coefficient divides a's. */
static bool term_divide(const sym_term *a, const sym_term *b, sym_term *out)
{
	/* INT64_MIN % -1 is undefined in C, so that case is ruled out first */
	if (b->coef == 0 || (a->coef == INT64_MIN && b->coef == -1) || a->coef % b->coef != 0)
		return false;
	*out = (sym_term){.coef = a->coef / b->coef};
	unsigned j = 0, n = 0;
	for (unsigned i = 0; i < a->degree; i++) {
		if (j < b->degree && a->atoms[i] == b->atoms[j])
			j++;
		else if (j < b->degree && a->atoms[i] > b->atoms[j])
			return false; /* b->atoms[j] is not in a */
		else
			out->atoms[n++] = a->atoms[i];
	}
	out->degree = (uint16_t)n;
	return j == b->degree;
}

/* Sorts, combines like terms and drops zeros. */
static bool poly_normalize(ti_symctx *ctx, poly *p)
{
	if (p->count > 1)
		qsort(p->terms, p->count, sizeof(p->terms[0]), term_order);
	size_t n = 0;
	for (size_t i = 0; i < p->count; i++) {
		if (n > 0 && term_order(&p->terms[n - 1], &p->terms[i]) == 0) {
			if (__builtin_add_overflow(p->terms[n - 1].coef, p->terms[i].coef, &p->terms[n - 1].coef))
				return overflow(ctx);
		} else {
			p->terms[n++] = p->terms[i];
		}
	}
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		if (p->terms[i].coef != 0)
			p->terms[kept++] = p->terms[i];
	p->count = kept;
	return true;
}

static bool poly_push(ti_symctx *ctx, poly *p, sym_term t)
{
	if (t.coef == 0)
		return true;
	if (p->count == p->capacity) {
		if (!poly_normalize(ctx, p))
			return false;
		if (p->count == p->capacity)
			return fail(ctx, TI_E_LIMIT, "symbolic size has more than %d terms", TI_SYM_MAX_TERMS);
	}
	p->terms[p->count++] = t;
	return true;
}

static bool poly_push_all(ti_symctx *ctx, poly *p, const sym_term *terms, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (!poly_push(ctx, p, terms[i]))
			return false;
	return true;
}

static bool poly_push_dim(ti_symctx *ctx, poly *p, ti_dim d)
{
	if (!d.sym)
		return poly_push(ctx, p, constant_term(d.value));
	return poly_push_all(ctx, p, d.sym->terms, d.sym->count);
}

/* Negates every term; the order does not depend on coefficients. */
static bool poly_negate(ti_symctx *ctx, poly *p)
{
	for (size_t i = 0; i < p->count; i++) {
		if (p->terms[i].coef == INT64_MIN)
			return overflow(ctx);
		p->terms[i].coef = -p->terms[i].coef;
	}
	return true;
}

/* The canonical dim: an integer when the poly is a constant, else a copy in the arena. */
static ti_dim poly_finish(ti_symctx *ctx, poly *p)
{
	if (!poly_normalize(ctx, p))
		return zero;
	if (p->count == 0)
		return zero;
	if (p->count == 1 && p->terms[0].degree == 0)
		return ti_dim_int(p->terms[0].coef);
	if (p->count > TI_SYM_MAX_TERMS) {
		fail(ctx, TI_E_LIMIT, "symbolic size has more than %d terms", TI_SYM_MAX_TERMS);
		return zero;
	}
	ti_sym *s = ti_arena_alloc(ctx->arena, sizeof(*s) + p->count * sizeof(s->terms[0]));
	if (!s) {
		out_of_memory(ctx);
		return zero;
	}
	s->atoms = ctx->atoms;
	s->count = p->count;
	memcpy(s->terms, p->terms, p->count * sizeof(s->terms[0]));
	return (ti_dim){0, s};
}

static bool sym_equal_terms(const ti_sym *s, const sym_term *terms, size_t count)
{
	if (s->count != count)
		return false;
	for (size_t i = 0; i < count; i++)
		if (!term_equal(&s->terms[i], &terms[i]))
			return false;
	return true;
}

/* ---- bounds: symbols are >= 1 ---- */

typedef struct bounds {
	bool has_lower, has_upper;
	int64_t lower, upper;
} bounds;

/* A lower bound of a monomial's value, when one is known. */
static bool monomial_lower(ti_sym_atom *const *atoms, const sym_term *t, int64_t *out)
{
	if (t->degree == 1) {
		const ti_sym_atom *a = atoms[t->atoms[0]];
		*out = a->lower;
		return a->has_lower;
	}
	/* A product of factors is bounded by the product of their bounds only when none is negative. */
	int64_t m = 1;
	for (unsigned i = 0; i < t->degree; i++) {
		const ti_sym_atom *a = atoms[t->atoms[i]];
		if (!a->has_lower || a->lower < 0)
			return false;
		if (__builtin_mul_overflow(m, a->lower, &m))
			m = INT64_MAX; /* still a lower bound */
	}
	*out = m;
	return true;
}

/*
 * constant + sum(coef * lower bound of monomial) bounds the poly from below
 * when no coefficient is negative, and from above when none is positive.
 */
static bounds poly_bounds(ti_sym_atom *const *atoms, const sym_term *terms, size_t count)
{
	bounds b = {true, true, 0, 0};
	int64_t constant = 0;
	for (size_t i = 0; i < count; i++) {
		const sym_term *t = &terms[i];
		if (t->degree == 0) {
			constant = t->coef;
			continue;
		}
		int64_t m, v;
		if (!monomial_lower(atoms, t, &m))
			return (bounds){0};
		if (t->coef > 0) {
			b.has_upper = false;
			if (b.has_lower)
				b.has_lower = lower_mul(t->coef, m, &v) && lower_add(b.lower, v, &b.lower);
		} else {
			b.has_lower = false;
			if (b.has_upper)
				b.has_upper = upper_mul(t->coef, m, &v) && upper_add(b.upper, v, &b.upper);
		}
	}
	if (b.has_lower)
		b.has_lower = lower_add(b.lower, constant, &b.lower);
	if (b.has_upper)
		b.has_upper = upper_add(b.upper, constant, &b.upper);
	return b;
}

/* ---- atoms ---- */

static int add_atom(ti_symctx *ctx, ti_sym_atom *atom)
{
	if (ctx->atom_count == ctx->atom_capacity) {
		if (ctx->atom_count >= TI_SYM_MAX_ATOMS) {
			fail(ctx, TI_E_LIMIT, "more than %d symbols and floor divisions", TI_SYM_MAX_ATOMS);
			return -1;
		}
		size_t capacity = ctx->atom_capacity ? 2 * ctx->atom_capacity : 16;
		if (capacity > TI_SYM_MAX_ATOMS)
			capacity = TI_SYM_MAX_ATOMS;
		/* A new array: the old one stays as it is for the syms that point at it. */
		ti_sym_atom **atoms = ti_arena_calloc(ctx->arena, capacity, sizeof(*atoms));
		if (!atoms) {
			out_of_memory(ctx);
			return -1;
		}
		if (ctx->atom_count)
			memcpy(atoms, ctx->atoms, ctx->atom_count * sizeof(*atoms));
		ctx->atoms = atoms;
		ctx->atom_capacity = capacity;
	}
	ctx->atoms[ctx->atom_count] = atom;
	return (int)ctx->atom_count++;
}

static int intern_symbol(ti_symctx *ctx, const char *name)
{
	for (size_t i = 0; i < ctx->atom_count; i++)
		if (ctx->atoms[i]->kind == ATOM_SYMBOL && !strcmp(ctx->atoms[i]->name, name))
			return (int)i;
	ti_sym_atom *atom = ti_arena_alloc(ctx->arena, sizeof(*atom));
	char *copy = ti_arena_strdup(ctx->arena, name);
	if (!atom || !copy) {
		out_of_memory(ctx);
		return -1;
	}
	*atom = (ti_sym_atom){.kind = ATOM_SYMBOL, .name = copy, .has_lower = true, .lower = 1};
	return add_atom(ctx, atom);
}

/* The atom inner // divisor; inner is canonical and not a constant, divisor >= 2. */
static int intern_floordiv(ti_symctx *ctx, const poly *inner, int64_t divisor)
{
	for (size_t i = 0; i < ctx->atom_count; i++) {
		const ti_sym_atom *a = ctx->atoms[i];
		if (a->kind == ATOM_FLOORDIV && a->divisor == divisor &&
		    sym_equal_terms(a->inner, inner->terms, inner->count))
			return (int)i;
	}
	int depth = 0;
	for (size_t i = 0; i < inner->count; i++)
		for (unsigned j = 0; j < inner->terms[i].degree; j++)
			if (ctx->atoms[inner->terms[i].atoms[j]]->depth > depth)
				depth = ctx->atoms[inner->terms[i].atoms[j]]->depth;
	if (depth + 1 > MAX_NESTING) {
		fail(ctx, TI_E_LIMIT, "floor divisions nested deeper than %d", MAX_NESTING);
		return -1;
	}
	poly copy = *inner;
	ti_dim d = poly_finish(ctx, &copy);
	ti_sym_atom *atom = ti_arena_alloc(ctx->arena, sizeof(*atom));
	if (!d.sym || !atom) {
		if (ctx->status == TI_OK)
			out_of_memory(ctx);
		return -1;
	}
	/* floor(x / d) >= floor(lower / d) since floor is monotone */
	bounds b = poly_bounds(ctx->atoms, inner->terms, inner->count);
	*atom = (ti_sym_atom){
		.kind = ATOM_FLOORDIV,
		.inner = d.sym,
		.divisor = divisor,
		.has_lower = b.has_lower,
		.lower = b.has_lower ? floor_div(b.lower, divisor) : 0,
		.depth = depth + 1,
	};
	return add_atom(ctx, atom);
}

/* ---- context ---- */

void ti_symctx_init(ti_symctx *ctx, ti_arena *arena)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->arena = arena;
}

static bool valid_name(const char *name)
{
	if (!name || !name[0])
		return false;
	size_t i = 0;
	for (; name[i]; i++) {
		char c = name[i];
		bool letter = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
		bool digit = c >= '0' && c <= '9';
		if (!letter && !(digit && i > 0))
			return false;
		if (i >= MAX_NAME)
			return false;
	}
	return true;
}

/* Bindings grow by doubling from 8; the capacity follows from the count. */
static size_t bound_capacity(size_t count)
{
	if (count == 0)
		return 0;
	size_t capacity = 8;
	while (capacity < count)
		capacity *= 2;
	return capacity;
}

ti_status ti_symctx_bind(ti_symctx *ctx, const char *name, int64_t value, ti_error *err)
{
	if (!valid_name(name))
		return TI_FAIL(err, TI_E_INVALID, "bad symbol name '%.*s'", MAX_NAME, name ? name : "");
	if (value < 0)
		return TI_FAIL(err, TI_E_INVALID, "negative size %" PRId64 " bound to '%s'", value, name);
	for (size_t i = 0; i < ctx->bound_count; i++) {
		if (!strcmp(ctx->bound_names[i], name)) {
			ctx->bound_values[i] = value;
			return TI_OK;
		}
	}
	if (ctx->bound_count >= TI_SYM_MAX_ATOMS)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d bound symbols", TI_SYM_MAX_ATOMS);
	if (ctx->bound_count == bound_capacity(ctx->bound_count)) {
		size_t capacity = ctx->bound_count ? 2 * ctx->bound_count : 8;
		const char **names = ti_arena_calloc(ctx->arena, capacity, sizeof(*names));
		int64_t *values = ti_arena_calloc(ctx->arena, capacity, sizeof(*values));
		if (!names || !values)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory binding '%s'", name);
		if (ctx->bound_count) {
			memcpy(names, ctx->bound_names, ctx->bound_count * sizeof(*names));
			memcpy(values, ctx->bound_values, ctx->bound_count * sizeof(*values));
		}
		ctx->bound_names = names;
		ctx->bound_values = values;
	}
	char *copy = ti_arena_strdup(ctx->arena, name);
	if (!copy)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory binding '%s'", name);
	ctx->bound_names[ctx->bound_count] = copy;
	ctx->bound_values[ctx->bound_count] = value;
	ctx->bound_count++;
	return TI_OK;
}

ti_status ti_sym_ok(const ti_symctx *ctx, ti_error *err)
{
	if (ctx->status == TI_OK)
		return TI_OK;
	return TI_FAIL(err, ctx->status, "%s", ctx->message);
}

/* ---- arithmetic ---- */

ti_status ti_symctx_check_bound(const ti_symctx *ctx, ti_error *err)
{
	for (size_t i = 0; i < ctx->bound_count; i++) {
		bool used = false;
		for (size_t k = 0; k < ctx->atom_count && !used; k++)
			used = ctx->atoms[k]->kind == ATOM_SYMBOL && !strcmp(ctx->atoms[k]->name, ctx->bound_names[i]);
		if (used)
			continue;
		char list[512];
		size_t len = 0, n = 0;
		list[0] = '\0';
		for (size_t k = 0; k < ctx->atom_count && len < sizeof(list); k++)
			if (ctx->atoms[k]->kind == ATOM_SYMBOL)
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", n++ ? ", " : "", ctx->atoms[k]->name);
		if (!n)
			return TI_FAIL(err, TI_E_INVALID, "no symbol '%s' in the description: it has no symbolic sizes",
			               ctx->bound_names[i]);
		return TI_FAIL(err, TI_E_INVALID, "no symbol '%s' in the description (its symbols: %s)", ctx->bound_names[i],
		               list);
	}
	return TI_OK;
}

ti_dim ti_dim_symbol(ti_symctx *ctx, const char *name)
{
	if (ctx->status != TI_OK)
		return zero;
	if (!valid_name(name)) {
		fail(ctx, TI_E_INVALID, "bad symbol name '%.*s'", MAX_NAME, name ? name : "");
		return zero;
	}
	int id = intern_symbol(ctx, name); /* bound or not: the description uses it (ti_symctx_check_bound) */
	for (size_t i = 0; id >= 0 && i < ctx->bound_count; i++)
		if (!strcmp(ctx->bound_names[i], name))
			return ti_dim_int(ctx->bound_values[i]);
	if (id < 0)
		return zero;
	sym_term buf[1];
	poly p = POLY(buf);
	poly_push(ctx, &p, atom_term(1, (uint16_t)id));
	return poly_finish(ctx, &p);
}

ti_dim ti_dim_add(ti_symctx *ctx, ti_dim a, ti_dim b)
{
	if (ctx->status != TI_OK)
		return zero;
	if (!a.sym && !b.sym) {
		int64_t v;
		if (__builtin_add_overflow(a.value, b.value, &v))
			return overflow(ctx), zero;
		return ti_dim_int(v);
	}
	sym_term buf[SUM_TERMS];
	poly p = POLY(buf);
	if (!poly_push_dim(ctx, &p, a) || !poly_push_dim(ctx, &p, b))
		return zero;
	return poly_finish(ctx, &p);
}

ti_dim ti_dim_sub(ti_symctx *ctx, ti_dim a, ti_dim b)
{
	if (ctx->status != TI_OK)
		return zero;
	if (!a.sym && !b.sym) {
		int64_t v;
		if (__builtin_sub_overflow(a.value, b.value, &v))
			return overflow(ctx), zero;
		return ti_dim_int(v);
	}
	sym_term buf[SUM_TERMS];
	poly p = POLY(buf);
	if (!poly_push_dim(ctx, &p, b) || !poly_negate(ctx, &p) || !poly_push_dim(ctx, &p, a))
		return zero;
	return poly_finish(ctx, &p);
}

static bool term_mul(ti_symctx *ctx, const sym_term *a, const sym_term *b, sym_term *out)
{
	*out = (sym_term){0};
	if (__builtin_mul_overflow(a->coef, b->coef, &out->coef))
		return overflow(ctx);
	if (!monomial_mul(a, b, out))
		return fail(ctx, TI_E_LIMIT, "symbolic size has degree past %d", MAX_DEGREE);
	return true;
}

ti_dim ti_dim_mul(ti_symctx *ctx, ti_dim a, ti_dim b)
{
	if (ctx->status != TI_OK)
		return zero;
	if (!a.sym && !b.sym) {
		int64_t v;
		if (__builtin_mul_overflow(a.value, b.value, &v))
			return overflow(ctx), zero;
		return ti_dim_int(v);
	}
	sym_term abuf[1], bbuf[1];
	poly pa = POLY(abuf), pb = POLY(bbuf);
	const sym_term *at = a.sym ? a.sym->terms : abuf, *bt = b.sym ? b.sym->terms : bbuf;
	size_t an = a.sym ? a.sym->count : 1, bn = b.sym ? b.sym->count : 1;
	if (!a.sym)
		poly_push(ctx, &pa, constant_term(a.value)), an = pa.count;
	if (!b.sym)
		poly_push(ctx, &pb, constant_term(b.value)), bn = pb.count;
	sym_term product_buf[PRODUCT_TERMS];
	poly p = POLY(product_buf);
	for (size_t i = 0; i < an; i++) {
		for (size_t j = 0; j < bn; j++) {
			sym_term t;
			if (!term_mul(ctx, &at[i], &bt[j], &t) || !poly_push(ctx, &p, t))
				return zero;
		}
	}
	return poly_finish(ctx, &p);
}

/*
 * terms // b for b >= 2, terms canonical and not a constant. Terms whose
 * coefficient b divides come out of the floor; the rest are divided by the
 * gcd of their coefficients and b (floor((g*x + c) / (g*b)) = floor((x +
 * floor(c/g)) / b) for integer x); the constant keeps a remainder in (-b, 0]
 * inside, so that (T - 1)//2 stays as written and (T + 1)//2 becomes
 * (T - 1)//2 + 1: one form for each value.
 */
static ti_dim poly_floordiv(ti_symctx *ctx, const sym_term *terms, size_t count, int64_t b)
{
	sym_term qbuf[TI_SYM_MAX_TERMS + 2], rbuf[TI_SYM_MAX_TERMS + 2];
	poly q = POLY(qbuf), r = POLY(rbuf);
	int64_t c = 0;
	for (size_t i = 0; i < count; i++) {
		sym_term t = terms[i];
		if (t.degree == 0) {
			c = t.coef;
		} else if (t.coef % b == 0) {
			t.coef /= b;
			if (!poly_push(ctx, &q, t))
				return zero;
		} else if (!poly_push(ctx, &r, t)) {
			return zero;
		}
	}
	if (r.count == 0) {
		poly_push(ctx, &q, constant_term(floor_div(c, b)));
		return poly_finish(ctx, &q);
	}
	uint64_t g = (uint64_t)b;
	for (size_t i = 0; i < r.count; i++)
		g = gcd(g, magnitude(r.terms[i].coef));
	if (g > 1) {
		for (size_t i = 0; i < r.count; i++)
			r.terms[i].coef /= (int64_t)g;
		c = floor_div(c, (int64_t)g);
		b /= (int64_t)g;
	}
	int64_t rest = c % b, whole = c / b;
	if (rest > 0) {
		rest -= b;
		whole++;
	}
	poly_push(ctx, &q, constant_term(whole));

	/* (X//d + rest)//b = (X + rest*d)//(d*b): floor(floor(x)/n) = floor(x/n) */
	const sym_term *only = &r.terms[0];
	if (r.count == 1 && only->coef == 1 && only->degree == 1 &&
	    ctx->atoms[only->atoms[0]]->kind == ATOM_FLOORDIV) {
		const ti_sym_atom *a = ctx->atoms[only->atoms[0]];
		int64_t divisor, shift;
		if (!__builtin_mul_overflow(a->divisor, b, &divisor) &&
		    !__builtin_mul_overflow(rest, a->divisor, &shift)) {
			sym_term ibuf[TI_SYM_MAX_TERMS + 1];
			poly inner = POLY(ibuf);
			if (!poly_push_all(ctx, &inner, a->inner->terms, a->inner->count) ||
			    !poly_push(ctx, &inner, constant_term(shift)) || !poly_normalize(ctx, &inner))
				return zero;
			ti_dim flat = poly_floordiv(ctx, inner.terms, inner.count, divisor);
			return ti_dim_add(ctx, poly_finish(ctx, &q), flat);
		}
	}

	if (!poly_push(ctx, &r, constant_term(rest)) || !poly_normalize(ctx, &r))
		return zero;
	int id = intern_floordiv(ctx, &r, b);
	if (id < 0)
		return zero;
	if (!poly_push(ctx, &q, atom_term(1, (uint16_t)id)))
		return zero;
	return poly_finish(ctx, &q);
}

static ti_dim exactdiv(ti_symctx *ctx, ti_dim a, ti_dim b, bool *exact);

/* a op b for a symbolic b: only an exact quotient is known. */
static ti_dim divide_by_symbolic(ti_symctx *ctx, ti_dim a, ti_dim b)
{
	bool exact = false;
	ti_dim q = exactdiv(ctx, a, b, &exact);
	if (!exact && ctx->status == TI_OK) {
		char text[128];
		fail(ctx, TI_E_UNSUPPORTED, "division by a symbolic size '%s'", ti_dim_format(b, text, sizeof(text)));
	}
	return exact ? q : zero;
}

ti_dim ti_dim_floordiv(ti_symctx *ctx, ti_dim a, ti_dim b)
{
	if (ctx->status != TI_OK)
		return zero;
	if (b.sym)
		return divide_by_symbolic(ctx, a, b);
	int64_t d = b.value;
	if (d == 0)
		return division_by_zero(ctx), zero;
	if (!a.sym) {
		if (a.value == INT64_MIN && d == -1)
			return overflow(ctx), zero;
		return ti_dim_int(floor_div(a.value, d));
	}
	sym_term buf[TI_SYM_MAX_TERMS];
	poly p = POLY(buf);
	if (!poly_push_all(ctx, &p, a.sym->terms, a.sym->count))
		return zero;
	if (d < 0) { /* a // d = (-a) // (-d) */
		if (d == INT64_MIN || !poly_negate(ctx, &p))
			return overflow(ctx), zero;
		d = -d;
	}
	if (d == 1)
		return poly_finish(ctx, &p);
	return poly_floordiv(ctx, p.terms, p.count, d);
}

ti_dim ti_dim_mod(ti_symctx *ctx, ti_dim a, ti_dim b)
{
	if (ctx->status != TI_OK)
		return zero;
	if (b.sym) {
		divide_by_symbolic(ctx, a, b);
		return zero; /* b divides a: no remainder */
	}
	if (b.value == 0)
		return division_by_zero(ctx), zero;
	if (!a.sym) {
		if (b.value == -1)
			return zero; /* INT64_MIN % -1 is undefined in C */
		int64_t r = a.value % b.value;
		if (r != 0 && ((r < 0) != (b.value < 0)))
			r += b.value;
		return ti_dim_int(r);
	}
	return ti_dim_sub(ctx, a, ti_dim_mul(ctx, b, ti_dim_floordiv(ctx, a, b)));
}

ti_dim ti_dim_ceildiv(ti_symctx *ctx, ti_dim a, ti_dim b)
{
	if (ctx->status != TI_OK)
		return zero;
	if (b.sym)
		return divide_by_symbolic(ctx, a, b);
	int64_t d = b.value;
	if (d == 0)
		return division_by_zero(ctx), zero;
	if (!a.sym) {
		if (a.value == INT64_MIN && d == -1)
			return overflow(ctx), zero;
		int64_t q = a.value / d;
		if (a.value % d != 0 && ((a.value % d > 0) == (d > 0)))
			q++;
		return ti_dim_int(q);
	}
	/* For d > 0, -(-a // d) = (a + d - 1) // d, which lands on the same canonical form as the floor formulas. */
	if (d > 0)
		return ti_dim_floordiv(ctx, ti_dim_add(ctx, a, ti_dim_int(d - 1)), b);
	ti_dim negated = ti_dim_sub(ctx, ti_dim_int(0), a);
	return ti_dim_sub(ctx, ti_dim_int(0), ti_dim_floordiv(ctx, negated, b));
}

/* k * b == a, computed without touching ctx (an overflow means no). */
static bool is_multiple(const ti_sym *a, const ti_sym *b, const sym_term *k)
{
	if (a->count != b->count)
		return false;
	sym_term buf[TI_SYM_MAX_TERMS];
	for (size_t i = 0; i < b->count; i++) {
		buf[i] = (sym_term){0};
		if (__builtin_mul_overflow(b->terms[i].coef, k->coef, &buf[i].coef) ||
		    !monomial_mul(&b->terms[i], k, &buf[i]))
			return false;
	}
	/* The monomials of b times one monomial stay distinct: sorting is all it takes. */
	qsort(buf, b->count, sizeof(buf[0]), term_order);
	return sym_equal_terms(a, buf, b->count);
}

static ti_dim exactdiv(ti_symctx *ctx, ti_dim a, ti_dim b, bool *exact)
{
	*exact = false;
	if (!b.sym) {
		int64_t d = b.value;
		if (d == 0)
			return zero;
		if (!a.sym) {
			if (a.value == INT64_MIN && d == -1)
				return overflow(ctx), zero;
			if (a.value % d != 0)
				return zero;
			*exact = true;
			return ti_dim_int(a.value / d);
		}
		sym_term buf[TI_SYM_MAX_TERMS];
		poly p = POLY(buf);
		for (size_t i = 0; i < a.sym->count; i++) {
			sym_term t = a.sym->terms[i];
			if (t.coef == INT64_MIN && d == -1)
				return overflow(ctx), zero;
			if (t.coef % d != 0)
				return zero;
			t.coef /= d;
			poly_push(ctx, &p, t);
		}
		*exact = true;
		return poly_finish(ctx, &p);
	}
	if (!a.sym) {
		*exact = a.value == 0;
		return zero;
	}
	if (b.sym->count == 1) {
		sym_term buf[TI_SYM_MAX_TERMS];
		poly p = POLY(buf);
		for (size_t i = 0; i < a.sym->count; i++) {
			sym_term t;
			if (!term_divide(&a.sym->terms[i], &b.sym->terms[0], &t))
				return zero;
			poly_push(ctx, &p, t);
		}
		*exact = true;
		return poly_finish(ctx, &p);
	}
	/* A quotient of one term, read off the leading terms: (N + 1)*T / (N + 1) = T. */
	sym_term k;
	if (!term_divide(&a.sym->terms[0], &b.sym->terms[0], &k) || !is_multiple(a.sym, b.sym, &k))
		return zero;
	sym_term buf[1];
	poly p = POLY(buf);
	poly_push(ctx, &p, k);
	*exact = true;
	return poly_finish(ctx, &p);
}

ti_dim ti_dim_exactdiv(ti_symctx *ctx, ti_dim a, ti_dim b, bool *exact)
{
	bool ok = false;
	ti_dim q = zero;
	if (ctx->status == TI_OK)
		q = exactdiv(ctx, a, b, &ok);
	if (ctx->status != TI_OK)
		ok = false;
	if (exact)
		*exact = ok;
	return ok ? q : zero;
}

/* ---- comparison ---- */

ti_truth ti_dim_compare(ti_symctx *ctx, ti_dim a, ti_cmp cmp, ti_dim b)
{
	bounds d;
	bool is_zero = false;
	if (!a.sym && !b.sym) {
		int sign = (a.value > b.value) - (a.value < b.value);
		d = (bounds){true, true, sign, sign};
		is_zero = sign == 0;
	} else {
		if (ctx->status != TI_OK)
			return TI_UNKNOWN;
		/* a - b on the stack; a failure here is an unanswered question, not an error */
		sym_term buf[SUM_TERMS];
		poly p = POLY(buf);
		bool ok = poly_push_dim(ctx, &p, b) && poly_negate(ctx, &p) && poly_push_dim(ctx, &p, a) &&
		          poly_normalize(ctx, &p);
		if (!ok) {
			ctx->status = TI_OK;
			ctx->message[0] = '\0';
			return TI_UNKNOWN;
		}
		is_zero = p.count == 0;
		d = poly_bounds(ctx->atoms, p.terms, p.count);
	}
	bool positive = d.has_lower && d.lower > 0, nonnegative = d.has_lower && d.lower >= 0;
	bool negative = d.has_upper && d.upper < 0, nonpositive = d.has_upper && d.upper <= 0;
	bool yes, no;
	switch (cmp) {
	case TI_CMP_EQ:
	case TI_CMP_NE:
		yes = is_zero;
		no = positive || negative;
		if (cmp == TI_CMP_NE) {
			bool t = yes;
			yes = no;
			no = t;
		}
		break;
	case TI_CMP_GE:
		yes = nonnegative, no = negative;
		break;
	case TI_CMP_GT:
		yes = positive, no = nonpositive;
		break;
	case TI_CMP_LE:
		yes = nonpositive, no = positive;
		break;
	case TI_CMP_LT:
		yes = negative, no = nonnegative;
		break;
	default:
		return TI_UNKNOWN;
	}
	return yes ? TI_TRUE : no ? TI_FALSE : TI_UNKNOWN;
}

static const char *cmp_text(ti_cmp cmp)
{
	static const char *const text[] = {
		[TI_CMP_EQ] = "==", [TI_CMP_NE] = "!=", [TI_CMP_LT] = "<",
		[TI_CMP_LE] = "<=", [TI_CMP_GT] = ">",  [TI_CMP_GE] = ">=",
	};
	return (unsigned)cmp < sizeof(text) / sizeof(text[0]) ? text[cmp] : "?";
}

static void record_assumption(ti_symctx *ctx, ti_dim a, ti_cmp cmp, ti_dim b)
{
	if (ctx->status != TI_OK || ctx->assumption_count >= TI_SYM_MAX_ASSUMPTIONS)
		return;
	char left[STR_MAX / 2], right[STR_MAX / 2], text[STR_MAX];
	snprintf(text, sizeof(text), "%s %s %s", ti_dim_format(a, left, sizeof(left)), cmp_text(cmp),
	         ti_dim_format(b, right, sizeof(right)));
	for (size_t i = 0; i < ctx->assumption_count; i++)
		if (!strcmp(ctx->assumptions[i], text))
			return;
	const char *copy = ti_arena_strdup(ctx->arena, text);
	if (!copy) {
		out_of_memory(ctx);
		return;
	}
	ctx->assumptions[ctx->assumption_count++] = copy;
}

bool ti_dim_assume(ti_symctx *ctx, ti_dim a, ti_cmp cmp, ti_dim b)
{
	ti_truth t = ti_dim_compare(ctx, a, cmp, b);
	if (t != TI_UNKNOWN)
		return t == TI_TRUE;
	record_assumption(ctx, a, cmp, b);
	return true;
}

bool ti_dim_same(ti_dim a, ti_dim b)
{
	if (!a.sym || !b.sym)
		return !a.sym && !b.sym && a.value == b.value;
	return sym_equal_terms(a.sym, b.sym->terms, b.sym->count);
}

/* ---- formatting ---- */

/* Writes into buf while room remains; past that it only notes that it was cut. */
typedef struct writer {
	char *buf;
	size_t size, len;
	bool cut;
} writer;

static void put(writer *w, const char *s)
{
	for (; *s && !w->cut; s++) {
		if (w->len + 1 >= w->size) {
			w->cut = true;
			break;
		}
		w->buf[w->len++] = *s;
	}
}

static void put_u64(writer *w, uint64_t v)
{
	char text[24];
	snprintf(text, sizeof(text), "%" PRIu64, v);
	put(w, text);
}

static void put_i64(writer *w, int64_t v)
{
	if (v < 0)
		put(w, "-");
	put_u64(w, magnitude(v));
}

static void put_sym(writer *w, const ti_sym *s);

static void put_atom(writer *w, const ti_sym_atom *atom)
{
	if (atom->kind == ATOM_SYMBOL) {
		put(w, atom->name);
		return;
	}
	/* "N//2", "N*T//2" read back as written; "(T - 1)//2", "(2*N)//3" need the parentheses */
	const ti_sym *inner = atom->inner;
	bool paren = inner->count > 1 || inner->terms[0].coef != 1;
	put(w, paren ? "(" : "");
	put_sym(w, inner);
	put(w, paren ? ")//" : "//");
	put_i64(w, atom->divisor);
}

static void put_term(writer *w, ti_sym_atom *const *atoms, const sym_term *t, bool first)
{
	uint64_t mag = magnitude(t->coef);
	if (first)
		put(w, t->coef < 0 ? "-" : "");
	else
		put(w, t->coef < 0 ? " - " : " + ");
	if (t->degree == 0) {
		put_u64(w, mag);
		return;
	}
	/*
	 * * and // bind alike from the left and unary minus binds tighter, so a
	 * floor division is bare only when it stands alone after "+", " - " or at
	 * the start: 2*((T - 1)//2), -((T - 1)//2), but N - (T - 1)//2.
	 */
	bool alone = t->degree == 1 && mag == 1 && (t->coef > 0 || !first);
	if (mag != 1) {
		put_u64(w, mag);
		put(w, "*");
	}
	for (unsigned i = 0, j; i < t->degree && !w->cut; i = j) {
		for (j = i; j < t->degree && t->atoms[j] == t->atoms[i]; j++)
			;
		const ti_sym_atom *atom = atoms[t->atoms[i]];
		bool wrap = atom->kind == ATOM_FLOORDIV && !alone;
		put(w, i > 0 ? "*" : "");
		put(w, wrap ? "(" : "");
		put_atom(w, atom);
		put(w, wrap ? ")" : "");
		if (j - i > 1) {
			put(w, "**");
			put_u64(w, j - i);
		}
	}
}

static void put_sym(writer *w, const ti_sym *s)
{
	/* Stopping once cut keeps nested floor divisions from costing more than the buffer. */
	for (size_t i = 0; i < s->count && !w->cut; i++)
		put_term(w, s->atoms, &s->terms[i], i == 0);
}

const char *ti_dim_format(ti_dim d, char *buf, size_t size)
{
	if (!buf || size == 0)
		return buf;
	writer w = {buf, size, 0, false};
	if (d.sym)
		put_sym(&w, d.sym);
	else
		put_i64(&w, d.value);
	buf[w.len] = '\0';
	if (w.cut) {
		size_t dots = w.len < 3 ? w.len : 3;
		memset(buf + w.len - dots, '.', dots);
	}
	return buf;
}

const char *ti_dim_str(ti_symctx *ctx, ti_dim d)
{
	char text[STR_MAX];
	char *copy = ti_arena_strdup(ctx->arena, ti_dim_format(d, text, sizeof(text)));
	if (!copy)
		out_of_memory(ctx);
	return copy;
}

/* ---- formulas in descriptions: "N*197", "(T - 1)//2 + 1" ---- */

typedef struct formula {
	ti_symctx *ctx;
	const char *s;
	int depth;
} formula;

static bool formula_sum(formula *f, ti_dim *out);

static void formula_skip(formula *f)
{
	while (*f->s == ' ')
		f->s++;
}

static bool formula_atom(formula *f, ti_dim *out)
{
	formula_skip(f);
	char c = *f->s;
	if (c == '-') {
		f->s++;
		ti_dim v;
		if (!formula_atom(f, &v))
			return false;
		*out = ti_dim_sub(f->ctx, ti_dim_int(0), v);
		return true;
	}
	if (c == '(') {
		if (++f->depth > 64)
			return false;
		f->s++;
		if (!formula_sum(f, out))
			return false;
		formula_skip(f);
		if (*f->s != ')')
			return false;
		f->s++;
		f->depth--;
		return true;
	}
	if (c >= '0' && c <= '9') {
		int64_t v = 0;
		while (*f->s >= '0' && *f->s <= '9') {
			if (v > (INT64_MAX - 9) / 10)
				return false;
			v = v * 10 + (*f->s++ - '0');
		}
		*out = ti_dim_int(v);
		return true;
	}
	char name[MAX_NAME + 1];
	size_t n = 0;
	while ((*f->s >= 'A' && *f->s <= 'Z') || (*f->s >= 'a' && *f->s <= 'z') || *f->s == '_' ||
	       (n > 0 && *f->s >= '0' && *f->s <= '9')) {
		if (n >= MAX_NAME)
			return false;
		name[n++] = *f->s++;
	}
	if (!n)
		return false;
	name[n] = '\0';
	*out = ti_dim_symbol(f->ctx, name);
	return true;
}

static bool formula_product(formula *f, ti_dim *out)
{
	if (!formula_atom(f, out))
		return false;
	for (;;) {
		formula_skip(f);
		int op = 0;
		if (f->s[0] == '/' && f->s[1] == '/')
			op = '/', f->s += 2;
		else if (f->s[0] == '*' || f->s[0] == '%')
			op = *f->s++;
		else
			return true;
		ti_dim rhs;
		if (!formula_atom(f, &rhs))
			return false;
		*out = op == '*' ? ti_dim_mul(f->ctx, *out, rhs)
		     : op == '/' ? ti_dim_floordiv(f->ctx, *out, rhs) : ti_dim_mod(f->ctx, *out, rhs);
	}
}

static bool formula_sum(formula *f, ti_dim *out)
{
	if (!formula_product(f, out))
		return false;
	for (;;) {
		formula_skip(f);
		char op = *f->s;
		if (op != '+' && op != '-')
			return true;
		f->s++;
		ti_dim rhs;
		if (!formula_product(f, &rhs))
			return false;
		*out = op == '+' ? ti_dim_add(f->ctx, *out, rhs) : ti_dim_sub(f->ctx, *out, rhs);
	}
}

bool ti_dim_parse(ti_symctx *ctx, const char *text, ti_dim *out)
{
	formula f = {ctx, text, 0};
	if (!formula_sum(&f, out))
		return false;
	formula_skip(&f);
	return *f.s == '\0';
}
