// check-vectors adapters of PVT-GDLA's modules (Zheng et al. 2026, Sec. 3): linear_attention, the
// mixers (linear, GDLA, softmax and differential with RoPE), GMLP, the GDLAM and pre-norm blocks,
// Upsample and ResBlk. Module configs hold the constructor arguments; "H", "W" give the grid of
// token inputs.
#include <cmath>

#include "conformance/module_vectors.h"
#include "nn/attention/gdla.h"
#include "nn/attention/linear_attention.h"
#include "nn/attention/pvt_baselines.h"
#include "nn/gdla/blocks.h"
#include "nn/gdla/stem.h"

namespace lumen::conformance {

namespace {

namespace attention = nn::attention;
namespace gdla = nn::gdla;

TensorMap output(const Tensor& y) { return {{"y", y}}; }

// The grid of a token-input vector, checked against N.
std::pair<int64_t, int64_t> grid_of(VectorCall& call, const Tensor& x) {
    int64_t height = call.config.get_int("H"), width = call.config.get_int("W");
    LUMEN_CHECK(x.ndim() == 3 && x.size(1) == height * width, call.module, "config grid ", height,
                " x ", width, " does not fit in.x of shape ", x.shape());
    return {height, width};
}

const VectorAdapterRegistration kLinearAttention("gdla.linear_attention", [](VectorCall& call) {
    return output(attention::linear_attention(call.input("q"), call.input("k"), call.input("v"),
                                              call.config.get_double("eps", 1e-6)));
});

const VectorAdapterRegistration kMHLA("gdla.MultiHeadLinearAttn", [](VectorCall& call) {
    attention::MultiHeadLinearAttn attn(call.config.get_int("dim"), call.config.get_int("n_heads"),
                                        call.config.get_bool("qkv_bias", true),
                                        call.config.get_double("eps", 1e-6));
    bind_module(call, attn);
    return output(attn.forward(call.input("x")));
});

const VectorAdapterRegistration kGDLA("gdla.GatedDiffLinearAttn", [](VectorCall& call) {
    attention::GatedDiffLinearAttn attn(call.config.get_int("dim"), call.config.get_int("n_heads"),
                                        call.config.get_bool("qkv_bias", true));
    bind_module(call, attn);
    const Tensor& x = call.input("x");
    auto [height, width] = grid_of(call, x);
    return output(attn.forward(x, nn::attention::AttentionContext{.grid = {height, width}}));
});

const VectorAdapterRegistration kGMLP("gdla.GMLP", [](VectorCall& call) {
    gdla::GMLP mlp(call.config.get_int("in_features"), call.config.get_int("hidden_features"),
                   call.config.get_int("out_features", -1));
    bind_module(call, mlp);
    const Tensor& x = call.input("x");
    auto [height, width] = grid_of(call, x);
    return output(mlp.forward(x, height, width));
});

const VectorAdapterRegistration kGDLAM("gdla.GDLAM", [](VectorCall& call) {
    gdla::GDLAM block(call.config.get_int("dim"), call.config.get_int("n_heads"),
                      call.config.get_bool("qkv_bias", true),
                      call.config.get_double("norm_eps", 1e-5),
                      call.config.get_double("hidden_ratio", 4.0));
    bind_module(call, block);
    return output(block.forward(call.input("x")));
});

const VectorAdapterRegistration kMHSA("gdla.MultiHeadSelfAttn", [](VectorCall& call) {
    attention::MultiHeadSelfAttn attn(call.config.get_int("dim"), call.config.get_int("n_heads"),
                                      call.config.get_bool("qkv_bias", true),
                                      call.config.get_bool("use_rope", false),
                                      call.config.get_double("rope_base", 10000.0));
    bind_module(call, attn);
    return output(attn.forward(call.input("x")));
});

const VectorAdapterRegistration kMHDA("gdla.MultiHeadDiffAttn", [](VectorCall& call) {
    attention::MultiHeadDiffAttn attn(
        call.config.get_int("dim"), call.config.get_int("n_heads"), call.config.get_int("depth"),
        call.config.get_bool("qkv_bias", true), call.config.get_bool("use_rope", false),
        call.config.get_double("rope_base", 10000.0));
    bind_module(call, attn);
    return output(attn.forward(call.input("x")));
});

const VectorAdapterRegistration kPreNormBlock("gdla.PreNormBlock", [](VectorCall& call) {
    VectorConfig& c = call.config;
    gdla::PreNormBlockOptions options{.qkv_bias = c.get_bool("qkv_bias", true),
                                      .norm_eps = c.get_double("norm_eps", 1e-5),
                                      .hidden_ratio = c.get_double("hidden_ratio", 4.0),
                                      .use_rope = c.get_bool("use_rope", false),
                                      .rope_base = c.get_double("rope_base", 10000.0),
                                      .depth = c.get_int("depth", 1)};
    gdla::PreNormBlock block(c.get_string("kind", ""), c.get_int("dim"), c.get_int("n_heads"),
                             options);
    bind_module(call, block);
    return output(block.forward(call.input("x")));
});

const VectorAdapterRegistration kUpsample("gdla.Upsample", [](VectorCall& call) {
    gdla::Upsample up(call.config.get_int("in_chs"), call.config.get_int("out_chs"),
                      call.config.get_int("ks", 3));
    bind_module(call, up);
    return output(up.forward(call.input("x")));
});

// The vectors carry no mode key: an eval vector stores running statistics that were never
// updated (num_batches_tracked 0), the train vector the statistics after its one training
// forward from mean 0 / var 1 (num_batches_tracked 1). A train vector is therefore run from
// fresh statistics, and the update is checked against the stored ones.
bool is_train_vector(const VectorCall& call) {
    bool any = false, all_one = true;
    for (const auto& [name, tensor] : call.buffers) {
        if (name.size() < 20 || name.compare(name.size() - 20, 20, ".num_batches_tracked"))
            continue;
        any = true;
        all_one = all_one && tensor.to(DType::int64).to(Device::cpu()).item<int64_t>() == 1;
    }
    return any && all_one;
}

void require_buffers_close(VectorCall& call, const TensorMap& want, nn::Module& module) {
    for (const auto& [name, expected] : want) {
        std::vector<double> got = module.tensor(name).to(Device::cpu()).to_vector<double>();
        std::vector<double> ref = expected.to(Device::cpu()).to_vector<double>();
        for (size_t i = 0; i < ref.size(); ++i)
            LUMEN_CHECK(std::abs(got[i] - ref[i]) <= 1e-5 + 1e-4 * std::abs(ref[i]), call.module,
                        "buffer ", name, "[", i, "] after the training forward is ", got[i],
                        ", the vector has ", ref[i]);
    }
}

const VectorAdapterRegistration kResBlk("gdla.ResBlk", [](VectorCall& call) {
    gdla::ResBlk block(call.config.get_int("in_chs"), call.config.get_int("out_chs"),
                       call.config.get_double("norm_eps", 1e-5));
    bool train = is_train_vector(call);
    TensorMap after = call.buffers;
    if (train) {
        // Fresh statistics (mean 0, var 1, count 0), as the module is built.
        for (auto& [name, tensor] : call.buffers) tensor = block.tensor(name).clone();
    }
    bind_module(call, block);
    block.train(train);
    Tensor y = block.forward(call.input("x"));
    if (train) require_buffers_close(call, after, block);
    return output(y);
});

}  // namespace

}  // namespace lumen::conformance
