/*
 * test_model.c - model descriptions: parsing, parameters in state_dict
 * order, running the graph, and errors that name their JSON path.
 */
#include <stdio.h>

#include "unit.h"

#include "tinspect/model.h"

static ti_model *open_text(const char *text, const char *const *names, const int64_t *values, size_t n)
{
	ti_error err;
	ti_error_clear(&err);
	ti_model_options opts = {.bind_names = names, .bind_values = values, .bind_count = n};
	ti_model *m = NULL;
	ti_status st = ti_model_open(text, strlen(text), &opts, &m, &err);
	cr_assert(st == TI_OK, "opening failed: %s in '%s'", err.message, err.member);
	return m;
}

static const ti_model_report *run(ti_model *m)
{
	ti_error err;
	ti_error_clear(&err);
	const ti_model_report *rep = NULL;
	ti_status st = ti_model_run(m, &rep, &err);
	cr_assert(st == TI_OK, "running failed: %s in '%s'", err.message, err.member);
	return rep;
}

static const char *shape_text(const ti_model_tensor *t, char *buf, size_t size)
{
	size_t n = 0;
	buf[n++] = '[';
	for (int i = 0; i < t->ndim; i++) {
		if (i)
			n += (size_t)snprintf(buf + n, size - n, ", ");
		ti_dim_format(t->shape[i], buf + n, size - n);
		n += strlen(buf + n);
	}
	snprintf(buf + n, size - n, "]");
	return buf;
}

static const char *issue_example =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 3, 224, 224], \"dtype\": \"float32\"}},"
	" \"modules\": {"
	"  \"conv1\": {\"type\": \"Conv2d\", \"in_channels\": 3, \"out_channels\": 64, \"kernel_size\": 7, \"stride\": 2, \"padding\": 3, \"bias\": false},"
	"  \"bn1\": {\"type\": \"BatchNorm2d\", \"num_features\": 64},"
	"  \"layer1\": {\"type\": \"Sequential\", \"modules\": ["
	"     {\"type\": \"Conv2d\", \"in_channels\": 64, \"out_channels\": 64, \"kernel_size\": 3, \"padding\": 1},"
	"     {\"type\": \"ReLU\"}]},"
	"  \"fc\": {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 1000}},"
	" \"graph\": ["
	"  {\"out\": \"h\", \"call\": \"conv1\", \"args\": [\"x\"]},"
	"  {\"out\": \"h\", \"call\": \"bn1\", \"args\": [\"h\"]},"
	"  {\"out\": \"h\", \"op\": \"relu\", \"args\": [\"h\"]},"
	"  {\"out\": \"r\", \"call\": \"layer1\", \"args\": [\"h\"]},"
	"  {\"out\": \"h\", \"op\": \"add\", \"args\": [\"h\", \"r\"]},"
	"  {\"out\": \"h\", \"op\": \"adaptive_avg_pool2d\", \"args\": [\"h\"], \"output_size\": [1, 1]},"
	"  {\"out\": \"h\", \"op\": \"flatten\", \"args\": [\"h\"], \"start_dim\": 1},"
	"  {\"out\": [\"a\", \"b\"], \"op\": \"chunk\", \"args\": [\"h\", 2], \"dim\": 1},"
	"  {\"out\": \"h\", \"op\": \"cat\", \"args\": [[\"a\", \"b\"]], \"dim\": 1},"
	"  {\"out\": \"y\", \"call\": \"fc\", \"args\": [\"h\"]}],"
	" \"outputs\": [\"y\"]}";

Test(model, runs_the_issue_example_with_a_symbolic_batch)
{
	ti_model *m = open_text(issue_example, NULL, NULL, 0);
	const ti_model_report *rep = run(m);
	char buf[128];
	cr_assert(!rep->failed, "failed: %s", rep->error.message);
	ASSERT_INT(rep->output_count, 1);
	EXPECT_STR(rep->outputs[0].name, "y");
	EXPECT_STR(shape_text(&rep->outputs[0], buf, sizeof(buf)), "[N, 1000]");
	/* ten top-level steps, and the Sequential's two children nested under step 3 */
	size_t top = 0, nested = 0;
	for (size_t i = 0; i < rep->step_count; i++)
		rep->steps[i].depth ? nested++ : top++;
	EXPECT_INT(top, 10);
	EXPECT_INT(nested, 2);
	EXPECT_STR(shape_text(&rep->steps[0].outputs[0], buf, sizeof(buf)), "[N, 64, 112, 112]");
	/* conv1: 64*3*7*7 weights for each of N*64*112*112 outputs... per output element 3*7*7 MACs */
	EXPECT_STR(ti_dim_format(rep->steps[0].macs, buf, sizeof(buf)), "118013952*N");
	ti_model_close(m);
}

Test(model, binds_a_symbol_to_a_number)
{
	const char *names[] = {"N"};
	const int64_t values[] = {8};
	ti_model *m = open_text(issue_example, names, values, 1);
	const ti_model_report *rep = run(m);
	char buf[128];
	EXPECT_STR(shape_text(&rep->outputs[0], buf, sizeof(buf)), "[8, 1000]");
	cr_expect(ti_dim_is_int(rep->totals.macs), "bound MACs are a number");
	ti_model_close(m);
}

Test(model, lists_parameters_and_buffers_in_state_dict_order)
{
	ti_model *m = open_text(issue_example, NULL, NULL, 0);
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	static const char *const want[] = {
		"conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
		"bn1.num_batches_tracked", "layer1.0.weight", "layer1.0.bias", "fc.weight", "fc.bias",
	};
	ASSERT_INT(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++)
		EXPECT_STR(p[i].name, want[i]);
	EXPECT_INT(p[5].dtype, TI_DT_INT64);
	EXPECT_INT(p[5].ndim, 0);
	cr_expect(p[3].buffer && !p[1].buffer, "running_mean is a buffer, weight a parameter");
	const ti_model_report *rep = run(m);
	EXPECT_INT(rep->totals.params, 64 * 3 * 7 * 7 + 2 * 64 + 64 * 64 * 9 + 64 + 64 * 1000 + 1000);
	ti_model_close(m);
}

Test(model, stops_at_the_step_that_raises_and_keeps_the_steps_before_it)
{
	const char *text =
		"{\"inputs\": {\"x\": {\"shape\": [2, 8]}},"
		" \"modules\": {\"a\": {\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 4},"
		"               \"b\": {\"type\": \"Linear\", \"in_features\": 5, \"out_features\": 3}},"
		" \"graph\": [{\"out\": \"h\", \"call\": \"a\", \"args\": [\"x\"]},"
		"            {\"out\": \"h\", \"op\": \"relu\", \"args\": [\"h\"]},"
		"            {\"out\": \"y\", \"call\": \"b\", \"args\": [\"h\"]}]}";
	ti_model *m = open_text(text, NULL, NULL, 0);
	const ti_model_report *rep = run(m);
	cr_assert(rep->failed, "a 4-wide input into a 5-wide Linear must fail");
	EXPECT_INT(rep->error_step, 2);
	EXPECT_INT(rep->error.code, TI_E_SHAPE);
	EXPECT_STR(rep->error.message,
	           "step 2 (b: Linear): mat1 and mat2 shapes cannot be multiplied (2x4 and 5x3); input shapes [2, 4]");
	EXPECT_INT(rep->step_count, 2);
	ti_model_close(m);
}

Test(model, fails_like_python_when_a_call_returns_fewer_values_than_out_names)
{
	/* chunk of a size-5 dim into 4 gives 3 pieces: the count depends on shapes */
	const char *text =
		"{\"inputs\": {\"x\": {\"shape\": [2, 5]}},"
		" \"graph\": [{\"out\": [\"a\", \"b\", \"c\", \"d\"], \"op\": \"chunk\", \"args\": [\"x\", 4], \"dim\": 1}]}";
	ti_model *m = open_text(text, NULL, NULL, 0);
	const ti_model_report *rep = run(m);
	cr_assert(rep->failed, "unpacking 3 pieces into 4 names must fail");
	EXPECT_INT(rep->error_step, 0);
	EXPECT_STR(rep->error.message, "step 0 (chunk): not enough values to unpack (expected 4, got 3); input shapes [2, 5]");
	ti_model_close(m);
}

Test(model, runs_top_level_modules_in_order_without_a_graph)
{
	const char *text =
		"{\"inputs\": {\"x\": {\"shape\": [\"B\", 10]}},"
		" \"modules\": {\"fc1\": {\"type\": \"Linear\", \"in_features\": 10, \"out_features\": 20},"
		"               \"act\": {\"type\": \"ReLU\"},"
		"               \"fc2\": {\"type\": \"Linear\", \"in_features\": 20, \"out_features\": 2}}}";
	ti_model *m = open_text(text, NULL, NULL, 0);
	const ti_model_report *rep = run(m);
	char buf[64];
	ASSERT_INT(rep->step_count, 3);
	EXPECT_STR(rep->steps[2].target, "fc2");
	ASSERT_INT(rep->output_count, 1);
	EXPECT_STR(shape_text(&rep->outputs[0], buf, sizeof(buf)), "[B, 2]");
	ti_model_close(m);
}

Test(model, expands_defs_repeats_and_config_references_with_state_dict_names)
{
	const char *text =
		"{\"config\": {\"d\": 16, \"layers\": 3},"
		" \"defs\": {\"Block\": {\"inputs\": [\"x\"],"
		"   \"modules\": {\"ln\": {\"type\": \"LayerNorm\", \"normalized_shape\": \"$d\"},"
		"                 \"mlp\": {\"type\": \"Linear\", \"in_features\": \"$d\", \"out_features\": \"$d*4\"},"
		"                 \"proj\": {\"type\": \"Linear\", \"in_features\": \"$d*4\", \"out_features\": \"$d\"}},"
		"   \"graph\": [{\"out\": \"h\", \"call\": \"ln\", \"args\": [\"x\"]},"
		"             {\"out\": \"h\", \"call\": \"mlp\", \"args\": [\"h\"]},"
		"             {\"out\": \"h\", \"op\": \"gelu\", \"args\": [\"h\"]},"
		"             {\"out\": \"h\", \"call\": \"proj\", \"args\": [\"h\"]},"
		"             {\"out\": \"y\", \"op\": \"add\", \"args\": [\"x\", \"h\"]}],"
		"   \"outputs\": [\"y\"]}},"
		" \"inputs\": {\"x\": {\"shape\": [\"N\", \"T\", 16]}},"
		" \"modules\": {\"h\": {\"type\": \"ModuleList\", \"repeat\": \"$layers\", \"module\": {\"type\": \"Block\"}}},"
		" \"graph\": [{\"out\": \"y\", \"call\": \"h\", \"args\": [\"x\"]}]}";
	ti_model *m = open_text(text, NULL, NULL, 0);
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	ASSERT_INT(n, 18);
	EXPECT_STR(p[0].name, "h.0.ln.weight");
	EXPECT_STR(p[2].name, "h.0.mlp.weight");
	EXPECT_INT(p[2].shape[0], 64);
	EXPECT_STR(p[17].name, "h.2.proj.bias");
	const ti_model_report *rep = run(m);
	char buf[64];
	cr_assert(!rep->failed, "failed: %s", rep->error.message);
	EXPECT_STR(shape_text(&rep->outputs[0], buf, sizeof(buf)), "[N, T, 16]");
	/* the call row, three block rows, and five steps inside each block */
	EXPECT_INT(rep->step_count, 1 + 3 + 3 * 5);
	ti_model_close(m);
}

Test(model, counts_a_tied_parameter_once)
{
	const char *text =
		"{\"inputs\": {\"ids\": {\"shape\": [2, 5], \"dtype\": \"int64\"}},"
		" \"modules\": {\"wte\": {\"type\": \"Embedding\", \"num_embeddings\": 100, \"embedding_dim\": 8},"
		"               \"lm_head\": {\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 100, \"bias\": false}},"
		" \"tied\": {\"lm_head.weight\": \"wte.weight\"}}";
	ti_model *m = open_text(text, NULL, NULL, 0);
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	ASSERT_INT(n, 2);
	EXPECT_STR(p[1].tied_to, "wte.weight");
	const ti_model_report *rep = run(m);
	EXPECT_INT(rep->totals.params, 800);
	ti_model_close(m);
}

Test(model, records_what_it_assumes_about_a_symbol)
{
	const char *text =
		"{\"inputs\": {\"a\": {\"shape\": [\"T\"]}, \"b\": {\"shape\": [5]}},"
		" \"graph\": [{\"out\": \"y\", \"op\": \"add\", \"args\": [\"a\", \"b\"]}]}";
	ti_model *m = open_text(text, NULL, NULL, 0);
	const ti_model_report *rep = run(m);
	ASSERT_INT(rep->assumption_count, 1);
	EXPECT_STR(rep->assumptions[0], "T == 5");
	ti_model_close(m);
}

/* What an exporter writes: a plain Module with its own tensors, attr and opaque steps, ints and formulas. */
static const char *exported =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 3, 8, 8]}}, \"parameters\": {\"pos\": {\"shape\": [5, 4]}},"
	" \"modules\": {\"stem\": {\"type\": \"Conv2d\", \"in_channels\": 3, \"out_channels\": 4, \"kernel_size\": 4,"
	"                          \"stride\": 4},"
	"             \"enc\": {\"type\": \"Module\", \"class\": \"lib.models.Encoder\","
	"                     \"buffers\": {\"ids\": {\"shape\": [5], \"dtype\": \"int64\", \"persistent\": false},"
	"                                 \"scale\": {\"shape\": [], \"dtype\": \"float64\"}},"
	"                     \"parameters\": {\"cls\": {\"shape\": [1, 1, 4]},"
	"                                    \"frozen\": {\"shape\": [4], \"requires_grad\": false}},"
	"                     \"modules\": {\"norm\": {\"type\": \"LayerNorm\", \"normalized_shape\": 4,"
	"                                             \"parameters\": {\"gain\": {\"shape\": [4]}}}}}},"
	" \"graph\": [{\"out\": \"h\", \"call\": \"stem\", \"args\": [\"x\"]},"
	"           {\"out\": \"h\", \"op\": \"flatten\", \"args\": [\"h\", 2]},"
	"           {\"out\": \"h\", \"op\": \"transpose\", \"args\": [\"h\", 1, 2]},"
	"           {\"out\": \"c\", \"attr\": \"enc.cls\"},"
	"           {\"out\": \"c\", \"op\": \"expand\", \"args\": [\"c\", \"N\", -1, -1]},"
	"           {\"out\": \"h\", \"op\": \"cat\", \"args\": [[\"c\", \"h\"]], \"dim\": 1},"
	"           {\"out\": \"h\", \"call\": \"enc.norm\", \"args\": [\"h\"]},"
	"           {\"out\": \"z\", \"opaque\": \"lib.mix\", \"module\": \"enc\", \"args\": [\"h\"],"
	"            \"outputs\": [{\"shape\": [\"N*5\", 4]}, {\"shape\": [\"N\"], \"dtype\": \"int64\"}]},"
	"           {\"out\": \"y\", \"op\": \"view\", \"args\": [\"h\", \"N*5\", -1]}],"
	" \"outputs\": [\"y\", \"z\"]}";

Test(model, holds_free_parameters_and_buffers_in_state_dict_order)
{
	ti_model *m = open_text(exported, NULL, NULL, 0);
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	/* own parameters, then persistent buffers, then children; the non-persistent 'ids' is not there */
	static const char *const names[] = {"pos", "stem.weight", "stem.bias", "enc.cls", "enc.frozen", "enc.scale",
	                                    "enc.norm.weight", "enc.norm.bias", "enc.norm.gain"};
	ASSERT_INT(n, 9);
	for (size_t i = 0; i < n; i++)
		EXPECT_STR(p[i].name, names[i]);
	cr_expect(!p[4].trainable, "requires_grad false is a frozen parameter");
	cr_expect(p[5].buffer && p[5].dtype == TI_DT_FLOAT64 && p[5].ndim == 0, "enc.scale is a 0-dim float64 buffer");
	const ti_model_report *rep = run(m);
	/* the model's own pos; stem's weight and bias; cls, frozen, the norm's three */
	EXPECT_INT(rep->totals.params, 20 + 4 * 3 * 4 * 4 + 4 + 5 * 4);
	ti_model_close(m);
}

Test(model, takes_attributes_runs_opaque_steps_and_sizes_given_as_formulas)
{
	ti_model *m = open_text(exported, NULL, NULL, 0);
	const ti_model_report *rep = run(m);
	char buf[128];
	ASSERT_INT(rep->step_count, 9);
	cr_expect(rep->steps[3].kind == TI_STEP_ATTR, "step 3 is an attr step");
	EXPECT_STR(shape_text(&rep->steps[3].outputs[0], buf, sizeof(buf)), "[1, 1, 4]");
	EXPECT_STR(shape_text(&rep->steps[5].outputs[0], buf, sizeof(buf)), "[N, 5, 4]");
	const ti_model_step *o = &rep->steps[7];
	cr_expect(o->kind == TI_STEP_OPAQUE && !o->counted, "the opaque step is not counted");
	EXPECT_STR(o->opaque, "lib.mix");
	EXPECT_STR(o->type, "Encoder"); /* the class's own name */
	EXPECT_INT(o->params, 4 + 4 + 4 + 4 + 4); /* cls, frozen, and the norm's three */
	ASSERT_INT(o->output_count, 2);
	EXPECT_STR(shape_text(&o->outputs[0], buf, sizeof(buf)), "[5*N, 4]");
	cr_expect(o->outputs[1].dtype == TI_DT_INT64, "recorded dtypes are kept");
	EXPECT_STR(shape_text(&rep->steps[8].outputs[0], buf, sizeof(buf)), "[5*N, 4]");
	ti_model_close(m);
}

Test(model, replaces_an_input_shape_and_dtype_from_the_command_line)
{
	const char *names[] = {"x"}, *specs[] = {"2x3x16x16:float64"};
	ti_model_options o = {.input_names = names, .input_specs = specs, .input_count = 1};
	ti_model *m = NULL;
	ti_error err;
	ti_error_clear(&err);
	ASSERT_INT(ti_model_open(issue_example, strlen(issue_example), &o, &m, &err), TI_OK);
	const ti_model_report *rep;
	ASSERT_INT(ti_model_run(m, &rep, &err), TI_OK);
	char buf[128];
	EXPECT_STR(shape_text(&rep->inputs[0], buf, sizeof(buf)), "[2, 3, 16, 16]");
	cr_expect(rep->failed, "a float64 input meets float32 weights: PyTorch refuses");
	EXPECT_CONTAINS(rep->error.message, "Input type (torch.DoubleTensor) and weight type (torch.FloatTensor)");
	ti_model_close(m);

	specs[0] = "T,3,2*T,2*T"; /* symbols and formulas, comma-separated */
	ASSERT_INT(ti_model_open(issue_example, strlen(issue_example), &o, &m, &err), TI_OK);
	ASSERT_INT(ti_model_run(m, &rep, &err), TI_OK);
	EXPECT_STR(shape_text(&rep->inputs[0], buf, sizeof(buf)), "[T, 3, 2*T, 2*T]");
	ti_model_close(m);

	names[0] = "image";
	cr_expect(ti_model_open(issue_example, strlen(issue_example), &o, &m, &err) == TI_E_INVALID,
	          "an input the description does not have is a usage error");
	EXPECT_CONTAINS(err.message, "the description has no input 'image' (its inputs: x)");
}

Test(model, trains_batch_norm_on_batch_statistics_and_marks_what_the_mode_changes)
{
	static const char *text =
		"{\"inputs\": {\"x\": {\"shape\": [\"N\", 8]}},"
		" \"modules\": {\"bn\": {\"type\": \"BatchNorm1d\", \"num_features\": 8},"
		"             \"drop\": {\"type\": \"Dropout\", \"p\": 0.5}, \"fc\": {\"type\": \"Linear\","
		"             \"in_features\": 8, \"out_features\": 2}},"
		" \"graph\": [{\"out\": \"h\", \"call\": \"bn\", \"args\": [\"x\"]},"
		"           {\"out\": \"h\", \"call\": \"drop\", \"args\": [\"h\"]},"
		"           {\"out\": \"h\", \"op\": \"dropout\", \"args\": [\"h\", 0.1], \"training\": \"$training\"},"
		"           {\"out\": \"y\", \"call\": \"fc\", \"args\": [\"h\"]}]}";
	const char *names[] = {"N"};
	int64_t one[] = {1};
	ti_model_options o = {.bind_names = names, .bind_values = one, .bind_count = 1};
	ti_model *m = NULL;
	ti_error err;
	ti_error_clear(&err);
	const ti_model_report *rep;
	ASSERT_INT(ti_model_open(text, strlen(text), &o, &m, &err), TI_OK);
	ASSERT_INT(ti_model_run(m, &rep, &err), TI_OK);
	cr_expect(!rep->failed && !rep->training, "in evaluation a batch of one is fine: running statistics");
	cr_expect(rep->steps[0].mode_dependent && rep->steps[1].mode_dependent && rep->steps[2].mode_dependent &&
	          !rep->steps[3].mode_dependent, "batch norm, dropout and the $training op are marked, the linear is not");
	ti_model_close(m);

	o.training = true;
	ASSERT_INT(ti_model_open(text, strlen(text), &o, &m, &err), TI_OK);
	ASSERT_INT(ti_model_run(m, &rep, &err), TI_OK);
	cr_expect(rep->failed && rep->training, "in training a batch of one has one value per channel");
	EXPECT_CONTAINS(rep->error.message,
	                "Expected more than 1 value per channel when training, got input size torch.Size([1, 8])");
	ti_model_close(m);
}

/* Bad descriptions: each names its JSON path. */
static const struct {
	const char *text, *message, *path;
} bad[] = {
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"modules\": {\"c\": {\"type\": \"Conv9d\"}}}",
	 "unknown module type 'Conv9d'", "modules.c.type"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"modules\": {\"s\": {\"type\": \"Sequential\", \"modules\": "
	 "[{\"type\": \"Conv2d\", \"in_channels\": 1, \"out_channels\": 1}]}}}",
	 "Conv2d() missing required argument 'kernel_size'", "modules.s.0.kernel_size"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"modules\": {\"l\": {\"type\": \"Linear\", \"in_features\": 2, "
	 "\"out_features\": 3, \"biass\": true}}}",
	 "Linear() got an unexpected keyword argument 'biass'", "modules.l.biass"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"graph\": [{\"out\": \"y\", \"op\": \"frobnicate\", \"args\": [\"x\"]}]}",
	 "unknown operator 'frobnicate'", "graph.0.op"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"graph\": [{\"out\": \"y\", \"op\": \"relu\", \"args\": [\"z\"]}]}",
	 "undefined tensor 'z'", "graph.0.args.0"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"modules\": {\"l\": {\"type\": \"Linear\", \"in_features\": \"$d\", "
	 "\"out_features\": 3}}}",
	 "config has no 'd'", "modules.l.in_features"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"graph\": [{\"out\": \"y\", \"call\": \"nothing\", \"args\": [\"x\"]}]}",
	 "no module 'nothing'", "graph.0.call"},
	{"{\"inputs\": {\"x\": {\"shape\": [-2]}}}",
	 "a size must be a non-negative integer, a symbol name or a formula", "inputs.x.shape.0"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"modules\": {\"c\": {\"type\": \"Conv2D\"}}}",
	 "unknown module type 'Conv2D' (did you mean 'Conv2d'?)", "modules.c.type"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"graph\": [{\"out\": \"y\", \"op\": \"rleu\", \"args\": [\"x\"]}]}",
	 "unknown operator 'rleu' (did you mean 'relu'?)", "graph.0.op"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"graph\": [{\"out\": \"y\", \"op\": \"softmax\", \"args\": [\"x\"], "
	 "\"dimm\": 0}]}",
	 "softmax() got an unexpected keyword argument 'dimm' (did you mean 'dim'?)", "graph.0.dimm"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"modules\": {\"b\": {\"type\": \"Module\", \"parameters\": "
	 "{\"w\": {\"shape\": [2], \"grad\": true}}}}}",
	 "a parameter takes \"shape\", \"dtype\" and \"requires_grad\", not 'grad'", "modules.b.parameters.w.grad"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"modules\": {\"b\": {\"type\": \"Module\"}}, "
	 "\"graph\": [{\"out\": \"y\", \"call\": \"b\", \"args\": [\"x\"]}]}",
	 "'b' (Module) has no forward in the description: call its modules", ""},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"graph\": [{\"out\": \"y\", \"attr\": \"nowhere.w\"}]}",
	 "no parameter or buffer 'nowhere.w'", "graph.0.attr"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"graph\": [{\"out\": \"y\", \"opaque\": \"f\", \"args\": [\"x\"]}]}",
	 "an opaque step needs \"outputs\"", "graph.0.outputs"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"graph\": [{\"out\": \"y\", \"op\": \"relu\", \"args\": [\"x\"], "
	 "\"outputs\": []}]}",
	 "only an opaque step takes \"outputs\"", "graph.0.outputs"},
	{"{\"inputs\": {\"x\": {\"shape\": [\"N\", \"NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN\"]}}}",
	 "a symbol name is at most 64 characters", "inputs.x.shape.1"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"defs\": {\"A\": {\"inputs\": [\"x\"], \"modules\": {\"a\": {\"type\": \"A\"}}}},"
	 " \"modules\": {\"a\": {\"type\": \"A\"}}}",
	 "modules nest deeper than", ""},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"modules\": {\"a\": {\"type\": \"Linear\", \"in_features\": 2, "
	 "\"out_features\": 3}, \"b\": {\"type\": \"Linear\", \"in_features\": 3, \"out_features\": 3}},"
	 " \"tied\": {\"b.weight\": \"a.weight\"}}",
	 "cannot tie 'b.weight' [3, 3] to 'a.weight' [3, 2]: shapes differ", "tied.b.weight"},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}", "bad JSON at line 1", ""},
	{"[1, 2]", "a model description is a JSON object", ""},
	{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"modules\": {\"c\": {\"type\": \"Conv2d\", \"in_channels\": 3, "
	 "\"out_channels\": 4, \"kernel_size\": 3, \"groups\": 2}}}",
	 "in_channels must be divisible by groups", "modules.c"},
};

Test(model, names_the_json_path_of_each_description_error)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ti_error err;
		ti_error_clear(&err);
		ti_model *m = NULL;
		ti_status st = ti_model_open(bad[i].text, strlen(bad[i].text), NULL, &m, &err);
		if (st == TI_OK) {
			const ti_model_report *rep;
			st = ti_model_run(m, &rep, &err);
			ti_model_close(m);
		}
		cr_expect(st == TI_E_CORRUPT, "case %zu: got %s (%s), want corrupt input", i, ti_status_name(st), err.message);
		EXPECT_CONTAINS(err.message, bad[i].message);
		cr_expect(!bad[i].path[0] || !strcmp(err.member, bad[i].path), "case %zu: path '%s', want '%s'", i,
		          err.member, bad[i].path);
	}
}

/* "kv_windows": a module's window, the deepest entry that is the module or holds it; 0 outside every entry. */
Test(model, finds_the_sliding_window_of_the_deepest_module_that_holds_a_path)
{
	ti_model *m = open_text("{\"inputs\": {\"x\": {\"shape\": [2]}},"
	                        " \"kv_windows\": {\"layers\": 8, \"layers.1\": 4, \"layers.1.attn\": 2},"
	                        " \"kv_compressed\": {\"layers\": 576}}", NULL, NULL, 0);
	EXPECT_INT(ti_model_kv_window(m, "layers.0.attn"), 8);
	EXPECT_INT(ti_model_kv_window(m, "layers.1"), 4);
	EXPECT_INT(ti_model_kv_window(m, "layers.1.attn.inner"), 2);
	EXPECT_INT(ti_model_kv_window(m, "layers.10.attn"), 8); /* "layers.1" is no prefix of "layers.10" */
	EXPECT_INT(ti_model_kv_window(m, "layersX"), 0);
	EXPECT_INT(ti_model_kv_window(m, "head"), 0);
	EXPECT_INT(ti_model_kv_compressed(m, "layers.3.self_attn"), 576);
	EXPECT_INT(ti_model_kv_compressed(m, "head"), 0);
	ti_model_close(m);
}

/* "attention" and "decode": how the model's code runs its attention steps, and how generation decodes it */
Test(model, reads_how_the_models_code_attends_and_how_generation_decodes_it)
{
	ti_model *m = open_text("{\"inputs\": {\"x\": {\"shape\": [2]}},"
	                        " \"attention\": {\"encoder\": \"eager,keeps-scores,no-cache\", \"decoder\": \"eager\"},"
	                        " \"decode\": {\"length\": \"U\", \"once\": [\"encoder\"]}}", NULL, NULL, 0);
	EXPECT_INT(ti_model_attention(m, "encoder.block.0.attn"),
	           TI_MODEL_ATTN_EAGER | TI_MODEL_ATTN_KEEPS_SCORES | TI_MODEL_ATTN_NO_CACHE);
	EXPECT_INT(ti_model_attention(m, "decoder.block.3"), TI_MODEL_ATTN_EAGER);
	EXPECT_INT(ti_model_attention(m, "lm_head"), 0);
	EXPECT_STR(ti_model_decode_length(m), "U");
	cr_expect(ti_model_runs_once(m, "encoder"));
	cr_expect(ti_model_runs_once(m, "encoder.block.1"));
	cr_expect(!ti_model_runs_once(m, "encoders"), "\"encoder\" is no prefix of \"encoders\"");
	cr_expect(!ti_model_runs_once(m, "decoder"));
	ti_model_close(m);
	m = open_text("{\"inputs\": {\"x\": {\"shape\": [2]}}}", NULL, NULL, 0);
	EXPECT_STR(ti_model_decode_length(m), "T");
	cr_expect(!ti_model_runs_once(m, "encoder"));
	ti_model_close(m);
}

Test(model, refuses_a_window_a_compressed_size_an_attention_or_a_decode_it_cannot_read)
{
	static const struct { const char *text, *message, *path; } cases[] = {
		{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"kv_windows\": {\"a\": 0}}",
		 "a sliding window is a whole number of tokens, at least 1", "kv_windows.a"},
		{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"kv_windows\": {\"a\": 2.5}}",
		 "a sliding window is a whole number of tokens, at least 1", "kv_windows.a"},
		{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"kv_compressed\": [576]}",
		 "\"kv_compressed\" must map module paths to counts", "kv_compressed"},
		{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"attention\": {\"a\": \"eager,fused\"}}",
		 "an attention's kinds are \"eager\", \"keeps-scores\" and \"no-cache\", joined by commas", "attention.a"},
		{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"attention\": {\"a\": 1}}",
		 "an attention's kinds are \"eager\", \"keeps-scores\" and \"no-cache\", joined by commas", "attention.a"},
		{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"attention\": [\"eager\"]}",
		 "\"attention\" must map module paths to kinds", "attention"},
		{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"decode\": {\"once\": \"encoder\"}}",
		 "\"decode\" is {\"length\": SYMBOL, \"once\": [MODULE_PATH, ...]}", "decode"},
		{"{\"inputs\": {\"x\": {\"shape\": [2]}}, \"decode\": {\"once\": [\"\"]}}", "a module path", "decode.once"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ti_error err;
		ti_error_clear(&err);
		ti_model *m = NULL;
		cr_expect(ti_model_open(cases[i].text, strlen(cases[i].text), NULL, &m, &err) == TI_E_CORRUPT, "case %zu", i);
		EXPECT_STR(err.message, cases[i].message);
		EXPECT_STR(err.member, cases[i].path);
	}
}
