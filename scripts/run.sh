#!/usr/bin/env bash
# The main job: installs what is missing, builds, then runs it. For now the main job is the
# MLP demo (examples/mlp.cpp); it becomes `lumen train config.json` once training lands.
# Usage: bash scripts/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh lumen_mlp
"${BUILD_DIR:-build}/examples/lumen_mlp"
