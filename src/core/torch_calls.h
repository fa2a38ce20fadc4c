/*
 * torch_calls.h - what each known callable means (library-internal).
 * One function per row of the known-globals table that has a call; each
 * checks its arguments as torch/_utils.py would receive them.
 */
#ifndef TINSPECT_TORCH_CALLS_H
#define TINSPECT_TORCH_CALLS_H

#include "tinspect/error.h"
#include "tinspect/pickle.h" /* ti_call_kind */
#include "tinspect/value.h"

struct ti_torch; /* the interpreter's state: torch_unpickle.h */

#define TI_CALL_DECL(fn) ti_status fn(struct ti_torch *t, const ti_value *args, \
                                      ti_call_kind how, ti_value **out, ti_error *err)

TI_CALL_DECL(ti_call_rebuild_tensor);
TI_CALL_DECL(ti_call_rebuild_tensor_v2);
TI_CALL_DECL(ti_call_rebuild_tensor_v3);
TI_CALL_DECL(ti_call_rebuild_parameter);
TI_CALL_DECL(ti_call_rebuild_parameter_with_state);
TI_CALL_DECL(ti_call_rebuild_meta_tensor_no_storage);
TI_CALL_DECL(ti_call_rebuild_qtensor);
TI_CALL_DECL(ti_call_rebuild_sparse_tensor);
TI_CALL_DECL(ti_call_rebuild_sparse_csr_tensor);
TI_CALL_DECL(ti_call_rebuild_from_type_v2);
TI_CALL_DECL(ti_call_get_layout);
TI_CALL_DECL(ti_call_ordered_dict);
TI_CALL_DECL(ti_call_set);
TI_CALL_DECL(ti_call_frozenset);
TI_CALL_DECL(ti_call_complex);
TI_CALL_DECL(ti_call_bytearray);
TI_CALL_DECL(ti_call_bytes);
TI_CALL_DECL(ti_call_codecs_encode);
TI_CALL_DECL(ti_call_torch_size);
TI_CALL_DECL(ti_call_torch_device);

#endif
