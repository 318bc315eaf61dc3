// Shared by the check-vectors adapters of the DGSA paper (diff_vectors.cpp,
// diff_vectors_models.cpp): checking a vector's block keys against a lumen preset.
#pragma once

#include "conformance/op_vectors.h"
#include "core/error.h"
#include "nn/block.h"

namespace lumen::conformance {

// Throws [<module>] "config '<key>' = <got> but the <module> preset has <want>" unless equal.
template <typename T>
void require_preset(VectorCall& call, const std::string& key, const T& got, const T& want) {
    LUMEN_CHECK(got == want, call.module, "config '", key, "' = ", got, " but the ", call.module,
                " preset has ", want);
}

// Returns `preset` after checking that every block key the vector has (attn_type, mlp_type,
// norm_type, norm_eps, qkv_bias, mlp_bias, dgsa_lambda_init, q_residual, mlp_ratio or
// ffn_expansion, ffn_hidden for the token width `dim`) equals the preset's value. Throws
// [<module>] naming the first key that differs.
nn::BlockOptions read_block_options(VectorCall& call, nn::BlockOptions preset, int64_t dim);

}  // namespace lumen::conformance
