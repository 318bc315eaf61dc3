// The MONAI ViT pieces and UNETR blocks of the context-length study: names and shapes, references
// built from ops (timm's MHSA for the attention slot, conv/instance-norm chains for the residual
// blocks), the mixer slot, float64 gradchecks, errors, and the oracle vectors.
#include "nn/context/unetr_blocks.h"
#include "nn/context/vit_blocks.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::nn::context;

namespace {

bool has_key(const nn::Module& m, const std::string& key) { return m.state_dict().count(key) > 0; }

Tensor f32(const Tensor& t) { return t.to(DType::float32); }

}  // namespace

TEST_CASE("PatchEmbeddingBlock: conv tokens in row-major order plus the table",
          "[nn][context][vit]") {
    PatchEmbeddingBlock embed(2, {8, 12}, 4, 5, 2);
    CHECK(embed.grid == std::vector<int64_t>{2, 3});
    CHECK(embed.position_embeddings.shape() == Shape{1, 6, 5});
    CHECK(embed.patch_embeddings->weight.shape() == Shape{5, 2, 4, 4});
    // trunc-normal(0.02): small but not all zero.
    double spread = max(abs(embed.position_embeddings)).item<float>();
    CHECK(spread > 0.0);
    CHECK(spread < 0.1);
    Tensor x = f32(random_input({2, 2, 8, 12}, 1));
    Tensor conv = conv2d(x, embed.patch_embeddings->weight, embed.patch_embeddings->bias, {4});
    Tensor y = embed.forward(x);
    // Token 4 is grid cell (1, 1).
    require_close(y.select(1, 4),
                  add(conv.select(3, 1).select(2, 1), embed.position_embeddings.select(1, 4)), 1e-5,
                  1e-6);
    PatchEmbeddingBlock zero(1, {8, 8, 8}, 4, 3, 3, false);
    CHECK(max(abs(zero.position_embeddings)).item<float>() == 0.0f);
    CHECK(zero.position_embeddings.requires_grad());
    CHECK(zero.forward(ones({1, 1, 8, 8, 8})).shape() == Shape{1, 8, 3});
    require_error(
        [] {
            PatchEmbeddingBlock(1, {10, 12}, 4, 3);
        },
        {"[PatchEmbeddingBlock]", "multiples of patch_size 4"});
    require_error(
        [&] {
            embed.forward(ones({1, 2, 8, 16}));
        },
        {"[PatchEmbeddingBlock]", "[1, 2, 8, 16]"});
}

TEST_CASE("SABlock: MONAI attention equals timm's MHSA with the same weights",
          "[nn][context][vit]") {
    SABlock block(12, 3);
    CHECK(!block.qkv->bias.defined());
    CHECK(has_key(block, "out_proj.bias"));
    nn::attention::MHSA mhsa(12, 3, -1, false);
    {
        NoGradGuard no_grad;
        mhsa.qkv->weight.copy_(block.qkv->weight);
        mhsa.proj->weight.copy_(block.out_proj->weight);
        mhsa.proj->bias.copy_(block.out_proj->bias);
    }
    Tensor x = f32(random_input({2, 7, 12}, 2));
    require_close(block.forward(x), mhsa.forward(x), 1e-5, 1e-6);
    require_error([] { SABlock(10, 3); }, {"[SABlock]", "num_heads 3"});
}

TEST_CASE("SABlock: the mixer slot holds a registered mixer under its name", "[nn][context][vit]") {
    MixerOptions hyena{.mixer = "hyena", .l_max = 32, .filter_order = 8};
    SABlock with_hyena(12, 2, hyena);
    CHECK(has_key(with_hyena, "hyena.filter_fn.implicit_filter.1.freq"));
    CHECK(with_hyena.state_dict().at("hyena.filter_fn.bias").shape() == Shape{6});
    CHECK(!has_key(with_hyena, "qkv.weight"));
    MixerOptions mamba{.mixer = "mamba"};
    SABlock with_mamba(12, 2, mamba);
    CHECK(with_mamba.state_dict().at("mamba.dt_proj.weight").shape() == Shape{6, 1});
    MixerOptions mhsa{.mixer = "mhsa"};
    SABlock with_mhsa(12, 2, mhsa);
    CHECK(has_key(with_mhsa, "mhsa.proj.weight"));
    Tensor x = f32(random_input({1, 9, 12}, 3));
    CHECK(with_hyena.forward(x).shape() == Shape{1, 9, 12});
    CHECK(with_mamba.forward(x).shape() == Shape{1, 9, 12});
    require_error([] { SABlock(12, 2, MixerOptions{.mixer = "nope"}); },
                  {"[attention]", "unknown variant 'nope'"});
}

TEST_CASE("TransformerBlock and MLPBlock: pre-norm residuals, gradients", "[nn][context][vit]") {
    MLPBlock mlp(4, 6);
    Tensor x = f32(random_input({3, 4}, 4));
    Tensor want = linear(gelu(linear(x, mlp.linear1->weight, mlp.linear1->bias)),
                         mlp.linear2->weight, mlp.linear2->bias);
    require_close(mlp.forward(x), want, 1e-5, 1e-6);
    TransformerBlock block(6, 8, 2);
    for (const char* key : {"norm1.weight", "attn.qkv.weight", "attn.out_proj.bias", "norm2.bias",
                            "mlp.linear1.weight", "mlp.linear2.bias"})
        CHECK(has_key(block, key));
    CHECK(block.state_dict().size() == 11);
    module_gradcheck(block, random_input({2, 5, 6}, 5));
    TransformerBlock hyena(6, 8, 2, MixerOptions{.mixer = "hyena", .l_max = 8, .filter_order = 4});
    module_gradcheck(hyena, random_input({1, 5, 6}, 6));
}

TEST_CASE("UnetResBlock: conv, instance norm and leaky ReLU, both residual paths",
          "[nn][context][unetr]") {
    UnetResBlock proj(2, 3, 5);
    CHECK(proj.conv1->conv->weight.shape() == Shape{5, 3, 3, 3});
    CHECK(proj.conv3->conv->weight.shape() == Shape{5, 3, 1, 1});
    CHECK(proj.state_dict().size() == 3);  // no biases, no norm parameters
    Tensor x = f32(random_input({2, 3, 6, 7}, 7));
    auto in = [](const Tensor& t) { return instance_norm(t); };
    Tensor y = leaky_relu(in(conv2d(x, proj.conv1->conv->weight, Tensor(), {1}, {1})), 0.01);
    y = in(conv2d(y, proj.conv2->conv->weight, Tensor(), {1}, {1}));
    Tensor r = in(conv2d(x, proj.conv3->conv->weight));
    require_close(proj.forward(x), leaky_relu(add(y, r), 0.01), 1e-5, 1e-6);
    UnetResBlock same(3, 2, 2);
    CHECK(!same.conv3);
    CHECK(!has_key(same, "conv3.conv.weight"));
    module_gradcheck(same, random_input({1, 2, 3, 4, 3}, 8));
    module_gradcheck(proj, random_input({2, 3, 4, 3}, 9));
}

TEST_CASE("UNETR up blocks: transposed convs, skip concatenation, output conv",
          "[nn][context][unetr]") {
    UnetrPrUpBlock prup(2, 6, 4, 2, 2);
    for (const char* key :
         {"transp_conv_init.conv.weight", "blocks.0.0.conv.weight", "blocks.1.1.conv2.conv.weight"})
        CHECK(has_key(prup, key));
    CHECK(prup.transp_conv_init->conv->weight.shape() == Shape{6, 4, 2, 2});
    CHECK(prup.forward(ones({1, 6, 3, 2})).shape() == Shape{1, 4, 24, 16});
    UnetrPrUpBlock plain(3, 6, 4, 0, 2);
    CHECK(plain.state_dict().size() == 1);
    UnetrUpBlock up(3, 6, 3, 2);
    CHECK(up.conv_block->conv3->conv->weight.shape() == Shape{3, 6, 1, 1, 1});
    Tensor x = ones({1, 6, 2, 3, 3}), skip = ones({1, 3, 4, 6, 6});
    CHECK(up.forward(x, skip).shape() == Shape{1, 3, 4, 6, 6});
    require_error([&] { up.forward(x, ones({1, 3, 4, 6, 5})); }, {"[UnetrUpBlock]", "skip"});
    UnetrUpBlock same_size(2, 4, 2, 1);  // u = 1: a 1x1 transposed conv
    CHECK(same_size.transp_conv->conv->weight.shape() == Shape{4, 2, 1, 1});
    module_gradcheck(same_size,
                     [&](const std::vector<Tensor>& in) { return same_size.forward(in[0], in[1]); },
                     {random_input({1, 4, 3, 3}, 10), random_input({1, 2, 3, 3}, 11)});
    UnetOutBlock out(2, 3, 2);
    CHECK(out.conv->conv->bias.defined());
    CHECK(has_key(out, "conv.conv.bias"));
}

TEST_CASE("context ViT pieces match the oracle vectors", "[nn][context][oracle]") {
    require_oracle_vectors(
        {"vit_patch_embed_2d", "vit_patch_embed_3d", "vit_mlp", "vit_sablock_attn",
         "vit_block_attn", "vit_block_hyena", "vit_block_mamba", "unet_res_block_2d",
         "unet_res_block_3d", "unetr_prup_block_2d", "unetr_up_block_3d"},
        "context");
}
