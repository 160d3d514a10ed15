#!/bin/sh
# build-local.sh [BUILD_DIR] [TAG]: the Dockerfile's runtime stage without its build stage and
# without pulling any base image: collects the binaries of an existing build (default build/,
# made by `make build` on Debian 12) with collect.sh and commits them as a FROM-scratch image with
# buildah. For machines with no registry access; the Dockerfile is the normal way.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
tag=${2:-localhost/dracpu:v0.1.0}
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
"$here/collect.sh" "$tree" "$build/dra-agent/dracpu-dra-agent" "$build/nri-agent/dracpu-nri-agent" \
  "$build/shm-schema/dracpu-shm"
ctr=$(buildah from scratch)
buildah copy "$ctr" "$tree/" /
buildah config --env PATH=/usr/local/bin --entrypoint '["/usr/local/bin/dracpu-dra-agent"]' "$ctr"
buildah commit --rm "$ctr" "$tag"
echo "built $tag; load it into kind with: buildah push $tag docker-archive:/tmp/dracpu.tar && kind load image-archive /tmp/dracpu.tar"
