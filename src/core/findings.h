/*
 * findings.h - collecting what a scan finds (library-internal).
 *
 * A scan_findings gathers findings in one arena: the same global, opcode
 * and record found again only counts up, so a pickle that names a class a
 * million times is one line. It also holds the pickle observer that turns
 * what the pickle machine sees into findings (pickle.h's observe hook);
 * the checkpoint reader runs it beside its own hooks, so inspect and
 * convert judge a checkpoint by the same rules as scan.
 */
#ifndef TINSPECT_SCAN_FINDINGS_H
#define TINSPECT_SCAN_FINDINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "tinspect/arena.h"
#include "tinspect/error.h"
#include "tinspect/findings.h"
#include "tinspect/value.h"
#include "util/strmap.h"

enum { SCAN_FINDINGS_MAX = 10000 }; /* distinct findings kept; the rest are counted */

typedef struct scan_findings {
	ti_arena arena;
	ti_scan_finding *items;
	size_t count, capacity;
	ti_strmap index;        /* dedupe key -> position + 1 */
	ti_scan_severity worst;
	const ti_scan_options *opt;
	const char *record;     /* the record being scanned (arena copy), NULL for the file */
	int64_t offset_base;    /* added to the observer's offsets: where the pickle starts in its record */
	size_t globals;         /* global references seen */
	size_t omitted;         /* findings past SCAN_FINDINGS_MAX */
	bool failed;            /* out of memory: findings are incomplete */
	const ti_global *safe[8]; /* globals lately called safely: a known global is made once per pickle */
	unsigned safe_next;
} scan_findings;

void scan_findings_init(scan_findings *f, const ti_scan_options *opt);
void scan_findings_release(scan_findings *f);
/* Sets the record that later findings are in (copied); NULL for the file itself. */
void scan_findings_record(scan_findings *f, const char *record);

/* Adds a finding; module and name may be NULL. Never fails: out of memory sets failed. */
void scan_add(scan_findings *f, ti_scan_severity severity, const char *kind, int64_t offset,
              const char *opcode, const char *module, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));

/*
 * A persistent_load hook for the legacy format's pickles: a ('module', cls,
 * source_file, source) id becomes cls, as torch's legacy loader makes it,
 * so the NEWOBJ that follows calls the class; other ids stay as they are.
 */
ti_status scan_persistent_load(void *ctx, ti_arena *arena, ti_value *pid, ti_value **out, ti_error *err);

/*
 * A BUILD hook that only judges: the state of an nn.Module (a dict with
 * _parameters and _modules) built on an instance of a class says the file is
 * a whole pickled module, whose loading needs that class's code.
 */
ti_status scan_build(void *ctx, ti_arena *arena, ti_value *object, ti_value *state, int *handled, ti_error *err);

/* The pickle machine's observe hook, with a scan_findings as its context. */
ti_status scan_observe(void *ctx, uint8_t opcode, const ti_value *target, int64_t offset, ti_error *err);
/* Its observe_call hook: a call judged with its arguments (an Enum member looked up by value). */
ti_status scan_observe_call(void *ctx, uint8_t opcode, const ti_value *callable, const ti_value *args, int64_t offset,
                            ti_error *err);
/*
 * Its diverge hook: a stream that CPython's C unpickler reads otherwise
 * than pickletools does is suspicious, whatever it names; no pickler
 * writes one.
 */
ti_status scan_diverge(void *ctx, uint8_t opcode, const char *what, int64_t offset, ti_error *err);

#endif
