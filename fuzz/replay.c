/*
 * replay.c - runs a harness on files, without libFuzzer.
 *
 * usage: fuzz-replay-HARNESS FILE...
 *
 * Linked with one harness (fuzz/fuzz_*.c) and the library built with gcc
 * under ASan and UBSan (`make fuzz-replay`), it calls the harness's
 * LLVMFuzzerTestOneInput() once per file, as libFuzzer does when given
 * files. A sanitizer report or a broken promise aborts the process; an
 * unreadable file is exit 2. Prints one line per file, so that a crash in
 * the log names the file that caused it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int read_file(const char *path, uint8_t **data, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		uint8_t *bigger = realloc(buf, cap * 2);
		if (!bigger) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = bigger;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (!buf || bad) {
		free(buf);
		errno = bad ? EIO : ENOMEM;
		return -1;
	}
	*data = buf;
	*size = n;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		uint8_t *data;
		size_t size;
		if (read_file(argv[i], &data, &size)) {
			fprintf(stderr, "%s: %s: %s\n", argv[0], argv[i], strerror(errno));
			return 2;
		}
		printf("replay %s (%zu bytes)\n", argv[i], size);
		fflush(stdout);
		/* libFuzzer hands the harness a buffer of exactly size bytes: so does this. */
		uint8_t *exact = malloc(size ? size : 1);
		if (!exact) {
			fprintf(stderr, "%s: out of memory\n", argv[0]);
			return 2;
		}
		memcpy(exact, data, size);
		free(data);
		LLVMFuzzerTestOneInput(exact, size);
		free(exact);
	}
	return 0;
}
