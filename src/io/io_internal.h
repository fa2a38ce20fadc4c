/*
 * io_internal.h - what io.c and http.c share: a URL's half of the handle.
 */
#ifndef TINSPECT_IO_INTERNAL_H
#define TINSPECT_IO_INTERNAL_H

#include "tinspect/io.h"

/* Opens io->name, a URL: its first block is asked for now, giving its size and version. */
ti_status io_remote_open(ti_io *io, ti_error *err);
void io_remote_close(ti_io *io);
/* ti_io_check_url for a scheme tinspect reads (http.c): what resolving the name would refuse. */
ti_status io_remote_check_name(const char *name, ti_error *err);
/*
 * The http(s) URL a name stands for, into out (size bytes): an hf:// name
 * becomes $HF_ENDPOINT/ORG/REPO/resolve/REVISION/PATH. A URL tinspect
 * cannot use (credentials in it, no host, a control byte) is TI_E_INVALID.
 */
ti_status io_resolve_name(const char *name, char *out, size_t size, ti_error *err);

#endif
