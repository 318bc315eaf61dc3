#!/usr/bin/env bash
# Installs the Debian 12 packages that lumen needs (tools, libraries, the Fashion-MNIST data),
# only those missing, so a second run does nothing. `--test` adds what the tests compare the
# readers against (NumPy, nibabel, Pillow; never used by lumen itself) and OpenMPI, which the
# data-parallel tests launch with mpirun (lumen builds without it); `--bench` adds what
# bench/ compares against (PyTorch, NumPy, OpenBLAS). CUDA is not a Debian package: install it
# at /usr/local/cuda. Usage: bash scripts/setup.sh [--test] [--bench]
set -euo pipefail

build_packages=(build-essential cmake ccache pkg-config libeigen3-dev nlohmann-json3-dev catch2
                libstb-dev zlib1g-dev)
# The data the main job and the tests train on (/usr/share/datasets/fashion-mnist).
data_packages=(dataset-fashion-mnist)
test_packages=(python3 python3-numpy python3-nibabel python3-pil openmpi-bin libopenmpi-dev)
bench_packages=(python3-torch python3-numpy libopenblas0-pthread)

wanted=("${build_packages[@]}" "${data_packages[@]}")
for arg in "$@"; do
    case "$arg" in
        --test) wanted+=("${test_packages[@]}") ;;
        --bench) wanted+=("${bench_packages[@]}") ;;
        -h | --help) sed -n '2,7p' "$0"; exit 0 ;;
        *) echo "setup.sh: unknown argument '$arg' (expected --test or --bench)" >&2; exit 2 ;;
    esac
done

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    echo "setup.sh: not a Debian system; install these yourself: ${wanted[*]}" >&2
    exit 0
fi

missing=()
for package in "${wanted[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
    [ "$status" = installed ] || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "setup.sh: all ${#wanted[@]} packages are installed"
    exit 0
fi

# Root installs directly. Otherwise sudo; without a terminal (CI) sudo must not wait for a
# password, so it fails at once instead of hanging.
as_root=()
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
        echo "setup.sh: need root or sudo to install: ${missing[*]}" >&2
        exit 1
    fi
    as_root=(sudo)
    [ -t 0 ] || as_root=(sudo -n)
fi

echo "setup.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
