#!/usr/bin/env bash
# build.sh BUILD_DIR [--context-only]: `make image` (docs/operations.md, "Image").
#
#  1. The tag is localhost/dracpu:v<the dra-agent's --version> ($IMAGE overrides it); it must
#     be the chart's default image reference (deploy/render.py with default values), else fail.
#  2. The build context BUILD_DIR/image-context: the three binaries of BUILD_DIR (a Debian 12
#     `make build`), stripped, and their runtime packages (runtime-packages.sh).
#     --context-only stops here (for docker or podman with a registry's base, see Dockerfile).
#  3. The base: $IMAGE_BASE when set (a registry's Debian 12), else base.sh's debootstrap base.
#  4. buildah build of deploy/image/Dockerfile, chroot isolation, as root.
#  5. Inside the image (buildah run, chroot isolation): --version of each binary (must be the
#     tag's version), ldd of each (no library missing) and `dracpu-dra-agent gatherinfo`.
#  6. Prints the image's size.
# Where buildah cannot run and IMAGE_ALLOW_SUBSET=1 (.ci/run): a subset, printed as such: as
# root, the base chroot plus the binaries in a temp folder with step 5 chrooted in it; without
# root, steps 1 and 2 and the binaries' --version on the host. No image is built then.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || {
  echo "usage: $0 BUILD_DIR [--context-only]" >&2
  exit 2
}
build=$(cd "$1" && pwd)
mode=${2:-image}
binaries=(dra-agent/dracpu-dra-agent nri-agent/dracpu-nri-agent shm-schema/dracpu-shm)
start=$SECONDS

say() { echo "make image: $*"; }
die() {
  echo "make image: ERROR: $*" >&2
  exit 1
}

# ---- 1. the tag and the chart
for b in "${binaries[@]}"; do [ -x "$build/$b" ] || die "$build/$b missing (make build first)"; done
version=$("$build/dra-agent/dracpu-dra-agent" --version | awk '{print $2}')
default_tag=localhost/dracpu:v$version
tag=${IMAGE:-$default_tag}
chart_images=$(python3 "$root/deploy/render.py" | python3 -c '
import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d.get("kind") == "DaemonSet":
        for c in d["spec"]["template"]["spec"]["containers"]:
            print(c["image"])' | sort -u)
[ "$chart_images" = "$default_tag" ] ||
  die "the chart's default image ($(echo $chart_images)) is not $default_tag: Chart.yaml appVersion \
and values.yaml image.repository must name what make image builds"
say "chart default image $chart_images = the binaries' version"
[ "$tag" = "$default_tag" ] ||
  say "IMAGE=$tag is not the chart's default: install with --set image.repository=${tag%:*} --set image.tag=${tag##*:}"

# ---- 2. the build context
ctx=$build/image-context
rm -rf "$ctx"
mkdir -p "$ctx/bin"
for b in "${binaries[@]}"; do install -m 0755 -s "$build/$b" "$ctx/bin/"; done
"$here/runtime-packages.sh" "${binaries[@]/#/$build/}" >"$ctx/runtime-packages"
packages=$(tr '\n' ' ' <"$ctx/runtime-packages")
say "context $ctx: $(ls "$ctx/bin" | tr '\n' ' ')($(du -sh "$ctx/bin" | cut -f1)); runtime packages: $packages"
if [ "$mode" = --context-only ]; then
  say "build it with: docker build --build-arg BASE=docker.io/library/debian:12-slim --build-arg VERSION=$version -f deploy/image/Dockerfile -t $tag $ctx"
  exit 0
fi

where="inside the image"
# The checks of step 5; "$@" runs a command inside the image (or the subset's tree).
check_inside() {
  local b name out
  for b in "${binaries[@]}"; do
    name=${b##*/}
    out=$("$@" "/usr/local/bin/$name" --version) || die "$name --version failed $where"
    [ "$out" = "$name $version" ] || die "$name --version $where says '$out', not '$name $version'"
    echo "  $out"
    if "$@" ldd "/usr/local/bin/$name" | grep "not found"; then
      die "$name $where lacks the libraries above"
    fi
  done
  say "ldd: every library of the three binaries is in the image"
  out=$("$@" /usr/local/bin/dracpu-dra-agent gatherinfo --format summary --no-agent) ||
    die "dracpu-dra-agent gatherinfo failed $where"
  say "dracpu-dra-agent gatherinfo --format summary --no-agent, $where (this machine's topology):"
  sed 's/^/  /' <<<"$out"
}

# ---- buildah usable? (overlay storage where it works, else vfs)
buildah_error=
if [ -n "${DRACPU_IMAGE_NO_BUILDAH:-}" ]; then
  buildah_error="DRACPU_IMAGE_NO_BUILDAH is set (to try the subset)"
elif [ "$(id -u)" != 0 ]; then
  buildah_error="not root (make image runs buildah as root, chroot isolation)"
elif ! command -v buildah >/dev/null; then
  buildah_error="buildah is not installed"
elif ! err=$(buildah info 2>&1 >/dev/null); then
  if STORAGE_DRIVER=vfs buildah info >/dev/null 2>&1; then
    export STORAGE_DRIVER=vfs
    say "storage driver vfs (the default one fails here: $(head -1 <<<"$err"))"
  else
    buildah_error="buildah info fails: $(head -1 <<<"$err")"
  fi
fi

if [ -n "$buildah_error" ]; then
  [ "${IMAGE_ALLOW_SUBSET:-0}" = 1 ] || die "buildah cannot run here: $buildah_error"
  say "SUBSET: buildah cannot run here ($buildah_error): NO IMAGE IS BUILT; checking what can be checked"
  if [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null; then
    where="in the image's tree"
    base_dir=$("$here/base.sh" --chroot "$packages")
    tree=$(mktemp -d "$build/image-tree.XXXXXX")
    trap 'rm -rf "$tree"' EXIT
    cp -a "$base_dir/." "$tree/"
    cp "$ctx"/bin/* "$tree/usr/local/bin/"
    in_tree() { unshare -m sh -c 'mount --rbind /sys "$0/sys" && mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$tree" "$@"; }
    check_inside in_tree
    say "SUBSET done: the image's tree (base chroot + binaries, $(du -sh "$tree" | cut -f1)) checked chrooted; no image built ($((SECONDS - start)) s)"
  else
    for b in "${binaries[@]}"; do "$build/$b" --version; done
    say "SUBSET done: chart, context and the binaries on the host only (no root or debootstrap: no base, no tree, no image)"
  fi
  exit 0
fi

# ---- 3. the base
if [ -n "${IMAGE_BASE:-}" ]; then
  base=$IMAGE_BASE pull=(--pull)
  say "base $base (registry)"
else
  base=$("$here/base.sh" "$packages") pull=(--pull=never)
  say "base $base (debootstrap, $(buildah images --format '{{.Size}}' "$base" | head -1))"
fi

# ---- 4. build
old_id=$(buildah images --quiet --no-trunc "$tag" 2>/dev/null | head -1 || true)
buildah build --quiet --isolation chroot "${pull[@]}" --build-arg "BASE=$base" \
  --build-arg "VERSION=$version" -f "$here/Dockerfile" -t "$tag" "$ctx" >/dev/null
new_id=$(buildah images --quiet --no-trunc "$tag" | head -1)
# The image this tag named before is no longer needed (each run would leave one behind).
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then buildah rmi "$old_id" >/dev/null 2>&1 || true; fi
say "built $tag (${new_id#sha256:})"

# ---- 5. inside the image
ctr=$(buildah from --pull=never "$tag")
trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
in_image() { buildah run --isolation chroot "$ctr" -- "$@"; }
check_inside in_image

# ---- 6. size
say "$tag: $(buildah images --format '{{.Size}}' "$tag" | head -1) (base $base: \
$(buildah images --format '{{.Size}}' "$base" | head -1)); done in $((SECONDS - start)) s"
say "load it into kind: buildah push $tag docker-archive:/tmp/dracpu.tar && kind load image-archive /tmp/dracpu.tar"
