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

#endif
