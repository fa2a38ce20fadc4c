/*
 * simulate.c - one step of a described model, played on a ledger of
 * storages (see tinspect/memory.h): the units the rules made from the trace,
 * forward in order, backward in reverse, then the optimizer step and
 * zero_grad(set_to_none=True).
 *
 * A storage is live from the unit that creates it until nothing needs it:
 * the weights, buffers, inputs and optimizer state for the whole step; an
 * activation until its last use, or until the backward of the last unit that
 * saved it; a gradient until the unit that consumes it has run; a
 * parameter's .grad until zero_grad.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/cuda_alloc.h"
#include "memory/memory_internal.h"
#include "util/strmap.h"

/* ---- from the trace to units ---- */

static bool glob_any(const char *const *globs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!fnmatch(globs[i], name, 0))
			return true;
	return false;
}


typedef struct module_list {
	ti_memory_module *items;
	size_t count, capacity;
	ti_strmap index;
} module_list;

static int module_index(mem_builder *b, module_list *ml, const char *path, ti_error *err)
{
	int *found = ti_strmap_get(&ml->index, path);
	if (found)
		return *found;
	if (ti_arena_array_grow(b->arena, (void **)&ml->items, &ml->capacity, sizeof(*ml->items), ml->count + 1))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory"), -1;
	int *slot = ti_arena_alloc(b->arena, sizeof(*slot));
	if (!slot)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory"), -1;
	*slot = (int)ml->count;
	int depth = 0;
	for (const char *p = path; *p; p++)
		depth += *p == '.';
	ml->items[ml->count] = (ti_memory_module){path, *path ? depth + 1 : 0, 0, 0};
	if (ti_strmap_put(&ml->index, path, slot))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory"), -1;
	return (int)ml->count++;
}

static ti_status walk(mem_builder *b, module_list *ml, const mem_trace *tr, int id, ti_error *err);

/*
 * Adds bytes to the weights (or the activations) of every listed module that
 * holds name: the root "", each dotted prefix ("a", "a.b" of "a.b.c"), and with
 * self the name itself. One look-up a prefix, not a pass over the list.
 */
static void add_to_ancestors(module_list *ml, const char *name, bool self, int64_t bytes, bool activations)
{
	char key[512];
	size_t len = strlen(name);
	if (len >= sizeof(key)) { /* a name too long for the buffer: compare with every module, as a prefix */
		for (size_t k = 0; k < ml->count; k++) {
			const char *p = ml->items[k].path;
			size_t n = strlen(p);
			if (!n || (!strncmp(name, p, n) && (name[n] == '.' || (self && name[n] == '\0'))))
				*(activations ? &ml->items[k].activations : &ml->items[k].weights) += bytes;
		}
		return;
	}
	memcpy(key, name, len + 1);
	for (size_t n = 0;; n++) {
		bool boundary = n == 0 || key[n] == '.' || (self && key[n] == '\0');
		if (boundary) {
			char saved = key[n];
			key[n] = '\0';
			int *k = ti_strmap_get(&ml->index, key);
			key[n] = saved;
			if (k)
				*(activations ? &ml->items[*k].activations : &ml->items[*k].weights) += bytes;
		}
		if (key[n] == '\0')
			break;
	}
}

static void held_tensors(mem_builder *b, mem_unit *u, const ti_arg *a)
{
	if (a->kind == TI_ARG_TENSOR) {
		int id = mem_tensor_find(b, a->as.tensor);
		if (id >= 0 && u->nin < MEM_MAX_IO)
			u->in[u->nin++] = id;
	} else if (a->kind == TI_ARG_LIST) {
		for (int i = 0; i < a->as.list.count; i++)
			held_tensors(b, u, &a->as.list.items[i]);
	}
}

/* A name let go of its value: a unit that reads it last, so the value lives until here. */
static ti_status release_unit(mem_builder *b, const ti_arg *value, ti_error *err)
{
	mem_unit u;
	memset(&u, 0, sizeof(u));
	held_tensors(b, &u, value);
	if (!u.nin)
		return TI_OK;
	u.label = "(a name is bound again)";
	u.module = b->module;
	u.fwd_scratch_grad = -1;
	u.release = true;
	return mem_emit(b, &u, err);
}

/*
 * Every --checkpoint glob recomputes something: a module that matches it ran
 * a forward of its own (a step of the description called it, or its steps'
 * scopes name it). One that matches only a ModuleList, a ModuleDict or
 * modules that never run would change nothing, and says so.
 */
static ti_status check_segments(const mem_builder *b, ti_error *err)
{
	for (size_t g = 0; g < b->options->checkpoint_count; g++) {
		const char *glob = b->options->checkpoint[g];
		bool found = false;
		for (size_t i = 0; i < b->segment_count && !found; i++)
			found = !fnmatch(glob, b->segments[i].path, 0);
		if (!found)
			return TI_FAIL(err, TI_E_INVALID,
			               "--checkpoint '%s' matches no module whose forward runs in the step, so nothing would be "
			               "recomputed (a ModuleList or ModuleDict has no forward: name the modules it holds, as "
			               "'%s.*')", glob, glob);
	}
	return TI_OK;
}

static ti_status walk_children(mem_builder *b, module_list *ml, const mem_trace *tr, int id, ti_error *err)
{
	for (int c = tr->events[id].first_child; c >= 0; c = tr->events[c].next_sibling) {
		ti_status st = walk(b, ml, tr, c, err);
		if (st)
			return st;
	}
	return TI_OK;
}

/* A row that expands a call; on cuda its units name what the kernels PyTorch runs there make uncertain. */
static ti_status plan_by_rule(mem_builder *b, const mem_rule *rule, const mem_event *ev, ti_error *err)
{
	size_t first = b->unit_count;
	ti_status st = rule->plan(b, ev, err);
	if (!st && b->options->device == TI_MEMORY_CUDA)
		for (size_t k = first; k < b->unit_count; k++)
			b->units[k].depends |= rule->cuda_depends;
	return st;
}

/*
 * Whether path names one expert of a MoE layer ("...experts.3"): *parent_len
 * is then the length of the layer's path (up to ".experts").
 */
static bool expert_path(const char *path, size_t *parent_len)
{
	const char *dot = strrchr(path, '.');
	if (!dot || !dot[1] || dot - path < 7)
		return false;
	for (const char *c = dot + 1; *c; c++)
		if (*c < '0' || *c > '9')
			return false;
	size_t n = (size_t)(dot - path);
	if (n < 7 || strncmp(path + n - 7, "experts", 7) || (n > 7 && path[n - 8] != '.'))
		return false;
	*parent_len = n > 7 ? n - 8 : 0;
	return true;
}

/* An expert call's units [first, b->unit_count): its layer's routed token bytes, and its own transients. */
static void note_expert_call(mem_builder *b, const char *path, size_t parent_len, size_t first)
{
	if (first >= b->unit_count || b->units[first].nin < 1 || b->units[first].in[0] < 0)
		return;
	int64_t in = b->tensors[b->units[first].in[0]].bytes, made = 0;
	for (size_t u = first; u < b->unit_count; u++)
		for (int o = 0; o < b->units[u].nout; o++)
			if (b->tensors[b->units[u].out[o]].param < 0)
				made += b->tensors[b->units[u].out[o]].bytes;
	if (!b->moe_layer || b->moe_layer_len != parent_len || strncmp(b->moe_layer, path, parent_len)) {
		b->moe_layer = path;
		b->moe_layer_len = parent_len;
		b->moe_tokens = 0;
	}
	b->moe_tokens += in;
	if (b->moe_tokens > b->moe_tokens_max)
		b->moe_tokens_max = b->moe_tokens;
	if (made > b->moe_call_max)
		b->moe_call_max = made;
	b->moe_calls++;
}

static ti_status walk(mem_builder *b, module_list *ml, const mem_trace *tr, int id, ti_error *err)
{
	const mem_event *ev = &tr->events[id];
	int saved_module = b->module;
	const char *saved_path = b->module_path;
	bool saved_leaf = b->leaf_module_parent;
	ti_status st = TI_OK;
	if (ev->released) {
		st = release_unit(b, ev->released, err);
	} else if (ev->module) {
		const ti_module *mod = ev->module;
		int k = module_index(b, ml, mod->path, err);
		if (k < 0)
			return err->code;
		b->module = k;
		b->module_path = mod->path;
		/* torch.utils.checkpoint around a module: its units form one segment */
		bool opens = b->segment < 0 && *mod->path && b->options->checkpoint_count &&
		             glob_any(b->options->checkpoint, b->options->checkpoint_count, mod->path);
		if (opens) {
			if (ti_arena_array_grow(b->arena, (void **)&b->segments, &b->segment_capacity, sizeof(*b->segments),
			                        b->segment_count + 1))
				return TI_FAIL(err, TI_E_NOMEM, "out of memory");
			b->segments[b->segment_count] = (struct mem_segment){(int)b->unit_count, -1, mod->path};
			b->segment = (int)b->segment_count++;
		}
		const mem_rule *rule = mod->kind == TI_MODULE_LEAF ? mem_rule_find(ev->name, true) : NULL;
		size_t first_unit = b->unit_count, parent_len;
		bool expert = expert_path(mod->path, &parent_len);
		if (rule && ev->call)
			st = plan_by_rule(b, rule, ev, err);
		else {
			b->leaf_module_parent = mod->kind == TI_MODULE_LEAF;
			if (ev->first_child >= 0)
				st = walk_children(b, ml, tr, id, err);
			else if (ev->call) /* a leaf whose forward ran no operator: its outputs are new */
				st = mem_rule_default(b, ev, err);
		}
		if (opens) {
			b->segments[b->segment].last = (int)b->unit_count - 1;
			b->segment = -1;
		}
		if (!st && expert)
			note_expert_call(b, mod->path, parent_len, first_unit);
	} else if (ev->call) {
		const mem_rule *rule = mem_rule_find(ev->name, false);
		if (rule)
			st = plan_by_rule(b, rule, ev, err);
		else if (mem_rule_plain(ev->name) || ev->first_child < 0)
			st = mem_rule_plan_op(b, ev, err);
		else {
			b->leaf_module_parent = false;
			st = walk_children(b, ml, tr, id, err);
		}
	}
	b->module = saved_module;
	b->module_path = saved_path;
	b->leaf_module_parent = saved_leaf;
	return st;
}

/* ---- the ledger ---- */

typedef struct storage {
	int64_t bytes;
	ti_memory_kind kind;
	const char *name;
	int last_use;       /* the last forward unit that reads it; -1 none */
	int saved;          /* references from units that saved it for backward */
	int grad_refs;      /* gradients: pending references */
	bool pinned;        /* weights, buffers, inputs, optimizer state */
	bool output;        /* a model output */
	bool prior;         /* a .grad from an earlier micro-batch (gradient accumulation) */
	bool stage_output;  /* pipeline: sent to the next stage, whose gradient comes back */
	bool live;
	int block;          /* cuda: its block in the caching allocator's model */
	int module;
	unsigned depends;   /* its unit's uncertainty kinds (bits): scratch and what is saved beside */
} storage;

typedef struct ledger {
	storage *st;
	size_t count;
	int64_t live, high;             /* now; the most since the last point */
	int64_t peak;
	ti_memory_phase peak_phase;
	int peak_unit;
	long long moment, peak_moment;  /* a counter of allocations: where the peak was reached */
	long long stop_at;              /* >= 0: snapshot when moment reaches it */
	bool snapped;
	ti_memory_tensor *snap;
	size_t snap_count;
	ti_memory_phase phase;
	int unit;
	bool cuda;
	mem_cuda *allocator;            /* cuda: the caching allocator's model */
	ti_arena *arena;
	bool overflow;
} ledger;

static int64_t rounded(const ledger *l, int64_t bytes)
{
	if (!l->cuda || bytes == 0)
		return bytes;
	return (bytes + 511) / 512 * 512;
}

/* What a live storage counts for: its bytes, or the caching allocator's block (rounded, or a whole unsplit block). */
static int64_t held(const ledger *l, const storage *x)
{
	return l->allocator ? mem_cuda_block_size(l->allocator, x->block) : rounded(l, x->bytes);
}

/*
 * What is live now, a row a storage, but the KV cache in one row: a
 * prefill's is the keys and values each layer has made so far, beside the
 * block of what the step found cached.
 */
static void snapshot(ledger *l)
{
	size_t n = 0;
	for (size_t i = 0; i < l->count; i++)
		n += l->st[i].live && l->st[i].bytes > 0;
	l->snap = ti_arena_calloc(l->arena, n + 1, sizeof(*l->snap));
	if (!l->snap)
		return;
	ti_memory_tensor *cache = NULL;
	for (size_t i = 0; i < l->count; i++) {
		const storage *x = &l->st[i];
		if (!x->live || x->bytes <= 0)
			continue;
		if (x->kind == TI_MEM_KV_CACHE && cache) {
			cache->bytes += held(l, x);
			continue;
		}
		ti_memory_tensor *t = &l->snap[l->snap_count++];
		*t = (ti_memory_tensor){x->name, x->kind, held(l, x), x->depends};
		if (x->kind == TI_MEM_KV_CACHE) {
			t->name = "KV cache";
			cache = t;
		}
	}
	l->snapped = true;
}

static void alloc_storage(ledger *l, int s)
{
	storage *x = &l->st[s];
	if (x->live)
		return;
	x->live = true;
	if (l->allocator) {
		ti_error err;
		if (mem_cuda_malloc(l->allocator, x->bytes, &x->block, &err))
			l->overflow = true;
	}
	if (!mem_add(&l->live, held(l, x)))
		l->overflow = true;
	l->moment++;
	if (l->live > l->high)
		l->high = l->live;
	if (l->live > l->peak) {
		l->peak = l->live;
		l->peak_phase = l->phase;
		l->peak_unit = l->unit;
		l->peak_moment = l->moment;
	}
	if (l->stop_at >= 0 && l->moment == l->stop_at && !l->snapped)
		snapshot(l);
}

static void free_storage(ledger *l, int s)
{
	storage *x = &l->st[s];
	if (!x->live || x->pinned)
		return;
	x->live = false;
	l->live -= held(l, x);
	if (l->allocator) {
		mem_cuda_release(l->allocator, x->block);
		x->block = MEM_CUDA_NO_BLOCK;
	}
}

/* ---- the simulation ---- */

static bool l_pinned(const ledger *l, int st) { return l->st[st].pinned; }

typedef struct sim {
	mem_builder b;
	const ti_memory_options *opt;
	ledger l;
	size_t storage_capacity;
	int *pending;          /* per tensor: storage of its gradient, -1 none */
	int *param_tensor;     /* per model parameter: tensor id */
	bool *records;         /* per unit: it recorded a graph */
	unsigned *saved;       /* per unit: the inputs it saved (its saved_in less what no formula needed) */
	int *extra;            /* per unit: the storage of what it saved beside its inputs, -1 none */
	int *made_by;          /* per builder storage: the unit that makes it, -1 none (weights, inputs) */
	int *seg_mark;         /* per builder storage: scratch marks of hold_segment_inputs */
	size_t base_count;     /* storages made before play: the builder's, weights, optimizer state */
	int64_t optimizer_state, optimizer_scratch, param_bytes, buffer_bytes, input_bytes, grad_bytes;
	int64_t activations;
	int64_t *module_acts;  /* per module: what its calls leave live at the end of forward */
	size_t module_count;
	int64_t kv_bytes;
	int kv_sites, kv_causal, kv_unsized, kv_sliding, kv_compressed;
	int kv_fused;          /* sites whose keys or values view a fused projection's output, which they hold */
	int *kv_kept;          /* a prefill: the builder storages the cache is (a site's keys and values as made) */
	size_t kv_kept_count, kv_kept_cap;
	int64_t kv_kept_bytes; /* their bytes: the part of kv_bytes that is not booked as a block */
	int64_t experts, experts_held; /* expert modules, and those this rank holds (expert_shard) */
	int64_t ep_bytes;              /* expert parallelism: the all-to-all buffers, kept for the whole step */
	int64_t kv_widest;           /* the widest sliding window of a site */
	ti_memory_loss loss;   /* training: the loss resolved (sum, or cross-entropy over loss_tensor) */
	int loss_tensor;       /* cross-entropy: the logits' tensor; -1 none */
	int loss_saved;        /* cross-entropy: the storage of its log_softmax, saved until backward; -1 none */
	/* ZeRO-3 / FSDP: the wrapped units, each one's full parameter bytes and its first and last ledger unit */
	struct fsdp_unit { const char *path; int64_t bytes; int first, last, gather; } *fsdp;
	size_t fsdp_count;
	int fsdp_root;         /* the parameters no unit holds: gathered for the whole forward and backward, -1 none */
	int *unit_fsdp;        /* per ledger unit: its FSDP unit, -1 none */
	int64_t comm_bytes;    /* buckets kept for the whole step */
	bool *sent;            /* pipeline: per builder storage, sent to the next stage */
	bool *once_held;       /* a decode step: per builder storage, made at the prefill by what runs once, held */
	const char *optimizer_rule;
	ti_memory_point *points;
	size_t point_count, point_capacity;
} sim;

static int64_t ranks(const sim *s)
{
	return s->opt->strategy != TI_STRATEGY_NONE && s->opt->world_size > 1 ? s->opt->world_size : 1;
}

/* A rank's share of bytes partitioned over the world (rounded up, as flat parameters are padded). */
static int64_t shard(const sim *s, int64_t bytes)
{
	int64_t w = ranks(s);
	return (bytes + w - 1) / w;
}

static int add_storage(sim *s, int64_t bytes, ti_memory_kind kind, const char *name, int module)
{
	if (ti_arena_array_grow(s->l.arena, (void **)&s->l.st, &s->storage_capacity, sizeof(*s->l.st), s->l.count + 1))
		return -1;
	int id = (int)s->l.count++;
	s->l.st[id] = (storage){bytes, kind, name, -1, 0, 0, false, false, false, false, false, MEM_CUDA_NO_BLOCK, module, 0};
	return id;
}

static void transient(sim *s, int64_t bytes, ti_memory_kind kind, const char *name, unsigned depends)
{
	if (bytes <= 0)
		return;
	int id = add_storage(s, bytes, kind, name, 0);
	if (id < 0) {
		s->l.overflow = true;
		return;
	}
	s->l.st[id].depends = depends;
	alloc_storage(&s->l, id);
	free_storage(&s->l, id);
}

static void point(sim *s, const char *step)
{
	if (!ti_arena_array_grow(s->l.arena, (void **)&s->points, &s->point_capacity, sizeof(*s->points),
	                         s->point_count + 1))
		s->points[s->point_count++] = (ti_memory_point){s->l.phase, step, s->l.live, s->l.high};
	s->l.high = s->l.live;
}

/* Storage ids for the builder's storages: one per builder storage, in order, made before play. */
static ti_status make_storages(sim *s, ti_error *err)
{
	mem_builder *b = &s->b;
	for (int i = 0; i < b->storage_count; i++)
		if (add_storage(s, 0, TI_MEM_ACTIVATION, NULL, 0) < 0)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the ledger");
	/* a storage's size and name are those of the first tensor in it */
	for (size_t t = 0; t < b->tensor_count; t++) {
		storage *x = &s->l.st[b->tensors[t].storage];
		if (!x->name) {
			x->bytes = b->tensors[t].bytes;
			x->name = b->tensors[t].name;
		}
	}
	return TI_OK;
}

static bool unit_needs_grad(sim *s, const mem_unit *u)
{
	if (s->opt->mode != TI_MEMORY_TRAIN || !u->differentiable)
		return false;
	for (int i = 0; i < u->nin; i++)
		if (s->b.tensors[u->in[i]].grad)
			return true;
	return false;
}

/* Whether a saved input is needed: unconditionally (0), or one of the inputs in need wants a gradient. */
static bool wanted(sim *s, const mem_unit *u, unsigned need)
{
	if (!need)
		return true;
	for (int j = 0; j < u->nin; j++)
		if ((need & (1u << j)) && s->b.tensors[u->in[j]].grad)
			return true;
	return false;
}

typedef enum run_kind {
	RUN_FORWARD,   /* the forward pass */
	RUN_RECOMPUTE  /* a checkpointed module's forward again, in backward, recording */
} run_kind;

/* One unit's forward: its outputs, scratch, what it saves, and what dies after it. */
static void forward_unit(sim *s, size_t k, run_kind kind)
{
	mem_builder *b = &s->b;
	ledger *l = &s->l;
	const mem_unit *u = &b->units[k];
	l->unit = (int)k;
	bool rec = unit_needs_grad(s, u);
	/* in a checkpointed module the first forward runs under no_grad: nothing saved */
	bool keep = rec && (u->segment < 0 || kind == RUN_RECOMPUTE);
	s->records[k] = keep;
	for (int o = 0; o < u->nout; o++) {
		mem_tensor *t = &b->tensors[u->out[o]];
		t->grad = rec;
		if (!l->st[t->storage].live) /* a view or an in-place result stays its maker's */
			l->st[t->storage].module = u->module;
		alloc_storage(l, t->storage);
	}
	int64_t scratch = keep && u->fwd_scratch_grad >= 0 ? u->fwd_scratch_grad : u->fwd_scratch;
	bool cond_kept = keep && u->saved_cond_if && wanted(s, u, u->saved_cond_if);
	int64_t extra = u->saved_extra + (cond_kept ? u->saved_cond : 0);
	if (!cond_kept)
		scratch += u->saved_cond;
	if (keep) {
		s->saved[k] = 0;
		for (int i = 0; i < u->nin; i++)
			if ((u->saved_in & (1u << i)) && wanted(s, u, u->saved_if[i])) {
				s->saved[k] |= 1u << i;
				l->st[b->tensors[u->in[i]].storage].saved++;
			}
		for (int o = 0; o < u->nout; o++)
			if (u->saved_out & (1u << o))
				l->st[b->tensors[u->out[o]].storage].saved++;
		if (extra > 0) {
			int id = add_storage(s, extra, TI_MEM_SAVED, u->label, u->module);
			if (id < 0)
				l->overflow = true;
			else {
				l->st[id].saved = 1;
				l->st[id].depends = u->depends;
				alloc_storage(l, id);
				s->extra[k] = id;
			}
		}
	}
	/* the scratch comes on top of what the call keeps (a recurrent layer's stack of step outputs is made
	 * when every step's saved tensors exist); it does not depend on the thread count: the GEMM's reduction
	 * buffer, booked per thread, is the backward's */
	transient(s, scratch, TI_MEM_TEMPORARY, u->label, u->depends & ~MEM_UNCERTAIN(TI_UNCERTAIN_THREADS));
	/* what this unit was the last to read, and outputs nobody reads, die now */
	int seg_last = u->segment >= 0 ? b->segments[u->segment].last : -1;
	for (int side = 0; side < 2; side++) {
		const int *ids = side ? u->out : u->in;
		int n = side ? u->nout : u->nin;
		for (int i = 0; i < n; i++) {
			int st = b->tensors[ids[i]].storage;
			storage *x = &l->st[st];
			int last = x->last_use;
			if (kind == RUN_RECOMPUTE && last > seg_last)
				last = seg_last; /* recomputed for this backward only */
			if (last <= (int)k && !x->saved && !x->output)
				free_storage(l, st);
		}
	}
	if (!u->release)
		point(s, u->label);
}

/* A checkpointed module keeps its inputs (the tensors it reads that exist before it) until its backward. */
static void hold_segment_inputs(sim *s, int g, int delta)
{
	mem_builder *b = &s->b;
	const struct mem_segment *seg = &b->segments[g];
	for (int k = seg->first; k <= seg->last; k++) {
		const mem_unit *u = &b->units[k];
		for (int i = 0; i < u->nin; i++) {
			int t = u->in[i];
			int st = b->tensors[t].storage;
			if (s->made_by[st] >= seg->first || l_pinned(&s->l, st) || s->seg_mark[st] == g + 1)
				continue;
			s->seg_mark[st] = g + 1;
			s->l.st[st].saved += delta;
			if (delta < 0 && s->l.st[st].saved == 0)
				free_storage(&s->l, st);
		}
	}
	/* the marks are per segment: clear them for the next hold or release */
	for (int k = seg->first; k <= seg->last; k++)
		for (int i = 0; i < b->units[k].nin; i++)
			s->seg_mark[b->tensors[b->units[k].in[i]].storage] = 0;
}

/* FSDP: a unit's parameters are gathered before its first call and let go after its last. */
static void gather(sim *s, int f, bool on)
{
	if (f < 0 || s->fsdp[f].gather < 0)
		return;
	int st = s->fsdp[f].gather;
	s->l.st[st].pinned = false;
	if (on)
		alloc_storage(&s->l, st);
	else
		free_storage(&s->l, st);
}

static void forward(sim *s)
{
	mem_builder *b = &s->b;
	s->l.phase = TI_PHASE_FORWARD;
	if (s->unit_fsdp)
		gather(s, s->fsdp_root, true);
	for (size_t k = 0; k < b->unit_count; k++) {
		const mem_unit *u = &b->units[k];
		int f = s->unit_fsdp ? s->unit_fsdp[k] : -1;
		if (f >= 0 && s->fsdp[f].first == (int)k)
			gather(s, f, true);
		if (u->segment >= 0 && b->segments[u->segment].first == (int)k && s->opt->mode == TI_MEMORY_TRAIN)
			hold_segment_inputs(s, u->segment, +1);
		forward_unit(s, k, RUN_FORWARD);
		if (f >= 0 && s->fsdp[f].last == (int)k)
			gather(s, f, false);
	}
	if (s->unit_fsdp)
		gather(s, s->fsdp_root, false);
}

static void release_saved(sim *s, int k)
{
	mem_builder *b = &s->b;
	const mem_unit *u = &b->units[k];
	/* an output stays: the caller holds it until the backward ends */
	for (int i = 0; i < u->nin; i++)
		if (s->saved[k] & (1u << i)) {
			storage *x = &s->l.st[b->tensors[u->in[i]].storage];
			if (--x->saved == 0 && !x->output)
				free_storage(&s->l, b->tensors[u->in[i]].storage);
		}
	for (int o = 0; o < u->nout; o++)
		if (u->saved_out & (1u << o)) {
			storage *x = &s->l.st[b->tensors[u->out[o]].storage];
			if (--x->saved == 0 && !x->output)
				free_storage(&s->l, b->tensors[u->out[o]].storage);
		}
	if (s->extra[k] >= 0) {
		s->l.st[s->extra[k]].saved = 0;
		free_storage(&s->l, s->extra[k]);
		s->extra[k] = -1;
	}
	s->records[k] = false;
}

static void drop_grad(sim *s, int g)
{
	if (g >= 0 && --s->l.st[g].grad_refs <= 0)
		free_storage(&s->l, g);
}

/* Gives tensor t the gradient storage g (a reference taken), adding to one it has. */
static void accumulate(sim *s, int t, int g, const char *name)
{
	mem_builder *b = &s->b;
	mem_tensor *x = &b->tensors[t];
	if (x->param >= 0) {
		int have = s->pending[t];
		if (have >= 0 && (s->l.st[have].prior || (s->opt->strategy >= TI_STRATEGY_ZERO2 && ranks(s) > 1))) {
			/* added in place: AccumulateGrad's param.grad += g, or into the rank's reduce-scattered shard */
			drop_grad(s, g);
			return;
		}
		if (have >= 0) {
			/*
			 * A second gradient for a parameter in one backward (tied
			 * weights): the engine's input buffer adds the two out of place
			 * (measured on 1.13: three of the parameter's size at once), and
			 * the sum is what AccumulateGrad keeps.
			 */
			int sum = add_storage(s, x->bytes, TI_MEM_GRADIENT, name, s->l.st[have].module);
			if (sum < 0) {
				s->l.overflow = true;
				return;
			}
			alloc_storage(&s->l, sum);
			s->l.st[have].pinned = false;
			free_storage(&s->l, have);
			drop_grad(s, g);
			s->l.st[sum].pinned = true;
			s->pending[t] = sum;
			return;
		}
		if (s->opt->strategy >= TI_STRATEGY_ZERO2 && ranks(s) > 1) {
			/* reduce-scattered: the rank keeps its shard, the full gradient goes */
			int part = add_storage(s, shard(s, x->bytes), TI_MEM_GRADIENT, name, s->l.st[g].module);
			if (part < 0) {
				s->l.overflow = true;
				return;
			}
			alloc_storage(&s->l, part);
			drop_grad(s, g);
			s->l.st[part].pinned = true;
			s->l.st[part].grad_refs = 1;
			s->pending[t] = part;
			return;
		}
		s->l.st[g].kind = TI_MEM_GRADIENT;
		s->l.st[g].name = name;
		s->l.st[g].pinned = true; /* until zero_grad */
		s->pending[t] = g;
		return;
	}
	if (s->pending[t] >= 0) { /* InputBuffer: added in place, the new one dropped */
		drop_grad(s, g);
		return;
	}
	s->pending[t] = g;
}

/*
 * Backward formulas that multiply the output's gradient by a matrix take it
 * contiguous: the loss's gradient, an expanded scalar with no storage, is
 * copied out whole for them (measured on 1.13: Linear(512, 8000) on
 * [2, 512, 512] holds the 31 MiB copy beside both of its gradients). So do
 * the convolutions' backward kernels (mkldnn_convolution_backward's
 * grad_output.contiguous(), slow_conv2d's expect_contiguous: measured, a
 * 1x1 Conv2d ending a model at [16, 64, 32, 32] holds the 4 MiB copy beside
 * its reorders and the input's gradient), and GELU's, which hands the
 * gradient to oneDNN's eltwise_backward (measured: GELU ending a model
 * holds a copy of its output's size beside its input's gradient; the tanh
 * approximation's own kernel would not, and is counted the same). So do the
 * poolings' and the upsamplings' backward kernels, which index the gradient
 * as a contiguous array (measured on 1.13: max_pool2d, avg_pool2d, their
 * adaptive forms, max_pool1d, nearest and bilinear interpolation ending a
 * model each hold a copy of their output's size beside the input's gradient).
 */
static const char *const dense_grad_ops[] = {
	"linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
	"conv_transpose2d", "conv_transpose3d", "gelu", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
	"avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
	"adaptive_max_pool1d", "adaptive_max_pool2d", "interpolate", "upsample", "upsample_nearest",
	"upsample_bilinear", NULL};

static int64_t expanded_grad_copy(const sim *s, const mem_unit *u, int go)
{
	if (go < 0 || s->l.st[go].bytes || !u->nout)
		return 0;
	/* on CUDA GELU's backward is a TensorIterator kernel, which reads a stride-0 gradient as it is
	   (measured on an H200: a GELU ending a model holds no copy) */
	if (s->b.options->device == TI_MEMORY_CUDA && u->op && !strcmp(u->op, "gelu"))
		return 0;
	for (const char *const *n = dense_grad_ops; *n; n++)
		if (u->op && !strcmp(u->op, *n))
			return s->b.tensors[u->out[0]].bytes;
	return 0;
}

static void backward(sim *s)
{
	mem_builder *b = &s->b;
	ledger *l = &s->l;
	l->phase = TI_PHASE_BACKWARD;
	if (s->unit_fsdp)
		gather(s, s->fsdp_root, true);
	for (size_t k = b->unit_count; k-- > 0;) {
		const mem_unit *u = &b->units[k];
		if (u->segment >= 0 && b->segments[u->segment].last == (int)k) {
			/* checkpoint's backward: the module's forward again, recording, then its backward below */
			const struct mem_segment *seg = &b->segments[u->segment];
			for (int j = seg->first; j <= seg->last; j++)
				forward_unit(s, (size_t)j, RUN_RECOMPUTE);
			l->unit = (int)k;
			hold_segment_inputs(s, u->segment, -1);
		}
		int f = s->unit_fsdp ? s->unit_fsdp[k] : -1;
		if (f >= 0 && s->fsdp[f].last == (int)k) {
			gather(s, f, true);
			/* BACKWARD_PRE: the next unit backward reaches is gathered now */
			int next = -1;
			for (size_t g = 0; g < s->fsdp_count; g++)
				if ((int)g != s->fsdp_root && s->fsdp[g].last < s->fsdp[f].first && s->fsdp[g].last >= 0 &&
				    (next < 0 || s->fsdp[g].last > s->fsdp[next].last))
					next = (int)g;
			gather(s, next, true);
		}
		if (f >= 0 && s->fsdp[f].first == (int)k && !s->records[k])
			gather(s, f, false);
		if (!s->records[k])
			continue;
		l->unit = (int)k;
		bool any = false;
		for (int o = 0; o < u->nout; o++)
			any |= s->pending[u->out[o]] >= 0;
		if (!any)
			continue;
		int go = s->pending[u->out[0]];
		bool in_grad = u->bwd_scratch_in > 0 && u->nin && b->tensors[u->in[0]].grad;
		int64_t scratch = in_grad ? u->bwd_scratch_in : u->bwd_scratch;
		if (u->bwd_scratch_no_go[in_grad] > 0 && (go < 0 || s->l.st[go].bytes != b->tensors[u->out[0]].bytes))
			scratch = u->bwd_scratch_no_go[in_grad];
		int64_t reduce = go >= 0 && !s->l.st[go].bytes ? u->bwd_reduce_expanded : u->bwd_reduce;
		for (int i = 0; i < u->nin; i++) /* a gradient summed to its input's shape: CUDA's reduction buffer */
			if ((u->bwd_reduce_if & (1u << i)) && b->tensors[u->in[i]].grad && !mem_add(&scratch, reduce)) {
				l->overflow = true;
				return;
			}
		if (u->bwd_whole) {
			transient(s, scratch, TI_MEM_TEMPORARY, u->label, u->depends);
			release_saved(s, (int)k);
		}
		/* the backward's scratch lives beside the gradients it makes (BatchNorm's, mkldnn's reorders: measured),
		 * as does the loss's gradient made contiguous */
		int64_t beside = expanded_grad_copy(s, u, go);
		if (!u->bwd_whole && !mem_add(&beside, scratch)) {
			l->overflow = true;
			return;
		}
		int beside_id = beside ? add_storage(s, beside, TI_MEM_TEMPORARY, u->label, u->module) : -1;
		if (beside && beside_id < 0) {
			l->overflow = true;
			return;
		}
		if (beside_id >= 0) {
			l->st[beside_id].depends = u->depends;
			alloc_storage(l, beside_id); /* live while the formulas make this unit's gradients */
		}
		int made[MEM_MAX_IO], grads[MEM_MAX_IO], nmade = 0;
		for (int i = 0; i < u->nin; i++) {
			int t = u->in[i];
			if (!b->tensors[t].grad)
				continue;
			bool repeat = false;
			for (int j = 0; j < i; j++)
				repeat |= u->in[j] == t;
			if (repeat)
				continue;
			int g;
			if ((u->grad_view & (1u << i)) && u->out_kind != MEM_OUT_INPLACE && go >= 0) {
				g = go; /* a view of the output's gradient, or that gradient itself (add) */
			} else {
				const mem_tensor *x = &b->tensors[t];
				g = add_storage(s, x->bytes, x->param >= 0 ? TI_MEM_GRADIENT : TI_MEM_ACT_GRADIENT,
				                x->param >= 0 ? x->name : ti_arena_printf(l->arena, "grad of %s", x->name ? x->name : "?"),
				                u->module);
				if (g < 0) {
					l->overflow = true;
					return;
				}
				alloc_storage(l, g);
			}
			s->l.st[g].grad_refs++;
			made[nmade] = t;
			grads[nmade++] = g;
		}
		if (beside_id >= 0)
			free_storage(l, beside_id);
		/* the backward returns all its gradients at once; then the engine hands each on */
		for (int i = 0; i < nmade; i++)
			accumulate(s, made[i], grads[i], b->tensors[made[i]].name);
		if (!u->bwd_whole)
			release_saved(s, (int)k);
		if (f >= 0 && s->fsdp[f].first == (int)k)
			gather(s, f, false);
		for (int o = 0; o < u->nout; o++) {
			int t = u->out[o];
			if (s->pending[t] >= 0) {
				drop_grad(s, s->pending[t]);
				s->pending[t] = -1;
			}
		}
		point(s, u->label);
	}
	if (s->unit_fsdp)
		gather(s, s->fsdp_root, false);
	/* what never ran backward lets go of what it saved when the graph is freed */
	for (size_t k = 0; k < b->unit_count; k++)
		if (s->records[k])
			release_saved(s, (int)k);
	for (size_t t = 0; t < b->tensor_count; t++)
		if (b->tensors[t].param < 0 && s->pending[t] >= 0) {
			drop_grad(s, s->pending[t]);
			s->pending[t] = -1;
		}
}

/* ---- the KV cache: keys and values of every attention step ---- */

static bool op_in(const char *op, const char *const *names)
{
	for (; op && *names; names++)
		if (!strcmp(op, *names))
			return true;
	return false;
}

/* Follows a tensor back through the units whose op is one of names; masked is set when a masking op is passed. */
static int back_through(const mem_builder *b, int t, const char *const *names, bool *masked)
{
	for (int guard = 0; t >= 0 && guard < 16; guard++) {
		int p = b->tensors[t].producer;
		if (p < 0 || !op_in(b->units[p].op, names) || !b->units[p].nin)
			return p;
		if (masked && op_in(b->units[p].op, (const char *const[]){"masked_fill", "where", "add", NULL}))
			*masked = true;
		t = b->units[p].in[0];
	}
	return -1;
}

/*
 * One site's cache: its keys' and values' bytes, at the length the options
 * ask (kv_tokens, capped by the site's sliding window) and in kv_dtype. The length the
 * tensors have is the values' rows (attn [.., T, S] @ v [.., S, hd]: S);
 * when it is unknown the bytes stay as they are and *unsized counts it.
 */
static int64_t kv_site_bytes(sim *s, int key, int value, int64_t window, int64_t compressed, int *unsized,
                             bool *as_made)
{
	const mem_tensor *k = &s->b.tensors[key], *v = &s->b.tensors[value];
	*as_made = false;
	int64_t bytes = k->bytes + v->bytes, rows = v->rows;
	int64_t tokens = s->opt->kv_tokens > 0 ? s->opt->kv_tokens : rows;
	if (window > 0 && tokens > window)
		tokens = window;
	if (compressed > 0 && k->lead > 0 && k->elsize > 0) {
		/* MLA's compressed cache: batch x tokens x (kv_lora_rank + qk_rope_head_dim) elements, one latent a
		   token shared by every head, in the keys' dtype (kv_dtype below converts it like the rest) */
		int64_t n;
		if (!mem_mul(k->lead, tokens, &n) || !mem_mul(n, compressed, &n) || !mem_mul(n, k->elsize, &bytes))
			return -1;
		rows = tokens;
	} else if (!s->opt->kv_dtype && (window <= 0 || tokens == rows || s->opt->kv_tokens > 0)) {
		/*
		 * Hugging Face's DynamicCache keeps the key and value tensors the layer made:
		 * one that views a fused projection's output (GPT-2's c_attn split, GPT-NeoX's
		 * and Phi-3's value sliced from their qkv) keeps that whole storage, until a
		 * decode step's torch.cat replaces it (measured on 1.13: GPT-2 holds its
		 * queries beside the cache). In the cache's own dtype it is a copy.
		 */
		int64_t held = s->l.st[k->storage].bytes;
		if (v->storage != k->storage)
			held += s->l.st[v->storage].bytes;
		if (held > bytes && rows > 0 && held % rows == 0) {
			bytes = held;
			s->kv_fused++;
		}
		/* a prefill's cache is the keys and values the layer made, whole: their storages, not a copy */
		*as_made = tokens == rows && bytes == held;
	}
	if (tokens != rows) {
		if (rows <= 0 || bytes % rows)
			(*unsized)++;
		else if (!mem_mul(bytes / rows, tokens, &bytes))
			return -1;
	}
	/* another element size: the same elements (keys and values share the model's dtype) */
	if (s->opt->kv_dtype && k->elsize > 0 && bytes % k->elsize == 0 &&
	    !mem_mul(bytes / k->elsize, (int64_t)ti_dtype_size(s->opt->kv_dtype), &bytes))
		return -1;
	return bytes;
}

/* The first input of t's producer when that is one of ops; else -1. */
static int made_from(const mem_builder *b, int t, const char *const *ops)
{
	int p = t >= 0 ? b->tensors[t].producer : -1;
	if (p < 0 || !op_in(b->units[p].op, ops) || !b->units[p].nin)
		return -1;
	return b->units[p].in[0];
}

/*
 * The tensor a repeat (repeat_interleave, expand, repeat) of t was made from, through any number of them; else t.
 * Hugging Face's repeat_kv, x[:, :, None].expand(...).reshape(...), is one too: the reshape of an expand, and the
 * new axis the expand fills.
 */
static int before_repeats(const mem_builder *b, int t)
{
	static const char *const repeats[] = {"repeat_interleave", "expand", "repeat", NULL};
	static const char *const reshapes[] = {"reshape", "flatten", "view", NULL};
	static const char *const new_axis[] = {"getitem", "unsqueeze", NULL};
	int r = made_from(b, t, reshapes);
	if (r >= 0 && made_from(b, r, repeats) >= 0)
		t = r;
	bool repeated = false;
	for (int guard = 0; t >= 0 && guard < 16; guard++) {
		int in = made_from(b, t, repeats);
		if (in < 0)
			break;
		t = in;
		repeated = true;
	}
	int base = repeated ? made_from(b, t, new_axis) : -1;
	if (base >= 0 && b->tensors[base].bytes == b->tensors[t].bytes)
		t = base;
	return t;
}

/*
 * Records the storages of a site's keys and values as the cache's own (a
 * prefill's DynamicCache keeps the tensors the layer made); false when one
 * is already the cache's, a weight or an input, or there is no room: the
 * site is then booked as a block like a copy.
 */
static bool keep_kv_storages(sim *s, int key, int value)
{
	int st[2] = {s->b.tensors[key].storage, s->b.tensors[value].storage};
	int n = st[1] == st[0] ? 1 : 2;
	for (int i = 0; i < n; i++) {
		bool prefill_made = s->once_held && s->once_held[st[i]]; /* held as an input: the prefill's */
		if (!prefill_made && (s->l.st[st[i]].pinned || s->made_by[st[i]] < 0))
			return false;
		for (size_t j = 0; j < s->kv_kept_count; j++)
			if (s->kv_kept[j] == st[i])
				return false;
	}
	if (ti_arena_array_grow(s->b.arena, (void **)&s->kv_kept, &s->kv_kept_cap, sizeof(*s->kv_kept),
	                        s->kv_kept_count + (size_t)n))
		return false;
	for (int i = 0; i < n; i++)
		s->kv_kept[s->kv_kept_count++] = st[i];
	return true;
}

/* The fused kernels of F.scaled_dot_product_attention (expand_attention.c): q, k, v their first inputs. */
static const char *const fused_attention[] = {"_scaled_dot_product_flash_attention",
                                              "_scaled_dot_product_efficient_attention",
                                              "_scaled_dot_product_flash_attention_for_cpu", NULL};

/*
 * An attention step is output = P(softmax(S(q, k^T) [masked, scaled])) @ v:
 * every matmul whose first operand comes from a softmax whose input comes
 * from a matmul of a transposed operand, or a fused kernel that keeps no
 * scores. Its cache holds k and v: their own tensors, so a grouped-query
 * model's kv_heads, not the query's heads. *bytes is TI_MEMORY_MAX_BYTES
 * when the sum passes it.
 */
static void find_kv(sim *s, int64_t *bytes, int *sites, int *causal, int *unsized, int *sliding, int *compressed)
{
	static const char *const passthrough[] = {"dropout", "to", "type_as", "float", "half", "bfloat16", "contiguous", NULL};
	static const char *const scoring[] = {"masked_fill", "where", "add", "div", "mul", "sub", "to", "float", NULL};
	static const char *const products[] = {"matmul", "bmm", "baddbmm", NULL};
	static const char *const transposes[] = {"transpose", "permute", "t", "swapaxes", "swapdims", NULL};
	static const char *const scaling[] = {"mul", "div", NULL};
	mem_builder *b = &s->b;
	*bytes = 0;
	*sites = *causal = *unsized = *sliding = *compressed = 0;
	s->kv_fused = 0;
	s->kv_kept_count = 0;
	s->kv_kept_bytes = 0;
	for (size_t k = 0; k < b->unit_count; k++) {
		const mem_unit *u = &b->units[k];
		int key, value;
		bool masked = false;
		if (u->no_cache)
			continue; /* an encoder's attention: generation runs it once, it caches nothing */
		if (op_in(u->op, fused_attention) && u->nin >= 3) {
			key = u->in[1];
			value = u->in[2];
			masked = u->causal;
		} else {
			if (!op_in(u->op, products) || u->nin < 2)
				continue;
			int sm = back_through(b, u->in[0], passthrough, NULL);
			if (sm < 0 || strcmp(b->units[sm].op, "softmax") || !b->units[sm].nin)
				continue;
			int q = back_through(b, b->units[sm].in[0], scoring, &masked);
			if (q < 0 || !op_in(b->units[q].op, products) || b->units[q].nin < 2)
				continue;
			masked |= !strcmp(b->units[q].op, "baddbmm");
			/* k^T, scaled on its own by 2.x's math kernel (k^T * sqrt(scale)) */
			int tp = back_through(b, b->units[q].in[1], scaling, NULL);
			if (tp < 0 || !op_in(b->units[tp].op, transposes) || !b->units[tp].nin)
				continue;
			key = b->units[tp].in[0];
			value = u->in[1];
		}
		/* a grouped-query step's k and v repeated to the query's heads, or copied for the matmul (a strided view
		   made contiguous): the cache holds them before */
		static const char *const copies[] = {"contiguous", NULL};
		key = before_repeats(b, key);
		value = before_repeats(b, value);
		if (made_from(b, key, copies) >= 0)
			key = made_from(b, key, copies);
		if (made_from(b, value, copies) >= 0)
			value = made_from(b, value, copies);
		/* a description's window caps the decode step's cache (kv_tokens): a prefill holds the whole context, as
		   transformers' DynamicSlidingWindowLayer keeps a view of the prefill's keys until the next step;
		   --sliding-window caps both, as a static sliding cache does */
		int64_t window = s->opt->kv_window > 0 || s->opt->kv_tokens > 0 ? u->kv_window : 0;
		bool as_made;
		int64_t site;
		int sk = b->tensors[key].storage, sv = b->tensors[value].storage;
		if (s->once_held && s->once_held[sk] && s->once_held[sv]) {
			/* keys and values the prefill made from what runs once (T5's cross-attention's): the cache holds
			   them as they are, at their own length */
			site = s->l.st[sk].bytes + (sv != sk ? s->l.st[sv].bytes : 0);
			as_made = true;
		} else {
			site = kv_site_bytes(s, key, value, window, u->kv_compressed, unsized, &as_made);
		}
		if (site > 0 && as_made && keep_kv_storages(s, key, value) && !mem_add(&s->kv_kept_bytes, site))
			s->kv_kept_bytes = TI_MEMORY_MAX_BYTES;
		*compressed += u->kv_compressed > 0;
		*sliding += window > 0;
		if (window > s->kv_widest)
			s->kv_widest = window;
		if (site < 0 || !mem_add(bytes, site))
			*bytes = TI_MEMORY_MAX_BYTES;
		(*sites)++;
		*causal += masked;
	}
}

/* ---- setup: weights, inputs, what each storage is ---- */

static bool trains(const ti_memory_options *o, const ti_model_param *p)
{
	if (p->buffer || !p->trainable || !ti_dtype_is_floating(p->dtype))
		return false;
	if (o->trainable_count && !glob_any(o->trainable, o->trainable_count, p->name))
		return false;
	return !glob_any(o->frozen, o->frozen_count, p->name);
}

/* Parameter i's dtype: --dtype for a floating one, else as a checkpoint holds it, else as described. */
static ti_dtype param_dtype(const ti_memory_options *o, const ti_model_param *p, size_t i)
{
	if (o->dtype && ti_dtype_is_floating(p->dtype) && !glob_any(o->keep_dtype, o->keep_dtype_count, p->name))
		return o->dtype;
	if (o->param_dtypes && !(p->buffer && !p->persistent) && o->param_dtypes[i]) /* --weights: the state dict's */
		return o->param_dtypes[i];
	return p->dtype;
}

static int64_t param_bytes(const ti_memory_options *o, const ti_model_param *p, size_t i)
{
	int64_t n = 1;
	for (int k = 0; k < p->ndim; k++)
		if (!mem_mul(n, p->shape[k], &n))
			return -1;
	/* in bits, then bytes: a sub-byte dtype (a safetensors checkpoint's, --weights) is packed, its last byte whole */
	int64_t bits;
	return mem_mul(n, (int64_t)ti_dtype_bits(param_dtype(o, p, i)), &bits) ? (bits + 7) / 8 : -1;
}

static ti_status map_params(sim *s, ti_error *err)
{
	mem_builder *b = &s->b;
	ti_model *m = b->model;
	s->param_tensor = ti_arena_calloc(b->arena, m->param_count_all + 1, sizeof(*s->param_tensor));
	if (!s->param_tensor)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (size_t i = 0; i < m->param_count_all; i++) {
		const ti_model_param *p = &m->params[i];
		/* a quantized checkpoint's stored tensors are its weight's bytes, which the weight's entry counts */
		const ti_meta_tensor *meta = p->stores ? NULL : ti_module_tensor_get(m->param_modules[i], m->param_locals[i]);
		int id = -1;
		if (p->tied_to)
			for (size_t j = 0; j < i && id < 0; j++)
				if (!strcmp(m->params[j].name, p->tied_to))
					id = s->param_tensor[j];
		/* --weights: a parameter a quantized checkpoint holds, at its bytes there */
		int64_t held = s->opt->param_bytes && !p->tied_to ? s->opt->param_bytes[i] : 0;
		bool quantized = held > 0 || mem_quantized(m, s->opt, i);
		if (id < 0) {
			const ti_memory_options *o = s->opt;
			bool gptq = o->quantize == TI_QUANT_GPTQ || o->quantize == TI_QUANT_AWQ;
			int64_t bytes = p->stores ? 0
			              : held > 0 ? held
			              : !quantized ? param_bytes(o, p, i)
			              : gptq ? ti_memory_gptq_bytes(o->quantize == TI_QUANT_AWQ, o->quant_bits, o->quant_group,
			                                            mem_quant_rows(m, i), p->shape[0] * p->shape[1] /
			                                            mem_quant_rows(m, i))
			              : o->quantize == TI_QUANT_FP8
			                     ? ti_memory_fp8_bytes(o->quant_group > 0 ? o->quant_group : 128, mem_quant_rows(m, i),
			                                           p->shape[0] * p->shape[1] / mem_quant_rows(m, i))
			                     : ti_memory_quant_bytes(o->quantize, o->quant_double, mem_quant_rows(m, i),
			                                             p->shape[0] * p->shape[1] / mem_quant_rows(m, i));
			if (bytes < 0)
				return TI_FAIL(err, TI_E_LIMIT, "'%s' is larger than %lld bytes", p->name,
				               (long long)TI_MEMORY_MAX_BYTES);
			id = mem_tensor_new(b, bytes, p->name);
			if (id < 0)
				return TI_FAIL(err, TI_E_NOMEM, "out of memory");
			b->tensors[id].param = (int)i;
			b->tensors[id].grad = !quantized && trains(s->opt, p); /* a bitsandbytes weight does not train */
			mem_tensor_dtype(b, id, quantized ? (s->opt->quantize == TI_QUANT_INT8 ? TI_DT_INT8
			                                     : s->opt->quantize == TI_QUANT_FP8 ? TI_DT_FLOAT8_E4M3FN
			                                     : gptq ? TI_DT_INT32 : TI_DT_UINT8)
			                                  : param_dtype(s->opt, p, i));
		}
		s->param_tensor[i] = id;
		if (meta && mem_tensor_bind(b, meta, id))
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	}
	return TI_OK;
}

/*
 * Whether a parameter belongs to one expert of a MoE layer ("...experts.3.w1.weight"): *prefix_len is then the
 * length of the name up to "experts.", *index the expert's number.
 */
static bool expert_param(const char *name, size_t *prefix_len, int64_t *index)
{
	for (const char *p = strstr(name, "experts."); p; p = strstr(p + 1, "experts.")) {
		if (p != name && p[-1] != '.')
			continue;
		const char *d = p + strlen("experts.");
		int64_t n = 0;
		const char *c = d;
		for (; *c >= '0' && *c <= '9' && n < 1000000; c++)
			n = n * 10 + (*c - '0');
		if (c == d || *c != '.')
			continue;
		*prefix_len = (size_t)(p - name);
		*index = n;
		return true;
	}
	return false;
}

/* A causal language model's class, as transformers names them: LlamaForCausalLM, GPT2LMHeadModel. */
static bool causal_lm_class(const char *name)
{
	static const char *const tails[] = {"ForCausalLM", "LMHeadModel"};
	size_t n = name ? strlen(name) : 0;
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		size_t k = strlen(tails[i]);
		if (n >= k && !strcmp(name + n - k, tails[i]))
			return true;
	}
	return false;
}

/*
 * Expert parallelism over K ranks: rank 0 (the one that holds the most) keeps experts 0 .. ceil(E/K) - 1 of
 * every MoE layer of E experts, the others none of their bytes; everything else is replicated. Counts the
 * experts and those held either way (s->experts, s->experts_held).
 */
static void expert_shard(sim *s)
{
	mem_builder *b = &s->b;
	ti_model *m = b->model;
	int64_t k = s->opt->expert_parallel > 1 ? s->opt->expert_parallel : 1;
	const char *layer = NULL;
	size_t layer_len = 0;
	int64_t held = 0;
	for (size_t i = 0; i < m->param_count_all; i++) {
		size_t len;
		int64_t n;
		const char *name = m->params[i].name;
		if (!expert_param(name, &len, &n))
			continue;
		if (!layer || len != layer_len || strncmp(layer, name, len)) { /* a new layer: its experts follow */
			int64_t e = 0;
			for (size_t j = i; j < m->param_count_all; j++) {
				size_t l2;
				int64_t n2;
				if (!expert_param(m->params[j].name, &l2, &n2) || l2 != len || strncmp(m->params[j].name, name, len))
					break;
				if (n2 + 1 > e)
					e = n2 + 1;
			}
			layer = name;
			layer_len = len;
			held = (e + k - 1) / k;
			s->experts += e;
			s->experts_held += held;
		}
		if (k > 1 && n >= held && !m->params[i].tied_to)
			b->tensors[s->param_tensor[i]].bytes = 0;
	}
}

static ti_memory_loss loss_of(const ti_memory_options *o, const ti_model *m)
{
	if (o->loss != TI_LOSS_DEFAULT)
		return o->loss;
	return causal_lm_class(m->class_name) ? TI_LOSS_CROSS_ENTROPY : TI_LOSS_SUM;
}

/* After the builder ran: what every storage is, and when it is last read. */
static ti_status classify(sim *s, const ti_model_report *rep, ti_error *err)
{
	mem_builder *b = &s->b;
	ti_model *m = b->model;
	expert_shard(s);
	int64_t k = s->opt->tensor_parallel;
	for (size_t t = 0; t < b->tensor_count && k > 1; t++) /* a rank's share of each split parameter, and of its .grad */
		if (b->tensors[t].tp_shard)
			b->tensors[t].bytes = (b->tensors[t].bytes + k - 1) / k;
	ti_status st = make_storages(s, err);
	if (st)
		return st;
	bool *made = ti_arena_calloc(b->arena, (size_t)b->storage_count + 1, sizeof(*made));
	if (!made)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	s->made_by = ti_arena_calloc(b->arena, (size_t)b->storage_count + 1, sizeof(*s->made_by));
	s->seg_mark = ti_arena_calloc(b->arena, (size_t)b->storage_count + 1, sizeof(*s->seg_mark));
	if (!s->made_by || !s->seg_mark)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (int i = 0; i < b->storage_count; i++)
		s->made_by[i] = -1;
	for (size_t k = 0; k < b->unit_count; k++) {
		const mem_unit *u = &b->units[k];
		for (int i = 0; i < u->nin; i++)
			s->l.st[b->tensors[u->in[i]].storage].last_use = (int)k;
		if (u->out_kind == MEM_OUT_NEW)
			for (int o = 0; o < u->nout; o++) {
				int st = b->tensors[u->out[o]].storage;
				made[st] = true;
				if (s->made_by[st] < 0)
					s->made_by[st] = (int)k;
			}
	}
	bool *read = ti_arena_calloc(b->arena, (size_t)b->storage_count + 1, sizeof(*read));
	if (!read)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (size_t k = 0; k < b->unit_count; k++)
		for (int i = 0; i < b->units[k].nin; i++)
			read[b->tensors[b->units[k].in[i]].storage] = true;
	for (size_t i = 0; i < m->param_count_all; i++) {
		int t = s->param_tensor[i];
		storage *x = &s->l.st[b->tensors[t].storage];
		if (s->sent && !read[b->tensors[t].storage]) { /* another stage's */
			made[b->tensors[t].storage] = true;
			b->tensors[t].grad = false;
			continue;
		}
		if (x->pinned)
			continue; /* tied: counted once */
		x->pinned = true;
		x->kind = m->params[i].buffer ? TI_MEM_BUFFER : TI_MEM_WEIGHT;
		if (s->opt->strategy == TI_STRATEGY_ZERO3 && !m->params[i].buffer)
			x->bytes = shard(s, x->bytes); /* FULL_SHARD: the rank's part of each flat parameter */
		if (!mem_add(m->params[i].buffer ? &s->buffer_bytes : &s->param_bytes, x->bytes))
			return TI_FAIL(err, TI_E_LIMIT, "weights past %lld bytes", (long long)TI_MEMORY_MAX_BYTES);
		made[b->tensors[t].storage] = true;
	}
	for (int i = 0; i < b->storage_count; i++)
		if (!made[i] && (s->once_held ? read[i] || s->once_held[i] : !s->sent || read[i])) {
			/* the model's inputs, what no call made, what a stage receives, what the prefill left */
			storage *x = &s->l.st[i];
			x->pinned = true;
			x->kind = TI_MEM_INPUT;
			if (!x->name)
				x->name = "input";
			if (!mem_add(&s->input_bytes, x->bytes))
				return TI_FAIL(err, TI_E_LIMIT, "inputs past %lld bytes", (long long)TI_MEMORY_MAX_BYTES);
		}
	for (size_t i = 0; i < m->input_count; i++) {
		int t = m->inputs[i].meta ? mem_tensor_find(b, m->inputs[i].meta) : -1;
		if (t >= 0)
			s->l.st[b->tensors[t].storage].name = m->inputs[i].name;
	}
	for (int i = 0; s->sent && i < b->storage_count; i++)
		if (s->sent[i]) {
			s->l.st[i].output = true;
			s->l.st[i].stage_output = true;
		}
	for (size_t i = 0; i < rep->output_count && !s->sent; i++) {
		int t = rep->outputs[i].meta ? mem_tensor_find(b, rep->outputs[i].meta) : -1;
		if (t >= 0)
			s->l.st[b->tensors[t].storage].output = true;
	}
	s->loss = loss_of(s->opt, m);
	s->loss_tensor = s->loss_saved = -1;
	if (s->loss == TI_LOSS_CROSS_ENTROPY && !s->sent && rep->output_count && rep->outputs[0].meta) {
		int t = mem_tensor_find(b, rep->outputs[0].meta);
		if (t >= 0 && b->tensors[t].param < 0 && b->tensors[t].floating)
			s->loss_tensor = t; /* the logits, when they need a gradient (play checks: the grads are marked later) */
	}
	return TI_OK;
}

static ti_status optimizer_setup(sim *s, ti_error *err)
{
	mem_builder *b = &s->b;
	ti_model *m = b->model;
	if (s->opt->mode != TI_MEMORY_TRAIN)
		return TI_OK;
	mem_param_info *info = ti_arena_calloc(b->arena, m->param_count_all + 1, sizeof(*info));
	if (!info)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	size_t n = 0;
	for (size_t i = 0; i < m->param_count_all; i++) {
		const ti_model_param *p = &m->params[i];
		const mem_tensor *t = &b->tensors[s->param_tensor[i]];
		if (p->tied_to || !t->grad)
			continue;
		int64_t numel = 1;
		for (int k = 0; k < p->ndim; k++)
			numel *= p->shape[k];
		info[n++] = (mem_param_info){t->bytes, numel, p->ndim, p->shape,
		                             param_dtype(s->opt, p, i)};
		if (!mem_add(&s->grad_bytes, t->bytes))
			return TI_FAIL(err, TI_E_LIMIT, "gradients past %lld bytes", (long long)TI_MEMORY_MAX_BYTES);
	}
	mem_optim_cost cost;
	ti_status st = mem_optim_cost_of(s->opt, info, n, &cost, &s->optimizer_rule, err);
	if (st)
		return st;
	if (s->opt->optimizer_state_bytes > 0) {
		cost.state = s->opt->optimizer_state_bytes;
		s->optimizer_rule = "the optimizer state the checkpoint holds";
	}
	if (s->opt->strategy >= TI_STRATEGY_ZERO1) { /* each rank steps its own partition */
		cost.state = shard(s, cost.state);
		cost.step_scratch = shard(s, cost.step_scratch);
	}
	if (s->opt->strategy >= TI_STRATEGY_ZERO2)
		s->grad_bytes = shard(s, s->grad_bytes);
	int64_t bucket = s->opt->bucket_bytes > 0 ? s->opt->bucket_bytes : (int64_t)25 << 20;
	s->comm_bytes = s->opt->strategy == TI_STRATEGY_DDP || s->opt->strategy == TI_STRATEGY_ZERO1 ? s->grad_bytes
	              : s->opt->strategy == TI_STRATEGY_ZERO2 ? (s->grad_bytes * ranks(s) < bucket ? s->grad_bytes * ranks(s) : bucket)
	              : 0;
	if (s->comm_bytes > 0) {
		int id = add_storage(s, s->comm_bytes, TI_MEM_COMM, s->opt->strategy == TI_STRATEGY_ZERO2
		                     ? "reduce-scatter bucket" : "DDP gradient buckets", 0);
		if (id < 0)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
		s->l.st[id].pinned = true;
	}
	s->optimizer_state = cost.state;
	s->optimizer_scratch = cost.step_scratch;
	if (cost.state) {
		int id = add_storage(s, cost.state, TI_MEM_OPTIMIZER_STATE, "optimizer state", 0);
		if (id < 0)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
		s->l.st[id].pinned = true;
	}
	return TI_OK;
}

/* ---- ZeRO-3 / FSDP: the wrapped units ---- */

static bool numbered(const char *path)
{
	const char *last = strrchr(path, '.');
	last = last ? last + 1 : path;
	return *last && strspn(last, "0123456789") == strlen(last);
}

static int path_depth(const char *path)
{
	int d = *path ? 1 : 0;
	for (; *path; path++)
		d += *path == '.';
	return d;
}

/* p is q or an ancestor of q. */
static bool under(const char *q, const char *p)
{
	size_t n = strlen(p);
	return !strncmp(q, p, n) && (q[n] == '.' || q[n] == '\0');
}

/*
 * The units FSDP wraps: the modules --wrap names (the outermost of them),
 * else the blocks of the shallowest ModuleList or Sequential (numbered
 * children: "layer1.0", "transformer.h.3"), else each top-level module.
 * What no unit holds stays gathered, as the root's parameters do.
 */
static ti_status fsdp_setup(sim *s, const ti_memory_module *mods, size_t nmods, ti_error *err)
{
	mem_builder *b = &s->b;
	ti_model *m = b->model;
	int best = 1 << 30;
	for (size_t i = 0; i < nmods && !s->opt->wrap_count; i++)
		if (*mods[i].path && numbered(mods[i].path) && path_depth(mods[i].path) < best)
			best = path_depth(mods[i].path);
	s->fsdp = ti_arena_calloc(b->arena, nmods + 2, sizeof(*s->fsdp));
	s->unit_fsdp = ti_arena_calloc(b->arena, b->unit_count + 1, sizeof(*s->unit_fsdp));
	if (!s->fsdp || !s->unit_fsdp)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (size_t i = 0; i < nmods; i++) {
		const char *p = mods[i].path;
		bool pick = s->opt->wrap_count ? glob_any(s->opt->wrap, s->opt->wrap_count, p)
		          : best < (1 << 30) ? numbered(p) && path_depth(p) == best : path_depth(p) == 1;
		if (!*p || !pick)
			continue;
		bool inside = false;
		for (size_t g = 0; g < s->fsdp_count && !inside; g++)
			inside = under(p, s->fsdp[g].path);
		if (!inside)
			s->fsdp[s->fsdp_count++] = (struct fsdp_unit){p, 0, -1, -1, -1};
	}
	size_t units = s->fsdp_count;
	s->fsdp_root = (int)s->fsdp_count;
	s->fsdp[s->fsdp_count++] = (struct fsdp_unit){"(root)", 0, 0, (int)b->unit_count - 1, -1};
	for (size_t i = 0; i < m->param_count_all; i++) {
		if (m->params[i].buffer || m->params[i].tied_to || m->params[i].stores)
			continue;
		int64_t n = 1;
		for (int k = 0; k < m->params[i].ndim; k++)
			n *= m->params[i].shape[k];
		n *= (int64_t)ti_dtype_size(s->opt->dtype ? s->opt->dtype : m->params[i].dtype);
		size_t g = 0;
		while (g < units && !under(m->params[i].name, s->fsdp[g].path))
			g++;
		s->fsdp[g < units ? g : (size_t)s->fsdp_root].bytes += n;
	}
	for (size_t k = 0; k < b->unit_count; k++) {
		s->unit_fsdp[k] = -1;
		const char *p = mods[b->units[k].module].path;
		for (size_t g = 0; g < units; g++)
			if (under(p, s->fsdp[g].path)) {
				s->unit_fsdp[k] = (int)g;
				if (s->fsdp[g].first < 0)
					s->fsdp[g].first = (int)k;
				s->fsdp[g].last = (int)k;
			}
	}
	for (size_t g = 0; g < s->fsdp_count; g++) {
		if (!s->fsdp[g].bytes)
			continue;
		int id = add_storage(s, s->fsdp[g].bytes, TI_MEM_GATHERED, s->fsdp[g].path, 0);
		if (id < 0)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
		s->fsdp[g].gather = id;
	}
	return TI_OK;
}

/* ---- pipeline parallelism: one stage's units ---- */

/*
 * Splits the units into options->pipeline stages of about equal parameter
 * bytes (each parameter counted at its first use), cutting only where the
 * module changes, and keeps the stage's units. A tensor a kept unit reads
 * but an earlier stage made is received (an input); one it makes that a
 * later stage reads is sent, and its gradient comes back.
 */
/* The block a module belongs to: its path up to its first numbered part ("transformer.h.3"), else its first part. */
static size_t block_len(const char *path)
{
	const char *p = path;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		if (len && strspn(p, "0123456789") == len)
			return (size_t)(p - path) + len;
		p = dot ? dot + 1 : p + len;
	}
	const char *dot = strchr(path, '.');
	return dot ? (size_t)(dot - path) : strlen(path);
}

static bool same_block(const ti_memory_module *mods, int a, int b)
{
	const char *x = mods[a].path, *y = mods[b].path;
	size_t n = block_len(x);
	return n == block_len(y) && !strncmp(x, y, n);
}

static ti_status keep_stage(sim *s, const ti_memory_module *mods, int *first, int *last, ti_error *err)
{
	mem_builder *b = &s->b;
	int64_t stages = s->opt->pipeline, want = s->opt->stage;
	size_t n = b->unit_count;
	int64_t *cum = ti_arena_calloc(b->arena, n + 1, sizeof(*cum));
	bool *seen = ti_arena_calloc(b->arena, b->tensor_count + 1, sizeof(*seen));
	if (!cum || !seen)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	int64_t total = 0;
	for (size_t k = 0; k < n; k++) {
		const mem_unit *u = &b->units[k];
		for (int i = 0; i < u->nin; i++)
			if (b->tensors[u->in[i]].param >= 0 && !seen[u->in[i]]) {
				seen[u->in[i]] = true;
				total += b->tensors[u->in[i]].bytes;
			}
		cum[k] = total; /* parameter bytes used by units 0..k */
	}
	/* stage s: the units after the cut for s and up to the cut for s + 1; a cut falls where the module changes */
	int cuts[2] = {0, (int)n};
	for (int c = 0; c < 2; c++) {
		int64_t st = want + c;
		if (st == 0 || st == stages)
			continue;
		int64_t goal = total * st / stages;
		size_t k = 0;
		while (k < n && cum[k] < goal)
			k++;
		while (k + 1 < n && same_block(mods, b->units[k + 1].module, b->units[k].module))
			k++;
		cuts[c] = (int)k + 1;
	}
	if (cuts[0] >= cuts[1])
		return TI_FAIL(err, TI_E_INVALID, "stage %lld of %lld holds no operator: the model has too few parts for %lld stages",
		               (long long)want, (long long)stages, (long long)stages);
	*first = cuts[0];
	*last = cuts[1] - 1;
	/* what later stages read is sent: kept for backward, its gradient received */
	bool *sent = ti_arena_calloc(b->arena, (size_t)b->storage_count + 1, sizeof(*sent));
	if (!sent)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (size_t k = (size_t)cuts[1]; k < n; k++)
		for (int i = 0; i < b->units[k].nin; i++) {
			int t = b->units[k].in[i];
			int p = b->tensors[t].producer;
			if (p >= cuts[0] && p < cuts[1])
				sent[b->tensors[t].storage] = true;
		}
	for (size_t g = 0; g < b->segment_count; g++) { /* checkpointed modules: their units' new places */
		struct mem_segment *seg = &b->segments[g];
		if (seg->last < cuts[0] || seg->first >= cuts[1]) {
			seg->first = seg->last = -2;
			continue;
		}
		seg->first = (seg->first > cuts[0] ? seg->first : cuts[0]) - cuts[0];
		seg->last = (seg->last < cuts[1] - 1 ? seg->last : cuts[1] - 1) - cuts[0];
	}
	memmove(b->units, b->units + cuts[0], (size_t)(cuts[1] - cuts[0]) * sizeof(*b->units));
	b->unit_count = (size_t)(cuts[1] - cuts[0]);
	for (size_t t = 0; t < b->tensor_count; t++)
		b->tensors[t].producer = b->tensors[t].producer >= cuts[0] && b->tensors[t].producer < cuts[1]
		                       ? b->tensors[t].producer - cuts[0] : -1;
	/* a name letting go of what another stage made is that stage's business */
	for (size_t k = 0; k < b->unit_count; k++) {
		mem_unit *u = &b->units[k];
		if (!u->release)
			continue;
		int n = 0;
		for (int i = 0; i < u->nin; i++)
			if (b->tensors[u->in[i]].producer >= 0)
				u->in[n++] = u->in[i];
		u->nin = n;
	}
	s->sent = sent;
	return TI_OK;
}

/* ---- a decode step of an encoder-decoder: what runs once ---- */

/*
 * Generation runs the description's "decode" "once" modules (an encoder) at
 * the prefill only, and keeps their outputs; what is computed from those
 * outputs alone (T5's cross-attention keys and values) is the cache, made
 * then too. Their units go from a decode step's; what a kept unit reads of
 * theirs, and what a once module hands to the rest (encoder_outputs), is
 * held through the step as an input is.
 */
static ti_status drop_once(sim *s, const ti_memory_module *mods, ti_error *err)
{
	mem_builder *b = &s->b;
	size_t n = b->unit_count;
	bool *dropped = ti_arena_calloc(b->arena, n + 1, sizeof(*dropped));
	bool *from_once = ti_arena_calloc(b->arena, b->tensor_count + 1, sizeof(*from_once));
	s->once_held = ti_arena_calloc(b->arena, (size_t)b->storage_count + 1, sizeof(*s->once_held));
	if (!dropped || !from_once || !s->once_held)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	size_t kept = 0;
	for (size_t k = 0; k < n; k++) {
		mem_unit *u = &b->units[k];
		bool once = ti_model_runs_once(b->model, mods[u->module].path), any = false, all = true, weights = false;
		for (int i = 0; i < u->nin; i++) {
			const mem_tensor *t = &b->tensors[u->in[i]];
			weights |= t->param >= 0;
			if (t->param >= 0)
				continue;
			any |= from_once[u->in[i]];
			all &= from_once[u->in[i]];
		}
		/* what a layer computes from the once outputs with its own weights (the cross-attention's key and value
		   projections) is cached; views, and the copies a kernel makes of them, run again every step */
		if (!once && !(any && all && (weights || u->release) && u->out_kind == MEM_OUT_NEW)) {
			/* kept: what it reads of the prefill's is held */
			for (int i = 0; i < u->nin; i++)
				if (from_once[u->in[i]])
					s->once_held[b->tensors[u->in[i]].storage] = true;
			continue;
		}
		dropped[k] = true;
		for (int o = 0; o < u->nout; o++)
			from_once[u->out[o]] = true;
		if (!once && !u->release) /* read outside the once modules: the encoder's outputs, which generation keeps */
			for (int i = 0; i < u->nin; i++)
				if (from_once[u->in[i]])
					s->once_held[b->tensors[u->in[i]].storage] = true;
	}
	int *index = ti_arena_calloc(b->arena, n + 1, sizeof(*index));
	if (!index)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (size_t k = 0; k < n; k++) {
		index[k] = dropped[k] ? -1 : (int)kept;
		if (!dropped[k])
			b->units[kept++] = b->units[k];
	}
	b->unit_count = kept;
	for (size_t t = 0; t < b->tensor_count; t++)
		b->tensors[t].producer = b->tensors[t].producer >= 0 ? index[b->tensors[t].producer] : -1;
	return TI_OK;
}

/* ---- play ---- */

static void reset(sim *s, long long stop_at)
{
	ledger *l = &s->l;
	/* the caching allocator keeps its segments from one step to the next: its blocks go back to its pools */
	for (size_t i = 0; i < l->count; i++)
		if (l->st[i].live && l->allocator) {
			mem_cuda_release(l->allocator, l->st[i].block);
			l->st[i].block = MEM_CUDA_NO_BLOCK;
		}
	l->count = s->base_count;
	l->live = l->high = l->peak = 0;
	l->moment = 0;
	l->stop_at = stop_at;
	l->snapped = false;
	l->phase = TI_PHASE_FORWARD;
	l->unit = -1;
	s->point_count = 0;
	for (size_t i = 0; i < l->count; i++) {
		l->st[i].live = false;
		l->st[i].saved = 0;
		l->st[i].grad_refs = 0;
	}
	for (size_t t = 0; t < s->b.tensor_count; t++)
		s->pending[t] = -1;
	for (size_t k = 0; k < s->b.unit_count; k++) {
		s->records[k] = false;
		s->extra[k] = -1;
	}
	/* the step starts with the weights, buffers, inputs and optimizer state */
	for (size_t i = 0; i < l->count; i++)
		if (l->st[i].pinned)
			alloc_storage(l, (int)i);
	/* the last of several micro-batches starts with the .grad the earlier ones left */
	if (s->opt->mode == TI_MEMORY_TRAIN && s->opt->accumulate > 1)
		for (size_t i = 0; i < s->b.model->param_count_all; i++) {
			int t = s->param_tensor[i];
			if (!s->b.tensors[t].grad || s->pending[t] >= 0)
				continue;
			int g = add_storage(s, s->b.tensors[t].bytes, TI_MEM_GRADIENT, s->b.tensors[t].name, 0);
			if (g < 0) {
				l->overflow = true;
				return;
			}
			l->st[g].pinned = l->st[g].prior = true;
			l->st[g].grad_refs = 1;
			alloc_storage(l, g);
			s->pending[t] = g;
		}
}

enum { LOSS_UNIT = -2 }; /* the ledger's unit while the loss runs: the peak's step names it */

/*
 * F.cross_entropy over the logits (transformers' ForCausalLMLoss: logits.float(),
 * the labels shifted, view(-1, V)): log_softmax's float32 result, which it and
 * nll_loss save, stays until backward; a logits tensor in another dtype is cast
 * to float32 first, a copy let go once log_softmax has run (measured on 1.13:
 * Llama-style models at 2 x 128 tokens and 3000-5000 words hold the result
 * beside the logits to the end of forward).
 */
static void cross_entropy_forward(sim *s)
{
	const mem_tensor *x = &s->b.tensors[s->loss_tensor];
	int64_t f32 = x->elsize > 0 ? x->bytes / x->elsize * 4 : x->bytes;
	s->l.unit = LOSS_UNIT;
	int cast = x->elsize != 4 ? add_storage(s, f32, TI_MEM_TEMPORARY, "cross_entropy (logits.float())", 0) : -1;
	int id = add_storage(s, f32, TI_MEM_SAVED, "cross_entropy (log_softmax)", 0);
	if (id < 0 || (x->elsize != 4 && cast < 0)) {
		s->l.overflow = true;
		return;
	}
	if (cast >= 0)
		alloc_storage(&s->l, cast);
	alloc_storage(&s->l, id);
	if (cast >= 0)
		free_storage(&s->l, cast);
	s->loss_saved = id;
	point(s, "the loss (cross_entropy)");
}

/*
 * Its backward, the first the engine runs: NllLossBackward's gradient (zeros,
 * the logits' size in float32), then LogSoftmaxBackward's beside it; the
 * first and the saved log_softmax go once the second is made, and a logits
 * tensor in another dtype gets its gradient cast back. What is left is the
 * logits' gradient, with storage: the head's backward takes it as it is.
 */
static void cross_entropy_backward(sim *s, int t)
{
	ledger *l = &s->l;
	const mem_tensor *x = &s->b.tensors[t];
	int64_t f32 = x->elsize > 0 ? x->bytes / x->elsize * 4 : x->bytes;
	l->phase = TI_PHASE_BACKWARD;
	l->unit = LOSS_UNIT;
	int nll = add_storage(s, f32, TI_MEM_ACT_GRADIENT, "cross_entropy backward (nll_loss)", 0);
	int lsm = add_storage(s, f32, TI_MEM_ACT_GRADIENT, "cross_entropy backward (log_softmax)", 0);
	int back = x->elsize != 4 ? add_storage(s, x->bytes, TI_MEM_ACT_GRADIENT, "cross_entropy backward (cast)", 0)
	                          : lsm;
	if (nll < 0 || lsm < 0 || back < 0) {
		l->overflow = true;
		return;
	}
	alloc_storage(l, nll);
	alloc_storage(l, lsm);
	free_storage(l, nll);
	if (s->loss_saved >= 0)
		free_storage(l, s->loss_saved);
	s->loss_saved = -1;
	if (back != lsm) {
		alloc_storage(l, back);
		free_storage(l, lsm);
	}
	l->st[back].grad_refs = 1;
	s->pending[t] = back;
	point(s, "the loss (cross_entropy)");
}

static void play(sim *s, long long stop_at)
{
	reset(s, stop_at);
	mem_builder *b = &s->b;
	ledger *l = &s->l;
	forward(s);
	if (s->opt->mode == TI_MEMORY_TRAIN && s->loss_tensor >= 0 && !b->tensors[s->loss_tensor].grad)
		s->loss_tensor = -1; /* frozen all the way to the logits: no loss to take a gradient of */
	if (s->opt->mode == TI_MEMORY_TRAIN && s->loss_tensor >= 0)
		cross_entropy_forward(s);
	/* activations: what the forward leaves live besides the step's own and the outputs it returns */
	s->activations = 0;
	if (s->module_acts)
		memset(s->module_acts, 0, s->module_count * sizeof(*s->module_acts));
	for (size_t i = 0; i < l->count; i++) {
		const storage *x = &l->st[i];
		if (x->live && !x->pinned && !(x->output && !x->saved && !x->stage_output)) {
			s->activations += x->bytes;
			if (s->module_acts && x->module >= 0 && (size_t)x->module < s->module_count)
				s->module_acts[x->module] += x->bytes;
		}
	}
	if (s->opt->mode != TI_MEMORY_TRAIN)
		return;
	/* loss = sum of the outputs: each output's gradient is an expanded scalar, no allocation; the
	 * outputs stay live through backward (out = model(x); loss = f(out); loss.backward()) */
	for (size_t t = 0; t < b->tensor_count; t++) {
		const mem_tensor *x = &b->tensors[t];
		if ((int)t == s->loss_tensor) {
			cross_entropy_backward(s, (int)t);
			continue;
		}
		if (x->grad && x->param < 0 && l->st[x->storage].output) {
			bool sent = l->st[x->storage].stage_output;
			int g = add_storage(s, sent ? x->bytes : 0, TI_MEM_ACT_GRADIENT, sent ? "gradient received" : "grad of the loss", 0);
			if (g < 0) {
				l->overflow = true;
				return;
			}
			l->st[g].grad_refs = 1;
			s->pending[t] = g;
			if (sent)
				alloc_storage(l, g);
		}
	}
	backward(s);
	for (size_t i = 0; i < l->count; i++)
		if (l->st[i].output && !l->st[i].stage_output && l->st[i].live && !l->st[i].saved)
			free_storage(l, (int)i);
	l->phase = TI_PHASE_OPTIMIZER;
	l->unit = -1;
	transient(s, s->optimizer_scratch, TI_MEM_TEMPORARY, "optimizer step temporaries", 0);
	point(s, "optimizer.step()");
	for (size_t i = 0; i < l->count; i++)
		if (l->st[i].kind == TI_MEM_GRADIENT && l->st[i].live) {
			l->st[i].pinned = false;
			free_storage(l, (int)i);
		}
	point(s, "optimizer.zero_grad(set_to_none=True)");
}

/* ---- the report ---- */

static const char *const phase_names[] = {"forward", "backward", "optimizer"};
const char *ti_memory_phase_name(ti_memory_phase p) { return (unsigned)p < 3 ? phase_names[p] : "?"; }

static const char *const kind_names[] = {"weight", "buffer", "input", "activation", "saved", "gradient",
                                         "activation gradient", "optimizer state", "temporary", "KV cache",
                                         "communication", "gathered weights"};
const char *ti_memory_kind_name(ti_memory_kind k) { return (unsigned)k < TI_MEM_KIND_COUNT ? kind_names[k] : "?"; }

static int by_bytes(const void *a, const void *b)
{
	const ti_memory_tensor *x = a, *y = b;
	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* The description's symbols must all be bound: sizes are numbers here. */
static ti_status check_concrete(ti_model *m, ti_error *err)
{
	char names[256] = "";
	size_t used = 0;
	for (size_t i = 0; i < m->input_count; i++)
		for (int k = 0; k < m->inputs[i].ndim; k++) {
			ti_dim d = m->inputs[i].shape[k];
			if (ti_dim_is_int(d))
				continue;
			const char *text = ti_dim_str(&m->sym, d);
			if (text && !strstr(names, text) && used + strlen(text) + 3 < sizeof(names))
				used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "", text);
		}
	if (used)
		return TI_FAIL(err, TI_E_INVALID, "memory needs every size as a number: bind %s with --bind NAME=VALUE", names);
	return TI_OK;
}

static ti_status add_note(ti_memory_report *r, ti_arena *a, const char *text, ti_error *err)
{
	const char **grown = ti_arena_calloc(a, r->note_count + 1, sizeof(*grown));
	if (!grown || !text)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	if (r->note_count)
		memcpy(grown, r->notes, r->note_count * sizeof(*grown));
	grown[r->note_count++] = text;
	r->notes = grown;
	return TI_OK;
}

/* The KV cache's rule: how many steps, at what length, in what dtype. */
static const char *kv_rule(const sim *s, const ti_memory_report *r)
{
	char length[96], window[64] = "";
	if (s->opt->kv_tokens > 0)
		snprintf(length, sizeof(length), "%lld tokens", (long long)s->opt->kv_tokens);
	else
		snprintf(length, sizeof(length), "the bound length");
	if (s->opt->kv_window > 0)
		snprintf(window, sizeof(window), " (at most the sliding window's %lld)", (long long)s->opt->kv_window);
	else if (r->kv_sliding > 0)
		snprintf(window, sizeof(window), " (%d of them at most their sliding window's %lld)", r->kv_sliding,
		         (long long)s->kv_widest);
	char fused[96] = "";
	if (s->kv_fused)
		snprintf(fused, sizeof(fused), "; %d hold the fused projection their keys or values view", s->kv_fused);
	if (r->kv_compressed > 0)
		return ti_arena_printf(s->b.arena, "the compressed latent (MLA) of %d attention steps at %s%s, %s%s",
		                       r->kv_sites, length, window,
		                       s->opt->kv_dtype ? ti_dtype_name(s->opt->kv_dtype) : "their dtype",
		                       r->kv_unsized ? "; some steps' length unknown: at the bound length" : "");
	return ti_arena_printf(s->b.arena, "keys and values of %d attention steps at %s%s, %s%s%s", r->kv_sites, length,
	                       window, s->opt->kv_dtype ? ti_dtype_name(s->opt->kv_dtype) : "their dtype", fused,
	                       r->kv_unsized ? "; some steps' length unknown: at the bound length" : "");
}

static ti_status build_terms(sim *s, ti_memory_report *r, ti_error *err)
{
	ti_arena *a = s->b.arena;
	bool train = s->opt->mode == TI_MEMORY_TRAIN;
	bool unknown = s->b.unknown_count > 0;
	const char *unknown_why = NULL;
	if (unknown) {
		char list[200] = "";
		size_t used = 0;
		for (size_t i = 0; i < s->b.unknown_count && used + 40 < sizeof(list); i++)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", s->b.unknown_ops[i]);
		unknown_why = ti_arena_printf(a, "no memory rule for %s: their outputs are counted, what they save is a guess",
		                              list);
	}
	ti_memory_term terms[] = {
		{"weights", r->weights, "parameters and buffers, each storage once", false, NULL, 0},
		{"inputs", r->inputs, "the step's input tensors", false, NULL, 0},
		{"gradients", r->gradients, "a .grad per trainable parameter, its dtype", false, NULL, 0},
		{"optimizer_state", r->optimizer_state, s->optimizer_rule ? s->optimizer_rule : "inference: none",
		 train && s->opt->optimizer == TI_OPTIM_NONE,
		 train && s->opt->optimizer == TI_OPTIM_NONE ? "no --optimizer given" : NULL, 0},
		{"activations", r->activations,
		 train ? "saved for backward, live at the end of forward" : "inference: nothing is saved", unknown && train,
		 train ? unknown_why : NULL, 0},
		{"communication", r->communication,
		 s->ep_bytes ? ti_arena_printf(a, "expert parallelism over %lld ranks: the all-to-all's dispatch and "
		                               "combine buffers, 2 x the token states one MoE layer routes (B x T x k x "
		                               "hidden)%s", (long long)s->opt->expert_parallel,
		                               s->comm_bytes ? ", and the strategy's buckets" : "")
		 : s->opt->strategy == TI_STRATEGY_ZERO2 ? "ZeRO-2: one reduce-scatter bucket"
		 : r->communication ? "DDP: gradient buckets, a copy of every gradient (gradient_as_bucket_view=False)"
		 : s->opt->strategy == TI_STRATEGY_ZERO3 ? "ZeRO-3/FSDP: gathered units counted as they live, in the peak"
		 : "one rank: none", false, NULL, 0},
		{"kv_cache", r->kv_cache,
		 r->kv_cache ? kv_rule(s, r)
		 : train ? "training: none"
		 : s->opt->kv_cache < 0 ? "none: --kv-cache off"
		 : r->kv_sites ? "none: no attention step masks its scores (not a decoder; --kv-cache on counts one anyway)"
		 : "none: no attention step",
		 false, NULL, 0},
		{"peak", r->peak, "the most live at any moment of the step: the ledger's high-water mark",
		 unknown || (train && s->opt->optimizer == TI_OPTIM_NONE),
		 unknown ? unknown_why : train && s->opt->optimizer == TI_OPTIM_NONE ? "no --optimizer given: its state and step left out" : NULL,
		 0},
	};
	r->terms = ti_arena_calloc(a, sizeof(terms) / sizeof(terms[0]), sizeof(*r->terms));
	if (!r->terms)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	r->term_count = 0;
	for (size_t i = 0; i < sizeof(terms) / sizeof(terms[0]); i++)
		if (strcmp(terms[i].name, "communication") || s->opt->strategy != TI_STRATEGY_NONE ||
		    s->opt->expert_parallel > 1) /* one rank: no such term */
			r->terms[r->term_count++] = terms[i];
	if (unknown_why)
		return add_note(r, a, unknown_why, err);
	return TI_OK;
}

/*
 * Plays the traced step under options: the report (its range and its
 * uncertainties not yet set) and the kinds of uncertainty its units and
 * options have (*kinds). peak_only: the peak alone is wanted, not what is
 * live at it (an alternative's). cudnn, rnn_ws: the convolution and recurrent
 * workspaces on cuda (the estimate's, or one end of the range).
 */
static ti_status simulate(ti_model *model, const mem_trace *trace, const ti_model_report *rep,
                          const ti_memory_options *options, mem_cudnn_play cudnn, mem_rnn_workspace rnn_ws,
                          bool peak_only,
                          ti_memory_report **out, unsigned *kinds, ti_error *err)
{
	ti_status st;
	sim *s = ti_arena_alloc(&model->arena, sizeof(*s));
	void *map = mem_tensor_map_new(&model->arena);
	if (!s || !map)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	s->opt = options;
	s->b.model = model;
	s->b.arena = &model->arena;
	s->b.options = options;
	s->b.cudnn = cudnn;
	s->b.map = map;
	s->b.segment = -1;
	s->b.rnn_workspace = rnn_ws;
	s->l.arena = &model->arena;
	s->l.cuda = options->device == TI_MEMORY_CUDA;
	module_list ml = {0};
	ti_strmap_init(&ml.index);
	if ((st = map_params(s, err)))
		goto done;
	if (module_index(&s->b, &ml, "", err) < 0) {
		st = err->code;
		goto done;
	}
	for (size_t i = 0; i < trace->count && !st; i++)
		if (trace->events[i].parent < 0)
			st = walk(&s->b, &ml, trace, (int)i, err);
	if (!st && options->mode == TI_MEMORY_TRAIN)
		st = check_segments(&s->b, err);
	if (!st)
		st = mem_amp_finish(&s->b, err);
	int stage_first = 0, stage_last = (int)s->b.unit_count - 1;
	if (!st && options->mode == TI_MEMORY_TRAIN && options->pipeline > 1)
		st = keep_stage(s, ml.items, &stage_first, &stage_last, err);
	if (!st && options->mode == TI_MEMORY_INFER && options->kv_tokens > 0 && model->decode_once_count)
		st = drop_once(s, ml.items, err);
	if (st || (st = classify(s, rep, err)) || (st = optimizer_setup(s, err)))
		goto done;
	if (options->mode == TI_MEMORY_TRAIN && options->strategy == TI_STRATEGY_ZERO3 && ranks(s) > 1 &&
	    (st = fsdp_setup(s, ml.items, ml.count, err)))
		goto done;
	find_kv(s, &s->kv_bytes, &s->kv_sites, &s->kv_causal, &s->kv_unsized, &s->kv_sliding, &s->kv_compressed);
	if (s->kv_bytes >= TI_MEMORY_MAX_BYTES) {
		st = TI_FAIL(err, TI_E_LIMIT, "the KV cache needs more than %lld bytes", (long long)TI_MEMORY_MAX_BYTES);
		goto done;
	}
	bool count_kv = options->mode == TI_MEMORY_INFER && s->kv_bytes > 0 &&
	                (options->kv_cache > 0 || (options->kv_cache == 0 && s->kv_causal > 0));
	if (count_kv) {
		/* the keys and values the prefill makes stay to its end as the cache; the rest (the past tokens of a
		   decode step, a converted or compressed cache) is one block held from the start */
		int64_t block = s->kv_bytes - s->kv_kept_bytes;
		for (size_t i = 0; i < s->kv_kept_count; i++) {
			storage *x = &s->l.st[s->kv_kept[i]];
			if (x->kind == TI_MEM_INPUT) /* the prefill's cross-attention keys: the cache's, not an input */
				s->input_bytes -= x->bytes;
			x->kind = TI_MEM_KV_CACHE;
			x->output = true; /* not freed at its last use, not an activation */
		}
		int id = block > 0 ? add_storage(s, block, TI_MEM_KV_CACHE, "KV cache", 0) : 0;
		if (id < 0) {
			st = TI_FAIL(err, TI_E_NOMEM, "out of memory");
			goto done;
		}
		if (block > 0)
			s->l.st[id].pinned = true;
	} else {
		s->kv_bytes = 0;
	}
	/* expert parallelism: the dispatch all-to-all sends each routed token state (B x T x k of them in the MoE
	   layer that routes the most) and receives as many on average; the combine sends them back through
	   buffers of the same size: two such buffers, live through the step */
	if (options->expert_parallel > 1 && s->b.moe_tokens_max > 0) {
		if (!mem_mul(s->b.moe_tokens_max, 2, &s->ep_bytes)) {
			st = TI_FAIL(err, TI_E_LIMIT, "the all-to-all buffers need more than 2^62 bytes");
			goto done;
		}
		int id = add_storage(s, s->ep_bytes, TI_MEM_COMM, "all-to-all dispatch and combine buffers", 0);
		if (id < 0) {
			st = TI_FAIL(err, TI_E_NOMEM, "out of memory");
			goto done;
		}
		s->l.st[id].pinned = true;
	}
	/* cuDNN's dropout state (get_dropout_state in aten/src/ATen/native/cudnn/RNN.cpp): made by the first
	   training call with dropout and kept by the process, so a measured step starts with it */
	if (s->b.cudnn_dropout_state > 0) {
		int id = add_storage(s, s->b.cudnn_dropout_state, TI_MEM_BUFFER, "cuDNN dropout state", 0);
		if (id < 0) {
			st = TI_FAIL(err, TI_E_NOMEM, "out of memory");
			goto done;
		}
		s->l.st[id].pinned = true;
	}
	s->base_count = s->l.count;
	s->pending = ti_arena_calloc(&model->arena, s->b.tensor_count + 1, sizeof(*s->pending));
	s->records = ti_arena_calloc(&model->arena, s->b.unit_count + 1, sizeof(*s->records));
	s->extra = ti_arena_calloc(&model->arena, s->b.unit_count + 1, sizeof(*s->extra));
	s->saved = ti_arena_calloc(&model->arena, s->b.unit_count + 1, sizeof(*s->saved));
	if (!s->pending || !s->records || !s->extra || !s->saved) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory");
		goto done;
	}
	if (options->device == TI_MEMORY_CUDA && (st = mem_cuda_new(&s->l.allocator, err)))
		goto done;
	if (s->l.allocator)
		play(s, -1); /* a warm-up step: the segments a measured step finds cached */
	s->module_count = ml.count;
	s->module_acts = ti_arena_calloc(&model->arena, ml.count + 1, sizeof(*s->module_acts));
	if (!s->module_acts) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory");
		goto done;
	}
	play(s, -1);
	if (s->l.overflow) {
		st = TI_FAIL(err, TI_E_LIMIT, "the step needs more than %lld bytes, or the ledger ran out of memory",
		             (long long)TI_MEMORY_MAX_BYTES);
		goto done;
	}
	ti_memory_report *r = ti_arena_alloc(&model->arena, sizeof(*r));
	if (!r) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory");
		goto done;
	}
	r->communication = s->comm_bytes + s->ep_bytes;
	r->experts = s->experts;
	r->experts_held = s->experts_held;
	r->expert_tokens = s->b.moe_tokens_max;
	r->expert_call = s->b.moe_call_max;
	r->parameters = s->param_bytes;
	r->buffers = s->buffer_bytes;
	r->weights = s->param_bytes + s->buffer_bytes;
	r->inputs = s->input_bytes;
	r->gradients = options->mode == TI_MEMORY_TRAIN ? s->grad_bytes : 0;
	r->optimizer_state = s->optimizer_state;
	r->kv_cache = s->kv_bytes;
	r->kv_sites = s->kv_sites;
	r->kv_causal = s->kv_causal;
	r->kv_sliding = s->kv_sliding;
	r->kv_compressed = s->kv_compressed;
	r->kv_unsized = s->kv_unsized;
	r->loss = options->mode == TI_MEMORY_TRAIN ? s->loss : TI_LOSS_DEFAULT;
	r->activations = options->mode == TI_MEMORY_TRAIN ? s->activations : 0;
	r->peak = s->l.peak;
	r->reserved_peak = s->l.allocator ? mem_cuda_peak_reserved(s->l.allocator) : 0;
	r->peak_phase = s->l.peak_phase;
	int pu = s->l.peak_unit;
	r->peak_step = pu >= 0 ? s->b.units[pu].label
	               : pu == LOSS_UNIT ? "the loss (cross_entropy)"
	               : r->peak_phase == TI_PHASE_OPTIMIZER ? "optimizer.step()" : "start of the step";
	r->peak_module = pu >= 0 ? ml.items[s->b.units[pu].module].path : "";
	/* each module's weights: its parameters' and its children's (the modules a name's dotted prefixes name) */
	for (size_t i = 0; i < model->param_count_all; i++) {
		if (!model->params[i].tied_to)
			add_to_ancestors(&ml, model->params[i].name, false, s->b.tensors[s->param_tensor[i]].bytes, false);
	}
	/* a module's activations are its own calls' and its children's */
	for (size_t j = 0; j < ml.count && options->mode == TI_MEMORY_TRAIN; j++)
		add_to_ancestors(&ml, ml.items[j].path, true, s->module_acts[j], true);
	r->timeline = s->points;
	r->point_count = s->point_count;
	r->unit_count = s->b.unit_count;
	long long moment = s->l.peak_moment;
	int64_t peak = s->l.peak;
	if (!peak_only) {
		play(s, moment);
		r->top = s->l.snap;
		r->top_count = s->l.snap_count;
		if (r->top)
			qsort(r->top, r->top_count, sizeof(*r->top), by_bytes);
	}
	r->peak = peak;
	r->stage_first = stage_first;
	r->stage_last = stage_last;
	if (s->sent) {
		/* 1F1B: stage s holds the saved activations of min(stages - s, micro-batches) micro-batches at once */
		int64_t m = options->micro_batches > 0 ? options->micro_batches : options->pipeline;
		int64_t flight = options->pipeline - options->stage < m ? options->pipeline - options->stage : m;
		int64_t more;
		r->in_flight = flight;
		if (!mem_mul(flight - 1, r->activations, &more) || !mem_add(&r->peak, more)) {
			st = TI_FAIL(err, TI_E_LIMIT, "the stage needs more than 2^62 bytes");
			goto done;
		}
	}
	r->modules = ml.items;
	r->module_count = ml.count;
	if ((st = build_terms(s, r, err)))
		goto done;
	unsigned depends = 0;
	for (size_t k = 0; k < s->b.unit_count; k++)
		depends |= s->b.units[k].depends;
	*kinds = mem_uncertain_kinds(options, depends, s->b.unknown_count > 0);
	if (s->b.moe_calls)
		*kinds |= MEM_UNCERTAIN(TI_UNCERTAIN_MOE_ROUTING);
	*out = r;
done:
	mem_cuda_free_all(s->l.allocator);
	s->l.allocator = NULL;
	ti_strmap_release(&ml.index);
	return st;
}

/*
 * The alternatives the options leave open, each played: on the CPU, when a
 * convolution's scratch depends on the instruction set and none was given,
 * every other set; on cuda, when cuDNN runs convolutions, the step without
 * their workspaces and with the most the measured grid saw for each shape
 * (rules.c, cudnn_workspace). *least and *most take their peaks, *kinds
 * what else their units depend on (another set's GEMM backward depends on
 * threads), and loses a kind when every alternative peaks alike.
 */
static ti_status play_alternatives(ti_model *model, const mem_trace *trace, const ti_model_report *rep,
                                   const ti_memory_options *options, unsigned *kinds, int64_t *least, int64_t *most,
                                   ti_error *err)
{
	/* the libraries' own choices, each end together: no convolution workspace and cuDNN RNN's floor, then
	   the most either was measured to take */
	static const struct {
		mem_cudnn_play conv;
		mem_rnn_workspace rnn;
	} ends[] = {{MEM_CUDNN_NONE, MEM_RNN_WS_LOW}, {MEM_CUDNN_MOST, MEM_RNN_WS_HIGH}};
	const unsigned library = MEM_UNCERTAIN(TI_UNCERTAIN_CUDNN_WORKSPACE) | MEM_UNCERTAIN(TI_UNCERTAIN_CUDNN_RNN);
	ti_memory_options other = *options;
	ti_memory_report *r;
	unsigned theirs;
	ti_status st;
	if (*kinds & library) {
		int64_t low = *least, high = *most;
		for (size_t k = 0; k < sizeof(ends) / sizeof(ends[0]); k++) {
			if ((st = simulate(model, trace, rep, options, ends[k].conv, ends[k].rnn, true, &r, &theirs, err)))
				return st;
			low = r->peak < low ? r->peak : low;
			high = r->peak > high ? r->peak : high;
		}
		if (low == high) /* the workspaces never meet the peak */
			*kinds &= ~library;
		*least = low;
		*most = high;
	}
	if (!(*kinds & MEM_UNCERTAIN(TI_UNCERTAIN_CPU_ISA)))
		return TI_OK;
	for (int isa = 0; ti_cpu_isa_name((ti_cpu_isa)isa); isa++) {
		if (isa == (int)options->cpu_isa)
			continue;
		other.cpu_isa = (ti_cpu_isa)isa;
		other.cpu_isa_fixed = true;
		if ((st = simulate(model, trace, rep, &other, MEM_CUDNN_ESTIMATE, MEM_RNN_WS_ESTIMATE, true, &r, &theirs,
		                   err)))
			return st;
		*kinds |= theirs;
		*least = r->peak < *least ? r->peak : *least;
		*most = r->peak > *most ? r->peak : *most;
	}
	if (*least == *most) /* the scratch differs, but never at the peak: the peak does not depend on the set */
		*kinds &= ~MEM_UNCERTAIN(TI_UNCERTAIN_CPU_ISA);
	return TI_OK;
}

/*
 * What the machine the step runs on decides, beyond the description: the kinds a term or a tensor names as
 * "depends on". The rules' tolerance is every figure's (named once, in the list); a missing optimizer, rule
 * or graph makes a term a lower bound, whose why says so already.
 */
#define MACHINE_KINDS (MEM_UNCERTAIN(TI_UNCERTAIN_CPU_ISA) | MEM_UNCERTAIN(TI_UNCERTAIN_THREADS) | \
                       MEM_UNCERTAIN(TI_UNCERTAIN_CUDNN_WORKSPACE) | MEM_UNCERTAIN(TI_UNCERTAIN_CUDNN_RNN))

/* The kinds each term can depend on (bits); a term takes those the report has, when it counts bytes. */
static const struct {
	const char *term;
	unsigned kinds;
} term_depends[] = {
	{"activations", MEM_UNCERTAIN(TI_UNCERTAIN_CUDNN_RNN)}, /* cuDNN keeps its own reserve for backward */
	{"peak", MACHINE_KINDS},
};

static void mark_depends(ti_memory_report *r, unsigned kinds)
{
	for (size_t i = 0; i < r->term_count; i++)
		for (size_t k = 0; k < sizeof(term_depends) / sizeof(term_depends[0]); k++)
			if (!strcmp(r->terms[i].name, term_depends[k].term) && r->terms[i].bytes > 0)
				r->terms[i].depends = term_depends[k].kinds & kinds;
	for (size_t i = 0; i < r->top_count; i++)
		r->top[i].depends &= kinds & MACHINE_KINDS;
}

ti_status ti_memory_estimate(ti_model *model, const ti_memory_options *options, const ti_memory_report **out,
                             ti_error *err)
{
	mem_trace trace;
	const ti_model_report *rep;
	ti_status st = mem_trace_run(model, &trace, &rep, err);
	if (st)
		return st;
	if (rep->failed) {
		*err = rep->error;
		return TI_E_SHAPE;
	}
	if ((st = check_concrete(model, err)))
		return st;
	ti_memory_report *r;
	unsigned kinds;
	if ((st = simulate(model, &trace, rep, options, MEM_CUDNN_ESTIMATE, MEM_RNN_WS_ESTIMATE, false, &r, &kinds,
	                   err)))
		return st;
	int64_t least = r->peak, most = r->peak;
	if (options->expert_parallel > 1 && r->expert_tokens > 0) {
		/* moe-routing's high end: every rank routes all its tokens to this rank's experts, so the all-to-all
		   receives K times the average and each expert call runs on K times its tokens */
		int64_t more;
		if (!mem_mul(options->expert_parallel - 1, r->expert_tokens + r->expert_call, &more) || !mem_add(&most, more))
			return TI_FAIL(err, TI_E_LIMIT, "the peak's range passes %lld bytes", (long long)TI_MEMORY_MAX_BYTES);
	}
	if ((st = play_alternatives(model, &trace, rep, options, &kinds, &least, &most, err)) ||
	    (st = mem_uncertain_list(r, &model->arena, kinds, err)) || (st = mem_peak_range(r, least, most, err)))
		return st;
	mark_depends(r, kinds);
	*out = r;
	return TI_OK;
}
