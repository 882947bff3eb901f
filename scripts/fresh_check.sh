#!/usr/bin/env bash
# Runs the README's commands in a fresh Debian 12 root, as a new user's machine would:
# nothing from this machine goes in but its apt sources, its CA certificate bundle, its DNS
# configuration and (read-only, where it exists) the CUDA toolkit at /usr/local/cuda. Every
# package the build and the tests use comes from ./scripts/setup.sh run inside the root.
#
#   scripts/fresh_check.sh            fresh root + ./scripts/test.sh inside it
#   scripts/fresh_check.sh --demo     ... and ./scripts/demo.sh after it
#   scripts/fresh_check.sh --keep     leave the root in place afterwards (its path is printed)
#   scripts/fresh_check.sh --cache DIR
#       where downloaded .deb files, apt's lists and npm's cache are kept between runs (default
#       $KILN_FRESH_CACHE, else ~/.cache/kiln-fresh-root; it must lie outside the clone)
#
# The tree checked is this working tree: tracked files and untracked ones git does not
# ignore (so an uncommitted change is checked too). It needs root (mmdebstrap, mount,
# chroot); mmdebstrap is installed on this machine if it is missing.
#
# Exit status: 0 all passed; 1 a step failed (the first failing step is printed last);
# 3 the root could not be made because no package registry answers (nothing was run).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
args=("$@")

demo=0
keep=0
cache=${KILN_FRESH_CACHE:-${HOME:-/root}/.cache/kiln-fresh-root}
while [ $# -gt 0 ]; do
  case "$1" in
    --demo) demo=1 ;;
    --keep) keep=1 ;;
    --cache)
      [ $# -ge 2 ] || { echo "fresh_check: --cache needs a folder" >&2; exit 2; }
      cache=$2
      shift
      ;;
    -h | --help)
      sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "fresh_check: unknown argument '$1' (see --help)" >&2
      exit 2
      ;;
  esac
  shift
done

step="start"
log() { echo "fresh_check: $*"; }
fail() {
  echo "fresh_check: FAILED at step '$step'${1:+: $1}" >&2
  exit 1
}
begin() {
  step=$1
  log "== $step ($(date -u +%H:%M:%S))"
}

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then exec sudo -E "$0" "${args[@]}"; fi
  echo "fresh_check: needs root (mmdebstrap, mount and chroot)" >&2
  exit 1
fi
# In a mount namespace of its own, the root's mounts vanish with this script however it ends
# (the trap below also unmounts them on every exit it sees).
if [ -z "${KILN_FRESH_NS:-}" ] && unshare --mount --propagation private true 2>/dev/null; then
  KILN_FRESH_NS=1 exec unshare --mount --propagation private "$0" "${args[@]}"
fi

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
case "$cache/" in
  "$SRC"/*) echo "fresh_check: the cache '$cache' must lie outside the clone" >&2; exit 2 ;;
esac
mkdir -p "$cache/base" "$cache/apt" "$cache/lists" "$cache/npm"

# --- Does any package registry answer? (a TCP connect to each apt source's host) ---------
apt_source_files() {
  local f
  [ -f /etc/apt/sources.list ] && grep -qE '^[[:space:]]*deb' /etc/apt/sources.list &&
    echo /etc/apt/sources.list
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && echo "$f"
  done
  return 0
}
apt_uris() {  # the URIs of the apt sources, comments left out
  apt_source_files | xargs -r cat | grep -v '^[[:space:]]*#' | grep -oE 'https?://[^ ]+' | sort -u
}
registry_answers() {
  local url host port
  for url in $(apt_uris | grep -oE '(https?)://[^ /]+' | sort -u) \
    https://registry.npmjs.org; do
    host=${url#*://}
    port=80
    [ "${url%%://*}" = https ] && port=443
    case "$host" in *:*) port=${host##*:}; host=${host%%:*} ;; esac
    if timeout 10 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then return 0; fi
  done
  # A proxy may be the only way out.
  [ -n "${http_proxy:-}${https_proxy:-}${HTTP_PROXY:-}${HTTPS_PROXY:-}" ]
}

begin "host tools"
if ! registry_answers; then
  echo "fresh_check: NO PACKAGE REGISTRY ANSWERS (apt sources: $(apt_uris | xargs);" \
    "npm: registry.npmjs.org)." >&2
  echo "fresh_check: the fresh root cannot be made; nothing was run." >&2
  exit 3
fi
if ! command -v mmdebstrap >/dev/null 2>&1; then
  log "installing mmdebstrap on this machine"
  apt-get update -q || fail "apt-get update"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap ||
    fail "apt-get install mmdebstrap"
fi

mapfile -t sources < <(apt_source_files)
[ ${#sources[@]} -gt 0 ] || fail "this machine has no apt sources"

root=$(mktemp -d /var/tmp/kiln-fresh-root.XXXXXX)
mounted=()
cleanup() {
  local rc=$? m
  # Unmount in reverse order; lazily where something still holds a mount.
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    m=${mounted[i]}
    umount -R "$m" 2>/dev/null || umount -R -l "$m" 2>/dev/null || true
  done
  if grep -qF " $root/" /proc/self/mountinfo; then
    echo "fresh_check: something is still mounted under $root; left in place" >&2
  elif [ "$keep" = 1 ]; then
    log "root kept at $root"
  else
    rm -rf --one-file-system "$root"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

begin "make the root"
# The base system's .deb files are kept in $cache/base (sync-in before, sync-out after).
mmdebstrap --variant=apt --mode=root --format=directory \
  --skip=essential/unlink \
  --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
  --setup-hook="sync-in $cache/base /var/cache/apt/archives/" \
  --customize-hook="sync-out /var/cache/apt/archives $cache/base" \
  bookworm "$root" "${sources[@]}" || fail "mmdebstrap bookworm (sources: ${sources[*]})"

begin "fill the root"
# The machine's CA bundle (apt and npm then trust what they trust here). It also goes where
# update-ca-certificates collects local certificates, so installing ca-certificates inside
# the root keeps it.
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs" "$root/usr/local/share/ca-certificates"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  cp /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/ca-certificates/host-bundle.crt"
fi
[ -s "$root/etc/resolv.conf" ] || cp /etc/resolv.conf "$root/etc/resolv.conf"
# The tree: tracked files and untracked ones that git does not ignore.
mkdir -p "$root/kiln"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$SRC" ls-files -z --cached --others --exclude-standard |
    (while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done) |
    tar --null -T - -cf - | tar -xf - -C "$root/kiln" || fail "copy the tree"
  git -C "$SRC" log -1 --format='fresh_check: tree at %h %s' || true
else
  tar --exclude=./build --exclude=./models/cache -cf - . | tar -xf - -C "$root/kiln" ||
    fail "copy the tree"
fi

bind() {  # bind SRC DST [ro]
  mkdir -p "$2"
  mount --rbind "$1" "$2"
  mount --make-rslave "$2"
  mounted+=("$2")
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount -t sysfs sysfs "$root/sys" && mounted+=("$root/sys")
bind /dev "$root/dev"
mount -t tmpfs -o size=50% tmpfs "$root/tmp" && mounted+=("$root/tmp")
bind "$cache/apt" "$root/var/cache/apt/archives"
# The package lists too: apt-get update then only asks whether they changed. (mmdebstrap
# fetches its own lists for the base system, about 16 MB, on every run.)
bind "$cache/lists" "$root/var/lib/apt/lists"
bind "$cache/npm" "$root/root/.npm"
if [ -d /usr/local/cuda ]; then
  bind "$(readlink -f /usr/local/cuda)" "$root/usr/local/cuda" ro
  log "CUDA toolkit mounted read-only from $(readlink -f /usr/local/cuda)"
fi
# apt keeps what it downloads (the cache above), and the base's debs seed it.
echo 'APT::Keep-Downloaded-Packages "true";' >"$root/etc/apt/apt.conf.d/90kiln-keep-debs"
cp -n "$cache/base/"*.deb "$cache/apt/" 2>/dev/null || true

in_root() {  # a clean environment: nothing of this shell's but the CA bundle's path
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/host-bundle.crt \
    /bin/bash -c "cd /kiln && $1"
}

begin "./scripts/setup.sh"
in_root ./scripts/setup.sh || fail
begin "./scripts/test.sh"
in_root ./scripts/test.sh || fail
if [ "$demo" = 1 ]; then
  begin "./scripts/demo.sh"
  in_root ./scripts/demo.sh || fail
fi
step="done"
log "all steps passed in a fresh Debian 12 root (cache: $cache)"
