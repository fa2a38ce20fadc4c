/* error.c - recording and formatting errors (see error.h). */
#include "tinspect/error.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ti_error_clear(ti_error *err)
{
	if (!err)
		return;
	memset(err, 0, sizeof(*err));
	err->offset = -1;
}

ti_status ti_error_set(ti_error *err, ti_status code, const char *file, int line,
                       const char *fmt, ...)
{
	if (!err)
		return code;
	err->code = code;
	err->source_file = file;
	err->source_line = line;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return code;
}

void ti_error_at(ti_error *err, const char *member, int64_t offset)
{
	if (!err)
		return;
	if (member && !err->member[0])
		snprintf(err->member, sizeof(err->member), "%s", member);
	if (offset >= 0 && err->offset < 0)
		err->offset = offset;
}

void ti_error_format(const ti_error *err, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "%s", err->message[0] ? err->message : ti_status_name(err->code));
	if (n >= size)
		return;
	if (err->member[0])
		n += (size_t)snprintf(buf + n, size - n, " in '%s'", err->member);
	if (n < size && err->offset >= 0)
		snprintf(buf + n, size - n, " at offset %" PRId64, err->offset);
}

const char *ti_status_name(ti_status code)
{
	static const char *const names[] = {
		[TI_OK] = "success",
		[TI_E_CORRUPT] = "corrupt input",
		[TI_E_UNSUPPORTED] = "unsupported input",
		[TI_E_LIMIT] = "limit exceeded",
		[TI_E_IO] = "i/o error",
		[TI_E_NOMEM] = "out of memory",
		[TI_E_INVALID] = "invalid argument",
		[TI_E_SHAPE] = "shape error",
		[TI_E_NETWORK] = "network error",
	};
	if ((unsigned)code < sizeof(names) / sizeof(names[0]) && names[code])
		return names[code];
	return "unknown error";
}
