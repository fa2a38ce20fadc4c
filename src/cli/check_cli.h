/*
 * check_cli.h - what cmd_check.c (one pair) and check_manifest.c (pairs in
 * children, CI reports) share: a pair's JSON report read back
 * (check_report.c). The dependencies run one way: cmd_check.c calls the
 * other two and hands check_manifest.c the command its children run.
 */
#ifndef TINSPECT_CLI_CHECK_CLI_H
#define TINSPECT_CLI_CHECK_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <cJSON.h>

#include "cli/ci_report.h"

typedef struct check_pair_spec {
	const char *name;       /* the suite's name; NULL: "MODEL <- CHECKPOINT" */
	const char *model, *checkpoint;
	const char *const *args;/* the pair's own options, after the common ones */
	int arg_count;
} check_pair_spec;

/* A pair's exit status from its report's checks: 1 when one failed, 3 when one could not be made. */
int check_report_status(const cJSON *report);
/* A pair's report as text: PyTorch's words and notes, each gate, the summary; a step that raises to errs. */
void check_report_text(const cJSON *report, FILE *out, FILE *errs);

/* How a batch of pairs is checked and reported. */
typedef struct check_batch {
	int (*check)(int argc, char **argv); /* checks one pair in a child: the check command (cmd_check) */
	const char *const *common;           /* options every pair gets, before its own */
	int common_count;
	int jobs;                            /* children at once; 0: one per core */
	bool json, github;
	const char *junit;                   /* a JUnit file to write, or NULL */
} check_batch;

/*
 * Checks each pair in a child (`check MODEL CKPT --json COMMON... ARGS...`,
 * b->jobs at once, in dir when not NULL) and prints one report: every
 * pair's text (or one JSON document), GitHub annotations, a JUnit file, as
 * b says. Returns the highest exit status of the pairs.
 */
int check_pairs_in_children(const check_pair_spec *pairs, size_t count, const char *dir, const check_batch *b);

/* --manifest FILE: the pairs it lists, relative to its folder, through check_pairs_in_children. */
int check_manifest(const char *path, const check_batch *b);

#endif
