/*
 * test_symdim.c - symbolic sizes: Python integer semantics, canonical forms,
 * printing that reads back in Python, proofs from "symbols are >= 1".
 *
 * Rows are written as Python expressions and built with a small parser below
 * (+ - * // % ** and parentheses, Python's precedence), so a printed form can
 * be parsed back and compared, and any form can be evaluated with every
 * symbol bound to an integer.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "tinspect/symdim.h"
#include "unit.h"

static ti_arena arena;
static ti_symctx ctx;
static ti_error err;

static void setup(void)
{
	ti_arena_init(&arena, (size_t)1 << 26);
	ti_symctx_init(&ctx, &arena);
	ti_error_clear(&err);
	/* Interning order is print order: make it N, then T, as a model's inputs would. */
	ti_dim_symbol(&ctx, "N");
	ti_dim_symbol(&ctx, "T");
}

static void teardown(void) { ti_arena_release(&arena); }

TestSuite(symdim, .init = setup, .fini = teardown);

/* ---- a parser for Python integer expressions over symbols ---- */

typedef struct parser {
	ti_symctx *ctx;
	const char *text, *at;
} parser;

static ti_dim parse_sum(parser *p);

static bool eat(parser *p, const char *token)
{
	while (*p->at == ' ')
		p->at++;
	size_t n = strlen(token);
	if (strncmp(p->at, token, n))
		return false;
	if (!strcmp(token, "*") && p->at[1] == '*')
		return false; /* that is "**" */
	p->at += n;
	return true;
}

static ti_dim parse_unary(parser *p);

static ti_dim parse_atom(parser *p)
{
	while (*p->at == ' ')
		p->at++;
	if (eat(p, "(")) {
		ti_dim d = parse_sum(p);
		cr_assert(eat(p, ")"), "parsing \"%s\": want ')' at \"%s\"", p->text, p->at);
		return d;
	}
	if (isdigit((unsigned char)*p->at)) {
		char *end;
		long long v = strtoll(p->at, &end, 10);
		p->at = end;
		return ti_dim_int(v);
	}
	if (isalpha((unsigned char)*p->at) || *p->at == '_') {
		char name[64];
		size_t n = 0;
		while ((isalnum((unsigned char)*p->at) || *p->at == '_') && n + 1 < sizeof(name))
			name[n++] = *p->at++;
		name[n] = '\0';
		return ti_dim_symbol(p->ctx, name);
	}
	cr_assert_fail("parsing \"%s\": unexpected \"%s\"", p->text, p->at);
	return ti_dim_int(0);
}

/* power := atom ['**' unary], with a non-negative integer exponent */
static ti_dim parse_power(parser *p)
{
	ti_dim base = parse_atom(p);
	if (!eat(p, "**"))
		return base;
	ti_dim exponent = parse_unary(p);
	cr_assert(ti_dim_is_int(exponent) && exponent.value >= 0, "parsing \"%s\": bad exponent", p->text);
	ti_dim d = ti_dim_int(1);
	for (int64_t i = 0; i < exponent.value; i++)
		d = ti_dim_mul(p->ctx, d, base);
	return d;
}

static ti_dim parse_unary(parser *p)
{
	if (eat(p, "-"))
		return ti_dim_sub(p->ctx, ti_dim_int(0), parse_unary(p));
	if (eat(p, "+"))
		return parse_unary(p);
	return parse_power(p);
}

static ti_dim parse_product(parser *p)
{
	ti_dim d = parse_unary(p);
	for (;;) {
		if (eat(p, "//"))
			d = ti_dim_floordiv(p->ctx, d, parse_unary(p));
		else if (eat(p, "*"))
			d = ti_dim_mul(p->ctx, d, parse_unary(p));
		else if (eat(p, "%"))
			d = ti_dim_mod(p->ctx, d, parse_unary(p));
		else
			return d;
	}
}

static ti_dim parse_sum(parser *p)
{
	ti_dim d = parse_product(p);
	for (;;) {
		if (eat(p, "+"))
			d = ti_dim_add(p->ctx, d, parse_product(p));
		else if (eat(p, "-"))
			d = ti_dim_sub(p->ctx, d, parse_product(p));
		else
			return d;
	}
}

static ti_dim parse_in(ti_symctx *c, const char *text)
{
	parser p = {c, text, text};
	ti_dim d = parse_sum(&p);
	while (*p.at == ' ')
		p.at++;
	cr_assert(*p.at == '\0', "parsing \"%s\": trailing \"%s\"", text, p.at);
	return d;
}

#define P(text) parse_in(&ctx, (text))

static const char *show(ti_dim d) { return ti_dim_str(&ctx, d); }

#define EXPECT_OK() EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_OK, err)
#define EXPECT_DIM(got, want) EXPECT_STR(show(got), want)

/* The value of text with N and T bound, as Python would compute it. */
static int64_t evaluate(const char *text, int64_t n, int64_t t)
{
	ti_arena a;
	ti_symctx c;
	ti_arena_init(&a, 1 << 20);
	ti_symctx_init(&c, &a);
	cr_assert(ti_symctx_bind(&c, "N", n, &err) == TI_OK && ti_symctx_bind(&c, "T", t, &err) == TI_OK);
	ti_dim d = parse_in(&c, text);
	cr_assert(c.status == TI_OK && ti_dim_is_int(d), "\"%s\" with N=%lld T=%lld: %s", text, (long long)n,
	          (long long)t, c.message);
	ti_arena_release(&a);
	return d.value;
}

/* ---- integers ---- */

Test(symdim, integer_division_rounds_like_python)
{
	static const struct { int64_t a, b, floor, mod, ceil; } rows[] = {
		{7, 2, 3, 1, 4},     {-7, 2, -4, 1, -3},   {7, -2, -4, -1, -3}, {-7, -2, 3, -1, 4},
		{6, 3, 2, 0, 2},     {-6, 3, -2, 0, -2},   {0, 5, 0, 0, 0},     {1, 1, 1, 0, 1},
		{5, 7, 0, 5, 1},     {-5, 7, -1, 2, 0},    {INT64_MIN, 1, INT64_MIN, 0, INT64_MIN},
		{INT64_MIN, 2, INT64_MIN / 2, 0, INT64_MIN / 2}, {INT64_MAX, -1, -INT64_MAX, 0, -INT64_MAX},
		{INT64_MAX, 2, INT64_MAX / 2, 1, INT64_MAX / 2 + 1},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ti_dim a = ti_dim_int(rows[i].a), b = ti_dim_int(rows[i].b);
		ti_dim f = ti_dim_floordiv(&ctx, a, b), m = ti_dim_mod(&ctx, a, b), c = ti_dim_ceildiv(&ctx, a, b);
		cr_expect(ti_dim_is_int(f) && f.value == rows[i].floor, "%lld // %lld: got %s, want %lld",
		          (long long)rows[i].a, (long long)rows[i].b, show(f), (long long)rows[i].floor);
		cr_expect(ti_dim_is_int(m) && m.value == rows[i].mod, "%lld %% %lld: got %s, want %lld",
		          (long long)rows[i].a, (long long)rows[i].b, show(m), (long long)rows[i].mod);
		cr_expect(ti_dim_is_int(c) && c.value == rows[i].ceil, "ceildiv(%lld, %lld): got %s, want %lld",
		          (long long)rows[i].a, (long long)rows[i].b, show(c), (long long)rows[i].ceil);
	}
	EXPECT_OK();
}

Test(symdim, integer_arithmetic_stays_integer)
{
	EXPECT_DIM(P("2*3 + 4"), "10");
	EXPECT_DIM(P("3 - 10"), "-7");
	EXPECT_DIM(P("-(2**10)"), "-1024");
	EXPECT_DIM(ti_dim_int(INT64_MIN), "-9223372036854775808");
	cr_expect(ti_dim_is_int(P("(7 + 1)//2")));
	EXPECT_OK();
}

typedef enum op { ADD, SUB, MUL, FLOORDIV, MOD, CEILDIV } op;

static ti_dim apply(ti_symctx *c, op o, ti_dim a, ti_dim b)
{
	switch (o) {
	case ADD: return ti_dim_add(c, a, b);
	case SUB: return ti_dim_sub(c, a, b);
	case MUL: return ti_dim_mul(c, a, b);
	case FLOORDIV: return ti_dim_floordiv(c, a, b);
	case MOD: return ti_dim_mod(c, a, b);
	case CEILDIV: return ti_dim_ceildiv(c, a, b);
	}
	return ti_dim_int(0);
}

Test(symdim, integer_overflow_is_a_limit_error_that_yields_0)
{
	static const struct { const char *what; op o; int64_t a, b; } rows[] = {
		{"INT64_MAX + 1", ADD, INT64_MAX, 1},       {"INT64_MIN - 1", SUB, INT64_MIN, 1},
		{"INT64_MAX * 2", MUL, INT64_MAX, 2},       {"INT64_MIN * -1", MUL, INT64_MIN, -1},
		{"INT64_MIN // -1", FLOORDIV, INT64_MIN, -1}, {"ceildiv(INT64_MIN, -1)", CEILDIV, INT64_MIN, -1},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ti_symctx c;
		ti_symctx_init(&c, &arena);
		ti_dim d = apply(&c, rows[i].o, ti_dim_int(rows[i].a), ti_dim_int(rows[i].b));
		cr_expect(c.status == TI_E_LIMIT, "%s: got %s (\"%s\"), want a limit error", rows[i].what,
		          ti_status_name(c.status), c.message);
		EXPECT_CONTAINS(c.message, "size arithmetic overflows int64");
		cr_expect(ti_dim_is_int(d) && d.value == 0, "%s: got %lld, want 0", rows[i].what, (long long)d.value);
	}
	/* Python says INT64_MIN % -1 == 0, and so do we, without C's undefined behaviour. */
	EXPECT_INT(ti_dim_mod(&ctx, ti_dim_int(INT64_MIN), ti_dim_int(-1)).value, 0);
	EXPECT_OK();
}

Test(symdim, coefficient_overflow_is_a_limit_error)
{
	ti_dim d = P("9223372036854775807*N + N");
	EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_E_LIMIT, err);
	EXPECT_CONTAINS(err.message, "overflows int64");
	cr_expect(ti_dim_is_int(d) && d.value == 0, "got %s, want 0", show(d));
}

Test(symdim, division_by_zero_is_a_sticky_error)
{
	ti_dim d = ti_dim_floordiv(&ctx, ti_dim_int(7), ti_dim_int(0));
	EXPECT_INT(d.value, 0);
	EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "division by zero");
	/* Later steps yield 0 and keep the first message. */
	EXPECT_INT(ti_dim_add(&ctx, ti_dim_int(1), ti_dim_int(2)).value, 0);
	cr_expect(ti_dim_is_int(ti_dim_symbol(&ctx, "N")), "a failed context made a symbol");
	ti_dim_mul(&ctx, ti_dim_int(INT64_MAX), ti_dim_int(2));
	EXPECT_STR(ctx.message, "division by zero");
	EXPECT_INT(ctx.status, TI_E_SHAPE);
}

Test(symdim, every_division_refuses_a_zero_divisor)
{
	static const op ops[] = {FLOORDIV, MOD, CEILDIV};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		ti_symctx c;
		ti_symctx_init(&c, &arena);
		apply(&c, ops[i], ti_dim_symbol(&c, "N"), ti_dim_int(0));
		cr_expect(c.status == TI_E_SHAPE, "op %zu: got %s, want a shape error", i, ti_status_name(c.status));
		EXPECT_STR(c.message, "division by zero");
	}
	bool exact = true;
	ti_dim_exactdiv(&ctx, ti_dim_int(6), ti_dim_int(0), &exact);
	cr_expect(!exact, "6 / 0 was exact");
	EXPECT_OK();
}

/* ---- canonical forms and printing ---- */

static const struct { const char *text, *want; } forms[] = {
	{"N", "N"},
	{"N + N", "2*N"},
	{"T*N", "N*T"},
	{"1 + N", "N + 1"},
	{"N - 1", "N - 1"},
	{"3 - N", "-N + 3"},
	{"-N", "-N"},
	{"N*N", "N**2"},
	{"T*N*N + N", "N**2*T + N"},
	{"(N + 1)*(N - 1)", "N**2 - 1"},
	{"(N + T)*(N + T)", "N**2 + 2*N*T + T**2"},
	{"N - N", "0"},
	{"N*T - T*N", "0"},
	{"N*3*224*224", "150528*N"},
	/* Conv1d, kernel 3, padding 1, stride 2: (T + 2*p - d*(k - 1) - 1)//s + 1 */
	{"(T + 2*1 - 1*(3 - 1) - 1)//2 + 1", "(T - 1)//2 + 1"},
	/* stride 1 and 'same' padding give T back */
	{"(T + 2*1 - 1*(3 - 1) - 1)//1 + 1", "T"},
	{"(T + 2*0 - 1*(1 - 1) - 1)//1 + 1", "T"},
	/* pooling, kernel 2, stride 2 */
	{"(T + 2*0 - 1*(2 - 1) - 1)//2 + 1", "T//2"},
	/* one form per value: the constant left inside lies in (-b, 0] */
	{"(T + 1)//2", "(T - 1)//2 + 1"},
	{"(T - 3)//2 + 1", "(T - 1)//2"},
	{"(2*N + 3)//2", "N + 1"},
	{"(N + 4)//2", "N//2 + 2"},
	{"(3*N + 1)//2", "(3*N - 1)//2 + 1"},
	/* common factors of the coefficients and the divisor cancel */
	{"(2*N)//4", "N//2"},
	{"(2*N + 1)//4", "N//2"},
	{"(2*N + 2*T)//4", "(N + T)//2"},
	/* floor divisions of floor divisions merge */
	{"(N//2)//3", "N//6"},
	{"((T - 1)//2 - 1)//2", "(T - 3)//4"},
	{"(N*T)//2", "N*T//2"},
	{"N//-2", "(-N)//2"},
	{"(-N)//2", "(-N)//2"},
	/* a floor division next to * or unary minus keeps its parentheses */
	{"2*((T - 1)//2)", "2*((T - 1)//2)"},
	{"-((T - 1)//2)", "-((T - 1)//2)"},
	{"((T - 1)//2)*N", "N*((T - 1)//2)"},
	{"((T - 1)//2)*((T - 1)//2)", "((T - 1)//2)**2"},
	{"N - (T - 1)//2", "N - (T - 1)//2"},
	{"N - 2*((T - 1)//2)", "N - 2*((T - 1)//2)"},
	{"((N + T)//2 + N)//3", "(N + (N + T)//2)//3"},
	{"N % 2", "N - 2*(N//2)"},
	{"N % 1", "0"},
	{"(N*T + T)//2", "(N*T + T)//2"},
	{"N**2//N", "N"},
	{"(N*T) % N", "0"},
};

Test(symdim, prints_canonical_forms_in_python_syntax)
{
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		cr_expect(!strcmp(show(P(forms[i].text)), forms[i].want), "%s: got \"%s\", want \"%s\"",
		          forms[i].text, show(P(forms[i].text)), forms[i].want);
	EXPECT_OK();
}

Test(symdim, reads_back_what_it_prints)
{
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		ti_dim d = P(forms[i].text);
		const char *printed = show(d);
		ti_dim again = P(printed);
		cr_expect(ti_dim_same(d, again), "%s prints \"%s\", which reads back as \"%s\"", forms[i].text, printed,
		          show(again));
	}
	EXPECT_OK();
}

Test(symdim, canonical_forms_have_the_value_of_what_they_came_from)
{
	/* Python's own arithmetic on the written expression and on the printed form, for small sizes */
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		const char *printed = show(P(forms[i].text));
		for (int64_t n = 1; n <= 9; n++) {
			for (int64_t t = 1; t <= 9; t++) {
				int64_t want = evaluate(forms[i].text, n, t), got = evaluate(printed, n, t);
				cr_expect(got == want, "%s as \"%s\" at N=%lld T=%lld: got %lld, want %lld", forms[i].text,
				          printed, (long long)n, (long long)t, (long long)got, (long long)want);
			}
		}
	}
}

static ti_dim conv_output(ti_dim length, int64_t padding, int64_t dilation, int64_t kernel, int64_t stride)
{
	/* torch.nn.Conv1d: floor((L + 2*padding - dilation*(kernel - 1) - 1) / stride + 1) */
	ti_dim span = ti_dim_int(2 * padding - dilation * (kernel - 1) - 1);
	return ti_dim_add(&ctx, ti_dim_floordiv(&ctx, ti_dim_add(&ctx, length, span), ti_dim_int(stride)), ti_dim_int(1));
}

Test(symdim, proves_the_conv_formula_gives_t_minus_1_floordiv_2_plus_1)
{
	ti_dim t = ti_dim_symbol(&ctx, "T");
	EXPECT_DIM(conv_output(t, 1, 1, 3, 2), "(T - 1)//2 + 1");
	EXPECT_DIM(conv_output(t, 3, 1, 7, 2), "(T - 1)//2 + 1");
	cr_expect(ti_dim_same(conv_output(t, 1, 1, 3, 1), t), "a stride-1 'same' conv changed T");
	/* two stride-2 convs: the floor divisions merge */
	EXPECT_DIM(conv_output(conv_output(t, 1, 1, 3, 2), 1, 1, 3, 2), "(T - 1)//4 + 1");
	EXPECT_OK();
}

Test(symdim, ceildiv_lands_on_the_same_form_as_the_floor_formula)
{
	ti_dim t = ti_dim_symbol(&ctx, "T");
	ti_dim up = ti_dim_ceildiv(&ctx, t, ti_dim_int(2));
	EXPECT_DIM(up, "(T - 1)//2 + 1");
	cr_expect(ti_dim_same(up, conv_output(t, 1, 1, 3, 2)), "ceildiv(T, 2) is not the conv output");
	EXPECT_DIM(ti_dim_ceildiv(&ctx, t, ti_dim_int(1)), "T");
	EXPECT_DIM(ti_dim_ceildiv(&ctx, t, ti_dim_int(-2)), "-(T//2)");
	EXPECT_DIM(ti_dim_ceildiv(&ctx, P("6*N"), ti_dim_int(3)), "2*N");
	EXPECT_OK();
}

/* ---- exact division: a reshape's -1 ---- */

Test(symdim, exactdiv_divides_only_when_exact)
{
	static const struct { const char *a, *b; bool exact; const char *want; } rows[] = {
		{"N*3*224*224", "3*224*224", true, "N"},
		{"N*T*64", "N*T", true, "64"},
		{"6*N", "3*N", true, "2"},
		{"N*T*64 + N*64", "N", true, "64*T + 64"},
		{"N*T + T", "T", true, "N + 1"},
		{"(N + 1)*T", "N + 1", true, "T"},
		{"2*N + 2*T", "N + T", true, "2"},
		{"N*N", "N", true, "N"},
		{"2*N + 4", "2", true, "N + 2"},
		{"-6*N", "-3", true, "2*N"},
		{"12", "4", true, "3"},
		{"-12", "4", true, "-3"},
		{"0", "N", true, "0"},
		{"2*N + 1", "2", false, "0"},
		{"N", "T", false, "0"},
		{"N + T", "N", false, "0"},
		{"N + 1", "N + 2", false, "0"},
		{"N", "N*N", false, "0"},
		{"N", "2*N", false, "0"},
		{"12", "5", false, "0"},
		{"N", "0", false, "0"},
		{"7", "N", false, "0"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool exact = !rows[i].exact;
		ti_dim q = ti_dim_exactdiv(&ctx, P(rows[i].a), P(rows[i].b), &exact);
		cr_expect(exact == rows[i].exact, "%s / (%s): got exact=%d, want %d", rows[i].a, rows[i].b, exact,
		          rows[i].exact);
		cr_expect(!strcmp(show(q), rows[i].want), "%s / (%s): got \"%s\", want \"%s\"", rows[i].a, rows[i].b,
		          show(q), rows[i].want);
	}
	EXPECT_OK();
}

Test(symdim, floordiv_by_a_symbol_works_only_when_exact)
{
	EXPECT_DIM(P("(N*T)//N"), "T");
	EXPECT_OK();
	ti_dim d = P("N//T");
	EXPECT_INT(d.value, 0);
	EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_E_UNSUPPORTED, err);
	EXPECT_STR(err.message, "division by a symbolic size 'T'");
}

/* ---- binding ---- */

Test(symdim, a_bound_symbol_is_an_integer)
{
	ASSERT_STATUS(ti_symctx_bind(&ctx, "N", 8, &err), TI_OK, err);
	ASSERT_STATUS(ti_symctx_bind(&ctx, "batch_size", 3, &err), TI_OK, err);
	ti_dim n = ti_dim_symbol(&ctx, "N");
	cr_expect(ti_dim_is_int(n) && n.value == 8, "N: got %s, want 8", show(n));
	EXPECT_DIM(P("(N + 2*1 - 1*(3 - 1) - 1)//2 + 1"), "4");
	EXPECT_DIM(P("batch_size*N*T"), "24*T");
	/* binding again replaces the value */
	ASSERT_STATUS(ti_symctx_bind(&ctx, "N", 5, &err), TI_OK, err);
	EXPECT_DIM(P("N"), "5");
	EXPECT_INT(ctx.bound_count, 2);
	EXPECT_OK();
}

Test(symdim, a_bound_symbol_the_description_never_uses_is_named_with_those_it_does)
{
	ASSERT_STATUS(ti_symctx_bind(&ctx, "N", 8, &err), TI_OK, err);
	ASSERT_STATUS(ti_symctx_bind(&ctx, "M", 3, &err), TI_OK, err);
	EXPECT_DIM(P("N*T"), "8*T");
	EXPECT_STATUS(ti_symctx_check_bound(&ctx, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "no symbol 'M' in the description (its symbols: N, T)");
}

Test(symdim, every_bound_symbol_used_passes_the_check)
{
	ASSERT_STATUS(ti_symctx_bind(&ctx, "N", 8, &err), TI_OK, err);
	EXPECT_DIM(P("N + 1"), "9");
	EXPECT_STATUS(ti_symctx_check_bound(&ctx, &err), TI_OK, err);
}

Test(symdim, binds_many_symbols)
{
	char name[16];
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "S%d", i);
		ASSERT_STATUS(ti_symctx_bind(&ctx, name, i, &err), TI_OK, err);
	}
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "S%d", i);
		EXPECT_INT(ti_dim_symbol(&ctx, name).value, i);
	}
	EXPECT_OK();
}

Test(symdim, bind_refuses_bad_names_and_negative_sizes)
{
	static const char *const names[] = {"", "1N", "N-1", "N T", "N.x", "é",
	                                    /* 65 bytes, one past the ceiling */
	                                    "a_name_longer_than_sixty_four_bytes_is_refused_as_a_symbol_name_X"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ti_error_clear(&err);
		ti_status s = ti_symctx_bind(&ctx, names[i], 1, &err);
		cr_expect(s == TI_E_INVALID, "bind '%s': got %s, want invalid argument", names[i], ti_status_name(s));
		EXPECT_CONTAINS(err.message, "bad symbol name");
	}
	EXPECT_STATUS(ti_symctx_bind(&ctx, NULL, 1, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_symctx_bind(&ctx, "N", -1, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "negative size -1 bound to 'N'");
	EXPECT_STATUS(ti_symctx_bind(&ctx, "_x9", 0, &err), TI_OK, err);
	EXPECT_INT(ctx.bound_count, 1);
	EXPECT_OK();
}

Test(symdim, symbol_refuses_a_bad_name)
{
	ti_dim d = ti_dim_symbol(&ctx, "2x");
	EXPECT_INT(d.value, 0);
	EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "bad symbol name '2x'");
}

/* ---- compare and assume ---- */

static const char *truth_name(ti_truth t) { return t == TI_TRUE ? "true" : t == TI_FALSE ? "false" : "unknown"; }

Test(symdim, compare_decides_what_symbols_at_least_1_prove)
{
	static const struct { const char *a; ti_cmp cmp; const char *b; ti_truth want; } rows[] = {
		{"N + 2", TI_CMP_GE, "3", TI_TRUE},
		{"N", TI_CMP_GE, "1", TI_TRUE},
		{"N", TI_CMP_GT, "0", TI_TRUE},
		{"N", TI_CMP_LT, "0", TI_FALSE},
		{"N", TI_CMP_GE, "2", TI_UNKNOWN},
		{"N - 5", TI_CMP_EQ, "0", TI_UNKNOWN},
		{"N - 5", TI_CMP_NE, "0", TI_UNKNOWN},
		{"2*N", TI_CMP_EQ, "N", TI_FALSE},
		{"2*N", TI_CMP_NE, "N", TI_TRUE},
		{"2*N", TI_CMP_GT, "N", TI_TRUE},
		{"N", TI_CMP_EQ, "N", TI_TRUE},
		{"N", TI_CMP_NE, "N", TI_FALSE},
		{"N", TI_CMP_LE, "N", TI_TRUE},
		{"N", TI_CMP_LT, "N", TI_FALSE},
		{"-N", TI_CMP_LT, "0", TI_TRUE},
		{"5 - N", TI_CMP_LE, "4", TI_TRUE},
		{"5 - N", TI_CMP_GE, "5", TI_FALSE},
		{"5 - N", TI_CMP_GT, "4", TI_FALSE},
		{"N - T", TI_CMP_GE, "0", TI_UNKNOWN},
		{"N*T", TI_CMP_GE, "1", TI_TRUE},
		{"N*T", TI_CMP_EQ, "0", TI_FALSE},
		{"(T - 1)//2 + 1", TI_CMP_GE, "1", TI_TRUE},
		{"(T - 1)//2 + 1", TI_CMP_GE, "2", TI_UNKNOWN},
		{"T//4", TI_CMP_GE, "0", TI_TRUE},
		{"(T - 5)//2", TI_CMP_GE, "-2", TI_TRUE},
		{"(T - 5)//2", TI_CMP_GE, "-1", TI_UNKNOWN},
		{"N*((T - 1)//2)", TI_CMP_GE, "0", TI_TRUE},
		{"N - (T - 1)//2", TI_CMP_GE, "0", TI_UNKNOWN},
		{"3", TI_CMP_LT, "4", TI_TRUE},
		{"4", TI_CMP_LT, "4", TI_FALSE},
		{"4", TI_CMP_EQ, "4", TI_TRUE},
		{"-9223372036854775807 - 1", TI_CMP_LT, "9223372036854775807", TI_TRUE},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ti_truth got = ti_dim_compare(&ctx, P(rows[i].a), rows[i].cmp, P(rows[i].b));
		cr_expect(got == rows[i].want, "%s (cmp %d) %s: got %s, want %s", rows[i].a, rows[i].cmp, rows[i].b,
		          truth_name(got), truth_name(rows[i].want));
	}
	EXPECT_OK();
}

/* A fixed-seed generator of expressions over N and T with integer divisors. */
static uint32_t random_state;

static uint32_t random_next(void)
{
	random_state = random_state * 1103515245u + 12345u;
	return random_state >> 16;
}

static void random_expression(char *buf, size_t size, int depth)
{
	static const char *const leaves[] = {"N", "T", "N", "T", "0", "1", "2", "3", "-1", "-2", "7"};
	if (depth == 0 || random_next() % 4 == 0) {
		snprintf(buf, size, "%s", leaves[random_next() % (sizeof(leaves) / sizeof(leaves[0]))]);
		return;
	}
	static const char *const ops[] = {"+", "-", "*", "//", "%", "//"};
	const char *o = ops[random_next() % (sizeof(ops) / sizeof(ops[0]))];
	char left[512], right[512];
	random_expression(left, sizeof(left), depth - 1);
	if (!strcmp(o, "//") || !strcmp(o, "%")) {
		static const int divisors[] = {1, 2, 3, 4, 6, -2, -3};
		snprintf(right, sizeof(right), "%d", divisors[random_next() % (sizeof(divisors) / sizeof(divisors[0]))]);
	} else {
		random_expression(right, sizeof(right), depth - 1);
	}
	snprintf(buf, size, "(%s %s %s)", left, o, right);
}

Test(symdim, random_expressions_keep_their_values_and_proofs_hold)
{
	random_state = 12345;
	int checked = 0;
	for (int i = 0; i < 400; i++) {
		char text[2048];
		random_expression(text, sizeof(text), 3);
		ti_dim d = P(text);
		cr_assert(ctx.status == TI_OK, "%s: %s", text, ctx.message);
		const char *printed = show(d);
		int64_t k = (int64_t)(random_next() % 9) - 4;
		ti_truth ge = ti_dim_compare(&ctx, d, TI_CMP_GE, ti_dim_int(k));
		ti_truth eq = ti_dim_compare(&ctx, d, TI_CMP_EQ, ti_dim_int(k));
		for (int64_t n = 1; n <= 7; n++) {
			for (int64_t t = 1; t <= 7; t++) {
				int64_t want = evaluate(text, n, t), got = evaluate(printed, n, t);
				cr_expect(got == want, "%s as \"%s\" at N=%lld T=%lld: got %lld, want %lld", text, printed,
				          (long long)n, (long long)t, (long long)got, (long long)want);
				cr_expect(ge == TI_UNKNOWN || (ge == TI_TRUE) == (want >= k),
				          "%s >= %lld was decided %s, but at N=%lld T=%lld it is %lld", printed, (long long)k,
				          truth_name(ge), (long long)n, (long long)t, (long long)want);
				cr_expect(eq == TI_UNKNOWN || (eq == TI_TRUE) == (want == k),
				          "%s == %lld was decided %s, but at N=%lld T=%lld it is %lld", printed, (long long)k,
				          truth_name(eq), (long long)n, (long long)t, (long long)want);
				checked++;
			}
		}
	}
	EXPECT_INT(checked, 400 * 49);
}

Test(symdim, compare_answers_unknown_rather_than_fail_on_overflow)
{
	ti_dim a = P("9223372036854775807*N"), b = P("-9223372036854775807*N");
	EXPECT_INT(ti_dim_compare(&ctx, a, TI_CMP_GT, b), TI_UNKNOWN);
	EXPECT_OK();
}

Test(symdim, assume_records_what_it_cannot_prove_once)
{
	ti_dim n = P("N"), t = P("T");
	cr_expect(ti_dim_assume(&ctx, n, TI_CMP_GE, ti_dim_int(2)));
	cr_expect(ti_dim_assume(&ctx, n, TI_CMP_GE, ti_dim_int(2)));
	cr_expect(ti_dim_assume(&ctx, t, TI_CMP_EQ, ti_dim_int(5)));
	cr_expect(ti_dim_assume(&ctx, P("(T - 1)//2 + 1"), TI_CMP_GE, ti_dim_int(2)));
	cr_expect(ti_dim_assume(&ctx, n, TI_CMP_NE, t));
	ASSERT_INT(ctx.assumption_count, 4);
	EXPECT_STR(ctx.assumptions[0], "N >= 2");
	EXPECT_STR(ctx.assumptions[1], "T == 5");
	EXPECT_STR(ctx.assumptions[2], "(T - 1)//2 + 1 >= 2");
	EXPECT_STR(ctx.assumptions[3], "N != T");
	EXPECT_OK();
}

Test(symdim, assume_records_nothing_it_can_decide)
{
	cr_expect(ti_dim_assume(&ctx, P("N + 2"), TI_CMP_GE, ti_dim_int(3)), "N + 2 >= 3 was refused");
	cr_expect(!ti_dim_assume(&ctx, P("N"), TI_CMP_LT, ti_dim_int(0)), "N < 0 was assumed");
	cr_expect(!ti_dim_assume(&ctx, P("2*N"), TI_CMP_EQ, P("N")), "2*N == N was assumed");
	cr_expect(!ti_dim_assume(&ctx, ti_dim_int(3), TI_CMP_EQ, ti_dim_int(4)), "3 == 4 was assumed");
	EXPECT_INT(ctx.assumption_count, 0);
	EXPECT_OK();
}

Test(symdim, assume_stops_recording_past_the_ceiling_but_goes_on)
{
	ti_dim n = P("N");
	for (int i = 0; i < TI_SYM_MAX_ASSUMPTIONS + 50; i++)
		cr_assert(ti_dim_assume(&ctx, n, TI_CMP_GE, ti_dim_int(i + 2)), "N >= %d was refused", i + 2);
	EXPECT_INT(ctx.assumption_count, TI_SYM_MAX_ASSUMPTIONS);
	EXPECT_STR(ctx.assumptions[TI_SYM_MAX_ASSUMPTIONS - 1], "N >= 257");
	EXPECT_OK();
}

/* ---- same ---- */

Test(symdim, same_is_equality_of_canonical_forms)
{
	static const struct { const char *a, *b; bool same; } rows[] = {
		{"N", "N", true},
		{"2*N", "N + N", true},
		{"N*T", "T*N", true},
		{"(T + 1)//2", "(T - 1)//2 + 1", true},
		{"(2*N + 3)//2", "N + 1", true},
		{"N + 1 - N", "1", true},
		{"7", "7", true},
		{"N", "T", false},
		{"N", "1", false},
		{"N + 1", "N + 2", false},
		{"N//2", "N//3", false},
		{"7", "8", false},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool got = ti_dim_same(P(rows[i].a), P(rows[i].b));
		cr_expect(got == rows[i].same, "same(%s, %s): got %d, want %d", rows[i].a, rows[i].b, got, rows[i].same);
	}
	EXPECT_OK();
}

/* ---- ceilings ---- */

Test(symdim, refuses_a_polynomial_past_the_term_ceiling)
{
	char name[16];
	ti_dim sum = ti_dim_int(0);
	for (int i = 0; i < TI_SYM_MAX_TERMS; i++) {
		snprintf(name, sizeof(name), "S%d", i);
		sum = ti_dim_add(&ctx, sum, ti_dim_symbol(&ctx, name));
	}
	EXPECT_OK();
	ti_dim d = ti_dim_add(&ctx, sum, ti_dim_symbol(&ctx, "one_more"));
	EXPECT_INT(d.value, 0);
	EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_E_LIMIT, err);
	EXPECT_STR(err.message, "symbolic size has more than 64 terms");
}

Test(symdim, refuses_a_product_past_the_term_ceiling)
{
	/* (1 + A)(1 + B)...: 2**7 = 128 terms */
	ti_dim d = ti_dim_int(1);
	for (int i = 0; i < 7; i++) {
		char name[8];
		snprintf(name, sizeof(name), "A%d", i);
		d = ti_dim_mul(&ctx, d, ti_dim_add(&ctx, ti_dim_symbol(&ctx, name), ti_dim_int(1)));
	}
	EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_E_LIMIT, err);
	EXPECT_CONTAINS(err.message, "more than 64 terms");
}

Test(symdim, refuses_a_degree_past_the_ceiling)
{
	P("N**16");
	EXPECT_OK();
	P("N**17");
	EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_E_LIMIT, err);
	EXPECT_CONTAINS(err.message, "degree");
}

Test(symdim, refuses_more_atoms_than_the_ceiling)
{
	char name[16];
	int made = 0;
	for (int i = 0; i < TI_SYM_MAX_ATOMS && ctx.status == TI_OK; i++, made++) {
		snprintf(name, sizeof(name), "S%d", i);
		ti_dim_symbol(&ctx, name);
	}
	/* N and T were interned by the fixture */
	EXPECT_INT(made, TI_SYM_MAX_ATOMS - 2 + 1);
	EXPECT_INT(ctx.atom_count, TI_SYM_MAX_ATOMS);
	EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_E_LIMIT, err);
	EXPECT_STR(err.message, "more than 4096 symbols and floor divisions");
}

Test(symdim, refuses_floor_divisions_nested_too_deep)
{
	ti_dim n = P("N"), x = P("T");
	int depth = 0;
	for (; depth < 100 && ctx.status == TI_OK; depth++)
		x = ti_dim_floordiv(&ctx, ti_dim_add(&ctx, x, n), ti_dim_int(2));
	EXPECT_INT(depth, 33);
	EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_E_LIMIT, err);
	EXPECT_STR(err.message, "floor divisions nested deeper than 32");
}

Test(symdim, out_of_memory_is_a_sticky_error)
{
	ti_arena tiny;
	ti_symctx c;
	ti_arena_init(&tiny, 0);
	ti_symctx_init(&c, &tiny);
	ti_dim d = ti_dim_symbol(&c, "N");
	EXPECT_INT(d.value, 0);
	EXPECT_STATUS(ti_sym_ok(&c, &err), TI_E_NOMEM, err);
	cr_expect(ti_dim_str(&c, ti_dim_int(3)) == NULL);
	EXPECT_STATUS(ti_symctx_bind(&c, "N", 1, &err), TI_E_NOMEM, err);
	ti_arena_release(&tiny);
}

/* ---- formatting ---- */

Test(symdim, format_cuts_with_dots_and_always_terminates)
{
	const char *full = "(T - 1)//2 + 1";
	ti_dim d = P(full);
	size_t len = strlen(full);
	for (size_t size = 1; size <= len + 2; size++) {
		char buf[32];
		memset(buf, 'x', sizeof(buf));
		const char *got = ti_dim_format(d, buf, size);
		cr_assert(got == buf);
		cr_assert(memchr(buf, '\0', size) != NULL, "size %zu: not terminated", size);
		char want[32];
		if (size > len)
			snprintf(want, sizeof(want), "%s", full);
		else if (size - 1 >= 3)
			snprintf(want, sizeof(want), "%.*s...", (int)(size - 4), full);
		else
			snprintf(want, sizeof(want), "%.*s", (int)(size - 1), "...");
		cr_expect(!strcmp(buf, want), "size %zu: got \"%s\", want \"%s\"", size, buf, want);
		cr_expect(buf[size] == 'x', "size %zu: wrote past the buffer", size);
	}
	char untouched = 'x';
	cr_expect(ti_dim_format(d, &untouched, 0) == &untouched && untouched == 'x', "a 0-byte buffer was written");
	EXPECT_OK();
}

Test(symdim, str_copies_into_the_arena)
{
	const char *s = ti_dim_str(&ctx, P("N*T + 1"));
	EXPECT_STR(s, "N*T + 1");
	EXPECT_STR(ti_dim_str(&ctx, ti_dim_int(-42)), "-42");
	EXPECT_OK();
}

Test(symdim, sym_ok_copies_the_first_failure)
{
	EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_OK, err);
	ti_dim_add(&ctx, ti_dim_int(INT64_MAX), ti_dim_int(1));
	ti_dim_floordiv(&ctx, ti_dim_int(1), ti_dim_int(0));
	EXPECT_STATUS(ti_sym_ok(&ctx, &err), TI_E_LIMIT, err);
	EXPECT_STR(err.message, "size arithmetic overflows int64");
	EXPECT_INT(err.code, TI_E_LIMIT);
	EXPECT_STATUS(ti_sym_ok(&ctx, NULL), TI_E_LIMIT, err);
}

/* ---- ti_dim_parse: formulas as descriptions and --input write them ---- */

Test(symdim, parses_back_every_form_it_prints)
{
	static const char *const forms[] = {"8", "N", "2*N", "N*197", "(T - 1)//2 + 1", "N*T + 3", "-N + 10", "T % 4"};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		ti_dim d;
		cr_assert(ti_dim_parse(&ctx, forms[i], &d), "'%s' parses", forms[i]);
		char printed[128];
		ti_dim_format(d, printed, sizeof(printed));
		ti_dim again;
		cr_assert(ti_dim_parse(&ctx, printed, &again), "its printed form '%s' parses", printed);
		cr_expect(ti_dim_same(d, again), "'%s' reads back as itself from '%s'", forms[i], printed);
	}
	ti_dim d;
	cr_assert(ti_dim_parse(&ctx, "N*197", &d));
	EXPECT_STR(ti_dim_str(&ctx, d), "197*N");
}

Test(symdim, refuses_what_is_no_formula)
{
	static const char *const bad[] = {"", "N*", "(N", "N)", "2 3", "N + * 2", "x.y", "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ti_dim d;
		cr_expect(!ti_dim_parse(&ctx, bad[i], &d), "'%s' is not a formula", bad[i]);
	}
}
