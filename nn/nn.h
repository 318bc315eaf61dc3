// The nn umbrella: the module system and every layer (attention variants add their headers
// here as they land).
#pragma once

#include "nn/activation.h"
#include "nn/attention/attention.h"
#include "nn/attention/dgsa.h"
#include "nn/attention/diff_attn.h"
#include "nn/attention/mhsa.h"
#include "nn/block.h"
#include "nn/container.h"
#include "nn/conv.h"
#include "nn/embed.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/module.h"
#include "nn/norm.h"
#include "nn/rollout.h"
#include "nn/rope.h"
#include "nn/state_dict.h"
