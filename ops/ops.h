// All op families; included by <lumen/lumen.h>.
#pragma once

#include "ops/conv.h"
#include "ops/creation.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fft.h"
#include "ops/index.h"
#include "ops/layout.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/scan.h"
#include "ops/shape.h"
#include "ops/softmax.h"
