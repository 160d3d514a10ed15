#!/usr/bin/env bash
# make demo: for now, what dracpu sees of this machine.
set -euo pipefail
build=${1:-build}
exec "$build/dra-agent/dracpu-dra-agent" version
