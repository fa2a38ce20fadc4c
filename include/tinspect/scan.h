/*
 * scan.h - is a file safe to torch.load? Answered without executing it.
 *
 * ti_scan_file() reads a checkpoint (torch zip, TorchScript zip, legacy
 * torch.save, a bare pickle, or an archive nested in one of them), runs
 * every pickle it holds through the pickle machine with no interpretation,
 * and classifies each global it names and each call it makes against
 * PyTorch's weights_only=True allow-list. It also walks the zip structure
 * byte by byte, as a zip reader other than ours might see it, and reports
 * the tricks that make two readers disagree.
 *
 * Nothing is ever imported, called or executed: a global is two strings.
 */
#ifndef TINSPECT_SCAN_H
#define TINSPECT_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/error.h"

/* Worst first is last: a file's verdict is its worst finding. */
typedef enum ti_scan_severity {
	TI_SCAN_SAFE = 0,   /* on the weights_only allow-list; loads with weights_only=True */
	TI_SCAN_UNKNOWN,    /* not on the allow-list, not known to be harmful: safe only with trust */
	TI_SCAN_SUSPICIOUS, /* structure that readers may disagree on, or that hides data */
	TI_SCAN_DANGEROUS   /* can run code or touch the system when unpickled */
} ti_scan_severity;

/* "safe", "unknown", "suspicious", "dangerous". */
const char *ti_scan_severity_name(ti_scan_severity s);

/*
 * What a global is, from its module and name alone. why, when not NULL, gets
 * a short reason ("runs a shell command", "not on the weights_only
 * allow-list"); it is a static string.
 */
ti_scan_severity ti_scan_classify_global(const char *module, const char *name, const char **why);

/*
 * A global that is called (REDUCE, NEWOBJ, NEWOBJ_EX, INST, OBJ). A call of
 * an allowed global is safe; NEWOBJ of an unknown class makes an instance
 * (unknown); REDUCE, INST and OBJ of anything neither allowed nor known to
 * build plain data are dangerous: they call a function the file chose.
 */
ti_scan_severity ti_scan_classify_call(const char *module, const char *name, const char *opcode,
                                       const char **why);

struct ti_value;
/*
 * Whether a call looks up an Enum member by value: REDUCE of a class-named
 * global outside the standard library with one str or int (policy.c says
 * exactly which). Such a call is unknown, not dangerous: it needs the
 * class's package (its top-level name written to package) to load.
 */
bool ti_scan_is_enum_lookup(const char *module, const char *name, const char *opcode, const struct ti_value *args,
                            char *package, size_t size);
/*
 * Whether a call looks up an Enum member by name, as Python 3.11 and later
 * pickle one: REDUCE of builtins.getattr with such a class and a plain
 * member name (policy.c). Unknown too, for the same reason.
 */
bool ti_scan_is_enum_by_name(const char *module, const char *name, const char *opcode, const struct ti_value *args,
                             char *package, size_t size);

typedef struct ti_scan_finding {
	ti_scan_severity severity;
	const char *kind;   /* "global", "call", "build", "pickle", "zip", "record", "storage", "file" */
	const char *record; /* where: an archive record ("archive/data.pkl"), nested ones joined
	                       by '!' ("outer/inner.pt!archive/data.pkl"); NULL for the file itself */
	int64_t offset;     /* byte offset in the record (or the file), -1 if none */
	const char *opcode; /* "GLOBAL", "STACK_GLOBAL", "INST", "REDUCE"...; NULL if none */
	const char *module, *name; /* the global, for kinds "global", "call" and "build"; else NULL */
	uint64_t count;     /* how many times the same global, opcode and record occur */
	const char *message; /* one line, no full stop */
} ti_scan_finding;

typedef struct ti_scan_report {
	const char *path;
	const char *format;  /* "torch-zip", "torchscript-zip", "zip", "legacy", "pickle", "safetensors",
	                        "hf-index" (its shards scanned too), "json", "text", "unknown",
	                        "npy", "npz" (an object array's pickle scanned) */
	int not_model;       /* a text or JSON file that is no checkpoint index: nothing in it is loaded */
	ti_scan_severity verdict;
	int unreadable;      /* a part could not be read: error says why */
	ti_error error;
	size_t count;
	const ti_scan_finding *findings;
	size_t pickles;      /* pickles scanned */
	size_t globals;      /* global references seen, repeats included */
} ti_scan_report;

typedef struct ti_scan_options {
	/* Extra globals to treat as allowed, as "module.name" (torch's add_safe_globals). */
	const char *const *allow;
	size_t allow_count;
	int include_safe; /* also list each allowed global (severity SAFE) */
} ti_scan_options;

/*
 * Scans one file. *out is always set (even on failure, unless out of
 * memory): a failure to read part of the file is a report with unreadable
 * set, not an error. Returns an error only for TI_E_NOMEM or TI_E_INVALID.
 */
ti_status ti_scan_file(const char *path, const ti_scan_options *opt, ti_scan_report **out,
                       ti_error *err);
/* Scans a file's bytes held in memory; name is what the report calls it. */
ti_status ti_scan_buffer(const char *name, const uint8_t *data, size_t size,
                         const ti_scan_options *opt, ti_scan_report **out, ti_error *err);
void ti_scan_report_free(ti_scan_report *report);

#endif
