// The hostile-file corpus: from one real run directory (a tiny `lumen train` made by
// run_corpus.sh) and one committed oracle vector, writes damaged, oversized, nested,
// mistyped and non-regular files, and the `lumen` command that must refuse each one, to
// OUT/cases.tsv. Each line: name, expected exit status, a fragment the output must contain,
// then the command's arguments (tab-separated). run_corpus.sh runs them with a time and
// memory limit. Usage: lumen_hostile_corpus RUN_DIR VECTOR OUT
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "core/safetensors.h"
#include "datasets/nifti.h"
#include "ops/creation.h"

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace lumen;

namespace {

std::string out_dir;
std::ofstream manifest;

void add_case(const std::string& name, int exit_status, const std::string& expect,
              const std::vector<std::string>& args) {
    manifest << name << '\t' << exit_status << '\t' << expect;
    for (const std::string& arg : args) manifest << '\t' << arg;
    manifest << '\n';
}

std::string path_of(const std::string& name) { return out_dir + "/" + name; }

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

// A safetensors file with the given header text (declared length = its size) and data.
std::string raw_safetensors(const std::string& name, std::string header, const std::string& data,
                            int64_t length_delta = 0) {
    header.append((8 - header.size() % 8) % 8, ' ');
    uint64_t n = uint64_t(int64_t(header.size()) + length_delta);
    std::string bytes(8, '\0');
    std::memcpy(bytes.data(), &n, 8);
    write_bytes(path_of(name), bytes + header + data);
    return path_of(name);
}

// The checkpoint rewritten with `edit` applied to its state JSON and tensors (valid checksum).
std::string edited_checkpoint(
    const std::string& checkpoint, const std::string& name,
    const std::function<void(Json&, std::map<std::string, Tensor>&)>& edit) {
    SafetensorsFile file = load_safetensors(checkpoint);
    Json state = Json::parse(file.metadata.at("lumen.checkpoint"));
    std::map<std::string, Tensor> tensors;
    for (auto& [key, t] : file.tensors) tensors[key] = t.clone();
    edit(state, tensors);
    file.metadata["lumen.checkpoint"] = state.dump();
    save_safetensors(path_of(name), tensors, file.metadata);
    return path_of(name);
}

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string write_text(const std::string& name, const std::string& text) {
    write_bytes(path_of(name), text);
    return path_of(name);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::cerr << "usage: lumen_hostile_corpus RUN_DIR VECTOR OUT\n";
        return 2;
    }
    const std::string run = argv[1], vector = argv[2];
    out_dir = argv[3];
    fs::create_directories(out_dir);
    manifest.open(path_of("cases.tsv"));
    std::string checkpoint;
    for (const auto& entry : fs::directory_iterator(run + "/checkpoints"))
        if (entry.path().filename().string().rfind("step-", 0) == 0) checkpoint = entry.path();
    const std::string good = read_bytes(checkpoint);
    const std::string config = run + "/config.json";

    // ---- safetensors headers: nesting, ranks, lengths, repeats ----
    std::string deep = raw_safetensors("deep.safetensors", "{\"a\":" + nested(100000) + "}", "");
    add_case("deep_header_vectors", 1, "JSON nested deeper than 8 levels", {"check-vectors", deep});
    add_case("deep_header_eval", 1, "JSON nested deeper than 8 levels", {"eval", deep});
    std::string metadata_deep = raw_safetensors(
        "deep_metadata.safetensors", "{\"__metadata__\":{\"a\":" + nested(100000) + "}}", "");
    add_case("deep_metadata", 1, "JSON nested deeper than", {"eval", metadata_deep});
    for (int dims : {30000, 1500000}) {  // 60 KB and 3 MB of dimensions
        std::string shape = "[1";
        for (int i = 1; i < dims; ++i) shape += ",1";
        std::string file = raw_safetensors(
            "rank" + std::to_string(dims) + ".safetensors",
            "{\"a\":{\"dtype\":\"U8\",\"shape\":" + shape + "],\"data_offsets\":[0,1]}}", "x");
        add_case("rank_" + std::to_string(dims), 1,
                 std::to_string(dims) + " dimensions; lumen tensors have at most 8",
                 {"check-vectors", file});
    }
    std::string dup = raw_safetensors("duplicate_tensor.safetensors",
                                      R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                      R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                                      "xy");
    add_case("duplicate_tensor", 1, "duplicate key 'a'", {"eval", dup});
    std::string dup_meta =
        raw_safetensors("duplicate_metadata.safetensors",
                        R"({"__metadata__":{"module":"op.relu","module":"op.gelu"}})", "");
    add_case("duplicate_metadata", 1, "duplicate key '__metadata__.module'",
             {"check-vectors", dup_meta});
    std::string huge_length = path_of("huge_length.safetensors");
    write_bytes(huge_length, std::string("\xff\xff\xff\xff\xff\xff\xff\x0f", 8) + "{}");
    add_case("huge_header_length", 1, "runs past the end of the file", {"eval", huge_length});
    // A real 17 MB header (of whitespace): over the 16 MB cap, refused before parsing.
    std::string big =
        raw_safetensors("big_header.safetensors", "{}" + std::string(17 << 20, ' '), "");
    add_case("header_over_cap", 1, "exceeds the limit of 16777216 bytes (16 MB)",
             {"check-vectors", big});
    std::string huge_shape = raw_safetensors(
        "huge_shape.safetensors",
        R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})", "abcd");
    add_case("huge_shape", 1, "needs more than 2^63 bytes", {"eval", huge_shape});
    write_bytes(path_of("empty.safetensors"), "");
    add_case("empty_file", 1, "shorter than the 8-byte header length",
             {"eval", path_of("empty.safetensors")});

    // ---- a real checkpoint, damaged ----
    uint64_t n = 0;
    std::memcpy(&n, good.data(), 8);
    size_t pad = 0;
    while (good[8 + n - 1 - pad] == ' ') ++pad;
    if (pad > 0) {  // a length into the header's padding shifts every weight
        std::string shifted = good;
        uint64_t short_n = n - pad;
        std::memcpy(shifted.data(), &short_n, 8);
        write_bytes(path_of("shifted.safetensors"), shifted);
        add_case("length_into_padding", 1, "unexplained bytes",
                 {"eval", path_of("shifted.safetensors")});
    }
    write_bytes(path_of("trailing.safetensors"), good + "trailing");
    add_case("trailing_bytes", 1, "8 unexplained bytes", {"eval", path_of("trailing.safetensors")});
    write_bytes(path_of("truncated.safetensors"), good.substr(0, good.size() - 100));
    add_case("truncated", 1, "run past the end of the data section",
             {"eval", path_of("truncated.safetensors")});
    std::string flipped = good;
    flipped[flipped.size() - 11] ^= 0x10;
    write_bytes(path_of("bitflip.safetensors"), flipped);
    add_case("bit_flip", 1, "checksum mismatch", {"eval", path_of("bitflip.safetensors")});
    std::string i32 = edited_checkpoint(checkpoint, "int32_weight.safetensors",
                                        [](Json&, std::map<std::string, Tensor>& t) {
                                            Tensor& w = t.at("model.head.weight");
                                            w = w.to(DType::int32);
                                        });
    add_case("int32_weight", 1, "head.weight: got dtype int32, expected float32", {"eval", i32});
    std::string negative =
        edited_checkpoint(checkpoint, "negative_epoch.safetensors",
                          [](Json& s, std::map<std::string, Tensor>&) { s["epoch"] = -7; });
    add_case("negative_epoch", 1, "'epoch' must be an integer in [0, 2^53], got -7",
             {"eval", negative});
    std::string deep_config = edited_checkpoint(checkpoint, "deep_config.safetensors",
                                                [](Json& s, std::map<std::string, Tensor>&) {
                                                    s["config"] = "{\"a\":" + nested(100000) + "}";
                                                });
    add_case("checkpoint_deep_config", 1, "JSON nested deeper than 32 levels",
             {"eval", deep_config});
    std::string bad_state = edited_checkpoint(
        checkpoint, "bad_optimizer_state.safetensors", [](Json&, std::map<std::string, Tensor>& t) {
            for (auto& [key, value] : t)
                if (key.find("exp_avg_sq") != std::string::npos) {
                    value = zeros({3});
                    break;
                }
        });
    // A run whose only checkpoint has that state: resume must refuse it, naming why.
    fs::create_directories(path_of("bad_run/checkpoints"));
    fs::copy_file(bad_state, path_of("bad_run/checkpoints/step-000000002.safetensors"));
    add_case("resume_bad_optimizer_state", 1, "'exp_avg_sq' has shape [3]",
             {"train", "--resume", path_of("bad_run")});

    // A run whose newest checkpoint is nested 100,000 levels deep: resume skips it with a
    // warning and continues from the one before (here the end of the run: nothing to train).
    fs::create_directories(path_of("fallback_run/checkpoints"));
    fs::copy_file(checkpoint, path_of("fallback_run/checkpoints/step-000000002.safetensors"));
    fs::copy_file(deep, path_of("fallback_run/checkpoints/step-000000003.safetensors"));
    add_case("resume_falls_back", 0, "warning: skipping a damaged checkpoint",
             {"train", "--resume", path_of("fallback_run")});

    // ---- non-regular files where files are expected: refused at once, not waited on ----
    std::string fifo = path_of("fifo.safetensors");
    mkfifo(fifo.c_str(), 0600);
    add_case("fifo_checkpoint", 1, "is a FIFO, not a regular file", {"eval", fifo});
    add_case("fifo_vector", 1, "is a FIFO, not a regular file", {"check-vectors", fifo});
    std::string fifo_config = path_of("fifo.json");
    mkfifo(fifo_config.c_str(), 0600);
    add_case("fifo_config", 1, "is a FIFO, not a regular file", {"train", fifo_config});
    fs::create_directories(path_of("fifo_data"));
    for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"})
        mkfifo(path_of(std::string("fifo_data/") + name).c_str(), 0600);
    add_case("fifo_dataset", 1, "is a FIFO, not a regular file",
             {"train", config, "--set", "data.dataset=fashion_mnist", "--set",
              "data.dir=" + path_of("fifo_data")});
    fs::create_directories(path_of("fifo_run/checkpoints"));
    mkfifo(path_of("fifo_run/checkpoints/step-000000001.safetensors").c_str(), 0600);
    add_case("fifo_in_run", 1, "is a FIFO", {"train", "--resume", path_of("fifo_run")});

    // ---- a directory of vectors with one bad file: the others still run ----
    fs::create_directories(path_of("vectors"));
    fs::copy_file(vector, path_of("vectors/a_good.safetensors"));
    fs::copy_file(deep, path_of("vectors/b_deep.safetensors"));
    add_case("vectors_dir_one_bad", 1, "1 passed, 1 failed", {"check-vectors", path_of("vectors")});

    // ---- configs ----
    add_case("deep_config", 1, "JSON nested deeper than 32 levels",
             {"train", write_text("deep.json", "{\"a\":" + nested(100000) + "}")});
    add_case("duplicate_config_key", 1, "duplicate key 'train.epochs'",
             {"train", write_text("dup.json", R"({"train": {"epochs": 1, "epochs": 2}})")});
    const std::vector<std::pair<std::string, std::string>> bad_sets = {
        {"train.log_every=0", "option 'train.log_every' must be in [1, "},
        {"checkpoint.every_epochs=0", "option 'checkpoint.every_epochs' must be in [1, 1000000]"},
        {"train.epochs=4611686018427387904", "option 'train.epochs' must be in [1, 1000000]"},
        {"train.epochs=0", "option 'train.epochs' must be in [1, 1000000], got 0"},
        {"data.gaussian_noise=-1", "option 'data.gaussian_noise' must be >= 0"},
        {"optim.lr=-1", "option 'optim.lr' must be >= 0"},
        {"optim.betas=[0.9,1.5]", "each value of option 'optim.betas' must be in [0, 1)"},
        {"model.depth=1000000", "needs about"},
        {"name=../../escape", "'name' must be one folder name"},
    };
    for (const auto& [assignment, expect] : bad_sets)
        add_case(
            "set_" + assignment, 1, expect,
            {"train", config, "--set", assignment, "--set", "output.runs_dir=" + path_of("runs")});
    for (const std::string threads : {"-1", "1099511627776", "1000"})
        add_case("threads_" + threads, 1, "option 'train.threads' must be in [0, ",
                 {"train", config, "--threads", threads});

    // ---- the data readers, through lumen inspect ----
    {
        std::string npy = std::string("\x93NUMPY\x01\x00", 8);
        std::string header =
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }";
        header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
        header += '\n';
        npy += char(header.size() & 0xFF);
        npy += char(header.size() >> 8);
        write_bytes(path_of("huge.npy"), npy + header);
        add_case("npy_claims_4_tib", 1, "claims more than 64 GiB",
                 {"inspect", path_of("huge.npy")});
        std::string nii(352, '\0');
        const int32_t sizeof_hdr = 348;
        std::memcpy(nii.data(), &sizeof_hdr, 4);
        const int16_t dims[4] = {3, 30000, 30000, 30000};
        std::memcpy(nii.data() + 40, dims, sizeof(dims));
        const int16_t datatype = 16;
        std::memcpy(nii.data() + 70, &datatype, 2);
        std::memcpy(nii.data() + 344, "n+1\0", 4);
        write_bytes(path_of("huge.nii"), nii);
        add_case("nifti_claims_100_tb", 1, "claims more than 16 GiB",
                 {"inspect", path_of("huge.nii")});
        write_bytes(path_of("cut.nii.gz"),
                    std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8) + std::string(20, '\x55'));
        add_case("nifti_bad_gzip", 1, "[nifti]", {"inspect", path_of("cut.nii.gz")});
        std::string fifo_npy = path_of("fifo.npy");
        mkfifo(fifo_npy.c_str(), 0600);
        add_case("fifo_npy", 1, "is a FIFO, not a regular file", {"inspect", fifo_npy});
        write_bytes(path_of("text.png"), "not an image, only text");
        add_case("png_not_an_image", 1, "not a PNG, JPEG, BMP or TGA image",
                 {"convert", path_of("text.png"), path_of("out.safetensors")});
    }

    // ---- datasets ----
    fs::create_directories(path_of("idx"));
    // An IDX header claiming 2^31 x 2^31 images of 1 byte, in a 20-byte file.
    std::string idx = std::string("\x00\x00\x08\x03", 4) + std::string("\x7f\xff\xff\xff", 4) +
                      std::string("\x7f\xff\xff\xff", 4) + std::string("\x00\x00\x00\x1c", 4) +
                      "data";
    for (const char* name : {"train-images-idx3-ubyte", "t10k-images-idx3-ubyte"})
        write_bytes(path_of(std::string("idx/") + name), idx);
    for (const char* name : {"train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"})
        write_bytes(path_of(std::string("idx/") + name), std::string("\x00\x00\x08\x01", 4));
    add_case("idx_claims_too_much", 1, "[idx]",
             {"train", config, "--set", "data.dataset=fashion_mnist", "--set",
              "data.dir=" + path_of("idx")});

    // ---- dataset layouts (lumen data) ----
    // A one-case Decathlon folder with a real 8 x 8 x 4 volume, then hostile keys and files.
    fs::create_directories(path_of("msd/imagesTr"));
    fs::create_directories(path_of("msd/labelsTr"));
    datasets::NiftiHeader header =
        datasets::nifti_header_from_affine({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
    datasets::write_nifti(path_of("msd/imagesTr/a.nii.gz"), zeros({8, 8, 4}), header);
    datasets::write_nifti(path_of("msd/labelsTr/a.nii.gz"), zeros({8, 8, 4}, DType::int32), header);
    write_text("msd/dataset.json",
               R"({"labels": {"0": "background"}, "modality": {"0": "CT"},
                   "training": [{"image": "./imagesTr/a.nii.gz", "label": "./labelsTr/a.nii.gz"}]})");
    const std::string layout_config =
        write_text("msd.json",
                   "{\"data\": {\"dataset\": \"decathlon\", \"dir\": \"" + path_of("msd") + "\"}}");
    add_case("layout_tiny_spacing", 1, "more than the 2^31",
             {"data", layout_config, "--set", "data.spacing=[0.0001, 0.0001, 0.0001]"});
    add_case("layout_huge_patch", 1, "more than the 2^31",
             {"data", layout_config, "--set", "data.patch_size=[65536, 65536, 65536]"});
    add_case("layout_image_size", 1, "applies to image_folder and image_mask only",
             {"data", layout_config, "--set", "data.image_size=[65536, 65536]"});
    fs::create_directories(path_of("deep_msd"));
    write_text("deep_msd/dataset.json", "{\"training\": " + nested(100000) + "}");
    add_case("layout_deep_dataset_json", 1, "nested deeper",
             {"data", layout_config, "--set", "data.dir=" + path_of("deep_msd")});
    fs::create_directories(path_of("fifo_msd"));
    const std::string fifo_json = path_of("fifo_msd/dataset.json");
    mkfifo(fifo_json.c_str(), 0600);
    add_case("layout_fifo_dataset_json", 1, "is a FIFO, not a regular file",
             {"data", layout_config, "--set", "data.dir=" + path_of("fifo_msd")});
    fs::create_directories(path_of("folder/train/a"));
    add_case("layout_image_size_pixels", 1, "more than 2^28 pixels",
             {"data", layout_config, "--set", "data.dataset=image_folder", "--set",
              "data.dir=" + path_of("folder"), "--set", "data.image_size=[65536, 65536]"});
    add_case("layout_huge_resize", 1, "more than the 2^31",
             {"data", layout_config, "--set", "data.resize=[65536, 65536, 65536]"});
    // volume_folder: a manifest row naming a FIFO (never opened: not a regular file).
    fs::create_directories(path_of("vols"));
    const std::string fifo_volume = path_of("vols/fifo.nii.gz");
    mkfifo(fifo_volume.c_str(), 0600);
    write_text("vols/list.csv", "image,label\nfifo.nii.gz,1\n");
    add_case("volume_manifest_fifo", 1, "no regular file",
             {"data", layout_config, "--set", "data.dataset=volume_folder", "--set",
              "data.manifest=" + path_of("vols/list.csv")});
    return 0;
}
