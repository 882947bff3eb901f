#!/usr/bin/env bash
# Real photos for scripts/models/detection_set.py, from two Debian packages' sample images
# (no install: apt-get download, then dpkg -x into a scratch folder): darknet's seven test
# photos and scikit-image's colour and grey sample photos. About 7 MB.
#
#   scripts/models/fetch_photos.sh OUT_DIR
set -euo pipefail
out=${1:?usage: fetch_photos.sh OUT_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download darknet python3-skimage >/dev/null 2>&1) ||
  { echo "fetch_photos: apt-get download darknet python3-skimage failed" >&2; exit 1; }
for deb in "$work"/*.deb; do dpkg -x "$deb" "$work/x"; done
mkdir -p "$out"
cp "$work"/x/usr/share/darknet/data/*.jpg "$out"/
skdata="$work/x/usr/lib/python3/dist-packages/skimage/data"
for name in astronaut.png chelsea.png coffee.png motorcycle_left.png motorcycle_right.png \
  grass.png gravel.png brick.png ihc.png camera.png coins.png moon.png rocket.jpg \
  hubble_deep_field.jpg retina.jpg; do
  cp "$skdata/$name" "$out"/
done
echo "fetch_photos: $(ls "$out" | wc -l) photos in $out"
