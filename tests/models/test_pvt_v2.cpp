// The PVTv2 encoder (Wang et al. 2022; timm pvt_v2.py): parameter counts of b0-b5 and b2_li against
// timm's, the feature pyramid's shapes, the classifier head, timm's init, the whai362 key rename
// (in memory and through a safetensors file), config errors, float64 gradients and the encoder
// vectors (on CUDA too when a GPU is present).
#include <cmath>

#include "conformance/check_vectors.h"
#include "models/pvt_v2.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using lumen::models::PvtV2Config;
using lumen::models::PyramidVisionTransformerV2;

namespace {

PvtV2Config tiny_config(bool linear = false) {
    PvtV2Config c;
    c.depths = {2, 1, 1, 1};
    c.embed_dims = {8, 16, 16, 24};
    c.num_heads = {1, 2, 2, 4};
    c.linear = linear;
    return c;
}

// timm name -> the original whai362 name (the inverse of whai362_to_timm, written out per key
// family rather than by regex).
std::string to_whai362(const std::string& key) {
    std::string k = key;
    auto replace = [&](const std::string& from, const std::string& to) {
        if (k.rfind(from, 0) == 0) k = to + k.substr(from.size());
    };
    replace("patch_embed.", "patch_embed1.");
    for (int i = 0; i < 4; ++i) {
        std::string stage = "stages." + std::to_string(i) + ".";
        replace(stage + "downsample.", "patch_embed" + std::to_string(i + 1) + ".");
        replace(stage + "blocks.", "block" + std::to_string(i + 1) + ".");
        replace(stage + "norm.", "norm" + std::to_string(i + 1) + ".");
    }
    size_t at = k.find(".mlp.dwconv.");
    if (at != std::string::npos) k.replace(at, 12, ".mlp.dwconv.dwconv.");
    return k;
}

}  // namespace

TEST_CASE(
    "PVTv2 presets have timm's parameter counts (3.7 / 14.0 / 25.4 / 22.6 / 45.2 / 62.6 / "
    "82.0 M with the 1000-class head)",
    "[models][pvt]") {
    // Built whole: b0 and b2 (PVT-GDLA's encoder: 24,849,856 without the head).
    CHECK(PyramidVisionTransformerV2(models::pvt_v2_config("b0", 1000)).num_parameters() ==
          3666760);
    PyramidVisionTransformerV2 b2(models::pvt_v2_config("b2", 1000));
    CHECK(b2.num_parameters() == 25362856);
    CHECK(b2.num_parameters() - b2.head->num_parameters() == 24849856);
    // The others share b2's widths and differ in blocks per stage, mlp_ratio (b5) or the
    // linear attention (b2_li): count them as b2's frame (stem, downsamples, norms, head) plus
    // their blocks, to keep the test quick (initialising 80 M parameters takes seconds).
    const PvtV2Config& base = b2.config();
    auto b2_block = [&](size_t stage) {
        return (*b2.stages)[stage].blocks->operator[](0).num_parameters();
    };
    int64_t frame = b2.num_parameters();
    for (size_t i = 0; i < 4; ++i) frame -= base.depths[i] * b2_block(i);
    struct Case {
        const char* variant;
        int64_t with_head;
    };
    for (Case c : {Case{"b1", 14009000}, Case{"b2_li", 22553512}, Case{"b3", 45238696},
                   Case{"b4", 62556072}, Case{"b5", 81956008}}) {
        INFO(c.variant);
        PvtV2Config config = models::pvt_v2_config(c.variant, 1000);
        CHECK(config.embed_dims == base.embed_dims);
        int64_t total = frame;
        for (size_t i = 0; i < 4; ++i) {
            int64_t per_block = b2_block(i);
            if (config.mlp_ratios[i] != base.mlp_ratios[i] || config.linear != base.linear) {
                nn::pvt::PVTBlock other(config.embed_dims[i], config.num_heads[i],
                                        {.mlp_ratio = config.mlp_ratios[i],
                                         .sr_ratio = config.sr_ratios[i],
                                         .linear = config.linear});
                per_block = other.num_parameters();
            }
            total += config.depths[i] * per_block;
        }
        CHECK(total == c.with_head);
    }
    require_error([] { models::pvt_v2_config("b6"); }, {"[pvt_v2_config]", "b6", "b2_li"});
}

TEST_CASE("PVTv2: four NCHW features at strides 4, 8, 16, 32; timm's head and key names",
          "[models][pvt]") {
    PyramidVisionTransformerV2 model(tiny_config());
    std::vector<Tensor> f = model.forward_intermediates(zeros({2, 3, 64, 96}));
    REQUIRE(f.size() == 4);
    CHECK(f[0].shape() == Shape{2, 8, 16, 24});
    CHECK(f[1].shape() == Shape{2, 16, 8, 12});
    CHECK(f[2].shape() == Shape{2, 16, 4, 6});
    CHECK(f[3].shape() == Shape{2, 24, 2, 3});
    CHECK(f[3].is_contiguous());
    CHECK(model.forward(zeros({1, 3, 64, 64})).shape() == Shape{1, 24});
    auto state = model.state_dict();
    CHECK(state.at("stages.0.blocks.1.attn.sr.weight").shape() == Shape{8, 8, 8, 8});
    CHECK(state.at("stages.3.downsample.proj.weight").shape() == Shape{24, 16, 3, 3});
    CHECK(state.count("stages.0.downsample.proj.weight") == 0);
    CHECK(state.count("stages.3.blocks.0.attn.sr.weight") == 0);  // sr_ratio 1
    CHECK(state.count("head.weight") == 0);

    PvtV2Config with_head = tiny_config(true);
    with_head.num_classes = 5;
    PyramidVisionTransformerV2 classifier(with_head);
    CHECK(classifier.forward(zeros({2, 3, 32, 32})).shape() == Shape{2, 5});
    CHECK(classifier.tensor("stages.0.blocks.0.attn.sr.weight").shape() == Shape{8, 8, 1, 1});
    // The "-li" variant pools to 7 x 7 whatever the grid (here 1 x 1 at stride 32).
    CHECK(classifier.forward_intermediates(zeros({1, 3, 32, 32}))[3].shape() == Shape{1, 24, 1, 1});
    require_error(
        [&] {
            model.forward(zeros({1, 1, 64, 64}));
        },
        {"[PyramidVisionTransformerV2]", "(B, 3, H, W)"});
    require_error([&] { model.forward(zeros({1, 3, 16, 16})); }, {"[SRAttention]", "sr_ratio 8"});
}

TEST_CASE("PVTv2: timm's from-scratch init (trunc-normal Linear, fan-out normal Conv)",
          "[models][pvt]") {
    manual_seed(3);
    PyramidVisionTransformerV2 model(models::pvt_v2_config("b0"));
    auto std_of = [](const Tensor& t) {
        return std::sqrt(mean(square(sub(t, mean(t)))).item<float>());
    };
    CHECK(std_of(model.tensor("stages.1.blocks.0.mlp.fc1.weight")) == Approx(0.02).epsilon(0.05));
    CHECK(sum(abs(model.tensor("stages.1.blocks.0.attn.kv.bias"))).item<float>() == 0.0f);
    // sr conv of stage 0: 8 x 8 kernel, 32 outputs -> std sqrt(2 / 2048).
    CHECK(std_of(model.tensor("stages.0.blocks.0.attn.sr.weight")) ==
          Approx(std::sqrt(2.0 / 2048)).epsilon(0.05));
    // depthwise 3 x 3 of 512 groups: fan_out 9 -> std sqrt(2 / 9).
    CHECK(std_of(model.tensor("stages.1.blocks.0.mlp.dwconv.weight")) ==
          Approx(std::sqrt(2.0 / 9)).epsilon(0.05));
    CHECK(sum(abs(model.tensor("patch_embed.proj.bias"))).item<float>() == 0.0f);
}

TEST_CASE("whai362_to_timm renames original PVTv2 / gdla checkpoint keys to timm's",
          "[models][pvt]") {
    auto rename = models::whai362_to_timm();
    CHECK(rename("patch_embed1.proj.weight") == "patch_embed.proj.weight");
    CHECK(rename("patch_embed3.norm.bias") == "stages.2.downsample.norm.bias");
    CHECK(rename("block2.1.mlp.dwconv.dwconv.weight") == "stages.1.blocks.1.mlp.dwconv.weight");
    CHECK(rename("block4.0.attn.kv.weight") == "stages.3.blocks.0.attn.kv.weight");
    CHECK(rename("norm1.weight") == "stages.0.norm.weight");
    CHECK(rename("block1.0.norm1.weight") == "stages.0.blocks.0.norm1.weight");
    CHECK(rename("head.bias") == "head.bias");
    auto backbone = models::whai362_to_timm("backbone.");
    CHECK(backbone("backbone.block3.5.attn.sr.bias") == "backbone.stages.2.blocks.5.attn.sr.bias");
    CHECK(backbone("backbone.norm4.bias") == "backbone.stages.3.norm.bias");
    CHECK(backbone("de1.norm1.weight") == "de1.norm1.weight");
    CHECK(backbone("block1.0.attn.q.weight") == "block1.0.attn.q.weight");
}

TEST_CASE("whai362_to_timm loads an original-layout state dict (memory and file)",
          "[models][pvt]") {
    PvtV2Config config = tiny_config();
    config.num_classes = 3;
    PyramidVisionTransformerV2 source(config), target(config);
    std::map<std::string, Tensor> original;
    for (const auto& [name, tensor] : source.state_dict()) original[to_whai362(name)] = tensor;
    CHECK(original.count("block1.1.mlp.dwconv.dwconv.weight") == 1);
    CHECK(original.count("patch_embed4.proj.weight") == 1);
    require_error([&] { target.load_state_dict(original); }, {"[load_state_dict]", "block1.0"});

    auto rename = models::whai362_to_timm();
    std::map<std::string, Tensor> renamed;
    for (const auto& [name, tensor] : original) renamed[rename(name)] = tensor;
    CHECK(target.load_state_dict(renamed).ok());
    Tensor x = random_input({1, 3, 64, 64}, 2).to(DType::float32);
    require_close(target.forward(x), source.forward(x), 0, 0);

    TempDir dir("pvt_rename");
    save_safetensors(dir.file("pvt.safetensors"), original);
    PyramidVisionTransformerV2 from_file(config);
    CHECK(nn::load_state_dict(from_file, dir.file("pvt.safetensors"), true, rename).ok());
    require_close(from_file.forward(x), source.forward(x), 0, 0);
}

TEST_CASE("PvtV2Config::validate rejects bad lists, widths and rates", "[models][pvt]") {
    PvtV2Config c = tiny_config();
    c.depths = {1, 1, 1};
    require_error([&] { c.validate(); }, {"[PyramidVisionTransformerV2]", "4 entries"});
    c = tiny_config();
    c.embed_dims[2] = 15;
    require_error([&] { c.validate(); }, {"[PyramidVisionTransformerV2]", "stage 2", "15"});
    c = tiny_config();
    c.drop_path_rate = 1.0;
    require_error([&] { PyramidVisionTransformerV2 m(c); },
                  {"[PyramidVisionTransformerV2]", "[0, 1)"});
}

TEST_CASE("PVTv2: stochastic depth is linearly spaced over all blocks", "[models][pvt]") {
    PvtV2Config c = tiny_config();
    c.drop_path_rate = 0.4;  // 5 blocks: 0, 0.1, 0.2, 0.3, 0.4
    PyramidVisionTransformerV2 model(c);
    CHECK((*model.stages)[0].blocks->operator[](1).drop_path1->drop_prob == Approx(0.1));
    CHECK((*model.stages)[3].blocks->operator[](0).drop_path2->drop_prob == Approx(0.4));
}

TEST_CASE("PVTv2: float64 gradients of a tiny linear (-li) encoder", "[models][pvt]") {
    // The sr-conv blocks and stages are checked in tests/nn/test_pvt.cpp; this covers the whole
    // pyramid with the pooled keys, on a 1-channel 8 x 8 image (grids 2x2, then 1x1).
    PvtV2Config c;
    c.in_chans = 1;
    c.depths = {1, 1, 1, 1};
    c.embed_dims = {4, 4, 6, 8};
    c.num_heads = {1, 2, 2, 2};
    c.mlp_ratios = {1, 1, 1, 1};
    c.linear = true;
    PyramidVisionTransformerV2 model(c);
    module_gradcheck(
        model,
        [&](const std::vector<Tensor>& in) {
            std::vector<Tensor> f = model.forward_intermediates(in[0]);
            return cat({f[0].flatten(), f[1].flatten(), f[2].flatten(), f[3].flatten()}, 0);
        },
        {random_input({1, 1, 8, 8}, 5)}, 1e-5, 1e-6, 23);
}

TEST_CASE("PVTv2 encoder vectors of PVT-GDLA pass", "[models][pvt][vectors]") {
    require_oracle_vectors({"pvtv2_tiny_64x64", "pvtv2_tiny_li_64x96"}, "gdla");
}

TEST_CASE("PVTv2 on CUDA: every PVT vector passes and the encoder matches the CPU",
          "[models][pvt][cuda]") {
    if (!have_gpu()) return;
    for (const char* name :
         {"pvt_patch_embed_stem_19x26", "pvt_block_sr2_C16_h2_6x8", "pvt_block_sr1_C16_h2_5x7",
          "pvt_block_sr4_C8_h1_9x11", "pvt_block_linear_C16_h2_10x6", "pvt_block_linear_C16_h2_4x5",
          "pvt_stage_downsample_10x12", "pvtv2_tiny_64x64", "pvtv2_tiny_li_64x96"}) {
        std::string path = std::string(LUMEN_TEST_DATA) + "/oracle/gdla/" + name + ".safetensors";
        conformance::VectorResult result =
            conformance::check_vector_file(path, name, Device::cuda());
        INFO(conformance::format_result(result));
        CHECK(result.passed);
    }
    for (bool linear : {false, true}) {
        PvtV2Config config = tiny_config(linear);
        config.num_classes = 4;
        PyramidVisionTransformerV2 model(config);
        Tensor img = random_input({2, 3, 64, 64}, 41).to(DType::float32);
        Tensor cpu_logits = model.forward(img);
        model.to(Device::cuda());
        require_close(model.forward(img.to(Device::cuda())).cpu(), cpu_logits, 1e-4, 1e-5);
    }
}
