#!/usr/bin/env bash
# make tsan: prints the command prefix under which ThreadSanitizer binaries run on this kernel
# (nothing, or "setarch <arch> -R"), or fails saying why. TSan's runtime (gcc 12's libtsan2,
# clang 14's) expects the kernel to place mappings inside the ranges it reserves; with a large
# vm.mmap_rnd_bits (32 on some distribution kernels; 28 is x86_64's default) a TSan program dies
# at start with "FATAL: ThreadSanitizer: unexpected memory mapping". Disabling ASLR for the test
# run (setarch -R, inherited by every process a test starts) avoids it; as a last resort, as
# root, vm.mmap_rnd_bits is lowered to 28.
#
#   tsan_aslr.sh BUILD_DIR
set -uo pipefail
dir=$1/tsan-probe
mkdir -p "$dir"
cat >"$dir/probe.cc" <<'CC'
#include <thread>
int shared;
int main() {
  std::thread t([] { __atomic_fetch_add(&shared, 1, __ATOMIC_RELAXED); });
  t.join();
  return 0;
}
CC
"${CXX:-c++}" -fsanitize=thread -pthread -o "$dir/probe" "$dir/probe.cc" || {
  echo "tsan_aslr.sh: cannot build a ThreadSanitizer program with ${CXX:-c++}" >&2
  exit 1
}
if "$dir/probe" 2>"$dir/probe.log"; then exit 0; fi
setarch=(setarch "$(uname -m)" -R)
if "${setarch[@]}" "$dir/probe" 2>>"$dir/probe.log"; then
  echo "tsan_aslr.sh: TSan needs ASLR off on this kernel (vm.mmap_rnd_bits=$(cat /proc/sys/vm/mmap_rnd_bits)); running the tests under ${setarch[*]}" >&2
  echo "${setarch[*]}"
  exit 0
fi
if [ "$(id -u)" = 0 ] && sysctl -qw vm.mmap_rnd_bits=28 && "$dir/probe" 2>>"$dir/probe.log"; then
  echo "tsan_aslr.sh: lowered vm.mmap_rnd_bits to 28 so that TSan programs start" >&2
  exit 0
fi
echo "tsan_aslr.sh: a ThreadSanitizer program does not start on this kernel; see $dir/probe.log" >&2
tail -5 "$dir/probe.log" >&2
exit 1
