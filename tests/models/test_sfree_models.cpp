// The softmax-free paper's ViT (SfreeViT, Khader et al.) and the official SimA ViT: Table 1
// parameter counts (exact values of the PyTorch reference), patchify feature orders, the embedding
// and pooling, the Fourier features, the official init, float64 gradchecks of tiny models, and
// config/input errors.
#include <cmath>
#include <numbers>

#include "models/sfree_vit.h"
#include "models/sima_vit.h"
#include "nn/sfree_testing.h"

using namespace lumen;
using namespace lumen::testing;
using models::SfreeViTConfig;

namespace {

SfreeViTConfig tiny(const std::string& tokenizer, const std::string& attn) {
    SfreeViTConfig c;
    c.tokenizer = tokenizer;
    c.attn = attn;
    c.dim = 8, c.depth = 1, c.heads = 2, c.dim_head = 3, c.mlp_dim = 6, c.num_classes = 2;
    c.channels = 2, c.image_size = {4, 6}, c.patch_size = {2, 3};
    c.frames = 4, c.frame_patch_size = 2, c.feat_dim = 5;
    return c;
}

}  // namespace

TEST_CASE("SfreeViT: Table 1 parameter counts", "[models][sfree]") {
    struct Row {
        const char* tokenizer;
        int64_t image, frames, dim, depth, mlp, softmax, seqnorm;
    };
    // Exact counts of the reference (vit-pytorch layout), 2 classes, 8 heads x 64; SimA has the
    // softmax count (checked on the small bag model to keep the test quick).
    for (Row r : {Row{"patch2d", 224, 0, 1024, 8, 1024, 34609666, 34634242},
                  Row{"patch3d", 256, 32, 1024, 8, 1024, 36768770, 36793346},
                  Row{"bag", 0, 0, 512, 2, 512, 4209666, 4215810}}) {
        SfreeViTConfig c;
        c.tokenizer = r.tokenizer, c.dim = r.dim, c.depth = r.depth, c.mlp_dim = r.mlp;
        c.image_size = {r.image, r.image}, c.frames = r.frames, c.feat_dim = 2048;
        if (c.tokenizer == "patch3d") c.channels = 1, c.frame_patch_size = 4;
        INFO(r.tokenizer << " " << r.image);
        for (const char* attn : {"softmax", "seqnorm", "sima"}) {
            c.attn = attn;
            if (c.attn == "sima" && c.tokenizer != "bag") continue;
            int64_t want = c.attn == "seqnorm" ? r.seqnorm : r.softmax;
            CHECK(models::SfreeViT(c).num_parameters() == want);
        }
    }
    // 1024^2 differs from 224^2 only by the position table: (4096 + 1) x 1024 instead of 197 x 1024
    SfreeViTConfig big;
    big.image_size = {1024, 1024};
    CHECK(big.num_patches() == 4096);
    CHECK(34609666 + (4096 - 196) * 1024 == 38603266);
}

TEST_CASE("patchify: token and feature orders of vit-pytorch", "[models][sfree]") {
    // x[b, c, y, x] = unique value; token (gy, gx), feature (i p2 + j) C + c
    Tensor x = arange(0, 2 * 3 * 4 * 6, 1, DType::float64).reshape({2, 3, 4, 6});
    Tensor t = models::patchify2d(x, 2, 3);
    REQUIRE(t.shape() == Shape{2, 4, 18});
    for (int64_t b = 0; b < 2; ++b) {
        for (int64_t token = 0; token < 4; ++token) {
            for (int64_t f = 0; f < 18; ++f) {
                int64_t gy = token / 2, gx = token % 2, c = f % 3, i = f / 3 / 3, j = f / 3 % 3;
                CHECK(t.at<double>({b, token, f}) == x.at<double>({b, c, gy * 2 + i, gx * 3 + j}));
            }
        }
    }
    Tensor v = arange(0, 2 * 2 * 4 * 4 * 6, 1, DType::float64).reshape({2, 2, 4, 4, 6});
    Tensor u = models::patchify3d(v, 2, 2, 3);  // pf 2, p1 2, p2 3
    REQUIRE(u.shape() == Shape{2, 8, 24});
    for (int64_t token = 0; token < 8; ++token) {
        for (int64_t f = 0; f < 24; ++f) {
            int64_t gf = token / 4, gy = token / 2 % 2, gx = token % 2;
            int64_t c = f % 2, tt = f / 2 % 2, j = f / 4 % 3, i = f / 12;
            CHECK(u.at<double>({1, token, f}) ==
                  v.at<double>({1, c, gf * 2 + tt, gy * 2 + i, gx * 3 + j}));
        }
    }
    require_error([&] { models::patchify2d(x, 3, 3); }, {"[patchify2d]", "[2, 3, 4, 6]"});
}

TEST_CASE("SfreeViT: embedding, class token, pooling and the attention by name",
          "[models][sfree]") {
    SfreeViTConfig c = tiny("patch2d", "seqnorm");
    models::SfreeViT vit(c);
    CHECK(vit.pos_embedding.shape() == Shape{1, 5, 8});
    CHECK(vit.tensor("to_patch_embedding.2.weight").shape() == Shape{8, 12});
    CHECK(vit.tensor("transformer.layers.0.0.q_norm.weight").shape() == Shape{6});
    CHECK(vit.tensor("transformer.layers.0.1.net.4.weight").shape() == Shape{8, 6});
    Tensor x = random_input({3, 2, 4, 6}, 1).to(DType::float32);
    Tensor y = vit.forward(x);
    CHECK(y.shape() == Shape{3, 2});
    // the same computation spelled out
    Tensor z = nn::prepend_token(vit.to_patch_embedding->forward(x), vit.cls_token);
    z = vit.transformer->forward(add(z, vit.pos_embedding));
    require_close(y, vit.mlp_head->forward(z.select(1, 0)), 1e-6, 1e-6);
    c.pool = "mean";
    models::SfreeViT mean_pool(c);
    mean_pool.load_state_dict(vit.state_dict());
    require_close(mean_pool.forward(x), vit.mlp_head->forward(mean(z, {1})), 1e-5, 1e-6);

    models::SfreeViT bag(tiny("bag", "sima"));
    CHECK(!bag.pos_embedding.defined());
    CHECK(bag.forward(random_input({2, 7, 5}, 2).to(DType::float32)).shape() == Shape{2, 2});
    CHECK(bag.forward(random_input({1, 1, 5}, 3).to(DType::float32)).shape() == Shape{1, 2});
    CHECK(models::attention_name("softmax") == "vitpt_softmax");
}

TEST_CASE("SfreeViT: float64 gradients match finite differences", "[models][sfree][gradcheck]") {
    for (const char* tokenizer : {"patch2d", "patch3d", "bag"}) {
        for (const char* attn : {"softmax", "seqnorm", "sima"}) {
            INFO(tokenizer << " " << attn);
            SfreeViTConfig c = tiny(tokenizer, attn);
            c.patch_size = {4, 3};  // few patch features: a quick check
            models::SfreeViT vit(c);
            vit.to(DType::float64);
            Shape shape = c.tokenizer == "bag"       ? Shape{2, 4, 5}
                          : c.tokenizer == "patch2d" ? Shape{2, 2, 4, 6}
                                                     : Shape{1, 2, 4, 4, 6};
            module_gradcheck(vit, [&](const std::vector<Tensor>& in) { return vit.forward(in[0]); },
                             {random_input(shape, 4)});
        }
    }
}

TEST_CASE("SfreeViT: config and input errors", "[models][sfree][errors]") {
    SfreeViTConfig c = tiny("patch2d", "softmax");
    models::SfreeViT vit(c);
    require_error([&] { vit.forward(ones({2, 2, 4, 3})); }, {"[SfreeViT]", "[2, 2, 4, 3]"});
    require_error([&] { vit.forward(ones({2, 3, 4, 6})); }, {"[SfreeViT]", "(B, 2, 4, 6)"});
    models::SfreeViT bag(tiny("bag", "softmax"));
    require_error([&] { bag.forward(ones({2, 0, 5})); }, {"[SfreeViT]", "N >= 1"});
    c.attn = "linear";
    require_error([&] { models::SfreeViT bad(c); }, {"[SfreeViT]", "'linear'"});
    c = tiny("patch3d", "sima");
    c.frames = 5;
    require_error([&] { models::SfreeViT bad(c); }, {"[SfreeViT]", "frames 5"});
    c = tiny("patch2d", "sima");
    c.image_size = {5, 6};
    require_error([&] { models::SfreeViT bad(c); }, {"[SfreeViT]", "[5, 6]"});
    c = tiny("video", "sima");
    require_error([&] { models::SfreeViT bad(c); }, {"[SfreeViT]", "'video'"});
}

TEST_CASE("SimAVisionTransformer: names, counts, Fourier features and official init",
          "[models][sfree][sima]") {
    // the reference's counts (SimA-S12/16, embed 384, depth 12, 8 heads, has 26,253,208)
    models::SimAViTConfig c{.num_classes = 5,
                            .embed_dim = 96,
                            .depth = 2,
                            .num_heads = 4,
                            .eta = 1e-5,
                            .tokens_norm = true};
    models::SimAVisionTransformer vit(c);
    CHECK(vit.num_parameters() == 515057);
    CHECK(vit.tensor("patch_embed.proj.6.0.weight").shape() == Shape{96, 48, 3, 3});
    CHECK(vit.tensor("patch_embed.proj.6.1.running_var").shape() == Shape{96});
    CHECK(vit.tensor("pos_embeder.token_projection.weight").shape() == Shape{96, 64, 1, 1});
    require_close(vit.tensor("cls_attn_blocks.1.gamma2"), full({96}, 1e-5), 0, 0);
    // Linear weights trunc-normal(0.02), biases 0
    Tensor fc1 = vit.tensor("blocks.1.mlp.fc1.weight");
    CHECK(std::sqrt(mean(mul(fc1, fc1)).item<double>()) == Approx(0.02).epsilon(0.05));
    require_close(vit.tensor("blocks.1.attn.qkv.bias"), zeros({288}), 0, 0);
    c = models::SimAViTConfig{.patch_size = 8,
                              .num_classes = 10,
                              .embed_dim = 64,
                              .depth = 2,
                              .num_heads = 4,
                              .qkv_bias = false};
    CHECK(models::SimAVisionTransformer(c).num_parameters() == 231578);

    models::PositionalEncodingFourier pos(32, 8);
    Tensor f = pos.features(3, 5, DType::float64, Device::cpu());
    REQUIRE(f.shape() == Shape{1, 64, 3, 5});
    const double two_pi = 2 * std::numbers::pi;
    for (int64_t k : {0, 1, 6, 31, 32, 33, 50}) {
        int64_t ch = k % 32;
        double tau = std::pow(10000.0, double(2 * (ch / 2)) / 32.0);
        double p = (k < 32 ? 2.0 / (3 + 1e-6) : 4.0 / (5 + 1e-6)) * two_pi / tau;  // (y 1, x 3)
        CHECK(f.at<double>({0, k, 1, 3}) ==
              Approx(ch % 2 ? std::cos(p) : std::sin(p)).margin(1e-12));
    }
}

TEST_CASE("SimAVisionTransformer: shapes, gradients and errors",
          "[models][sfree][sima][gradcheck]") {
    models::SimAViTConfig c{.patch_size = 8,
                            .num_classes = 3,
                            .embed_dim = 8,
                            .depth = 1,
                            .num_heads = 2,
                            .mlp_ratio = 1.0,
                            .cls_attn_layers = 1};
    models::SimAVisionTransformer vit(c);
    CHECK(vit.forward(random_input({2, 3, 24, 16}, 5).to(DType::float32)).shape() == Shape{2, 3});
    vit.to(DType::float64);
    // eval-mode BatchNorm at batch 1: checked against finite differences (see test_sfree_sima)
    vit.eval();
    module_gradcheck(
        vit, [&](const std::vector<Tensor>& in) { return vit.forward(in[0]); },
        {random_input({1, 3, 8, 8}, 6)}, 1e-4, 1e-6, 7);
    vit.train();
    module_gradcheck(
        vit, [&](const std::vector<Tensor>& in) { return vit.forward(in[0]); },
        {random_input({2, 3, 16, 8}, 7)}, 1e-4, 1e-6, 7);
    require_error(
        [&] {
            vit.forward(ones({2, 1, 16, 16}, DType::float64));
        },
        {"[SimAVisionTransformer]", "[2, 1, 16, 16]"});
    c.patch_size = 4;
    require_error([&] { models::SimAVisionTransformer bad(c); },
                  {"[SimAVisionTransformer]", "patch_size"});
}
