// `lumen train`: argument parsing and the run setup around train::Trainer (config, seed,
// threads, device, run directory, resume), and the pieces `lumen eval` and `lumen predict`
// (eval_command.h) share with it.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/device.h"
#include "nn/options.h"
#include "train/config.h"

namespace lumen::train::cli {

// lumen train [CONFIG.json] [--set key=value ...] [--resume RUN_DIR] [--device cpu|cuda]
//             [--threads N]
// Trains and prints the summary table; returns the exit status. Without --resume the run goes
// to <output.runs_dir>/<name>, or <name>-2, -3, ... when that exists. With --resume the config
// is CONFIG.json when given, else the one stored in the run's latest checkpoint.
// Throws lumen::Error for bad arguments, configs or data.
int run_train_command(const std::vector<std::string>& args, std::ostream& out);

// ---- what `lumen train`, `lumen eval` and `lumen predict` share ----

struct Arguments {
    std::vector<std::string> positional;
    std::vector<std::string> sets;
    std::optional<std::string> resume, device, threads, split, out, checkpoint, profile;
    bool help = false;
};
// Flags take their value as the next argument or after '='; throws [lumen] for a flag not in
// `flags` or without a value.
Arguments parse_arguments(const std::vector<std::string>& args, const std::string& command,
                          const std::vector<std::string>& flags);
// --set, --device, --threads and --profile override the config's keys.
void apply_flags(const Arguments& a, train::RawConfig& raw);
// Threads and device from a resolved config; throws [lumen] for CUDA without a device.
Device setup_runtime(const nn::Options& config);
// The device of this rank: under mpirun, "cuda" means the GPU of its local rank on its machine
// (local rank modulo the GPU count, torchrun's LOCAL_RANK convention); else `device`.
Device rank_device(Device device);
// The newest valid checkpoint of a run; each damaged newer one is named in a warning on `out`.
std::string latest_checkpoint(const std::string& run_dir, std::ostream& out);

}  // namespace lumen::train::cli
