/*
 * outfile.c - temporary file, flush, rename (see outfile.h).
 */
#define _DEFAULT_SOURCE /* mkstemps */
#include "cli/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

/* The temporary file a signal handler must remove: one output at a time. */
static char pending[4096];

static void on_signal(int sig)
{
	if (pending[0])
		unlink(pending); /* async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void watch_signals(bool on)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on ? on_signal : SIG_DFL);
}

static bool same_file(const struct stat *a, const char *path)
{
	struct stat b;
	return !stat(path, &b) && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

int cli_outfile_open(cli_outfile *o, const char *path, const char *const *inputs, int input_count, bool force)
{
	o->path = path;
	o->fd = -1;
	o->temp[0] = '\0';
	struct stat st;
	if (!stat(path, &st)) {
		for (int i = 0; i < input_count; i++)
			if (same_file(&st, inputs[i]))
				return cli_usage_error("%s: the output is also an input; write to another file", path);
		if (!force)
			return cli_usage_error("%s: exists; give --force to replace it", path);
		if (S_ISDIR(st.st_mode))
			return cli_usage_error("%s: is a directory", path);
	}
	const char *slash = strrchr(path, '/');
	int dir_len = slash ? (int)(slash - path) + 1 : 0;
	int n = snprintf(o->temp, sizeof(o->temp), "%.*s.%s.tinspect-XXXXXX", dir_len, path, slash ? slash + 1 : path);
	if (n < 0 || (size_t)n >= sizeof(o->temp))
		return cli_usage_error("%s: path too long", path);
	watch_signals(true);
	memcpy(pending, o->temp, sizeof(pending));
	o->fd = mkstemp(o->temp);
	memcpy(pending, o->temp, sizeof(pending));
	if (o->fd < 0) {
		pending[0] = '\0';
		fprintf(stderr, "tinspect: %s: cannot create a temporary file beside it: %s\n", path, strerror(errno));
		o->temp[0] = '\0';
		return EXIT_RESOURCE;
	}
	/* mkstemp makes 0600; an output file gets the usual 0666 less the umask */
	mode_t mask = umask(0);
	umask(mask);
	fchmod(o->fd, 0666 & ~mask);
	return EXIT_OK;
}

int cli_outfile_commit(cli_outfile *o)
{
	int rc = EXIT_OK;
	if (fsync(o->fd) || close(o->fd)) {
		fprintf(stderr, "tinspect: %s: cannot flush: %s\n", o->path, strerror(errno));
		rc = EXIT_RESOURCE;
	}
	o->fd = -1;
	if (!rc && rename(o->temp, o->path)) {
		fprintf(stderr, "tinspect: %s: cannot rename the finished file into place: %s\n", o->path, strerror(errno));
		rc = EXIT_RESOURCE;
	}
	if (rc)
		unlink(o->temp);
	o->temp[0] = pending[0] = '\0';
	watch_signals(false);
	return rc;
}

void cli_outfile_abort(cli_outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (o->temp[0])
		unlink(o->temp);
	o->fd = -1;
	o->temp[0] = pending[0] = '\0';
	watch_signals(false);
}
