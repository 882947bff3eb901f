#!/usr/bin/env bash
# The kiln demo: installs what is missing and builds (scripts/setup.sh, into build/), then
# classifies the 10,000 Fashion-MNIST test images with the shipped model.
#   ./scripts/demo.sh                 extra arguments go to `kiln demo` (e.g. --batch 500)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
export BUILD_DIR

./scripts/setup.sh
exec "$BUILD_DIR/kiln" demo "$@"
