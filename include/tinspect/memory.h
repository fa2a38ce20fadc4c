/*
 * memory.h - how much memory one step of a described model takes, by
 * simulation (tinspect(1), memory).
 *
 * ti_memory_estimate runs the description's shape propagation with an
 * observer, turns every operator and module call into units of a ledger
 * (what each allocates, saves for backward and frees, from one rule table),
 * and plays the step: the forward pass, then for training the backward pass
 * in reverse order and the optimizer step, then zero_grad(set_to_none=True).
 * Every tensor is created and freed as PyTorch would (a tensor dies after
 * its last use unless autograd saved it; views share their base's storage;
 * in-place operations allocate nothing), and the report is the high-water
 * mark of the live bytes and the moment that reached it.
 *
 * What the description does not fix (the instruction set oneDNN picks its
 * CPU kernels for, the thread count, cuDNN's kernels on a GPU) makes the
 * peak uncertain: the report gives a range for it and names each cause,
 * and the terms and tensors each cause shapes say so (ti_memory_uncertainty).
 *
 * Sizes must be concrete: every symbol of the description bound. All byte
 * arithmetic is checked: a size past 2^62 is TI_E_LIMIT, never a wrap.
 * Ownership: the report lives in the model's arena, until ti_model_close.
 * Errors: TI_E_INVALID for options that contradict each other or symbols
 * left unbound, TI_E_SHAPE when the model's shapes do not line up (the
 * message as `shapes` gives it), TI_E_LIMIT for sizes past the ceiling.
 */
#ifndef TINSPECT_MEMORY_H
#define TINSPECT_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/model.h"

/* The most bytes any figure may reach: sums are checked against it. */
#define TI_MEMORY_MAX_BYTES ((int64_t)1 << 62)

typedef enum ti_memory_mode { TI_MEMORY_INFER, TI_MEMORY_TRAIN } ti_memory_mode;

typedef enum ti_memory_optimizer {
	TI_OPTIM_NONE, TI_OPTIM_SGD, TI_OPTIM_MOMENTUM, TI_OPTIM_ADAM, TI_OPTIM_ADAMW, TI_OPTIM_ADAGRAD,
	TI_OPTIM_RMSPROP, TI_OPTIM_LION, TI_OPTIM_ADAFACTOR, TI_OPTIM_ADAM8BIT
} ti_memory_optimizer;

/* torch.optim's implementations: one parameter at a time, a whole group at once, one fused kernel. */
typedef enum ti_memory_impl { TI_IMPL_FOR_LOOP, TI_IMPL_FOREACH, TI_IMPL_FUSED } ti_memory_impl;

typedef enum ti_memory_device { TI_MEMORY_CPU, TI_MEMORY_CUDA } ti_memory_device;

/*
 * The PyTorch whose kernels and defaults the step follows. 1.13 and 2.x
 * differ where memory is concerned in attention (2.x runs
 * MultiheadAttention without need_weights, and
 * F.scaled_dot_product_attention, through fused kernels that keep no
 * attention matrix) and in the optimizers (2.x steps CUDA parameters with
 * the foreach implementation by default, keeps `step` on the CPU, and its
 * foreach Adam makes one temporary, not two). TI_TORCH_DEFAULT is what each
 * device was measured with: 1.13 on the CPU, 2.x on CUDA.
 */
typedef enum ti_torch_version { TI_TORCH_DEFAULT, TI_TORCH_1_13, TI_TORCH_2 } ti_torch_version;

/*
 * The attention kernel F.scaled_dot_product_attention (and
 * MultiheadAttention without need_weights) runs, as Hugging Face's
 * attn_implementation names them: eager is the math path that materialises
 * the B x H x T x S scores and their softmax; sdpa the fused kernel PyTorch 2
 * dispatches to on the device (flash or memory-efficient on CUDA, flash on
 * the CPU; math when none applies); flash the flash kernel always (the
 * flash-attn package). TI_ATTN_DEFAULT: as ti_torch_version decides.
 */
typedef enum ti_memory_attention { TI_ATTN_DEFAULT, TI_ATTN_EAGER, TI_ATTN_SDPA, TI_ATTN_FLASH } ti_memory_attention;

/*
 * --quantize: the base model's Linear weights as bitsandbytes holds them
 * (transformers' BitsAndBytes quantizer: every nn.Linear but the output
 * embedding, lm_head): int8 (LLM.int8, Linear8bitLt: an int8 weight and a
 * float32 scale per row, SCB), nf4 or fp4 (Linear4bit, Params4bit: two
 * values a byte, a float32 absmax per block of 64, or with double
 * quantization a uint8 one beside a float32 absmax per 256 blocks).
 */
typedef enum ti_memory_quant {
	TI_QUANT_NONE, TI_QUANT_INT8, TI_QUANT_NF4, TI_QUANT_FP4,
	TI_QUANT_GPTQ, /* AutoGPTQ's QuantLinear: qweight int32 [in*bits/32, out], qzeros int32 [groups, out*bits/32],
	                  scales float16 [groups, out], g_idx int32 [in] */
	TI_QUANT_AWQ,  /* AutoAWQ's WQLinear_GEMM: qweight int32 [in, out*bits/32], qzeros and scales as GPTQ's */
	TI_QUANT_FP8   /* transformers' FineGrainedFP8 (DeepSeek-V3's upload): weight float8_e4m3fn [out, in] and
	                  weight_scale_inv float32 a block of quant_group x quant_group (weight_block_size) */
} ti_memory_quant;

/* "int8", "nf4", "fp4", "gptq", "awq", "fp8" ("none" for TI_QUANT_NONE). */
const char *ti_memory_quant_name(ti_memory_quant q);

/*
 * The bytes bitsandbytes holds for one quantized weight of rows x cols
 * (out_features x in_features), its quantization state included: int8
 * rows*cols + 4*rows; 4-bit (numel+1)/2 packed, and a float32 absmax per
 * block of 64, or with double_quant a uint8 absmax per block, a float32
 * absmax per 256 of those and the float32 offset; and the 16-entry float32
 * code of the 4-bit type. The double quantization's 256-entry dynamic code
 * is one tensor every weight shares (ti_memory_quant_shared_bytes).
 */
int64_t ti_memory_quant_bytes(ti_memory_quant q, bool double_quant, int64_t rows, int64_t cols);
/*
 * GPTQ's or AWQ's bytes for a weight of rows x cols (out x in) at bits a
 * value, in groups of group inputs (<= 0: one group): qweight
 * rows*cols*bits/8, qzeros and scales (float16) a group and an output each,
 * and GPTQ's g_idx, an int32 per input.
 */
int64_t ti_memory_gptq_bytes(bool awq, int bits, int64_t group, int64_t rows, int64_t cols);
/* FP8's bytes for a weight of rows x cols (out x in) in square blocks of block: a byte a value and a float32
   scale a block. */
int64_t ti_memory_fp8_bytes(int64_t block, int64_t rows, int64_t cols);
/* What every quantized weight shares: the dynamic map of double quantization (256 float32), else 0. */
int64_t ti_memory_quant_shared_bytes(ti_memory_quant q, bool double_quant);

/*
 * The training step's loss. Sum: the sum of the outputs, whose gradients are
 * expanded scalars with no storage. Cross-entropy: F.cross_entropy over the
 * first output's last dimension (a language model's logits against its
 * labels, as transformers' ForCausalLMLoss computes it): the log_softmax of
 * the logits in float32 saved for backward, and in backward nll_loss's
 * gradient and log_softmax's, each of the logits' size in float32, before
 * the logits' gradient reaches the head. TI_LOSS_DEFAULT: cross-entropy for
 * a causal language model (a description whose class ends in ForCausalLM or
 * LMHeadModel, as the Hugging Face templates name theirs), else the sum.
 */
typedef enum ti_memory_loss { TI_LOSS_DEFAULT, TI_LOSS_SUM, TI_LOSS_CROSS_ENTROPY } ti_memory_loss;
/* "sum", "cross-entropy" ("default" for TI_LOSS_DEFAULT); NULL past the end. */
const char *ti_memory_loss_name(ti_memory_loss loss);

/*
 * The instruction set oneDNN (PyTorch's mkldnn) picks its CPU convolution
 * kernels for, named as ONEDNN_MAX_CPU_ISA names it. The kernels, and so
 * their scratch, differ: a backward a JIT kernel of the set cannot do runs
 * as im2col and a GEMM, whose scratch is far larger (src/memory/rules.c).
 * Zero is avx512_core, the set the CPU figures were measured with.
 */
typedef enum ti_cpu_isa { TI_ISA_AVX512_CORE, TI_ISA_AVX2, TI_ISA_AVX, TI_ISA_SSE41 } ti_cpu_isa;

/*
 * How the step is spread over ranks (per-rank figures): DDP replicates and
 * keeps gradient buckets; ZeRO-1 partitions the optimizer state, ZeRO-2 the
 * gradients too, ZeRO-3 (FSDP FULL_SHARD) the parameters too, gathering each
 * wrapped unit's for its forward and backward.
 */
typedef enum ti_memory_strategy {
	TI_STRATEGY_NONE, TI_STRATEGY_DDP, TI_STRATEGY_ZERO1, TI_STRATEGY_ZERO2, TI_STRATEGY_ZERO3
} ti_memory_strategy;

/*
 * The rules' measured tolerance, in percent: on the random corpus of
 * tests/conformance/memory_random.py (models nobody wrote a rule for,
 * measured with PyTorch 1.13 on the CPU) every estimate was within it. The
 * peak's range is widened by it on both sides.
 */
#define TI_MEMORY_RULES_TOLERANCE_PERCENT 5

/*
 * What makes an estimate uncertain. A depends mask (a term's, a live
 * tensor's) has bit k set when kind k shapes its bytes.
 */
typedef enum ti_memory_uncertain_kind {
	TI_UNCERTAIN_RULES,           /* "rules": the rules' own error, TI_MEMORY_RULES_TOLERANCE_PERCENT */
	TI_UNCERTAIN_CPU_ISA,         /* "cpu-isa": oneDNN's convolution kernels, the set not given (cpu_isa_fixed) */
	TI_UNCERTAIN_THREADS,         /* "threads": oneDNN's GEMM convolution books scratch per thread; one assumed */
	TI_UNCERTAIN_CUDNN_WORKSPACE, /* "cudnn-workspace": cuDNN's convolution workspaces, from none to the most measured */
	TI_UNCERTAIN_CUDNN_RNN,       /* "cudnn-rnn": cuDNN's recurrent kernels, not modelled */
	TI_UNCERTAIN_NO_OPTIMIZER,    /* "no-optimizer": training without one, its state and step left out */
	TI_UNCERTAIN_NO_RULE,         /* "no-rule": operators without a memory rule, what they save guessed */
	TI_UNCERTAIN_NO_GRAPH,        /* "no-graph": a checkpoint alone, activations and inputs not counted */
	TI_UNCERTAIN_MOE_ROUTING,     /* "moe-routing": the tokens a router gives an expert depend on the data */
	TI_UNCERTAIN_KIND_COUNT
} ti_memory_uncertain_kind;

/* The kind's name as the JSON and the table spell it ("cpu-isa"); NULL past the end. */
const char *ti_memory_uncertain_name(ti_memory_uncertain_kind k);

/* One cause of uncertainty in a report. */
typedef struct ti_memory_uncertainty {
	ti_memory_uncertain_kind kind;
	const char *name;      /* "cpu-isa" */
	const char *why;       /* a sentence: what varies, and what the range makes of it */
	bool covered;          /* the range takes it in; false: it can only add, and may pass peak_high */
} ti_memory_uncertainty;

typedef struct ti_memory_options {
	ti_memory_mode mode;
	ti_memory_optimizer optimizer;   /* training: TI_OPTIM_NONE leaves the optimizer out (a lower bound) */
	ti_memory_impl impl;
	ti_memory_device device;
	ti_torch_version torch;          /* TI_TORCH_DEFAULT: 1.13 on the CPU, 2 on CUDA */
	ti_cpu_isa cpu_isa;              /* cpu: the instruction set oneDNN's kernels are chosen for */
	bool cpu_isa_fixed;              /* cpu: cpu_isa is the one the step runs with (given, not assumed): the
	                                    peak's range does not span the other sets */
	bool cudnn_benchmark;            /* cuda: torch.backends.cudnn.benchmark: each convolution's algorithm is the
	                                    fastest cudnnFind timed, not cuDNN's heuristic choice */
	ti_dtype dtype;                  /* weights in this dtype; 0: as described */
	const char *const *keep_dtype;   /* globs: parameters dtype leaves as described (peft's LoRA adapters, which
	                                    get_peft_model's autocast_adapter_dtype keeps in float32) */
	size_t keep_dtype_count;
	const char *const *trainable;    /* globs: only these parameters train (fine-tuning) */
	size_t trainable_count;
	const char *const *frozen;       /* globs: these parameters do not train */
	size_t frozen_count;
	const char *const *checkpoint;   /* globs on module paths: activation checkpointing (torch.utils.checkpoint) */
	size_t checkpoint_count;
	int64_t accumulate;              /* gradient accumulation over this many micro-batches; 0 or 1: none */
	int kv_cache;                    /* inference: 0 a KV cache when attention is causal, 1 always, -1 never */
	ti_dtype kv_dtype;               /* the KV cache's elements in this dtype; 0: the keys' and values' own */
	int64_t kv_tokens;               /* > 0: each attention step caches this many tokens, not the keys' length
	                                    (a decode step at length 1 with the cache of the whole context) */
	int64_t kv_window;               /* > 0: no attention step caches more than this many tokens (a sliding
	                                    window on every layer, over the description's own kv_windows) */
	bool kv_compressed;              /* the cache of attention steps the description gives a compressed size
	                                    ("kv_compressed": DeepSeek's MLA latent) at that size, as DeepSeek's own
	                                    inference and vLLM keep it; false: the per-head keys and values
	                                    transformers caches */
	ti_memory_attention attention;   /* the attention kernel; TI_ATTN_DEFAULT: as torch decides */
	ti_memory_loss loss;             /* training: the loss; TI_LOSS_DEFAULT: as the model's class says */
	ti_dtype amp;                    /* torch.autocast to this dtype (bfloat16, float16); 0: none */
	const ti_dtype *param_dtypes;    /* per model parameter (ti_model_params order): its dtype as a checkpoint
	                                    holds it, 0 as described; NULL: all as described (--dtype still wins) */
	const int64_t *param_bytes;      /* per model parameter: > 0 its bytes as a quantized checkpoint stores it
	                                    (GPTQ's qweight, qzeros, scales, g_idx; bitsandbytes' packed weight and
	                                    its state), which does not train; 0 or NULL: as its dtype says */
	int64_t optimizer_state_bytes;   /* > 0: the optimizer state a checkpoint holds, instead of the rule's */
	ti_memory_strategy strategy;     /* training on world_size ranks */
	int64_t tensor_parallel;         /* Megatron-style tensor parallelism over this many ranks; 0 or 1: none */
	int64_t pipeline;                /* pipeline parallelism over this many stages (1F1B); 0 or 1: none */
	int64_t expert_parallel;         /* expert parallelism over this many ranks: each holds 1/K of every MoE
	                                    layer's experts (modules "experts.N"), the rest replicated, and the
	                                    all-to-all buffers of the routed tokens; 0 or 1: none */
	int64_t stage;                   /* with pipeline: the stage to simulate, 0 first */
	int64_t micro_batches;           /* with pipeline: micro-batches a step; 0: as many as stages */
	int64_t world_size;              /* 0 or 1: one rank */
	int64_t bucket_bytes;            /* DDP's bucket_cap_mb, ZeRO-2's reduce bucket; 0: 25 MiB */
	const char *const *wrap;         /* ZeRO-3/FSDP units: module path globs; none: each top-level module */
	size_t wrap_count;
	ti_memory_quant quantize;        /* the Linear weights (not lm_head's, nor LoRA adapters') as bitsandbytes
	                                    holds them; they do not train */
	bool quant_double;               /* 4-bit: bnb_4bit_use_double_quant */
	int quant_bits;                  /* gptq, awq: bits a value (2, 3, 4, 8) */
	int64_t quant_group;             /* gptq, awq: group_size; <= 0 one group a row */
} ti_memory_options;

/* The instruction set's name ("avx2"); NULL past the end. */
const char *ti_cpu_isa_name(ti_cpu_isa isa);
/* Parses oneDNN's names, in any case ("AVX2", "avx512_core_vnni": the family of the set): -1 when unknown. */
int ti_cpu_isa_parse(const char *name);
/* The most this machine's processor (cpuid) and operating system support, as oneDNN reads them. */
ti_cpu_isa ti_cpu_isa_host(void);

/* "1.13" or "2"; NULL for anything else. */
const char *ti_torch_version_name(ti_torch_version v);
/* Parses "1.13", "2" (and "2.x", "2.4" ...): -1 when unknown. */
int ti_torch_version_parse(const char *name);
/* The version options follow, TI_TORCH_DEFAULT resolved by the device. */
ti_torch_version ti_memory_torch(const ti_memory_options *options);
/* The optimizer implementation PyTorch picks when none is asked for: foreach for 2.x on CUDA, else for-loop. */
ti_memory_impl ti_memory_default_impl(const ti_memory_options *options);

/* "eager", "sdpa", "flash" ("default" for TI_ATTN_DEFAULT); NULL past the end. */
const char *ti_memory_attention_name(ti_memory_attention a);

/* Names of the optimizers and implementations as the command line spells them; NULL past the end. */
const char *ti_memory_optimizer_name(ti_memory_optimizer o);
const char *ti_memory_impl_name(ti_memory_impl i);
/* Parses "adam" etc.: -1 when unknown. */
int ti_memory_optimizer_parse(const char *name);
int ti_memory_impl_parse(const char *name);

typedef enum ti_memory_phase { TI_PHASE_FORWARD, TI_PHASE_BACKWARD, TI_PHASE_OPTIMIZER } ti_memory_phase;
const char *ti_memory_phase_name(ti_memory_phase p);

/* What a live tensor is, for the report. */
typedef enum ti_memory_kind {
	TI_MEM_WEIGHT, TI_MEM_BUFFER, TI_MEM_INPUT, TI_MEM_ACTIVATION, TI_MEM_SAVED, TI_MEM_GRADIENT,
	TI_MEM_ACT_GRADIENT, TI_MEM_OPTIMIZER_STATE, TI_MEM_TEMPORARY, TI_MEM_KV_CACHE, TI_MEM_COMM, TI_MEM_GATHERED,
	TI_MEM_KIND_COUNT
} ti_memory_kind;
const char *ti_memory_kind_name(ti_memory_kind k);

/* A tensor live at the peak. */
typedef struct ti_memory_tensor {
	const char *name;      /* "layer1.0.conv1: conv2d output", a parameter's name */
	ti_memory_kind kind;
	int64_t bytes;
	unsigned depends;      /* bit k: uncertainty kind k shapes its bytes (one the report names) */
} ti_memory_tensor;

/* One point of the timeline: the live bytes after a unit of one phase ran (its peak inside it). */
typedef struct ti_memory_point {
	ti_memory_phase phase;
	const char *step;      /* "layer1.0.conv1 (conv2d)" */
	int64_t live, high;    /* after it; the most during it */
} ti_memory_point;

/* A module's share: its parameters and what its calls keep for backward. */
typedef struct ti_memory_module {
	const char *path;      /* "" for the root */
	int depth;
	int64_t weights, activations;
} ti_memory_module;

/* A term of the table: its bytes and the rule that produced it. */
typedef struct ti_memory_term {
	const char *name;      /* "weights", "gradients", ... as the JSON keys */
	int64_t bytes;
	const char *rule;      /* "Adam: exp_avg + exp_avg_sq per trainable parameter, fp32" */
	bool lower_bound;      /* the true figure may be higher: why says why */
	const char *why;
	unsigned depends;      /* bit k: uncertainty kind k shapes it (one the report names) */
} ti_memory_term;

typedef struct ti_memory_report {
	int64_t weights;          /* parameters and buffers, shared storages once (a rank's share under ZeRO-3) */
	int64_t parameters, buffers;
	int64_t inputs;
	int64_t gradients;        /* .grad of every trainable parameter */
	int64_t optimizer_state;
	int64_t activations;      /* saved for backward at the end of forward; 0 in inference */
	int64_t communication;    /* DDP's gradient buckets, ZeRO-2's reduce bucket (per rank) */
	int64_t kv_cache;         /* keys and values of every attention step at the bound length (inference),
	                             or at kv_tokens, capped by kv_window, in kv_dtype */
	int kv_sites, kv_causal;  /* attention steps found; how many mask their scores */
	int kv_sliding;           /* of them, how many attend over a sliding window (kv_window, or the
	                             description's kv_windows) */
	int kv_compressed;        /* of them, how many are cached compressed (kv_compressed) */
	int64_t experts, experts_held; /* expert modules ("experts.N") of every MoE layer; with expert_parallel
	                             those this rank holds */
	int64_t expert_tokens;    /* the most bytes of token states one MoE layer's expert calls take in (the
	                             tokens routed, B x T x k, times hidden): the all-to-all's payload */
	int64_t expert_call;      /* the most bytes one expert call's own units make: its transients, at most */
	ti_memory_loss loss;      /* training: the loss the step took (sum, cross-entropy); else TI_LOSS_DEFAULT */
	int kv_unsized;           /* with kv_tokens or kv_window: sites whose length is unknown (left at the bound
	                             length) */
	int64_t peak;             /* the most bytes live at any moment of the step */
	int64_t peak_low, peak_high; /* the range the peak lies in: the least and the most peak under the alternatives
	                                of what is uncertain and covered, widened by the rules' tolerance */
	bool peak_high_open;      /* an uncertainty the range does not cover may add past peak_high */
	const ti_memory_uncertainty *uncertain; /* what makes the peak uncertain: the rules first */
	size_t uncertain_count;
	int64_t in_flight;        /* pipeline: the micro-batches whose activations this stage holds at once */
	int64_t stage_first, stage_last; /* pipeline: the stage's ledger units (of the whole model's) */
	int64_t reserved_peak;    /* cuda: the caching allocator's segments at the most */
	ti_memory_phase peak_phase;
	const char *peak_step;
	const char *peak_module;
	ti_memory_term *terms;
	size_t term_count;
	ti_memory_tensor *top;    /* live at the peak, largest first */
	size_t top_count;
	ti_memory_point *timeline;
	size_t point_count;
	ti_memory_module *modules;/* every module, parents first */
	size_t module_count;
	const char *const *notes; /* lower bounds and assumptions, in words */
	size_t note_count;
	size_t unit_count;        /* ledger units simulated */
} ti_memory_report;

/*
 * A device's memory: a size ("80GiB", "24GB", "512MiB", "1e9") or a GPU of
 * the built-in table ("H100-80GB", "A100-40GB", "L4", "RTX 4090"; *gpu is
 * then its name, else NULL). TI_E_INVALID when it is neither.
 */
ti_status ti_memory_parse_size(const char *text, int64_t *out, const char **gpu, ti_error *err);
/* The table's GPU names, in order; NULL past the end. */
const char *ti_memory_gpu_name(size_t i);

/*
 * Simulates one step of model (opened, not yet run) under options. A shape
 * error of the model is TI_E_SHAPE with the message `shapes` gives.
 * The peak's range: on the CPU, when a convolution's scratch depends on the
 * instruction set and options->cpu_isa_fixed is false, the step is simulated
 * again under every ti_cpu_isa (the walk and the ledger, not the shape run:
 * a few milliseconds), and the range spans their peaks.
 */
ti_status ti_memory_estimate(ti_model *model, const ti_memory_options *options, const ti_memory_report **out,
                             ti_error *err);

struct ti_source;
struct ti_arena;
/*
 * The terms a checkpoint alone gives (any file the source layer reads): its
 * weights, and for training a gradient per floating parameter and the
 * optimizer state, the checkpoint's own when it holds one, else by
 * options->optimizer. No graph: activations are unknown, the peak is a
 * lower bound (marked so). The report lives in arena.
 */
ti_status ti_memory_from_source(struct ti_source *src, const ti_memory_options *options, struct ti_arena *arena,
                                const ti_memory_report **out, ti_error *err);

/*
 * For a description and a checkpoint of it: each model parameter's dtype as
 * the checkpoint holds it (*dtypes[i], 0 where no tensor of that name is
 * found, with or without a "model." / "module." / "state_dict." prefix),
 * how many were found, and the optimizer state the checkpoint holds (0 if
 * none). *bytes[i] > 0 for a parameter the checkpoint holds quantized: a
 * weight "X.weight" that is GPTQ's or AWQ's "X.qweight", "X.qzeros",
 * "X.scales" (and "X.g_idx"), or a uint8 or int8 "X.weight" with
 * bitsandbytes' state ("X.weight.absmax", ..., "X.SCB"): their bytes
 * together. The arrays live in arena.
 */
ti_status ti_memory_weights_from(struct ti_source *src, const ti_model *model, struct ti_arena *arena,
                                 ti_dtype **dtypes, int64_t **bytes, size_t *matched, int64_t *optimizer_state,
                                 ti_error *err);

#endif
