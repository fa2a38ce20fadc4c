/*
 * subrun.c - commands run in children with their output captured (subrun.h).
 *
 * Each child gets two pipes, stdout and stderr; the parent polls every open
 * pipe of the running children, so that no child blocks on a full pipe,
 * and starts the next run when one exits.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/subrun.h"

typedef struct child {
	cli_subrun *run;
	pid_t pid;
	int fd[2];         /* stdout, stderr; -1 when closed */
	size_t cap[2];
	struct timespec start;
} child;

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static int start(child *c, cli_subrun *run)
{
	int out[2], err[2];
	memset(c, 0, sizeof(*c));
	c->run = run;
	c->fd[0] = c->fd[1] = -1;
	if (pipe(out))
		return -1;
	if (pipe(err)) {
		close(out[0]);
		close(out[1]);
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	clock_gettime(CLOCK_MONOTONIC, &c->start);
	pid_t pid = fork();
	if (pid < 0) {
		close(out[0]), close(out[1]), close(err[0]), close(err[1]);
		return -1;
	}
	if (pid == 0) {
		close(out[0]);
		close(err[0]);
		if (dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(EXIT_RESOURCE);
		close(out[1]);
		close(err[1]);
		if (run->dir && chdir(run->dir)) {
			fprintf(stderr, "tinspect: %s: %s\n", run->dir, strerror(errno));
			_exit(EXIT_RESOURCE);
		}
		int rc = run->run(run->argc, run->argv);
		fflush(stdout);
		fflush(stderr);
		_exit(rc);
	}
	close(out[1]);
	close(err[1]);
	c->pid = pid;
	c->fd[0] = out[0];
	c->fd[1] = err[0];
	return 0;
}

/* Appends what fd has; closes it at its end. */
static void drain(child *c, int k)
{
	char **buf = k ? &c->run->err : &c->run->out;
	size_t *len = k ? &c->run->err_len : &c->run->out_len;
	char chunk[65536];
	ssize_t n = read(c->fd[k], chunk, sizeof(chunk));
	if (n < 0 && errno == EINTR)
		return;
	if (n <= 0) {
		close(c->fd[k]);
		c->fd[k] = -1;
		return;
	}
	size_t keep = *len + (size_t)n > CLI_SUBRUN_MAX_OUTPUT ? CLI_SUBRUN_MAX_OUTPUT - *len : (size_t)n;
	if (*len + keep + 1 > c->cap[k]) {
		size_t cap = c->cap[k] ? c->cap[k] : 4096;
		while (cap < *len + keep + 1)
			cap *= 2;
		char *more = realloc(*buf, cap);
		if (!more)
			return; /* dropped, as beyond the ceiling */
		*buf = more;
		c->cap[k] = cap;
	}
	memcpy(*buf + *len, chunk, keep);
	*len += keep;
	(*buf)[*len] = '\0';
}

static void finish(child *c)
{
	int status = 0;
	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	cli_subrun *r = c->run;
	r->seconds = since(&c->start);
	if (WIFEXITED(status)) {
		r->status = WEXITSTATUS(status);
	} else {
		char line[128];
		int n = snprintf(line, sizeof(line), "tinspect: %s: killed by signal %d\n", r->argv[0],
		                 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		char *more = realloc(r->err, r->err_len + (size_t)n + 1);
		if (more) {
			memcpy(more + r->err_len, line, (size_t)n + 1);
			r->err = more;
			r->err_len += (size_t)n;
		}
		r->status = EXIT_RESOURCE;
	}
	for (int k = 0; k < 2; k++)
		if (!(k ? r->err : r->out) && (k ? (r->err = calloc(1, 1)) : (r->out = calloc(1, 1))) == NULL)
			r->status = EXIT_RESOURCE;
	c->pid = 0;
}

int cli_subrun_all(cli_subrun *runs, size_t count, int parallel)
{
	if (parallel < 1)
		parallel = 1;
	if ((size_t)parallel > count)
		parallel = count ? (int)count : 1;
	child *kids = calloc((size_t)parallel, sizeof(*kids));
	struct pollfd *fds = calloc((size_t)parallel * 2, sizeof(*fds));
	int *owner = calloc((size_t)parallel * 2, sizeof(*owner)); /* slot * 2 + stream, per polled fd */
	if (!kids || !fds || !owner) {
		free(kids), free(fds), free(owner);
		fprintf(stderr, "tinspect: out of memory starting %zu runs\n", count);
		return EXIT_RESOURCE;
	}
	size_t next = 0, done = 0;
	while (done < count) {
		for (int s = 0; s < parallel && next < count; s++) {
			if (kids[s].pid)
				continue;
			cli_subrun *r = &runs[next++];
			if (start(&kids[s], r)) {
				r->status = EXIT_RESOURCE;
				r->err = strdup("tinspect: cannot start a child process\n");
				r->err_len = r->err ? strlen(r->err) : 0;
				r->out = calloc(1, 1);
				done++;
			}
		}
		nfds_t n = 0;
		for (int s = 0; s < parallel; s++)
			for (int k = 0; k < 2 && kids[s].pid; k++)
				if (kids[s].fd[k] >= 0) {
					fds[n] = (struct pollfd){.fd = kids[s].fd[k], .events = POLLIN, .revents = 0};
					owner[n++] = s * 2 + k;
				}
		if (n && poll(fds, n, -1) < 0 && errno != EINTR)
			break;
		for (nfds_t i = 0; i < n; i++)
			if (fds[i].revents)
				drain(&kids[owner[i] / 2], owner[i] % 2);
		for (int s = 0; s < parallel; s++)
			if (kids[s].pid && kids[s].fd[0] < 0 && kids[s].fd[1] < 0) {
				finish(&kids[s]);
				done++;
			}
	}
	free(kids), free(fds), free(owner);
	return 0;
}

void cli_subrun_release(cli_subrun *runs, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		free(runs[i].out);
		free(runs[i].err);
		runs[i].out = runs[i].err = NULL;
	}
}
