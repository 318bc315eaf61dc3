// PVTv2 parts (Wang et al. 2022; timm pvt_v2.py): spatial-reduction attention against a
// head-by-head reference whose reduction conv is written as a patch matmul, the "pvt_sra" registry
// entry, patch embedding, depthwise-conv MLP, block and stage shapes, names, errors, float64
// gradients, and the committed gdla vectors of these modules.
#include <cmath>

#include "nn/attention/attention.h"
#include "nn/attention/spatial_reduction_attention.h"
#include "nn/pvt/pvt_blocks.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using nn::attention::SRAttention;
using nn::pvt::MlpWithDepthwiseConv;
using nn::pvt::OverlapPatchEmbed;
using nn::pvt::PVTBlock;
using nn::pvt::PVTStage;

namespace {

void randomize(nn::Module& m, uint64_t seed, double scale = 0.5) {
    NoGradGuard no_grad;
    for (auto& [name, p] : m.named_parameters())
        p.copy_(random_input(p.shape(), seed++, -scale, scale));
}

std::vector<std::string> parameter_names(const nn::Module& m) {
    std::vector<std::string> names;
    for (const auto& [name, p] : m.named_parameters()) names.push_back(name);
    return names;
}

// The K/V source of SRAttention from its formula: the r x r stride-r conv as a matmul over
// non-overlapping patches (floor division drops the ragged border), the "-li" branch with
// adaptive pooling and a 1x1 conv as a matmul.
Tensor reference_source(const SRAttention& m, const Tensor& x, int64_t height, int64_t width) {
    int64_t batch = x.size(0), c = m.dim;
    if (!m.sr) return x;
    Tensor map = x.transpose(1, 2).reshape({batch, c, height, width});
    Tensor tokens;
    if (m.linear) {
        Tensor pooled = adaptive_avg_pool2d(map, {7, 7}).reshape({batch, c, 49}).transpose(1, 2);
        tokens = linear(pooled, m.sr->weight.reshape({c, c}), m.sr->bias);
    } else {
        int64_t r = m.sr_ratio, h = height / r, w = width / r;
        Tensor cropped = map.narrow(2, 0, h * r).narrow(3, 0, w * r);
        // (B, C, h, r, w, r) -> (B, h, w, C, r, r): one row per output pixel, PyTorch's
        // weight layout (out, in, kh, kw) flattened the same way.
        Tensor patches = cropped.reshape({batch, c, h, r, w, r})
                             .permute({0, 2, 4, 1, 3, 5})
                             .reshape({batch, h * w, c * r * r});
        tokens = linear(patches, m.sr->weight.reshape({c, c * r * r}), m.sr->bias);
    }
    tokens = layer_norm(tokens, {c}, m.norm->weight, m.norm->bias, 1e-5);
    return m.linear ? gelu(tokens) : tokens;
}

// `prefix` tokens in front of the grid are queries and, unreduced, the first keys.
Tensor reference_sra(const SRAttention& m, const Tensor& x, int64_t height, int64_t width,
                     int64_t prefix = 0) {
    Tensor src = reference_source(m, x.narrow(1, prefix, height * width), height, width);
    if (prefix > 0) src = cat({x.narrow(1, 0, prefix), src}, 1);
    Tensor q = linear(x, m.q->weight, m.q->bias), kv = linear(src, m.kv->weight, m.kv->bias);
    int64_t hd = m.head_dim;
    std::vector<Tensor> heads;
    for (int64_t h = 0; h < m.num_heads; ++h) {
        Tensor qh = q.narrow(-1, h * hd, hd), kh = kv.narrow(-1, h * hd, hd);
        Tensor vh = kv.narrow(-1, m.dim + h * hd, hd);
        Tensor p = softmax(div(matmul(qh, kh.transpose(1, 2)), std::sqrt(double(hd))), -1);
        heads.push_back(matmul(p, vh));
    }
    return linear(cat(heads, -1), m.proj->weight, m.proj->bias);
}

}  // namespace

TEST_CASE("SRAttention: timm key names and shapes for sr 1, sr r and the linear variant",
          "[nn][pvt]") {
    SRAttention plain(16, 2, 1);
    CHECK(parameter_names(plain) == std::vector<std::string>{"q.weight", "q.bias", "kv.weight",
                                                             "kv.bias", "proj.weight",
                                                             "proj.bias"});
    SRAttention reduced(16, 2, 4);
    CHECK(reduced.tensor("sr.weight").shape() == Shape{16, 16, 4, 4});
    CHECK(reduced.tensor("norm.weight").shape() == Shape{16});
    SRAttention pooled(16, 2, 8, true, false);
    CHECK(pooled.tensor("sr.weight").shape() == Shape{16, 16, 1, 1});
    CHECK(pooled.state_dict().count("q.bias") == 0);
    CHECK(nn::attention::reduced_tokens(9, 11, 4, false) == 4);
    CHECK(nn::attention::reduced_tokens(9, 11, 4, true) == 49);
    CHECK(nn::attention::reduced_tokens(9, 11, 1, false) == 99);
}

TEST_CASE("SRAttention equals the head-by-head reference (sr 1, 2, 4, linear, small grids)",
          "[nn][pvt]") {
    struct Case {
        int64_t dim, heads, sr;
        bool linear;
        int64_t height, width;
    };
    for (Case c :
         {Case{8, 2, 1, false, 3, 5}, Case{8, 2, 2, false, 5, 7}, Case{6, 1, 4, false, 9, 11},
          Case{8, 4, 1, true, 10, 6}, Case{8, 2, 1, true, 4, 5}}) {
        INFO(c.sr << " " << c.linear << " " << c.height << "x" << c.width);
        SRAttention m(c.dim, c.heads, c.sr, c.linear);
        m.to(DType::float64);
        randomize(m, 3);
        Tensor x = random_input({2, c.height * c.width, c.dim}, 4);
        nn::attention::AttentionContext context{.grid = {c.height, c.width}};
        require_close(m.forward(x, context), reference_sra(m, x, c.height, c.width), 1e-10, 1e-12);
    }
}

TEST_CASE("SRAttention: prefix tokens are queries and unreduced keys (sr 1, 2, linear)",
          "[nn][pvt]") {
    struct Case {
        int64_t sr;
        bool linear;
        int64_t prefix, height, width;
    };
    for (Case c : {Case{1, false, 1, 3, 4}, Case{2, false, 1, 5, 7}, Case{4, false, 2, 8, 8},
                   Case{1, true, 1, 4, 5}}) {
        INFO(c.sr << " " << c.linear << " prefix " << c.prefix);
        SRAttention m(8, 2, c.sr, c.linear);
        m.to(DType::float64);
        randomize(m, 5);
        Tensor x = random_input({2, c.prefix + c.height * c.width, 8}, 6);
        nn::attention::AttentionContext context{.grid = {c.height, c.width},
                                                .prefix_tokens = c.prefix};
        Tensor y = m.forward(x, context);
        require_close(y, reference_sra(m, x, c.height, c.width, c.prefix), 1e-10, 1e-12);
    }
    SRAttention m(4, 2, 2);
    randomize(m, 9);
    module_gradcheck(m, [&](const std::vector<Tensor>& in) { return m.forward(in[0], 4, 4, 1); },
                     {random_input({2, 17, 4}, 10)});
}

TEST_CASE("SRAttention: float64 gradients of input and parameters", "[nn][pvt]") {
    struct Case {
        int64_t sr;
        bool linear;
        int64_t height, width;
    };
    for (Case c : {Case{1, false, 2, 3}, Case{2, false, 4, 5}, Case{1, true, 3, 4}}) {
        INFO(c.sr << " " << c.linear);
        SRAttention m(4, 2, c.sr, c.linear);
        randomize(m, 7);
        module_gradcheck(
            m, [&](const std::vector<Tensor>& in) { return m.forward(in[0], c.height, c.width); },
            {random_input({2, c.height * c.width, 4}, 8)});
    }
}

TEST_CASE("SRAttention: errors name the module and the offending values", "[nn][pvt]") {
    SRAttention m(8, 2, 4);
    Tensor x = zeros({1, 12, 8});
    require_error([&] { m.forward(x); }, {"[SRAttention]", "grid"});
    require_error([&] { m.forward(x, 3, 5); }, {"[SRAttention]", "H = 3", "W = 5"});
    require_error([&] { m.forward(x, 3, 4); }, {"[SRAttention]", "3x4", "sr_ratio 4"});
    nn::attention::AttentionContext masked{.grid = {3, 4}, .causal = true};
    require_error([&] { m.forward(x, masked); }, {"[SRAttention]", "mask"});
    require_error([] { SRAttention(10, 4); }, {"[SRAttention]", "dim 10", "num_heads 4"});
    require_error([] { SRAttention(8, 2, 0); }, {"[SRAttention]", "sr_ratio"});
}

TEST_CASE("pvt_sra is in the attention registry with sr_ratio and linear options",
          "[nn][pvt][attention]") {
    nn::attention::AttentionConfig config{.type = "pvt_sra",
                                          .dim = 16,
                                          .num_heads = 2,
                                          .head_dim = 8,
                                          .options = {{"sr_ratio", 2.0}}};
    auto attention = nn::attention::make_attention(config);
    auto* sra = dynamic_cast<SRAttention*>(attention.get());
    REQUIRE(sra != nullptr);
    CHECK(sra->sr_ratio == 2);
    CHECK(!sra->linear);
    Tensor y =
        attention->forward(zeros({1, 20, 16}), nn::attention::AttentionContext{.grid = {4, 5}});
    CHECK(y.shape() == Shape{1, 20, 16});
    config.options = {{"linear", 1.0}};
    CHECK(dynamic_cast<SRAttention&>(*nn::attention::make_attention(config)).linear);
    config.options = {{"window", 7.0}};
    require_error([&] { nn::attention::make_attention(config); }, {"[pvt_sra]", "window"});
    config.options = {{"sr_ratio", 1.5}};
    require_error([&] { nn::attention::make_attention(config); }, {"[pvt_sra]", "1.5"});
    config.options = {};
    config.head_dim = 4;
    require_error([&] { nn::attention::make_attention(config); }, {"[pvt_sra]", "head_dim"});
}

TEST_CASE("OverlapPatchEmbed: conv, NHWC LayerNorm, floor((H + 2 (k/2) - k) / s) + 1",
          "[nn][pvt]") {
    OverlapPatchEmbed stem(7, 4, 3, 8);
    for (auto [h, w] : {std::pair<int64_t, int64_t>{19, 26}, {64, 64}, {1, 5}}) {
        Tensor y = stem.forward(zeros({2, 3, h, w}));
        CHECK(y.shape() == Shape{2, (h - 1) / 4 + 1, (w - 1) / 4 + 1, 8});
    }
    OverlapPatchEmbed down(3, 2, 4, 6);
    CHECK(down.forward(zeros({1, 4, 5, 8})).shape() == Shape{1, 3, 4, 6});
    CHECK(parameter_names(down) ==
          std::vector<std::string>{"proj.weight", "proj.bias", "norm.weight", "norm.bias"});
    require_error(
        [&] {
            down.forward(zeros({1, 3, 5, 8}));
        },
        {"[OverlapPatchEmbed]", "(B, 4, H, W)"});
    randomize(down, 11);
    module_gradcheck(down, random_input({2, 4, 5, 4}, 12));
}

TEST_CASE("MlpWithDepthwiseConv: fc1, [ReLU], depthwise 3x3, GELU, fc2; gradients", "[nn][pvt]") {
    MlpWithDepthwiseConv mlp(4, 6, true);
    CHECK(mlp.tensor("dwconv.weight").shape() == Shape{6, 1, 3, 3});
    CHECK(mlp.tensor("fc2.weight").shape() == Shape{4, 6});
    mlp.to(DType::float64);
    randomize(mlp, 13);
    Tensor x = random_input({2, 12, 4}, 14);
    // Reference: the depthwise conv as 6 single-channel convs.
    Tensor map =
        relu(linear(x, mlp.fc1->weight, mlp.fc1->bias).transpose(1, 2).reshape({2, 6, 3, 4}));
    std::vector<Tensor> planes;
    for (int64_t c = 0; c < 6; ++c)
        planes.push_back(conv2d(map.narrow(1, c, 1), mlp.dwconv->weight.narrow(0, c, 1),
                                mlp.dwconv->bias.narrow(0, c, 1), {1}, {1}));
    Tensor hidden = gelu(cat(planes, 1).reshape({2, 6, 12}).transpose(1, 2));
    require_close(mlp.forward(x, 3, 4), linear(hidden, mlp.fc2->weight, mlp.fc2->bias), 1e-12,
                  1e-12);
    require_error([&] { mlp.forward(x, 4, 4); }, {"[MlpWithDepthwiseConv]", "H = 4"});
    module_gradcheck(mlp, [&](const std::vector<Tensor>& in) { return mlp.forward(in[0], 3, 4); },
                     {x});
}

TEST_CASE("PVTBlock: timm names, residual structure, gradients", "[nn][pvt]") {
    PVTBlock block(8, 2, {.mlp_ratio = 2, .sr_ratio = 2});
    CHECK(block.state_dict().size() == 20);
    CHECK(block.tensor("mlp.fc1.weight").shape() == Shape{16, 8});
    CHECK(block.norm1->eps == 1e-6);
    CHECK(block.attn->norm->eps == 1e-5);
    PVTBlock li(8, 2, {.mlp_ratio = 2, .sr_ratio = 8, .linear = true});
    CHECK(li.mlp->extra_relu);
    CHECK(li.tensor("attn.sr.weight").shape() == Shape{8, 8, 1, 1});
    randomize(block, 15, 0.3);
    module_gradcheck(block,
                     [&](const std::vector<Tensor>& in) { return block.forward(in[0], 4, 3); },
                     {random_input({2, 12, 8}, 16)});
}

TEST_CASE("PVTStage: downsample, blocks, norm, NCHW out; errors", "[nn][pvt]") {
    PVTStage stage(4, 8, 2, true, 2, {.mlp_ratio = 2, .sr_ratio = 2});
    CHECK(stage.forward(zeros({1, 4, 7, 9})).shape() == Shape{1, 8, 4, 5});
    CHECK(stage.tensor("blocks.1.attn.sr.weight").shape() == Shape{8, 8, 2, 2});
    CHECK(stage.tensor("downsample.proj.weight").shape() == Shape{8, 4, 3, 3});
    PVTStage first(6, 6, 1, false, 3);
    CHECK(first.forward(zeros({2, 3, 5, 6})).shape() == Shape{2, 6, 3, 5});
    require_error([&] { first.forward(zeros({2, 6, 3, 5})); }, {"[PVTStage]", "NHWC"});
    require_error([] { PVTStage(4, 8, 1, false, 2); }, {"[PVTStage]", "dim_out"});
    require_error([] { PVTStage(4, 8, 2, true, 2, {}, {0.1}); }, {"[PVTStage]", "drop_paths"});
    PVTStage tiny(2, 4, 1, true, 2, {.mlp_ratio = 1, .sr_ratio = 2});
    randomize(tiny, 17, 0.3);
    module_gradcheck(tiny, random_input({1, 2, 6, 5}, 18));
}

TEST_CASE("PVTv2 part vectors of PVT-GDLA pass", "[nn][pvt][vectors]") {
    require_oracle_vectors(
        {"pvt_patch_embed_stem_19x26", "pvt_block_sr2_C16_h2_6x8", "pvt_block_sr1_C16_h2_5x7",
         "pvt_block_sr4_C8_h1_9x11", "pvt_block_linear_C16_h2_10x6", "pvt_block_linear_C16_h2_4x5",
         "pvt_stage_downsample_10x12"},
        "gdla");
}
