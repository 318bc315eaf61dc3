// The check-vectors adapter of spec `context`'s whole models (module string "context.model"):
// it hands the vector to the adapter of its backbone family, "context.model.<encoder>"
// ("context.model.Swin" in context_swin_vectors.cpp, "context.model.ViT" for the ViT models),
// so that each family registers its own adapter without touching this file.
#include "train/cli/op_vectors.h"

namespace lumen::cli {

namespace {

const VectorAdapterRegistration kContextModel("context.model", [](VectorCall& call) {
    std::string encoder = call.config.get_string("encoder", "");
    const VectorAdapter* family = find_vector_adapter("context.model." + encoder);
    LUMEN_CHECK(family != nullptr, call.module, "no adapter for encoder '", encoder,
                "' (context.model." + encoder + " is not registered)");
    return (*family)(call);
});

}  // namespace

}  // namespace lumen::cli
