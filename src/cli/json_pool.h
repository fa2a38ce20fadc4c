/*
 * json_pool.h - where the program's cJSON values live.
 *
 * cJSON makes a malloc'd node for every value and a malloc'd string for
 * every key and string: a 730 kB model description is over 100,000 of
 * them, and each fresh page they land on is a fault, about 10 us in a
 * virtual machine (4,000 of them were a third of `shapes` on a chain of
 * 10,000 steps). The pool hands cJSON small blocks from chunks: a first
 * of 256 KiB in small pages, then chunks of 2 MiB advised as transparent
 * huge pages (one fault each), and keeps what cJSON frees for its next
 * values, per thread.
 *
 * The hooks are process-wide, so the library never installs them: main()
 * does. Memory from the pool is freed with cJSON_free (or cJSON_Delete),
 * never with free(): what the library returns to its callers from
 * cJSON_Print is copied to malloc'd memory first. A sanitized build keeps
 * libc's allocator, so that AddressSanitizer still watches cJSON's values.
 */
#ifndef TINSPECT_CLI_JSON_POOL_H
#define TINSPECT_CLI_JSON_POOL_H

#include <stddef.h>

/* Makes the pool cJSON's allocator (cJSON_InitHooks); a sanitized build leaves libc's. */
void cli_json_pool_install(void);

/* The pool's own allocator, for its tests: blocks up to a few hundred bytes from chunks, bigger ones from malloc. */
void *cli_json_pool_malloc(size_t size);
void cli_json_pool_free(void *p);

#endif
