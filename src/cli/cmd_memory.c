/*
 * cmd_memory.c - `tinspect memory MODEL.json`: how much memory one step
 * takes (inference or training), why, whether it fits a device, and the
 * largest batch or sequence that does (--fit).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/model_cli.h"
#include "cli/memory_plot.h"
#include "cli/output.h"
#include "tinspect/arena.h"
#include "tinspect/hf_describe.h"
#include "tinspect/memory.h"
#include "tinspect/source.h"

enum {
	OPT_HELP = 1, OPT_JSON, OPT_RAW, OPT_BIND, OPT_INPUT, OPT_MODE, OPT_OPTIMIZER, OPT_IMPL, OPT_DEVICE, OPT_DTYPE,
	OPT_TRAINABLE, OPT_FROZEN, OPT_DEVICE_MEMORY, OPT_FIT, OPT_TOP, OPT_CHECKPOINT, OPT_ACCUMULATE, OPT_KV_CACHE, OPT_OVERHEAD, OPT_TRUST, OPT_DEPTH, OPT_WORLD, OPT_STRATEGY,
	OPT_BUCKET, OPT_WRAP, OPT_PLOT, OPT_FORCE, OPT_AMP, OPT_MICRO, OPT_WEIGHTS, OPT_CPU_ISA, OPT_TORCH,
	OPT_BATCH, OPT_CONTEXT, OPT_KV_DTYPE, OPT_SLIDING_WINDOW, OPT_ATTN,
	OPT_KV_LAYOUT,
	OPT_LORA, OPT_LORA_TARGETS, OPT_QUANTIZE, OPT_DOUBLE_QUANT, OPT_LOSS, OPT_CUDNN_BENCHMARK
};

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"raw", 0, OPT_FLAG, OPT_RAW},
	{"bind", 0, OPT_VALUE, OPT_BIND},
	{"input", 0, OPT_VALUE, OPT_INPUT},
	{"mode", 0, OPT_VALUE, OPT_MODE},
	{"optimizer", 0, OPT_VALUE, OPT_OPTIMIZER},
	{"impl", 0, OPT_VALUE, OPT_IMPL},
	{"device", 0, OPT_VALUE, OPT_DEVICE},
	{"cpu-isa", 0, OPT_VALUE, OPT_CPU_ISA},
	{"cudnn-benchmark", 0, OPT_FLAG, OPT_CUDNN_BENCHMARK},
	{"torch", 0, OPT_VALUE, OPT_TORCH},
	{"dtype", 0, OPT_VALUE, OPT_DTYPE},
	{"trainable", 0, OPT_VALUE, OPT_TRAINABLE},
	{"frozen", 0, OPT_VALUE, OPT_FROZEN},
	{"device-memory", 0, OPT_VALUE, OPT_DEVICE_MEMORY},
	{"fit", 0, OPT_VALUE, OPT_FIT},
	{"top", 0, OPT_VALUE, OPT_TOP},
	{"checkpoint", 0, OPT_VALUE, OPT_CHECKPOINT},
	{"accumulate", 0, OPT_VALUE, OPT_ACCUMULATE},
	{"kv-cache", 0, OPT_VALUE, OPT_KV_CACHE},
	{"batch", 0, OPT_VALUE, OPT_BATCH},
	{"context", 0, OPT_VALUE, OPT_CONTEXT},
	{"kv-dtype", 0, OPT_VALUE, OPT_KV_DTYPE},
	{"sliding-window", 0, OPT_VALUE, OPT_SLIDING_WINDOW},
	{"attn", 0, OPT_VALUE, OPT_ATTN},
	{"kv-layout", 0, OPT_VALUE, OPT_KV_LAYOUT},
	{"lora", 0, OPT_VALUE, OPT_LORA},
	{"lora-targets", 0, OPT_VALUE, OPT_LORA_TARGETS},
	{"quantize", 0, OPT_VALUE, OPT_QUANTIZE},
	{"double-quant", 0, OPT_FLAG, OPT_DOUBLE_QUANT},
	{"loss", 0, OPT_VALUE, OPT_LOSS},
	{"overhead", 0, OPT_VALUE, OPT_OVERHEAD},
	{"trust", 0, OPT_FLAG, OPT_TRUST},
	{"depth", 0, OPT_VALUE, OPT_DEPTH},
	{"world-size", 0, OPT_VALUE, OPT_WORLD},
	{"strategy", 0, OPT_VALUE, OPT_STRATEGY},
	{"bucket", 0, OPT_VALUE, OPT_BUCKET},
	{"wrap", 0, OPT_VALUE, OPT_WRAP},
	{"plot", 0, OPT_VALUE, OPT_PLOT},
	{"amp", 0, OPT_VALUE, OPT_AMP},
	{"micro-batches", 0, OPT_VALUE, OPT_MICRO},
	{"weights", 0, OPT_VALUE, OPT_WEIGHTS},
	{"force", 'f', OPT_FLAG, OPT_FORCE},
	CLI_URL_OPTIONS,
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect memory MODEL.json [options]\n"
	"       tinspect memory CHECKPOINT [--mode train] [--optimizer NAME] [--dtype DT] ...\n"
	"\n"
	"Estimate the memory one step of a described model takes, by simulating\n"
	"it: the forward pass, then (training) the backward pass and the optimizer\n"
	"step, with every tensor created and freed as PyTorch does. Prints each\n"
	"term with the rule behind it, the peak and the step that reached it, the\n"
	"largest tensors live at that moment, and a timeline.\n"
	"\n"
	"Under the peak, its range and why: the peak under each instruction set\n"
	"when --cpu-isa is not given and the convolutions' scratch depends on it,\n"
	"widened by the rules' measured error (5 %); what has no bound (the thread\n"
	"count, cuDNN's workspaces on cuda) is named and leaves the high end open.\n"
	"Terms and tensors such a cause shapes say \"depends on\" it.\n"
	"\n"
	"Given a checkpoint instead (any file inspect reads), the terms it alone\n"
	"gives: its weights, and for training a gradient per floating parameter and\n"
	"the optimizer state (the checkpoint's own when it holds one). With no graph\n"
	"the activations are unknown, and the peak is marked as a lower bound.\n"
	"\n"
	"options:\n"
	"  --bind NAME=N        a value for a symbol of the description (every one is needed)\n"
	"  --batch B            a language model's batch: --bind B=B (the Hugging Face\n"
	"                       templates' symbol; an error when the description has none)\n"
	"  --context T          its context length: --bind T=T; in inference, beside the\n"
	"                       prefill (the whole context at once) the decode step: one\n"
	"                       new token with the KV cache of T tokens (\"decode\")\n"
	"  --input NAME=SHAPE[:DTYPE]\n"
	"                       an input's shape (8x3x224x224) and dtype, for the description's\n"
	"  --mode infer|train   inference under no_grad (default), or a training step\n"
	"  --optimizer NAME     training: sgd, momentum, adam, adamw, adagrad, rmsprop,\n"
	"                       lion, adafactor, adam8bit (none given: the optimizer's\n"
	"                       state and step are left out, and the peak is a lower bound)\n"
	"  --impl NAME          the optimizer's implementation: for-loop, foreach, fused\n"
	"                       (default: what --torch picks: foreach for 2 on cuda,\n"
	"                       else for-loop)\n"
	"  --world-size W       training on W ranks, with --strategy: per-rank figures\n"
	"  --strategy NAME      ddp (gradient buckets), zero1 (optimizer state\n"
	"                       partitioned), zero2 (and gradients), zero3 or fsdp (and\n"
	"                       parameters, each wrapped unit gathered while it runs),\n"
	"                       tp=K (Megatron tensor parallelism over K ranks), pp=K\n"
	"                       (K pipeline stages, 1F1B: the stage that needs the most);\n"
	"                       ep=K, in inference too: expert parallelism, each rank\n"
	"                       holding ceil(E/K) experts of every MoE layer (the rest\n"
	"                       replicated) and the all-to-all buffers of the routed\n"
	"                       tokens; the high end of the range (moe-routing) has\n"
	"                       every rank's tokens routed to this rank's experts\n"
	"  --micro-batches M    pp=K: micro-batches a step (default K)\n"
	"  --bucket SIZE        DDP's bucket_cap / ZeRO-2's reduce bucket (default 25MiB)\n"
	"  --wrap GLOB          zero3/fsdp units (default: the blocks of the first\n"
	"                       ModuleList or Sequential, else each top-level module)\n"
	"  --device cpu|cuda    cpu: tensors as malloc holds them (default); cuda: each\n"
	"                       rounded up to 512 bytes as the caching allocator does\n"
	"  --cpu-isa NAME       cpu: the instruction set oneDNN chooses PyTorch's convolution\n"
	"                       kernels for: avx512_core, avx2, avx, sse41 (default: this\n"
	"                       machine's, at most $ONEDNN_MAX_CPU_ISA)\n"
	"  --cudnn-benchmark    cuda: torch.backends.cudnn.benchmark=True: each convolution\n"
	"                       runs the algorithm cudnnFind timed fastest, whose workspace\n"
	"                       may be larger than the heuristic choice's\n"
	"  --torch 1.13|2       the PyTorch whose kernels and defaults the step follows\n"
	"                       (default: 1.13 on the cpu, 2 on cuda, what each is\n"
	"                       measured against): 2 runs attention without\n"
	"                       need_weights through fused kernels that keep no\n"
	"                       attention matrix, and its optimizers default to foreach\n"
	"                       on cuda; torch.compile is not modelled\n"
	"  --weights CKPT       the parameters in the dtypes a checkpoint of the model holds\n"
	"                       them, and its optimizer state when it holds one\n"
	"  --dtype DT           model.to(DT): the floating weights in this dtype, and the\n"
	"                       activations computed from them\n"
	"  --amp bf16|fp16      torch.autocast: matmuls and convolutions in the low dtype\n"
	"                       (float32 weights cast once per step and cached), softmax,\n"
	"                       norms and losses in float32\n"
	"  --kv-cache auto|on|off  inference: hold the keys and values of every attention\n"
	"                       step at the bound length, as generation does (auto: when\n"
	"                       an attention step masks its scores: a decoder)\n"
	"  --kv-dtype DT        the KV cache's elements: float16, bfloat16, float32, int8,\n"
	"                       fp8 (default: --dtype, else the keys' and values' own)\n"
	"  --sliding-window W   every attention layer caches at most W tokens, over the\n"
	"                       windows a Hugging Face config gives its layers (without\n"
	"                       it: Mistral's sliding_window on every layer, Qwen2's\n"
	"                       from max_window_layers, Gemma 2's even layers, Gemma 3's\n"
	"                       5 of 6, or the config's layer_types: in the decode step\n"
	"                       a sliding layer holds min(T, W) tokens, the rest T)\n"
	"  --kv-layout expanded|compressed  the cache of DeepSeek's MLA attention:\n"
	"                       expanded, the per-head keys and values transformers\n"
	"                       caches (default); compressed, one latent a token of\n"
	"                       kv_lora_rank + qk_rope_head_dim elements, as DeepSeek's\n"
	"                       own inference and vLLM keep it\n"
	"  --attn eager|sdpa|flash  the attention kernel: eager materialises the B x H x T\n"
	"                       x T scores; sdpa the fused kernel PyTorch 2 picks for the\n"
	"                       device; flash always the flash kernel (default: as --torch)\n"
	"  --loss sum|cross-entropy  training: the loss backward starts from: the sum of\n"
	"                       the outputs, or cross-entropy over the first output's last\n"
	"                       dimension, as a language model's labels take it (default:\n"
	"                       cross-entropy for a class named *ForCausalLM or\n"
	"                       *LMHeadModel, as the Hugging Face templates are, else sum)\n"
	"  --trainable GLOB     only these parameters train (repeatable; fine-tuning)\n"
	"  --lora r=R[,alpha=A,dropout=P]\n"
	"                       training: peft's LoRA on the --lora-targets Linear layers:\n"
	"                       each frozen, beside it A (R x in) and B (out x R) that\n"
	"                       train, base(x) + B(A(dropout(x))) * A/R (defaults as\n"
	"                       LoraConfig: alpha 8, dropout 0); every other parameter frozen\n"
	"  --lora-targets LIST  the Linear layers' names (q_proj,v_proj); default: peft's\n"
	"                       for the config's model_type (q_proj,v_proj for llama,\n"
	"                       mistral, qwen2, gemma; query_key_value for falcon, gpt_neox)\n"
	"  --quantize int8|nf4|fp4\n"
	"                       the Linear weights (not lm_head's) as bitsandbytes holds\n"
	"                       them: int8 (LLM.int8: int8 and a float32 scale a row),\n"
	"                       nf4/fp4 (4 bits, a float32 absmax per block of 64), each\n"
	"                       dequantized per call; training needs --lora (QLoRA)\n"
	"  --double-quant       4-bit: bnb_4bit_use_double_quant (a uint8 absmax a block,\n"
	"                       a float32 one per 256 blocks); without --quantize, a Hugging\n"
	"                       Face config.json's quantization_config (bitsandbytes, gptq,\n"
	"                       awq, fp8) says how its Linear weights are held\n"
	"  --frozen GLOB        these parameters do not train: no gradient, no state\n"
	"  --checkpoint GLOB    activation checkpointing of the modules whose path matches\n"
	"                       (torch.utils.checkpoint): their forward saves only its\n"
	"                       inputs and runs again in backward (repeatable)\n"
	"  --accumulate N       gradient accumulation over N micro-batches: the last one,\n"
	"                       with the .grad the earlier ones left (the batch symbols\n"
	"                       are one micro-batch's)\n"
	"  --overhead NAME=SIZE cuda: memory outside the tensors, counted with the reserved\n"
	"                       peak against --device-memory (default context=500MiB,\n"
	"                       cublas=32MiB, cudnn=0; repeatable, replaces a default)\n"
	"  --device-memory SIZE a size (80GiB, 24GB) or a GPU (H100-80GB, A100-40GB, L4,\n"
	"                       RTX-4090, ...): say whether the peak fits; exit 1 if not;\n"
	"                       a comma list (H100-80GB,L4) gives a row per device and\n"
	"                       exits 1 unless the step fits every one; with --context\n"
	"                       the prefill's need and the decode step's, both to fit\n"
	"  --fit SYMBOL         the largest value of SYMBOL whose peak fits --device-memory\n"
	"                       (each listed device's; with --context, the larger of the\n"
	"                       prefill and the decode step)\n"
	"  --top N              the N largest tensors live at the peak (default 8)\n"
	"  --depth N            a row per module down to depth N: its weights and what its\n"
	"                       calls keep for backward at the end of forward\n"
	"  --plot FILE.svg      also draw the timeline as an SVG chart\n"
	"  -f, --force          replace the --plot FILE if it exists\n"
	"  --json               print one JSON document instead of the table (the\n"
	"                       range: \"peak_range\": {\"low\", \"high\", \"high_open\",\n"
	"                       \"uncertain\": [{\"name\", \"why\", \"covered\"}]})\n"
	"  --raw                print byte sizes as exact integers\n"
	"  --trust              use a checkpoint whose pickle calls something dangerous\n"
	CLI_URL_HELP("     ")
	"  -h, --help           show this help\n";

typedef struct memory_args {
	cli_model cm;
	ti_memory_options o;
	const char *trainable[64], *frozen[64], *checkpoint[64], *wrap[64];
	const char *plot;
	bool force;
	int64_t device_bytes;
	const char *device_name, *device_text;
	/* --device-memory A,B,...: every device; device_* above is the one being fitted or printed */
	/* need: the prefill's (the step's); decode_need: the decode step's, 0 without one; verdict: both must fit */
	struct device { char text[64]; const char *gpu; int64_t bytes; int64_t fit_value, need, decode_need; int verdict; }
		devices[16];
	int device_count;
	/* --batch, --context: the LLM templates' B and T */
	int64_t batch, context;
	/* --context in inference: the decode step (a token with the cache of the whole context), done when set */
	struct decode { bool done; int64_t tokens, peak, need, kv_cache, weights, activations; int sites, sliding; } decode;
	const char *fit;
	bool no_fit_line;        /* --fit found none: its own lines say so, not print_text's */
	bool want_decode;        /* --fit in inference with --batch/--context and a KV cache: each probe fits the decode
	                            step too */
	int top, depth;
	bool json;
	bool help; /* --help was asked for and printed */
	/* cuda: memory outside the allocator's tensors, by name */
	struct overhead { char name[32]; int64_t bytes; } overheads[16];
	int overhead_count;
	int64_t stage_peaks[64]; /* pp=K: each stage's peak (the first 64) */
	const char *weights;     /* --weights CKPT */
	ti_source *weights_src;
	ti_arena arena;          /* what outlives one estimate: the checkpoint's dtypes */
	size_t matched, param_count;
	/* what the command line gave, for the checks across options */
	size_t ntrain, nfrozen, ncheck, nwrap;
	bool optimizer_given, impl_given, kv_given, overhead_given, device_given, cpu_isa_given, trust;
	bool kv_dtype_given;
	bool kv_layout_given, loss_given;
	char window_note[400];   /* a Hugging Face config's sliding_window that --sliding-window did not apply, or "" */
	const char *lora_spec, *lora_targets; /* --lora, --lora-targets as given */
	ti_lora_config lora;
	bool lora_default_targets;            /* the targets are peft's default for the config's model_type */
	bool quant_from_config;               /* the quantization is config.json's quantization_config */
	size_t user_trainable;                /* --trainable globs given; the adapters' follow them */
} memory_args;

/* Device i of --device-memory becomes the one fitted and printed. */
static void use_device(memory_args *a, int i)
{
	a->device_bytes = a->devices[i].bytes;
	a->device_name = a->devices[i].gpu;
	a->device_text = a->devices[i].text;
}

/* PyTorch 2.x on a recent GPU: the context's own memory (driver, kernels; 300-700 MiB by GPU and version), cuBLAS's workspace. */
static const struct overhead default_overheads[] = {
	{"context", (int64_t)500 << 20}, {"cublas", (int64_t)32 << 20}, {"cudnn", 0},
};

static int64_t overhead_total(const memory_args *a)
{
	int64_t sum = 0;
	for (int i = 0; i < a->overhead_count; i++)
		sum += a->overheads[i].bytes;
	return sum;
}

/* What must fit: on cuda the reserved peak and the overheads; on the CPU the peak. */
static int64_t device_need(const memory_args *a, const ti_memory_report *r)
{
	return a->o.device == TI_MEMORY_CUDA ? r->reserved_peak + overhead_total(a) : r->peak;
}

/* What must fit for generation: the larger of the prefill's need and the decode step's, when there is one. */
static int64_t step_need(const memory_args *a, const ti_memory_report *r)
{
	int64_t need = device_need(a, r);
	return a->decode.done && a->decode.need > need ? a->decode.need : need;
}

static const char *const modes[] = {"infer", "train", NULL};

static int parse_choice(const char *option, const char *value, const char *const *names, int *out)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], value)) {
			*out = i;
			return EXIT_OK;
		}
	char hint[160];
	return cli_usage_error("memory: --%s '%s' is not one of its values%s", option, value,
	                       cli_did_you_mean(value, names, "", hint, sizeof(hint)));
}

/* --OPTION N: an integer from lo to hi, or a usage error saying what it wants ("a number of ranks"). */
static int parse_count(const char *option, const char *what, const char *value, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(value, &end, 10);
	if (errno || *end || end == value || v < lo || v > hi)
		return cli_usage_error("memory: --%s wants %s from %lld to %lld, not '%s'", option, what, (long long)lo,
		                       (long long)hi, value);
	*out = v;
	return EXIT_OK;
}

/* --OPTION SIZE: a size above 0, not a GPU name. */
static int parse_bytes(const char *option, const char *value, int64_t *out)
{
	ti_error err;
	const char *gpu;
	ti_error_clear(&err);
	if (ti_memory_parse_size(value, out, &gpu, &err) || gpu || !*out)
		return cli_usage_error("memory: --%s %s", option, err.message[0] ? err.message : "wants a size above 0");
	return EXIT_OK;
}

static const char *const optimizer_names[] = {"sgd", "momentum", "adam", "adamw", "adagrad", "rmsprop",
                                              "lion", "adafactor", "adam8bit", NULL};
static const char *const impl_names[] = {"for-loop", "foreach", "fused", NULL};
static const char *const device_names[] = {"cpu", "cuda", NULL};

static const char *param_name(const void *ctx, size_t i)
{
	return ((const ti_model_param *)ctx)[i].name;
}

static const char *module_path(const void *ctx, size_t i)
{
	return ((const ti_model_module *)ctx)[i].prefix;
}

/* Every --trainable, --frozen and --checkpoint glob matches something, as git wants of a pathspec. */
static int check_globs(const memory_args *a)
{
	size_t np, nm;
	const ti_model_param *params = ti_model_params(a->cm.model, &np);
	const ti_model_module *modules = ti_model_modules(a->cm.model, &nm);
	int rc = cli_check_globs("memory", "--trainable", a->cm.file, a->o.trainable, a->o.trainable_count, param_name,
	                         params, np);
	if (!rc)
		rc = cli_check_globs("memory", "--frozen", a->cm.file, a->o.frozen, a->o.frozen_count, param_name, params, np);
	if (!rc)
		rc = cli_check_globs("memory", "--checkpoint", a->cm.file, a->o.checkpoint, a->o.checkpoint_count, module_path,
		                     modules, nm);
	return rc;
}

/* Opens the description with the binds (and fit's value) and simulates it. */
static int estimate(memory_args *a, const ti_memory_report **out, ti_error *err, bool quiet)
{
	if (a->cm.model) {
		ti_model_close(a->cm.model);
		a->cm.model = NULL;
	}
	/* the file is read again for each of --fit's probes: milliseconds */
	a->cm.cast_dtype = a->o.dtype; /* --dtype is model.to(DT): the activations follow the weights */
	int rc = cli_model_open(&a->cm);
	if (rc)
		return rc;
	if (!quiet && (rc = check_globs(a)))
		return rc;
	if (a->weights_src && !a->o.param_dtypes) {
		ti_dtype *dtypes;
		int64_t state, *held;
		ti_error werr;
		ti_error_clear(&werr);
		if (ti_memory_weights_from(a->weights_src, a->cm.model, &a->arena, &dtypes, &held, &a->matched, &state,
		                           &werr))
			return cli_report(a->weights, &werr);
		ti_model_params(a->cm.model, &a->param_count);
		if (!a->matched)
			return cli_usage_error("memory: --weights %s holds none of %s's parameters", a->weights, a->cm.file);
		a->o.param_dtypes = dtypes;
		a->o.param_bytes = held;
		if (a->o.mode == TI_MEMORY_TRAIN)
			a->o.optimizer_state_bytes = state;
	}
	ti_status st = ti_memory_estimate(a->cm.model, &a->o, out, err);
	if (st)
		return -(int)st;
	return EXIT_OK;
}

static const cli_column term_columns[] = {
	{"TERM", CLI_LEFT, 0}, {"BYTES", CLI_RIGHT, 0}, {"RULE", CLI_WRAP, 0},
};
static const cli_column module_columns[] = {
	{"MODULE", CLI_LEFT, 60}, {"WEIGHTS", CLI_RIGHT, 0}, {"ACTIVATIONS", CLI_RIGHT, 0},
};
static const cli_column top_columns[] = {
	{"KIND", CLI_LEFT, 0}, {"BYTES", CLI_RIGHT, 0}, {"TENSOR", CLI_LEFT, 80},
};

/* A sparkline of the timeline: the most live in each of width buckets. */
static void sparkline(const ti_memory_report *r, int width)
{
	static const char *const bars[] = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
	if (!r->point_count || !r->peak)
		return;
	int n = (int)r->point_count < width ? (int)r->point_count : width;
	printf("timeline  ");
	ti_memory_phase last = r->timeline[0].phase;
	for (int i = 0; i < n; i++) {
		size_t from = r->point_count * (size_t)i / (size_t)n, to = r->point_count * (size_t)(i + 1) / (size_t)n;
		int64_t most = 0;
		for (size_t k = from; k < to && k < r->point_count; k++)
			if (r->timeline[k].high > most)
				most = r->timeline[k].high;
		if (r->timeline[from].phase != last) {
			printf("|");
			last = r->timeline[from].phase;
		}
		int level = (int)((most * 7 + r->peak / 2) / r->peak);
		printf("%s", bars[level < 0 ? 0 : level > 7 ? 7 : level]);
	}
	printf("\n          forward%s\n", r->gradients || r->activations ? " | backward | optimizer" : "");
}

/* The names of the uncertainties a depends mask has, "cpu-isa, threads", into buf ("" for none). */
static const char *depends_words(unsigned depends, char *buf, size_t cap)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int k = 0; k < TI_UNCERTAIN_KIND_COUNT && used < cap; k++)
		if (depends & (1u << k))
			used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", ti_memory_uncertain_name(k));
	return buf;
}

static void add_depends(cJSON *obj, unsigned depends)
{
	if (!depends)
		return;
	cJSON *list = cJSON_AddArrayToObject(obj, "depends");
	for (int k = 0; k < TI_UNCERTAIN_KIND_COUNT; k++)
		if (depends & (1u << k))
			cJSON_AddItemToArray(list, cJSON_CreateString(ti_memory_uncertain_name(k)));
}

/* The line under the peak: its range, and why it is one ("or more" where the high end is open). */
static void print_range(const ti_memory_report *r)
{
	char low[32], high[32];
	printf("range %s \u2013 %s%s (", cli_bytes(r->peak_low, low, sizeof(low)), cli_bytes(r->peak_high, high, sizeof(high)),
	       r->peak_high_open ? " or more" : "");
	for (size_t i = 0; i < r->uncertain_count; i++)
		printf("%s%s: %s", i ? "; " : "", r->uncertain[i].name, r->uncertain[i].why);
	printf(")\n");
}

static void add_range(cJSON *root, const ti_memory_report *r)
{
	cJSON *range = cJSON_AddObjectToObject(root, "peak_range");
	cJSON_AddNumberToObject(range, "low", (double)r->peak_low);
	cJSON_AddNumberToObject(range, "high", (double)r->peak_high);
	cJSON_AddBoolToObject(range, "high_open", r->peak_high_open);
	cJSON *list = cJSON_AddArrayToObject(range, "uncertain");
	for (size_t i = 0; i < r->uncertain_count; i++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", r->uncertain[i].name);
		cJSON_AddStringToObject(x, "why", r->uncertain[i].why);
		cJSON_AddBoolToObject(x, "covered", r->uncertain[i].covered);
		cJSON_AddItemToArray(list, x);
	}
}

/* The peak's term when the peak is only a lower bound (a checkpoint alone, opaque steps), else NULL. */
static const ti_memory_term *peak_lower_bound(const ti_memory_report *r)
{
	for (size_t i = 0; i < r->term_count; i++)
		if (!strcmp(r->terms[i].name, "peak") && r->terms[i].lower_bound)
			return &r->terms[i];
	return NULL;
}

/*
 * --device-memory's verdict: fits (EXIT_OK), does not fit (EXIT_NEGATIVE), or,
 * when the peak is a lower bound that fits, cannot tell (EXIT_UNDECIDED): a
 * lower bound never says yes.
 */
static int fit_verdict(const memory_args *a, const ti_memory_report *r, int64_t need)
{
	if (need > a->device_bytes)
		return EXIT_NEGATIVE;
	return peak_lower_bound(r) ? EXIT_UNDECIDED : EXIT_OK;
}

static void print_fit(const memory_args *a, const ti_memory_report *r, int64_t peak)
{
	char have[32], need[32];
	const char *name = a->device_name ? a->device_name : a->device_text;
	const ti_memory_term *low = peak_lower_bound(r);
	if (peak <= a->device_bytes && low)
		printf("cannot tell whether it fits: needs at least %s, %s has %s, but %s\n", cli_bytes(peak, need, sizeof(need)),
		       name, cli_bytes(a->device_bytes, have, sizeof(have)),
		       low->why ? low->why : "some terms are unknown");
	else if (peak > a->device_bytes && low)
		printf("does not fit: needs at least %s, %s has %s\n", cli_bytes(peak, need, sizeof(need)), name,
		       cli_bytes(a->device_bytes, have, sizeof(have)));
	else if (peak <= a->device_bytes)
		printf("fits: %s of %s (%s), %.1f %%\n", cli_bytes(peak, need, sizeof(need)),
		       cli_bytes(a->device_bytes, have, sizeof(have)), name, 100.0 * (double)peak / (double)a->device_bytes);
	else
		printf("does not fit: needs %s, %s has %s\n", cli_bytes(peak, need, sizeof(need)), name,
		       cli_bytes(a->device_bytes, have, sizeof(have)));
}

static const char *const strategy_names[] = {"none", "ddp", "zero1", "zero2", "zero3"};

/* The optimizer as the report counts it: named, the state a checkpoint holds, or none. */
static const char *optimizer_words(const ti_memory_options *o, const ti_memory_report *r, char *buf, size_t cap)
{
	if (o->optimizer != TI_OPTIM_NONE)
		snprintf(buf, cap, "%s (%s)", ti_memory_optimizer_name(o->optimizer), ti_memory_impl_name(o->impl));
	else
		snprintf(buf, cap, "%s", r->optimizer_state ? "the optimizer state the checkpoint holds" : "no optimizer");
	return buf;
}

/* The adapters' parameters: lora_A and lora_B of every wrapped layer (*layers: how many layers). */
static int64_t lora_params(const memory_args *a, size_t *layers)
{
	*layers = 0;
	size_t np;
	const ti_model_param *params = a->cm.model ? ti_model_params(a->cm.model, &np) : NULL;
	int64_t count = 0;
	for (size_t i = 0; params && i < np; i++) {
		if (!strstr(params[i].name, ".lora_A.default.") && !strstr(params[i].name, ".lora_B.default."))
			continue;
		*layers += strstr(params[i].name, ".lora_A.default.") != NULL;
		int64_t n = 1;
		for (int d = 0; d < params[i].ndim; d++)
			n *= params[i].shape[d];
		count += n;
	}
	return count;
}

/*
 * Every setting that changed the numbers, in the header's words: "training
 * step, adam (for-loop), bfloat16 weights, autocast bf16, zero3 on 8 ranks,
 * checkpointing 'h.*', cuda". The JSON gives the same as "settings".
 */
static void print_settings(const memory_args *a, const ti_memory_report *r)
{
	const ti_memory_options *o = &a->o;
	char buf[160];
	printf("%s: %s", a->cm.file, o->mode == TI_MEMORY_TRAIN ? "training step" : "inference");
	if (o->mode == TI_MEMORY_TRAIN)
		printf(", %s", optimizer_words(o, r, buf, sizeof(buf)));
	if (o->mode == TI_MEMORY_TRAIN && r->loss == TI_LOSS_CROSS_ENTROPY)
		printf(", cross-entropy loss");
	if (o->dtype)
		printf(", %s weights", ti_dtype_name(o->dtype));
	else if (a->weights)
		printf(", weights as %s holds them", a->weights);
	if (o->amp)
		printf(", autocast %s", o->amp == TI_DT_FLOAT16 ? "fp16" : "bf16");
	if (o->strategy)
		printf(", %s on %lld ranks", strategy_names[o->strategy], (long long)(o->world_size ? o->world_size : 1));
	if (o->tensor_parallel > 1)
		printf(", tp=%lld", (long long)o->tensor_parallel);
	if (o->pipeline > 1)
		printf(", pp=%lld", (long long)o->pipeline);
	if (o->expert_parallel > 1)
		printf(", ep=%lld (%lld of %lld experts on this rank)", (long long)o->expert_parallel,
		       (long long)r->experts_held, (long long)r->experts);
	if (o->accumulate > 1)
		printf(", accumulating %lld micro-batches", (long long)o->accumulate);
	for (size_t i = 0; i < o->checkpoint_count; i++)
		printf("%s'%s'", i ? " " : ", checkpointing ", o->checkpoint[i]);
	for (size_t i = 0; i < o->frozen_count; i++)
		printf("%s'%s'", i ? " " : ", frozen ", o->frozen[i]);
	for (size_t i = 0; i < a->user_trainable; i++)
		printf("%s'%s'", i ? " " : ", training only ", o->trainable[i]);
	if (o->quantize == TI_QUANT_GPTQ || o->quantize == TI_QUANT_AWQ)
		printf(", Linear weights %s %d-bit, groups of %lld%s", o->quantize == TI_QUANT_GPTQ ? "GPTQ" : "AWQ",
		       o->quant_bits, (long long)o->quant_group, a->quant_from_config ? " (config.json)" : "");
	else if (o->quantize == TI_QUANT_FP8)
		printf(", Linear weights fp8 (blocks of %lldx%lld%s)", (long long)o->quant_group, (long long)o->quant_group,
		       a->quant_from_config ? ", config.json" : "");
	else if (o->quantize)
		printf(", Linear weights %s (bitsandbytes%s%s)", ti_memory_quant_name(o->quantize),
		       o->quant_double ? ", double quantization" : "", a->quant_from_config ? ", config.json" : "");
	if (a->lora_spec) {
		printf(", LoRA r=%ld alpha=%g", a->lora.r, a->lora.alpha);
		if (a->lora.dropout > 0)
			printf(" dropout=%g", a->lora.dropout);
		size_t layers;
		int64_t count = lora_params(a, &layers);
		printf(" on %zu Linear layers (", layers);
		for (size_t i = 0; i < a->lora.target_count; i++)
			printf("%s%s", i ? "," : "", a->lora.targets[i]);
		char n[32];
		printf("%s): %s adapter parameters, the rest frozen", a->lora_default_targets ? ": peft's default" : "",
		       cli_count(count, n, sizeof(n)));
	}
	if (o->kv_dtype && (a->kv_dtype_given || o->mode == TI_MEMORY_INFER))
		printf(", KV cache %s", ti_dtype_name(o->kv_dtype));
	if (o->kv_window)
		printf(", sliding window %lld", (long long)o->kv_window);
	if (o->attention)
		printf(", attention %s", ti_memory_attention_name(o->attention));
	if (o->device == TI_MEMORY_CUDA)
		printf(", cuda");
	else
		printf(", cpu (%s)", ti_cpu_isa_name(o->cpu_isa));
	printf(", PyTorch %s\n\n", ti_torch_version_name(ti_memory_torch(o)));
}

static void add_globs(cJSON *obj, const char *key, const char *const *globs, size_t n)
{
	cJSON *list = cJSON_AddArrayToObject(obj, key);
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(list, cJSON_CreateString(globs[i]));
}

/* The same settings as the header, each one always there (null or empty when not set). */
static void add_settings(cJSON *root, const memory_args *a)
{
	const ti_memory_options *o = &a->o;
	cJSON *st = cJSON_AddObjectToObject(root, "settings");
	if (o->dtype)
		cJSON_AddStringToObject(st, "dtype", ti_dtype_name(o->dtype));
	else
		cJSON_AddNullToObject(st, "dtype");
	if (a->weights)
		cJSON_AddStringToObject(st, "weights", a->weights);
	else
		cJSON_AddNullToObject(st, "weights");
	if (o->amp)
		cJSON_AddStringToObject(st, "amp", ti_dtype_name(o->amp));
	else
		cJSON_AddNullToObject(st, "amp");
	cJSON_AddBoolToObject(st, "cudnn_benchmark", o->cudnn_benchmark);
	cJSON_AddStringToObject(st, "strategy", strategy_names[o->strategy]);
	cJSON_AddNumberToObject(st, "world_size", (double)(o->world_size ? o->world_size : 1));
	cJSON_AddNumberToObject(st, "tensor_parallel", (double)(o->tensor_parallel ? o->tensor_parallel : 1));
	cJSON_AddNumberToObject(st, "pipeline", (double)(o->pipeline ? o->pipeline : 1));
	if (o->expert_parallel > 1) /* only when asked: the expert parallelism and what this rank holds */
		cJSON_AddNumberToObject(st, "expert_parallel", (double)o->expert_parallel);
	cJSON_AddNumberToObject(st, "accumulate", (double)(o->accumulate ? o->accumulate : 1));
	add_globs(st, "checkpoint", o->checkpoint, o->checkpoint_count);
	add_globs(st, "frozen", o->frozen, o->frozen_count);
	add_globs(st, "trainable", o->trainable, a->user_trainable);
	if (o->quantize)
		cJSON_AddStringToObject(st, "quantize", ti_memory_quant_name(o->quantize));
	else
		cJSON_AddNullToObject(st, "quantize");
	cJSON_AddBoolToObject(st, "double_quant", o->quant_double);
	if (o->quantize == TI_QUANT_FP8)
		cJSON_AddNumberToObject(st, "quant_group", (double)o->quant_group);
	if (o->quantize == TI_QUANT_GPTQ || o->quantize == TI_QUANT_AWQ) {
		cJSON_AddNumberToObject(st, "quant_bits", o->quant_bits);
		cJSON_AddNumberToObject(st, "quant_group", (double)o->quant_group);
	}
	if (a->lora_spec) {
		cJSON *l = cJSON_AddObjectToObject(st, "lora");
		cJSON_AddNumberToObject(l, "r", (double)a->lora.r);
		cJSON_AddNumberToObject(l, "alpha", a->lora.alpha);
		cJSON_AddNumberToObject(l, "dropout", a->lora.dropout);
		cJSON *targets = cJSON_AddArrayToObject(l, "targets");
		for (size_t i = 0; i < a->lora.target_count; i++)
			cJSON_AddItemToArray(targets, cJSON_CreateString(a->lora.targets[i]));
		cJSON_AddBoolToObject(l, "default_targets", a->lora_default_targets);
		size_t layers;
		int64_t count = lora_params(a, &layers);
		cJSON_AddNumberToObject(l, "layers", (double)layers);
		cJSON_AddNumberToObject(l, "params", (double)count);
	} else {
		cJSON_AddNullToObject(st, "lora");
	}
}

/* --device-memory A,B,...: a row per device, in the order given (each one's need and, with --fit, value). */
static int print_devices(const memory_args *a)
{
	static const cli_column cols[] = {
		{"DEVICE", CLI_LEFT, 0}, {"MEMORY", CLI_RIGHT, 0}, {"NEEDS", CLI_RIGHT, 0}, {"", CLI_RIGHT, 0},
		{"", CLI_LEFT, 0}, {"", CLI_RIGHT, 0},
	};
	cli_table t;
	char fit_head[80];
	snprintf(fit_head, sizeof(fit_head), "LARGEST %s", a->fit ? a->fit : "");
	/* with a decode step: the prefill's need and the decode step's, each its own column */
	bool decode = a->decode.done;
	cli_column c[6];
	int n = 0;
	c[n++] = cols[0];
	c[n++] = cols[1];
	c[n] = cols[2];
	c[n++].header = decode ? "PREFILL" : "NEEDS";
	if (decode) {
		c[n] = cols[3];
		c[n++].header = "DECODE";
	}
	c[n] = cols[4];
	c[n++].header = "VERDICT";
	if (a->fit) {
		c[n] = cols[5];
		c[n++].header = fit_head;
	}
	printf("\n");
	cli_table_init(&t, c, (size_t)n);
	for (int i = 0; i < a->device_count; i++) {
		const struct device *d = &a->devices[i];
		char mem[32], need[32], dneed[32], verdict[64], value[32];
		int64_t most = d->decode_need > d->need ? d->decode_need : d->need;
		if (d->verdict == EXIT_OK)
			snprintf(verdict, sizeof(verdict), "fits (%.1f %%)", 100.0 * (double)most / (double)d->bytes);
		else
			snprintf(verdict, sizeof(verdict), "%s", d->verdict == EXIT_UNDECIDED ? "cannot tell" : "does not fit");
		snprintf(value, sizeof(value), "%lld", (long long)d->fit_value);
		const char *row[6];
		int k = 0;
		row[k++] = d->gpu ? d->gpu : d->text;
		row[k++] = cli_bytes(d->bytes, mem, sizeof(mem));
		row[k++] = cli_bytes(d->need, need, sizeof(need));
		if (decode)
			row[k++] = cli_bytes(d->decode_need, dneed, sizeof(dneed));
		row[k++] = verdict;
		if (a->fit)
			row[k++] = d->fit_value ? value : "none";
		cli_table_add(&t, row);
	}
	return cli_table_flush(&t);
}

static int print_text(const memory_args *a, const ti_memory_report *r)
{
	char b1[32], b2[32];
	const ti_memory_options *o = &a->o;
	print_settings(a, r);
	cli_table t;
	cli_table_init(&t, term_columns, 3);
	for (size_t i = 0; i < r->term_count; i++) {
		const ti_memory_term *x = &r->terms[i];
		char bytes[40], rule[500], depends[120];
		snprintf(bytes, sizeof(bytes), "%s%s", x->lower_bound ? ">= " : "", cli_bytes(x->bytes, b1, sizeof(b1)));
		depends_words(x->depends, depends, sizeof(depends));
		snprintf(rule, sizeof(rule), "%s%s%s%s%s", x->rule, x->lower_bound && x->why ? "; lower bound: " : "",
		         x->lower_bound && x->why ? x->why : "", *depends ? "; depends on " : "", depends);
		const char *row[] = {x->name, bytes, rule};
		cli_table_add(&t, row);
	}
	if (a->decode.done) {
		char rule[440], w[32], kv[32], act[32];
		char slide[96] = "";
		if (a->decode.sliding && !a->o.kv_window)
			snprintf(slide, sizeof(slide), " (%d of %d attention layers at most their sliding window)",
			         a->decode.sliding, a->decode.sites);
		snprintf(rule, sizeof(rule), "a decode step: one new token beside the KV cache of %lld tokens%s; weights %s + "
		         "KV cache %s + its own activations and the cache's growth %s (the peak above: the prefill, "
		         "the whole context at once)",
		         (long long)a->decode.tokens, slide, cli_bytes(a->decode.weights, w, sizeof(w)),
		         cli_bytes(a->decode.kv_cache, kv, sizeof(kv)), cli_bytes(a->decode.activations, act, sizeof(act)));
		const char *row[] = {"decode", cli_bytes(a->decode.peak, b1, sizeof(b1)), rule};
		cli_table_add(&t, row);
	}
	int rc = cli_table_flush(&t);
	if (rc)
		return rc;
	printf("\n%speak %s%s during %s, at %s\n", a->decode.done ? "prefill " : "", r->unit_count ? "" : "at least ", cli_bytes(r->peak, b1, sizeof(b1)),
	       ti_memory_phase_name(r->peak_phase), r->peak_step);
	print_range(r);
	if (o->pipeline > 1) {
		printf("pipeline: stage %lld of %lld needs the most (units %lld to %lld, %lld micro-batches in flight):",
		       (long long)o->stage, (long long)o->pipeline, (long long)r->stage_first, (long long)r->stage_last,
		       (long long)r->in_flight);
		for (int64_t st = 0; st < o->pipeline && st < 64; st++)
			printf("%s stage %lld %s", st ? "," : "", (long long)st, cli_bytes(a->stage_peaks[st], b2, sizeof(b2)));
		printf("\n");
	}
	if (o->device == TI_MEMORY_CUDA) {
		printf("reserved %s at the most: the caching allocator's segments (max_memory_reserved)\n",
		       cli_bytes(r->reserved_peak, b2, sizeof(b2)));
		printf("overheads outside the allocator:");
		for (int i = 0; i < a->overhead_count; i++)
			printf("%s %s %s", i ? "," : "", a->overheads[i].name, cli_bytes(a->overheads[i].bytes, b2, sizeof(b2)));
		printf(" (--overhead NAME=SIZE)\n");
	}
	if (r->top_count && a->top > 0) {
		printf("\nlive at the peak (largest %d of %zu):\n", a->top < (int)r->top_count ? a->top : (int)r->top_count,
		       r->top_count);
		cli_table_init(&t, top_columns, 3);
		for (size_t i = 0; i < r->top_count && (int)i < a->top; i++) {
			char name[400], depends[120];
			snprintf(name, sizeof(name), "%s%s%s", r->top[i].name ? r->top[i].name : "?",
			         r->top[i].depends ? "; depends on " : "", depends_words(r->top[i].depends, depends, sizeof(depends)));
			const char *row[] = {ti_memory_kind_name(r->top[i].kind), cli_bytes(r->top[i].bytes, b2, sizeof(b2)), name};
			cli_table_add(&t, row);
		}
		if ((rc = cli_table_flush(&t)))
			return rc;
	}
	if (a->depth && r->module_count) {
		printf("\nby module (activations: kept for backward at the end of forward):\n");
		cli_table_init(&t, module_columns, 3);
		for (size_t i = 0; i < r->module_count; i++) {
			const ti_memory_module *m = &r->modules[i];
			if (m->depth > a->depth)
				continue;
			char name[256], w[32], act[32];
			snprintf(name, sizeof(name), "%*s%s", 2 * m->depth, "", *m->path ? m->path : "(model)");
			const char *row[] = {name, cli_bytes(m->weights, w, sizeof(w)), cli_bytes(m->activations, act, sizeof(act))};
			cli_table_add(&t, row);
		}
		if ((rc = cli_table_flush(&t)))
			return rc;
	}
	printf("\n");
	sparkline(r, 60);
	for (size_t i = 0; i < r->note_count; i++)
		printf("note: %s\n", r->notes[i]);
	if (a->window_note[0])
		printf("note: %s\n", a->window_note);
	if (a->weights)
		printf("note: weights as %s holds them: %zu of %zu parameters found there, the others as described\n",
		       a->weights, a->matched, a->param_count);
	if (a->device_count > 1 && !a->no_fit_line)
		return print_devices(a);
	if (a->device_bytes && !a->no_fit_line)
		print_fit(a, r, step_need(a, r));
	return EXIT_OK;
}

static int print_json_doc(const memory_args *a, const ti_memory_report *r, int64_t fit_value, cJSON **doc);

static int print_json(const memory_args *a, const ti_memory_report *r, int64_t fit_value)
{
	cJSON *doc = NULL;
	int rc = print_json_doc(a, r, fit_value, &doc);
	return rc ? rc : cli_json_print(doc);
}

/* The JSON document of a report, for the caller to add to and print. */
static int print_json_doc(const memory_args *a, const ti_memory_report *r, int64_t fit_value, cJSON **doc)
{
	cJSON *root = cli_json_root();
	const ti_memory_options *o = &a->o;
	cJSON_AddStringToObject(root, "file", a->cm.file);
	cJSON_AddStringToObject(root, "mode", modes[o->mode]);
	cJSON_AddStringToObject(root, "device", device_names[o->device]);
	cJSON_AddStringToObject(root, "torch", ti_torch_version_name(ti_memory_torch(o)));
	if (o->device == TI_MEMORY_CPU)
		cJSON_AddStringToObject(root, "cpu_isa", ti_cpu_isa_name(o->cpu_isa));
	if (o->mode == TI_MEMORY_TRAIN) {
		cJSON_AddStringToObject(root, "optimizer", o->optimizer == TI_OPTIM_NONE && r->optimizer_state
		                                               ? "from the checkpoint"
		                                               : ti_memory_optimizer_name(o->optimizer));
		cJSON_AddStringToObject(root, "impl", ti_memory_impl_name(o->impl));
	}
	add_settings(root, a);
	cJSON_AddNumberToObject(root, "weights", (double)r->weights);
	cJSON_AddNumberToObject(root, "parameters", (double)r->parameters);
	cJSON_AddNumberToObject(root, "buffers", (double)r->buffers);
	cJSON_AddNumberToObject(root, "inputs", (double)r->inputs);
	cJSON_AddNumberToObject(root, "gradients", (double)r->gradients);
	cJSON_AddNumberToObject(root, "optimizer_state", (double)r->optimizer_state);
	cJSON_AddNumberToObject(root, "activations", (double)r->activations);
	cJSON_AddNumberToObject(root, "communication", (double)r->communication);
	cJSON_AddNumberToObject(root, "kv_cache", (double)r->kv_cache);
	if (o->expert_parallel > 1) {
		cJSON_AddNumberToObject(root, "experts", (double)r->experts);
		cJSON_AddNumberToObject(root, "experts_held", (double)r->experts_held);
	}
	cJSON_AddNumberToObject(root, "peak", (double)r->peak);
	if (a->decode.done) {
		/* the peak above is the prefill's; a decode step holds the cache of the whole context */
		cJSON_AddNumberToObject(root, "decode_peak", (double)a->decode.peak);
		cJSON *d = cJSON_AddObjectToObject(root, "decode");
		cJSON_AddNumberToObject(d, "tokens", (double)a->decode.tokens);
		cJSON_AddNumberToObject(d, "weights", (double)a->decode.weights);
		cJSON_AddNumberToObject(d, "kv_cache", (double)a->decode.kv_cache);
		if (a->decode.sliding) /* only when some layer slides: the layers whose cache a window caps */
			cJSON_AddNumberToObject(d, "sliding_layers", (double)a->decode.sliding);
		cJSON_AddNumberToObject(d, "activations", (double)a->decode.activations);
		cJSON_AddNumberToObject(d, "peak", (double)a->decode.peak);
		if (a->device_bytes)
			cJSON_AddNumberToObject(d, "device_need", (double)a->decode.need);
	}
	if (o->kv_dtype && o->mode == TI_MEMORY_INFER)
		cJSON_AddStringToObject(root, "kv_dtype", ti_dtype_name(o->kv_dtype));
	if (o->kv_window)
		cJSON_AddNumberToObject(root, "sliding_window", (double)o->kv_window);
	if (o->attention)
		cJSON_AddStringToObject(root, "attention", ti_memory_attention_name(o->attention));
	if (o->mode == TI_MEMORY_TRAIN && r->loss == TI_LOSS_CROSS_ENTROPY) /* absent: the sum of the outputs */
		cJSON_AddStringToObject(root, "loss", ti_memory_loss_name(r->loss));
	add_range(root, r);
	if (o->device == TI_MEMORY_CUDA) {
		cJSON_AddNumberToObject(root, "reserved_peak", (double)r->reserved_peak);
		cJSON *ov = cJSON_AddObjectToObject(root, "overheads");
		for (int i = 0; i < a->overhead_count; i++)
			cJSON_AddNumberToObject(ov, a->overheads[i].name, (double)a->overheads[i].bytes);
	}
	cJSON_AddStringToObject(root, "peak_step", r->peak_step);
	cJSON_AddStringToObject(root, "peak_phase", ti_memory_phase_name(r->peak_phase));
	if (o->pipeline > 1) {
		cJSON *p = cJSON_AddObjectToObject(root, "pipeline");
		cJSON_AddNumberToObject(p, "stages", (double)o->pipeline);
		cJSON_AddNumberToObject(p, "stage", (double)o->stage);
		cJSON_AddNumberToObject(p, "in_flight", (double)r->in_flight);
		cJSON *peaks = cJSON_AddArrayToObject(p, "stage_peaks");
		for (int64_t st = 0; st < o->pipeline && st < 64; st++)
			cJSON_AddItemToArray(peaks, cJSON_CreateNumber((double)a->stage_peaks[st]));
	}
	cJSON *terms = cJSON_AddArrayToObject(root, "terms");
	for (size_t i = 0; i < r->term_count; i++) {
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "name", r->terms[i].name);
		cJSON_AddNumberToObject(t, "bytes", (double)r->terms[i].bytes);
		cJSON_AddStringToObject(t, "rule", r->terms[i].rule);
		cJSON_AddBoolToObject(t, "lower_bound", r->terms[i].lower_bound);
		if (r->terms[i].why)
			cJSON_AddStringToObject(t, "why", r->terms[i].why);
		add_depends(t, r->terms[i].depends);
		cJSON_AddItemToArray(terms, t);
	}
	cJSON *top = cJSON_AddArrayToObject(root, "top");
	for (size_t i = 0; i < r->top_count && (int)i < a->top; i++) {
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "name", r->top[i].name ? r->top[i].name : "?");
		cJSON_AddStringToObject(t, "kind", ti_memory_kind_name(r->top[i].kind));
		cJSON_AddNumberToObject(t, "bytes", (double)r->top[i].bytes);
		add_depends(t, r->top[i].depends);
		cJSON_AddItemToArray(top, t);
	}
	if (a->depth) {
		cJSON *mods = cJSON_AddArrayToObject(root, "modules");
		for (size_t i = 0; i < r->module_count; i++) {
			const ti_memory_module *m = &r->modules[i];
			if (m->depth > a->depth)
				continue;
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "path", m->path);
			cJSON_AddNumberToObject(x, "depth", m->depth);
			cJSON_AddNumberToObject(x, "weights", (double)m->weights);
			cJSON_AddNumberToObject(x, "activations", (double)m->activations);
			cJSON_AddItemToArray(mods, x);
		}
	}
	cJSON *notes = cJSON_AddArrayToObject(root, "notes");
	for (size_t i = 0; i < r->note_count; i++)
		cJSON_AddItemToArray(notes, cJSON_CreateString(r->notes[i]));
	if (a->window_note[0])
		cJSON_AddItemToArray(notes, cJSON_CreateString(a->window_note));
	if (a->device_bytes) {
		cJSON_AddNumberToObject(root, "device_memory", (double)a->device_bytes);
		cJSON_AddNumberToObject(root, "device_need", (double)device_need(a, r));
		int verdict = fit_verdict(a, r, step_need(a, r)); /* the decode step's too */
		if (verdict == EXIT_UNDECIDED) /* a lower bound that fits: neither yes nor no */
			cJSON_AddNullToObject(root, "fits");
		else
			cJSON_AddBoolToObject(root, "fits", verdict == EXIT_OK);
	}
	if (a->fit) {
		cJSON *f = cJSON_AddObjectToObject(root, "fit");
		cJSON_AddStringToObject(f, "symbol", a->fit);
		cJSON_AddNumberToObject(f, "value", (double)fit_value);
	}
	if (a->device_count > 1) {
		/* every device of --device-memory, in the order given; the figures above are device_memory's */
		cJSON *list = cJSON_AddArrayToObject(root, "devices");
		for (int i = 0; i < a->device_count; i++) {
			const struct device *d = &a->devices[i];
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "device", d->gpu ? d->gpu : d->text);
			cJSON_AddNumberToObject(x, "device_memory", (double)d->bytes);
			cJSON_AddNumberToObject(x, "device_need", (double)d->need);
			if (a->decode.done)
				cJSON_AddNumberToObject(x, "decode_need", (double)d->decode_need);
			if (d->verdict == EXIT_UNDECIDED)
				cJSON_AddNullToObject(x, "fits");
			else
				cJSON_AddBoolToObject(x, "fits", d->verdict == EXIT_OK);
			if (a->fit)
				cJSON_AddNumberToObject(x, "fit_value", (double)d->fit_value);
			cJSON_AddItemToArray(list, x);
		}
	}
	cJSON *timeline = cJSON_AddArrayToObject(root, "timeline");
	for (size_t i = 0; i < r->point_count; i++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "phase", ti_memory_phase_name(r->timeline[i].phase));
		cJSON_AddStringToObject(p, "step", r->timeline[i].step ? r->timeline[i].step : "");
		cJSON_AddNumberToObject(p, "live", (double)r->timeline[i].live);
		cJSON_AddNumberToObject(p, "high", (double)r->timeline[i].high);
		cJSON_AddItemToArray(timeline, p);
	}
	*doc = root;
	return EXIT_OK;
}

/* A checkpoint alone: its weights, gradients and optimizer state; no graph. */
static int from_checkpoint(memory_args *a, bool trust)
{
	ti_source *src = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_arena arena;
	ti_arena_init(&arena, (size_t)64 << 20);
	int rc;
	if (ti_source_open(a->cm.file, &src, &err))
		rc = cli_report_open_failure(a->cm.file, &err);
	else if (!(rc = cli_check_source_safety(src, trust))) {
		const ti_memory_report *r;
		if (ti_memory_from_source(src, &a->o, &arena, &r, &err))
			rc = cli_report(a->cm.file, &err);
		else {
			rc = a->json ? print_json(a, r, 0) : print_text(a, r);
			if (!rc && !a->json)
				cli_print_fetched();
			if (!rc && a->device_bytes)
				rc = fit_verdict(a, r, device_need(a, r));
		}
	}
	ti_source_close(src);
	ti_arena_release(&arena);
	return rc;
}

/* ---- --fit when even 1 does not fit: the breakdown, and what would make it fit ---- */

/*
 * The glob of the model's repeated blocks, for --checkpoint and --frozen:
 * the shallowest numbered modules ("transformer.h.3": "transformer.h.*";
 * "layer1.0" ... "layer4.2": "layer*.*"), or "" when there are none.
 */
static void blocks_glob(const ti_memory_report *r, char *out, size_t cap)
{
	int best = -1;
	out[0] = '\0';
	for (size_t i = 0; i < r->module_count; i++) {
		const char *p = r->modules[i].path, *dot = strrchr(p, '.');
		if (!dot || !isdigit((unsigned char)dot[1]) || (best >= 0 && r->modules[i].depth >= best))
			continue;
		best = r->modules[i].depth;
	}
	size_t common = 0;
	const char *first = NULL;
	for (size_t i = 0; i < r->module_count && best >= 0; i++) {
		const char *p = r->modules[i].path, *dot = strrchr(p, '.');
		if (!dot || !isdigit((unsigned char)dot[1]) || r->modules[i].depth != best)
			continue;
		size_t parent = (size_t)(dot - p), k = 0;
		if (!first) {
			first = p;
			common = parent;
		}
		while (k < common && k < parent && first[k] == p[k])
			k++;
		common = k; /* the parents' common prefix */
	}
	if (!first)
		return;
	const char *dot = strrchr(first, '.');
	if (common == (size_t)(dot - first))
		snprintf(out, cap, "%.*s.*", (int)common, first); /* one parent: "transformer.h.*" */
	else
		snprintf(out, cap, "%.*s*.*", (int)common, first); /* several: "layer*.*" */
}

typedef struct remedy {
	char words[160];  /* the options, as the user would type them */
	int64_t need;     /* what the step needs with them, at 1 */
	bool ok;          /* it was estimated */
} remedy;

enum { REMEDY_MAX = 6 };

/*
 * --fit SYMBOL when SYMBOL=1 does not fit: each change a person would try
 * next, alone and all together, estimated at 1; then the step at 1 is
 * printed as without --fit (the breakdown), the remedies after it. Status 1.
 */
static int no_fit_at_one(memory_args *a, int slot, ti_error *err)
{
	const ti_memory_report *r;
	a->cm.bind_values[slot] = 1;
	a->cm.bind_count = slot + 1 > a->cm.bind_count ? slot + 1 : a->cm.bind_count;
	int rc = estimate(a, &r, err, true);
	if (rc)
		return rc;
	char blocks[128];
	blocks_glob(r, blocks, sizeof(blocks));
	ti_memory_options base = a->o;
	bool train = base.mode == TI_MEMORY_TRAIN;
	remedy rem[REMEDY_MAX];
	size_t n = 0;
	static const char *globs[1];
	globs[0] = blocks;
	int64_t need_now = device_need(a, r);
	for (int k = 0; k < 6 && n < REMEDY_MAX; k++) {
		ti_memory_options o = base;
		char *w = rem[n].words;
		w[0] = '\0';
		bool all = k == 5, any = false;
		if ((k == 0 || all) && train && *blocks && !base.checkpoint_count) {
			o.checkpoint = globs, o.checkpoint_count = 1, any = true;
			snprintf(w + strlen(w), sizeof(rem[n].words) - strlen(w), "%s--checkpoint '%s'", *w ? " " : "", blocks);
		}
		if ((k == 1 || all) && !base.amp) {
			o.amp = TI_DT_BFLOAT16, any = true;
			snprintf(w + strlen(w), sizeof(rem[n].words) - strlen(w), "%s--amp bf16", *w ? " " : "");
		}
		if ((k == 2 || all) && train && *blocks && !base.frozen_count && !all) {
			o.frozen = globs, o.frozen_count = 1, any = true;
			snprintf(w + strlen(w), sizeof(rem[n].words) - strlen(w), "%s--frozen '%s'", *w ? " " : "", blocks);
		}
		if ((k == 3 || all) && train && base.strategy == TI_STRATEGY_NONE && base.pipeline <= 1) {
			o.strategy = TI_STRATEGY_ZERO3, o.world_size = 8, any = true;
			snprintf(w + strlen(w), sizeof(rem[n].words) - strlen(w), "%s--strategy zero3 --world-size 8",
			         *w ? " " : "");
		}
		if (k == 4 && !base.dtype && !base.param_dtypes) { /* alone: with --amp it is a different recipe */
			o.dtype = TI_DT_BFLOAT16, any = true;
			snprintf(w, sizeof(rem[n].words), "--dtype bfloat16");
		}
		if (!any || (all && n < 2))
			continue; /* nothing to try, or "all" would repeat the one change */
		a->o = o;
		rem[n].ok = estimate(a, &r, err, true) == EXIT_OK;
		rem[n].need = rem[n].ok ? device_need(a, r) : 0;
		if (rem[n].ok && rem[n].need < need_now) /* only what helps */
			n++;
	}
	a->o = base;
	if ((rc = estimate(a, &r, err, true)))
		return rc;
	char need[32], have[32];
	const char *name = a->device_name ? a->device_name : a->device_text;
	if (a->json) {
		cJSON *doc = NULL;
		rc = print_json_doc(a, r, 0, &doc);
		if (rc)
			return rc;
		cJSON *f = cJSON_GetObjectItem(doc, "fit");
		cJSON *list = cJSON_AddArrayToObject(f, "remedies_at_1"); /* what lowers the need at 1, and whether it fits */
		for (size_t i = 0; i < n; i++) {
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "options", rem[i].words);
			cJSON_AddNumberToObject(x, "device_need", (double)rem[i].need);
			cJSON_AddBoolToObject(x, "fits", rem[i].need <= a->device_bytes);
			cJSON_AddItemToArray(list, x);
		}
		rc = cli_json_print(doc);
		return rc ? rc : EXIT_NEGATIVE;
	}
	a->no_fit_line = true;
	if ((rc = print_text(a, r)))
		return rc;
	printf("no %s fits: %s=1 needs %s, %s has %s\n", a->fit, a->fit, cli_bytes(device_need(a, r), need, sizeof(need)),
	       name, cli_bytes(a->device_bytes, have, sizeof(have)));
	int width = 0;
	for (size_t i = 0; i < n; i++)
		width = (int)strlen(rem[i].words) > width ? (int)strlen(rem[i].words) : width;
	if (n)
		printf("\nwhat would make %s=1 fit:\n", a->fit);
	for (size_t i = 0; i < n; i++)
		printf("  %-*s  %10s  %s\n", width, rem[i].words, cli_bytes(rem[i].need, need, sizeof(need)),
		       rem[i].need <= a->device_bytes ? "fits" : "does not fit");
	return EXIT_NEGATIVE;
}

/* The index of symbol in the binds, adding it when missing. */
static int bind_slot(memory_args *a, const char *symbol)
{
	for (int i = 0; i < a->cm.bind_count; i++)
		if (!strcmp(a->cm.bind_names[i], symbol))
			return i;
	if (a->cm.bind_count == CLI_MODEL_MAX_BINDS)
		return -1;
	int i = a->cm.bind_count++;
	snprintf(a->cm.bind_storage[i], sizeof(a->cm.bind_storage[i]), "%s", symbol);
	a->cm.bind_names[i] = a->cm.bind_storage[i];
	return i;
}

/*
 * One probe of --fit: the step at symbol = v. EXIT_OK with *fits set; a
 * value whose shapes fail or whose sizes pass the ceiling does not fit (a
 * batch the model rejects); any other failure is reported.
 */
static int decode_step(memory_args *a, ti_error *err);

/*
 * The step at v: whether it fits the device. In generation (want_decode) the
 * decode step at v must fit too; it runs first, as it reopens the model and
 * *r must be the prefill's.
 */
static int probe(memory_args *a, int slot, int64_t v, bool *fits, const ti_memory_report **r)
{
	ti_error err;
	ti_error_clear(&err);
	a->cm.bind_values[slot] = v;
	a->decode.done = false;
	int rc = a->want_decode ? decode_step(a, &err) : 0;
	if (rc > 0)
		return rc;
	if (rc < 0) {
		a->decode.done = false; /* a decode step too large to size: the prefill's probe says why */
		if (-rc != TI_E_SHAPE && -rc != TI_E_LIMIT)
			return cli_report(a->cm.file, &err);
		*fits = false;
		return EXIT_OK;
	}
	rc = estimate(a, r, &err, true);
	if (rc > 0)
		return rc;
	if (rc < 0 && -rc != TI_E_SHAPE && -rc != TI_E_LIMIT)
		return cli_report(a->cm.file, &err);
	*fits = rc == 0 && step_need(a, *r) <= a->device_bytes;
	return EXIT_OK;
}

/* --fit: doubles the symbol from 1 while the step fits, then halves the gap. */
static int fit_search(memory_args *a, int64_t *best, const ti_memory_report **best_report)
{
	int slot = bind_slot(a, a->fit);
	if (slot < 0)
		return cli_usage_error("memory: more than %d --bind options", CLI_MODEL_MAX_BINDS);
	const ti_memory_report *r;
	int64_t lo = 0, hi = CLI_MODEL_MAX_BIND + 1;
	bool fits;
	int rc;
	for (int64_t v = 1; v <= CLI_MODEL_MAX_BIND; v *= 2) {
		if ((rc = probe(a, slot, v, &fits, &r)))
			return rc;
		if (!fits) {
			hi = v;
			break;
		}
		lo = v;
	}
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		if ((rc = probe(a, slot, mid, &fits, &r)))
			return rc;
		*(fits ? &lo : &hi) = mid;
	}
	*best = lo;
	return lo ? probe(a, slot, lo, &fits, best_report) : EXIT_OK;
}

/* What oneDNN itself would use here: the processor's set, lowered by ONEDNN_MAX_CPU_ISA (or its older name
   DNNL_MAX_CPU_ISA) as oneDNN's get_max_cpu_isa() lowers it; a name it does not know ("ALL") lowers nothing. */
static ti_cpu_isa host_cpu_isa(void)
{
	ti_cpu_isa isa = ti_cpu_isa_host();
	const char *cap = getenv("ONEDNN_MAX_CPU_ISA");
	if (!cap || !*cap)
		cap = getenv("DNNL_MAX_CPU_ISA");
	int max = cap ? ti_cpu_isa_parse(cap) : -1;
	return max > (int)isa ? (ti_cpu_isa)max : isa; /* the enum runs from the largest set down */
}

/* --device-memory SIZE|GPU[,SIZE|GPU...]: each into a->devices; the first is the one a single device uses. */
static int parse_devices(memory_args *a, const char *value)
{
	a->device_count = 0;
	for (const char *p = value; *p;) {
		size_t n = strcspn(p, ",");
		struct device *d = &a->devices[a->device_count];
		if (a->device_count == 16)
			return cli_usage_error("memory: --device-memory lists more than 16 devices");
		if (!n || n >= sizeof(d->text))
			return cli_usage_error("memory: --device-memory wants SIZE or GPU names separated by commas, not '%s'",
			                       value);
		snprintf(d->text, sizeof(d->text), "%.*s", (int)n, p);
		ti_error err;
		ti_error_clear(&err);
		if (ti_memory_parse_size(d->text, &d->bytes, &d->gpu, &err) || !d->bytes)
			return cli_usage_error("memory: --device-memory %s", err.message[0] ? err.message : "must be more than 0");
		a->device_count++;
		p += n;
		if (*p == ',' && !*++p)
			return cli_usage_error("memory: --device-memory '%s' ends with a comma", value);
	}
	if (!a->device_count)
		return cli_usage_error("memory: --device-memory wants a size or a GPU");
	use_device(a, 0);
	return EXIT_OK;
}

/* The command line into a, each option on its own: 0, or the exit status. */
static int parse_args(int argc, char **argv, memory_args *a)
{
	cli_parser p = {argc, 1, argv, options, "memory", false};
	int id, rc, choice;
	const char *value;
	a->top = 8;
	memcpy(a->overheads, default_overheads, sizeof(default_overheads));
	a->overhead_count = (int)(sizeof(default_overheads) / sizeof(default_overheads[0]));
	while ((id = cli_next(&p, &value)) != -1) {
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (a->cm.file)
				return cli_usage_error("memory: one MODEL.json at a time ('%s' and '%s')", a->cm.file, value);
			a->cm.file = value;
			break;
		case CLI_OPT_TOKEN_FILE:
		case CLI_OPT_CACERT:
		case CLI_OPT_OFFLINE:
		case CLI_OPT_NO_CACHE: {
			int url_rc = cli_url_option("memory", id, value);
			if (url_rc)
				return url_rc;
			break;
		}
		case OPT_HELP:
			a->help = true;
			return cli_help(help);
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_RAW:
			cli_raw_numbers = true;
			break;
		case OPT_BIND:
			if ((rc = cli_model_bind(&a->cm, value)))
				return rc;
			break;
		case OPT_INPUT:
			if ((rc = cli_model_input(&a->cm, "memory", (char *)value)))
				return rc;
			break;
		case OPT_MODE:
			if ((rc = parse_choice("mode", value, modes, &choice)))
				return rc;
			a->o.mode = (ti_memory_mode)choice;
			a->cm.training = a->o.mode == TI_MEMORY_TRAIN; /* module.training: "$training", batch statistics */
			break;
		case OPT_OPTIMIZER:
			if ((rc = parse_choice("optimizer", value, optimizer_names, &choice)))
				return rc;
			a->o.optimizer = (ti_memory_optimizer)(choice + 1);
			a->optimizer_given = true;
			break;
		case OPT_IMPL:
			if ((rc = parse_choice("impl", value, impl_names, &choice)))
				return rc;
			a->o.impl = (ti_memory_impl)choice;
			a->impl_given = true;
			break;
		case OPT_DEVICE:
			if ((rc = parse_choice("device", value, device_names, &choice)))
				return rc;
			a->o.device = (ti_memory_device)choice;
			a->device_given = true;
			break;
		case OPT_TORCH: {
			int v = ti_torch_version_parse(value);
			if (v < 0)
				return cli_usage_error("memory: --torch '%s' is not 1.13 or 2", value);
			a->o.torch = (ti_torch_version)v;
			break;
		}
		case OPT_CUDNN_BENCHMARK:
			a->o.cudnn_benchmark = true;
			break;
		case OPT_CPU_ISA: {
			int isa = ti_cpu_isa_parse(value);
			if (isa < 0)
				return cli_usage_error("memory: --cpu-isa '%s' is not one of avx512_core, avx2, avx, sse41", value);
			a->o.cpu_isa = (ti_cpu_isa)isa;
			a->cpu_isa_given = true;
			break;
		}
		case OPT_DTYPE: {
			ti_dtype dt = ti_dtype_from_torch_name(value);
			if (dt != TI_DT_FLOAT16 && dt != TI_DT_BFLOAT16 && dt != TI_DT_FLOAT32 && dt != TI_DT_FLOAT64)
				return cli_usage_error("memory: --dtype '%s' is not a floating dtype (float32, float16, bfloat16, ...)",
				                       value);
			a->o.dtype = dt;
			break;
		}
		case OPT_TRAINABLE:
		case OPT_FROZEN:
			if ((id == OPT_TRAINABLE ? a->ntrain : a->nfrozen) == 64)
				return cli_usage_error("memory: more than 64 --%s globs", id == OPT_TRAINABLE ? "trainable" : "frozen");
			if (id == OPT_TRAINABLE)
				a->trainable[a->ntrain++] = value;
			else
				a->frozen[a->nfrozen++] = value;
			break;
		case OPT_DEVICE_MEMORY:
			if ((rc = parse_devices(a, value)))
				return rc;
			break;
		case OPT_BATCH:
		case OPT_CONTEXT: {
			int64_t v;
			char bind[96];
			if ((rc = parse_count(id == OPT_BATCH ? "batch" : "context", "a number", value, 1, CLI_MODEL_MAX_BIND, &v)))
				return rc;
			*(id == OPT_BATCH ? &a->batch : &a->context) = v;
			snprintf(bind, sizeof(bind), "%s=%lld", id == OPT_BATCH ? "B" : "T", (long long)v);
			if ((rc = cli_model_bind(&a->cm, bind)))
				return rc;
			break;
		}
		case OPT_KV_DTYPE: {
			/* the names people use for a quantized cache: int8, fp8 (vLLM's kv_cache_dtype) */
			static const char *const names[] = {"float16", "bfloat16", "float32", "int8", "fp8", "fp16", "bf16",
			                                    "fp32", "float8_e4m3fn", "float8_e5m2", NULL};
			static const ti_dtype dtypes[] = {TI_DT_FLOAT16, TI_DT_BFLOAT16, TI_DT_FLOAT32, TI_DT_INT8,
			                                  TI_DT_FLOAT8_E4M3FN, TI_DT_FLOAT16, TI_DT_BFLOAT16, TI_DT_FLOAT32,
			                                  TI_DT_FLOAT8_E4M3FN, TI_DT_FLOAT8_E5M2};
			if ((rc = parse_choice("kv-dtype", value, names, &choice)))
				return rc;
			a->o.kv_dtype = dtypes[choice];
			a->kv_dtype_given = true;
			break;
		}
		case OPT_SLIDING_WINDOW:
			if ((rc = parse_count("sliding-window", "a number of tokens", value, 1, CLI_MODEL_MAX_BIND,
			                      &a->o.kv_window)))
				return rc;
			break;
		case OPT_KV_LAYOUT: {
			static const char *const names[] = {"expanded", "compressed", NULL};
			if ((rc = parse_choice("kv-layout", value, names, &choice)))
				return rc;
			a->o.kv_compressed = choice == 1;
			a->kv_layout_given = true;
			break;
		}
		case OPT_LORA:
			a->lora_spec = value;
			break;
		case OPT_QUANTIZE: {
			static const char *const names[] = {"int8", "nf4", "fp4", NULL};
			if ((rc = parse_choice("quantize", value, names, &choice)))
				return rc;
			a->o.quantize = (ti_memory_quant)(choice + 1);
			break;
		}
		case OPT_DOUBLE_QUANT:
			a->o.quant_double = true;
			break;
		case OPT_LORA_TARGETS:
			a->lora_targets = value;
			break;
		case OPT_ATTN: {
			static const char *const names[] = {"eager", "sdpa", "flash", NULL};
			if ((rc = parse_choice("attn", value, names, &choice)))
				return rc;
			a->o.attention = (ti_memory_attention)(choice + 1);
			break;
		}
		case OPT_LOSS: {
			static const char *const names[] = {"sum", "cross-entropy", NULL};
			if ((rc = parse_choice("loss", value, names, &choice)))
				return rc;
			a->o.loss = (ti_memory_loss)(choice + 1);
			a->loss_given = true;
			break;
		}
		case OPT_FIT:
			a->fit = value;
			break;
		case OPT_OVERHEAD: {
			const char *eq = strchr(value, '=');
			int64_t bytes;
			const char *gpu;
			ti_error err;
			ti_error_clear(&err);
			if (!eq || eq == value || (size_t)(eq - value) >= sizeof(a->overheads[0].name))
				return cli_usage_error("memory: --overhead wants NAME=SIZE (context=600MiB), not '%s'", value);
			if (ti_memory_parse_size(eq + 1, &bytes, &gpu, &err) || gpu)
				return cli_usage_error("memory: --overhead %s", err.message[0] ? err.message : "wants a size, not a GPU");
			int k = 0;
			while (k < a->overhead_count && strncmp(a->overheads[k].name, value, (size_t)(eq - value)))
				k++;
			if (k == 16)
				return cli_usage_error("memory: more than 16 --overhead names");
			snprintf(a->overheads[k].name, sizeof(a->overheads[k].name), "%.*s", (int)(eq - value), value);
			a->overheads[k].bytes = bytes;
			if (k == a->overhead_count)
				a->overhead_count++;
			a->overhead_given = true;
			break;
		}
		case OPT_TRUST:
			a->trust = true;
			break;
		case OPT_WORLD:
			if ((rc = parse_count("world-size", "a number of ranks", value, 1, 1000000, &a->o.world_size)))
				return rc;
			break;

		case OPT_STRATEGY: {
			static const char *const strategies[] = {"none", "ddp", "zero1", "zero2", "zero3", "fsdp", NULL};
			if (!strncmp(value, "ep=", 3)) {
				if ((rc = parse_count("strategy", "ep=K with K", value + 3, 1, 4096, &a->o.expert_parallel)))
					return rc;
				break;
			}
			if (!strncmp(value, "tp=", 3) || !strncmp(value, "pp=", 3)) {
				if ((rc = parse_count("strategy", value[0] == 't' ? "tp=K with K" : "pp=K with K", value + 3, 1, 4096,
				                      value[0] == 't' ? &a->o.tensor_parallel : &a->o.pipeline)))
					return rc;
				break;
			}
			if ((rc = parse_choice("strategy", value, strategies, &choice)))
				return rc;
			a->o.strategy = (ti_memory_strategy)(choice == 5 ? TI_STRATEGY_ZERO3 : choice);
			break;
		}
		case OPT_BUCKET:
			if ((rc = parse_bytes("bucket", value, &a->o.bucket_bytes)))
				return rc;
			break;
		case OPT_WRAP:
			if (a->nwrap == 64)
				return cli_usage_error("memory: more than 64 --wrap globs");
			a->wrap[a->nwrap++] = value;
			break;
		case OPT_WEIGHTS:
			a->weights = value;
			break;
		case OPT_MICRO:
			if ((rc = parse_count("micro-batches", "a number", value, 1, 1000000, &a->o.micro_batches)))
				return rc;
			break;
		case OPT_AMP: {
			static const char *const amps[] = {"bf16", "fp16", "bfloat16", "float16", NULL};
			if ((rc = parse_choice("amp", value, amps, &choice)))
				return rc;
			a->o.amp = choice % 2 ? TI_DT_FLOAT16 : TI_DT_BFLOAT16;
			break;
		}
		case OPT_PLOT:
			a->plot = value;
			break;
		case OPT_FORCE:
			a->force = true;
			break;
		case OPT_KV_CACHE: {
			static const char *const kv[] = {"auto", "on", "off", NULL};
			if ((rc = parse_choice("kv-cache", value, kv, &choice)))
				return rc;
			a->o.kv_cache = choice == 2 ? -1 : choice;
			a->kv_given = true;
			break;
		}
		case OPT_CHECKPOINT:
			if (a->ncheck == 64)
				return cli_usage_error("memory: more than 64 --checkpoint globs");
			a->checkpoint[a->ncheck++] = value;
			break;
		case OPT_ACCUMULATE:
			if ((rc = parse_count("accumulate", "a number of micro-batches", value, 1, 1000000, &a->o.accumulate)))
				return rc;
			break;
		case OPT_DEPTH: {
			int64_t v;
			if ((rc = parse_count("depth", "a number", value, 1, 64, &v)))
				return rc;
			a->depth = (int)v;
			break;
		}

		case OPT_TOP: {
			int64_t v;
			if ((rc = parse_count("top", "a number", value, 0, 1000, &v)))
				return rc;
			a->top = (int)v;
			break;
		}

		}
	}
	return 0;
}

/* Any GPU of --device-memory: the step runs on cuda. */
static const char *any_gpu(const memory_args *a)
{
	for (int i = 0; i < a->device_count; i++)
		if (a->devices[i].gpu)
			return a->devices[i].text;
	return NULL;
}

/* The options against each other, and what follows from them (--device-memory GPU: cuda): 0 or the exit status. */
static int check_lora(memory_args *a);
static int config_quantization(memory_args *a);

static int check_args(memory_args *a)
{
	if (!a->cm.file)
		return cli_usage_error("memory: no MODEL.json given (see 'tinspect memory --help')");
	/* a GPU's memory is a CUDA step's: --device-memory RTX-4090 implies --device cuda */
	if (any_gpu(a) && a->device_given && a->o.device != TI_MEMORY_CUDA)
		return cli_usage_error("memory: --device-memory %s is a GPU, but --device says otherwise: drop --device or "
		                       "give a size (24GiB)", any_gpu(a));
	if (any_gpu(a))
		a->o.device = TI_MEMORY_CUDA;
	if (a->cpu_isa_given && a->o.device != TI_MEMORY_CPU)
		return cli_usage_error("memory: --cpu-isa applies to --device cpu only");
	if (a->o.cudnn_benchmark && a->o.device != TI_MEMORY_CUDA)
		return cli_usage_error("memory: --cudnn-benchmark applies to --device cuda only");
	if (!a->cpu_isa_given)
		a->o.cpu_isa = host_cpu_isa();
	a->o.torch = ti_memory_torch(&a->o);
	if (!a->impl_given)
		a->o.impl = ti_memory_default_impl(&a->o);
	a->o.cpu_isa_fixed = a->cpu_isa_given; /* else the peak's range spans every set: the step may run elsewhere */
	if (a->o.mode != TI_MEMORY_TRAIN &&
	    (a->optimizer_given || a->impl_given || a->ntrain || a->nfrozen || a->ncheck || a->o.accumulate || a->loss_given))
		return cli_usage_error("memory: --%s applies to --mode train only",
		                       a->optimizer_given ? "optimizer" : a->impl_given ? "impl" : a->ntrain ? "trainable"
		                       : a->nfrozen ? "frozen" : a->ncheck ? "checkpoint" : a->loss_given ? "loss"
		                       : "accumulate");
	if ((a->o.strategy || a->o.world_size || a->o.bucket_bytes || a->nwrap) && a->o.mode != TI_MEMORY_TRAIN)
		return cli_usage_error("memory: --%s applies to --mode train only",
		                       a->o.strategy ? "strategy" : a->o.world_size ? "world-size" : a->o.bucket_bytes ? "bucket" : "wrap");
	if (a->o.micro_batches && a->o.pipeline < 2)
		return cli_usage_error("memory: --micro-batches applies to --strategy pp=K");
	if ((a->o.tensor_parallel > 1 || a->o.pipeline > 1) && a->o.mode != TI_MEMORY_TRAIN)
		return cli_usage_error("memory: --strategy %s applies to --mode train only", a->o.pipeline > 1 ? "pp=K" : "tp=K");
	if (a->o.pipeline > 1 && (a->o.tensor_parallel > 1 || a->o.strategy || a->fit))
		return cli_usage_error("memory: --strategy pp=K alone, without --fit, is what is simulated yet");
	if (a->o.tensor_parallel > 1 && a->o.strategy)
		return cli_usage_error("memory: give one --strategy: tp=K with a data-parallel strategy is not simulated yet");
	if (a->o.world_size > 1 && !a->o.strategy)
		return cli_usage_error("memory: --world-size %lld needs --strategy ddp|zero1|zero2|zero3|fsdp",
		                       (long long)a->o.world_size);
	if (a->o.strategy && a->o.world_size < 2 && a->o.strategy != TI_STRATEGY_DDP)
		return cli_usage_error("memory: --strategy shards over ranks: give --world-size 2 or more");
	if (a->nwrap && a->o.strategy != TI_STRATEGY_ZERO3)
		return cli_usage_error("memory: --wrap applies to --strategy zero3 or fsdp");
	if (a->force && !a->plot)
		return cli_usage_error("memory: -f replaces the --plot file: give --plot FILE.svg");
	if (a->o.mode == TI_MEMORY_TRAIN && (a->kv_given || a->kv_dtype_given || a->o.kv_window || a->kv_layout_given))
		return cli_usage_error("memory: --%s applies to --mode infer only",
		                       a->kv_given ? "kv-cache" : a->kv_dtype_given ? "kv-dtype"
		                       : a->o.kv_window ? "sliding-window" : "kv-layout");
	if (a->o.kv_cache < 0 && (a->kv_dtype_given || a->o.kv_window || a->kv_layout_given))
		return cli_usage_error("memory: --%s sizes the KV cache, and --kv-cache off leaves it out",
		                       a->kv_dtype_given ? "kv-dtype" : a->o.kv_window ? "sliding-window" : "kv-layout");
	if (a->fit && ((a->batch && !strcmp(a->fit, "B")) || (a->context && !strcmp(a->fit, "T"))))
		return cli_usage_error("memory: --fit %s searches its value: drop --%s", a->fit,
		                       !strcmp(a->fit, "B") ? "batch" : "context");
	if (!a->kv_dtype_given && a->o.dtype)
		a->o.kv_dtype = a->o.dtype; /* a model loaded in bfloat16 caches in bfloat16 */
	if (a->o.device != TI_MEMORY_CUDA && a->overhead_given)
		return cli_usage_error("memory: --overhead applies to --device cuda only");
	if (a->fit && !a->device_bytes)
		return cli_usage_error("memory: --fit %s needs --device-memory SIZE to fit into", a->fit);
	if (a->o.mode != TI_MEMORY_TRAIN)
		a->o.optimizer = TI_OPTIM_NONE;
	a->user_trainable = a->ntrain;
	int lrc = (a->lora_spec || a->lora_targets) ? check_lora(a) : EXIT_OK;
	if (lrc)
		return lrc;
	if (a->o.quant_double && a->o.quantize != TI_QUANT_NF4 && a->o.quantize != TI_QUANT_FP4)
		return cli_usage_error("memory: --double-quant quantizes a 4-bit weight's absmax: give --quantize nf4|fp4");
	int qrc = config_quantization(a);
	if (qrc)
		return qrc;
	if (a->o.quantize && a->o.mode == TI_MEMORY_TRAIN && !a->lora_spec)
		return cli_usage_error("memory: %s %s: a quantized weight does not train; give --lora r=R "
		                       "(QLoRA: adapters over the quantized base)",
		                       a->quant_from_config ? "config.json's quantization_config" : "--quantize",
		                       ti_memory_quant_name(a->o.quantize));
	a->o.trainable = a->trainable;
	a->o.trainable_count = a->ntrain;
	a->o.frozen = a->frozen;
	a->o.frozen_count = a->nfrozen;
	a->o.checkpoint = a->checkpoint;
	a->o.checkpoint_count = a->ncheck;
	a->o.wrap = a->wrap;
	a->o.wrap_count = a->nwrap;
	return 0;
}

/* A Hugging Face folder's or config.json's parsed config (cJSON_Delete it), or NULL for any other file. */
static cJSON *config_json(const char *file)
{
	char path_buf[4096];
	const char *path = cli_hf_config_path(file, path_buf, sizeof(path_buf));
	size_t got;
	ti_error ignored;
	char *text = cli_read_json(path, TI_HF_CONFIG_MAX_BYTES, &got, &ignored);
	cJSON *root = NULL;
	if (text && got < TI_HF_CONFIG_MAX_BYTES && ti_hf_is_config(text, got))
		root = cJSON_ParseWithLength(text, got);
	free(text);
	return root;
}

/* The model_type of a Hugging Face folder or config.json (into buf), or NULL. */
static const char *config_model_type(const char *file, char *buf, size_t size)
{
	cJSON *root = config_json(file);
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
	const char *out = NULL;
	if (cJSON_IsString(mt) && snprintf(buf, size, "%s", mt->valuestring) < (int)size)
		out = buf;
	cJSON_Delete(root);
	return out;
}

static int json_int(const cJSON *obj, const char *key, int fallback)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsNumber(v) ? (int)v->valuedouble : fallback;
}

static bool json_true(const cJSON *obj, const char *key)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

/*
 * A config.json's quantization_config, as transformers loads the model
 * (quantizer_bnb_4bit, quantizer_bnb_8bit, quantizer_gptq, quantizer_awq):
 * bitsandbytes load_in_4bit (bnb_4bit_quant_type, BitsAndBytesConfig's
 * default fp4; bnb_4bit_use_double_quant) or load_in_8bit; gptq and awq
 * with bits and group_size (default 128). --quantize given wins. Another
 * quant_method is an input the estimate cannot size: exit 3.
 */
static int config_quantization(memory_args *a)
{
	if (a->o.quantize)
		return EXIT_OK;
	cJSON *root = config_json(a->cm.file);
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
	int rc = EXIT_OK;
	if (cJSON_IsObject(q)) {
		const char *m = cJSON_IsString(method) ? method->valuestring : "";
		if (!strcmp(m, "bitsandbytes") && json_true(q, "load_in_4bit")) {
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(q, "bnb_4bit_quant_type");
			a->o.quantize = cJSON_IsString(t) && !strcmp(t->valuestring, "nf4") ? TI_QUANT_NF4 : TI_QUANT_FP4;
			a->o.quant_double = json_true(q, "bnb_4bit_use_double_quant");
		} else if (!strcmp(m, "bitsandbytes") && json_true(q, "load_in_8bit")) {
			a->o.quantize = TI_QUANT_INT8;
		} else if (!strcmp(m, "gptq") || !strcmp(m, "awq")) {
			a->o.quantize = !strcmp(m, "gptq") ? TI_QUANT_GPTQ : TI_QUANT_AWQ;
			a->o.quant_bits = json_int(q, "bits", !strcmp(m, "awq") ? 4 : 0);
			a->o.quant_group = json_int(q, "group_size", 128);
			if (a->o.quant_bits < 2 || a->o.quant_bits > 8) {
				fprintf(stderr, "tinspect: %s: quantization_config: bits %d is not 2 to 8\n", a->cm.file,
				        a->o.quant_bits);
				rc = EXIT_INPUT;
			}
		} else if (!strcmp(m, "fp8")) {
			/* transformers' FineGrainedFP8Config: weight_block_size [128, 128] by default */
			const cJSON *bs = cJSON_GetObjectItemCaseSensitive(q, "weight_block_size");
			int64_t b0 = 128, b1 = 128;
			if (cJSON_IsArray(bs) && cJSON_GetArraySize(bs) == 2 && cJSON_IsNumber(cJSON_GetArrayItem(bs, 0)) &&
			    cJSON_IsNumber(cJSON_GetArrayItem(bs, 1))) {
				b0 = (int64_t)cJSON_GetArrayItem(bs, 0)->valuedouble;
				b1 = (int64_t)cJSON_GetArrayItem(bs, 1)->valuedouble;
			}
			a->o.quantize = TI_QUANT_FP8;
			a->o.quant_group = b0;
			if (b0 != b1 || b0 < 1 || b0 > 65536) {
				fprintf(stderr, "tinspect: %s: quantization_config: weight_block_size [%lld, %lld] is not a square "
				        "block tinspect sizes\n", a->cm.file, (long long)b0, (long long)b1);
				rc = EXIT_INPUT;
			}
		} else {
			fprintf(stderr, "tinspect: %s: quantization_config: quant_method '%s' is not one tinspect sizes "
			        "(bitsandbytes, gptq, awq, fp8)\n", a->cm.file, m);
			rc = EXIT_INPUT;
		}
		a->quant_from_config = !rc;
	}
	cJSON_Delete(root);
	return rc;
}

/* --lora and --lora-targets: the adapters' config, their targets (peft's default when not given), what trains. */
static int check_lora(memory_args *a)
{
	if (!a->lora_spec)
		return cli_usage_error("memory: --lora-targets names the layers --lora wraps: give --lora r=R");
	if (a->o.mode != TI_MEMORY_TRAIN)
		return cli_usage_error("memory: --lora trains adapters: give --mode train (inference runs the base model; "
		                       "merge the adapters into it)");
	ti_error err;
	ti_error_clear(&err);
	if (ti_lora_parse(a->lora_spec, &a->lora, &err))
		return cli_usage_error("memory: --lora %s: %s", a->lora_spec, err.message);
	const char *targets = a->lora_targets;
	char mt_buf[64];
	if (!targets) {
		const char *mt = config_model_type(a->cm.file, mt_buf, sizeof(mt_buf));
		targets = ti_lora_default_targets(mt);
		if (!targets && !cli_is_description(a->cm.file))
			return cli_usage_error("memory: --lora needs a model description; %s is a checkpoint", a->cm.file);
		if (!targets)
			return cli_usage_error("memory: --lora: give --lora-targets (q_proj,v_proj): %s %s%s%s", a->cm.file,
			                       mt ? "is a " : "is no Hugging Face config with a model_type peft has default targets for",
			                       mt ? mt : "", mt ? " model, which peft has no default targets for" : "");
		a->lora_default_targets = true;
	}
	if (ti_lora_parse_targets(targets, &a->lora, &err))
		return cli_usage_error("memory: --lora-targets %s: %s", targets, err.message);
	static const char *const adapters[] = {"*.lora_A.default.*", "*.lora_B.default.*"};
	if (a->ntrain + 2 > 64)
		return cli_usage_error("memory: more than 62 --trainable globs beside --lora");
	a->trainable[a->ntrain++] = adapters[0];
	a->trainable[a->ntrain++] = adapters[1];
	/* get_peft_model(autocast_adapter_dtype=True): float16 and bfloat16 adapters are upcast to float32 */
	a->o.keep_dtype = adapters;
	a->o.keep_dtype_count = 2;
	a->cm.lora = &a->lora;
	return EXIT_OK;
}

/*
 * The step as the options ask: the largest --fit value (*fit_value), every
 * pipeline stage (the one that needs the most in *r), or the one step. 0 with
 * *r to print; a negative ti_error code with err to report; else the exit
 * status, *said set when the answer is already printed (no --fit value fits).
 */
static int estimate_step(memory_args *a, const ti_memory_report **r_out, int64_t *fit_value_out, bool *said,
                         ti_error *err_out)
{
	int rc;
	const ti_memory_report *r = NULL;
	int64_t fit_value = 0;
	ti_error err;
	ti_error_clear(&err);
	if (a->fit) {
		for (int i = 0; i < a->cm.bind_count; i++)
			if (!strcmp(a->cm.bind_names[i], a->fit)) {
				rc = cli_usage_error("memory: --fit %s searches its value: do not --bind it too", a->fit);
				goto out;
			}
		/* read and check the file once, with the symbol at 1 */
		int slot = bind_slot(a, a->fit);
		a->cm.bind_values[slot] = 1;
		rc = estimate(a, &r, &err, false);
		if (rc && rc != -TI_E_SHAPE)
			goto out;
		a->want_decode = !rc && r->kv_cache && (a->batch || a->context) && a->o.mode == TI_MEMORY_INFER;
		a->cm.bind_count--; /* the search adds it back */
		if ((rc = fit_search(a, &fit_value, &r)))
			goto out;
		if (!fit_value) {
			rc = no_fit_at_one(a, slot, &err);
			*said = rc >= 0;
			goto out;
		}
	} else if (a->o.pipeline > 1) {
		/* every stage; the one that needs the most is printed, the others in a line each */
		int64_t worst = -1, worst_peak = -1;
		for (int64_t st = 0; st < a->o.pipeline; st++) {
			a->o.stage = st;
			rc = estimate(a, &r, &err, st > 0);
			if (rc)
				goto out;
			a->stage_peaks[st < 64 ? st : 63] = r->peak;
			if (r->peak > worst_peak) {
				worst_peak = r->peak;
				worst = st;
			}
		}
		a->o.stage = worst;
		rc = estimate(a, &r, &err, true);
	} else {
		rc = estimate(a, &r, &err, false);
	}
out:
	*r_out = r;
	*fit_value_out = fit_value;
	*err_out = err;
	return rc;
}

/*
 * --batch and --context bind the templates' B and T: a description without
 * them is a usage error that says so (a plain --bind of an unknown symbol
 * is only noticed by `shapes`). Opens and runs a copy of the description.
 */
static int check_llm_symbols(memory_args *a)
{
	if (!a->batch && !a->context)
		return EXIT_OK;
	int rc = cli_model_open(&a->cm);
	if (rc)
		return rc;
	ti_error err;
	ti_error_clear(&err);
	const ti_model_report *rep;
	if (!ti_model_run(a->cm.model, &rep, &err) && !rep->failed && ti_model_check_binds(a->cm.model, &err)) {
		bool batch = a->batch && strstr(err.message, "'B'");
		rc = cli_usage_error("memory: --%s binds the symbol %s: %s; give the description's with --bind NAME=VALUE",
		                     batch ? "batch" : "context", batch ? "B" : "T", err.message);
	}
	ti_model_close(a->cm.model);
	a->cm.model = NULL;
	return rc;
}

/*
 * A Hugging Face config whose attention slides (sliding_window, unless
 * use_sliding_window is false) over fewer tokens than the context: a note
 * says that the prefill holds the whole context, the decode step the
 * window, and what --sliding-window would change. Nothing for a
 * description, or when the option is given.
 */
static void window_note(memory_args *a, int64_t kv_cache)
{
	a->window_note[0] = '\0';
	int64_t tokens = 0;
	for (int i = 0; i < a->cm.bind_count; i++)
		if (!strcmp(a->cm.bind_names[i], "T"))
			tokens = a->cm.bind_values[i];
	if (a->o.kv_window || !kv_cache || !tokens || a->o.mode != TI_MEMORY_INFER)
		return;
	char buf[4096];
	char *text;
	size_t size;
	const char *path = cli_hf_config_path(a->cm.file, buf, sizeof(buf));
	if (cli_model_read(path, &text, &size))
		return;
	cJSON *root = cJSON_ParseWithLength(text, size);
	free(text);
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "sliding_window");
	const cJSON *use = cJSON_GetObjectItemCaseSensitive(root, "use_sliding_window");
	bool alternates = cJSON_GetObjectItemCaseSensitive(root, "layer_types") ||
	                  cJSON_GetObjectItemCaseSensitive(root, "sliding_window_pattern");
	if (cJSON_GetObjectItemCaseSensitive(root, "model_type") && cJSON_IsNumber(w) && w->valuedouble >= 1 &&
	    w->valuedouble < (double)tokens && !cJSON_IsFalse(use))
		snprintf(a->window_note, sizeof(a->window_note),
		         "config.json slides attention over %.0f tokens%s: the prefill's KV cache holds all %lld (transformers' "
		         "dynamic cache keeps the prefill's keys until the next step), the decode step at most %.0f on "
		         "those layers; --sliding-window %.0f caps both, as a static sliding cache does",
		         w->valuedouble, alternates ? " on some layers" : "", (long long)tokens, w->valuedouble,
		         w->valuedouble);
	cJSON_Delete(root);
}

/*
 * The decode step of --context: the step again at T = 1, the KV cache of
 * every attention step holding the whole context (kv_tokens), into
 * a->decode. Nothing when the step has no KV cache (not a decoder, --kv-cache
 * off) or T is not bound. The decode step's model is opened beside the one
 * a->cm holds and closed after: a report of that one stays good.
 */
static int decode_step(memory_args *a, ti_error *err)
{
	/* the symbol of the tokens a step adds: T, or what the description says (an encoder-decoder's decoder length) */
	const char *length = a->cm.model ? ti_model_decode_length(a->cm.model) : "T";
	int slot = -1;
	for (int i = 0; i < a->cm.bind_count; i++)
		if (!strcmp(a->cm.bind_names[i], length))
			slot = i;
	if (slot < 0 || a->o.mode != TI_MEMORY_INFER)
		return EXIT_OK;
	int64_t context = a->cm.bind_values[slot];
	ti_memory_options saved = a->o;
	a->cm.bind_values[slot] = 1;
	a->o.kv_tokens = context;
	a->o.kv_cache = 1; /* the prefill found a decoder; at one token there is nothing left to mask */
	const ti_memory_report *r;
	ti_model *prefill = a->cm.model;
	a->cm.model = NULL; /* estimate() closes the model it finds: not the prefill's */
	int rc = estimate(a, &r, err, true);
	a->cm.bind_values[slot] = context;
	a->o = saved;
	if (rc) {
		ti_model_close(a->cm.model);
		a->cm.model = prefill;
		return rc;
	}
	a->decode.done = true;
	a->decode.tokens = context;
	a->decode.peak = r->peak;
	a->decode.need = device_need(a, r);
	a->decode.kv_cache = r->kv_cache;
	a->decode.sites = r->kv_sites;
	a->decode.sliding = r->kv_sliding;
	a->decode.weights = r->weights;
	int64_t act = r->peak - r->weights - r->kv_cache - r->inputs;
	a->decode.activations = act > 0 ? act : 0;
	ti_model_close(a->cm.model);
	a->cm.model = prefill;
	return EXIT_OK;
}

/*
 * --device-memory A,B,...: each device's need and verdict, and with --fit its
 * largest value. The one printed in full (primary, the largest: *r, at
 * fit_value) is estimated again at the end, as the searches reopen the model.
 */
static int device_rows(memory_args *a, int primary, int64_t fit_value, const ti_memory_report **r, ti_error *err)
{
	int64_t need = device_need(a, *r);
	int rc;
	for (int i = 0; i < a->device_count; i++) {
		struct device *d = &a->devices[i];
		if (!a->fit || i == primary) {
			use_device(a, i);
			d->need = need;
			d->fit_value = fit_value;
			d->verdict = fit_verdict(a, *r, need);
		}
	}
	use_device(a, primary);
	if (!a->fit)
		return EXIT_OK;
	int slot = bind_slot(a, a->fit);
	if (slot < 0)
		return cli_usage_error("memory: more than %d --bind options", CLI_MODEL_MAX_BINDS);
	for (int i = 0; i < a->device_count; i++) {
		struct device *d = &a->devices[i];
		if (i == primary)
			continue;
		use_device(a, i);
		bool fits;
		if ((rc = fit_search(a, &d->fit_value, r)))
			return rc;
		if (!d->fit_value && (rc = probe(a, slot, 1, &fits, r)))
			return rc;
		d->need = device_need(a, *r);
		d->decode_need = a->decode.done ? a->decode.need : 0;
		d->verdict = d->fit_value ? fit_verdict(a, *r, step_need(a, *r)) : EXIT_NEGATIVE;
	}
	use_device(a, primary);
	a->cm.bind_values[slot] = fit_value;
	return estimate(a, r, err, true);
}

/* The devices' verdict: one that does not fit makes it 1 (a CI check wants every target), else one that cannot tell. */
static int devices_verdict(const memory_args *a)
{
	int worst = EXIT_OK;
	for (int i = 0; i < a->device_count; i++)
		if (a->devices[i].verdict == EXIT_NEGATIVE || (a->devices[i].verdict == EXIT_UNDECIDED && worst == EXIT_OK))
			worst = a->devices[i].verdict;
	return worst;
}

/* The answer: text or JSON, the plot, and whether it fits the device. */
static int print_result(memory_args *a, const ti_memory_report *r, int64_t fit_value)
{
	if (a->fit && !a->json)
		printf("largest %s that fits: %lld\n\n", a->fit, (long long)fit_value);
	int rc;
	rc = a->json ? print_json(a, r, fit_value) : print_text(a, r);
	if (!rc && a->plot) {
		const char *inputs[] = {a->cm.file};
		cli_plot_limit limit = {a->device_bytes, a->device_name ? a->device_name : a->device_text,
		                        a->device_bytes ? device_need(a, r) : 0};
		rc = cli_memory_plot_file(r, a->cm.file, &limit, a->plot, inputs, 1, a->force);
	}
	if (!rc && a->device_count > 1)
		rc = devices_verdict(a);
	else if (!rc && a->device_bytes)
		rc = fit_verdict(a, r, step_need(a, r));
	return rc;
}

/* A failed estimate's message and exit status. */
static int report_failure(const memory_args *a, int rc, const ti_error *err)
{
	if (-rc == TI_E_INVALID && strstr(err->message, "--bind")) {
		fprintf(stderr, "tinspect: memory: %s: %s\n", a->cm.file, err->message);
		rc = EXIT_USAGE;
	} else if (-rc == TI_E_SHAPE) {
		fprintf(stderr, "tinspect: %s: %s\n", a->cm.file, err->message);
		rc = EXIT_NEGATIVE;
	} else {
		rc = cli_report(a->cm.file, err);
	}
	return rc;
}

int cmd_memory(int argc, char **argv)
{
	static memory_args a;
	memset(&a, 0, sizeof(a));
	int rc = parse_args(argc, argv, &a);
	if (rc || a.help || (rc = check_args(&a)))
		return rc;
	/* a Hugging Face folder whose config.json tinspect can describe is a description, weights or none */
	bool described = cli_is_description(a.cm.file);
	if (!described && (rc = cli_check_input(a.cm.file)))
		return rc;
	if (!described) {
		const char *needs = a.lora_spec ? "--lora" : a.o.quantize ? "--quantize" : a.fit ? "--fit" : a.batch ? "--batch" : a.context ? "--context"
		                  : a.cm.bind_count ? "--bind" : a.ncheck ? "--checkpoint"
		                  : a.o.accumulate ? "--accumulate" : a.kv_given ? "--kv-cache" : a.ntrain ? "--trainable"
		                  : a.nfrozen ? "--frozen" : a.o.device == TI_MEMORY_CUDA ? "--device cuda"
		                  : a.depth ? "--depth" : a.o.strategy ? "--strategy" : a.plot ? "--plot"
		                  : a.o.amp ? "--amp" : a.o.tensor_parallel || a.o.pipeline ? "--strategy"
		                  : a.weights ? "--weights" : a.kv_dtype_given ? "--kv-dtype"
		                  : a.o.kv_window ? "--sliding-window" : a.o.attention ? "--attn"
		                  : a.kv_layout_given ? "--kv-layout" : a.loss_given ? "--loss"
		                  : a.device_count > 1 ? "--device-memory with several devices" : NULL;
		if (needs)
			return cli_usage_error("memory: %s needs a model description; %s is a checkpoint", needs, a.cm.file);
		return from_checkpoint(&a, a.trust);
	}
	if (a.trust && !a.weights)
		return cli_usage_error("memory: --trust applies to a checkpoint; %s is a model description", a.cm.file);
	ti_arena_init(&a.arena, (size_t)64 << 20);
	if (a.weights) {
		ti_error werr;
		ti_error_clear(&werr);
		if ((rc = cli_check_input(a.weights)))
			goto done;
		if (ti_source_open(a.weights, &a.weights_src, &werr)) {
			rc = cli_report_open_failure(a.weights, &werr);
			goto done;
		}
		if ((rc = cli_check_source_safety(a.weights_src, a.trust)))
			goto done;
	}
	const ti_memory_report *r;
	int64_t fit_value;
	bool said = false;
	ti_error err;
	ti_error_clear(&err);
	/* several devices: the largest is fitted and printed in full, the others in a row each */
	int primary = 0;
	for (int i = 1; i < a.device_count; i++)
		if (a.devices[i].bytes > a.devices[primary].bytes)
			primary = i;
	if (a.device_count)
		use_device(&a, primary);
	if ((rc = check_llm_symbols(&a)))
		goto done;
	rc = estimate_step(&a, &r, &fit_value, &said, &err);
	if (!rc && !said && a.device_count > 1)
		rc = device_rows(&a, primary, fit_value, &r, &err);
	if (!rc && !said && a.o.expert_parallel > 1 && !r->experts) {
		rc = cli_usage_error("memory: --strategy ep=%lld: %s has no experts (modules named experts.N)",
		                     (long long)a.o.expert_parallel, a.cm.file);
		goto done;
	}
	if (!rc && !said && a.o.kv_compressed && r->kv_cache && !r->kv_compressed) {
		rc = cli_usage_error("memory: --kv-layout compressed: %s gives no compressed cache (\"kv_compressed\": "
		                     "DeepSeek's MLA); its %d attention steps cache their keys and values",
		                     a.cm.file, r->kv_sites);
		goto done;
	}
	if (!rc && !said)
		window_note(&a, r->kv_cache);
	if (!rc && !said && (a.batch || a.context) && r->kv_cache) {
		/* the decode step opens a model of its own: the prefill's report stays good */
		rc = decode_step(&a, &err);
		/* every device's decode need (the same step; with --fit each row's was its own search's), and the
		   verdict of both */
		for (int i = 0; !rc && i < a.device_count && a.device_count > 1; i++) {
			struct device *d = &a.devices[i];
			if (!a.fit || i == primary) {
				d->decode_need = a.decode.need;
				use_device(&a, i);
				d->verdict = fit_verdict(&a, r, step_need(&a, r));
			}
		}
		if (a.device_count)
			use_device(&a, primary);
	}
	if (rc < 0)
		rc = report_failure(&a, rc, &err);
	else if (!rc && !said && !(rc = print_result(&a, r, fit_value)) && !a.json)
		cli_print_fetched();
done:
	if (a.cm.model)
		ti_model_close(a.cm.model);
	ti_source_close(a.weights_src);
	ti_arena_release(&a.arena);
	return rc;
}
