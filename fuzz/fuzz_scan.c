/*
 * fuzz_scan.c - the safety scanner, on whole files held in memory.
 *
 * Each input is a file (seeds: the .pt files of fixtures/, everything in
 * fixtures/broken/ and the hostile corpus in fixtures/malicious/).
 * ti_scan_buffer() sniffs it, walks a
 * zip byte by byte (zip_walk.c), inflates deflated records through libzip,
 * runs every pickle it finds with the observer, and descends into nested
 * archives. The report must be whole: a verdict no better than any finding,
 * every finding with a kind and a message, an unreadable report with its
 * error set.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "tinspect/scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ti_scan_report *r = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_scan_options opt = {NULL, 0, 1};
	ti_status s = ti_scan_buffer("fuzz", data, size, &opt, &r, &err);
	FUZZ_CHECK(s == TI_OK || s == TI_E_NOMEM, "scan failed with status %d: %s", (int)s, err.message);
	if (s)
		return 0;
	FUZZ_CHECK(r != NULL, "success without a report");
	for (size_t i = 0; i < r->count; i++) {
		const ti_scan_finding *f = &r->findings[i];
		FUZZ_CHECK(f->severity <= r->verdict, "finding %zu is worse than the verdict", i);
		FUZZ_CHECK(f->kind && f->message && f->message[0], "finding %zu has no kind or message", i);
		FUZZ_CHECK(f->count >= 1, "finding %zu counted %llu times", i, (unsigned long long)f->count);
	}
	if (r->unreadable)
		FUZZ_CHECK(r->error.code != TI_OK && r->error.message[0], "unreadable with no error");
	ti_scan_report_free(r);
	return 0;
}
