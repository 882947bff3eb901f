#!/usr/bin/env bash
# Installs what is missing, builds, prepares the model-test references, runs every test.
# GPU tests (ctest label `gpu`) are reported as skipped on a machine without a GPU.
#
#   ./scripts/test.sh                  Release build in build/, every test
#   SANITIZE=1 ./scripts/test.sh       ASan + UBSan build (RelWithDebInfo, CUDA off) in
#                                      build-sanitize/, the CPU tests under it; by hand, not
#                                      in CI (it doubles the build time)
#   ZOO=full ./scripts/test.sh         also the whole model zoo on the CPU (ctest label
#                                      zoo_full: every torchvision model; an hour or more)
#   extra arguments go to ctest, e.g. ./scripts/test.sh -R DnnlConv
set -euo pipefail
cd "$(dirname "$0")/.."
ctest_args=()
if [ "${SANITIZE:-0}" = "1" ]; then
  BUILD_DIR=${BUILD_DIR:-build-sanitize}
  export BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
  export KILN_CMAKE_ARGS="-DKILN_SANITIZE=ON -DKILN_WITH_CUDA=OFF ${KILN_CMAKE_ARGS:-}"
  # Any report fails the test that made it; leaks are reported at exit.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1:allocator_may_return_null=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
BUILD_DIR=${BUILD_DIR:-build}
export BUILD_DIR
# The zoo's small tier (label zoo_ci) always runs; the rest of it only when asked.
excluded=()
[ "${SANITIZE:-0}" = "1" ] && excluded+=(gpu)
[ "${ZOO:-ci}" = "full" ] || excluded+=(zoo_full)

./scripts/setup.sh
./scripts/models/prepare_test_models.sh

cd "$BUILD_DIR"
status=0
if [ ${#excluded[@]} -gt 0 ]; then
  ctest_args+=(-LE "^($(IFS='|'; echo "${excluded[*]}"))\$")
fi
ctest --output-on-failure -j"$(nproc)" "${ctest_args[@]}" "$@" || status=$?
echo
grep -h '^conformance:' Testing/Temporary/LastTest.log || echo "conformance: no summary (did it run?)"
exit $status
