// The embedding benchmark's program (bench/embed_vs_cli.sh): a program of its own that links
// lumen, as a user's would, and runs the training of `lumen train ARGS...` in process through
// the CLI's command code. Same work as the binary; the script times both on a quiet and a busy
// machine, so any cost of being embedded (idle threads spinning against the program's own
// threads, as OpenMP's default did) shows as a ratio above 1.
// Usage: bench_embed train CONFIG.json [--set key=value ...]
#include <iostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "train/cli/train_command.h"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] != "train") {
        std::cerr << "usage: bench_embed train CONFIG.json [--set key=value ...]\n";
        return 2;
    }
    try {
        return lumen::train::cli::run_train_command({args.begin() + 1, args.end()}, std::cout);
    } catch (const lumen::Error& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
}
