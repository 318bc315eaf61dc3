// The config of the CLI tests' tiny run: a DGViT of width 16 and depth 1 on 7x7 patches, 2
// epochs of 8 updates (128 synthetic training images in batches of 16, 64 test images), a
// loader thread, dropout and a per-step cosine schedule, so that resuming exercises every piece
// of state; one thread, so that results are bit-reproducible.
#pragma once

#include <string>

namespace lumen::testing {

// The config's JSON text; `extra` is appended inside the top-level object (e.g.
// "\"checkpoint\": {\"every_steps\": 3}"), `log_every` sets train.log_every.
inline std::string tiny_config_json(const std::string& name, int seed,
                                    const std::string& extra = "") {
    return R"({
  "name": ")" +
           name + R"(",
  "seed": )" +
           std::to_string(seed) + R"(,
  "data": {"dataset": "synthetic", "batch_size": 16, "train_subset": 128, "test_subset": 64,
           "num_workers": 1},
  "model": {"name": "dgvit", "embed_dim": 16, "depth": 1, "num_heads": 2, "patch_size": 7,
            "drop": 0.1},
  "optim": {"lr": 0.003},
  "schedule": {"name": "cosine", "interval": "step", "warmup": 3},
  "train": {"epochs": 2, "log_every": 2, "threads": 1},
  "output": {"progress": "lines"})" +
           (extra.empty() ? "" : ",\n  " + extra) + "\n}\n";
}

}  // namespace lumen::testing
