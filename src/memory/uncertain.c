/*
 * uncertain.c - what the description does not fix, so what an estimate
 * cannot know exactly: one table, a row per kind of uncertainty, and the
 * peak's range the report gives for them.
 *
 * A row the range covers is one the simulation can play under each of its
 * alternatives (the instruction sets; cuDNN's convolution workspaces at
 * none and at the most measured, with its recurrent workspace at its
 * measured floor and ceiling: simulate.c runs the step again under each)
 * or a measured tolerance (the rules'). A row it does not cover has no
 * principled bound: oneDNN's GEMM convolution books its reduction buffer per
 * thread. Those can only add to
 * the peak: the range's high end then holds the rules' tolerance only, and
 * the report says the high end is open.
 */
#include <string.h>

#include "memory/memory_internal.h"

#define STRINGIFY(x) #x
#define PERCENT(x) STRINGIFY(x)

static const struct uncertain_row {
	const char *name;
	bool covered;
	const char *why;
} rows[TI_UNCERTAIN_KIND_COUNT] = {
	[TI_UNCERTAIN_RULES] = {"rules", true,
		"the rules' own error, within " PERCENT(TI_MEMORY_RULES_TOLERANCE_PERCENT) " % on the measured random corpus"},
	[TI_UNCERTAIN_CPU_ISA] = {"cpu-isa", true,
		"oneDNN's convolution scratch differs by instruction set, not fixed by --cpu-isa: avx512_core to sse41 spanned"},
	[TI_UNCERTAIN_THREADS] = {"threads", false,
		"one thread assumed; oneDNN's GEMM weight gradient books four more weights per thread"},
	[TI_UNCERTAIN_CUDNN_WORKSPACE] = {"cudnn-workspace", true,
		"cuDNN picks each convolution's engine and workspace: estimated as its input, output and weight once more "
		"(none for a 1x1 kernel at stride 1, depthwise, or few channels forward); from none to the most 219 shapes "
		"took on an H200 (10x those plus 4 MiB, im2col's columns, an FFT's planes; with --cudnn-benchmark the first "
		"step's search, split-K weight gradients too)"},
	[TI_UNCERTAIN_CUDNN_RNN] = {"cudnn-rnn", true,
		"cuDNN's recurrent workspace is its kernels' choice (cudnnGetRNNTempSpaceSizes): the estimate plays the median "
		"of 172 configurations measured on an H200 (cuDNN 9.19) for the hidden size and directions, the range the "
		"floor no measured workspace fell below (8 MiB a layer and direction, and the weights) and the ceiling none "
		"rose above (that, 1 MiB a layer and direction, and 1.85 (GRU) to 6 (RNN, training) x T x N x D x element "
		"x (gates x hidden + 2 x input + 512))"},
	[TI_UNCERTAIN_NO_OPTIMIZER] = {"no-optimizer", false, "no --optimizer given: its state and step are left out"},
	[TI_UNCERTAIN_NO_RULE] = {"no-rule", false, "operators without a memory rule: what they save is a guess"},
	[TI_UNCERTAIN_NO_GRAPH] = {"no-graph", false, "a checkpoint alone: activations and inputs are not counted"},
	[TI_UNCERTAIN_MOE_ROUTING] = {"moe-routing", true,
		"the tokens a router gives each expert depend on the data: the step runs num_experts_per_tok expert calls "
		"on every token (the B x T x k token-slots of average routing, and the most one expert can get, all "
		"B x T); with --strategy ep=K the high end has this rank's experts given every rank's tokens, K times "
		"the all-to-all's receive and the expert's transients"},
};

const char *ti_memory_uncertain_name(ti_memory_uncertain_kind k)
{
	return (unsigned)k < TI_UNCERTAIN_KIND_COUNT ? rows[k].name : NULL;
}

unsigned mem_uncertain_kinds(const ti_memory_options *o, unsigned unit_depends, bool unknown_ops)
{
	unsigned kinds = MEM_UNCERTAIN(TI_UNCERTAIN_RULES);
	bool cpu = o->device == TI_MEMORY_CPU;
	if (cpu && !o->cpu_isa_fixed)
		kinds |= unit_depends & MEM_UNCERTAIN(TI_UNCERTAIN_CPU_ISA);
	if (cpu)
		kinds |= unit_depends & MEM_UNCERTAIN(TI_UNCERTAIN_THREADS);
	else
		kinds |= unit_depends & (MEM_UNCERTAIN(TI_UNCERTAIN_CUDNN_WORKSPACE) | MEM_UNCERTAIN(TI_UNCERTAIN_CUDNN_RNN));
	if (o->mode == TI_MEMORY_TRAIN && o->optimizer == TI_OPTIM_NONE)
		kinds |= MEM_UNCERTAIN(TI_UNCERTAIN_NO_OPTIMIZER);
	if (unknown_ops)
		kinds |= MEM_UNCERTAIN(TI_UNCERTAIN_NO_RULE);
	return kinds;
}

ti_status mem_uncertain_list(ti_memory_report *r, ti_arena *arena, unsigned kinds, ti_error *err)
{
	ti_memory_uncertainty *list = ti_arena_calloc(arena, TI_UNCERTAIN_KIND_COUNT, sizeof(*list));
	if (!list)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	size_t n = 0;
	r->peak_high_open = false;
	for (int k = 0; k < TI_UNCERTAIN_KIND_COUNT; k++)
		if (kinds & MEM_UNCERTAIN(k)) {
			list[n++] = (ti_memory_uncertainty){(ti_memory_uncertain_kind)k, rows[k].name, rows[k].why, rows[k].covered};
			r->peak_high_open |= !rows[k].covered;
		}
	r->uncertain = list;
	r->uncertain_count = n;
	return TI_OK;
}

/*
 * The rules' error is measured against the measurement: |estimate - measured| <= p % of measured, which
 * puts the measurement within estimate / (1 + p) and estimate / (1 - p). Floor and ceiling, without the
 * products' overflow (x < 2^62).
 */
static int64_t below(int64_t x)
{
	int64_t d = 100 + TI_MEMORY_RULES_TOLERANCE_PERCENT;
	return x / d * 100 + (x % d) * 100 / d;
}

static int64_t above(int64_t x)
{
	int64_t d = 100 - TI_MEMORY_RULES_TOLERANCE_PERCENT;
	return x / d * 100 + ((x % d) * 100 + d - 1) / d;
}

ti_status mem_peak_range(ti_memory_report *r, int64_t least, int64_t most, ti_error *err)
{
	if (least > r->peak)
		least = r->peak;
	if (most < r->peak)
		most = r->peak;
	r->peak_low = below(least);
	r->peak_high = above(most);
	if (r->peak_high > TI_MEMORY_MAX_BYTES)
		return TI_FAIL(err, TI_E_LIMIT, "the peak's range passes %lld bytes", (long long)TI_MEMORY_MAX_BYTES);
	return TI_OK;
}
