/*
 * onednn.c - convolutions through oneDNN (libdnnl.so.2), the library that
 * runs PyTorch's CPU convolutions, and the only file that touches it.
 *
 * The library is loaded with dlopen() by the first convolution of a run
 * that takes it (conv.c decides which: docs/run-kernels.md has the
 * measurements), never linked: no other command maps it or starts its
 * threads. Its types come from its header (dnnl.h, libdnnl-dev); each
 * function is looked up with dlsym() into one table. Built without the
 * header, or run without the library (or with TINSPECT_LIBDNNL=none),
 * rt_dnnl_conv_plan says no and conv.c runs its own kernel.
 *
 * A convolution runs as PyTorch 1.13's mkldnn_convolution runs it on
 * NCHW tensors: oneDNN picks the layouts its kernel wants (format "any"),
 * the input and weight are reordered into them, the kernel (brgconv, a
 * JIT direct convolution) writes the output in its blocked layout, and a
 * reorder brings it back to NCHW. The reordered copies and the kernel's
 * scratchpad are ours (malloc), so the plan can count them: their sizes
 * are what rt_dnnl_conv_plan returns.
 *
 * Threads: oneDNN here runs on OpenMP (libgomp), whose threads would spin
 * between its calls and take the cores from run's own kernels (as
 * OpenBLAS's did, linalg.c); OMP_WAIT_POLICY=passive is set before the
 * library is loaded, unless the environment sets it already.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl.h>)
#define HAVE_ONEDNN_HEADER 1
#endif
#endif

#ifndef HAVE_ONEDNN_HEADER

bool rt_dnnl_loaded(void) { return false; }

int64_t rt_dnnl_conv_images(const rt_dnnl_conv *d, int64_t budget)
{
	(void)d, (void)budget;
	return 0;
}

bool rt_dnnl_conv_run(const rt_dnnl_conv *d, int64_t per_call, int threads, const float *x, const float *w,
                      const float *bias, float *y, size_t *held)
{
	(void)d, (void)per_call, (void)threads, (void)x, (void)w, (void)bias, (void)y;
	*held = 0;
	return false;
}

#else

#include <oneapi/dnnl/dnnl.h>

#define DNNL_LIBRARY_ENV "TINSPECT_LIBDNNL"
#define DNNL_LIBRARY_DEFAULT "libdnnl.so.2" /* oneDNN 2.x's soname: the types below are its ABI */

/* The functions used, named as the library exports them. */
#define API(f) __typeof__(f) *f
static struct dnnl_api {
	API(dnnl_version);
	API(dnnl_engine_create);
	API(dnnl_stream_create);
	API(dnnl_stream_wait);
	API(dnnl_stream_destroy);
	API(dnnl_memory_desc_init_by_tag);
	API(dnnl_memory_desc_equal);
	API(dnnl_memory_desc_get_size);
	API(dnnl_memory_create);
	API(dnnl_memory_destroy);
	API(dnnl_memory_set_data_handle);
	API(dnnl_primitive_attr_create);
	API(dnnl_primitive_attr_destroy);
	API(dnnl_primitive_attr_set_scratchpad_mode);
	API(dnnl_dilated_convolution_forward_desc_init);
	API(dnnl_matmul_desc_init);
	API(dnnl_primitive_desc_create);
	API(dnnl_primitive_desc_query);
	API(dnnl_primitive_desc_query_md);
	API(dnnl_primitive_desc_destroy);
	API(dnnl_reorder_primitive_desc_create);
	API(dnnl_primitive_create);
	API(dnnl_primitive_execute);
	API(dnnl_primitive_destroy);
	void (*omp_set_num_threads)(int); /* libgomp's, which the library brings; NULL on another runtime */
} api;
#undef API

#define SYMBOL(f) {#f, offsetof(struct dnnl_api, f)}
static const struct {
	const char *symbol;
	size_t offset;
} symbols[] = {
	SYMBOL(dnnl_version),
	SYMBOL(dnnl_engine_create),
	SYMBOL(dnnl_stream_create),
	SYMBOL(dnnl_stream_wait),
	SYMBOL(dnnl_stream_destroy),
	SYMBOL(dnnl_memory_desc_init_by_tag),
	SYMBOL(dnnl_memory_desc_equal),
	SYMBOL(dnnl_memory_desc_get_size),
	SYMBOL(dnnl_memory_create),
	SYMBOL(dnnl_memory_destroy),
	SYMBOL(dnnl_memory_set_data_handle),
	SYMBOL(dnnl_primitive_attr_create),
	SYMBOL(dnnl_primitive_attr_destroy),
	SYMBOL(dnnl_primitive_attr_set_scratchpad_mode),
	SYMBOL(dnnl_dilated_convolution_forward_desc_init),
	SYMBOL(dnnl_matmul_desc_init),
	SYMBOL(dnnl_primitive_desc_create),
	SYMBOL(dnnl_primitive_desc_query),
	SYMBOL(dnnl_primitive_desc_query_md),
	SYMBOL(dnnl_primitive_desc_destroy),
	SYMBOL(dnnl_reorder_primitive_desc_create),
	SYMBOL(dnnl_primitive_create),
	SYMBOL(dnnl_primitive_execute),
	SYMBOL(dnnl_primitive_destroy),
};
#undef SYMBOL

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine; /* the CPU engine, for the process's life once loaded; NULL: no oneDNN */

static void load(void)
{
	const char *path = getenv(DNNL_LIBRARY_ENV);
	if (path && !strcmp(path, "none"))
		return;
	if (!path || !*path)
		path = DNNL_LIBRARY_DEFAULT;
	/* before libgomp reads its environment, which it does once, as it is loaded */
	setenv("OMP_WAIT_POLICY", "passive", 0);
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return;
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		void *sym = dlsym(lib, symbols[i].symbol);
		if (!sym)
			return; /* not a oneDNN 2.x: our own kernels (the library stays mapped, unused) */
		memcpy((char *)&api + symbols[i].offset, &sym, sizeof(sym));
	}
	void *threads = dlsym(lib, "omp_set_num_threads");
	memcpy(&api.omp_set_num_threads, &threads, sizeof(threads));
	const dnnl_version_t *v = api.dnnl_version();
	if (!v || v->major != DNNL_VERSION_MAJOR || v->cpu_runtime != DNNL_RUNTIME_OMP)
		return;
	dnnl_engine_t e;
	if (api.dnnl_engine_create(&e, dnnl_cpu, 0) == dnnl_success)
		engine = e;
}

bool rt_dnnl_loaded(void)
{
	pthread_once(&load_once, load);
	return engine != NULL;
}

/* The plain (row-major) layout of ndim dims: abc..., the order PyTorch's contiguous tensors have. */
static const dnnl_format_tag_t plain_tags[] = {dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde,
                                               dnnl_abcdef};

/*
 * One convolution's descriptors, for `images` of its images, and the
 * primitive descriptor oneDNN chose. src, weights and dst are our tensors
 * (input, weight, output) in their plain layouts; want_* the layouts the
 * primitive takes them in (the same pointer when no copy is needed).
 */
typedef struct prepared {
	dnnl_memory_desc_t src, weights, bias, dst;
	const dnnl_memory_desc_t *want_src, *want_weights, *want_dst, *scratchpad;
	bool matmul; /* the pointwise form: oneDNN's SRC is our weight, its WEIGHTS our input */
	dnnl_primitive_desc_t pd;
} prepared;

/*
 * A pointwise convolution (kernel 1, stride 1, no padding, one group) is
 * a product per image, W [out, in] x X [in, plane]: oneDNN's matmul (its
 * brgemm kernels) takes it on our layouts as they are, the images as a
 * batch that shares W, with no reorder. Measured on ResNet-50's 1x1
 * shapes it ran in 0.8x OpenBLAS's time; its convolution primitive, with
 * the two reorders, in 1.1 to 1.2x (docs/run-kernels.md).
 */
static bool pointwise(const rt_dnnl_conv *d)
{
	bool one = d->groups == 1;
	for (int i = 0; i < d->spatial; i++)
		one = one && d->kernel[i] == 1 && d->stride[i] == 1 && d->pad_left[i] == 0 && d->pad_right[i] == 0;
	return one;
}

/* The primitive descriptor for operation desc, its scratchpad ours (dnnl_scratchpad_mode_user) so the plan counts it. */
static bool make_pd(const void *desc, prepared *p)
{
	dnnl_primitive_attr_t attr;
	if (api.dnnl_primitive_attr_create(&attr))
		return false;
	dnnl_status_t st = api.dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
	if (!st)
		st = api.dnnl_primitive_desc_create(&p->pd, desc, attr, engine, NULL);
	api.dnnl_primitive_attr_destroy(attr);
	if (st)
		return false;
	/* oneDNN's reference kernels (plain loops, for what its fast ones do not take: a matmul's bias per
	   row, say) are slower than ours: no oneDNN then */
	const char *impl = NULL;
	if (api.dnnl_primitive_desc_query(p->pd, dnnl_query_impl_info_str, 0, &impl) || !impl || !strncmp(impl, "ref", 3)) {
		api.dnnl_primitive_desc_destroy(p->pd);
		return false;
	}
	p->scratchpad = api.dnnl_primitive_desc_query_md(p->pd, dnnl_query_scratchpad_md, 0);
	return true;
}

static bool prepare_matmul(const rt_dnnl_conv *d, int64_t images, prepared *p)
{
	int64_t plane = 1;
	for (int i = 0; i < d->spatial; i++)
		plane *= d->plane[i];
	dnnl_dims_t w = {1, d->out_channels, d->in_channels}, x = {images, d->in_channels, plane},
	            y = {images, d->out_channels, plane}, b = {1, d->out_channels, 1};
	if (api.dnnl_memory_desc_init_by_tag(&p->src, 3, x, dnnl_f32, dnnl_abc) ||
	    api.dnnl_memory_desc_init_by_tag(&p->weights, 3, w, dnnl_f32, dnnl_abc) ||
	    api.dnnl_memory_desc_init_by_tag(&p->dst, 3, y, dnnl_f32, dnnl_abc) ||
	    api.dnnl_memory_desc_init_by_tag(&p->bias, 3, b, dnnl_f32, dnnl_abc))
		return false;
	dnnl_matmul_desc_t md;
	if (api.dnnl_matmul_desc_init(&md, &p->weights, &p->src, d->bias ? &p->bias : NULL, &p->dst) || !make_pd(&md, p))
		return false;
	p->matmul = true;
	p->want_src = &p->src;
	p->want_weights = &p->weights;
	p->want_dst = &p->dst;
	return true;
}

static bool prepare(const rt_dnnl_conv *d, int64_t images, prepared *p)
{
	memset(p, 0, sizeof(*p));
	if (pointwise(d))
		return prepare_matmul(d, images, p);
	int s = d->spatial, nd = s + 2;
	dnnl_dims_t src = {images, d->in_channels}, dst = {images, d->out_channels}, weights, strides, dilates,
	            pad_l, pad_r;
	int wd = 0;
	if (d->groups > 1)
		weights[wd++] = d->groups;
	weights[wd++] = d->out_channels / d->groups;
	weights[wd++] = d->in_channels / d->groups;
	for (int i = 0; i < s; i++) {
		src[2 + i] = d->image[i];
		dst[2 + i] = d->plane[i];
		weights[wd++] = d->kernel[i];
		strides[i] = d->stride[i];
		dilates[i] = d->dilation[i] - 1; /* oneDNN counts the gaps: 0 is none */
		pad_l[i] = d->pad_left[i];
		pad_r[i] = d->pad_right[i];
	}
	dnnl_dims_t bias = {d->out_channels};
	dnnl_memory_desc_t any_src, any_weights, any_dst;
	if (api.dnnl_memory_desc_init_by_tag(&p->src, nd, src, dnnl_f32, plain_tags[nd]) ||
	    api.dnnl_memory_desc_init_by_tag(&p->weights, wd, weights, dnnl_f32, plain_tags[wd]) ||
	    api.dnnl_memory_desc_init_by_tag(&p->dst, nd, dst, dnnl_f32, plain_tags[nd]) ||
	    api.dnnl_memory_desc_init_by_tag(&p->bias, 1, bias, dnnl_f32, dnnl_a) ||
	    api.dnnl_memory_desc_init_by_tag(&any_src, nd, src, dnnl_f32, dnnl_format_tag_any) ||
	    api.dnnl_memory_desc_init_by_tag(&any_weights, wd, weights, dnnl_f32, dnnl_format_tag_any) ||
	    api.dnnl_memory_desc_init_by_tag(&any_dst, nd, dst, dnnl_f32, dnnl_format_tag_any))
		return false;
	dnnl_convolution_desc_t cd;
	if (api.dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &any_src,
	                                                   &any_weights, d->bias ? &p->bias : NULL, &any_dst, strides,
	                                                   dilates, pad_l, pad_r) ||
	    !make_pd(&cd, p))
		return false;
	p->want_src = api.dnnl_primitive_desc_query_md(p->pd, dnnl_query_src_md, 0);
	p->want_weights = api.dnnl_primitive_desc_query_md(p->pd, dnnl_query_weights_md, 0);
	p->want_dst = api.dnnl_primitive_desc_query_md(p->pd, dnnl_query_dst_md, 0);
	if (!p->want_src || !p->want_weights || !p->want_dst) {
		api.dnnl_primitive_desc_destroy(p->pd);
		return false;
	}
	return true;
}

/* The bytes of the kernel's own layout of a tensor: 0 when it is ours already (no reorder). */
static size_t copy_bytes(const dnnl_memory_desc_t *plain, const dnnl_memory_desc_t *want)
{
	return api.dnnl_memory_desc_equal(plain, want) ? 0 : api.dnnl_memory_desc_get_size(want);
}

static size_t scratch_of(const prepared *p)
{
	return copy_bytes(&p->src, p->want_src) + copy_bytes(&p->weights, p->want_weights) +
	       copy_bytes(&p->dst, p->want_dst) + (p->scratchpad ? api.dnnl_memory_desc_get_size(p->scratchpad) : 0);
}

/* The bytes of copies and scratchpad oneDNN needs for images of d's images at once; false if it refuses d. */
static bool bytes_for(const rt_dnnl_conv *d, int64_t images, size_t *bytes)
{
	prepared p;
	if (!prepare(d, images, &p))
		return false;
	*bytes = scratch_of(&p);
	api.dnnl_primitive_desc_destroy(p.pd);
	return true;
}

int64_t rt_dnnl_conv_images(const rt_dnnl_conv *d, int64_t budget)
{
	size_t bytes;
	if (d->images < 1 || budget < 0 || !rt_dnnl_loaded() || !bytes_for(d, 1, &bytes) || bytes > (size_t)budget)
		return 0;
	int64_t n = d->images;
	while (n > 1) {
		if (!bytes_for(d, n, &bytes))
			return 0;
		if (bytes <= (size_t)budget)
			return n;
		/* the copies grow with the images (the weights' does not): scale down, at least by one */
		int64_t fit = (int64_t)((double)n * (double)budget / (double)bytes);
		n = fit < n ? fit : n - 1;
	}
	return 1;
}

/* A buffer of ours that oneDNN reads or writes in its own layout: grown, never shrunk, during one run call. */
typedef struct buffer {
	void *data;
	size_t bytes;
} buffer;

static bool buffer_fit(buffer *b, size_t bytes)
{
	if (bytes <= b->bytes)
		return true;
	free(b->data);
	/* 64: a cache line, as oneDNN aligns its own buffers */
	b->data = aligned_alloc(64, (bytes + 63) / 64 * 64);
	b->bytes = b->data ? bytes : 0;
	return b->data != NULL;
}

static void memory_drop(dnnl_memory_t *m)
{
	if (*m)
		api.dnnl_memory_destroy(*m);
	*m = NULL;
}

/* A memory object for md over data; NULL on failure. */
static dnnl_memory_t memory_over(const dnnl_memory_desc_t *md, void *data)
{
	dnnl_memory_t m;
	return api.dnnl_memory_create(&m, md, engine, data) ? NULL : m;
}

/* from -> to through a reorder primitive (oneDNN caches it after the first), on stream. */
static bool reorder(dnnl_memory_t from, const dnnl_memory_desc_t *from_md, dnnl_memory_t to,
                    const dnnl_memory_desc_t *to_md, dnnl_stream_t stream)
{
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
	if (api.dnnl_reorder_primitive_desc_create(&pd, from_md, engine, to_md, engine, NULL))
		return false;
	dnnl_status_t st = api.dnnl_primitive_create(&prim, pd);
	api.dnnl_primitive_desc_destroy(pd);
	if (st)
		return false;
	dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
	st = api.dnnl_primitive_execute(prim, stream, 2, args);
	api.dnnl_primitive_destroy(prim);
	return st == dnnl_success;
}

/*
 * What one run call holds: the primitive for `images` images at a time
 * (a last, smaller chunk gets its own), memory objects over our tensors
 * and over the copies. The weights are reordered once, and again only if
 * a chunk's kernel wants another layout.
 */
typedef struct job {
	const rt_dnnl_conv *d;
	prepared p;
	int64_t images; /* the images p and conv are for; 0: none yet */
	dnnl_primitive_t conv;
	dnnl_stream_t stream;
	dnnl_memory_t src, dst, weights, bias, src_copy, dst_copy, weights_copy, scratchpad;
	dnnl_memory_desc_t weights_layout; /* of weights_buf's contents, once weights_ready */
	bool weights_ready;
	buffer src_buf, dst_buf, weights_buf, pad_buf;
} job;

static void job_drop_chunk(job *j)
{
	memory_drop(&j->src);
	memory_drop(&j->dst);
	memory_drop(&j->src_copy);
	memory_drop(&j->dst_copy);
	memory_drop(&j->weights_copy);
	memory_drop(&j->scratchpad);
	if (j->conv)
		api.dnnl_primitive_destroy(j->conv);
	j->conv = NULL;
	if (j->images)
		api.dnnl_primitive_desc_destroy(j->p.pd);
	j->images = 0;
}

/* A memory object in md's layout over buf, or NULL (*ok untouched) when md is the plain layout itself. */
static dnnl_memory_t copy_over(const dnnl_memory_desc_t *plain, const dnnl_memory_desc_t *md, buffer *buf, bool *ok)
{
	size_t bytes = copy_bytes(plain, md);
	if (!bytes)
		return NULL;
	dnnl_memory_t m = buffer_fit(buf, bytes) ? memory_over(md, buf->data) : NULL;
	*ok = *ok && m;
	return m;
}

/* The primitive and memory objects for chunks of n images, the first at x (input) and y (output). */
static bool job_chunk(job *j, int64_t n, const float *x, const float *w, float *y)
{
	job_drop_chunk(j);
	if (!prepare(j->d, n, &j->p))
		return false;
	j->images = n;
	if (api.dnnl_primitive_create(&j->conv, j->p.pd)) {
		j->conv = NULL;
		return false;
	}
	if (!(j->src = memory_over(&j->p.src, (void *)x)) || !(j->dst = memory_over(&j->p.dst, y)) ||
	    (!j->weights && !(j->weights = memory_over(&j->p.weights, (void *)w))))
		return false;
	bool ok = true;
	j->src_copy = copy_over(&j->p.src, j->p.want_src, &j->src_buf, &ok);
	j->dst_copy = copy_over(&j->p.dst, j->p.want_dst, &j->dst_buf, &ok);
	size_t pad = j->p.scratchpad ? api.dnnl_memory_desc_get_size(j->p.scratchpad) : 0;
	if (ok && pad)
		ok = buffer_fit(&j->pad_buf, pad) && (j->scratchpad = memory_over(j->p.scratchpad, j->pad_buf.data));
	if (!ok || api.dnnl_memory_desc_equal(&j->p.weights, j->p.want_weights))
		return ok;
	/* the weights in the kernel's layout: reordered unless the copy holds them so already */
	bool same = j->weights_ready && api.dnnl_memory_desc_equal(&j->weights_layout, j->p.want_weights);
	if (!same && !buffer_fit(&j->weights_buf, api.dnnl_memory_desc_get_size(j->p.want_weights)))
		return false;
	if (!(j->weights_copy = memory_over(j->p.want_weights, j->weights_buf.data)))
		return false;
	if (same)
		return true;
	j->weights_layout = *j->p.want_weights;
	j->weights_ready = reorder(j->weights, &j->p.weights, j->weights_copy, j->p.want_weights, j->stream);
	return j->weights_ready;
}

/* One chunk of images: x and y are its first image's. */
static bool job_step(job *j, const float *x, float *y)
{
	if (api.dnnl_memory_set_data_handle(j->src, (void *)x) || api.dnnl_memory_set_data_handle(j->dst, y))
		return false;
	if (j->src_copy && !reorder(j->src, &j->p.src, j->src_copy, j->p.want_src, j->stream))
		return false;
	dnnl_memory_t input = j->src_copy ? j->src_copy : j->src, weights = j->weights_copy ? j->weights_copy : j->weights;
	dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, j->p.matmul ? weights : input},
	                           {DNNL_ARG_WEIGHTS, j->p.matmul ? input : weights},
	                           {DNNL_ARG_DST, j->dst_copy ? j->dst_copy : j->dst}};
	int nargs = 3;
	if (j->bias)
		args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, j->bias};
	if (j->scratchpad)
		args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, j->scratchpad};
	if (api.dnnl_primitive_execute(j->conv, j->stream, nargs, args))
		return false;
	return !j->dst_copy || reorder(j->dst_copy, j->p.want_dst, j->dst, &j->p.dst, j->stream);
}

bool rt_dnnl_conv_run(const rt_dnnl_conv *d, int64_t per_call, int threads, const float *x, const float *w,
                      const float *bias, float *y, size_t *held)
{
	*held = 0;
	if (per_call < 1 || !rt_dnnl_loaded())
		return false;
	if (api.omp_set_num_threads)
		api.omp_set_num_threads(threads > 0 ? threads : 1);
	int64_t in_image = d->in_channels, out_image = d->out_channels;
	for (int i = 0; i < d->spatial; i++) {
		in_image *= d->image[i];
		out_image *= d->plane[i];
	}
	job j = {.d = d};
	bool ok = !api.dnnl_stream_create(&j.stream, engine, dnnl_stream_default_flags);
	if (!ok)
		j.stream = NULL;
	if (ok && bias) { /* [out] for the convolution, [1, out, 1] (broadcast over the plane) for the matmul */
		dnnl_memory_desc_t md;
		dnnl_dims_t conv_dims = {d->out_channels}, matmul_dims = {1, d->out_channels, 1};
		bool matmul = pointwise(d);
		ok = !api.dnnl_memory_desc_init_by_tag(&md, matmul ? 3 : 1, matmul ? matmul_dims : conv_dims, dnnl_f32,
		                                       matmul ? dnnl_abc : dnnl_a) &&
		     (j.bias = memory_over(&md, (void *)bias));
	}
	for (int64_t first = 0; ok && first < d->images; first += j.images) {
		int64_t n = d->images - first < per_call ? d->images - first : per_call;
		const float *xi = x + first * in_image;
		float *yi = y + first * out_image;
		ok = (n == j.images || job_chunk(&j, n, xi, w, yi)) && job_step(&j, xi, yi);
	}
	ok = ok && api.dnnl_stream_wait(j.stream) == dnnl_success;
	job_drop_chunk(&j);
	memory_drop(&j.weights);
	memory_drop(&j.bias);
	if (j.stream)
		api.dnnl_stream_destroy(j.stream);
	/* the buffers only grew: together, the most they held at once */
	*held = j.src_buf.bytes + j.dst_buf.bytes + j.weights_buf.bytes + j.pad_buf.bytes;
	free(j.src_buf.data);
	free(j.dst_buf.data);
	free(j.weights_buf.data);
	free(j.pad_buf.data);
	return ok;
}

#endif
