/*
 * tinspect.h - the tinspect library: PyTorch checkpoints as metadata, shape
 * propagation over described models, and moving tensors between formats.
 * Include this one header; each part documents its own ownership rules.
 */
#ifndef TINSPECT_H
#define TINSPECT_H

#define TINSPECT_VERSION "0.1.0"

#include "tinspect/arena.h"
#include "tinspect/cast.h"
#include "tinspect/checkpoint.h"
#include "tinspect/convert.h"
#include "tinspect/cuda.h"
#include "tinspect/dcp.h"
#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/fill.h"
#include "tinspect/hf_index.h"
#include "tinspect/init_rules.h"
#include "tinspect/model.h"
#include "tinspect/pickle.h"
#include "tinspect/place.h"
#include "tinspect/safetensors.h"
#include "tinspect/scan.h"
#include "tinspect/sniff.h"
#include "tinspect/source.h"
#include "tinspect/symdim.h"
#include "tinspect/tensor.h"
#include "tinspect/torch_writer.h"
#include "tinspect/value.h"

#endif
