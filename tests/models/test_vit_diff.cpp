// The models of the DGSA paper (Lygizou et al. 2025): ViT and DGViT (timm skeleton, init, the
// paper's parameter counts), the text classifiers TransformerCls, DiffTransformerCls and DGT
// (per-layer parameter counts, padding invariance, the padding row), gradients and errors. CUDA
// parity is tagged [cuda].
#include <cmath>

#include "models/text_transformer.h"
#include "models/vit.h"
#include "nn/diff_testing.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::testing::diff_check;

namespace {

int64_t block_parameters(const nn::Module& model) {
    int64_t total = 0;
    for (const auto& [name, p] : model.named_parameters())
        if (name.rfind("blocks.0.", 0) == 0) total += p.numel();
    return total;
}

Tensor tokens(const std::vector<int64_t>& values, int64_t batch) {
    return from_vector(values, {batch, int64_t(values.size()) / batch});
}

}  // namespace

TEST_CASE("ViT and DGViT: the spec's parameter counts on CIFAR-10/100 and FashionMNIST",
          "[models][vit][diff]") {
    CHECK(models::ViT(models::vit_config(10)).num_parameters() == 6350602);  // 6.35M
    // DGViT k = 4 / k = 2 (the paper's Table 6): 5.31M / 3.73M, 5.33M / 3.76M, 5.30M / 3.72M.
    struct Case {
        int64_t classes;
        std::vector<int64_t> img;
        int64_t chans;
        double k;
        double millions;
    };
    for (const Case& c : {Case{10, {32, 32}, 3, 4.0, 5.31}, Case{10, {32, 32}, 3, 2.0, 3.73},
                          Case{100, {32, 32}, 3, 4.0, 5.33}, Case{100, {32, 32}, 3, 2.0, 3.76},
                          Case{10, {28, 28}, 1, 4.0, 5.30}, Case{10, {28, 28}, 1, 2.0, 3.72}}) {
        models::ViT model(models::dgvit_config(c.classes, c.img, c.chans, c.k));
        INFO(c.classes << " classes, k " << c.k << ": " << model.num_parameters());
        CHECK(std::abs(double(model.num_parameters()) / 1e6 - c.millions) < 0.005);
    }
    // k 2 -> 4 adds fc1 256 x 512 + 512 and fc2 256 x 256 per block: 1.58M over 8 blocks, the
    // paper's difference.
    int64_t k4 = models::ViT(models::dgvit_config(10, {32, 32}, 3, 4.0)).num_parameters();
    int64_t k2 = models::ViT(models::dgvit_config(10, {32, 32}, 3, 2.0)).num_parameters();
    CHECK(k4 - k2 == 8 * (256 * 256 * 3 + 256 * 2));
}

TEST_CASE("text classifiers: per-layer parameter counts of DGT and Diff for k = 2, 4, 16/3",
          "[models][text][diff]") {
    const double ks[] = {2.0, 4.0, 16.0 / 3.0};
    const int64_t dgt_counts[] = {462120, 659240, 790140};
    const int64_t diff_counts[] = {460128, 657248, 788148};
    for (int i = 0; i < 3; ++i) {
        INFO("k " << ks[i]);
        CHECK(block_parameters(models::TextTransformer(models::dgt_config(100, 2, ks[i], 1))) ==
              dgt_counts[i]);
        CHECK(block_parameters(models::TextTransformer(
                  models::diff_transformer_cls_config(100, 2, ks[i], 1))) == diff_counts[i]);
    }
    models::TextTransformer baseline(models::transformer_cls_config(100, 2, 1));
    CHECK(block_parameters(baseline) ==
          4 * 256 + 256 * 768 + 768 + 256 * 257 + 256 * 1025 + 1024 * 257);
}

TEST_CASE("ViT: timm layout, init and class-token logits", "[models][vit][diff]") {
    manual_seed(3);
    models::ViTConfig config = models::vit_config(5, {12, 8}, 3, 0.0);
    config.embed_dim = 32;
    config.depth = 2;
    config.num_heads = 4;
    models::ViT vit(config);
    auto state = vit.state_dict();
    for (const char* name :
         {"cls_token", "pos_embed", "patch_embed.proj.weight", "blocks.1.attn.qkv.weight",
          "blocks.0.mlp.fc2.bias", "norm.weight", "head.bias"})
        CHECK(state.count(name) == 1);
    CHECK(vit.pos_embed.shape() == Shape{1, 7, 32});  // 1 + 3 x 2 patches
    // timm init: Linear weights N(0, .02) truncated, zero biases, tiny class token.
    double head_std = lumen::std(vit.head->weight).item<float>();
    CHECK(std::abs(head_std - 0.02) < 0.006);
    CHECK(amax(abs(vit.tensor("blocks.0.attn.qkv.bias"))).item<float>() == 0.0f);
    CHECK(amax(abs(vit.cls_token)).item<float>() < 1e-4);
    CHECK(std::abs(lumen::std(vit.pos_embed).item<float>() - 0.02) < 0.004);
    Tensor img = random_input({2, 3, 12, 8}, 30).to(DType::float32);
    CHECK(vit.forward(img).shape() == Shape{2, 5});
    Tensor features = vit.forward_features(img);
    CHECK(features.shape() == Shape{2, 7, 32});
    require_close(vit.forward(img), vit.head->forward(features.select(1, 0)), 1e-6, 1e-6);
    require_error(
        [&] {
            vit.forward(ones({2, 3, 8, 8}));
        },
        {"[ViT]", "(B, 3, 12, 8)", "[2, 3, 8, 8]"});
    models::ViTConfig bad = config;
    bad.img_size = {10, 8};
    require_error([&] { models::ViT b(bad); }, {"[ViT]", "patches of 4"});
}

TEST_CASE("ViT and DGViT: stored maps of every block feed attention_rollout",
          "[models][vit][rollout][diff]") {
    for (bool dgsa : {false, true}) {
        models::ViTConfig config = dgsa ? models::dgvit_config(3, {8, 8}, 3, 4.0, 0.0)
                                        : models::vit_config(3, {8, 8}, 3, 0.0);
        config.embed_dim = 16;
        config.depth = 3;
        config.num_heads = 2;
        models::ViT model(config);
        require_error([&] { nn::stored_attention_maps(model); },
                      {"[attention_rollout]", "blocks.0.attn", "store_attention_maps"});
        nn::store_attention_maps(model);
        model.forward(random_input({2, 3, 8, 8}, 32).to(DType::float32));
        std::vector<Tensor> maps = nn::stored_attention_maps(model);
        REQUIRE(maps.size() == 3);
        CHECK(maps[2].shape() == Shape{2, 2, 5, 5});  // 1 + 2 x 2 tokens
        Tensor rollout = nn::attention_rollout(maps);
        CHECK(rollout.shape() == Shape{2, 5, 5});
        // Every R_l has unit row sums, so the product has too (signed DGSA maps included).
        require_close(sum(rollout, {-1}), ones({2, 5}), 1e-5, 1e-5);
    }
    nn::Linear plain(2, 2);
    require_error([&] { nn::stored_attention_maps(plain); }, {"[attention_rollout]", "Linear"});
}

TEST_CASE("DGViT: gradients of a tiny model in float64", "[models][vit][diff]") {
    models::ViTConfig config = models::dgvit_config(3, {4, 4}, 2, 4.0, 0.0);
    config.patch_size = 2;
    config.embed_dim = 8;
    config.depth = 1;
    config.num_heads = 2;
    models::ViT model(config);
    CHECK(model.type_name() == "DGViT");
    module_gradcheck(model, [&](const std::vector<Tensor>& in) { return model.forward(in[0]); },
                     {random_input({2, 2, 4, 4}, 31)});
}

TEST_CASE("text classifiers: padding changes nothing, the pad row gets no gradient",
          "[models][text][diff]") {
    std::vector<models::TextTransformerConfig> configs = {
        models::transformer_cls_config(20, 3, 2, 0.0),
        models::diff_transformer_cls_config(20, 3, 16.0 / 3.0, 2, 0.0),
        models::dgt_config(20, 3, 2.0, 2, 0.0)};
    for (models::TextTransformerConfig config : configs) {
        INFO(config.name);
        config.embed_dim = 16;
        config.num_heads = 2;
        models::TextTransformer model(config);
        model.to(DType::float64);
        Tensor short_tokens = tokens({5, 3, 9, 1, 1, 4, 0, 0}, 2);  // sample 1: 2 tokens + pad
        Tensor padded = tokens({5, 3, 9, 1, 0, 0, 1, 4, 0, 0, 0, 0}, 2);
        Tensor logits = model.forward(short_tokens);
        CHECK(logits.shape() == Shape{2, 3});
        require_close(model.forward(padded), logits, 1e-10, 1e-12);
        // Sample 1 alone, unpadded, gives the same logits.
        require_close(model.forward(tokens({1, 4}, 1)), logits.narrow(0, 1, 1), 1e-10, 1e-12);
        sum(logits).backward();
        require_close(model.tok_embed->weight.grad().select(0, 0), zeros({16}, DType::float64), 0,
                      0);
    }
}

TEST_CASE("DGT: gradients of a tiny model in float64; errors", "[models][text][diff]") {
    models::TextTransformerConfig config = models::dgt_config(9, 2, 16.0 / 3.0, 1, 0.0);
    config.embed_dim = 8;
    config.num_heads = 2;
    config.max_len = 6;
    models::TextTransformer model(config);
    Tensor toks = tokens({3, 1, 8, 0, 2, 5, 0, 0}, 2);
    module_gradcheck(model, [&](const std::vector<Tensor>&) { return model.forward(toks); }, {});
    require_error([&] { model.forward(ones({2, 4})); }, {"[DGT]", "int64", "float32"});
    require_error(
        [&] {
            model.forward(tokens({1, 2, 3, 4, 5, 6, 7}, 1));
        },
        {"[DGT]", "length 7", "max_len 6"});
    models::TextTransformerConfig bad = config;
    bad.pad_idx = 9;
    require_error([&] { models::TextTransformer b(bad); }, {"[DGT]", "pad_idx 9"});
}

TEST_CASE("models on CUDA match the CPU", "[models][diff][cuda]") {
    if (!have_gpu()) return;
    models::ViTConfig vit_config = models::dgvit_config(3, {8, 8}, 3, 4.0, 0.0);
    vit_config.embed_dim = 16;
    vit_config.depth = 2;
    vit_config.num_heads = 2;
    models::ViT vit(vit_config);
    Tensor img = random_input({2, 3, 8, 8}, 40).to(DType::float32);
    Tensor cpu_logits = vit.forward(img);
    vit.to(Device::cuda());
    require_close(vit.forward(img.to(Device::cuda())).cpu(), cpu_logits, 1e-4, 1e-5);

    models::TextTransformerConfig text_config = models::diff_transformer_cls_config(20, 3);
    text_config.embed_dim = 16;
    text_config.num_heads = 2;
    text_config.depth = 2;
    models::TextTransformer text(text_config);
    text.eval();
    Tensor toks = tokens({5, 3, 9, 1, 4, 0, 0, 0}, 2);
    Tensor cpu_text = text.forward(toks);
    text.to(Device::cuda());
    require_close(text.forward(toks.to(Device::cuda())).cpu(), cpu_text, 1e-4, 1e-5);
}
