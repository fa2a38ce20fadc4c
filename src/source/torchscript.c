/*
 * torchscript.c - the source row for TorchScript archives (torch.jit.save
 * of a scripted or traced module): a zip like torch.save's, told apart by
 * its constants.pkl record (torch.serialization's _is_torchscript_zip).
 *
 * data.pkl holds the module as objects of __torch__ classes, NEWOBJ then
 * BUILD with a dict of every attribute; tensors are persistent ids into
 * data/N, as in torch.save. Which attributes are parameters and buffers the
 * pickle does not say: the class does, in the TorchScript source of code/
 * that torch.jit.load compiles (import_source.cpp importClass):
 *
 *   class Linear(Module):
 *     __parameters__ = ["weight", "bias", ]
 *     __buffers__ = []
 *     weight : Tensor
 *     __annotations__["0"] = __torch__.foo.Block   (a name that is no identifier)
 *     in_features : Final[int] = 3                 (a constant, no attribute)
 *
 * So the tensors listed are exactly torch.jit.load(f).state_dict()'s, in
 * its order (nn.Module.state_dict over the C++ slots, module.h's policies):
 * per module, its parameters that hold a tensor in declaration order, then
 * its buffers typed Tensor that hold one (TorchScript keeps no record of
 * persistent=False: every buffer is in its state_dict), then its children,
 * the attributes that hold an object of a class declared (Module). Other
 * attributes (training, plain tensors, lists) are in no state_dict and not
 * listed. constants.pkl's tensors, which the code calls CONSTANTS.c0,
 * CONSTANTS.c1, ..., are listed by inspect as constants.c0, ...: they are
 * in no state_dict either, so they are no tensors of the source (convert,
 * check and diff see the state_dict alone). Nothing in code/ is run: it is
 * read as text for the class declarations alone.
 */
#include "source/source_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/findings.h"
#include "core/torch_unpickle.h"
#include "format/zip_archive.h"
#include "util/strmap.h"

/*
 * Ceilings: a code record read whole (resnet18's largest is 3 KiB; big
 * language models' are a few MiB), the nesting of modules (Python's
 * recursion limit), the names listed and the modules visited: a module
 * may be shared (state_dict names it under each of its names), so a
 * file whose every module holds the next one twice would be walked
 * 2^depth times.
 */
enum {
	CODE_MAX = 64 << 20, CONSTANTS_MAX = 256 << 20, MODULE_DEPTH_MAX = 1000, NAMES_MAX = 1 << 22,
	MODULES_MAX = 1 << 20, /* a large language model has some ten thousand */
};

typedef struct ts_attr {
	const char *name, *type;
	bool parameter, buffer;
} ts_attr;

typedef struct ts_class {
	bool is_module;   /* declared class NAME(Module): */
	ts_attr *attrs;   /* in declaration order: the slots' order */
	size_t count, capacity;
	const char **params, **buffers; /* __parameters__, __buffers__ */
	size_t param_count, buffer_count, param_capacity, buffer_capacity;
} ts_class;

typedef struct ts_reader {
	ti_source *s;
	ti_zip *zip;
	const char *root;
	ti_strmap classes; /* qualified name -> ts_class */
	ti_strmap files;   /* code record read -> (void *)1 */
	ti_entry *entries;
	size_t entry_count, entry_capacity;
	size_t visits;      /* modules walked, shared ones each time */
	const char *member; /* the code record being parsed, for errors */
} ts_reader;

static ti_status no_memory(ti_error *err) { return source_out_of_memory(err); }

/* ---- the class declarations of code/ ---- */

static bool is_space(char c) { return c == ' ' || c == '\t'; }
static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static ti_status code_error(ts_reader *r, size_t line, const char *what, ti_error *err)
{
	TI_FAIL(err, TI_E_CORRUPT, "%s in TorchScript code at line %zu", what, line);
	ti_error_at(err, r->member, -1);
	return TI_E_CORRUPT;
}

/* A quoted string literal at *p (as the printer writes them: "..." or '...', backslash escapes), into the arena. */
static ti_status string_literal(ts_reader *r, const char **p, const char *end, const char **out, size_t line,
                                ti_error *err)
{
	const char *q = *p;
	if (q >= end || (*q != '"' && *q != '\''))
		return code_error(r, line, "a name is not a string", err);
	char quote = *q++;
	const char *close = q; /* sized to the literal, not the rest of the line: a line may hold a million names */
	while (close < end && *close != quote)
		close += *close == '\\' && close + 1 < end ? 2 : 1;
	char *buf = ti_arena_alloc(&r->s->arena, (size_t)(close - q) + 1);
	if (!buf)
		return no_memory(err);
	size_t n = 0;
	while (q < end && *q != quote) {
		char c = *q++;
		if (c == '\\') {
			if (q >= end)
				break;
			c = *q++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case '\\': case '"': case '\'': break;
			case 'x': {
				unsigned v = 0;
				for (int k = 0; k < 2; k++, q++) {
					char h = q < end ? *q : 0;
					int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
					if (d < 0)
						return code_error(r, line, "a bad \\x escape", err);
					v = v * 16 + (unsigned)d;
				}
				c = (char)v;
				break;
			}
			default:
				return code_error(r, line, "an unknown escape in a string", err);
			}
		}
		if (!c)
			return code_error(r, line, "a NUL in a name", err);
		buf[n++] = c;
	}
	if (q >= end)
		return code_error(r, line, "an unterminated string", err);
	buf[n] = '\0';
	*p = q + 1;
	*out = buf;
	return TI_OK;
}

/* ["a", "b", ] after the '=' of __parameters__ or __buffers__. */
static ti_status name_list(ts_reader *r, const char *p, const char *end, const char ***names, size_t *count,
                           size_t *capacity, size_t line, ti_error *err)
{
	while (p < end && is_space(*p))
		p++;
	if (p >= end || *p++ != '[')
		return code_error(r, line, "a list of names without '['", err);
	for (;;) {
		while (p < end && (is_space(*p) || *p == ','))
			p++;
		if (p < end && *p == ']')
			return TI_OK;
		const char *name;
		ti_status st = string_literal(r, &p, end, &name, line, err);
		if (st)
			return st;
		if (ti_arena_array_grow(&r->s->arena, (void **)names, capacity, sizeof(**names), *count + 1))
			return no_memory(err);
		(*names)[(*count)++] = name;
	}
}

static ti_status add_attr(ts_reader *r, ts_class *c, const char *name, const char *type, size_t tlen, ti_error *err)
{
	while (tlen && is_space(type[tlen - 1]))
		tlen--;
	if (ti_arena_array_grow(&r->s->arena, (void **)&c->attrs, &c->capacity, sizeof(*c->attrs), c->count + 1))
		return no_memory(err);
	const char *t = ti_arena_strndup(&r->s->arena, type, tlen);
	if (!t)
		return no_memory(err);
	c->attrs[c->count++] = (ts_attr){.name = name, .type = t};
	return TI_OK;
}

/* One statement of a class body (indented two spaces): what it declares, if anything. */
static ti_status class_statement(ts_reader *r, ts_class *c, const char *p, const char *end, size_t line, ti_error *err)
{
	static const char params[] = "__parameters__", buffers[] = "__buffers__", annotations[] = "__annotations__[";
	if (!strncmp(p, annotations, sizeof(annotations) - 1) && (size_t)(end - p) > sizeof(annotations)) {
		/* __annotations__["0"] = TYPE: an attribute whose name is no identifier */
		p += sizeof(annotations) - 1;
		const char *name;
		ti_status st = string_literal(r, &p, end, &name, line, err);
		if (st)
			return st;
		while (p < end && is_space(*p))
			p++;
		if (p + 1 >= end || p[0] != ']')
			return code_error(r, line, "an __annotations__ entry without ']'", err);
		for (p++; p < end && is_space(*p); p++)
			;
		if (p >= end || *p++ != '=')
			return code_error(r, line, "an __annotations__ entry without '='", err);
		while (p < end && is_space(*p))
			p++;
		return add_attr(r, c, name, p, (size_t)(end - p), err);
	}
	const char *id = p;
	while (p < end && is_ident(*p))
		p++;
	size_t idlen = (size_t)(p - id);
	if (!idlen)
		return TI_OK; /* a decorator, a docstring: nothing declared */
	const char *after = p;
	while (p < end && is_space(*p))
		p++;
	if (p < end && *p == '=' && (idlen == sizeof(params) - 1 && !memcmp(id, params, idlen)))
		return name_list(r, p + 1, end, &c->params, &c->param_count, &c->param_capacity, line, err);
	if (p < end && *p == '=' && (idlen == sizeof(buffers) - 1 && !memcmp(id, buffers, idlen)))
		return name_list(r, p + 1, end, &c->buffers, &c->buffer_count, &c->buffer_capacity, line, err);
	if (p >= end || *p != ':' || (idlen == 3 && !memcmp(id, "def", 3) && after < end && is_space(*after)))
		return TI_OK; /* a method, or any other assignment (__constants__ ...) */
	const char *type = p + 1;
	if (memchr(type, '=', (size_t)(end - type)))
		return TI_OK; /* NAME : Final[int] = 3: a constant, not a slot */
	while (type < end && is_space(*type))
		type++;
	const char *name = ti_arena_strndup(&r->s->arena, id, idlen);
	return name ? add_attr(r, c, name, type, (size_t)(end - type), err) : no_memory(err);
}

/* Marks the attributes __parameters__ and __buffers__ name. */
static ti_status finish_class(ts_class *c, ti_error *err)
{
	ti_strmap kinds;
	ti_strmap_init(&kinds);
	for (size_t i = 0; i < c->param_count; i++)
		if (ti_strmap_put(&kinds, c->params[i], (void *)1))
			goto fail;
	for (size_t i = 0; i < c->buffer_count; i++) {
		uintptr_t was = (uintptr_t)ti_strmap_get(&kinds, c->buffers[i]);
		if (ti_strmap_put(&kinds, c->buffers[i], (void *)(was | 2)))
			goto fail;
	}
	for (size_t i = 0; i < c->count; i++) {
		uintptr_t k = (uintptr_t)ti_strmap_get(&kinds, c->attrs[i].name);
		c->attrs[i].parameter = k & 1;
		c->attrs[i].buffer = (k & 2) && !(k & 1);
	}
	ti_strmap_release(&kinds);
	return TI_OK;
fail:
	ti_strmap_release(&kinds);
	return no_memory(err);
}

/* Reads the classes a code record declares, keyed module.Name, module being the record's path. */
static ti_status parse_code(ts_reader *r, const char *record, const char *module, ti_error *err)
{
	int64_t index = ti_zip_find(r->zip, record);
	if (ti_strmap_put(&r->files, record, (void *)1))
		return no_memory(err);
	if (index < 0)
		return TI_OK; /* its classes stay unknown: the caller says which one was wanted */
	uint8_t *data;
	size_t size;
	if (ti_zip_read(r->zip, (size_t)index, CODE_MAX, &data, &size, err)) {
		ti_error_at(err, record, -1);
		return err->code;
	}
	r->member = record;
	ti_status st = TI_OK;
	ts_class *c = NULL;
	const char *text = (const char *)data, *end = text + size;
	size_t line = 0;
	for (const char *p = text; p < end && !st; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		if (eol > p && eol[-1] == '\r')
			eol--;
		if (!strncmp(p, "class ", 6) && eol - p > 6) {
			if (c && (st = finish_class(c, err)))
				break;
			const char *n = p + 6, *q = n;
			while (q < eol && is_ident(*q))
				q++;
			if (q == n) {
				st = code_error(r, line + 1, "a class without a name", err);
				break;
			}
			const char *key = ti_arena_printf(&r->s->arena, "%s.%.*s", module, (int)(q - n), n);
			c = ti_arena_calloc(&r->s->arena, 1, sizeof(*c));
			if (!key || !c) {
				st = no_memory(err);
				break;
			}
			c->is_module = eol - q >= 8 && !strncmp(q, "(Module)", 8);
			void *earlier;
			if (ti_strmap_add(&r->classes, key, c, &earlier) < 0)
				st = no_memory(err);
		} else if (p < eol && !is_space(*p)) {
			if (c && (st = finish_class(c, err)))
				break;
			c = NULL; /* a function or import at the top level */
		} else if (c && eol - p > 2 && p[0] == ' ' && p[1] == ' ' && !is_space(p[2])) {
			st = class_statement(r, c, p + 2, eol, line + 1, err);
		}
		p = nl ? nl + 1 : end;
	}
	if (!st && c)
		st = finish_class(c, err);
	free(data);
	return st;
}

/* The class a __torch__ global names, its code read on first need; NULL with err set when code/ has none. */
static ts_class *find_class(ts_reader *r, const ti_global *g, ti_error *err)
{
	const char *key = ti_arena_printf(&r->s->arena, "%s.%s", g->module, g->name);
	if (!key) {
		no_memory(err);
		return NULL;
	}
	ts_class *c = ti_strmap_get(&r->classes, key);
	if (c)
		return c;
	/* __torch__.a.b.Name is declared in code/__torch__/a/b.py (import_source.cpp findNamedType) */
	char *record = ti_arena_printf(&r->s->arena, "%s/code/%s.py", r->root, g->module);
	if (!record) {
		no_memory(err);
		return NULL;
	}
	for (char *p = record + strlen(r->root) + 6; *p; p++)
		if (*p == '.' && strcmp(p, ".py"))
			*p = '/';
	if (!ti_strmap_get(&r->files, record) && parse_code(r, record, g->module, err))
		return NULL;
	if (!(c = ti_strmap_get(&r->classes, key))) {
		TI_FAIL(err, TI_E_CORRUPT, "class '%.200s' of data.pkl has no declaration in the archive's code", key);
		ti_error_at(err, record, -1);
	}
	return c;
}

/* ---- the module tree, as state_dict() walks it ---- */

static bool is_torch_class(const ti_value *v)
{
	if (!v || v->kind != TI_OBJECT || !v->as.object->callable || v->as.object->callable->kind != TI_GLOBAL)
		return false;
	const char *m = v->as.object->callable->as.global->module;
	return !strncmp(m, "__torch__", 9) && (m[9] == '\0' || m[9] == '.');
}

static ti_status add_entry(ts_reader *r, const char *prefix, const char *name, const ti_value *v, ti_error *err)
{
	if (r->entry_count >= NAMES_MAX)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d parameters and buffers", NAMES_MAX);
	if (ti_arena_array_grow(&r->s->arena, (void **)&r->entries, &r->entry_capacity, sizeof(*r->entries),
	                        r->entry_count + 1))
		return no_memory(err);
	const char *full = ti_arena_printf(&r->s->arena, "%s%s", prefix, name);
	if (!full)
		return no_memory(err);
	r->entries[r->entry_count++] = (ti_entry){.name = full, .value = v};
	return TI_OK;
}

static ti_status walk_module(ts_reader *r, const ti_value *obj, const char *prefix, size_t depth, ti_error *err)
{
	const ti_global *g = obj->as.object->callable->as.global;
	if (depth > MODULE_DEPTH_MAX)
		return TI_FAIL(err, TI_E_LIMIT, "modules nested more than %d deep", MODULE_DEPTH_MAX);
	if (++r->visits > MODULES_MAX)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d modules, counting a shared one under each name", MODULES_MAX);
	ts_class *c = find_class(r, g, err);
	if (!c)
		return err->code;
	if (!depth && !c->is_module) /* torch.jit.load's root is a ScriptModule */
		return TI_FAIL(err, TI_E_UNSUPPORTED, "data.pkl holds an object of '%.200s.%.200s', a TorchScript class that is "
		               "no module", g->module, g->name);
	const ti_value *state = obj->as.object->state;
	if (state && state->kind != TI_DICT)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "module '%.200s.%.200s' is restored by its __setstate__ from a %s: "
		               "its tensors are set by TorchScript code, which tinspect does not run",
		               g->module, g->name, ti_kind_name(state->kind));
	ti_strmap slots;
	ti_strmap_init(&slots);
	ti_status st = TI_OK;
	for (size_t i = 0; state && i < state->as.dict->count && !st; i++) { /* the last of a duplicate wins */
		const ti_value *k = state->as.dict->keys[i];
		if (k->kind == TI_STR && ti_strmap_put(&slots, k->as.bytes.data, state->as.dict->values[i]))
			st = no_memory(err);
	}
	/* parameters, then buffers, then children: nn.Module._save_to_state_dict, then state_dict's recursion */
	for (int pass = 0; pass < 3 && !st; pass++)
		for (size_t i = 0; i < c->count && !st; i++) {
			const ts_attr *a = &c->attrs[i];
			const ti_value *v = ti_strmap_get(&slots, a->name);
			if (!v)
				continue;
			if (pass == 0 && a->parameter && v->kind == TI_TENSOR)
				st = add_entry(r, prefix, a->name, v, err);
			else if (pass == 1 && a->buffer && v->kind == TI_TENSOR && !strcmp(a->type, "Tensor"))
				st = add_entry(r, prefix, a->name, v, err);
			else if (pass == 2 && !a->parameter && !a->buffer && is_torch_class(v)) {
				ts_class *child = find_class(r, v->as.object->callable->as.global, err);
				const char *inner = child ? ti_arena_printf(&r->s->arena, "%s%s.", prefix, a->name) : NULL;
				if (!child)
					st = err->code;
				else if (!inner)
					st = no_memory(err);
				else if (child->is_module)
					st = walk_module(r, v, inner, depth + 1, err);
			}
		}
	ti_strmap_release(&slots);
	return st;
}

/* ---- constants.pkl ---- */

static const char *keep(ti_source *s, const char *text, bool *failed)
{
	char *copy = text ? ti_arena_strdup(&s->arena, text) : NULL;
	*failed |= text && !copy;
	return copy;
}

/* The part's safety: its checkpoint's (data.pkl) findings, then constants.pkl's, copied to the source. */
static ti_status judge(ti_source *s, source_part *p, const scan_findings *more, ti_error *err)
{
	const ti_scan_finding *first;
	size_t n;
	ti_scan_severity worst = ti_ckpt_safety(p->ckpt, &first, &n);
	if (more->failed)
		return no_memory(err);
	ti_scan_finding *all = ti_arena_calloc(&s->arena, n + more->count + 1, sizeof(*all));
	if (!all)
		return no_memory(err);
	bool failed = false;
	for (size_t i = 0; i < n + more->count; i++) {
		const ti_scan_finding *f = i < n ? &first[i] : &more->items[i - n];
		all[i] = *f;
		all[i].record = keep(s, f->record, &failed);
		all[i].module = keep(s, f->module, &failed);
		all[i].name = keep(s, f->name, &failed);
		all[i].message = keep(s, f->message, &failed);
	}
	if (failed)
		return no_memory(err);
	p->judged = true;
	p->worst = more->worst > worst ? more->worst : worst;
	p->findings = all;
	p->finding_count = n + more->count;
	return TI_OK;
}

/* The tuple of constants.pkl, its tensors' storages checked against the constants/<key> records. */
static ti_status read_constants(ts_reader *r, source_part *p, ti_error *err)
{
	char *name = ti_arena_printf(&r->s->arena, "%s/constants.pkl", r->root);
	if (!name)
		return no_memory(err);
	int64_t index = ti_zip_find(r->zip, name);
	if (index < 0)
		return TI_OK;
	uint8_t *data;
	size_t size;
	if (ti_zip_read(r->zip, (size_t)index, CONSTANTS_MAX, &data, &size, err)) {
		ti_error_at(err, name, -1);
		return err->code;
	}
	ti_limits lim;
	ti_limits_default(&lim);
	ti_torch torch;
	ti_torch_init(&torch, &r->s->arena, lim.records_max);
	scan_findings judged; /* judged as scan judges it, beside data.pkl: inspect refuses what is dangerous */
	scan_findings_init(&judged, NULL);
	scan_findings_record(&judged, name);
	torch.findings = &judged;
	ti_pickle_hooks hooks;
	ti_torch_hooks(&torch, &hooks);
	ti_value *root = NULL;
	ti_status st = ti_pickle_load(data, size, &r->s->arena, &hooks, &lim.pickle, &root, NULL, err);
	free(data);
	if (!st)
		st = judge(r->s, p, &judged, err);
	scan_findings_release(&judged);
	if (st) {
		ti_torch_release(&torch);
		ti_error_at(err, name, -1);
		return st;
	}
	/* key K is the record constants/K (import.cpp readArchive("constants")) */
	for (size_t i = 0; i < torch.storage_count && !st; i++) {
		ti_storage *sto = torch.storages[i];
		char *rec = ti_arena_printf(&r->s->arena, "%s/constants/%s", r->root, sto->key);
		int64_t k = rec ? ti_zip_find(r->zip, rec) : -1;
		if (!rec) {
			st = no_memory(err);
		} else if (k < 0) {
			st = TI_FAIL(err, TI_E_CORRUPT, "constant storage '%.64s' has no record", sto->key);
			ti_error_at(err, rec, -1);
		} else if (ti_zip_records(r->zip)[k].size != (uint64_t)sto->nbytes) {
			st = TI_FAIL(err, TI_E_CORRUPT, "record holds %llu bytes but constant storage '%.64s' declares %lld",
			             (unsigned long long)ti_zip_records(r->zip)[k].size, sto->key, (long long)sto->nbytes);
			ti_error_at(err, rec, -1);
		}
		sto->record_index = k;
		sto->record_size = (uint64_t)sto->nbytes;
	}
	ti_torch_release(&torch);
	if (st)
		return st;
	if (root->kind != TI_TUPLE)
		return TI_FAIL(err, TI_E_CORRUPT, "constants.pkl holds a %s, not a tuple", ti_kind_name(root->kind));
	for (size_t i = 0; i < root->as.seq.count && !st; i++) {
		char cname[32];
		snprintf(cname, sizeof(cname), "c%zu", i);
		st = add_entry(r, "constants.", cname, root->as.seq.items[i], err);
	}
	return st;
}

/* ---- the row ---- */

/* Tensors of these entries share storages as listed: the notes count sharing over these names alone. */
static void count_sharing(const ti_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (e[i].value->kind == TI_TENSOR && e[i].value->as.tensor->storage)
			e[i].value->as.tensor->storage->tensor_count = 0;
	for (size_t i = 0; i < n; i++)
		if (e[i].value->kind == TI_TENSOR && e[i].value->as.tensor->storage)
			e[i].value->as.tensor->storage->tensor_count++;
}

/*
 * A zip is a TorchScript archive when its checkpoint found constants.pkl
 * in its root folder, as torch.load's _is_torchscript_zip asks.
 */
static bool claims_torchscript(const ti_ckpt *ckpt)
{
	return !strcmp(ti_ckpt_get_info(ckpt)->format, "torchscript-zip");
}

/* The module, read on from the checkpoint source.c opened, from its own archive. */
static ti_status read_torchscript(ti_source *s, source_part *p, ti_error *err)
{
	ti_status st = TI_OK;
	ts_reader r = {.s = s, .zip = ti_ckpt_zip(p->ckpt), .root = ti_ckpt_get_info(p->ckpt)->root};
	ti_strmap_init(&r.classes);
	ti_strmap_init(&r.files);
	const ti_value *root = ti_ckpt_root(p->ckpt);
	if (!is_torch_class(root))
		st = TI_FAIL(err, TI_E_CORRUPT, "data.pkl holds a %s, not a TorchScript module",
		             root ? ti_kind_name(root->kind) : "nothing");
	if (!st)
		st = walk_module(&r, root, "", 0, err);
	size_t state_dict = r.entry_count;
	if (!st)
		st = read_constants(&r, p, err);
	if (!st) {
		p->entries = r.entries;
		p->entry_count = r.entry_count;
		count_sharing(r.entries, r.entry_count);
		st = source_list_ckpt_entries(s, p, r.entries, state_dict, err);
	}
	ti_strmap_release(&r.classes);
	ti_strmap_release(&r.files);
	return st;
}

const source_row source_torchscript = {.format = TI_SOURCE_TORCHSCRIPT, .kind = TI_FILE_ZIP,
                                       .claims_checkpoint = claims_torchscript, .read_checkpoint = read_torchscript};
