#!/usr/bin/env bash
# All tests: installs what is missing, builds everything with tests on, runs ctest (Catch2
# suite with the fault-injection tests, `lumen check-vectors` on the committed oracle vectors,
# the hostile-file corpus, the embedding check), then the sanitizer build and its tests
# (scripts/test_sanitize.sh: ASan + UBSan), then lists the source files over 800 lines
# (STYLE.md section 6: listed, not failed). Exits non-zero on any failure.
# Usage: bash scripts/test.sh   (JOBS, BUILD_DIR, LUMEN_CUDA as in build.sh; SANITIZE=0 skips
# the sanitizer build)
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
build_dir=${BUILD_DIR:-build}

bash scripts/setup.sh --test
CMAKE_ARGS="${CMAKE_ARGS:-} -DLUMEN_BUILD_TESTS=ON" bash scripts/build.sh

status=0
ctest --test-dir "$build_dir" --output-on-failure --parallel "${JOBS:-2}" || status=$?
if [ "${SANITIZE:-1}" != 0 ]; then
    bash scripts/test_sanitize.sh || status=$?
fi

# Source files: tracked plus untracked-but-not-ignored ones (a clean clone has only tracked).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files --cached --others --exclude-standard)
else
    files=$(find . -path './build*' -prune -o -path ./.git -prune -o -type f -print \
        | sed 's|^\./||')
fi
long=$(echo "$files" | grep -E '(\.(h|hpp|cpp|cc|cu|cuh|py|sh|cmake)|CMakeLists\.txt)$' \
    | while read -r file; do
          [ -f "$file" ] || continue
          lines=$(wc -l <"$file")
          [ "$lines" -le 800 ] || echo "$file ($lines)"
      done | sort | paste -sd ' ' -) || true
echo "files over 800 lines: ${long:-none}"

echo "test.sh: $([ $status -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
exit $status
