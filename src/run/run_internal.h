/*
 * run_internal.h - what the executor (run.c) and its kernels
 * (kernels/<family>.c, one table in kernels/table.c) share: real tensors,
 * and a kernel's view of one call.
 *
 * A real tensor is a shape, strides in elements and an offset into a
 * refcounted storage, as PyTorch's: views share the storage. Storages are
 * malloc'd by the executor, which counts their bytes; a kernel allocates only
 * through rt_new (outputs) and rt_scratch_alloc (its own temporaries, freed
 * before it returns). Kernels compute in float32; indices are
 * int64, masks bool.
 */
#ifndef TINSPECT_RUN_INTERNAL_H
#define TINSPECT_RUN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/module.h"
#include "ops/op.h"
#include "tinspect/dtype.h"
#include "tinspect/error.h"

#define RT_MAX_DIMS 16 /* tensors the kernels take; more is "no CPU kernel" */

typedef struct rt_storage {
	void *data;
	size_t bytes;
	int refs;
} rt_storage;

typedef struct rt_tensor {
	ti_dtype dtype;
	int ndim;
	int64_t shape[RT_MAX_DIMS];
	int64_t stride[RT_MAX_DIMS]; /* elements */
	int64_t offset;              /* elements into the storage */
	rt_storage *storage;
	int refs;                    /* holders: the value map, a kernel's temporaries */
} rt_tensor;

typedef struct rt_exec rt_exec;

/* One call of a kernel: the traced call's bound arguments, and the outputs the kernel makes. */
typedef struct rt_call {
	rt_exec *ex;
	const ti_op_call *call;      /* arguments bound as the shape rule bound them; its outputs are the meta ones */
	const ti_module *module;     /* a module kernel's module, else NULL */
	rt_tensor *out[TI_OP_MAX_OUTPUTS];
	int out_count;
	int threads;
} rt_call;

typedef ti_status (*rt_kernel_fn)(rt_call *c, ti_error *err);

typedef struct rt_kernel {
	const char *name;            /* operator name as the registry spells it, or a module type */
	bool module;
	rt_kernel_fn run;
	bool view;                   /* its output shares its first input's storage (memory plan) */
} rt_kernel;

/*
 * What a kernel holds beside its operands while it runs (columns, scores,
 * gates), sized from the call as the kernel sizes its buffers: the plan
 * adds it to what is live, so a run that would pass the ceiling is refused
 * before anything is allocated. Each kernel file states its kernels'
 * scratch beside them, one row per kernel function (rt_scratch_<family>[]);
 * a kernel without a row takes none. A kernel takes its temporaries with
 * rt_scratch_alloc, which counts them, so tests/unit/test_run_scratch.c can
 * hold every kernel to what its row states.
 */
typedef int64_t (*rt_scratch_fn)(rt_call *c);
typedef struct rt_scratch {
	rt_kernel_fn run;            /* the kernel, as its rows in the table name it */
	rt_scratch_fn bytes;
} rt_scratch;
/* table.c: the bytes kernel k's temporaries take for call c, 0 when none. */
int64_t rt_scratch_bytes(const rt_kernel *k, rt_call *c);
/*
 * A kernel's temporary of bytes (malloc'd; zeroed when zero), or NULL when
 * out of memory; rt_scratch_free gives it back (NULL is no-op). Called on
 * the kernel's own thread, not inside rt_parallel's workers.
 */
void *rt_scratch_alloc(rt_call *c, size_t bytes, bool zero);
void rt_scratch_free(rt_call *c, void *p);
/* Temporaries a library held for the kernel (oneDNN's buffers): bytes at their most, held beside the rest. */
void rt_scratch_note(rt_call *c, size_t bytes);
/*
 * For tests: when set, called after each kernel of the real walk with the
 * bytes its scratch row states for the call and the most it held beyond
 * what is live once it returns (its temporaries, rt_scratch_alloc's and
 * rt_new's, at their highest). NULL in tinspect itself.
 */
extern void (*rt_scratch_probe)(const rt_kernel *k, rt_call *c, int64_t stated, int64_t held);
/* For scratch rows: an argument's tensor, or NULL when it has none. */
const rt_tensor *rt_arg_or_null(rt_call *c, const char *name);
/* The (L, N) of a sequence argument: [L, N, E], [N, L, E] when batch_first, [L, E] unbatched. */
void rt_sequence_dims(const rt_tensor *x, bool batch_first, int64_t *L, int64_t *N);
static inline int64_t rt_prod(const int64_t *v, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= v[i];
	return p;
}
static inline int64_t rt_ctor_int(const ti_module *m, const char *name) { return ti_bound_dim(&m->ctor, name).value; }

/* conv.c: images side by side in one sgemm of an ungrouped convolution. */
int64_t rt_conv_images_per_gemm(int64_t images, int64_t plane);
/*
 * onednn.c: a float32 convolution through oneDNN (libdnnl.so.2, loaded
 * with dlopen on the first call). Sizes of the last `spatial` dims only;
 * contiguous NCHW-style operands, weight [out, in / groups, *kernel].
 */
typedef struct rt_dnnl_conv {
	int spatial;                                     /* 1, 2 or 3 */
	int64_t images, in_channels, out_channels, groups;
	int64_t image[3], kernel[3], stride[3], dilation[3], pad_left[3], pad_right[3], plane[3];
	bool bias;
} rt_dnnl_conv;
/* Whether oneDNN is loaded (the first call loads it; TINSPECT_LIBDNNL names another library, "none" none). */
bool rt_dnnl_loaded(void);
/*
 * How many of d's images oneDNN takes per call with at most budget bytes
 * beside the operands (its layouts' copies and its scratchpad): 0 when
 * oneDNN is not here, refuses d, or needs more than budget for one image.
 */
int64_t rt_dnnl_conv_images(const rt_dnnl_conv *d, int64_t budget);
/*
 * y = conv(x, w) + bias (bias may be NULL), per_call images a call; false
 * when oneDNN failed (y then undefined). *held: the bytes of its layouts'
 * copies and scratchpad at their most (for rt_scratch_note).
 */
bool rt_dnnl_conv_run(const rt_dnnl_conv *d, int64_t per_call, int threads, const float *x, const float *w,
                      const float *bias, float *y, size_t *held);


/* kernels/table.c: the one table (each family's rows), and lookup. */
const rt_kernel *rt_kernel_find(const char *name, bool module);
/* Whether k writes into its first argument and returns it (setitem): the walk runs it though its output has a value. */
bool rt_kernel_in_place(const rt_kernel *k);

/* ---- for kernels (run.c) ---- */

/* The real tensor of a bound tensor argument ("input"); NULL when None. TI_E_INVALID if it has no value. */
ti_status rt_arg(rt_call *c, const char *name, rt_tensor **out, ti_error *err);
/* The real tensor of a meta tensor (a list item, a module's parameter). */
ti_status rt_of(rt_call *c, const ti_meta_tensor *meta, rt_tensor **out, ti_error *err);
/* The module's parameter or buffer by local name, or NULL when it has none (bias=False). */
ti_status rt_param(rt_call *c, const char *name, rt_tensor **out, ti_error *err);
/* A new contiguous tensor (uninitialised), in the dtype that holds dtype (float16 -> float32, int32 -> int64). */
ti_status rt_new(rt_call *c, ti_dtype dtype, int ndim, const int64_t *shape, rt_tensor **out, ti_error *err);
/* The call's first output as shape propagation made it (NULL when it is no tensor). */
const ti_meta_tensor *rt_meta_out(rt_call *c);
/* A new contiguous tensor of the first output's propagated shape, in (the dtype that holds) dtype. */
ti_status rt_new_out(rt_call *c, ti_dtype dtype, rt_tensor **out, ti_error *err);
/* A kernel's temporary in exactly dtype (float64 sums), never an output. */
ti_status rt_new_exact(rt_call *c, ti_dtype dtype, int ndim, const int64_t *shape, rt_tensor **out, ti_error *err);
/* A view of base (shares its storage). */
ti_status rt_view(rt_call *c, rt_tensor *base, int ndim, const int64_t *shape, const int64_t *stride, int64_t offset,
                  rt_tensor **out, ti_error *err);
/*
 * The output of an elementwise kernel written over its input, as PyTorch's
 * in-place ops (relu_, add_) write theirs: a view of input's value with
 * the output's shape when this call is the last to read it, nothing else
 * holds it or its storage, and it is contiguous, in the dtype the output is
 * held in, of the output's size. NULL otherwise (and while planning): the
 * kernel makes a new tensor. A kernel may read element i of the input
 * until it writes element i of the output, no later.
 */
rt_tensor *rt_reuse(rt_call *c, const ti_meta_tensor *input, ti_dtype dtype, int ndim, const int64_t *shape);
/* t itself (a new reference) when contiguous, else a contiguous copy. */
ti_status rt_contiguous(rt_call *c, rt_tensor *t, rt_tensor **out, ti_error *err);
/* Drops a reference a kernel holds (rt_new, rt_view, rt_contiguous results not given as outputs). */
void rt_release(rt_exec *ex, rt_tensor *t);
/* Appends an output (the call takes the reference). */
ti_status rt_output(rt_call *c, rt_tensor *t, ti_error *err);

int64_t rt_numel(const rt_tensor *t);
bool rt_is_contiguous(const rt_tensor *t);
static inline float *rt_f32(const rt_tensor *t) { return (float *)t->storage->data + t->offset; }
static inline int64_t *rt_i64(const rt_tensor *t) { return (int64_t *)t->storage->data + t->offset; }
static inline bool *rt_bool(const rt_tensor *t) { return (bool *)t->storage->data + t->offset; }
void rt_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride);

/* Bound arguments as plain values (the run's dims are concrete). */
int64_t rt_int(rt_call *c, const char *name);
/* An int argument's value: a number, or a symbol or formula of bound symbols ("T"); false when it is none. */
bool rt_dim(rt_call *c, const ti_arg *a, int64_t *out);
/* An int list (int[N] expanded) into out[max]; returns the count, or -1 when too long. */
int rt_ints(rt_call *c, const char *name, int64_t *out, int max);
double rt_float(rt_call *c, const char *name);
/* A Scalar or Tensor|Scalar that is a number: its value (true), or false when it is a tensor or None. */
bool rt_scalar(const ti_arg *a, double *out);

/* ---- parallel loops (run.c): fn(user, begin, end) over [0, n) split on the run's threads ---- */
void rt_parallel(rt_call *c, int64_t n, int64_t grain, void (*fn)(void *user, int64_t begin, int64_t end), void *user);

/* ---- kernel families: their rows, in kernels/table.c ---- */
ti_status rt_k_linear(rt_call *c, ti_error *err);
ti_status rt_k_matmul(rt_call *c, ti_error *err);
ti_status rt_k_bmm(rt_call *c, ti_error *err);
ti_status rt_k_addmm(rt_call *c, ti_error *err);
ti_status rt_k_conv(rt_call *c, ti_error *err);
/* sgemm on row-major float32: C[m,n] = alpha * op(A) op(B) + beta * C (cblas_sgemm; the only BLAS call site) */
void rt_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
              const float *b, int64_t ldb, float beta, float *cmat, int64_t ldc);
/* Opens OpenBLAS (dlopen, once per process) and sets how many threads rt_sgemm splits a product across. */
ti_status rt_blas_open(int threads, ti_error *err);

/* ---- kernels/index.c: copies that read each output element from one input element ---- */

/*
 * How an output dim reads its input: the input's stride along it (0: the
 * same element for every index, a new or broadcast dim) and, per output
 * index, the input index it reads (NULL: the output index itself; -1: no
 * element, the fill value). Flip, roll, repeat, index_select and pad are each
 * one such table per dim.
 */
typedef struct rt_remap {
	int64_t stride[RT_MAX_DIMS];
	const int64_t *source[RT_MAX_DIMS];
	double fill;
} rt_remap;
/* out (contiguous, any shape, in's dtype) = in read through map, split over the run's threads. */
void rt_remap_copy(rt_call *c, const rt_tensor *in, rt_tensor *out, const rt_remap *map);

/* maximum(a, b) (largest) or minimum(a, b), broadcast: max(input, other) and min's other form (kernels/elementwise.c) */
ti_status rt_k_maximum_of(rt_call *c, const ti_arg *a, const ti_arg *b, bool largest, ti_error *err);

#endif
