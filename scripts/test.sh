#!/usr/bin/env bash
# Installs what is missing, builds, prepares the model-test references, runs every test.
# GPU tests (ctest label `gpu`) are reported as skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
export BUILD_DIR

./scripts/setup.sh
./scripts/models/prepare_test_models.sh

cd "$BUILD_DIR"
status=0
ctest --output-on-failure -j"$(nproc)" || status=$?
echo
grep -h '^conformance:' Testing/Temporary/LastTest.log || echo "conformance: no summary (did it run?)"
exit $status
