/*
 * ci_report.h - the results of `check` and `diff` as CI systems read them:
 * one test case per check made (load_state_dict, shapes, memory, ...),
 * written as a JUnit XML report (GitHub, GitLab and Jenkins test
 * reporters read it) or as GitHub Actions workflow commands
 * (`::error file=...,title=...::message`). The writers only read the cases;
 * every string is the caller's and must outlive the call.
 */
#ifndef TINSPECT_CLI_CI_REPORT_H
#define TINSPECT_CLI_CI_REPORT_H

#include <stddef.h>
#include <stdio.h>

typedef enum ci_outcome {
	CI_PASS,    /* the check was made and holds */
	CI_FAIL,    /* the check was made and does not hold: exit 1 */
	CI_ERROR,   /* the check could not be made: an unreadable input (exit 3) */
	CI_SKIPPED  /* not made, because an earlier check failed (shapes after a failed load) */
} ci_outcome;

typedef struct ci_case {
	const char *suite;   /* the pair checked: "model.json <- model.pt", or "a.pt <-> b.pt" */
	const char *name;    /* the check: "load_state_dict", "shapes", "memory", "max_params", "dtype", "ties" */
	const char *file;    /* the input the finding is about, for annotations; NULL for none */
	ci_outcome outcome;
	const char *title;   /* one line: "size mismatch for fc.weight"; NULL: the name */
	const char *message; /* the full text, any number of lines (PyTorch's error); NULL for none */
	double seconds;      /* time the check took */
} ci_case;

/*
 * A JUnit XML document: <testsuites> holding one <testsuite> per distinct
 * suite (in first-seen order) with its tests/failures/errors/skipped counts
 * and time, one <testcase name classname time> per case, <failure>,
 * <error> or <skipped> with message= the title and the message as text.
 * Text and attributes are escaped; bytes that XML 1.0 forbids are written
 * as U+FFFD. Valid against tests/ci/junit.xsd. Returns 0, or -1 when a
 * write failed.
 * Details: name NULL is "tinspect", and a case's suite NULL is name;
 * classname= is the suite and type= (failure, error) the case's name; a
 * case without a message gets an empty element (<failure .../>); times
 * are whole milliseconds ("0.042"), negative and NaN ones 0; an outcome
 * outside the enum counts as an error. No timestamp= or hostname=.
 */
int ci_write_junit(FILE *out, const char *name, const ci_case *cases, size_t count);

/*
 * ci_write_junit into the file path, written whole or not at all
 * (outfile.h; an existing report is replaced). EXIT_OK, or the exit code of
 * the failure, printed.
 */
int ci_write_junit_file(const char *path, const char *name, const ci_case *cases, size_t count);

/*
 * GitHub Actions workflow commands: one "::error file=F,title=T::MESSAGE"
 * per failed or errored case (without file= when file is NULL), "%", CR
 * and LF escaped as GitHub requires in the message, and also ":" and ","
 * in the properties; then, for passed cases, nothing. Returns 0, or -1
 * when a write failed.
 * A case without a message repeats its title as the message (an empty
 * annotation body shows nothing); bytes that are not UTF-8 are U+FFFD.
 */
int ci_write_github(FILE *out, const ci_case *cases, size_t count);

#endif
