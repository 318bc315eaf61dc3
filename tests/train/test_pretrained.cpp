// init_from (train/pretrained.h): a PVTv2 encoder's weights into PVT-GDLA's backbone under a
// prefix (timm names; the original whai362 names through the built-in key map, alone and as in
// the official PVT-GDLA checkpoints; a DDP "module." prefix; a JSON key map), strict failures
// that change nothing, a non-strict partial load with its exact report, and the errors.
#include <fstream>

#include "core/safetensors.h"
#include "models/pvt_segnet.h"
#include "models/pvt_v2.h"
#include "nn/state_dict.h"
#include "support/gradcheck.h"
#include "train/pretrained.h"

using namespace lumen;
using namespace lumen::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Keys = std::vector<std::string>;
using State = std::map<std::string, Tensor>;

namespace {

// PVTv2's key layout (depth 2 in the first and last stage) at widths that build in milliseconds.
models::PvtV2Config tiny_encoder() {
    models::PvtV2Config c;
    c.depths = {2, 1, 1, 2};
    c.embed_dims = {8, 16, 32, 32};
    c.num_heads = {1, 2, 2, 4};
    return c;
}

models::PVTSegNetConfig tiny_segnet() {
    models::PVTSegNetConfig c = models::pvt_segnet_config("gdla", 3, 2);
    c.encoder = tiny_encoder();
    c.n_heads = {1, 2, 4, 4};
    c.deepsupervision = false;
    return c;
}

bool same(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && a.cpu().to_vector<double>() == b.cpu().to_vector<double>();
}

// A copy of every state_dict value, to compare with after a load.
State snapshot(const nn::Module& m) {
    State copy;
    for (const auto& [key, value] : m.state_dict()) copy[key] = value.clone();
    return copy;
}

// The keys of `state` that start with `prefix` and equal `want`'s value at the key without it;
// `state`'s other keys equal `rest`'s.
void require_loaded(const State& state, const std::string& prefix, const State& want,
                    const State& rest) {
    for (const auto& [key, value] : state) {
        INFO(key);
        if (key.rfind(prefix, 0) == 0)
            CHECK(same(value, want.at(key.substr(prefix.size()))));
        else
            CHECK(same(value, rest.at(key)));
    }
}

// Every state_dict value of `m` equals `before`'s.
void require_unchanged(const nn::Module& m, const State& before) {
    for (const auto& [key, value] : m.state_dict()) {
        INFO(key);
        CHECK(same(value, before.at(key)));
    }
}

// timm's PVTv2 key -> the original (whai362) one: patch_embed. -> patch_embed1.,
// stages.i.downsample. -> patch_embed{i+1}., stages.i.blocks.j. -> block{i+1}.j.,
// stages.i.norm. -> norm{i+1}., .dwconv. -> .dwconv.dwconv.
std::string to_original(std::string key) {
    if (key.rfind("patch_embed.", 0) == 0) key = "patch_embed1." + key.substr(12);
    for (int i = 0; i < 4; ++i) {
        const std::string stage = "stages." + std::to_string(i) + ".", n = std::to_string(i + 1);
        if (key.rfind(stage + "downsample.", 0) == 0)
            key = "patch_embed" + n + "." + key.substr(stage.size() + 11);
        else if (key.rfind(stage + "blocks.", 0) == 0)
            key = "block" + n + "." + key.substr(stage.size() + 7);
        else if (key.rfind(stage + "norm.", 0) == 0)
            key = "norm" + n + "." + key.substr(stage.size() + 5);
    }
    if (size_t at = key.find(".dwconv."); at != std::string::npos)
        key = key.substr(0, at) + ".dwconv.dwconv." + key.substr(at + 8);
    return key;
}

Keys with_prefix(const std::string& prefix, const State& state) {
    Keys keys;
    for (const auto& [key, value] : state) keys.push_back(prefix + key);
    return keys;
}

}  // namespace

TEST_CASE("init_from loads a PVTv2 encoder into PVT-GDLA's backbone", "[init_from]") {
    TempDir dir("init_from");
    manual_seed(1);
    models::PyramidVisionTransformerV2 encoder(tiny_encoder());
    const State weights = encoder.state_dict();
    manual_seed(2);
    models::PVTSegNet net(tiny_segnet());
    const State before = snapshot(net);
    REQUIRE(!same(before.at("backbone.patch_embed.proj.weight"),
                  weights.at("patch_embed.proj.weight")));
    const Tensor handle = net.backbone->patch_embed->proj->weight;  // as an optimizer holds it

    SECTION("timm names") {
        nn::save_state_dict(encoder, dir.file("timm.safetensors"));
        const train::InitFromOptions o{.path = dir.file("timm.safetensors"),
                                       .target_prefix = "backbone."};
        const train::InitReport r = train::init_from(net, o);
        require_loaded(net.state_dict(), "backbone.", weights, before);
        CHECK(same(handle, weights.at("patch_embed.proj.weight")));
        CHECK(handle.requires_grad());
        CHECK(r.loaded == with_prefix("backbone.", weights));
        CHECK(r.model_keys == int64_t(weights.size()));
        CHECK((r.missing.empty() && r.unexpected.empty() && r.mismatched.empty() &&
               r.dropped.empty()));
        const std::string n = std::to_string(weights.size());
        CHECK(train::format_init_report(r, o) ==
              "init_from " + o.path + ": loaded " + n + " of " + n + " keys under 'backbone.'");
    }
    SECTION("a DDP prefix: only the keys under source_prefix are used") {
        State file;
        for (const auto& [key, value] : weights) {
            file["module." + key] = value;
            file["ema." + key] = zeros(value.shape(), value.dtype());  // ignored, not unexpected
        }
        save_safetensors(dir.file("ddp.safetensors"), file);
        const train::InitReport r = train::init_from(net, {.path = dir.file("ddp.safetensors"),
                                                           .source_prefix = "module.",
                                                           .target_prefix = "backbone."});
        require_loaded(net.state_dict(), "backbone.", weights, before);
        CHECK(r.loaded.size() == weights.size());
        CHECK(r.unexpected.empty());
    }
    SECTION("the original PVTv2 names through the whai362 key map") {
        State original;
        for (const auto& [key, value] : weights) original["module." + to_original(key)] = value;
        REQUIRE(original.count("module.block4.1.mlp.dwconv.dwconv.weight"));
        save_safetensors(dir.file("orig.safetensors"), original);
        const train::InitReport r = train::init_from(net, {.path = dir.file("orig.safetensors"),
                                                           .source_prefix = "module.",
                                                           .target_prefix = "backbone.",
                                                           .key_map = "whai362_pvt_v2"});
        require_loaded(net.state_dict(), "backbone.", weights, before);
        CHECK(r.loaded == with_prefix("backbone.", weights));
    }
    SECTION("a JSON key map: the longest rename or drop prefix applies") {
        State file;
        for (const auto& [key, value] : weights)
            file[key.rfind("patch_embed.", 0) == 0 ? "enc.stem." + key.substr(12) : "enc." + key] =
                value;
        file["enc.aux.weight"] = zeros({3});
        file["head.weight"] = zeros({5, 32});
        file["head.bias"] = zeros({5});
        save_safetensors(dir.file("renamed.safetensors"), file);
        std::ofstream(dir.file("map.json"))
            << R"({"rename": {"enc.": "", "enc.stem.": "patch_embed."},)"
               R"( "drop": ["head.", "enc.aux."]})";
        const train::InitReport r = train::init_from(net, {.path = dir.file("renamed.safetensors"),
                                                           .target_prefix = "backbone.",
                                                           .key_map = dir.file("map.json")});
        require_loaded(net.state_dict(), "backbone.", weights, before);
        CHECK(r.dropped == Keys{"enc.aux.weight", "head.bias", "head.weight"});
        CHECK(r.unexpected.empty());
        CHECK_THAT(train::format_init_report(r, {.path = "w.safetensors"}),
                   Contains("\n  dropped by the key map (3): enc.aux.weight, head.bias, "
                            "head.weight"));
    }
}

TEST_CASE("init_from: an official PVT-GDLA checkpoint loads whole through the whai362 map",
          "[init_from]") {
    // Its encoder is under "backbone." in the original names, its decoder in lumen's.
    TempDir dir("init_from_gdla");
    manual_seed(3);
    models::PVTSegNet trained(tiny_segnet());
    State official;
    for (const auto& [key, value] : trained.state_dict())
        official[key.rfind("backbone.", 0) == 0 ? "backbone." + to_original(key.substr(9)) : key] =
            value;
    REQUIRE(official.count("backbone.norm4.weight"));
    save_safetensors(dir.file("gdla.safetensors"), official);
    manual_seed(4);
    models::PVTSegNet net(tiny_segnet());
    const train::InitReport r =
        train::init_from(net, {.path = dir.file("gdla.safetensors"), .key_map = "whai362_pvt_v2"});
    require_loaded(net.state_dict(), "", trained.state_dict(), {});
    CHECK(r.loaded == with_prefix("", trained.state_dict()));
    CHECK(r.model_keys == int64_t(official.size()));
}

TEST_CASE("init_from: a strict load that does not fit lists every problem and changes nothing",
          "[init_from]") {
    TempDir dir("init_from_strict");
    manual_seed(5);
    models::PyramidVisionTransformerV2 encoder(tiny_encoder());
    State file = encoder.state_dict();
    file.erase("stages.3.norm.bias");                       // missing
    file["stages.3.extra.weight"] = zeros({2});             // unexpected
    file["stages.3.norm.weight"] = zeros({7});              // shape
    file["stages.0.norm.bias"] = zeros({8}, DType::int64);  // dtype
    file["stages.0.norm.weight"] =
        encoder.state_dict().at("stages.0.norm.weight").to(DType::float64);
    save_safetensors(dir.file("bad.safetensors"), file);
    manual_seed(6);
    models::PVTSegNet net(tiny_segnet());
    const State before = snapshot(net);
    train::InitFromOptions o{.path = dir.file("bad.safetensors"), .target_prefix = "backbone."};

    require_error([&] { train::init_from(net, o); },
                  {"[init_from] " + o.path + ": the weights do not fit PVTSegNet under 'backbone.'",
                   "missing (1): backbone.stages.3.norm.bias\n",
                   "unexpected (1): backbone.stages.3.extra.weight (file key "
                   "'stages.3.extra.weight')\n",
                   "mismatched (2): backbone.stages.0.norm.bias: file int64 vs model float32, "
                   "backbone.stages.3.norm.weight: file [7] vs model [32]"});
    require_unchanged(net, before);

    SECTION("not strict: what fits is loaded, a float64 tensor cast, the rest reported") {
        o.strict = false;
        const train::InitReport r = train::init_from(net, o);
        const State now = net.state_dict();
        for (const auto& [key, value] : encoder.state_dict()) {
            const bool kept = key == "stages.3.norm.bias" || key == "stages.3.norm.weight" ||
                              key == "stages.0.norm.bias";
            INFO(key);
            CHECK(same(now.at("backbone." + key), kept ? before.at("backbone." + key) : value));
        }
        CHECK(r.missing == Keys{"backbone.stages.3.norm.bias"});
        CHECK(r.unexpected ==
              Keys{"backbone.stages.3.extra.weight (file key 'stages.3.extra.weight')"});
        CHECK(r.mismatched == Keys{"backbone.stages.0.norm.bias: file int64 vs model float32",
                                   "backbone.stages.3.norm.weight: file [7] vs model [32]"});
        CHECK(int64_t(r.loaded.size()) == r.model_keys - 3);
        CHECK(train::format_init_report(r, o) ==
              "init_from " + o.path + ": loaded " + std::to_string(r.model_keys - 3) + " of " +
                  std::to_string(r.model_keys) + " keys under 'backbone.'" +
                  "\n  missing (1): backbone.stages.3.norm.bias"
                  "\n  unexpected (1): backbone.stages.3.extra.weight (file key "
                  "'stages.3.extra.weight')"
                  "\n  mismatched (2): backbone.stages.0.norm.bias: file int64 vs model float32, "
                  "backbone.stages.3.norm.weight: file [7] vs model [32]");
    }
    SECTION("without allow_cast a float64 tensor is a mismatch") {
        o.strict = false;
        o.allow_cast = false;
        const train::InitReport r = train::init_from(net, o);
        CHECK(r.mismatched.at(0) == "backbone.stages.0.norm.bias: file int64 vs model float32");
        CHECK(r.mismatched.at(1) == "backbone.stages.0.norm.weight: file float64 vs model float32");
        CHECK(same(net.state_dict().at("backbone.stages.0.norm.weight"),
                   before.at("backbone.stages.0.norm.weight")));
    }
}

TEST_CASE("init_from: a strict error lists all keys, the report the first 10", "[init_from]") {
    TempDir dir("init_from_lists");
    models::PVTSegNet net(tiny_segnet());
    const Tensor stem = net.backbone->patch_embed->proj->weight;
    save_safetensors(dir.file("one.safetensors"), {{"patch_embed.proj.weight", stem.clone()}});
    train::InitFromOptions o{.path = dir.file("one.safetensors"), .target_prefix = "backbone."};
    // The last missing key in sorted order, and no "... and N more".
    CHECK_THROWS_WITH(
        train::init_from(net, o),
        Contains("missing (" + std::to_string(net.backbone->state_dict().size() - 1) + ")") &&
            EndsWith(", backbone.stages.3.norm.weight") && !Contains("more"));
    o.strict = false;
    const train::InitReport r = train::init_from(net, o);
    CHECK(r.loaded == Keys{"backbone.patch_embed.proj.weight"});
    CHECK(int64_t(r.missing.size()) == r.model_keys - 1);
    const std::string text = train::format_init_report(r, o);
    CHECK_THAT(text, Contains("loaded 1 of " + std::to_string(r.model_keys) + " keys"));
    CHECK_THAT(text, Contains(r.missing[9] + ", ... and " + std::to_string(r.missing.size() - 10) +
                              " more"));
}

TEST_CASE("init_from: errors name the file and the problem", "[init_from]") {
    TempDir dir("init_from_errors");
    models::PVTSegNet net(tiny_segnet());
    const State before = snapshot(net);
    const std::string none = dir.file("none.safetensors"), junk = dir.file("junk.safetensors"),
                      two = dir.file("two.safetensors"), empty = dir.file("empty.safetensors");
    std::ofstream(junk) << "not a safetensors file at all";
    save_safetensors(two, {{"a.weight", zeros({2})}, {"b.weight", zeros({2})}});
    save_safetensors(empty, {});
    auto json = [&](const std::string& name, const std::string& text) {
        std::ofstream(dir.file(name)) << text;
        return dir.file(name);
    };
    require_error([&] { train::init_from(net, {.path = ""}); }, {"[init_from] no weights file"});
    require_error([&] { train::init_from(net, {.path = none}); },
                  {"[init_from] " + none + ": cannot open"});
    require_error([&] { train::init_from(net, {.path = junk}); },
                  {"[init_from] " + junk + ": header length"});
    require_error([&] { train::init_from(net, {.path = empty}); }, {"holds no tensors"});
    require_error([&] { train::init_from(net, {.path = two, .key_map = "timm_magic"}); },
                  {"[init_from] " + two +
                   ": key_map 'timm_magic' is neither a built-in map "
                   "(whai362_pvt_v2) nor a JSON file"});
    require_error([&] { train::init_from(net, {.path = two, .key_map = dir.path.string()}); },
                  {"neither a built-in map"});
    const std::string collide = json("collide.json", R"({"rename": {"a.": "c.", "b.": "c."}})");
    require_error([&] { train::init_from(net, {.path = two, .key_map = collide}); },
                  {"[init_from] " + two,
                   "the file keys 'a.weight' and 'b.weight' both map to the model key 'c.weight'"});
    require_error(
        [&] { train::init_from(net, {.path = two, .target_prefix = "encoder."}); },
        {"PVTSegNet has no key under 'encoder.' (its keys start with backbone., de1., de2., "
         "de3., head1., resblk., up1., up2., up3.)"});
    require_error([&] { train::init_from(net, {.path = two, .target_prefix = "backbone"}); },
                  {"target_prefix 'backbone' must be empty or end with '.' (e.g. 'backbone.')"});
    require_error([&] { train::init_from(net, {.path = two, .source_prefix = "module."}); },
                  {"no key of the file starts with source_prefix 'module.' (its keys start with "
                   "a., b.)"});
    require_error([&] { train::init_from(net, {.path = two, .strict = false}); },
                  {"no key of the file fits PVTSegNet:", "unexpected (2): a.weight, b.weight"});
    // Key map files.
    require_error([&] { train::init_from(net, {.path = two, .key_map = json("bad.json", "{")}); },
                  {"[init_from] " + dir.file("bad.json") + ": not valid JSON"});
    require_error(
        [&] {
            train::init_from(net, {.path = two, .key_map = json("k.json", R"({"renam": {}})")});
        },
        {"unknown key 'renam'"});
    require_error(
        [&] {
            train::init_from(net,
                             {.path = two, .key_map = json("v.json", R"({"rename": {"a.": 1}})")});
        },
        {"rename 'a.' maps to 1, expected a string"});
    require_error(
        [&] {
            train::init_from(
                net, {.path = two,
                      .key_map = json("d.json", R"({"rename": {"a.": "b."}, "drop": ["a."]})")});
        },
        {"the prefix 'a.' appears twice in the key map"});
    require_unchanged(net, before);
}

TEST_CASE("init_from fills a model on the GPU in place", "[init_from][cuda]") {
    if (!have_gpu()) return;
    TempDir dir("init_from_cuda");
    manual_seed(7);
    models::PyramidVisionTransformerV2 encoder(tiny_encoder());
    nn::save_state_dict(encoder, dir.file("timm.safetensors"));
    models::PVTSegNet net(tiny_segnet());
    net.to(Device::cuda());
    const State before = snapshot(net);
    const Tensor handle = net.backbone->patch_embed->proj->weight;
    train::init_from(net, {.path = dir.file("timm.safetensors"), .target_prefix = "backbone."});
    CHECK(handle.is_cuda());
    require_loaded(net.state_dict(), "backbone.", encoder.state_dict(), before);
}
