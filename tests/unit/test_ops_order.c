/*
 * test_ops_order.c - ordering, cumulative and triangular operators (sort.c,
 * scan.c, triangular.c), each row checked against torch on the meta device.
 */
#include "ops_cases.h"

static const rule_row rules[] = {
	{"cumsum", "{3, 4}, 1", "[3, 4]", "[4, 1]", "float32"},
	{"cumsum", "int32{3}, 0", "[3]", "[1]", "int64"},
	{"cumsum", "int32{3}, 0, dtype='float16'", "[3]", "[1]", "float16"},
	{"cumprod", "bool{3}, 0", "[3]", "[1]", "int64"},
	{"cumsum", "{4, 3 : 1, 4}, 0", "[4, 3]", "[3, 1]", "float32"},
	{"logcumsumexp", "{N, 5}, -1", "[N, 5]", "[5, 1]", "float32"},
	{"cummax", "{2, 5}, 1", "[2, 5]", "[5, 1]", "float32"},
	{"sort", "{3, 4}, 1", "[3, 4]", "[4, 1]", "float32"},
	{"argsort", "{3, 4}", "[3, 4]", "[4, 1]", "int64"},
	{"msort", "int8{3, 4}", "[3, 4]", "[4, 1]", "int8"},
	{"topk", "{3, 4}, 2", "[3, 2]", "[2, 1]", "float32"},
	{"topk", "{4, 3 : 1, 4}, 2, dim=0", "[2, 3]", "[3, 1]", "float32"},
	{"topk", "{N, 10}, 3", "[N, 3]", "[3, 1]", "float32"},
	{"kthvalue", "{3, 4}, 2, 1", "[3]", "[1]", "float32"},
	{"kthvalue", "{3, 4}, 2, 1, True", "[3, 1]", "[1, 1]", "float32"},
	{"triu", "{3, 4}", "[3, 4]", "[4, 1]", "float32"},
	{"tril", "{4, 3 : 1, 4}, -1", "[4, 3]", "[3, 1]", "float32"},
	{"triu", "bool{T, T}", "[T, T]", "[T, 1]", "bool"},
};

ParameterizedTestParameters(ops_order, rules_follow_pytorch) { return ROWS(rules); }

ParameterizedTest(const rule_row *r, ops_order, rules_follow_pytorch, .init = setup, .fini = teardown)
{
	check_rule(r);
}

static const error_row errors[] = {
	{"topk", "{3, 4}, 5, dim=1", "selected index k out of range"},
	{"kthvalue", "{3, 4}, 5, 1", "kthvalue(): selected number k out of range for dimension 1"},
	{"kthvalue", "{3, 4}, 0, 1", "kthvalue(): selected number k out of range for dimension 1"},
	{"cumsum", "{3, 4}, 2", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
	{"triu", "{3}", "triu: input tensor must have at least 2 dimensions"},
	{"tril", "{}", "tril: input tensor must have at least 2 dimensions"},
};

ParameterizedTestParameters(ops_order, errors_are_pytorchs) { return ROWS(errors); }

ParameterizedTest(const error_row *r, ops_order, errors_are_pytorchs, .init = setup, .fini = teardown)
{
	check_error(r);
}

Test(ops_order, sorting_has_no_counting_rule_but_a_scan_counts_one_flop_per_element, .init = setup, .fini = teardown)
{
	cr_assert(run("sort", "{3, 4}") == TI_OK, "%s", err.message);
	cr_expect(call.uncounted_part, "sort must say it has no counting rule");
	cr_assert(run("cumsum", "{3, 4}, 0") == TI_OK, "%s", err.message);
	EXPECT_STR(flops_text(), "12");
	cr_expect(!call.uncounted_part);
}
