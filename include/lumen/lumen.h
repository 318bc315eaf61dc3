// The umbrella header: #include <lumen/lumen.h> gives the whole public API.
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
#include "datasets/datasets.h"
