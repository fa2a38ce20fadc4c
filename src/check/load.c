/*
 * load.c - model.load_state_dict(state_dict, strict) decided without
 * running it (see tinspect/check.h).
 *
 * PyTorch 1.13's Module.load_state_dict walks the modules in order, a module
 * before its children. At each module, _load_from_state_dict looks up the
 * module's own parameters and persistent buffers under its prefix: a key the
 * state dict lacks is missing, one of another shape is a "size mismatch"
 * message; then every state-dict key under the prefix whose next name is
 * neither a child module nor one of the module's own tensors is unexpected.
 * The messages are joined with missing keys first, unexpected second (strict
 * only), size mismatches after, as load_state_dict inserts them.
 */
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"
#include "shapes/meta.h"
#include "tinspect/check.h"
#include "tinspect/checkpoint.h"
#include "tinspect/value.h"
#include "util/strmap.h"

/* The keys a training script nests a state dict under, in the order they are tried. */

typedef struct entry {
	const char *key;              /* as load_state_dict sees it */
	const ti_source_tensor *t;
	bool used;
} entry;

typedef struct checker {
	const ti_model *model;
	ti_arena *arena;
	ti_check_report *r;
	entry *e;
	size_t count;
	ti_strmap by_key;             /* key -> entry index + 1 */
	ti_strmap modules;            /* module prefix ("" for the root) -> 1 */
	ti_error *err;
	const ti_value *metadata;     /* the state dict's _metadata, or NULL (a plain dict, safetensors) */
	const char *wrapper;          /* the prefix taken off every key ("module."), or "" */
	const char *nest;             /* the key the state dict is under, or NULL */
	const char *const *ignores;   /* --ignore: names never missing */
	size_t ignore_count;
	/* dtypes load_state_dict casts: a count and the first name per (checkpoint, model) pair */
	struct cast { ti_dtype from, to; size_t count; const char *first; } casts[16];
	size_t cast_count;
	const ti_source_tensor **tie_only; /* names a safetensors file holds only in __metadata__ ("tie.") */
	size_t tie_only_count;
} checker;

static ti_status no_memory(ti_error *err) { return TI_FAIL(err, TI_E_NOMEM, "out of memory checking the load"); }

static bool push(ti_arena *a, const char ***items, size_t *count, const char *s)
{
	const char **more = ti_arena_calloc(a, *count + 1, sizeof(*more));
	if (!more || !s)
		return false;
	if (*count)
		memcpy(more, *items, *count * sizeof(*more));
	more[(*count)++] = s;
	*items = more;
	return true;
}

static bool note(checker *c, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return push(c->arena, &c->r->notes, &c->r->note_count, ti_arena_strdup(c->arena, buf));
}

static bool starts(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

/* How many of the model's state-dict names the source holds under prefix ("" or "model."). */
static size_t matches_under(const ti_model *m, ti_source *src, const char *prefix, ti_strmap *names)
{
	size_t n = 0, plen = strlen(prefix);
	for (size_t i = 0; i < ti_source_tensor_count(src); i++) {
		const char *name = ti_source_tensor_at(src, i)->name;
		if (starts(name, prefix) && ti_strmap_get(names, name + plen))
			n++;
	}
	(void)m;
	return n;
}

/* Whether the checkpoint's top-level object holds a dict under key (names alone cannot tell {"module": sd} from DDP). */
static bool nested_dict(ti_source *src, const char *key)
{
	ti_ckpt *ck = ti_source_file_count(src) == 1 ? ti_source_checkpoint(src, 0) : NULL;
	const ti_value *v = ck ? ti_dict_get(ti_ckpt_root(ck), key) : NULL;
	return v && v->kind == TI_DICT;
}

/* Chooses the entries that are the state dict: a given key, else the nesting that matches most names. */
static ti_status choose_entries(checker *c, ti_source *src, const ti_check_options *o)
{
	const ti_model *m = c->model;
	ti_strmap names;
	ti_strmap_init(&names);
	for (size_t i = 0; i < m->param_count; i++)
		if (ti_strmap_put(&names, m->params[i].name, (void *)1)) {
			ti_strmap_release(&names);
			return no_memory(c->err);
		}
	const char *prefix = "";
	if (o->key) {
		prefix = ti_arena_printf(c->arena, "%s.", o->key);
		c->nest = o->key;
		bool any = false;
		for (size_t i = 0; i < ti_source_tensor_count(src) && !any; i++)
			any = starts(ti_source_tensor_at(src, i)->name, prefix);
		if (!any) {
			ti_strmap_release(&names);
			return TI_FAIL(c->err, TI_E_INVALID, "--key %s: the checkpoint holds no tensor under '%s'", o->key, o->key);
		}
	} else {
		size_t best = matches_under(m, src, "", &names);
		for (size_t k = 0; ti_state_dict_keys[k]; k++) {
			if (!nested_dict(src, ti_state_dict_keys[k]))
				continue;
			const char *p = ti_arena_printf(c->arena, "%s.", ti_state_dict_keys[k]);
			size_t n = p ? matches_under(m, src, p, &names) : 0;
			/* a wrapper prefix inside the nesting counts too */
			for (size_t w = 0; p && ti_key_wrappers[w].prefix; w++) {
				const char *pw = ti_arena_printf(c->arena, "%s%s", p, ti_key_wrappers[w].prefix);
				size_t nw = pw ? matches_under(m, src, pw, &names) : 0;
				n = nw > n ? nw : n;
			}
			if (n > best) {
				best = n;
				prefix = p;
			}
		}
		c->nest = *prefix ? ti_arena_strndup(c->arena, prefix, strlen(prefix) - 1) : NULL;
		if (*prefix && !note(c, "the state dict is the checkpoint's '%.*s' entry", (int)strlen(prefix) - 1, prefix)) {
			ti_strmap_release(&names);
			return no_memory(c->err);
		}
	}
	ti_strmap_release(&names);
	size_t plen = strlen(prefix);
	c->e = ti_arena_calloc(c->arena, ti_source_tensor_count(src) + 1, sizeof(*c->e));
	if (!c->e)
		return no_memory(c->err);
	c->tie_only = ti_arena_calloc(c->arena, ti_source_tensor_count(src) + 1, sizeof(*c->tie_only));
	if (!c->tie_only)
		return no_memory(c->err);
	for (size_t i = 0; i < ti_source_tensor_count(src); i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, i);
		if (!starts(t->name, prefix) || !t->name[plen])
			continue;
		if (t->tie_of) /* not a tensor of the file: load_file does not return it */
			c->tie_only[c->tie_only_count++] = t;
		else
			c->e[c->count++] = (entry){t->name + plen, t, false};
	}
	return TI_OK;
}

/* Every key starting with prefix (and the model's names not): the wrapper's prefix comes off. */
static ti_status strip_wrappers(checker *c, const ti_check_options *o)
{
	for (size_t w = 0; ti_key_wrappers[w].prefix && c->count; w++) {
		const char *p = ti_key_wrappers[w].prefix;
		bool all = true, model_has = false;
		for (size_t i = 0; i < c->count && all; i++)
			all = starts(c->e[i].key, p);
		for (size_t i = 0; i < c->model->param_count && !model_has; i++)
			model_has = starts(c->model->params[i].name, p);
		if (!all || model_has)
			continue;
		for (size_t i = 0; i < c->count; i++)
			c->e[i].key += strlen(p);
		c->wrapper = p;
		if (!note(c, "every key had the prefix '%s' (%s): taken off", p, ti_key_wrappers[w].why))
			return no_memory(c->err);
	}
	if (o->strip_prefix)
		for (size_t i = 0; i < c->count; i++)
			if (starts(c->e[i].key, o->strip_prefix))
				c->e[i].key += strlen(o->strip_prefix);
	if (o->add_prefix)
		for (size_t i = 0; i < c->count; i++)
			if (!(c->e[i].key = ti_arena_printf(c->arena, "%s%s", o->add_prefix, c->e[i].key)))
				return no_memory(c->err);
	for (size_t k = 0; k < o->rename_count; k++) {
		/* s/OLD/NEW/: the character after 's' delimits */
		const char *r = o->renames[k];
		char d = r[0] == 's' ? r[1] : '\0';
		const char *mid = d ? strchr(r + 2, d) : NULL;
		const char *end = mid ? strchr(mid + 1, d) : NULL;
		if (!end || end[1] || mid == r + 2)
			return TI_FAIL(c->err, TI_E_INVALID, "--rename wants s/OLD/NEW/, not '%s'", r);
		size_t olen = (size_t)(mid - (r + 2)), nlen = (size_t)(end - (mid + 1));
		for (size_t i = 0; i < c->count; i++) {
			const char *key = c->e[i].key, *at = NULL;
			for (const char *s = key; *s && !at; s++)
				if (!strncmp(s, r + 2, olen))
					at = s;
			if (at && !(c->e[i].key = ti_arena_printf(c->arena, "%.*s%.*s%s", (int)(at - key), key, (int)nlen, mid + 1,
			                                          at + olen)))
				return no_memory(c->err);
		}
	}
	size_t kept = 0, dropped = 0;
	for (size_t i = 0; i < c->count; i++) {
		bool ignored = false;
		for (size_t k = 0; k < o->ignore_count && !ignored; k++)
			ignored = !fnmatch(o->ignores[k], c->e[i].key, 0);
		if (ignored)
			dropped++;
		else
			c->e[kept++] = c->e[i];
	}
	c->count = kept;
	c->ignores = o->ignores;
	c->ignore_count = o->ignore_count;
	if (dropped && !note(c, "%zu of the checkpoint's tensors ignored (--ignore)", dropped))
		return no_memory(c->err);
	ti_strmap_init(&c->by_key);
	for (size_t i = 0; i < c->count; i++) {
		void *existing;
		int added = ti_strmap_add(&c->by_key, c->e[i].key, (void *)(uintptr_t)(i + 1), &existing);
		if (added < 0)
			return no_memory(c->err);
		if (added == 1)
			return TI_FAIL(c->err, TI_E_INVALID, "two tensors load as '%s' after prefixes and renames", c->e[i].key);
	}
	return TI_OK;
}

/* "torch.Size([10, 512])" */
static const char *size_text(ti_arena *a, int ndim, const int64_t *shape)
{
	char buf[512];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "torch.Size([");
	for (int i = 0; i < ndim && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
	if (n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - n, "])");
	return ti_arena_strdup(a, buf);
}

/* The module a state-dict name belongs to: the longest module prefix before its last component. */
static const char *owner_of(checker *c, const char *name)
{
	size_t len = strlen(name);
	char buf[1024];
	if (len >= sizeof(buf))
		return "";
	memcpy(buf, name, len + 1);
	for (;;) {
		char *dot = strrchr(buf, '.');
		if (!dot)
			return "";
		*dot = '\0';
		if (ti_strmap_get(&c->modules, buf))
			return ti_arena_strdup(c->arena, buf);
	}
}

/*
 * The state dict's OrderedDict keeps _metadata (each module's _version);
 * a plain dict or a safetensors file has none, and load_state_dict then sees
 * every module's version as None.
 */
static const ti_value *metadata_of(ti_source *src, const char *nest)
{
	ti_ckpt *ck = ti_source_file_count(src) == 1 ? ti_source_checkpoint(src, 0) : NULL;
	const ti_value *d = ck ? ti_ckpt_root(ck) : NULL;
	if (d && nest)
		d = ti_dict_get(d, nest);
	if (!d || d->kind != TI_DICT || !d->as.dict->attributes)
		return NULL;
	return ti_dict_get(d->as.dict->attributes, "_metadata");
}

/* _NormBase._load_from_state_dict: before version 2 (None too) a missing num_batches_tracked is filled with 0. */
static bool filled_by_norm(checker *c, const char *module, const char *name)
{
	const char *local = name + (*module ? strlen(module) + 1 : 0);
	if (strcmp(local, "num_batches_tracked"))
		return false;
	const char *key = ti_arena_printf(c->arena, "%s%s", c->wrapper, module);
	const ti_value *entry = c->metadata && key ? ti_dict_get(c->metadata, key) : NULL;
	const ti_value *version = entry ? ti_dict_get(entry, "version") : NULL;
	return !version || version->kind != TI_INT || version->as.integer < 2;
}

/* Shapes as load_state_dict compares them: a 1-d tensor loads into a 0-dim one through its first element. */
static bool same_shape(const ti_source_tensor *t, const ti_model_param *p)
{
	if (p->ndim == 0 && t->ndim == 1)
		return true;
	if (t->ndim != p->ndim)
		return false;
	for (int k = 0; k < p->ndim; k++)
		if (t->shape[k] != p->shape[k])
			return false;
	return true;
}

/* One module's turn: its own tensors (missing, size mismatch), then the keys under it nothing takes. */
static ti_status visit(checker *c, const char *module, const char **owners)
{
	const ti_model *m = c->model;
	ti_check_report *r = c->r;
	size_t mlen = strlen(module);
	for (size_t i = 0; i < m->param_count; i++) {
		if (strcmp(owners[i], module))
			continue;
		const ti_model_param *p = &m->params[i];
		uintptr_t idx = (uintptr_t)ti_strmap_get(&c->by_key, p->name);
		if (!idx) {
			if (filled_by_norm(c, module, p->name))
				continue;
			bool ignored = false;
			for (size_t k = 0; k < c->ignore_count && !ignored; k++)
				ignored = !fnmatch(c->ignores[k], p->name, 0);
			if (ignored)
				continue;
			if (!push(c->arena, &r->missing, &r->missing_count, p->name))
				return no_memory(c->err);
			continue;
		}
		entry *e = &c->e[idx - 1];
		e->used = true;
		if (!same_shape(e->t, p)) {
			ti_check_mismatch *more = ti_arena_calloc(c->arena, r->mismatch_count + 1, sizeof(*more));
			if (!more)
				return no_memory(c->err);
			if (r->mismatch_count)
				memcpy(more, r->mismatches, r->mismatch_count * sizeof(*more));
			int64_t *shape = ti_arena_calloc(c->arena, (size_t)e->t->ndim + 1, sizeof(*shape));
			if (!shape)
				return no_memory(c->err);
			if (e->t->ndim)
				memcpy(shape, e->t->shape, (size_t)e->t->ndim * sizeof(*shape));
			more[r->mismatch_count++] = (ti_check_mismatch){p->name, e->t->ndim, p->ndim, shape, p->shape};
			r->mismatches = more;
			continue;
		}
		r->matched++;
		r->bound[i] = e->t;
		if (e->t->dtype != p->dtype) {
			size_t k = 0;
			while (k < c->cast_count && !(c->casts[k].from == e->t->dtype && c->casts[k].to == p->dtype))
				k++;
			if (k == c->cast_count && k < sizeof(c->casts) / sizeof(c->casts[0]))
				c->casts[c->cast_count++] = (struct cast){e->t->dtype, p->dtype, 0, p->name};
			if (k < c->cast_count)
				c->casts[k].count++;
		}
	}
	/* keys under this module whose next name is no child module and no tensor of its own */
	for (size_t i = 0; i < c->count; i++) {
		const char *key = c->e[i].key;
		if (mlen && !(starts(key, module) && key[mlen] == '.'))
			continue;
		const char *rest = mlen ? key + mlen + 1 : key;
		const char *dot = strchr(rest, '.');
		size_t first = dot ? (size_t)(dot - rest) : strlen(rest);
		char child[1024];
		if (mlen + 1 + first >= sizeof(child))
			continue;
		snprintf(child, sizeof(child), "%s%s%.*s", module, mlen ? "." : "", (int)first, rest);
		if (ti_strmap_get(&c->modules, child))
			continue;
		bool local = false;
		for (size_t k = 0; k < m->param_count && !local; k++)
			local = !strcmp(owners[k], module) && !strcmp(m->params[k].name, child);
		/* the report outlives the source: its names are copied */
		if (!local && !push(c->arena, &r->unexpected, &r->unexpected_count, ti_arena_strdup(c->arena, key)))
			return no_memory(c->err);
	}
	return TI_OK;
}

static bool ignored(const checker *c, const char *name)
{
	for (size_t k = 0; k < c->ignore_count; k++)
		if (!fnmatch(c->ignores[k], name, 0))
			return true;
	return false;
}

/* The entry a state-dict name loads from, or NULL. */
static const entry *entry_of(checker *c, const char *name)
{
	uintptr_t idx = (uintptr_t)ti_strmap_get(&c->by_key, name);
	return idx ? &c->e[idx - 1] : NULL;
}

/* Whether two tensors of the file are one: the same view of one storage, or named so by safetensors' "tie.". */
static bool one_tensor(const ti_source_tensor *a, const ti_source_tensor *b)
{
	if ((a->tie_of && !strcmp(a->tie_of, b->name)) || (b->tie_of && !strcmp(b->tie_of, a->name)))
		return true;
	if (a->storage != b->storage || a->offset != b->offset || a->ndim != b->ndim)
		return false;
	for (int k = 0; k < a->ndim; k++)
		if (a->shape[k] != b->shape[k] || a->stride[k] != b->stride[k])
			return false;
	return true;
}

static bool equal_shapes(const ti_source_tensor *a, const ti_source_tensor *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (int k = 0; k < a->ndim; k++)
		if (a->shape[k] != b->shape[k])
			return false;
	return true;
}

/* Whether the file holds name only as a metadata tie (note_metadata_ties says so). */
static bool tie_only(const checker *c, const char *name)
{
	for (size_t i = 0; i < c->tie_only_count; i++)
		if (!strcmp(c->tie_only[i]->name, name))
			return true;
	return false;
}

/*
 * The ties the model declares (one Parameter under two names): the file
 * must hold them as one tensor, or as two of one shape, which
 * load_state_dict copies into the one in turn (the later name's values
 * stay). When it holds only one, the other is missing as PyTorch says; the
 * note says the tie would fill it.
 */
static ti_status check_ties(checker *c)
{
	const ti_model *m = c->model;
	ti_check_report *r = c->r;
	for (size_t i = 0; i < m->param_count; i++) {
		const ti_model_param *p = &m->params[i];
		if (!p->tied_to)
			continue;
		const entry *a = entry_of(c, p->name), *b = entry_of(c, p->tied_to);
		const char *text = NULL;
		if (a && b && one_tensor(a->t, b->t))
			continue;
		if (a && b && !equal_shapes(a->t, b->t)) {
			text = ti_arena_printf(c->arena,
			                       "'%s' is tied to '%s' in the model, but the checkpoint holds two tensors of different "
			                       "shapes: %s and %s", p->name, p->tied_to,
			                       size_text(c->arena, a->t->ndim, a->t->shape),
			                       size_text(c->arena, b->t->ndim, b->t->shape));
			if (!push(c->arena, &r->tie_errors, &r->tie_error_count, text))
				return no_memory(c->err);
			continue;
		}
		bool later = i > 0; /* whether p loads after its target, in state-dict order */
		for (size_t k = 0; k < m->param_count; k++)
			if (!strcmp(m->params[k].name, p->tied_to))
				later = i > k;
		if (a && b)
			text = ti_arena_printf(c->arena,
			                       "'%s' is tied to '%s' in the model, but the checkpoint holds them as two tensors: "
			                       "load_state_dict copies both into the one, and '%s''s values stay", p->name,
			                       p->tied_to, later ? p->name : p->tied_to);
		else if ((a || b) && !ignored(c, a ? p->tied_to : p->name) && !tie_only(c, a ? p->tied_to : p->name))
			text = ti_arena_printf(c->arena,
			                       "'%s' is tied to '%s', which the checkpoint holds: --ignore '%s' loads it, "
			                       "the tie filling it", a ? p->tied_to : p->name, a ? p->name : p->tied_to,
			                       a ? p->tied_to : p->name);
		if (text && !push(c->arena, &r->notes, &r->note_count, text))
			return no_memory(c->err);
	}
	return TI_OK;
}

/*
 * A name written only as a tie in a safetensors file's __metadata__: loading
 * the file's tensors leaves it missing, as PyTorch says; the note says what
 * restores it, which depends on whether the model ties the two.
 */
static ti_status note_metadata_ties(checker *c)
{
	const ti_model *m = c->model;
	for (size_t i = 0; i < c->tie_only_count; i++) {
		const ti_source_tensor *t = c->tie_only[i];
		bool tied = false;
		for (size_t k = 0; k < m->param_count && !tied; k++) {
			const ti_model_param *p = &m->params[k];
			tied = p->tied_to && ((!strcmp(p->name, t->name) && !strcmp(p->tied_to, t->tie_of)) ||
			                      (!strcmp(p->name, t->tie_of) && !strcmp(p->tied_to, t->name)));
		}
		if (!note(c, "'%s' is in the file only as a tie to '%s' (its __metadata__): safetensors' load_file does "
		             "not return it, so load_state_dict(strict=True) finds it missing; %s", t->name, t->tie_of,
		          tied ? "the model ties them: safetensors.torch.load_model(model, FILE) or the model's "
		                 "tie_weights() after loading restores it (--ignore it to check the load that way)"
		               : "the model does not tie them, so nothing restores it: write every name "
		                 "(tinspect convert --untie)"))
			return no_memory(c->err);
	}
	return TI_OK;
}

/* options->dtype: each floating tensor of the state dict in another dtype, in the file's order. */
static ti_status check_dtypes(checker *c, ti_dtype want)
{
	for (size_t i = 0; want && i < c->count; i++) {
		const ti_source_tensor *t = c->e[i].t;
		if (!ti_dtype_is_floating(t->dtype) || t->dtype == want)
			continue;
		const char *text = ti_arena_printf(c->arena, "%s (%s)", c->e[i].key, ti_dtype_name(t->dtype));
		if (!push(c->arena, &c->r->dtype_errors, &c->r->dtype_error_count, text))
			return no_memory(c->err);
	}
	return TI_OK;
}

/* PyTorch's words: the RuntimeError's text, or the repr of what load_state_dict returns. */
static ti_status words(checker *c, bool strict)
{
	ti_check_report *r = c->r;
	ti_arena *a = c->arena;
	size_t cap = 256;
	for (size_t i = 0; i < r->missing_count; i++)
		cap += strlen(r->missing[i]) + 8;
	for (size_t i = 0; i < r->unexpected_count; i++)
		cap += strlen(r->unexpected[i]) + 8;
	cap += r->mismatch_count * 1400;
	char *msg = ti_arena_alloc(a, cap);
	if (!msg)
		return no_memory(c->err);
	size_t n = 0;
	bool error = r->mismatch_count || (strict && (r->missing_count || r->unexpected_count));
#define PUT(...) (n += (size_t)snprintf(msg + n, n < cap ? cap - n : 0, __VA_ARGS__))
	if (error) {
		PUT("Error(s) in loading state_dict for %s:", r->class_name);
		for (int list = 0; strict && list < 2; list++) {
			size_t count = list ? r->unexpected_count : r->missing_count;
			const char **keys = list ? r->unexpected : r->missing;
			if (!count)
				continue;
			PUT("\n\t%s key(s) in state_dict: ", list ? "Unexpected" : "Missing");
			for (size_t i = 0; i < count; i++)
				PUT("%s\"%s\"", i ? ", " : "", keys[i]);
			PUT(". ");
		}
		for (size_t i = 0; i < r->mismatch_count; i++) {
			const ti_check_mismatch *x = &r->mismatches[i];
			PUT("\n\tsize mismatch for %s: copying a param with shape %s from checkpoint, the shape in current model is "
			    "%s.", x->name, size_text(a, x->ckpt_ndim, x->ckpt_shape), size_text(a, x->model_ndim, x->model_shape));
		}
		r->message = msg;
		return n < cap ? TI_OK : no_memory(c->err);
	}
	if (!r->missing_count && !r->unexpected_count) {
		r->result = "<All keys matched successfully>";
		return TI_OK;
	}
	PUT("_IncompatibleKeys(missing_keys=[");
	for (size_t i = 0; i < r->missing_count; i++)
		PUT("%s'%s'", i ? ", " : "", r->missing[i]);
	PUT("], unexpected_keys=[");
	for (size_t i = 0; i < r->unexpected_count; i++)
		PUT("%s'%s'", i ? ", " : "", r->unexpected[i]);
	PUT("])");
#undef PUT
	r->result = msg;
	return n < cap ? TI_OK : no_memory(c->err);
}

ti_status ti_check_load(const ti_model *model, ti_source *src, const ti_check_options *options,
                        ti_arena *arena, ti_check_report *out, ti_error *err)
{
	memset(out, 0, sizeof(*out));
	out->class_name = model->class_name ? model->class_name : "Model";
	checker c = {model, arena, out, NULL, 0, {0}, {0}, err, NULL, "", NULL, NULL, 0, {{0}}, 0, NULL, 0};
	ti_strmap_init(&c.by_key);
	ti_strmap_init(&c.modules);
	ti_status st = choose_entries(&c, src, options);
	if (!st)
		st = strip_wrappers(&c, options);
	c.metadata = st ? NULL : metadata_of(src, c.nest);
	for (size_t i = 0; !st && i < model->module_count; i++)
		if (ti_strmap_put(&c.modules, model->modules[i].prefix, (void *)1))
			st = no_memory(err);
	const char **owners = st ? NULL : ti_arena_calloc(arena, model->param_count + 1, sizeof(*owners));
	out->bound = st ? NULL : ti_arena_calloc(arena, model->param_count + 1, sizeof(*out->bound));
	if (!st && (!owners || !out->bound))
		st = no_memory(err);
	for (size_t i = 0; !st && i < model->param_count; i++)
		if (!(owners[i] = owner_of(&c, model->params[i].name)))
			st = no_memory(err);
	for (size_t i = 0; !st && i < model->module_count; i++)
		st = visit(&c, model->modules[i].prefix, owners);
	if (!st)
		st = check_ties(&c);
	if (!st)
		st = note_metadata_ties(&c);
	if (!st)
		st = check_dtypes(&c, options->dtype);
	for (size_t k = 0; !st && k < c.cast_count; k++) /* a warning, as PyTorch casts without a word */
		if (!note(&c, ti_dtype_is_sub_byte(c.casts[k].from)
		                  ? "%s%s: %s in the checkpoint, packed elements that torch has no dtype for: nothing casts "
		                    "them to the model's %s"
		                  : "%s%s: %s in the checkpoint, cast to the model's %s as load_state_dict does",
		          c.casts[k].first, c.casts[k].count > 1 ? ti_arena_printf(arena, " and %zu more", c.casts[k].count - 1) : "",
		          ti_dtype_name(c.casts[k].from), ti_dtype_name(c.casts[k].to)))
			st = no_memory(err);
	if (!st)
		st = words(&c, options->strict);
	ti_strmap_release(&c.by_key);
	ti_strmap_release(&c.modules);
	return st;
}
