// The nn umbrella: the module system and every layer (attention variants add their headers
// here as they land).
#pragma once

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/attention/prenorm_softmax_attention.h"
#include "nn/attention/seqnorm_attention.h"
#include "nn/attention/sima_attention.h"
#include "nn/attention/vitpt_sima_attention.h"
#include "nn/container.h"
#include "nn/conv.h"
#include "nn/embed.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module.h"
#include "nn/norm.h"
#include "nn/sima/class_attention.h"
#include "nn/sima/sima_block.h"
#include "nn/state_dict.h"
