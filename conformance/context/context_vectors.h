// Config readers shared by the check-vectors adapters of the context-length study (mixers, ViT
// pieces, UNETR blocks, the whole models' size).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "conformance/op_vectors.h"
#include "nn/context/vit_blocks.h"
#include "nn/options.h"

namespace lumen::conformance {

// A context.model vector's keys that are no registry options: "encoder" (which model), and
// "time", "height", "width", which context_img_size turns into the option img_size.
inline const std::vector<std::string> kContextModelKeys{"encoder", "time", "height", "width"};

// img_size of a context.model vector: (height, width) when time is 1 (2-D), else (time,
// height, width). Throws [<module>] when height or width is missing.
nn::Options context_img_size(VectorCall& call);

// The MambaVision dt_rank: "auto" (or absent / null) gives nullopt = ceil(d_model / 16),
// otherwise an integer. Throws [<module>] for anything else.
std::optional<int64_t> context_dt_rank(VectorConfig& config);

// The mixer slot's settings: config "mixer" ("attn" default), and the optional objects
// "hyena" {l_max, filter_order, short_filter_order} and "mamba" {d_state, d_conv, expand,
// dt_rank ("auto" or an integer)}, either of which may be null. Throws [<module>] for an
// unknown nested key or a non-integer value.
nn::context::MixerOptions context_mixer_options(VectorConfig& config, const std::string& module);

}  // namespace lumen::conformance
