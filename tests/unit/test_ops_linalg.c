/*
 * test_ops_linalg.c - matrix products (src/ops/linalg.c).
 *
 * Shapes, strides and messages were read from PyTorch 1.13 (torch.empty on
 * the meta device, and on the CPU where the meta kernels check less); where
 * 2.x words a message differently or dispatches matmul differently, the row
 * follows 2.x's LinearAlgebra.cpp.
 */
#include "ops_cases.h"

TestSuite(ops_linalg, .init = setup, .fini = teardown);

/* ---- shapes and counts ---- */

static const macs_row shapes[] = {
	/* matmul, every rank pair */
	{"matmul", "{3}, {3}", "[]", "", "3", "6"},
	{"matmul", "{3, 4}, {4}", "[3]", "", "12", "24"},
	{"matmul", "{3}, {3, 4}", "[4]", "", "12", "24"},
	{"matmul", "{2, 3}, {3, 4}", "[2, 4]", "", "24", "48"},
	{"matmul", "{5, 2, 3}, {3}", "[5, 2]", "", "30", "60"},
	{"matmul", "{3}, {5, 3, 4}", "[5, 4]", "", "60", "120"},
	{"matmul", "{5, 2, 3}, {3, 4}", "[5, 2, 4]", "", "120", "240"},
	{"matmul", "{2, 3}, {5, 3, 4}", "[5, 2, 4]", "", "120", "240"},
	{"matmul", "{7, 1, 2, 3}, {5, 3, 4}", "[7, 5, 2, 4]", "", "840", "1680"},
	{"matmul", "{5}, {2, 3, 5, 7}", "[2, 3, 7]", "", "210", "420"},
	{"matmul", "{2, 3, 7, 5}, {5}", "[2, 3, 7]", "", "210", "420"},
	{"matmul", "{B, T, 8}, {8, 16}", "[B, T, 16]", "", "128*B*T", "256*B*T"},
	{"matmul", "{B, H, T, 8}, {B, H, 8, T}", "[B, H, T, T]", "", "8*B*H*T**2", "16*B*H*T**2"},
	{"mm", "{2, 3}, {3, 4}", "[2, 4]", "", "24", "48"},
	{"bmm", "{4, 2, 3}, {4, 3, 5}", "[4, 2, 5]", "", "120", "240"},
	{"mv", "{3, 4}, {4}", "[3]", "", "12", "24"},
	{"dot", "{3}, {3}", "[]", "", "3", "6"},
	{"outer", "{3}, {4}", "[3, 4]", "", "0", "12"},
	{"ger", "{3}, {4}", "[3, 4]", "", "0", "12"},
	{"addmm", "{4}, {2, 3}, {3, 4}", "[2, 4]", "", "24", "56"},
	{"addmm", "{2, 4}, {2, 3}, {3, 4}, beta=0.5", "[2, 4]", "", "24", "56"},
	{"addmv", "{3}, {3, 4}, {4}", "[3]", "", "12", "27"},
	{"baddbmm", "{1, 4}, {2, 3, 5}, {2, 5, 4}", "[2, 3, 4]", "", "120", "264"},
	/* linear: addmm for 2-d and contiguous inputs, matmul otherwise */
	{"linear", "{2, 3, 5}, grad {4, 5}, grad {4}", "[2, 3, 4]", "", "120", "264"},
	{"linear", "{2, 3, 7, 5}, grad {4, 5}", "[2, 3, 7, 4]", "", "840", "1680"},
	{"linear", "{5}, grad {4, 5}, grad {4}", "[4]", "", "20", "44"},
	{"linear", "{3, 5}, grad {5}", "[3]", "", "15", "30"},
	{"linear", "{3, 2, 5 : 5, 15, 1}, grad {4, 5}, grad {4}", "[3, 2, 4]", "", "120", "264"},
	{"linear", "{N, 5}, grad {4, 5}, bias=None", "[N, 4]", "", "20*N", "40*N"},
	{"bilinear", "{2, 3, 5}, {2, 3, 6}, grad {4, 5, 6}, grad {4}", "[2, 3, 4]", "", "720", "1464"},
	{"bilinear", "{5}, {6}, grad {4, 5, 6}", "[4]", "", "120", "240"},
	/* einsum: explicit and implicit outputs, ellipses, diagonals, views */
	{"einsum", "'ij,jk->ik', {2, 3}, {3, 4}", "[2, 4]", "", "24", "48"},
	{"einsum", "'ij,jk', {2, 3}, {3, 4}", "[2, 4]", "", "24", "48"},
	{"einsum", "'ij,jk', [{2, 3}, {3, 4}]", "[2, 4]", "", "24", "48"},
	{"einsum", "' i j , j k -> i k ', {2, 3}, {3, 4}", "[2, 4]", "", "24", "48"},
	{"einsum", "'bij,bjk->bik', {5, 2, 3}, {5, 3, 4}", "[5, 2, 4]", "", "120", "240"},
	{"einsum", "'bij,bjk->bik', {1, 2, 3}, {5, 3, 4}", "[5, 2, 4]", "", "120", "240"},
	{"einsum", "'...ij,...jk', {7, 1, 2, 3}, {5, 3, 4}", "[7, 5, 2, 4]", "", "840", "1680"},
	{"einsum", "'ij,jk,kl->il', {2, 3}, {3, 4}, {4, 5}", "[2, 5]", "", "120", "240"},
	{"einsum", "'bA,c', {2, 3}, {4}", "[3, 2, 4]", "", "24", "48"},
	{"einsum", "'i,i->', {3}, {3}", "[]", "", "3", "6"},
	{"einsum", "'i,j->ij', {3}, {4}", "[3, 4]", "", "12", "24"},
	{"einsum", "'ij,jk', {2, 1}, {4, 5}", "[2, 5]", "", "40", "80"},
	{"einsum", "'ij->ji', {2, 3}", "[3, 2]", "[1, 3]", "0", "0"},
	{"einsum", "'ji', {3, 4}", "[4, 3]", "[1, 4]", "0", "0"},
	{"einsum", "'abc->cab', {2, 3, 4}", "[4, 2, 3]", "[1, 12, 4]", "0", "0"},
	{"einsum", "'ii->i', {3, 3}", "[3]", "[4]", "0", "0"},
	{"einsum", "'ii', {3, 3}", "[]", "", "0", "3"},
	{"einsum", "'ijk->ik', {2, 3, 4}", "[2, 4]", "", "0", "24"},
	{"einsum", "'...i->i', {2, 3}", "[3]", "", "0", "6"},
};

ParameterizedTestParameters(ops_linalg, shapes_and_counts_follow_pytorch)
{
	return ROWS(shapes);
}

ParameterizedTest(const macs_row *r, ops_linalg, shapes_and_counts_follow_pytorch, .init = setup, .fini = teardown)
{
	check_macs(r);
}

/* ---- errors ---- */

static const error_row errors[] = {
	{"matmul", "{}, {2, 3}", "both arguments to matmul need to be at least 1D, but they are 0D and 2D"},
	{"matmul", "{3}, {4}",
	 "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 elements respectively"},
	{"matmul", "{3}, float64{3}", "dot : expected both vectors to have same dtype, but found Float and Double"},
	{"matmul", "{3, 3}, {5}", "size mismatch, got input (3), mat (3x3), vec (5)"},
	{"matmul", "{5}, {3, 4}", "mat1 and mat2 shapes cannot be multiplied (1x5 and 3x4)"},
	{"matmul", "{2, 3}, {4, 5}", "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"},
	{"matmul", "{2, 3}, float64{3, 4}", "expected m1 and m2 to have the same dtype, but got: float != double"},
	/* a contiguous batch folds into one mm or mv */
	{"matmul", "{5, 2, 3}, {4}", "size mismatch, got input (10), mat (10x3), vec (4)"},
	{"matmul", "{5, 2, 3}, {4, 4}", "mat1 and mat2 shapes cannot be multiplied (10x3 and 4x4)"},
	{"matmul", "{2, 3, 5}, grad {6, 4 : 1, 6}", "mat1 and mat2 shapes cannot be multiplied (6x5 and 6x4)"},
	{"matmul", "grad {2, 3}, {5, 4, 4}", "mat1 and mat2 shapes cannot be multiplied (20x4 and 3x2)"},
	/* otherwise the batches broadcast into one bmm */
	{"matmul", "{2, 3}, {5, 4, 4}",
	 "Expected size for first two dimensions of batch2 tensor to be: [5, 3] but got: [5, 4]."},
	{"matmul", "{2}, {5, 3, 4}", "Expected size for first two dimensions of batch2 tensor to be: [5, 2] but got: [5, 3]."},
	{"matmul", "{7, 1, 2, 3}, {5, 4, 4}",
	 "Expected size for first two dimensions of batch2 tensor to be: [35, 3] but got: [35, 4]."},
	{"matmul", "{7, 2, 2, 3}, {5, 3, 4}",
	 "The size of tensor a (2) must match the size of tensor b (5) at non-singleton dimension 1"},
	{"matmul", "{2, 2, 3}, float64{2, 3, 4}", "expected scalar type Float but found Double"},
	{"mm", "{3}, {3, 4}", "self must be a matrix"},
	{"mm", "{2, 3}, {2, 3, 4}", "mat2 must be a matrix"},
	{"mm", "{2, 3}, {4, 5}", "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"},
	{"mm", "{2, 3}, float64{3, 4}", "expected m1 and m2 to have the same dtype, but got: float != double"},
	{"bmm", "{2, 3}, {4, 3, 5}", "batch1 must be a 3D tensor"},
	{"bmm", "{4, 2, 3}, {3, 5}", "batch2 must be a 3D tensor"},
	{"bmm", "{4, 2, 5}, {4, 6, 5}", "Expected size for first two dimensions of batch2 tensor to be: [4, 5] but got: [4, 6]."},
	{"bmm", "{4, 2, 5}, {3, 5, 5}", "Expected size for first two dimensions of batch2 tensor to be: [4, 5] but got: [3, 5]."},
	{"mv", "{3, 4}, {5}", "size mismatch, got input (3), mat (3x4), vec (5)"},
	{"mv", "{4}, {4}", "vector + matrix @ vector expected, got 1, 1, 1"},
	{"mv", "{3, 4}, {4, 1}", "vector + matrix @ vector expected, got 1, 2, 2"},
	{"dot", "{3, 1}, {3}", "1D tensors expected, but got 2D and 1D tensors"},
	{"outer", "{3, 1}, {4}", "outer: Expected 1-D argument self, but got 2-D"},
	{"outer", "{3}, {4, 1}", "outer: Expected 1-D argument vec2, but got 2-D"},
	{"addmm", "{5}, {2, 3}, {3, 4}",
	 "The expanded size of the tensor (4) must match the existing size (5) at non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: [5]"},
	{"addmm", "{3, 2, 4}, {2, 3}, {3, 4}",
	 "expand(torch.FloatTensor{[3, 2, 4]}, size=[2, 4]): the number of sizes provided (2) must be greater or equal to the number of dimensions in the tensor (3)"},
	{"addmm", "{4}, {2, 3, 1}, {3, 4}", "mat1 must be a matrix, got 3-D tensor"},
	{"addmv", "{2}, {3, 4}, {4}", "size mismatch, got input (2), mat (3x4), vec (4)"},
	{"baddbmm", "{4, 4}, {2, 3, 5}, {2, 5, 4}",
	 "The expanded size of the tensor (3) must match the existing size (4) at non-singleton dimension 1.  Target sizes: [2, 3, 4].  Tensor sizes: [4, 4]"},
	{"baddbmm", "{4}, {2, 3, 5}, float64{2, 5, 4}",
	 "Input dtypes must be the same, got: input float, batch1: float, batch2: double"},
	/* linear */
	{"linear", "{2, 3, 5}, grad {4, 6}, grad {4}", "mat1 and mat2 shapes cannot be multiplied (6x5 and 6x4)"},
	{"linear", "{2, 3, 5}, grad {4, 6}", "mat1 and mat2 shapes cannot be multiplied (6x5 and 6x4)"},
	{"linear", "{3, 5}, grad {4, 6}", "mat1 and mat2 shapes cannot be multiplied (3x5 and 6x4)"},
	{"linear", "{6}, grad {4, 5}, grad {4}", "mat1 and mat2 shapes cannot be multiplied (1x6 and 5x4)"},
	{"linear", "{}, grad {4, 5}", "both arguments to linear need to be at least 1D, but they are 0D and 2D"},
	{"linear", "{3, 5}, grad {4, 5, 1}", "t() expects a tensor with <= 2 dimensions, but self is 3D"},
	{"linear", "{2, 3, 5}, grad {4, 5}, grad {3}",
	 "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  Target sizes: [6, 4].  Tensor sizes: [3]"},
	{"linear", "{3, 5}, grad float64{4, 5}, grad float64{4}", "mat1 and mat2 must have the same dtype, but got Float and Double"},
	{"linear", "{3, 5}, grad {4, 5}, grad float64{4}", "self and mat2 must have the same dtype, but got Double and Float"},
	{"linear", "{3, 5}, grad float64{4, 5}", "expected m1 and m2 to have the same dtype, but got: float != double"},
	{"linear", "{3, 2, 5 : 5, 15, 1}, grad {4, 5}, grad {2, 1, 1, 4}",
	 "output with shape [3, 2, 4] doesn't match the broadcast shape [2, 3, 2, 4]"},
	/* bilinear */
	{"bilinear", "{2, 3, 5}, {3, 6}, {4, 5, 6}", "bilinear(): input dimensions do not match: got 3 and 2"},
	{"bilinear", "{2, 3, 5}, {2, 4, 6}, {4, 5, 6}", "bilinear(): input batch dimensions do not match at dim 1: got 3 and 4"},
	{"bilinear", "{2, 3, 7}, {2, 3, 6}, {4, 5, 6}", "bilinear(): input1 size does not match weight size: got 7 but expected 5"},
	{"bilinear", "{2, 3, 5}, {2, 3, 7}, {4, 5, 6}", "bilinear(): input2 size does not match weight size: got 7 but expected 6"},
	{"bilinear", "{2, 3, 5}, {2, 3, 6}, {4, 5, 6}, {3}", "bilinear(): bias size does not match weight size: got 3 but expected 4"},
	{"bilinear", "{2, 3, 5}, {2, 3, 6}, {4, 5}", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
	{"bilinear", "float64{5}, {6}, {4, 5, 6}", "expected scalar type Double but found Float"},
	/* einsum */
	{"einsum", "'ii->i', {3, 4}", "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 4 != 3"},
	{"einsum", "'...ij,...jk', {7, 2, 2, 3}, {5, 3, 4}",
	 "einsum(): dimension 0 covered by ellipsis in operand 1has size 5 which does not broadcast with previously seen ellipsis with size 2 for the respective dimension"},
	{"einsum", "'ij,jk', {2, 3}, {4, 5}",
	 "einsum(): subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"},
	{"einsum", "'ijk,jk', {2, 3}, {3, 4}",
	 "einsum(): the number of subscripts in the equation (3) does not match the number of dimensions (2) for operand 0 and no ellipsis was given"},
	{"einsum", "'...ijk,jk', {2, 3}, {3, 4}",
	 "einsum(): the number of subscripts in the equation (3) is more than the number of dimensions (2) for operand 0"},
	{"einsum", "'ij,jk,kl', {2, 3}, {3, 4}", "einsum(): fewer operands were provided than specified in the equation"},
	{"einsum", "'ij', {2, 3}, {3, 4}", "einsum(): more operands were provided than specified in the equation"},
	{"einsum", "'i1,jk', {2, 3}, {3, 4}",
	 "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]"},
	{"einsum", "'ij,jk->i1', {2, 3}, {3, 4}",
	 "einsum(): invalid subscript given at index 8 in the equation string, subscripts must be in [a-zA-Z]"},
	{"einsum", "'ij,jk->ii', {2, 3}, {3, 4}", "einsum(): output subscript i appears more than once in the output"},
	{"einsum", "'ij,jk->iz', {2, 3}, {3, 4}", "einsum(): output subscript z does not appear in the equation for any input operand"},
	{"einsum", "'.ij', {2, 3}", "einsum(): found '.' for operand 0 that is not part of any ellipsis"},
	{"einsum", "'...i...', {2, 3}", "einsum(): found '.' for operand 0 for which an ellipsis was already found"},
	{"einsum", "'...i->......', {2, 3}", "einsum(): found '.' for output but an ellipsis (...) was already found"},
	{"einsum", "'...i->.i', {2, 3}", "einsum(): found '.' for output that is not part of any ellipsis (...)"},
	{"einsum", "'ij->'",
	 "einsum(): must specify the equation string and at least one operand, or at least one operand and its subscripts list"},
	{"einsum", "'ij,jk', {2, 3}, float64{3, 4}", "expected scalar type Float but found Double"},
};

ParameterizedTestParameters(ops_linalg, errors_are_pytorch_s)
{
	return ROWS(errors);
}

ParameterizedTest(const error_row *r, ops_linalg, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_error(r);
}

/* ---- details ---- */

Test(ops_linalg, a_product_keeps_the_dtype_and_requires_grad_of_its_inputs)
{
	ASSERT_STATUS(run("matmul", "float64{2, 3}, grad float64{3, 4}"), TI_OK, err);
	EXPECT_INT(output(0)->dtype, TI_DT_FLOAT64);
	cr_expect(output(0)->requires_grad);
	ASSERT_STATUS(run("mm", "int64{2, 3}, int64{3, 4}"), TI_OK, err);
	EXPECT_INT(output(0)->dtype, TI_DT_INT64);
	cr_expect(!output(0)->requires_grad);
}

Test(ops_linalg, outer_promotes_like_a_product_of_tensors)
{
	ASSERT_STATUS(run("outer", "int64{3}, {4}"), TI_OK, err);
	EXPECT_INT(output(0)->dtype, TI_DT_FLOAT32);
}

Test(ops_linalg, a_symbolic_contraction_is_assumed_to_match)
{
	ASSERT_STATUS(run("matmul", "{2, K}, {3, 4}"), TI_OK, err);
	EXPECT_STR(ti_meta_shape_str(&ctx, output(0)), "[2, 4]");
	ASSERT_INT(sym.assumption_count, 1);
	EXPECT_CONTAINS(sym.assumptions[0], "K");
}

Test(ops_linalg, a_contraction_that_cannot_match_fails_even_when_symbolic)
{
	ti_dim k = ti_dim_symbol(&sym, "K");
	ti_dim a_shape[2] = {ti_dim_int(2), k}, b_shape[2] = {ti_dim_add(&sym, k, ti_dim_int(1)), ti_dim_int(4)};
	ti_arg args[2] = {ti_arg_tensor(ti_meta_new(&ctx, TI_DT_FLOAT32, 2, a_shape)),
	                  ti_arg_tensor(ti_meta_new(&ctx, TI_DT_FLOAT32, 2, b_shape))};
	EXPECT_STATUS(ti_op_invoke(&ctx, "mm", args, 2, &call, &err), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "mat1 and mat2 shapes cannot be multiplied (2xK and K + 1x4)");
}

Test(ops_linalg, einsum_takes_one_operand_as_a_list_of_one)
{
	ASSERT_STATUS(run("einsum", "'ij->j', {2, 3}"), TI_OK, err);
	EXPECT_STR(ti_meta_shape_str(&ctx, output(0)), "[3]");
}

Test(ops_linalg, matmul_is_found_under_its_python_prefixes)
{
	ASSERT_STATUS(run("torch.matmul", "{2, 3}, {3, 4}"), TI_OK, err);
	ASSERT_STATUS(run("F.linear", "{2, 3}, {4, 3}"), TI_OK, err);
	EXPECT_STR(ti_meta_shape_str(&ctx, output(0)), "[2, 4]");
}
