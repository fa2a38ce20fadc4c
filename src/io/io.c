/*
 * io.c - a file's bytes: the local kind, and the handle both kinds share
 * (see tinspect/io.h; the remote kind is http.c).
 */
#include "io/io_internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>

static const char *const url_schemes[] = {"http://", "https://", "hf://"};

bool ti_io_is_url(const char *name)
{
	for (size_t i = 0; i < sizeof(url_schemes) / sizeof(url_schemes[0]); i++)
		if (!strncmp(name, url_schemes[i], strlen(url_schemes[i])))
			return true;
	return false;
}

bool ti_io_looks_like_url(const char *name)
{
	/* RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
	if (!((*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z')))
		return false;
	size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
	return !strncmp(name + n, "://", 3);
}

ti_status ti_io_check_url(const char *name, ti_error *err)
{
	if (ti_io_is_url(name))
		return io_remote_check_name(name, err);
	size_t n = strcspn(name, ":");
	return TI_FAIL(err, TI_E_INVALID, "the URL scheme '%.*s' is not one tinspect reads (http://, https://, hf://)",
	               n > 32 ? 32 : (int)n, name);
}

static ti_status open_local(const char *path, ti_io *io, ti_error *err)
{
	/* O_NONBLOCK: opening a FIFO must not hang; it is refused below as not a regular file. */
	io->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (io->fd < 0)
		return TI_FAIL(err, TI_E_IO, "cannot open '%s': %s", path, strerror(errno));
	struct stat st;
	if (fstat(io->fd, &st) != 0)
		return TI_FAIL(err, TI_E_IO, "cannot stat '%s': %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return TI_FAIL(err, TI_E_IO, "'%s' is not a regular file", path);
	io->size = (uint64_t)st.st_size;
	return TI_OK;
}

ti_status ti_io_open(const char *name, ti_io **out, ti_error *err)
{
	*out = NULL;
	size_t len = strlen(name);
	ti_io *io = calloc(1, sizeof(*io) + len + 1);
	if (!io)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	io->fd = -1;
	io->refs = 1;
	io->name = memcpy((char *)(io + 1), name, len + 1);
	ti_status st = ti_io_is_url(name) ? io_remote_open(io, err) : open_local(name, io, err);
	if (st) {
		ti_io_close(io);
		return st;
	}
	*out = io;
	return TI_OK;
}

ti_status ti_io_wrap_fd(int fd, ti_io **out, ti_error *err)
{
	*out = NULL;
	struct stat st;
	if (fstat(fd, &st) != 0)
		return TI_FAIL(err, TI_E_IO, "cannot stat: %s", strerror(errno));
	ti_io *io = calloc(1, sizeof(*io) + 1);
	if (!io)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	io->fd = fd;
	io->refs = 1;
	io->borrowed = true;
	io->name = (const char *)(io + 1);
	io->size = (uint64_t)st.st_size;
	*out = io;
	return TI_OK;
}

ti_io *ti_io_ref(ti_io *io)
{
	if (io)
		io->refs++;
	return io;
}

void ti_io_close(ti_io *io)
{
	if (!io || --io->refs > 0)
		return;
	if (io->remote)
		io_remote_close(io);
	if (io->fd >= 0 && !io->borrowed)
		close(io->fd);
	free(io);
}

bool ti_io_error_is_absent(ti_status st, const ti_error *err)
{
	return st == TI_E_NETWORK && (!strncmp(err->message, "HTTP 404", 8) || !strcmp(err->message, TI_IO_OFFLINE_ABSENT));
}

ti_status ti_io_read_full(ti_io *io, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	size_t got;
	ti_status st = ti_io_read(io, offset, buf, n, &got, err);
	if (st)
		return st;
	if (got < n)
		return TI_FAIL(err, TI_E_IO, "the file ends at byte %" PRIu64 ", before the %zu bytes at %" PRIu64 " it should hold",
		               offset + got, n, offset);
	return TI_OK;
}
