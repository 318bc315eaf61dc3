// init_from (train/pretrained.h): a PVTv2 encoder's weights into PVT-GDLA's backbone under a
// prefix (timm names, the original whai362 names through the key map, a DDP "module." prefix, a
// JSON key map), strict failures that change nothing, a non-strict partial load with its exact
// report, and the errors.
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "core/safetensors.h"
#include "models/pvt_segnet.h"
#include "models/pvt_v2.h"
#include "nn/state_dict.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "support/gradcheck.h"
#include "train/pretrained.h"

using namespace lumen;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

models::PVTSegNetConfig small_segnet() {
    models::PVTSegNetConfig c = models::pvt_segnet_config("gdla", 3, 2);
    c.encoder = models::pvt_v2_config("b0");
    c.deepsupervision = false;
    return c;
}

bool same(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && max(abs(sub(a, b))).item<double>() == 0.0;
}

// Every backbone key of `net` equals the encoder's.
bool backbone_equals(const models::PVTSegNet& net, const models::PyramidVisionTransformerV2& enc) {
    std::map<std::string, Tensor> mine = net.state_dict();
    for (const auto& [key, value] : enc.state_dict())
        if (!same(mine.at("backbone." + key), value)) return false;
    return true;
}

struct TempDir {
    fs::path path = fs::temp_directory_path() / ("lumen_init_from_" + std::to_string(::getpid()));
    TempDir() { fs::create_directories(path); }
    ~TempDir() { fs::remove_all(path); }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace

TEST_CASE("init_from loads an encoder under a prefix", "[init_from]") {
    TempDir dir;
    manual_seed(1);
    models::PyramidVisionTransformerV2 encoder(models::pvt_v2_config("b0"));
    const std::map<std::string, Tensor> weights = encoder.state_dict();
    manual_seed(2);
    models::PVTSegNet net(small_segnet());
    const Tensor decoder_before = net.head1->weight.clone();
    REQUIRE(!backbone_equals(net, encoder));

    SECTION("timm names") {
        nn::save_state_dict(encoder, dir.file("timm.safetensors"));
        train::InitReport r =
            train::init_from(net, {.path = dir.file("timm.safetensors"), .target_prefix = "backbone."});
        CHECK(backbone_equals(net, encoder));
        CHECK(same(net.head1->weight, decoder_before));
        CHECK(int64_t(r.loaded.size()) == int64_t(weights.size()));
        CHECK(r.model_keys == int64_t(weights.size()));
        CHECK(r.missing.empty());
        CHECK(r.unexpected.empty());
        CHECK_THAT(train::format_init_report(r, {.path = "x", .target_prefix = "backbone."}),
                   Contains("loaded " + std::to_string(weights.size()) + " of " +
                            std::to_string(weights.size()) + " keys under 'backbone.'"));
    }
    SECTION("the original PVTv2 names through the whai362 key map, with a DDP prefix") {
        // timm -> original: patch_embed. -> patch_embed1., stages.i.downsample. ->
        // patch_embed{i+1}., stages.i.blocks.j. -> block{i+1}.j., stages.i.norm. -> norm{i+1}.
        std::map<std::string, Tensor> original;
        for (const auto& [key, value] : weights) {
            std::string name = key;
            if (name.rfind("patch_embed.", 0) == 0) name = "patch_embed1." + name.substr(12);
            for (int i = 0; i < 4; ++i) {
                const std::string stage = "stages." + std::to_string(i) + ".";
                if (name.rfind(stage + "downsample.", 0) == 0)
                    name = "patch_embed" + std::to_string(i + 1) + "." +
                           name.substr(stage.size() + 11);
                else if (name.rfind(stage + "blocks.", 0) == 0)
                    name = "block" + std::to_string(i + 1) + "." + name.substr(stage.size() + 7);
                else if (name.rfind(stage + "norm.", 0) == 0)
                    name = "norm" + std::to_string(i + 1) + "." + name.substr(stage.size() + 5);
            }
            const std::string dw = ".dwconv.";
            if (size_t at = name.find(dw); at != std::string::npos)
                name = name.substr(0, at) + ".dwconv.dwconv." + name.substr(at + dw.size());
            original["module." + name] = value;
        }
        save_safetensors(dir.file("orig.safetensors"), original);
        train::InitReport r = train::init_from(net, {.path = dir.file("orig.safetensors"),
                                                     .source_prefix = "module.",
                                                     .target_prefix = "backbone.",
                                                     .key_map = "whai362_pvt_v2"});
        CHECK(backbone_equals(net, encoder));
        CHECK(r.loaded.size() == weights.size());
    }
    SECTION("a JSON key map renames and drops") {
        std::map<std::string, Tensor> renamed;
        for (const auto& [key, value] : weights) renamed["enc." + key] = value;
        renamed["head.weight"] = zeros({3, 3});
        save_safetensors(dir.file("renamed.safetensors"), renamed);
        std::ofstream(dir.file("map.json")) << R"({"rename": {"enc.": "backbone."}, "drop": ["head."]})";
        train::InitReport r = train::init_from(
            net, {.path = dir.file("renamed.safetensors"), .key_map = dir.file("map.json"),
                  .strict = false});
        CHECK(backbone_equals(net, encoder));
        CHECK(r.dropped == std::vector<std::string>{"head.weight"});
        CHECK(r.unexpected.empty());
        // Without a target prefix every model key counts: the decoder's are missing.
        CHECK(r.missing.size() == size_t(r.model_keys) - weights.size());
    }
}

TEST_CASE("init_from: strict failures change nothing; non-strict reports", "[init_from]") {
    TempDir dir;
    manual_seed(3);
    models::PyramidVisionTransformerV2 encoder(models::pvt_v2_config("b0"));
    std::map<std::string, Tensor> weights = encoder.state_dict();
    weights.erase("stages.3.norm.bias");                        // missing
    weights["stages.3.extra.weight"] = zeros({2});              // unexpected
    weights["stages.3.norm.weight"] = zeros({7});               // shape mismatch
    save_safetensors(dir.file("bad.safetensors"), weights);
    manual_seed(4);
    models::PVTSegNet net(small_segnet());
    const Tensor before = net.backbone->patch_embed->proj->weight.clone();
    train::InitFromOptions o{.path = dir.file("bad.safetensors"), .target_prefix = "backbone."};
    CHECK_THROWS_WITH(train::init_from(net, o),
                      Contains("missing (1): backbone.stages.3.norm.bias") &&
                          Contains("unexpected (1): stages.3.extra.weight") &&
                          Contains("backbone.stages.3.norm.weight: file [7] float32 vs model [256] "
                                   "float32"));
    CHECK(same(net.backbone->patch_embed->proj->weight, before));
    o.strict = false;
    train::InitReport r = train::init_from(net, o);
    CHECK(r.missing == std::vector<std::string>{"backbone.stages.3.norm.bias"});
    CHECK(r.unexpected == std::vector<std::string>{"stages.3.extra.weight"});
    CHECK(r.mismatched.size() == 1);
    CHECK(int64_t(r.loaded.size()) == r.model_keys - 2);
    CHECK(same(net.backbone->patch_embed->proj->weight,
               encoder.patch_embed->proj->weight));
}

TEST_CASE("init_from: errors name the file and the problem", "[init_from]") {
    TempDir dir;
    models::PVTSegNet net(small_segnet());
    CHECK_THROWS_WITH(train::init_from(net, {.path = dir.file("none.safetensors")}),
                      Contains("none.safetensors"));
    std::ofstream(dir.file("junk.safetensors")) << "not a safetensors file at all";
    CHECK_THROWS_WITH(train::init_from(net, {.path = dir.file("junk.safetensors")}),
                      Contains("junk.safetensors"));
    save_safetensors(dir.file("two.safetensors"),
                     {{"a.weight", zeros({2})}, {"b.weight", zeros({2})}});
    std::ofstream(dir.file("collide.json")) << R"({"rename": {"a.": "c.", "b.": "c."}})";
    CHECK_THROWS_WITH(train::init_from(net, {.path = dir.file("two.safetensors"),
                                             .key_map = dir.file("collide.json")}),
                      Contains("both map to the model's 'c.weight'"));
    CHECK_THROWS_WITH(train::init_from(net, {.path = dir.file("two.safetensors"),
                                             .key_map = "timm_magic"}),
                      Contains("neither a built-in map (whai362_pvt_v2)"));
    CHECK_THROWS_WITH(train::init_from(net, {.path = dir.file("two.safetensors"),
                                             .target_prefix = "encoder."}),
                      Contains("no key under 'encoder.'"));
}
