// Configs and the model registry: options read back with their types, edit-distance
// suggestions, JSON flattening and --set overrides, unknown and mistyped keys named with the
// source and the closest key, defaults, the nested JSON echo; "vit" and "dgvit" built from
// options with the spec's parameter names and counts.
#include <fstream>
#include <limits>

#include "models/registry.h"
#include "support/gradcheck.h"
#include "train/config.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("options: typed getters, coercion, choices and the closest match", "[train][config]") {
    nn::Options o("thing");
    o.set("n", int64_t(3));
    o.set("x", 0.5);
    o.set("sizes", std::vector<int64_t>{28, 28});
    CHECK(o.get_int("n") == 3);
    CHECK(o.get_double("n") == 3.0);
    CHECK(o.get_doubles("sizes") == std::vector<double>{28, 28});
    require_error([&] { o.get_int("x"); }, {"[thing]", "option 'x' is a number, not an integer"});
    require_error([&] { o.get_string("missing"); }, {"[thing]", "no option 'missing'"});
    nn::OptionSpec lr{"lr", 0.1, ""};
    CHECK(std::get<double>(nn::coerce_option(lr, int64_t(1), "config", "optim.lr")) == 1.0);
    require_error([&] { nn::coerce_option(lr, std::string("fast"), "config", "optim.lr"); },
                  {"[config]", "option 'optim.lr' expects a number, got \"fast\""});
    nn::OptionSpec kind{"kind", std::string("adamw"), "", {"adamw", "adam", "sgd"}};
    require_error([&] { nn::coerce_option(kind, std::string("adamv"), "config", "optim.name"); },
                  {"must be one of adamw, adam, sgd", "got \"adamv\"", "did you mean \"adamw\"?"});
    CHECK(nn::edit_distance("kitten", "sitting") == 3);
    CHECK(nn::edit_distance("", "abc") == 3);
    CHECK(nn::edit_distance("dgvti", "dgvit") == 1);  // a swap
    CHECK(nn::edit_distance("ab", "ba") == 1);
    CHECK(nn::closest_match("optim.learning_rate", {"optim.lr", "optim.name"}) == "");
    CHECK(nn::closest_match("optim.lrr", {"optim.lr", "optim.name"}) == "optim.lr");
    CHECK(nn::format_option(std::vector<double>{0.9, 0.999}) == "[0.9, 0.999]");
    CHECK(nn::format_option(3e-4) == "0.0003");
    CHECK(nn::format_option(1.0) == "1.0");
}

namespace {

std::vector<nn::OptionSpec> specs() {
    return {{"name", std::string("run"), ""},
            {"optim.lr", 3e-4, ""},
            {"optim.betas", std::vector<double>{0.9, 0.999}, ""},
            {"train.epochs", int64_t(10), ""},
            {"train.amp", false, ""}};
}

}  // namespace

TEST_CASE("configs: flattening, defaults, --set overrides and the JSON echo", "[train][config]") {
    train::RawConfig raw = train::RawConfig::parse(
        R"({"name": "quick", "optim": {"lr": 1, "betas": [0.8, 0.99]}})", "quick.json");
    raw.set("train.epochs=3");
    raw.set("name=other");  // a bare word is a string
    nn::Options o = train::resolve_config(raw, specs());
    CHECK(o.get_string("name") == "other");
    CHECK(o.get_double("optim.lr") == 1.0);  // an integer where a number is expected
    CHECK(o.get_doubles("optim.betas") == std::vector<double>{0.8, 0.99});
    CHECK(o.get_int("train.epochs") == 3);
    CHECK(o.get_bool("train.amp") == false);  // the default
    CHECK(
        train::config_to_json(o, -1) ==
        R"({"name":"other","optim":{"betas":[0.8,0.99],"lr":1.0},"train":{"amp":false,"epochs":3}})");
}

TEST_CASE("configs: unknown and mistyped keys name the source and the closest key",
          "[train][config]") {
    auto resolve = [](const std::string& text) {
        train::resolve_config(train::RawConfig::parse(text, "c.json"), specs());
    };
    require_error([&] { resolve(R"({"optim": {"lrr": 0.1}})"); },
                  {"[config] c.json: unknown key 'optim.lrr'; did you mean 'optim.lr'?"});
    require_error([&] { resolve(R"({"train": {"epochs": "ten"}})"); },
                  {"[config] c.json: option 'train.epochs' expects an integer, got \"ten\""});
    require_error([&] { resolve(R"({"train": {"epochs": 2.5}})"); },
                  {"'train.epochs' expects an integer, got 2.5"});
    require_error([&] { resolve(R"({"train": {"amp": 1}})"); }, {"'train.amp' expects a bool"});
    require_error([&] { resolve(R"({"zzz": 1})"); }, {"unknown key 'zzz'", "lumen models"});
    train::RawConfig with_set = train::RawConfig::parse(R"({"name": "a"})", "c.json");
    with_set.set("optim.lr=fast");
    require_error([&] { train::resolve_config(with_set, specs()); },
                  {"[config] --set: option 'optim.lr' expects a number, got \"fast\""});
    require_error([&] { resolve(R"([1, 2])"); }, {"[config] c.json", "must be a JSON object"});
    require_error([&] { resolve(R"({"a": )"); }, {"[config] c.json", "not valid JSON"});
    require_error([&] { resolve(R"({"optim": {"betas": ["a"]}})"); },
                  {"'optim.betas' must be a list of numbers"});
    require_error([&] { resolve(R"({"name": null})"); }, {"'name' has an unsupported value"});
    train::RawConfig bad;
    require_error([&] { bad.set("novalue"); }, {"[config]", "key=value", "novalue"});
    require_error([] { train::RawConfig::read("/nonexistent/c.json"); },
                  {"[config] /nonexistent/c.json", "cannot open: No such file"});
}

TEST_CASE("model registry: vit and dgvit from options, keys checked", "[train][config][models]") {
    CHECK(models::model_names() == std::vector<std::string>{"context_swin", "context_vit", "dgt",
                                                            "dgvit", "diff_transformer",
                                                            "pvt_segnet", "sfree_vit", "sima_vit",
                                                            "transformer", "utnet", "vit"});
    // The Table 3 models on Fashion-MNIST input: the parameter counts of bench_train.
    nn::Options defaults = models::model_options("vit");
    CHECK(models::build_model("vit", defaults)->num_parameters() == 6338570);
    CHECK(models::build_model("dgvit", models::model_options("dgvit"))->num_parameters() ==
          5298506);
    nn::Options small("overrides");
    small.set("depth", int64_t(1));
    small.set("embed_dim", int64_t(16));
    small.set("num_heads", int64_t(2));
    small.set("img_size", std::vector<int64_t>{8, 8});
    auto model = models::build_model("dgvit", models::model_options("dgvit", small));
    CHECK(model->type_name() == "DGViT");
    CHECK_NOTHROW(model->tensor("blocks.0.attn.gate_proj.weight"));
    CHECK(models::find_model("dgvit").input(models::model_options("dgvit", small)).img_size ==
          std::vector<int64_t>{8, 8});
    nn::Options typo("overrides");
    typo.set("deph", int64_t(2));
    require_error([&] { models::model_options("vit", typo); },
                  {"[models]", "no option 'deph'", "did you mean 'depth'?"});
    require_error(
        [] { models::find_model("dgvti"); },
        {"[models]", "unknown model 'dgvti'", "did you mean 'dgvit'?", "dgvit, diff_transformer"});
    require_error([] { models::register_model({.name = "vit"}); }, {"[models]", "vit"});
}

TEST_CASE("options: ranges name the key and the allowed values", "[train][config][hostile]") {
    nn::OptionSpec every{"train.log_every", int64_t(50), "", {}, nn::Range::between(1, 1e12)};
    require_error([&] { nn::coerce_option(every, int64_t(0), "config", "train.log_every"); },
                  {"[config] option 'train.log_every' must be in [1, 1000000000000], got 0"});
    nn::OptionSpec noise{"data.gaussian_noise", 0.0, "", {}, nn::Range::at_least(0)};
    require_error([&] { nn::coerce_option(noise, -1.0, "config", "data.gaussian_noise"); },
                  {"option 'data.gaussian_noise' must be >= 0, got -1.0"});
    require_error(
        [&] { nn::coerce_option(noise, std::numeric_limits<double>::infinity(), "config", "x"); },
        {"option 'x' must be a finite number"});
    nn::OptionSpec betas{
        "optim.betas", std::vector<double>{0.9, 0.999}, "", {}, nn::Range::between(0, 1, true)};
    require_error(
        [&] {
            nn::coerce_option(betas, std::vector<double>{0.9, 1.0}, "config", "optim.betas");
        },
        {"each value of option 'optim.betas' must be in [0, 1), got [0.9, 1.0]"});
    CHECK(nn::Range::above(0).str() == "> 0");
    CHECK(nn::Range::between(0, 1).contains(1.0));
    CHECK_FALSE(nn::Range::above(0).contains(0.0));
}

TEST_CASE("configs: deep nesting, repeated keys and oversized files are refused",
          "[train][config][hostile]") {
    std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
    require_error([&] { train::RawConfig::parse(deep, "deep.json"); },
                  {"[config] deep.json: JSON nested deeper than 32 levels"});
    require_error(
        [&] { train::RawConfig::parse(R"({"optim": {"lr": 1}, "optim": {"lr": 2}})", "d.json"); },
        {"[config] d.json: duplicate key 'optim'"});
    require_error(
        [&] { train::RawConfig::parse(R"({"optim": {"lr": 1}, "optim.lr": 2})", "d.json"); },
        {"[config] d.json: key 'optim.lr' is given twice (nested and dotted)"});
    TempDir dir("config_big");
    const std::string big = dir.file("big.json");
    std::ofstream(big) << "{\"description\": \"" << std::string(17 << 20, 'x') << "\"}";
    require_error([&] { train::RawConfig::read(big); },
                  {"[config] ", big, "over the limit of 16.0 MB for a config"});
}
