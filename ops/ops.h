// All op families; included by <lumen/lumen.h>.
#pragma once

#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/interpolate.h"
#include "ops/matmul.h"
#include "ops/pad.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"
