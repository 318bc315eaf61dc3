// The `lumen` command line: subcommands parse their flags here and call the library or the
// runner (check_vectors.h). This is the one place that catches lumen::Error: it prints
// "error: <message>" to stderr and exits with status 1; in a data-parallel run it names the rank
// and ends the other ranks too (MPI_Abort), which would otherwise wait for it forever.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "conformance/check_vectors.h"
#include "core/device.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/storage.h"
#include "train/cli/convert_command.h"
#include "train/cli/data_command.h"
#include "train/cli/eval_command.h"
#include "train/cli/models_command.h"
#include "train/cli/train_command.h"
#include "train/dist/process_group.h"

namespace {

constexpr const char* kVersion = "0.1.0";

constexpr const char* kUsage =
    "usage: lumen <command> [options]\n"
    "\n"
    "commands:\n"
    "  check-vectors PATH... [--device cpu|cuda]\n"
    "                 run oracle vectors (*.safetensors files, or directories searched\n"
    "                 recursively) and compare outputs and gradients with their tolerances;\n"
    "                 exits non-zero if any fails or none is found\n"
    "  train [CONFIG.json] [--set key=value ...] [--resume RUN_DIR] [--device cpu|cuda]\n"
    "        [--threads N]\n"
    "                 train a model; writes runs/<name>/ (config.json, metrics.jsonl,\n"
    "                 plot.svg, summary.json, checkpoints/, model.safetensors)\n"
    "  eval RUN_DIR|CHECKPOINT [--split test|train] [--device cpu|cuda] [--threads N]\n"
    "                 evaluate a run's latest checkpoint (or a checkpoint file): the task's\n"
    "                 metrics, and per case in RUN_DIR/eval_<split>.csv\n"
    "  predict RUN_DIR|CHECKPOINT INPUT... --out DIR [--device cpu|cuda] [--threads N]\n"
    "                 predict files with a run's best checkpoint: PNG or NIfTI maps,\n"
    "                 or class probabilities in DIR/predictions.csv\n"
    "  convert IN OUT [--keep-dtype]\n"
    "                 convert between NIfTI (.nii, .nii.gz), NumPy (.npy, .npz) and\n"
    "                 safetensors (see 'lumen convert --help')\n"
    "  inspect FILE   shape, dtype, spacing, affine, orientation and value statistics\n"
    "  data CONFIG.json [--set key=value ...] [--split S] [--count N] [--out DIR]\n"
    "                 read a config's dataset layout and show (or write) a few examples\n"
    "                 after its transforms\n"
    "  make-demo NAME --out DIR [--seed N]\n"
    "                 write a demo dataset: shapes2d, organs3d, fmnist_denoise, bags, text\n"
    "  info           version, build options, CUDA devices and CPU threads\n"
    "  models         registered models and their config keys with defaults\n"
    "  --help, -h     this message\n";

bool is_help(const std::string& arg) { return arg == "--help" || arg == "-h"; }

int run_info(const std::vector<std::string>& args) {
    for (const std::string& arg : args) {
        if (is_help(arg)) {
            std::cout << "usage: lumen info\n";
            return 0;
        }
        LUMEN_FAIL("lumen", "unknown argument '", arg, "' for 'info'");
    }
    std::cout << "lumen " << kVersion << "\n"
              << "build: CUDA backend " << (lumen::cuda_built() ? "linked" : "not linked")
              << "; CPU code " << lumen::cpu_code_info()
              << "; data-parallel: " << lumen::train::dist::backends_linked() << "\n"
              << "CUDA devices: " << lumen::cuda_device_count() << "\n";
    for (int device = 0; device < lumen::cuda_device_count(); ++device) {
        lumen::cuda::MemoryStats stats = lumen::cuda::memory_stats(device);
        std::cout << "  cuda:" << device << " memory: " << stats.allocated << " bytes allocated, "
                  << stats.reserved << " reserved (peak " << stats.peak_reserved << "), "
                  << stats.segments << " cudaMalloc calls\n";
    }
    lumen::CpuMemoryStats cpu = lumen::cpu_memory_stats();
    std::cout << "CPU memory: " << cpu.allocated << " bytes allocated (peak " << cpu.peak_allocated
              << "), " << cpu.cached << " cached\n"
              << "CPU threads: " << lumen::get_num_threads() << "\n";
    return 0;
}

int run_check_vectors(const std::vector<std::string>& args) {
    std::vector<std::string> paths;
    lumen::Device device = lumen::Device::cpu();
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (is_help(arg)) {
            std::cout << "usage: lumen check-vectors PATH... [--device cpu|cuda]\n";
            return 0;
        }
        if (arg == "--device" || arg.rfind("--device=", 0) == 0) {
            bool inline_value = arg != "--device";
            LUMEN_CHECK(inline_value || i + 1 < args.size(), "lumen",
                        "--device needs a value (cpu or cuda)");
            device = lumen::Device::parse(inline_value ? arg.substr(9) : args[++i]);
        } else if (arg.size() > 1 && arg[0] == '-') {
            LUMEN_FAIL("lumen", "unknown option '", arg, "' for 'check-vectors'");
        } else {
            paths.push_back(arg);
        }
    }
    LUMEN_CHECK(!paths.empty(), "lumen", "check-vectors needs a file or directory PATH");
    lumen::conformance::CheckSummary summary =
        lumen::conformance::check_vectors(paths, device, std::cout);
    return summary.failed > 0 ? 1 : 0;
}

int run(const std::vector<std::string>& args) {
    LUMEN_CHECK(!args.empty(), "lumen", "missing command; run 'lumen --help'");
    const std::string& command = args[0];
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (is_help(command) || command == "help") {
        std::cout << kUsage;
        return 0;
    }
    if (command == "check-vectors") return run_check_vectors(rest);
    if (command == "info") return run_info(rest);
    if (command == "train") return lumen::train::cli::run_train_command(rest, std::cout);
    if (command == "eval") return lumen::train::cli::run_eval_command(rest, std::cout);
    if (command == "predict") return lumen::train::cli::run_predict_command(rest, std::cout);
    if (command == "convert") return lumen::train::cli::run_convert_command(rest, std::cout);
    if (command == "data") return lumen::train::cli::run_data_command(rest, std::cout);
    if (command == "inspect") return lumen::train::cli::run_inspect_command(rest, std::cout);
    if (command == "make-demo") return lumen::train::cli::run_make_demo_command(rest, std::cout);
    if (command == "models") {
        LUMEN_CHECK(rest.empty() || is_help(rest[0]), "lumen", "'models' takes no arguments, got '",
                    rest.empty() ? "" : rest[0], "'");
        lumen::train::cli::print_models(std::cout);
        return 0;
    }
    LUMEN_FAIL("lumen", "unknown command '", command, "'; run 'lumen --help'");
}

// Prints the error; with several ranks names this one and ends the job.
int fail(const char* what) {
    lumen::train::dist::ProcessGroup* group = lumen::train::dist::current_group();
    if (!group || group->world_size() == 1) {
        std::cerr << "error: " << what << "\n";
        return 1;
    }
    // One write(2) call: mpirun forwards each rank's stderr in the chunks it was written, and
    // its abort banner must not land inside this line.
    const std::string line = "error: rank " + std::to_string(group->rank()) + " of " +
                             std::to_string(group->world_size()) + ": " + what + "\n";
    for (size_t done = 0; done < line.size();) {
        const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    group->abort(1);
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const std::exception& e) {  // lumen::Error and the standard library's
        return fail(e.what());
    }
}
