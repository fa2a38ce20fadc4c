/*
 * tinspect.h - the tinspect library: PyTorch checkpoints as metadata.
 * Include this one header; each part documents its own ownership rules.
 */
#ifndef TINSPECT_H
#define TINSPECT_H

#define TINSPECT_VERSION "0.1.0"

#include "tinspect/arena.h"
#include "tinspect/checkpoint.h"
#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/pickle.h"
#include "tinspect/tensor.h"
#include "tinspect/value.h"

#endif
