#!/usr/bin/env bash
# The main job: installs what is missing (scripts/setup.sh: build tools, libraries and the
# Fashion-MNIST package), builds the `lumen` binary, then trains the quickstart model:
# `lumen train configs/quickstart.json`, a small DGViT on Fashion-MNIST (about 2-3 minutes on two
# CPU cores, about 88% test accuracy). It prints a progress line every 50 steps, a line per
# epoch, then a summary table; results go to runs/quickstart/ (runs/quickstart-2, ... when it
# exists). Extra arguments are passed to `lumen train` (e.g. --set train.epochs=10).
# Usage: bash scripts/run.sh [lumen train options]
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh lumen_cli
"${BUILD_DIR:-build}/lumen" train configs/quickstart.json "$@"
