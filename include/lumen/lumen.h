// The umbrella header: #include <lumen/lumen.h> gives the whole public API: tensors and
// autograd (core/), the ops, nn modules, the papers' models, training (optimizers, schedules,
// losses, metrics, checkpoints, the trainer) and data (readers, layouts, transforms, loader).
#pragma once

#include "core/autograd.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/random.h"
#include "core/safetensors.h"
#include "core/tensor.h"
#include "ops/ops.h"
#include "nn/nn.h"
#include "models/models.h"
#include "train/train.h"
#include "datasets/datasets.h"
