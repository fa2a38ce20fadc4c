/*
 * findings.h - what the safety policy says about a global or a call, and the
 * finding that carries it (the pickle readers, the scanner and the loaders
 * all record them).
 *
 * The policy (src/core/policy.c) is PyTorch's weights_only=True allow-list
 * and what is known to be harmful; scan.h builds its reports from these.
 */
#ifndef TINSPECT_FINDINGS_H
#define TINSPECT_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* What the policy is told besides its tables. */
typedef struct ti_scan_options {
	/* Extra globals to treat as allowed, as "module.name" (torch's add_safe_globals). */
	const char *const *allow;
	size_t allow_count;
	int include_safe; /* also list each allowed global (severity SAFE) */
} ti_scan_options;

#endif
