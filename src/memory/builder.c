/*
 * builder.c - the ledger being built (memory_internal.h's mem_builder):
 * tensors by meta tensor, their bytes and dtypes, the units emitted. Below
 * the rules, the expansions, AMP and the simulation, which all build with it.
 */
#include <stdint.h>
#include <string.h>

#include "memory/memory_internal.h"
#include "util/ptr_hash.h"

/* ---- meta tensor -> tensor id ---- */

typedef struct ptr_map {
	const void **keys;
	int *values;
	size_t capacity, count;
} ptr_map;

static int map_get(const ptr_map *m, const void *key)
{
	if (!m->capacity)
		return -1;
	for (size_t i = ti_ptr_hash(key) & (m->capacity - 1);; i = (i + 1) & (m->capacity - 1)) {
		if (!m->keys[i])
			return -1;
		if (m->keys[i] == key)
			return m->values[i];
	}
}

static int map_put(ti_arena *a, ptr_map *m, const void *key, int value)
{
	if ((m->count + 1) * 2 > m->capacity) {
		size_t cap = m->capacity ? m->capacity * 2 : 1024;
		const void **keys = ti_arena_calloc(a, cap, sizeof(*keys));
		int *values = ti_arena_calloc(a, cap, sizeof(*values));
		if (!keys || !values)
			return -1;
		for (size_t i = 0; i < m->capacity; i++)
			if (m->keys[i]) {
				size_t j = ti_ptr_hash(m->keys[i]) & (cap - 1);
				while (keys[j])
					j = (j + 1) & (cap - 1);
				keys[j] = m->keys[i];
				values[j] = m->values[i];
			}
		m->keys = keys;
		m->values = values;
		m->capacity = cap;
	}
	size_t i = ti_ptr_hash(key) & (m->capacity - 1);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->capacity - 1);
	if (!m->keys[i])
		m->count++;
	m->keys[i] = key;
	m->values[i] = value;
	return 0;
}

void *mem_tensor_map_new(ti_arena *arena)
{
	return ti_arena_calloc(arena, 1, sizeof(ptr_map));
}

int mem_tensor_find(const mem_builder *b, const ti_meta_tensor *t)
{
	return map_get(b->map, t);
}

/* ---- the builder's side (memory_internal.h) ---- */

static int new_tensor(mem_builder *b, int64_t bytes, int storage, const char *name)
{
	if (bytes < 0)
		return -1;
	if (ti_arena_array_grow(b->arena, (void **)&b->tensors, &b->tensor_capacity, sizeof(*b->tensors),
	                        b->tensor_count + 1))
		return -1;
	int id = (int)b->tensor_count++;
	b->tensors[id] = (mem_tensor){bytes, storage, false, -1, -1, 4, true, false, false, name, 0, 0};
	return id;
}

int mem_tensor_new(mem_builder *b, int64_t bytes, const char *name)
{
	return new_tensor(b, bytes, b->storage_count++, name);
}

int mem_tensor_view(mem_builder *b, int base, int64_t bytes)
{
	int id = new_tensor(b, bytes, b->tensors[base].storage, b->tensors[base].name);
	if (id >= 0) {
		b->tensors[id].elsize = b->tensors[base].elsize;
		b->tensors[id].floating = b->tensors[base].floating;
		b->tensors[id].split = b->tensors[base].split;
	}
	return id;
}

void mem_tensor_dtype(mem_builder *b, int id, ti_dtype dtype)
{
	if (id < 0)
		return;
	b->tensors[id].elsize = (int)ti_dtype_size(dtype);
	b->tensors[id].floating = ti_dtype_is_floating(dtype);
}

/* A meta tensor's second-to-last size: the rows a value of attention holds (its tokens), 0 when it has none. */
static int64_t meta_rows(const ti_meta_tensor *t)
{
	return t->ndim >= 2 ? t->shape[t->ndim - 2].value : 0;
}

/* Its first size when it has 3 dimensions or more (attention's [B, H, S, D]: the batch), else 0. */
static int64_t meta_lead(const ti_meta_tensor *t)
{
	return t->ndim >= 3 ? t->shape[0].value : 0;
}

int mem_tensor_bind(mem_builder *b, const ti_meta_tensor *t, int id)
{
	if (id >= 0 && (size_t)id < b->tensor_count) {
		b->tensors[id].rows = meta_rows(t);
		b->tensors[id].lead = meta_lead(t);
	}
	return map_put(b->arena, b->map, t, id);
}

/* Tensors first met as an input: the model's inputs and what no traced call made. */
int mem_tensor_of(mem_builder *b, const ti_meta_tensor *t)
{
	int id = map_get(b->map, t);
	if (id >= 0)
		return id;
	id = mem_tensor_new(b, mem_meta_bytes(t), "input");
	if (id < 0 || map_put(b->arena, b->map, t, id))
		return -1;
	mem_tensor_dtype(b, id, t->dtype);
	b->tensors[id].rows = meta_rows(t);
	b->tensors[id].lead = meta_lead(t);
	return id;
}

static void window_lookup(mem_builder *b)
{
	b->window = ti_model_kv_window(b->model, b->module_path);
	b->compressed = b->options->kv_compressed ? ti_model_kv_compressed(b->model, b->module_path) : 0;
	b->attention = ti_model_attention(b->model, b->module_path);
	b->window_path = b->module_path;
}

unsigned mem_attention(mem_builder *b)
{
	if (!b->model || !b->model->attention_count)
		return 0;
	if (b->window_path != b->module_path)
		window_lookup(b);
	return b->attention;
}

int64_t mem_kv_window(mem_builder *b)
{
	if (b->options->kv_window > 0)
		return b->options->kv_window;
	if (!b->model || !b->model->kv_window_count)
		return 0;
	if (b->window_path != b->module_path) /* one look-up per module, not per unit */
		window_lookup(b);
	return b->window;
}

/* The compressed cache's elements a token in the current module, when the options ask for it; else 0. */
static int64_t mem_kv_compressed(mem_builder *b)
{
	if (!b->options->kv_compressed || !b->model || !b->model->kv_compressed_count)
		return 0;
	if (b->window_path != b->module_path)
		window_lookup(b);
	return b->compressed;
}

/*
 * On cuda, a Linear's bias gradient: addmm's backward hands back grad_output
 * whole for the bias and the engine sums it to the bias's shape after the
 * node returns (validate_outputs, at::sum_to), beside the input's and the
 * weight's gradients: a sum over every row of [M, C] into C, which takes a
 * global buffer in CUDA's reduction kernel when M is long (cuda_reduce.c).
 */
static void bias_grad_reduce(const mem_builder *b, mem_unit *u)
{
	if (b->options->device != TI_MEMORY_CUDA || b->options->mode != TI_MEMORY_TRAIN || !u->op || strcmp(u->op, "linear") ||
	    u->nin < 3 || u->nout < 1)
		return;
	const mem_tensor *bias = &b->tensors[u->in[2]], *out = &b->tensors[u->out[0]];
	if (!bias->floating || bias->elsize <= 0 || out->elsize <= 0 || bias->bytes <= 0)
		return;
	int64_t columns = bias->bytes / bias->elsize, rows = out->bytes / out->elsize / columns;
	int acc = out->elsize == 8 ? 8 : 4;
	u->bwd_reduce = mem_cuda_reduce_scratch(columns, rows, MEM_REDUCE_ROWS, columns, acc);
	u->bwd_reduce_expanded = mem_cuda_reduce_scratch(columns, rows, MEM_REDUCE_BROADCAST, columns, acc);
	u->bwd_reduce_if = u->bwd_reduce || u->bwd_reduce_expanded ? 1u << 2 : 0;
}

ti_status mem_emit(mem_builder *b, const mem_unit *u, ti_error *err)
{
	if (ti_arena_array_grow(b->arena, (void **)&b->units, &b->unit_capacity, sizeof(*b->units), b->unit_count + 1))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the ledger");
	b->units[b->unit_count] = *u;
	b->units[b->unit_count].segment = b->segment;
	b->units[b->unit_count].kv_window = mem_kv_window(b);
	b->units[b->unit_count].kv_compressed = mem_kv_compressed(b);
	b->units[b->unit_count].no_cache = (mem_attention(b) & TI_MODEL_ATTN_NO_CACHE) != 0;
	bias_grad_reduce(b, &b->units[b->unit_count]);
	for (int o = 0; o < u->nout; o++)
		if (b->tensors[u->out[o]].producer < 0)
			b->tensors[u->out[o]].producer = (int)b->unit_count;
	b->unit_count++;
	return TI_OK;
}

bool mem_training(const mem_builder *b)
{
	return b->options->mode == TI_MEMORY_TRAIN;
}

int64_t mem_meta_bytes(const ti_meta_tensor *t)
{
	int64_t n = (int64_t)ti_dtype_size(t->dtype);
	if (!n)
		n = 1;
	for (int k = 0; k < t->ndim; k++)
		if (!mem_mul(n, t->shape[k].value, &n))
			return -1;
	return n;
}
