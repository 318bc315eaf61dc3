// check-vectors adapters for UTNet's modules and the whole model (Gao et al. 2021, Sec. 2; module
// strings "sfree_utnet.<official class name>"): constructor keyword arguments from the config,
// forward-only arguments under "forward", parameters and buffers loaded by bind_module; the
// whole model built by the registry's utnet.
#include "conformance/module_vectors.h"
#include "conformance/registry_vectors.h"
#include "models/utnet.h"

namespace lumen::conformance {

namespace {

using nn::attention::LinearAttentionOptions;

// The attention keyword arguments shared by every UTNet module with transformer parts;
// `dim_head` may be null (the blocks ignore it) and `heads` defaults as in the reference.
LinearAttentionOptions attention_options(VectorConfig& config, int64_t default_heads) {
    LinearAttentionOptions o;
    o.heads = config.get_int("heads", default_heads);
    const nlohmann::json& dim_head = config.get("dim_head");
    if (!dim_head.is_null()) o.dim_head = config.get_int("dim_head");
    o.attn_drop = config.get_double("attn_drop", 0.0);
    o.proj_drop = config.get_double("proj_drop", 0.0);
    o.reduce_size = config.get_int("reduce_size", 16);
    o.projection = config.get_string("projection", "interp");
    o.rel_pos = config.get_bool("rel_pos", true);
    o.rel_pos_type = config.get_string("rel_pos_type", "bias");
    return o;
}

// An integer of the config's "forward" object (forward-only arguments).
int64_t forward_int(VectorCall& call, const char* key) {
    const nlohmann::json& forward = call.config.get("forward");
    LUMEN_CHECK(forward.is_object() && forward.contains(key) && forward[key].is_number_integer(),
                call.module, "config 'forward' needs an integer '", key, "', got ", forward.dump());
    return forward[key].get<int64_t>();
}

bool returns_attn(VectorCall& call) {
    const nlohmann::json& forward = call.config.get("forward");
    return forward.is_object() && forward.value("return_attn", false);
}

TensorMap with_attn(VectorCall& call, const nn::attention::AttentionResult& result) {
    if (returns_attn(call)) return {{"y", result.y}, {"attn", result.attn}};
    return {{"y", result.y}};
}

const VectorAdapterRegistration kRelativePositionBias(
    "sfree_utnet.RelativePositionBias", [](VectorCall& call) {
        int64_t h = call.config.get_int("h"), w = call.config.get_int("w");
        LUMEN_CHECK(h == w, call.module, "only a square reduced grid is supported, got h ", h,
                    " and w ", w);
        nn::attention::RelativePositionBias bias(call.config.get_int("num_heads"), h);
        bind_module(call, bias);
        return TensorMap{{"y", bias.forward(forward_int(call, "H"), forward_int(call, "W"))}};
    });

const VectorAdapterRegistration kRelativePositionEmbedding(
    "sfree_utnet.RelativePositionEmbedding", [](VectorCall& call) {
        nn::attention::RelativePositionEmbedding embedding(call.config.get_int("dim"),
                                                           call.config.get_int("shape"));
        bind_module(call, embedding);
        LUMEN_CHECK(forward_int(call, "dim_head") == embedding.dim, call.module,
                    "forward dim_head must equal dim ", embedding.dim);
        auto [rel_w, rel_h] = embedding.forward(call.input("q"), forward_int(call, "Nh"),
                                                forward_int(call, "H"), forward_int(call, "W"));
        return TensorMap{{"rel_w", rel_w}, {"rel_h", rel_h}};
    });

const VectorAdapterRegistration kLinearAttention(
    "sfree_utnet.LinearAttention", [](VectorCall& call) {
        LinearAttentionOptions options = attention_options(call.config, 4);
        nn::attention::LinearAttention attention(call.config.get_int("dim"), options);
        bind_module(call, attention);
        return with_attn(call, attention.forward_attn(call.input("x")));
    });

const VectorAdapterRegistration kLinearAttentionDecoder(
    "sfree_utnet.LinearAttentionDecoder", [](VectorCall& call) {
        LinearAttentionOptions options = attention_options(call.config, 4);
        nn::attention::LinearAttentionDecoder attention(call.config.get_int("in_dim"),
                                                        call.config.get_int("out_dim"), options);
        bind_module(call, attention);
        attention.store_attn = returns_attn(call);
        return with_attn(call, attention.forward(call.input("q"), call.input("x")));
    });

const VectorAdapterRegistration kBasicBlock("sfree_utnet.BasicBlock", [](VectorCall& call) {
    nn::utnet::BasicBlock block(call.config.get_int("inplanes"), call.config.get_int("planes"),
                                call.config.get_int("stride", 1));
    bind_module(call, block);
    return TensorMap{{"y", block.forward(call.input("x"))}};
});

const VectorAdapterRegistration kBasicTransBlock(
    "sfree_utnet.BasicTransBlock", [](VectorCall& call) {
        nn::utnet::BasicTransBlock block(call.config.get_int("in_ch"),
                                         attention_options(call.config, 4));
        bind_module(call, block);
        return TensorMap{{"y", block.forward(call.input("x"))}};
    });

const VectorAdapterRegistration kBasicTransDecoderBlock(
    "sfree_utnet.BasicTransDecoderBlock", [](VectorCall& call) {
        nn::utnet::BasicTransDecoderBlock block(call.config.get_int("in_ch"),
                                                call.config.get_int("out_ch"),
                                                attention_options(call.config, 4));
        bind_module(call, block);
        return TensorMap{{"y", block.forward(call.input("x1"), call.input("x2"))}};
    });

const VectorAdapterRegistration kDownBlockTrans(
    "sfree_utnet.down_block_trans", [](VectorCall& call) {
        nn::utnet::DownBlockTrans block(call.config.get_int("in_ch"), call.config.get_int("out_ch"),
                                        call.config.get_int("num_block"),
                                        call.config.get_bool("maxpool", true),
                                        attention_options(call.config, 4));
        bind_module(call, block);
        return TensorMap{{"y", block.forward(call.input("x"))}};
    });

const VectorAdapterRegistration kUpBlockTrans("sfree_utnet.up_block_trans", [](VectorCall& call) {
    nn::utnet::UpBlockTrans block(call.config.get_int("in_ch"), call.config.get_int("out_ch"),
                                  call.config.get_int("num_block"),
                                  attention_options(call.config, 4));
    bind_module(call, block);
    return TensorMap{{"y", block.forward(call.input("x1"), call.input("x2"))}};
});

const VectorAdapterRegistration kUpBlock("sfree_utnet.up_block", [](VectorCall& call) {
    std::vector<int64_t> scale = call.config.get_ints("scale", {2, 2});
    LUMEN_CHECK(scale == std::vector<int64_t>({2, 2}), call.module,
                "only scale (2, 2) is supported, got ", scale);
    nn::utnet::UpBlock block(call.config.get_int("in_ch"), call.config.get_int("out_ch"),
                             call.config.get_int("num_block"));
    bind_module(call, block);
    return TensorMap{{"y", block.forward(call.input("x1"), call.input("x2"))}};
});

// UTNet(in_chan, base_chan, num_classes=1, block_list="234", num_blocks=(1, 2, 4),
// num_heads=(2, 4, 8), attn_drop=0.0, proj_drop=0.0, aux_loss=False, ...): the entry utnet,
// whose defaults are the paper's training model.
const RegistryModel kUTNetModel{"utnet",
                                {},
                                {},
                                {{"num_classes", int64_t(1)},
                                 {"block_list", std::string("234")},
                                 {"num_blocks", std::vector<int64_t>{1, 2, 4}},
                                 {"num_heads", std::vector<int64_t>{2, 4, 8}},
                                 {"attn_drop", 0.0},
                                 {"proj_drop", 0.0},
                                 {"aux_loss", false}}};

const VectorAdapterRegistration kUTNet("sfree_utnet.UTNet", [](VectorCall& call) {
    std::vector<Tensor> out =
        build_registry_model(call, kUTNetModel)->forward_outputs(call.input("x"));
    if (out.size() == 1) return TensorMap{{"y", out[0]}};
    return TensorMap{{"y", out[0]}, {"out3", out[1]}, {"out2", out[2]}, {"out1", out[3]}};
});

}  // namespace

}  // namespace lumen::conformance
