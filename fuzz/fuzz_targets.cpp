// libFuzzer targets, one per reader of untrusted files: each takes the fuzzer's bytes as a
// file (or a text) and reads it; a lumen::Error is the expected outcome for a bad input, while
// a crash, a sanitizer report, a hang or a huge allocation is a finding. FUZZ_TARGET selects
// the target at compile time (fuzz/build.sh builds one binary per target).
#include <cstdint>
#include <cstdio>
#include <string>

#include <unistd.h>

#include "core/error.h"
#include "core/safetensors.h"
#include "datasets/idx.h"
#include "datasets/image.h"
#include "datasets/nifti.h"
#include "datasets/npy.h"
#include "datasets/text.h"
#include "nn/options.h"
#include "train/config.h"

namespace {

// The bytes as a file with the given extension, in memory-backed /dev/shm when there is one.
std::string as_file(const uint8_t* data, size_t size, const char* extension) {
    static const std::string path = [&] {
        const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        return std::string(dir) + "/lumen_fuzz_" + std::to_string(getpid()) + extension;
    }();
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) std::abort();
    if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return path;
}

void run(const uint8_t* data, size_t size) {
    using namespace lumen;
#if FUZZ_TARGET == 1
    load_safetensors(as_file(data, size, ".safetensors"));
#elif FUZZ_TARGET == 2
    datasets::NiftiImage image = datasets::read_nifti(as_file(data, size, ".nii"));
    image.fdata();
    image.header.affine();
#elif FUZZ_TARGET == 3
    datasets::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
#elif FUZZ_TARGET == 4
    datasets::read_npz(as_file(data, size, ".npz"));
#elif FUZZ_TARGET == 5
    datasets::read_image(as_file(data, size, ".img"));
#elif FUZZ_TARGET == 6
    datasets::read_idx(as_file(data, size, ".idx"));
#elif FUZZ_TARGET == 7
    // A config: parsed, then resolved against keys of every type, with ranges and choices.
    train::RawConfig raw =
        train::RawConfig::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    std::vector<nn::OptionSpec> specs = {
        {"name", std::string("run"), ""},
        {"train.epochs", int64_t(10), "", {}, nn::Range::between(1, 1e6)},
        {"optim.lr", 1e-3, "", {}, nn::Range::at_least(0)},
        {"optim.betas", std::vector<double>{0.9, 0.999}, "", {}, nn::Range::between(0, 1, true)},
        {"model.img_size", std::vector<int64_t>{28, 28}, "", {}, nn::Range::between(1, 65536)},
        {"optim.name", std::string("adamw"), "", {"adamw", "sgd"}},
        {"train.nan_guard", true, ""}};
    nn::Options options = train::resolve_config(raw, specs);
    train::config_to_json(options);
#elif FUZZ_TARGET == 8
    // A CSV of texts: parsed, every field tokenized, a vocabulary built and used.
    datasets::CsvTable table =
        datasets::parse_csv(std::string(reinterpret_cast<const char*>(data), size), ',', "fuzz");
    std::vector<std::vector<std::string>> texts;
    for (const auto& row : table.rows)
        for (const std::string& field : row) texts.push_back(datasets::tokenize(field));
    datasets::Vocabulary vocabulary = datasets::Vocabulary::build(texts, 1000, 1);
    for (const auto& tokens : texts) vocabulary.encode(tokens, 100);
#else
#error "FUZZ_TARGET must be 1 to 8"
#endif
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        run(data, size);
    } catch (const lumen::Error&) {
        // A clear refusal: what a bad input must get.
    }
    return 0;
}
