// The nn umbrella: the module system and every layer (attention variants add their headers
// here as they land).
#pragma once

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/container.h"
#include "nn/conv.h"
#include "nn/embed.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module.h"
#include "nn/norm.h"
#include "nn/state_dict.h"
#include "nn/utnet/conv_blocks.h"
#include "nn/utnet/linear_attention.h"
#include "nn/utnet/relative_position.h"
#include "nn/utnet/trans_blocks.h"
