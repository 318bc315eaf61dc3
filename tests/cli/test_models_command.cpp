// `lumen models`: every registered model appears with each key and its default.
#include <sstream>

#include "support/gradcheck.h"
#include "train/cli/models_command.h"

TEST_CASE("lumen models lists the models with their keys and defaults", "[cli][models]") {
    std::ostringstream out;
    lumen::train::cli::print_models(out);
    const std::string text = out.str();
    for (const char* fragment :
         {"dgvit: DGViT", "vit: ViT", "ffn_expansion       4.0", "img_size            [28, 28]",
          "attn_type           \"mhsa\"", "grad_checkpointing  0"}) {
        INFO(fragment);
        CHECK(text.find(fragment) != std::string::npos);
    }
}
