/*
 * outfile.h - writing an output file safely: to a temporary file in the
 * target's directory, flushed, and renamed over the target only when
 * complete. An interrupted or failed run leaves no half-written OUT (the
 * temporary file is removed, on SIGINT and SIGTERM too), an existing OUT is
 * kept unless the user said --force, and OUT may never be one of the inputs.
 */
#ifndef TINSPECT_CLI_OUTFILE_H
#define TINSPECT_CLI_OUTFILE_H

#include <stdbool.h>

typedef struct cli_outfile {
	const char *path;  /* the target */
	char temp[4096];   /* the temporary file beside it, while open */
	int fd;            /* the temporary file's descriptor, or -1 */
} cli_outfile;

/*
 * Opens a temporary file beside path. Refuses (printing one line, returning
 * EXIT_USAGE) when path is one of inputs (same file, by device and inode) or
 * exists and force is false; EXIT_RESOURCE when the directory is not
 * writable. Returns EXIT_OK with o->fd open.
 */
int cli_outfile_open(cli_outfile *o, const char *path, const char *const *inputs, int input_count, bool force);
/* Flushes the data to disk and renames the temporary file over the target. EXIT_OK or EXIT_RESOURCE (printed). */
int cli_outfile_commit(cli_outfile *o);
/* Closes and removes the temporary file; the target is untouched. */
void cli_outfile_abort(cli_outfile *o);

#endif
