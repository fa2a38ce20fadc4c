/*
 * model_internal.h - what parse.c and run.c share: the model handle.
 *
 * The whole description is a composite module: its inputs, modules, graph
 * and outputs are those of an anonymous `defs` entry, so the top level and
 * every composite type run through the same code. cJSON is touched only in
 * parse.c: run.c sees the graph as already converted steps.
 */
#ifndef TINSPECT_MODEL_INTERNAL_H
#define TINSPECT_MODEL_INTERNAL_H

#include "nn/module.h"
#include "tinspect/model.h"

/* TI_STEP_OP "op", TI_STEP_CALL "call", TI_STEP_ATTR "attr", TI_STEP_OPAQUE "opaque" */
typedef ti_model_step_kind model_step_kind;

/* One graph step, converted from JSON. */
typedef struct model_step {
	const char *jpath;       /* "graph.3" or "defs.Block.graph.1", for errors */
	model_step_kind kind;
	bool is_call;            /* kind == STEP_CALL */
	const char *target;      /* module path, operator name, attribute path or opaque name */
	const char *module;      /* opaque: the module it is a call of, or NULL */
	const char *scope;       /* the module whose forward made the call ("" the owner's own), or NULL: not said */
	ti_model_tensor *recorded; /* opaque: the outputs as recorded */
	int recorded_count;
	bool depends_on_mode;    /* an argument is "$training" */
	const char **release;    /* "lifetime": "last_use": names whose value dies after this step */
	int release_count;
	const char **out_names;
	int out_count;
	ti_arg *args;            /* positional, then named (ti_arg.name set) */
	int arg_count;
} model_step;

/* A composite type: the description itself, or an entry of `defs`. */
typedef struct model_def {
	const char *name;        /* NULL for the description itself */
	const char *jpath;       /* "" or "defs.Block" */
	const char **inputs;     /* forward's parameters, in order */
	int input_count;
	const void *modules_json;/* a cJSON object of child modules, or NULL */
	const void *json;        /* the whole object: its own "parameters" and "buffers" */
	model_step *steps;
	int step_count;
	bool has_graph;          /* else the modules run in order (Sequential semantics) */
	const char **outputs;
	int output_count;
} model_def;

struct ti_model {
	ti_arena arena;
	ti_symctx sym;
	ti_shape_ctx ctx;
	model_def *defs;
	int def_count;
	model_def *main;         /* the description itself */
	ti_module *root;         /* a composite for main */
	ti_model_tensor *inputs; /* main's inputs, with shapes */
	size_t input_count;
	ti_model_param *params;
	size_t param_count;      /* the state dict's entries; non-persistent buffers follow them */
	size_t param_count_all;
	const ti_module **param_modules; /* the module that owns params[i] */
	const char **param_locals;       /* its name there: "weight", "layers.0.norm1.bias" */
	ti_model_module *modules;        /* state_dict()._metadata's entries, in its order */
	const char *class_name;          /* the description's "class" ("ResNet"), or NULL */
	ti_model_window *kv_windows;     /* "kv_windows": the sliding windows of attention modules */
	size_t kv_window_count;
	ti_model_window *kv_compressed;  /* "kv_compressed": the elements a token of a compressed (MLA) cache */
	size_t kv_compressed_count;
	ti_model_window *attention;      /* "attention": how the code runs the steps in a module (TI_MODEL_ATTN_*) */
	size_t attention_count;
	const char *decode_length;       /* "decode": the symbol a decode step binds to 1, NULL: "T" */
	const char **decode_once;        /* and the modules generation runs once (an encoder) */
	size_t decode_once_count;
	size_t module_count;
	ti_model_report report;
	bool ran;
	void *json;              /* the parsed cJSON tree: argument strings point into it */
	struct parser *parser;   /* while opening only */
};

/* parse.c: builds the modules of def under path (a composite module). */
ti_status model_build_composite(ti_model *model, const model_def *def, const char *path,
                                int depth, ti_module **out, ti_error *err);
/* run.c: parameters of m's subtree, ties counted where they are defined. */
int64_t model_module_params(const ti_module *m);

#endif
