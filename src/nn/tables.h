/* tables.h - the module tables src/nn/registry.c lists, one per file in src/nn/. */
#ifndef TINSPECT_NN_TABLES_H
#define TINSPECT_NN_TABLES_H

#include "nn/module.h"

extern ti_module_rule ti_nn_linear[];     /* linear.c: Linear, Bilinear, Identity, Flatten, Unflatten */
extern ti_module_rule ti_nn_conv[];       /* conv.c: Conv1d/2d/3d, ConvTranspose1d/2d/3d */
extern ti_module_rule ti_nn_norm[];       /* norm.c: BatchNorm, LayerNorm, GroupNorm, InstanceNorm */
extern ti_module_rule ti_nn_activation[]; /* activation.c: ReLU ... Softmax, LogSoftmax, PReLU */
extern ti_module_rule ti_nn_pooling[];    /* pooling.c: MaxPool, AvgPool, Adaptive pools */
extern ti_module_rule ti_nn_embedding[];  /* embedding.c: Embedding, EmbeddingBag */
extern ti_module_rule ti_nn_dropout[];    /* dropout.c: the Dropout family */
extern ti_module_rule ti_nn_resize[];     /* resize.c: Upsample, PixelShuffle, PixelUnshuffle */
extern ti_module_rule ti_nn_rnn[];        /* rnn.c: RNN, LSTM, GRU */
extern ti_module_rule ti_nn_attention[];  /* attention.c: MultiheadAttention */
extern ti_module_rule ti_nn_transformer[];/* transformer.c: TransformerEncoderLayer, DecoderLayer, Encoder */

#endif
