// The five papers' architectures in one header, and the registry that builds any of them by
// name from options (what `lumen models` lists).
#pragma once

#include "models/context_swin.h"
#include "models/context_vit.h"
#include "models/pvt_segnet.h"
#include "models/pvt_v2.h"
#include "models/registry.h"
#include "models/sfree_vit.h"
#include "models/sima_vit.h"
#include "models/text_transformer.h"
#include "models/utnet.h"
#include "models/vit.h"
