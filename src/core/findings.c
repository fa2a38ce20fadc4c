/*
 * findings.c - gathering findings, and judging what a pickle does (see findings.h).
 */
#include "core/findings.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tinspect/pickle.h"

enum { NAME_KEPT = 256 }; /* bytes of a module or global name kept in a finding */

void scan_findings_init(scan_findings *f, const ti_scan_options *opt)
{
	memset(f, 0, sizeof(*f));
	ti_arena_init(&f->arena, (size_t)256 << 20);
	ti_strmap_init(&f->index);
	f->opt = opt;
}

void scan_findings_release(scan_findings *f)
{
	ti_strmap_release(&f->index);
	ti_arena_release(&f->arena);
	memset(f, 0, sizeof(*f));
}

void scan_findings_record(scan_findings *f, const char *record)
{
	f->record = record ? ti_arena_strdup(&f->arena, record) : NULL;
	if (record && !f->record)
		f->failed = true;
}

static ti_scan_finding *new_finding(scan_findings *f, const char *key)
{
	if (key) {
		size_t at = (size_t)(uintptr_t)ti_strmap_get(&f->index, key);
		if (at) {
			f->items[at - 1].count++;
			return NULL;
		}
	}
	if (f->count >= SCAN_FINDINGS_MAX) {
		f->omitted++;
		return NULL;
	}
	if (f->count == f->capacity &&
	    ti_arena_array_grow(&f->arena, (void **)&f->items, &f->capacity, sizeof(*f->items), f->count + 1)) {
		f->failed = true;
		return NULL;
	}
	if (key) {
		const char *k = ti_arena_strdup(&f->arena, key);
		if (!k || ti_strmap_put(&f->index, k, (void *)(uintptr_t)(f->count + 1))) {
			f->failed = true;
			return NULL;
		}
	}
	ti_scan_finding *it = &f->items[f->count++];
	memset(it, 0, sizeof(*it));
	it->count = 1;
	return it;
}

void scan_add(scan_findings *f, ti_scan_severity severity, const char *kind, int64_t offset,
              const char *opcode, const char *module, const char *name, const char *fmt, ...)
{
	if (severity > f->worst)
		f->worst = severity;
	/* The same global under the same opcode in the same record is one finding, counted. */
	char key[512], *keyp = NULL;
	if (module && name) {
		int n = snprintf(key, sizeof(key), "%d\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s", (int)severity, kind,
		                 f->record ? f->record : "", opcode ? opcode : "", module, name);
		if (n > 0 && (size_t)n < sizeof(key))
			keyp = key;
	}
	ti_scan_finding *it = new_finding(f, keyp);
	if (!it)
		return;
	char message[TI_ERROR_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	it->severity = severity;
	it->kind = kind;
	it->record = f->record;
	it->offset = offset;
	it->opcode = opcode;
	/* A name is a pickle's string, up to a GiB: what a reader needs of it is its start. */
	it->module = module ? ti_arena_strndup(&f->arena, module, strnlen(module, NAME_KEPT)) : NULL;
	it->name = name ? ti_arena_strndup(&f->arena, name, strnlen(name, NAME_KEPT)) : NULL;
	it->message = ti_arena_strdup(&f->arena, message);
	if (!it->message || (module && !it->module) || (name && !it->name)) {
		f->failed = true;
		it->message = "out of memory";
	}
}

/* --allow: the user vouches for these, as torch.serialization.add_safe_globals does. */
static bool user_allowed(const scan_findings *f, const ti_global *g)
{
	if (!f->opt || !f->opt->allow_count)
		return false;
	char full[512];
	int n = snprintf(full, sizeof(full), "%s.%s", g->module, g->name);
	if (n < 0 || (size_t)n >= sizeof(full))
		return false;
	for (size_t i = 0; i < f->opt->allow_count; i++)
		if (!fnmatch(f->opt->allow[i], full, 0))
			return true;
	return false;
}

/*
 * builtins.getattr: named, it is unknown (weights_only refuses it); what it
 * is called with decides the rest (on_call), since Python 3.11 pickles an
 * Enum member with it.
 */
static bool is_getattr(const ti_global *g)
{
	return !strcmp(g->module, "builtins") && !strcmp(g->name, "getattr");
}

static void on_global(scan_findings *f, const char *op, const ti_global *g, int64_t offset)
{
	if (is_getattr(g) && !user_allowed(f, g)) {
		scan_add(f, TI_SCAN_UNKNOWN, "global", offset, op, g->module, g->name,
		         "%s builtins.getattr: reaches any attribute; its calls are judged each (an Enum member by name "
		         "is unknown, anything else dangerous)", op);
		return;
	}
	const char *why = NULL;
	ti_scan_severity s = user_allowed(f, g) ? TI_SCAN_SAFE : ti_scan_classify_global(g->module, g->name, &why);
	if (s == TI_SCAN_SAFE && !why)
		why = "allowed by --allow";
	if (s == TI_SCAN_SAFE && !(f->opt && f->opt->include_safe))
		return;
	scan_add(f, s, "global", offset, op, g->module, g->name, "%s %s.%s: %s", op, g->module, g->name, why);
}

/* torch.save calls _rebuild_tensor_v2 and OrderedDict once per tensor: judge each once. */
static void remember_safe(scan_findings *f, const ti_global *g)
{
	f->safe[f->safe_next++ % (sizeof(f->safe) / sizeof(f->safe[0]))] = g;
}

/* What an Enum lookup by value made (ti_scan_is_enum_lookup): a value, which nothing may call or BUILD on. */
static bool enum_member(const ti_value *v)
{
	const ti_value *c = v && v->kind == TI_OBJECT ? v->as.object->callable : NULL;
	return c && c->kind == TI_GLOBAL && !(v->flags & (TI_F_NEWOBJ | TI_F_INST)) &&
	       (ti_scan_is_enum_lookup(c->as.global->module, c->as.global->name, "REDUCE", v->as.object->args, NULL, 0) ||
	        ti_scan_is_enum_by_name(c->as.global->module, c->as.global->name, "REDUCE", v->as.object->args, NULL, 0));
}

static void on_call(scan_findings *f, const char *op, uint8_t opcode, const ti_value *callable, const ti_value *args,
                    int64_t offset)
{
	if (!callable) /* STACK_GLOBAL of values that are not strings */
		return;
	if (callable->kind == TI_GLOBAL) {
		const ti_global *g = callable->as.global;
		for (size_t i = 0; i < sizeof(f->safe) / sizeof(f->safe[0]); i++)
			if (g == f->safe[i])
				return;
		if (user_allowed(f, g)) {
			remember_safe(f, g);
			return;
		}
		if (is_getattr(g)) { /* named without a finding (on_global): every call of it is judged here */
			char package[128];
			if (ti_scan_is_enum_by_name(g->module, g->name, op, args, package, sizeof(package))) {
				const ti_global *cls = args->as.seq.items[0]->as.global;
				scan_add(f, TI_SCAN_UNKNOWN, "call", offset, op, g->module, g->name,
				         "%s calls builtins.getattr(%s.%s, '%.*s'): by all its names show, an Enum member looked up "
				         "by name, as Python 3.11 and later pickle one; unknown: needs %s to load", op, cls->module,
				         cls->name, (int)args->as.seq.items[1]->as.bytes.size, args->as.seq.items[1]->as.bytes.data, package);
			} else {
				scan_add(f, TI_SCAN_DANGEROUS, "call", offset, op, g->module, g->name,
				         "%s calls builtins.getattr: a builtin that reaches or changes any attribute of any "
				         "object", op);
			}
			return;
		}
		const char *why = NULL;
		ti_scan_severity as_global = ti_scan_classify_global(g->module, g->name, NULL);
		ti_scan_severity s = ti_scan_classify_call(g->module, g->name, op, &why);
		if (s == TI_SCAN_SAFE) {
			remember_safe(f, g);
			return;
		}
		char package[128];
		if (s == TI_SCAN_DANGEROUS &&
		    ti_scan_is_enum_lookup(g->module, g->name, op, args, package, sizeof(package))) {
			scan_add(f, TI_SCAN_UNKNOWN, "call", offset, op, g->module, g->name,
			         "%s calls %s.%s with one constant: by all its name shows, an Enum member looked up "
			         "by value; unknown: needs %s to load", op, g->module, g->name,
			         package);
			return;
		}
		/* INST names and calls at once; otherwise the call is news only when it is worse than the name. */
		if (opcode == 'i' || s > as_global)
			scan_add(f, s, "call", offset, op, g->module, g->name, "%s calls %s.%s: %s", op, g->module, g->name, why);
		return;
	}
	if (callable->kind == TI_OBJECT) {
		const ti_value *inner = callable->as.object->callable;
		if (enum_member(callable)) {
			scan_add(f, TI_SCAN_DANGEROUS, "call", offset, op, NULL, NULL,
			         "%s calls what %s.%s returned for one constant: no Enum member is called", op,
			         inner->as.global->module, inner->as.global->name);
			return;
		}
		if (inner && inner->kind == TI_GLOBAL)
			scan_add(f, TI_SCAN_DANGEROUS, "call", offset, op, NULL, NULL,
			         "%s calls what %s.%s returned: the function is chosen at load time", op,
			         inner->as.global->module, inner->as.global->name);
		else
			scan_add(f, TI_SCAN_DANGEROUS, "call", offset, op, NULL, NULL,
			         "%s calls what another call returned: the function is chosen at load time", op);
		return;
	}
	scan_add(f, TI_SCAN_SUSPICIOUS, "call", offset, op, NULL, NULL, "%s calls a %s, which cannot be called", op,
	         ti_kind_name(callable->kind));
}

/* torch.save's persistent ids: ('storage', class, key, location, numel[, view]). */
static bool is_storage_id(const ti_value *pid)
{
	if (pid->kind != TI_TUPLE || pid->as.seq.count == 0)
		return false;
	const ti_value *tag = pid->as.seq.items[0];
	return tag->kind == TI_STR && tag->as.bytes.size == 7 && !memcmp(tag->as.bytes.data, "storage", 7);
}

/*
 * The legacy format's ('module', cls, source_file, source): what old
 * torch.save wrote for every nn.Module of a whole-model save.
 */
static const ti_global *module_id_class(const ti_value *pid)
{
	if (pid->kind != TI_TUPLE || pid->as.seq.count != 4)
		return NULL;
	const ti_value *tag = pid->as.seq.items[0], *cls = pid->as.seq.items[1];
	if (tag->kind != TI_STR || tag->as.bytes.size != 6 || memcmp(tag->as.bytes.data, "module", 6) || cls->kind != TI_GLOBAL)
		return NULL;
	return cls->as.global;
}

ti_status scan_persistent_load(void *ctx, ti_arena *arena, ti_value *pid, ti_value **out, ti_error *err)
{
	(void)ctx;
	(void)arena;
	(void)err;
	if (module_id_class(pid))
		*out = pid->as.seq.items[1]; /* _legacy_load's persistent_load returns data[0], the class */
	return TI_OK;
}

ti_status scan_build(void *ctx, ti_arena *arena, ti_value *object, ti_value *state, int *handled, ti_error *err)
{
	(void)arena;
	(void)err;
	scan_findings *f = ctx;
	*handled = 0; /* the machine still records the state */
	if (object->kind != TI_OBJECT || object->as.object->callable->kind != TI_GLOBAL || !state || state->kind != TI_DICT ||
	    !ti_dict_get(state, "_parameters") || !ti_dict_get(state, "_modules"))
		return TI_OK;
	const ti_global *g = object->as.object->callable->as.global;
	const char *why = NULL;
	ti_scan_severity s = user_allowed(f, g) ? TI_SCAN_SAFE : ti_scan_classify_global(g->module, g->name, &why);
	if (s != TI_SCAN_SAFE || (f->opt && f->opt->include_safe))
		scan_add(f, s, "pickle", -1, "BUILD", g->module, g->name,
		         "BUILD of a %s.%s with _parameters and _modules: a whole pickled module, so loading needs that "
		         "class's code", g->module, g->name);
	return TI_OK;
}

ti_status scan_observe(void *ctx, uint8_t opcode, const ti_value *target, int64_t offset, ti_error *err)
{
	(void)err;
	scan_findings *f = ctx;
	offset += f->offset_base;
	const char *op = ti_pickle_opcode_name(opcode);
	if (!op)
		op = "?";
	if (!target) {
		scan_add(f, TI_SCAN_DANGEROUS, "global", offset, op, NULL, NULL,
		         "%s of values that are not strings: the global is assembled at load time", op);
		return TI_OK;
	}
	switch (opcode) {
	case 'c':  /* GLOBAL */
	case 0x93: /* STACK_GLOBAL */
	case 0x82: /* EXT1 */
	case 0x83: /* EXT2 */
	case 0x84: /* EXT4 */
		f->globals++;
		if (target->kind == TI_GLOBAL)
			on_global(f, op, target->as.global, offset);
		return TI_OK;
	case 'b': /* BUILD */
		if (enum_member(target))
			scan_add(f, TI_SCAN_DANGEROUS, "build", offset, op, NULL, NULL,
			         "BUILD sets state on what %s.%s returned for one constant: no Enum member takes state",
			         target->as.object->callable->as.global->module, target->as.object->callable->as.global->name);
		if (target->kind == TI_GLOBAL)
			scan_add(f, TI_SCAN_DANGEROUS, "build", offset, op, target->as.global->module, target->as.global->name,
			         "BUILD sets attributes on %s.%s itself, changing it for everything that uses it",
			         target->as.global->module, target->as.global->name);
		return TI_OK;
	case 'P': /* PERSID */
	case 'Q': /* BINPERSID */
		if (module_id_class(target)) {
			/* judged as its class is: the global itself was judged when it was named */
			const ti_global *g = module_id_class(target);
			const char *why = NULL;
			ti_scan_severity s = user_allowed(f, g) ? TI_SCAN_SAFE : ti_scan_classify_global(g->module, g->name, &why);
			if (s != TI_SCAN_SAFE || (f->opt && f->opt->include_safe))
				scan_add(f, s, "pickle", offset, op, g->module, g->name,
				         "%s ('module', %s.%s, ...): a whole pickled module; torch.load returns the class and "
				         "builds the module with it, so loading needs that class's code",
				         op, g->module, g->name);
		} else if (!is_storage_id(target))
			scan_add(f, TI_SCAN_SUSPICIOUS, "pickle", offset, op, NULL, NULL,
			         "%s of a %s that is not a ('storage', ...) tuple: weights_only=True refuses it, torch's "
			         "full loader looks it up", op, ti_kind_name(target->kind));
		return TI_OK;
	case 'i': /* INST: names the global and calls it */
		f->globals++;
		on_call(f, op, opcode, target, NULL, offset);
		return TI_OK;
	default: /* REDUCE, NEWOBJ, NEWOBJ_EX, OBJ */
		on_call(f, op, opcode, target, NULL, offset);
		return TI_OK;
	}
}

ti_status scan_diverge(void *ctx, uint8_t opcode, const char *what, int64_t offset, ti_error *err)
{
	(void)err;
	scan_findings *f = ctx;
	scan_add(f, TI_SCAN_SUSPICIOUS, "pickle", offset + f->offset_base, ti_pickle_opcode_name(opcode), NULL, NULL, "%s",
	         what);
	return TI_OK;
}

ti_status scan_observe_call(void *ctx, uint8_t opcode, const ti_value *callable, const ti_value *args, int64_t offset,
                            ti_error *err)
{
	(void)err;
	scan_findings *f = ctx;
	const char *op = ti_pickle_opcode_name(opcode);
	if (opcode == 'i') /* INST names the global as it calls it */
		f->globals++;
	on_call(f, op ? op : "?", opcode, callable, args, offset + f->offset_base);
	return TI_OK;
}
