// The whole-model adapters of check-vectors build through the model registry
// (conformance/registry_vectors.h): a vector's config key that is no option of the entry, or
// a value the entry refuses, fails naming the vector's module and the registry's key.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "conformance/op_vectors.h"

using namespace lumen::conformance;
using Catch::Matchers::Contains;

TEST_CASE("check-vectors: a whole model's config is the registry entry's options",
          "[check_vectors][registry]") {
    const VectorAdapter* adapter = find_vector_adapter("gdla.PVTSegNet");
    REQUIRE(adapter != nullptr);
    auto run = [&](const nlohmann::json& config) {
        VectorCall call(config, "gdla.PVTSegNet");
        return (*adapter)(call);
    };
    // The reference's encoder dict sets pvt_segnet's encoder_* options.
    nlohmann::json config = {
        {"in_chs", 1},
        {"n_classes", 3},
        {"encoder", {{"depths", {1, 1, 1, 1}}, {"embedd_dims", {8, 8, 12, 16}}}}};
    CHECK_THROWS_WITH(run(config), Contains("[gdla.PVTSegNet]") &&
                                       Contains("has no option 'encoder_embedd_dims'; did you "
                                                "mean 'encoder_embed_dims'?"));
    config["encoder"] = {{"depths", {1, 1}}};
    CHECK_THROWS_WITH(run(config), Contains("[gdla.PVTSegNet]") &&
                                       Contains("encoder_depths needs one value per encoder "
                                                "stage (4), got 2"));
}
