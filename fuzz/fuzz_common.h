/*
 * fuzz_common.h - what the harnesses share (fuzz/README.md).
 *
 * Each harness is one LLVMFuzzerTestOneInput(); libFuzzer calls it once per
 * input, and fuzz/replay.c calls it once per file for the plain ASan replay.
 * A run must leave nothing behind: every handle is closed and every buffer
 * freed before it returns, so that LeakSanitizer sees a leak as a leak and
 * the next input starts from the same state.
 *
 * The readers that take a path (the zip checkpoint, safetensors, the shard
 * index) get the input through one scratch folder per process,
 * /tmp/tinspect-fuzz-<pid>/, made on first use and removed at exit; its
 * files are rewritten by every run. The pid keeps parallel fuzzers
 * (-jobs, -fork, several harnesses) apart.
 *
 * The checks here hold the library to its error contract (include/tinspect/
 * error.h, STYLE.md "Errors"): a failure returns a status that the error
 * repeats, with a message, and hands back no handle; success hands one back.
 * A broken promise aborts, so libFuzzer records the input as a crash.
 */
#ifndef TINSPECT_FUZZ_COMMON_H
#define TINSPECT_FUZZ_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinspect/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Stops the run with a message: libFuzzer and the replay driver report it as a crash. */
#define FUZZ_CHECK(cond, ...)                                                            \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "fuzz: %s:%d: broken promise: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                    \
			fputc('\n', stderr);                                             \
			abort();                                                         \
		}                                                                        \
	} while (0)

/* FUZZ_VERBOSE=1 in the environment prints the outcome of each checked call (for replaying by hand). */
static int fuzz_verbose = -1;

/* What every fallible call promises about its error (error.h). */
static inline void fuzz_check_status(ti_status s, const ti_error *err, const void *handle)
{
	if (fuzz_verbose < 0)
		fuzz_verbose = getenv("FUZZ_VERBOSE") && *getenv("FUZZ_VERBOSE") && strcmp(getenv("FUZZ_VERBOSE"), "0");
	if (fuzz_verbose) {
		char line[TI_ERROR_MESSAGE_MAX + TI_ERROR_MEMBER_MAX + 64];
		ti_error_format(err, line, sizeof(line));
		fprintf(stderr, "fuzz: %s%s\n", s ? "failed: " : "ok", s ? line : "");
	}
	if (s == TI_OK) {
		FUZZ_CHECK(handle != NULL, "success without a handle");
		return;
	}
	FUZZ_CHECK(handle == NULL, "failure (%d) that still hands back a handle", (int)s);
	FUZZ_CHECK(err->code == s, "returned status %d, error says %d: %s", (int)s, (int)err->code, err->message);
	FUZZ_CHECK(err->message[0] != '\0', "status %d with no message", (int)s);
	/* Bad input is corrupt, unsupported or over a ceiling; never a caller's mistake. */
	FUZZ_CHECK(s != TI_E_INVALID, "bad input reported as a usage error: %s", err->message);
	char line[TI_ERROR_MESSAGE_MAX + TI_ERROR_MEMBER_MAX + 64];
	ti_error_format(err, line, sizeof(line));
	FUZZ_CHECK(line[0] != '\0', "ti_error_format wrote nothing");
}

static char fuzz_dir[64];

/* At exit: the scratch folder holds only files the harness wrote. */
static void fuzz_dir_remove(void)
{
	DIR *d = opendir(fuzz_dir);
	if (!d)
		return;
	struct dirent *e;
	char path[sizeof(fuzz_dir) + 256 + 2];
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", fuzz_dir, e->d_name);
			unlink(path);
		}
	closedir(d);
	rmdir(fuzz_dir);
}

/* dir/name in this process's scratch folder (a static buffer per call site is the caller's). */
static inline void fuzz_path(char *buf, size_t size, const char *name)
{
	if (!fuzz_dir[0]) {
		snprintf(fuzz_dir, sizeof(fuzz_dir), "/tmp/tinspect-fuzz-%ld", (long)getpid());
		if (mkdir(fuzz_dir, 0700) && errno != EEXIST) {
			perror(fuzz_dir);
			abort();
		}
		atexit(fuzz_dir_remove);
	}
	snprintf(buf, size, "%s/%s", fuzz_dir, name);
}

/* Writes data to path, replacing what the previous run left. A failure here is ours: abort. */
static inline void fuzz_write_file(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(path);
		abort();
	}
	const char *p = data;
	while (size) {
		ssize_t n = write(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			perror(path);
			abort();
		}
		p += n;
		size -= (size_t)n;
	}
	if (close(fd)) {
		perror(path);
		abort();
	}
}

#endif
