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
#include "tinspect/findings.h"

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
