#!/usr/bin/env bash
# The installed package, as another project uses it: installs the build into a fresh prefix,
# builds examples/ against it with find_package(kiln) out of the tree, and runs classify on a
# 28×28 test image with the Fashion-MNIST model, whose classes must be those `kiln run`
# gives the same image (same probabilities to 4 decimals).
#
#   tests/install/check_package.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work="$build/install-check"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/include/kiln/engine.h"
ls "$work/prefix"/lib*/cmake/kiln/kilnConfig.cmake > /dev/null
cmake -S "$src/examples" -B "$work/examples" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/examples" > "$work/build.log"
# The example links the installed library, not the build tree's. (ldd's output is taken whole
# first: `ldd | grep -q` fails under pipefail when grep stops reading early.)
libs=$(ldd "$work/examples/classify")
grep -q "$work/prefix/.*libkiln.so" <<< "$libs" ||
  { echo "classify does not load the installed libkiln:"; echo "$libs"; exit 1; }

# A 28×28 grey PNG of a bright diagonal band (standard library only).
python3 - "$work/band.png" <<'PY'
import struct, sys, zlib
w = h = 28
rows = b"".join(b"\0" + bytes(250 if abs(x - y) < 6 else 20 for x in range(w)) for y in range(h))
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
PY
model="$src/models/fashion_mnist.onnx"
"$work/examples/classify" "$model" "$work/band.png" --top 3 | tee "$work/classify.txt"
"$build/kiln" run "$model" -i "$work/band.png" | tee "$work/kiln_run.txt"
# classify: "  class    6  0.5224"; kiln run: "   1.  52.2447%  class 6    Shirt". The same
# classes in the same order, the probabilities within 0.01%.
awk 'FNR == NR { if ($1 == "class") { c[++n] = $2; p[n] = $3 } next }
     $3 == "class" { ++m; sub("%", "", $2); k[m] = $4; q[m] = $2 }
     END {
       if (n != 3) { print "classify printed " n " classes, not 3"; exit 1 }
       for (i = 1; i <= n; ++i) {
         d = p[i] * 100 - q[i]
         if (c[i] != k[i] || d > 0.01 || d < -0.01) {
           print "rank " i ": classify says class " c[i] " (" p[i] "), kiln run class " k[i] " (" q[i] "%)"
           exit 1
         }
       }
     }' "$work/classify.txt" "$work/kiln_run.txt"
echo "installed package: ok"
