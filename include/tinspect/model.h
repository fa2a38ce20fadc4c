/*
 * model.h - a model described in JSON, and shape propagation through it.
 *
 * A description is "PyTorch in JSON" (tinspect(1), MODEL DESCRIPTIONS):
 * inputs with shapes that may be symbolic, torch.nn modules by class name
 * with constructor arguments under PyTorch's names, and a graph of steps that
 * call modules or run operators. ti_model_open parses it and builds every
 * module (so parameter names and shapes are known); ti_model_run propagates
 * shapes through the graph as a forward pass on the meta device would.
 *
 * Ownership: a ti_model owns one arena; everything it returns (reports,
 * parameter lists, strings, dims) lives until ti_model_close.
 * Errors: a bad description is TI_E_CORRUPT with the JSON path in
 * err->member ("modules.layer1.0.kernel_size"); shapes that do not line up
 * are not an error of ti_model_run: they are recorded in the report.
 */
#ifndef TINSPECT_MODEL_H
#define TINSPECT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/symdim.h"

typedef struct ti_model ti_model;

#define TI_MODEL_MAX_BYTES ((size_t)64 << 20)   /* a description larger than this is refused */
#define TI_MODEL_MAX_DEPTH 64                   /* nesting of modules and defs */
#define TI_MODEL_MAX_STEPS (1u << 20)           /* report rows, nested ones included */

typedef struct ti_model_options {
	const char *const *bind_names; /* --bind NAME=VALUE */
	const int64_t *bind_values;
	size_t bind_count;
	size_t memory_limit;           /* arena ceiling; 0 for the default (1 GiB) */
	bool training;                 /* --mode train: module.training, "$training" */
	const char *const *input_names;/* --input NAME=SPEC: "8x3x224x224", "N,3,224,224:float16" */
	const char *const *input_specs;
	size_t input_count;
	ti_dtype default_dtype;        /* the dtype of floating parameters, buffers and inputs that name none
	                                  (torch.get_default_dtype()); TI_DT_INVALID: float32 */
	bool cast_floating;            /* every floating parameter, buffer and input in default_dtype, the ones
	                                  that name a dtype too: model.to(DT) and the inputs .to(DT) (run --dtype) */
	ti_dtype cast_dtype;           /* when set, every floating parameter, buffer and input in this dtype, as
	                                  model.to(DT) casts them (memory --dtype); unlike cast_floating the
	                                  default dtype, which creation ops such as arange use, stays */
} ti_model_options;

ti_status ti_model_open(const char *text, size_t size, const ti_model_options *options,
                        ti_model **out, ti_error *err);
void ti_model_close(ti_model *model);

/* A parameter or buffer, as the PyTorch state_dict would hold it. */
typedef struct ti_model_param {
	const char *name;      /* "layer1.0.conv1.weight" */
	ti_dtype dtype;
	int ndim;
	const int64_t *shape;
	bool buffer;           /* false: an nn.Parameter */
	bool trainable;
	bool persistent;       /* buffers: in the state_dict */
	const char *tied_to;   /* the parameter whose tensor this one shares, or NULL */
	const char *stores;    /* a tensor of a quantized layer's storage ("...q_proj.qweight"): the name of the
	                          floating weight it holds, which follows the state dict with the non-persistent
	                          buffers (the forward's); NULL for any other */
} ti_model_param;

/* Parameters and persistent buffers in state_dict order. */
const ti_model_param *ti_model_params(const ti_model *model, size_t *count);

/* A module as state_dict()._metadata lists it: its prefix ("" for the root, "layer1.0") and _version. */
typedef struct ti_model_module {
	const char *prefix;
	int64_t version;
} ti_model_module;

/* Every module, the root first, in the order state_dict() visits them (a module, then its children). */
const ti_model_module *ti_model_modules(const ti_model *model, size_t *count);

/* A sliding attention window: the attention steps inside module (a path, "" the whole model) see tokens. */
typedef struct ti_model_window {
	const char *module;
	int64_t tokens;
} ti_model_window;

/*
 * The description's "kv_windows": the window of the attention steps run in
 * module_path, from the deepest entry that is the module or holds it; 0 when
 * none (full attention).
 */
int64_t ti_model_kv_window(const ti_model *model, const char *module_path);

/*
 * The description's "kv_compressed": the elements a token of the compressed
 * cache of the attention steps in module_path holds (DeepSeek's MLA:
 * kv_lora_rank + qk_rope_head_dim), looked up as ti_model_kv_window; 0 when
 * none.
 */
int64_t ti_model_kv_compressed(const ti_model *model, const char *module_path);

/*
 * The description's "attention": how the model's own code runs the attention
 * steps in module_path (the deepest entry that is the module or holds it),
 * bits of TI_MODEL_ATTN_*; 0 when none is said.
 */
enum {
	TI_MODEL_ATTN_EAGER = 1,        /* its own matmul, softmax, matmul under every PyTorch (no fused kernel) */
	TI_MODEL_ATTN_KEEPS_SCORES = 2, /* the scores before the softmax live to the step's end */
	TI_MODEL_ATTN_NO_CACHE = 4,     /* an encoder's: no KV cache */
};
unsigned ti_model_attention(const ti_model *model, const char *module_path);

/*
 * The description's "decode": the symbol a decode step binds to one new
 * token ("T" when not said), and whether generation runs module_path once,
 * at the prefill, keeping its outputs for every step (an encoder's).
 */
const char *ti_model_decode_length(const ti_model *model);
bool ti_model_runs_once(const ti_model *model, const char *module_path);

struct ti_fill_policy;
/*
 * PyTorch's default initialisation of parameter i (fill.h, init_rules.h):
 * what its module's reset_parameters() would draw, e.g. uniform(-b, b) with
 * b = 1/sqrt(fan_in) for a Linear's bias. rule (may be NULL) gets a static
 * text naming PyTorch's call ("kaiming_uniform_(a=sqrt(5))").
 */
ti_status ti_model_param_init(const ti_model *model, size_t i, struct ti_fill_policy *out, const char **rule,
                              ti_error *err);

/* A tensor the graph produced or took. */
typedef struct ti_model_tensor {
	const char *name;
	ti_dtype dtype;
	int ndim;
	const ti_dim *shape;
	const ti_dim *stride;
	const void *meta;      /* the tensor itself while shapes propagate (identity for the memory simulation) */
} ti_model_tensor;

/* One row of the report: a top-level step, or a module call nested in one. */
typedef enum ti_model_step_kind {
	TI_STEP_OP,            /* an operator */
	TI_STEP_CALL,          /* a module call */
	TI_STEP_ATTR,          /* a parameter or buffer taken by path (fx's get_attr) */
	TI_STEP_OPAQUE         /* a call tinspect has no rule for: outputs as recorded */
} ti_model_step_kind;

typedef struct ti_model_step {
	int index;             /* position in the graph the row belongs to (0-based) */
	int depth;             /* 0 for the description's own graph */
	int parent;            /* row of the enclosing call, or -1 */
	ti_model_step_kind kind;
	bool is_call;          /* a module call (else an operator) */
	const char *target;    /* module path ("layer1.0") or operator name ("relu") */
	const char *type;      /* module type ("Conv2d"), or NULL for operators */
	const char *const *out_names;
	int out_count;
	ti_model_tensor *outputs;
	int output_count;
	int64_t params;        /* parameters of the called module, children and ties counted once */
	ti_dim macs, flops;
	ti_dim flops_torch;    /* as PyTorch's FlopCounterMode counts: 2 per MAC of matrix products only */
	ti_dim flops_fvcore;   /* as fvcore's FlopCountAnalysis counts: 1 per such MAC, norms, upsampling, pools */
	bool counted;          /* false: no counting rule for this row or a part of it */
	bool mode_dependent;   /* behaves differently in training: dropout, batch statistics */
	const char *opaque;    /* TI_STEP_OPAQUE: what was called ("torchvision.ops.foo") */
} ti_model_step;

typedef struct ti_model_totals {
	int64_t params, trainable, non_trainable; /* nn.Parameters, tied ones counted once */
	int64_t param_bytes, buffer_bytes;        /* buffers: persistent ones */
	ti_dim input_bytes;
	ti_dim activation_bytes;                  /* outputs of the top-level steps */
	ti_dim macs, flops;
	ti_dim flops_torch, flops_fvcore;         /* other tools' conventions (see ti_model_step) */
	size_t uncounted_steps;                   /* top-level steps without a full counting rule */
} ti_model_totals;

typedef struct ti_model_report {
	ti_model_tensor *inputs;
	size_t input_count;
	ti_model_step *steps;
	size_t step_count;
	ti_model_tensor *outputs;  /* the description's outputs (none when failed) */
	size_t output_count;
	ti_model_totals totals;
	const char *const *assumptions; /* facts assumed about symbols ("T == 5") */
	size_t assumption_count;
	bool failed;               /* a step raised: error and error_step say which */
	bool training;             /* run as after model.train() */
	int error_step;            /* index of the top-level step */
	ti_error error;            /* TI_E_SHAPE with the message, step and shapes */
} ti_model_report;

/*
 * Propagates shapes. Returns TI_OK with report->failed set when a step
 * raises as PyTorch would; fails only on a bad description met while running
 * (undefined tensor name, wrong arguments: TI_E_CORRUPT) or on resources.
 */
ti_status ti_model_run(ti_model *model, const ti_model_report **out, ti_error *err);

/* An operator or module type descriptions may name. */
typedef struct ti_model_known {
	bool module;           /* a torch.nn module type (else an operator) */
	const char *signature; /* "conv2d(Tensor input, Tensor weight, ...)", "Linear(int in_features, ...)" */
	const char *forward;   /* modules: "forward(Tensor input)" */
	const char *counting;  /* "rule", "free" (no arithmetic) or "none" (no counting rule) */
} ti_model_known;

/* Calls fn for every operator, then every module type, in the registries' order. */
void ti_model_each_known(void (*fn)(void *user, const ti_model_known *k), void *user);

/* After ti_model_run: TI_E_INVALID, listing the description's symbols, when a bound one is none of them. */
ti_status ti_model_check_binds(const ti_model *model, ti_error *err);

#endif
