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
