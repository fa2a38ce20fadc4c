/*
 * test_check.c - load_state_dict's verdict: which keys are missing and
 * unexpected, in the order PyTorch lists them, and its exact words.
 * The checkpoint is a description materialized as a source (its tensors,
 * under the names state_dict would give them).
 */
#include "unit.h"

#include "tinspect/check.h"

static const char *model_text =
	"{\"class\": \"pkg.Net\", \"inputs\": {\"x\": {\"shape\": [2, 4]}},"
	" \"modules\": {\"a\": {\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 3},"
	"             \"blk\": {\"type\": \"Module\", \"modules\": {\"b\": {\"type\": \"Linear\", \"in_features\": 3,"
	"                     \"out_features\": 2}}}}}";

static ti_model *open_model(const char *text)
{
	ti_error err;
	ti_error_clear(&err);
	ti_model *m = NULL;
	cr_assert(ti_model_open(text, strlen(text), NULL, &m, &err) == TI_OK, "%s", err.message);
	return m;
}

/* A checkpoint with the tensors of another description. */
static ti_source *checkpoint_of(const char *text, ti_model **keep)
{
	*keep = open_model(text);
	ti_error err;
	ti_error_clear(&err);
	ti_source *src = NULL;
	cr_assert(ti_source_from_model(*keep, &src, &err) == TI_OK, "%s", err.message);
	return src;
}

/* The report points into the model: the caller closes it after reading. */
static ti_model *check(const char *ckpt_text, bool strict, ti_arena *arena, ti_check_report *r)
{
	ti_model *m = open_model(model_text), *other;
	ti_source *src = checkpoint_of(ckpt_text, &other);
	ti_error err;
	ti_error_clear(&err);
	ti_check_options o = {.strict = strict};
	cr_assert(ti_check_load(m, src, &o, arena, r, &err) == TI_OK, "%s", err.message);
	ti_source_close(src);
	ti_model_close(other);
	return m;
}

Test(check, the_same_layout_loads_with_pytorch_s_words)
{
	ti_arena arena;
	ti_arena_init(&arena, 1 << 20);
	ti_check_report r;
	ti_model *m = check(model_text, true, &arena, &r);
	cr_expect_null(r.message);
	EXPECT_STR(r.result, "<All keys matched successfully>");
	EXPECT_INT(r.matched, 4);
	ti_model_close(m);
	ti_arena_release(&arena);
}

Test(check, lists_missing_then_unexpected_then_size_mismatches_in_module_order)
{
	/* blk.b is 3 -> 5, a has no bias, and there is an extra module z */
	static const char *ckpt =
		"{\"inputs\": {\"x\": {\"shape\": [2, 4]}},"
		" \"modules\": {\"a\": {\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 3, \"bias\": false},"
		"             \"blk\": {\"type\": \"Module\", \"modules\": {\"b\": {\"type\": \"Linear\", \"in_features\": 3,"
		"                     \"out_features\": 5}}},"
		"             \"z\": {\"type\": \"Linear\", \"in_features\": 1, \"out_features\": 1}}}";
	ti_arena arena;
	ti_arena_init(&arena, 1 << 20);
	ti_check_report r;
	ti_model *m = check(ckpt, true, &arena, &r);
	ASSERT_INT(r.missing_count, 1);
	EXPECT_STR(r.missing[0], "a.bias");
	ASSERT_INT(r.unexpected_count, 2);
	EXPECT_STR(r.unexpected[0], "z.weight");
	EXPECT_STR(r.unexpected[1], "z.bias");
	ASSERT_INT(r.mismatch_count, 2);
	EXPECT_STR(r.message,
	           "Error(s) in loading state_dict for Net:\n"
	           "\tMissing key(s) in state_dict: \"a.bias\". \n"
	           "\tUnexpected key(s) in state_dict: \"z.weight\", \"z.bias\". \n"
	           "\tsize mismatch for blk.b.weight: copying a param with shape torch.Size([5, 3]) from checkpoint, "
	           "the shape in current model is torch.Size([2, 3]).\n"
	           "\tsize mismatch for blk.b.bias: copying a param with shape torch.Size([5]) from checkpoint, "
	           "the shape in current model is torch.Size([2]).");
	ti_model_close(m);
	ti_arena_release(&arena);
}

Test(check, not_strict_reports_keys_as_incompatible_keys_and_loads)
{
	static const char *ckpt =
		"{\"inputs\": {\"x\": {\"shape\": [2, 4]}},"
		" \"modules\": {\"a\": {\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 3, \"bias\": false},"
		"             \"blk\": {\"type\": \"Module\", \"modules\": {\"b\": {\"type\": \"Linear\", \"in_features\": 3,"
		"                     \"out_features\": 2}}}, \"z\": {\"type\": \"Identity\", \"parameters\": {\"w\": {\"shape\": [1]}}}}}";
	ti_arena arena;
	ti_arena_init(&arena, 1 << 20);
	ti_check_report r;
	ti_model *m = check(ckpt, false, &arena, &r);
	cr_expect_null(r.message);
	EXPECT_STR(r.result, "_IncompatibleKeys(missing_keys=['a.bias'], unexpected_keys=['z.w'])");
	ti_model_close(m);
	ti_arena_release(&arena);
}

/* A model whose head is tied to its embedding, as GPT-2's lm_head is to wte. */
static const char *tied_text =
	"{\"class\": \"pkg.LM\", \"inputs\": {\"idx\": {\"shape\": [2, 3], \"dtype\": \"int64\"}},"
	" \"modules\": {\"wte\": {\"type\": \"Embedding\", \"num_embeddings\": 10, \"embedding_dim\": 4},"
	"             \"head\": {\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 10, \"bias\": false}},"
	" \"tied\": {\"head.weight\": \"wte.weight\"}}";

static ti_model *check_tied(const char *ckpt_text, ti_arena *arena, ti_check_report *r, const ti_check_options *o)
{
	ti_model *m = open_model(tied_text), *other;
	ti_source *src = checkpoint_of(ckpt_text, &other);
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_check_load(m, src, o, arena, r, &err) == TI_OK, "%s", err.message);
	ti_source_close(src);
	ti_model_close(other);
	return m;
}

static bool has_note(const ti_check_report *r, const char *part)
{
	for (size_t i = 0; i < r->note_count; i++)
		if (strstr(r->notes[i], part))
			return true;
	return false;
}

Test(check, a_tie_saved_as_one_tensor_holds_without_a_word)
{
	ti_arena arena;
	ti_arena_init(&arena, 1 << 20);
	ti_check_report r;
	ti_check_options o = {.strict = true};
	ti_model *m = check_tied(tied_text, &arena, &r, &o);
	cr_expect_null(r.message);
	EXPECT_INT(r.tie_error_count, 0);
	EXPECT_INT(r.note_count, 0);
	ti_model_close(m);
	ti_arena_release(&arena);
}

Test(check, a_tie_saved_as_two_equal_shaped_tensors_loads_with_a_note_on_which_values_stay)
{
	static const char *untied =
		"{\"inputs\": {\"idx\": {\"shape\": [2, 3], \"dtype\": \"int64\"}},"
		" \"modules\": {\"wte\": {\"type\": \"Embedding\", \"num_embeddings\": 10, \"embedding_dim\": 4},"
		"             \"head\": {\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 10, \"bias\": false}}}";
	ti_arena arena;
	ti_arena_init(&arena, 1 << 20);
	ti_check_report r;
	ti_check_options o = {.strict = true};
	ti_model *m = check_tied(untied, &arena, &r, &o);
	cr_expect_null(r.message);
	EXPECT_INT(r.tie_error_count, 0);
	cr_expect(has_note(&r, "'head.weight' is tied to 'wte.weight' in the model, but the checkpoint holds them as two "
	                       "tensors: load_state_dict copies both into the one, and 'head.weight''s values stay"));
	ti_model_close(m);
	ti_arena_release(&arena);
}

Test(check, a_tie_whose_two_tensors_differ_in_shape_is_a_tie_error)
{
	static const char *apart =
		"{\"inputs\": {\"idx\": {\"shape\": [2, 3], \"dtype\": \"int64\"}},"
		" \"modules\": {\"wte\": {\"type\": \"Embedding\", \"num_embeddings\": 10, \"embedding_dim\": 4},"
		"             \"head\": {\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 12, \"bias\": false}}}";
	ti_arena arena;
	ti_arena_init(&arena, 1 << 20);
	ti_check_report r;
	ti_check_options o = {.strict = true};
	ti_model *m = check_tied(apart, &arena, &r, &o);
	ASSERT_INT(r.tie_error_count, 1);
	EXPECT_STR(r.tie_errors[0], "'head.weight' is tied to 'wte.weight' in the model, but the checkpoint holds two "
	                            "tensors of different shapes: torch.Size([12, 4]) and torch.Size([10, 4])");
	ASSERT_INT(r.mismatch_count, 1); /* and PyTorch's own size mismatch */
	ti_model_close(m);
	ti_arena_release(&arena);
}

Test(check, a_tied_name_the_file_leaves_out_is_missing_with_a_note_that_the_tie_fills_it)
{
	static const char *only_wte =
		"{\"inputs\": {\"idx\": {\"shape\": [2, 3], \"dtype\": \"int64\"}},"
		" \"modules\": {\"wte\": {\"type\": \"Embedding\", \"num_embeddings\": 10, \"embedding_dim\": 4}}}";
	ti_arena arena;
	ti_arena_init(&arena, 1 << 20);
	ti_check_report r;
	ti_check_options o = {.strict = true};
	ti_model *m = check_tied(only_wte, &arena, &r, &o);
	ASSERT_INT(r.missing_count, 1);
	EXPECT_STR(r.missing[0], "head.weight");
	cr_expect(has_note(&r, "'head.weight' is tied to 'wte.weight', which the checkpoint holds: --ignore 'head.weight'"));
	ti_model_close(m);
	ti_arena_release(&arena);
}

Test(check, the_dtype_gate_lists_each_floating_tensor_of_another_dtype)
{
	static const char *mixed =
		"{\"inputs\": {\"x\": {\"shape\": [2, 4]}},"
		" \"modules\": {\"a\": {\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 3, \"dtype\": \"float16\"},"
		"             \"blk\": {\"type\": \"Module\", \"modules\": {\"b\": {\"type\": \"Linear\", \"in_features\": 3,"
		"                     \"out_features\": 2}}}}}";
	ti_arena arena;
	ti_arena_init(&arena, 1 << 20);
	ti_model *m = open_model(model_text), *other;
	ti_source *src = checkpoint_of(mixed, &other);
	ti_error err;
	ti_error_clear(&err);
	ti_check_options o = {.strict = true, .dtype = TI_DT_FLOAT16};
	ti_check_report r;
	cr_assert(ti_check_load(m, src, &o, &arena, &r, &err) == TI_OK, "%s", err.message);
	ASSERT_INT(r.dtype_error_count, 2);
	EXPECT_STR(r.dtype_errors[0], "blk.b.weight (float32)");
	EXPECT_STR(r.dtype_errors[1], "blk.b.bias (float32)");
	ti_source_close(src);
	ti_model_close(other);
	ti_model_close(m);
	ti_arena_release(&arena);
}
