// The ViT classifier (models/vit.h) with every attention variant it offers
// (vit_attention_types()): one training step from the registry's defaults (dropout 0.05, the
// pool the registry picks), the class token where the variant takes it (pvt_sra included, also
// with spatial reduction), the token mean where it cannot (vit_mean_pool_attention()), UTNet's
// reduce_size fitted to the grid, and the errors for what cannot work.
#include <algorithm>
#include <cmath>

#include "models/registry.h"
#include "models/vit.h"
#include "nn/attention/attention.h"
#include "nn/attention/utnet_attention.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "support/gradcheck.h"

using namespace lumen;
using testing::require_error;

namespace {

bool needs_mean(const std::string& type) {
    const auto& names = models::vit_mean_pool_attention();
    return std::find(names.begin(), names.end(), type) != names.end();
}

// The registry's vit with `type`, small enough to be quick (28 x 28 images in patches of 4).
nn::Options small_vit(const std::string& type) {
    nn::Options o;
    o.set("attn_type", type);
    o.set("embed_dim", int64_t(32));
    o.set("depth", int64_t(1));
    o.set("num_heads", int64_t(2));
    return o;
}

models::ViTConfig small_config(const std::string& type, const std::string& pool) {
    models::ViTConfig config = models::vit_config(10, {28, 28}, 1);
    config.embed_dim = 32;
    config.depth = 1;
    config.num_heads = 2;
    config.block.attn_type = type;
    config.pool = pool;
    return config;
}

// Forward on (2, 1, 28, 28), cross-entropy, backward: every parameter gets a finite gradient
// (none is left without one: the ViT has no unused parameter), and the patch embedding a
// non-zero one, so the logits depend on the image.
void one_step(nn::Module& model) {
    model.train();
    Tensor x = testing::random_input({2, 1, 28, 28}, 4).to(DType::float32);
    Tensor logits = model.forward(x);
    REQUIRE(logits.shape() == Shape{2, 10});
    Tensor loss = cross_entropy(logits, from_vector(std::vector<int64_t>{3, 7}));
    loss.backward();
    REQUIRE(std::isfinite(loss.item<double>()));
    for (const auto& [key, p] : model.named_parameters()) {
        INFO(key);
        REQUIRE(p.requires_grad());
        REQUIRE(p.grad().defined());
        CHECK(std::isfinite(sum(abs(p.grad())).item<double>()));
    }
    CHECK(sum(abs(model.tensor("patch_embed.proj.weight").grad())).item<double>() > 0);
}

}  // namespace

TEST_CASE("vit: it takes every registered attention variant", "[vit][models]") {
    const std::vector<std::string> types = models::vit_attention_types();
    CHECK(types == nn::attention::attention_names());
    CHECK(types.size() >= 16);
    for (const std::string& type : models::vit_mean_pool_attention())
        CHECK(std::find(types.begin(), types.end(), type) != types.end());
}

TEST_CASE("vit: one training step with each attention variant it offers", "[vit][models]") {
    for (const std::string& type : models::vit_attention_types()) {
        INFO(type);
        std::shared_ptr<nn::Module> model =
            models::build_model("vit", models::model_options("vit", small_vit(type)));
        const models::ViTConfig& config = dynamic_cast<models::ViT&>(*model).config();
        CHECK(config.block.drop == 0.05);
        CHECK(config.pool == (needs_mean(type) ? "mean" : "cls"));
        CHECK(model->state_dict().count("cls_token") == (needs_mean(type) ? 0u : 1u));
        one_step(*model);
    }
}

TEST_CASE("vit: pvt_sra keeps the class token with spatial reduction", "[vit][models]") {
    for (double linear : {0.0, 1.0}) {
        INFO("linear " << linear);
        models::ViTConfig config = small_config("pvt_sra", "cls");
        config.block.attn_options = {{"sr_ratio", 2.0}, {"linear", linear}};
        models::ViT model(config);
        CHECK(model.pos_embed.shape() == Shape{1, 1 + 49, 32});
        one_step(model);
    }
}

TEST_CASE("vit: utnet's reduce_size divides the patch grid", "[vit][models]") {
    // Grids 7 x 7, 8 x 8, 12 x 12 and 6 x 9: the largest r <= 8 dividing both sides.
    struct Case {
        std::vector<int64_t> img;
        int64_t reduce_size;
    };
    for (const Case& c :
         {Case{{28, 28}, 7}, Case{{32, 32}, 8}, Case{{48, 48}, 6}, Case{{24, 36}, 3}}) {
        models::ViTConfig config = small_config("utnet", "mean");
        config.img_size = c.img;
        models::ViT model(config);
        auto& attention = dynamic_cast<nn::attention::UTNetAttention&>(*(*model.blocks)[0].attn);
        CHECK(attention.attention().options.reduce_size == c.reduce_size);
    }
    // An explicit reduce_size is kept.
    models::ViTConfig config = small_config("utnet", "mean");
    config.block.attn_options = {{"reduce_size", 4.0}, {"rel_pos", 0.0}};
    models::ViT model(config);
    auto& attention = dynamic_cast<nn::attention::UTNetAttention&>(*(*model.blocks)[0].attn);
    CHECK(attention.attention().options.reduce_size == 4);
}

TEST_CASE("vit: a class token with a variant that cannot take one is refused", "[vit][models]") {
    REQUIRE(models::vit_mean_pool_attention() ==
            std::vector<std::string>{"gdla", "hyena", "mamba", "swin_window", "utnet"});
    for (const std::string& type : models::vit_mean_pool_attention()) {
        INFO(type);
        require_error([&] { models::ViT model(small_config(type, "cls")); },
                      {"[ViT]", "attn_type '" + type + "'", "needs pool 'mean'", "got pool 'cls'"});
        nn::Options o = small_vit(type);
        o.set("pool", std::string("cls"));
        require_error([&] { models::build_model("vit", models::model_options("vit", o)); },
                      {"[ViT]", "attn_type '" + type + "'", "pool"});
    }
    // The other variants take either pool.
    models::ViT mean_pooled(small_config("mhsa", "mean"));
    CHECK(mean_pooled.pos_embed.shape() == Shape{1, 49, 32});
    CHECK(!mean_pooled.cls_token.defined());
}

TEST_CASE("vit: errors for an unknown variant or pool and for attn_drop without a map",
          "[vit][models]") {
    require_error([] { models::ViT model(small_config("mhsaa", "cls")); },
                  {"[ViT]", "unknown attn_type 'mhsaa'", "mhsa", "swin_window"});
    require_error([] { models::ViT model(small_config("mhsa", "max")); },
                  {"[ViT]", "pool", "'max'"});
    models::ViTConfig dgvit = models::dgvit_config(10, {28, 28}, 1);
    dgvit.pool = "avg";
    require_error([&] { models::ViT model(dgvit); }, {"[DGViT]", "pool", "'avg'"});
    // Hyena and Mamba drop their output (the ViT's drop) but have no attention map.
    for (const std::string type : {"hyena", "mamba"}) {
        nn::Options o = small_vit(type);
        o.set("attn_drop", 0.1);
        require_error([&] { models::build_model("vit", models::model_options("vit", o)); },
                      {"[" + type + "]", "attn_drop", "0.1"});
    }
}
