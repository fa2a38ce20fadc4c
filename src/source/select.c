/*
 * select.c - which of a source's tensors a command reads, and under which
 * names: the state dict nested under a key of a training checkpoint, a
 * wrapper's prefix taken off, globs (source.h: ti_source_select).
 */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "source/source_internal.h"

const char *const ti_state_dict_keys[] = {"state_dict", "model", "model_state_dict", "module", "ema", "net", NULL};

const ti_key_wrapper ti_key_wrappers[] = {
	{"module.", "DataParallel/DistributedDataParallel"},
	{"_orig_mod.", "torch.compile"},
	{NULL, NULL},
};

static bool starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

/* The name with key + "." (if any) and strip taken off; NULL when it is not under key. */
static const char *renamed(const char *name, const char *key, const char *strip)
{
	if (key && *key) {
		size_t n = strlen(key);
		if (strncmp(name, key, n) || name[n] != '.')
			return NULL;
		name += n + 1;
	}
	if (strip && *strip && starts(name, strip) && name[strlen(strip)])
		name += strlen(strip);
	return name;
}

ti_status ti_source_select(ti_source *src, const ti_source_selection *sel, ti_error *err)
{
	size_t count = ti_source_tensor_count(src); /* lists a torch zip's tensors */
	if (src->list_status)
		return src->list_status;
	bool any_key = !sel->key || !*sel->key, any_strip = !sel->strip_prefix || !*sel->strip_prefix;
	for (size_t i = 0; i < count && !any_key; i++)
		any_key = renamed(src->tensors[i].name, sel->key, NULL) != NULL;
	if (!any_key) { /* name the keys that do hold tensors: the first component of each name, once */
		char keys[256] = "";
		size_t n = 0;
		for (size_t i = 0; i < count; i++) {
			const char *name = src->tensors[i].name, *dot = strchr(name, '.');
			int len = dot ? (int)(dot - name) : 0;
			bool seen = false;
			for (size_t j = 0; j < i && !seen && len; j++)
				seen = !strncmp(src->tensors[j].name, name, (size_t)len) && src->tensors[j].name[len] == '.';
			if (len && !seen && n + (size_t)len + 3 < sizeof(keys))
				n += (size_t)snprintf(keys + n, sizeof(keys) - n, "%s%.*s", n ? ", " : "", len, name);
		}
		return TI_FAIL(err, TI_E_INVALID, "--key %s: no tensor is under '%s.'%s%s", sel->key, sel->key,
		               *keys ? "; the keys holding tensors: " : "", keys);
	}
	size_t kept = 0;
	for (size_t i = 0; i < count; i++) {
		ti_source_tensor t = src->tensors[i];
		const char *name = renamed(t.name, sel->key, NULL);
		if (!name)
			continue;
		if (sel->strip_prefix && *sel->strip_prefix && starts(name, sel->strip_prefix) && name[strlen(sel->strip_prefix)]) {
			name += strlen(sel->strip_prefix);
			any_strip = true;
		}
		bool wanted = !sel->filter_count;
		for (size_t k = 0; k < sel->filter_count && !wanted; k++)
			wanted = !fnmatch(sel->filters[k], name, 0);
		if (!wanted)
			continue;
		t.name = name;
		const char *tie = t.tie_of ? renamed(t.tie_of, sel->key, sel->strip_prefix) : NULL;
		if (tie)
			t.tie_of = tie;
		src->tensors[kept++] = t;
	}
	if (!any_strip)
		return TI_FAIL(err, TI_E_INVALID, "--strip-prefix %s: no name starts with it", sel->strip_prefix);
	if (sel->filter_count && !kept)
		return TI_FAIL(err, TI_E_INVALID, "--filter: no tensor name matches");
	src->tensor_count = kept;
	return TI_OK;
}
