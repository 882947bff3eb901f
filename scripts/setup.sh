#!/usr/bin/env bash
# Installs every Debian package kiln needs (idempotent), then configures and builds.
#   ./scripts/setup.sh            install + build (Release) into build/
#   KILN_SKIP_BUILD=1 ./scripts/setup.sh   install only
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
  build-essential cmake pkg-config ninja-build
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libgtest-dev libgmock-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libstb-dev libturbojpeg0-dev libdnnl-dev ocl-icd-opencl-dev
  libcpp-httplib-dev libgrpc++-dev protobuf-compiler-grpc python3-grpcio python3-grpc-tools
  python3 python3-numpy python3-onnx python3-torch python3-torchvision
  dataset-fashion-mnist
  chromium
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

# Node.js (for the ONNX Runtime peer): use the machine's own if it has one.
if ! command -v npm >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends nodejs npm
fi

# The tests written for Node.js (tests/node: the deploy/ manifests' schemas, the live page in
# Chromium), exactly as package-lock.json pins them.
if [ ! -d tests/node/node_modules/playwright-core ] || [ tests/node/package-lock.json -nt tests/node/node_modules ]; then
  (cd tests/node && npm ci --prefer-offline --no-audit --no-fund)
fi

if [ "${KILN_SKIP_BUILD:-0}" != "1" ]; then
  BUILD_DIR=${BUILD_DIR:-build}
  # KILN_CMAKE_ARGS: extra configure arguments (scripts/test.sh passes the sanitizer build's).
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} ${KILN_CMAKE_ARGS:-}
  cmake --build "$BUILD_DIR" -j"$(nproc)"
fi
