// The shipped configs (configs/*.json) resolve without errors, and the Table 3 ones carry the
// paper's hyperparameters.
#include <filesystem>

#include "support/gradcheck.h"
#include "train/cli/experiment.h"

using namespace lumen;
namespace fs = std::filesystem;

namespace {

nn::Options shipped(const std::string& name) {
    const fs::path path = fs::path(LUMEN_TEST_DATA) / ".." / ".." / "configs" / name;
    return train::cli::resolve_training_config(train::RawConfig::read(path.string()));
}

}  // namespace

TEST_CASE("the shipped configs resolve, Table 3 values included", "[cli][configs]") {
    nn::Options quick = shipped("quickstart.json");
    CHECK(quick.get_string("model.name") == "dgvit");
    CHECK(quick.get_string("data.dataset") == "fashion_mnist");
    for (const char* name : {"dgvit_fmnist.json", "vit_fmnist.json"}) {
        INFO(name);
        nn::Options c = shipped(name);
        CHECK(c.get_int("model.embed_dim") == 256);
        CHECK(c.get_int("model.depth") == 8);
        CHECK(c.get_int("model.num_heads") == 8);
        CHECK(c.get_int("model.patch_size") == 4);
        CHECK(c.get_int("data.batch_size") == 128);
        CHECK(c.get_string("optim.name") == "adamw");
        CHECK(c.get_double("optim.lr") == 3e-4);
        CHECK(c.get_double("optim.weight_decay") == 0.01);
        CHECK(c.get_string("schedule.name") == "cosine");
        CHECK(c.get_int("train.epochs") == 100);
    }
    CHECK(shipped("dgvit_fmnist.json").get_double("model.ffn_expansion") == 4.0);
    CHECK(shipped("vit_fmnist.json").get_string("model.attn_type") == "mhsa");
}

TEST_CASE("every paper config resolves and its model options validate", "[cli][configs]") {
    const fs::path root = fs::path(LUMEN_TEST_DATA) / ".." / ".." / "configs";
    int64_t count = 0;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        if (entry.path().extension() != ".json") continue;
        INFO(entry.path().string());
        nn::Options c =
            train::cli::resolve_training_config(train::RawConfig::read(entry.path().string()));
        // The model section's keys are the registry's, with types and ranges checked.
        CHECK_NOTHROW(train::cli::model_options(c, train::cli::DataShape{}));
        CHECK(!c.get_string("description").empty());
        ++count;
    }
    CHECK(count >= 16);
    // The recipes keep their papers' settings.
    nn::Options utnet = shipped("utnet/utnet_mnms.json");
    CHECK(utnet.get_string("schedule.name") == "utnet");
    CHECK(utnet.get_doubles("loss.class_weights") == std::vector<double>{0.5, 1, 1, 1});
    nn::Options gdla = shipped("pvt_gdla/pvt_gdla_synapse.json");
    CHECK(gdla.get_string("loss.name") == "boundary_dou");
    CHECK(gdla.get_string("eval.protocol") == "transunet");
    CHECK(gdla.get_double("train.grad_clip") == 1.0);
}
