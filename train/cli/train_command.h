// `lumen train` and `lumen eval`: argument parsing and the run setup around train::Trainer
// (config, seed, threads, device, run directory, resume).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace lumen::cli {

// lumen train [CONFIG.json] [--set key=value ...] [--resume RUN_DIR] [--device cpu|cuda]
//             [--threads N]
// Trains and prints the summary table; returns the exit status. Without --resume the run goes
// to <output.runs_dir>/<name>, or <name>-2, -3, ... when that exists. With --resume the config
// is CONFIG.json when given, else the one stored in the run's latest checkpoint.
// Throws lumen::Error for bad arguments, configs or data.
int run_train_command(const std::vector<std::string>& args, std::ostream& out);

// lumen eval RUN_DIR|CHECKPOINT [--split test|train] [--device cpu|cuda] [--threads N]
// Evaluates the latest checkpoint of a run (or the given checkpoint file) with the config
// stored in it and prints accuracy and loss.
int run_eval_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace lumen::cli
