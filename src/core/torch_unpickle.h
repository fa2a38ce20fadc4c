/*
 * torch_unpickle.h - reading torch.save's pickle as metadata (library-internal).
 *
 * A ti_torch supplies the pickle machine's hooks: it turns the rebuild
 * functions of torch/_utils.py into ti_tensors, persistent ids into
 * ti_storages (one per key, shared by every tensor that names it), and the
 * Python types torch pickles (OrderedDict, set, complex, bytes via
 * _codecs.encode, torch.Size, torch.device) into values. Everything lives in
 * the arena it was given; the storage index is freed by ti_torch_release().
 */
#ifndef TINSPECT_TORCH_UNPICKLE_H
#define TINSPECT_TORCH_UNPICKLE_H

#include "core/torch_state.h"
#include "tinspect/pickle.h"

/*
 * True if a storage key is a number as str() writes it (its value in *k):
 * torch.save names storages "0", "1", ... in order of first appearance
 * (id_map in torch/serialization.py), so key "i" is usually storage i.
 */
bool ti_torch_key_position(const char *key, size_t *k);

void ti_torch_init(ti_torch *t, ti_arena *arena, size_t storages_max);
void ti_torch_release(ti_torch *t);
/* Fills hooks to run the machine with t as context. */
void ti_torch_hooks(ti_torch *t, ti_pickle_hooks *hooks);

#endif
