/*
 * test_ops_python.c - the Python-level operations of a traced model
 * (src/ops/python.c), torchvision's stochastic_depth (activation.c) and
 * meshgrid (join.c).
 *
 * Expected geometry is worked out by hand from the rules PyTorch's meta
 * kernels follow (at::slice, select, unsqueeze, view + expand); Python
 * values from Python's own arithmetic; messages are PyTorch's or Python's
 * text. Rows are calls written as Python text (tests/unit/ops_cases.h):
 * x[1:8:3] is getitem(x, slice(1, 8, 3)), x[..., None] getitem(x, (..., None)).
 */
#include "ops_cases.h"

#include "tinspect/model.h"
#include "tinspect/value.h"

TestSuite(ops_python, .init = setup, .fini = teardown);

/* A Python value as Python prints it: 3, 2.5, True, (2, N), a tensor's shape. */
static const char *value_text(const ti_arg *a)
{
	char buf[1024];
	size_t n = 0;
	switch (a->kind) {
	case TI_ARG_INT: return dim_text(a->as.dim);
	case TI_ARG_FLOAT: ti_format_float(a->as.real, buf, sizeof(buf)); return ti_arena_strdup(&arena, buf);
	case TI_ARG_BOOL: return a->as.boolean ? "True" : "False";
	case TI_ARG_NONE: return "None";
	case TI_ARG_STR: return a->as.str;
	case TI_ARG_TENSOR: return ti_meta_shape_str(&ctx, a->as.tensor);
	case TI_ARG_LIST:
		buf[n++] = '(';
		for (int i = 0; i < a->as.list.count && n < sizeof(buf); i++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? ", " : "", value_text(&a->as.list.items[i]));
		snprintf(buf + n, sizeof(buf) - n, "%s)", a->as.list.count == 1 ? "," : "");
		return ti_arena_strdup(&arena, buf);
	default: return "?";
	}
}

/* ---- tensor indexing: views ---- */

static const rule_row views[] = {
	{"getitem", "{2, 3, 4}, 1", "[3, 4]", "[4, 1]", "float32"},
	{"getitem", "{2, 3, 4}, -1", "[3, 4]", "[4, 1]", "float32"},
	{"getitem", "{2, 3, 4}, (0, 1)", "[4]", "[1]", "float32"},
	{"getitem", "{2, 3, 4}, (slice(None, None, None), 1)", "[2, 4]", "[12, 1]", "float32"},
	{"getitem", "{2, 3, 4}, (..., 1)", "[2, 3]", "[12, 4]", "float32"},
	{"getitem", "{2, 3, 4}, (None, ...)", "[1, 2, 3, 4]", "[24, 12, 4, 1]", "float32"},
	{"getitem", "{2, 3, 4}, (..., None)", "[2, 3, 4, 1]", "[12, 4, 1, 1]", "float32"},
	{"getitem", "{2, 3, 4}, None", "[1, 2, 3, 4]", "[24, 12, 4, 1]", "float32"},
	{"getitem", "{2, 3, 4}, ...", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"getitem", "{2, 3, 4}, slice(1, None, None)", "[1, 3, 4]", "[12, 4, 1]", "float32"},
	{"getitem", "{10}, slice(1, 8, 3)", "[3]", "[3]", "float32"},
	{"getitem", "{10}, slice(-3, None, None)", "[3]", "[1]", "float32"},
	{"getitem", "{10}, slice(None, -2, 2)", "[4]", "[2]", "float32"},
	{"getitem", "{10}, slice(5, 100, None)", "[5]", "[1]", "float32"},
	{"getitem", "{10}, slice(8, 2, None)", "[0]", "[1]", "float32"},
	{"getitem", "{10}, slice(-20, 3, None)", "[3]", "[1]", "float32"},
	{"getitem", "{2*T}, slice('T', None, None)", "[T]", "[1]", "float32"},
	{"getitem", "{4, 6}, (slice(None, None, 2), slice(1, None, 2))", "[2, 3]", "[12, 2]", "float32"},
	{"getitem", "{2, 3, 4}, (None, 0, None, slice(None, None, None), 2)", "[1, 1, 3]", "[24, 12, 4]", "float32"},
	{"getitem", "{3, 2 : 1, 3}, (slice(None, None, None), 0)", "[3]", "[1]", "float32"},
	{"getitem", "{B, T, C}, (slice(None, None, None), -1)", "[B, C]", "[T*C, 1]", "float32"},
	{"getitem", "{B, T, C}, (..., slice(None, None, 2))", "[B, T, (C - 1)//2 + 1]", "[T*C, C, 2]", "float32"},
	{"getitem", "int64{2, 3}, (1, slice(1, None, None))", "[2]", "[1]", "int64"},
	/* one integer index tensor gathers: the index's shape in place of the dim, contiguous */
	{"getitem", "{5, 3}, int64{4}", "[4, 3]", "[3, 1]", "float32"},
	{"getitem", "{2, 5, 3}, (slice(None, None, None), int64{2, 4})", "[2, 2, 4, 3]", "[24, 12, 3, 1]", "float32"},
	{"getitem", "{2, 5, 3}, (..., int32{7})", "[2, 5, 7]", "[35, 7, 1]", "float32"},
};

ParameterizedTestParameters(ops_python, indexing_a_tensor_gives_pytorch_s_views)
{
	return ROWS(views);
}

ParameterizedTest(const rule_row *r, ops_python, indexing_a_tensor_gives_pytorch_s_views, .init = setup,
                  .fini = teardown)
{
	check_rule(r);
	EXPECT_INT(call.output_count, 1);
	cr_expect(call.counted && !strcmp(flops_text(), "0"), "%s(%s): counted as free", r->op, r->args);
}

/* ---- Python values: size, dim, numel, tuple items, operator.* ---- */

typedef struct value_row {
	char op[24], args[96], value[64];
} value_row;

static const value_row values[] = {
	{"size", "{2, 3, 4}", "(2, 3, 4)"},
	{"size", "{B, 3*N}", "(B, 3*N)"},
	{"size", "{}", "()"},
	{"size", "{2, 3, 4}, 1", "3"},
	{"size", "{2, 3, 4}, -1", "4"},
	{"size", "{B, T}, dim=1", "T"},
	{"Tensor.size", "{2, 3}", "(2, 3)"},
	{"dim", "{2, 3, 4}", "3"},
	{"dim", "{}", "0"},
	{"numel", "{2, 3, 4}", "24"},
	{"numel", "{}", "1"},
	{"numel", "{B, 3, T}", "3*B*T"},
	{"getitem", "(2, 3, 4), 1", "3"},
	{"getitem", "(2, 3, 4), -1", "4"},
	{"getitem", "(2, 3, 4), slice(1, None, None)", "(3, 4)"},
	{"getitem", "(2, 3, 4, 5), slice(None, None, -2)", "(5, 3)"},
	{"getitem", "(2, 3, 4), slice(-2, None, None)", "(3, 4)"},
	{"getitem", "(2, 3, 4), slice(5, None, None)", "()"},
	{"getitem", "(2, 3, 4), slice(None, 1, None)", "(2,)"},
	{"getitem", "({2, 3}, {4}), 1", "[4]"},
	{"operator.getitem", "(2, 3), 0", "2"},
	{"operator.add", "2, 3", "5"},
	{"operator.add", "N, 1", "N + 1"},
	{"operator.add", "True, 1", "2"},
	{"operator.add", "'2*N', 1", "2*N + 1"},
	{"operator.add", "2, 0.5", "2.5"},
	{"operator.sub", "2, 5", "-3"},
	{"operator.sub", "T, 1", "T - 1"},
	{"operator.mul", "N, 197", "197*N"},
	{"operator.mul", "1.5, 2", "3.0"},
	{"operator.floordiv", "7, 2", "3"},
	{"operator.floordiv", "-7, 2", "-4"},
	{"operator.floordiv", "T, 2", "T//2"},
	{"operator.floordiv", "7.5, 2", "3.0"},
	{"operator.floordiv", "-7.5, 2", "-4.0"},
	{"operator.mod", "-7, 2", "1"},
	{"operator.mod", "7, -2", "-1"},
	{"operator.mod", "-7.5, 2", "0.5"},
	{"operator.truediv", "7, 2", "3.5"},
	{"operator.truediv", "1.5, 0.5", "3.0"},
	{"operator.pow", "2, 10", "1024"},
	{"operator.pow", "-1, 3", "-1"},
	{"operator.pow", "2, -1", "0.5"},
	{"operator.pow", "4, 0.5", "2.0"},
	{"operator.neg", "3", "-3"},
	{"operator.neg", "N", "-N"},
	{"operator.neg", "1.5", "-1.5"},
	{"operator.eq", "3, 3", "True"},
	{"operator.ne", "3, 3", "False"},
	{"operator.lt", "2, 3", "True"},
	{"operator.le", "3, 2", "False"},
	{"operator.gt", "2.5, 2", "True"},
	{"operator.ge", "N, 1", "True"},
	{"operator.lt", "N, 0", "False"},
	{"operator.eq", "'ij', 'ij'", "True"},
	{"operator.eq", "None, 0", "False"},
	{"operator.ne", "None, 0", "True"},
};

ParameterizedTestParameters(ops_python, python_values_are_python_s)
{
	return ROWS(values);
}

ParameterizedTest(const value_row *r, ops_python, python_values_are_python_s, .init = setup, .fini = teardown)
{
	ti_status st = run(r->op, r->args);
	cr_assert(st == TI_OK, "%s(%s): got %s (\"%s\")", r->op, r->args, ti_status_name(st), err.message);
	ASSERT_INT(call.output_count, 1);
	const char *got = value_text(&call.outputs[0]);
	cr_expect(!strcmp(got, r->value), "%s(%s): got %s, want %s", r->op, r->args, got, r->value);
	cr_expect(call.counted && !strcmp(flops_text(), "0"), "%s(%s): counted as free", r->op, r->args);
	EXPECT_INT(sym.assumption_count, 0);
}

/* ---- errors ---- */

static const error_row errors[] = {
	{"getitem", "{3, 2}, 5", "index 5 is out of bounds for dimension 0 with size 3"},
	{"getitem", "{3, 2}, -4", "index -4 is out of bounds for dimension 0 with size 3"},
	{"getitem", "{3, 2}, (0, 5)", "index 5 is out of bounds for dimension 1 with size 2"},
	/* the dimension PyTorch names is the item's place in the index, not the tensor's dim */
	{"getitem", "{3, 2, 4}, (..., 5)", "index 5 is out of bounds for dimension 1 with size 4"},
	{"getitem", "{3, 2}, (0, 0, 0)", "too many indices for tensor of dimension 2"},
	{"getitem", "{}, 0",
	 "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a "
	 "0-dim tensor to a number"},
	{"getitem", "{}, (0,)", "too many indices for tensor of dimension 0"},
	{"getitem", "{}, slice(None, None, None)", "slice() cannot be applied to a 0-dim tensor."},
	{"getitem", "{5}, slice(None, None, 0)", "slice step cannot be zero"},
	{"getitem", "{5}, slice(None, None, -1)", "step must be greater than zero"},
	{"getitem", "{2, 3}, (..., ...)", "an index can only have a single ellipsis ('...')"},
	{"getitem", "{5}, bool{5}",
	 "indexing with a bool mask runs nonzero(): the output shape depends on the values in the tensor, which meta "
	 "tensors do not have"},
	{"getitem", "{5}, {2}", "tensors used as indices must be long, int, byte or bool tensors"},
	{"getitem", "(2, 3), 2", "tuple index out of range"},
	{"getitem", "(2, 3), -3", "tuple index out of range"},
	{"getitem", "(2, 3), slice(None, None, 0)", "slice step cannot be zero"},
	{"size", "{2, 3}, 5", "Dimension out of range (expected to be in range of [-2, 1], but got 5)"},
	{"size", "{}, 0", "Dimension specified as 0 but tensor has no dimensions"},
	{"operator.floordiv", "7, 0", "integer division or modulo by zero"},
	{"operator.mod", "7, 0", "integer division or modulo by zero"},
	{"operator.truediv", "7, 0", "division by zero"},
	{"operator.truediv", "7.5, 0", "float division by zero"},
	{"operator.floordiv", "7.5, 0", "float floor division by zero"},
	{"operator.mod", "7.5, 0.0", "float modulo"},
	{"operator.pow", "0, -1", "0.0 cannot be raised to a negative power"},
	{"_assert", "False, 'x must be 4-D'", "x must be 4-D"},
	{"_assert", "0, 'zero is falsy'", "zero is falsy"},
	{"torch._assert", "None, 'None is falsy'", "None is falsy"},
	{"stochastic_depth", "{2, 3}, 1.5, 'row'", "drop probability has to be between 0 and 1, but got 1.5"},
	{"stochastic_depth", "{2, 3}, -0.1, 'row'", "drop probability has to be between 0 and 1, but got -0.1"},
	{"stochastic_depth", "{2, 3}, 0.2, 'col'", "mode has to be either 'batch' or 'row', but got col"},
	{"stochastic_depth", "int64{2, 3}, 0.2, 'row'", "result type Float can't be cast to the desired output type Long"},
	{"meshgrid", "{2, 3}, {4}",
	 "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: tensor(..., device='meta', size=(2, 3))"},
	{"meshgrid", "{2}, {3}, indexing='yx'", "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: yx"},
	{"meshgrid", "{2}, int64{3}", "meshgrid expects all tensors to have the same dtype"},
	{"meshgrid", "[]", "meshgrid expects a non-empty TensorList"},
};

ParameterizedTestParameters(ops_python, errors_are_pytorch_s_and_python_s)
{
	return ROWS(errors);
}

ParameterizedTest(const error_row *r, ops_python, errors_are_pytorch_s_and_python_s, .init = setup,
                  .fini = teardown)
{
	check_error(r);
}

/* Bad descriptions: what Python raises as a TypeError, or what we do not model. */
static const error_row corrupt[] = {
	{"operator.add", "2, 'x y'", "unsupported operand type(s) for +: 'int' and 'str'"},
	{"operator.lt", "None, 2", "'<' not supported between instances of 'NoneType' and 'int'"},
	{"operator.neg", "None", "bad operand type for unary -: 'NoneType'"},
	{"getitem", "3, 0", "'int' object is not subscriptable"},
	{"getitem", "(2, 3), 'a b'", "tuple indices must be integers or slices, not str"},
	{"getitem", "{2, 3}, 1.5",
	 "unsupported index: only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
	 "indices (got float)"},
	{"getitem", "{2, 3}, (int64{2}, int64{2})", "unsupported index: more than one index tensor"},
};

ParameterizedTestParameters(ops_python, bad_descriptions_are_corrupt)
{
	return ROWS(corrupt);
}

ParameterizedTest(const error_row *r, ops_python, bad_descriptions_are_corrupt, .init = setup, .fini = teardown)
{
	EXPECT_STATUS(run(r->op, r->args), TI_E_CORRUPT, err);
	EXPECT_STR(err.message, r->message);
}

/* ---- stochastic_depth: counts ---- */

static const macs_row depth_counts[] = {
	{"stochastic_depth", "{4, 3, 8, 8}, 0.2, 'row'", "[4, 3, 8, 8]", "", "0", "768"},
	{"stochastic_depth", "{4, 3}, 0.2, 'batch'", "[4, 3]", "", "0", "12"},
	{"stochastic_depth", "{4, 3}, 1.0, 'row'", "[4, 3]", "", "0", "12"},
	{"stochastic_depth", "{B, 3}, 0.5, 'row', True", "[B, 3]", "", "0", "3*B"},
	{"stochastic_depth", "{4, 3}, 0.2, 'row', False", "[4, 3]", "", "0", "0"},
	{"stochastic_depth", "{4, 3}, 0.0, 'row'", "[4, 3]", "", "0", "0"},
};

ParameterizedTestParameters(ops_python, stochastic_depth_multiplies_once_per_element_in_training)
{
	return ROWS(depth_counts);
}

ParameterizedTest(const macs_row *r, ops_python, stochastic_depth_multiplies_once_per_element_in_training,
                  .init = setup, .fini = teardown)
{
	check_macs(r);
}

Test(ops_python, stochastic_depth_in_eval_or_with_p_0_is_the_input_itself)
{
	ASSERT_STATUS(run("stochastic_depth", "{4, 3}, 0.2, 'row', training=False"), TI_OK, err);
	cr_expect(output(0) == call.in.args[0].as.tensor, "eval: the same tensor");
	ASSERT_STATUS(run("stochastic_depth", "{4, 3}, 0.0, 'batch'"), TI_OK, err);
	cr_expect(output(0) == call.in.args[0].as.tensor, "p == 0: the same tensor");
	ASSERT_STATUS(run("stochastic_depth", "{4, 3}, 0.2, 'row'"), TI_OK, err);
	cr_expect(output(0) != call.in.args[0].as.tensor, "training: input * noise, a new tensor");
}

Test(ops_python, stochastic_depth_answers_to_torchvision_s_names)
{
	ASSERT_STATUS(run("torchvision.ops.stochastic_depth", "{4, 3}, 0.2, 'row'"), TI_OK, err);
	EXPECT_STR(output_shape(), "[4, 3]");
	ASSERT_STATUS(run("torchvision.ops.stochastic_depth.stochastic_depth", "{4, 3}, 0.2, 'row'"), TI_OK, err);
	EXPECT_STR(output_shape(), "[4, 3]");
}

/* ---- meshgrid ---- */

Test(ops_python, meshgrid_views_each_input_expanded_along_the_others)
{
	ASSERT_STATUS(run("meshgrid", "{3}, {4}"), TI_OK, err);
	ASSERT_INT(call.output_count, 2);
	EXPECT_STR(layout_text(&call.outputs[0]), "[3, 4]/[1, 0]");
	EXPECT_STR(layout_text(&call.outputs[1]), "[3, 4]/[0, 1]");
	cr_expect(call.counted && !strcmp(flops_text(), "0"), "free");
}

Test(ops_python, meshgrid_xy_swaps_the_first_two_axes)
{
	ASSERT_STATUS(run("meshgrid", "[{3}, {4}], indexing='xy'"), TI_OK, err);
	ASSERT_INT(call.output_count, 2);
	EXPECT_STR(layout_text(&call.outputs[0]), "[4, 3]/[0, 1]");
	EXPECT_STR(layout_text(&call.outputs[1]), "[4, 3]/[1, 0]");
}

Test(ops_python, meshgrid_takes_a_0_dim_tensor_as_one_element)
{
	ASSERT_STATUS(run("meshgrid", "{}, {2}, indexing='ij'"), TI_OK, err);
	ASSERT_INT(call.output_count, 2);
	EXPECT_STR(layout_text(&call.outputs[0]), "[1, 2]/[1, 0]");
	EXPECT_STR(layout_text(&call.outputs[1]), "[1, 2]/[2, 1]");
}

/* ---- details ---- */

Test(ops_python, an_index_keeps_dtype_and_requires_grad_as_a_view_does)
{
	ASSERT_STATUS(run("getitem", "grad bfloat16{2, 3}, (0, slice(1, None, None))"), TI_OK, err);
	EXPECT_INT(output(0)->dtype, TI_DT_BFLOAT16);
	cr_expect(output(0)->requires_grad, "a view of a tensor that requires grad requires grad");
	ASSERT_STATUS(run("getitem", "grad {5, 3}, int64{2}"), TI_OK, err);
	cr_expect(output(0)->requires_grad, "a gather of a tensor that requires grad requires grad");
}

Test(ops_python, x_colon_is_a_new_view_not_the_input_itself)
{
	ASSERT_STATUS(run("getitem", "{2, 3}, slice(None, None, None)"), TI_OK, err);
	cr_expect(output(0) != call.in.args[0].as.tensor, "get_item returns an alias");
	EXPECT_STR(output_layout(), "[2, 3]/[3, 1]");
}

Test(ops_python, a_slice_past_a_symbolic_size_assumes_the_size_is_large_enough)
{
	ASSERT_STATUS(run("getitem", "{T}, slice(None, 5, None)"), TI_OK, err);
	EXPECT_STR(output_layout(), "[5]/[1]");
	ASSERT_INT(sym.assumption_count, 1);
	EXPECT_CONTAINS(sym.assumptions[0], "T");
}

Test(ops_python, a_comparison_nobody_can_decide_is_assumed_true_and_reported)
{
	ASSERT_STATUS(run("operator.eq", "N, 4"), TI_OK, err);
	EXPECT_STR(value_text(&call.outputs[0]), "True");
	ASSERT_INT(sym.assumption_count, 1);
	EXPECT_CONTAINS(sym.assumptions[0], "N");
}

Test(ops_python, assert_passes_a_true_condition_and_a_symbolic_size)
{
	ASSERT_STATUS(run("_assert", "True, 'fine'"), TI_OK, err);
	EXPECT_INT(call.output_count, 0);
	/* a symbol is a size, at least 1: truthy without an assumption */
	ASSERT_STATUS(run("_assert", "N, 'N is not 0'"), TI_OK, err);
	EXPECT_INT(sym.assumption_count, 0);
	/* N - 4 may be 0: assumed not, and reported */
	ti_arg args[2] = {ti_arg_dim(ti_dim_sub(&sym, ti_dim_symbol(&sym, "N"), ti_dim_int(4))), ti_arg_str("N is not 4")};
	ASSERT_STATUS(ti_op_invoke(&ctx, "_assert", args, 2, &call, &err), TI_OK, err);
	EXPECT_INT(sym.assumption_count, 1);
}

Test(ops_python, getitem_takes_items_of_what_size_returned)
{
	ASSERT_STATUS(run("size", "{B, T, 8}"), TI_OK, err);
	ti_arg args[2] = {call.outputs[0], ti_arg_int(1)};
	ti_op_call item;
	ASSERT_STATUS(ti_op_invoke(&ctx, "getitem", args, 2, &item, &err), TI_OK, err);
	EXPECT_STR(value_text(&item.outputs[0]), "T");
	args[1] = ti_arg_int(-1);
	ASSERT_STATUS(ti_op_invoke(&ctx, "getitem", args, 2, &item, &err), TI_OK, err);
	EXPECT_STR(value_text(&item.outputs[0]), "8");
}

Test(ops_python, python_operators_never_meet_the_tensor_ones_by_name)
{
	const ti_op_rule *py = ti_op_find("operator.add"), *tensor = ti_op_find("add");
	cr_assert(py && tensor, "both found");
	cr_expect(!strncmp(py->signature, "operator.add(", 13), "operator.add is Python's: %s", py->signature);
	cr_expect(!strncmp(tensor->signature, "add(", 4), "add is the tensor op: %s", tensor->signature);
	cr_expect(ti_op_find("torch.operator.add") == NULL || ti_op_find("torch.operator.add") == py,
	          "a prefix never leads to the tensor add");
	cr_expect(ti_op_find("torch._assert") == ti_op_find("_assert"), "torch._assert is _assert");
	cr_expect(ti_op_find("Tensor.size") == ti_op_find("size"), "Tensor.size is size");
}

/* A resolver as the runner's: the graph's names. */
static ti_arg named_tensor;

static ti_status resolve_names(void *user, const char *name, ti_arg *out, ti_error *e)
{
	(void)user;
	if (strcmp(name, "x") != 0)
		return TI_FAIL(e, TI_E_CORRUPT, "undefined tensor '%s'", name);
	*out = named_tensor;
	return TI_OK;
}

Test(ops_python, any_resolves_graph_names_and_leaves_other_strings)
{
	named_tensor = ti_arg_tensor(ti_meta_new(&ctx, TI_DT_INT64, 1, (ti_dim[]){ti_dim_int(2)}));
	ctx.resolve = resolve_names;
	/* x as the index tensor inside a tuple; "..." names nothing and stays Ellipsis */
	ASSERT_STATUS(run("getitem", "{4, 5}, ('...', 'x')"), TI_OK, err);
	EXPECT_STR(output_layout(), "[4, 2]/[2, 1]");
	ASSERT_STATUS(run("size", "'x'"), TI_OK, err);
	EXPECT_STR(value_text(&call.outputs[0]), "(2,)");
}

/* ---- a description: the JSON slice and the values flow through the graph ---- */

static const char *traced =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 197, 768], \"dtype\": \"float32\"}},"
	" \"graph\": ["
	"  {\"out\": \"s\", \"op\": \"size\", \"args\": [\"x\"]},"
	"  {\"out\": \"n\", \"op\": \"getitem\", \"args\": [\"s\", 0]},"
	"  {\"out\": \"ok\", \"op\": \"operator.eq\", \"args\": [\"n\", \"n\"]},"
	"  {\"op\": \"torch._assert\", \"args\": [\"ok\", \"batch\"]},"
	"  {\"out\": \"cls\", \"op\": \"getitem\", \"args\": [\"x\", [{\"slice\": [null, null, null]}, 0]]},"
	"  {\"out\": \"rest\", \"op\": \"getitem\", \"args\": [\"x\", [\"...\", {\"slice\": [1, null, 2]}, null]]},"
	"  {\"out\": [\"b\", \"t\", \"c\"], \"op\": \"size\", \"args\": [\"x\"]},"
	"  {\"out\": \"h\", \"op\": \"operator.floordiv\", \"args\": [\"c\", 12]},"
	"  {\"out\": \"head\", \"op\": \"getitem\", \"args\": [\"x\", [\"...\", {\"slice\": [null, \"h\", null]}]]}],"
	" \"outputs\": [\"cls\", \"rest\", \"head\"]}";

Test(ops_python, a_traced_description_indexes_with_json_slices)
{
	ti_error e;
	ti_error_clear(&e);
	ti_model_options opts;
	memset(&opts, 0, sizeof(opts));
	ti_model *m = NULL;
	ASSERT_STATUS(ti_model_open(traced, strlen(traced), &opts, &m, &e), TI_OK, e);
	const ti_model_report *rep = NULL;
	ASSERT_STATUS(ti_model_run(m, &rep, &e), TI_OK, e);
	cr_assert(!rep->failed, "failed: %s", rep->error.message);
	ASSERT_INT(rep->output_count, 3);
	char buf[64];
	const ti_model_tensor *cls = &rep->outputs[0], *rest = &rep->outputs[1];
	ASSERT_INT(cls->ndim, 2);
	EXPECT_STR(ti_dim_format(cls->shape[0], buf, sizeof(buf)), "N");
	EXPECT_STR(ti_dim_format(cls->shape[1], buf, sizeof(buf)), "768");
	/* x[..., 1::2, None]: the last dim sliced, then a new one */
	ASSERT_INT(rest->ndim, 4);
	EXPECT_STR(ti_dim_format(rest->shape[2], buf, sizeof(buf)), "384");
	EXPECT_STR(ti_dim_format(rest->shape[3], buf, sizeof(buf)), "1");
	/* x[..., :h] with h = x.size(2) // 12, a graph name inside the slice */
	ASSERT_INT(rep->outputs[2].ndim, 3);
	EXPECT_STR(ti_dim_format(rep->outputs[2].shape[2], buf, sizeof(buf)), "64");
	ti_model_close(m);
}

Test(ops_python, setitem_writes_into_the_indexed_view_and_returns_the_tensor_itself)
{
	ASSERT_STATUS(run("setitem", "{4, 4}, (slice(0, 2, None), slice(0, 2, None)), 1.0"), TI_OK, err);
	cr_expect(output(0) == call.in.args[0].as.tensor, "x[...] = 1.0 leaves x itself");
	ASSERT_STATUS(run("setitem", "{4, 4}, (slice(0, 2, None), slice(0, 2, None)), {2}"), TI_OK, err);
	cr_expect(output(0) == call.in.args[0].as.tensor, "a value that broadcasts to the view is fine");
	EXPECT_FAILS(run("setitem", "{4, 4}, (slice(0, 2, None), slice(0, 2, None)), {3}"),
	             "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 1."
	             "  Target sizes: [2, 2].  Tensor sizes: [3]");
	EXPECT_FAILS(run("setitem", "{4, 4}, 7, 1.0"), "index 7 is out of bounds for dimension 0 with size 4");
}

/* Falcon's _split_heads: fused_qkv[..., [-2], :] takes the key head with a list, a copy of one head. */
static const char *list_index =
	"{\"inputs\": {\"x\": {\"shape\": [\"B\", \"T\", 6, 64], \"dtype\": \"float32\"}},"
	" \"graph\": ["
	"  {\"out\": \"k\", \"op\": \"getitem\", \"args\": [\"x\", [\"...\", [-2], {\"slice\": [null, null, null]}]]},"
	"  {\"out\": \"two\", \"op\": \"getitem\", \"args\": [\"x\", [\"...\", [0, 5], {\"slice\": [null, null, null]}]]}],"
	" \"outputs\": [\"k\", \"two\"]}";

Test(ops_python, a_list_of_integers_in_an_index_gathers_as_a_long_tensor_of_its_length)
{
	ti_error e;
	ti_error_clear(&e);
	ti_model_options opts;
	memset(&opts, 0, sizeof(opts));
	ti_model *m = NULL;
	ASSERT_STATUS(ti_model_open(list_index, strlen(list_index), &opts, &m, &e), TI_OK, e);
	const ti_model_report *rep = NULL;
	ASSERT_STATUS(ti_model_run(m, &rep, &e), TI_OK, e);
	cr_assert(!rep->failed, "failed: %s", rep->error.message);
	char buf[64];
	ASSERT_INT(rep->outputs[0].ndim, 4);
	EXPECT_STR(ti_dim_format(rep->outputs[0].shape[2], buf, sizeof(buf)), "1");
	EXPECT_STR(ti_dim_format(rep->outputs[0].shape[3], buf, sizeof(buf)), "64");
	EXPECT_STR(ti_dim_format(rep->outputs[1].shape[2], buf, sizeof(buf)), "2");
	ti_model_close(m);
	/* out of range, as PyTorch says it */
	const char *bad = "{\"inputs\": {\"x\": {\"shape\": [2, 6, 64]}},"
	                  " \"graph\": [{\"out\": \"k\", \"op\": \"getitem\", \"args\": [\"x\", [\"...\", [6], "
	                  "{\"slice\": [null, null, null]}]]}]}";
	ASSERT_STATUS(ti_model_open(bad, strlen(bad), &opts, &m, &e), TI_OK, e);
	ASSERT_STATUS(ti_model_run(m, &rep, &e), TI_OK, e);
	cr_expect(rep->failed, "index 6 of a dimension of 6");
	cr_expect(strstr(rep->error.message, "index 6 is out of bounds for dimension 1 with size 6") != NULL, "got: %s",
	          rep->error.message);
	ti_model_close(m);
}
