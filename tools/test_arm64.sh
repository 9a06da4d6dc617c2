#!/usr/bin/env bash
# Cross-builds AttnScope for arm64 (aarch64) and runs its tests under qemu-aarch64 (Debian qemu-user): the
# portable kernels' NEON code (fmla, smlal) and the rest against the same references as on x86-64.
# Usage: tools/test_arm64.sh [BUILD_DIR] (default build-arm64). ARM64_TESTS=kernels builds and runs only
# the kernel-dependent suites (tests/CMakeLists.txt ATTNSCOPE_KERNEL_SUITES, ctest label "kernels"; what
# .ci/run does), otherwise every suite but those that start processes (tests/CMakeLists.txt).
# Needs root or sudo: it adds arm64 to dpkg's architectures and installs the cross compiler and Qt 6 for
# arm64 (about 170 packages, 0.5 GB). ARM64_SETUP_ONLY=1 stops after that (.ci/run downloads and installs them
# while the release build compiles, then runs this again: the second time the setup is a check of the stamp).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-arm64}
mkdir -p "$BUILD"
SYSROOT="$(cd "$BUILD" && pwd)/arm64-sysroot"
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ! -f "$SYSROOT/.complete" ]; then
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    g++-aarch64-linux-gnu qemu-user qt6-base-dev:arm64 qt6-svg-dev:arm64 libgl-dev:arm64
  # Not installed but unpacked into the sysroot: libsentencepiece-dev is not Multi-Arch "same" (installing the
  # arm64 one removes the amd64 one), and libqcustomplot-dev:arm64 would pull Qt 5 for arm64.
  mkdir -p "$SYSROOT/debs"
  (cd "$SYSROOT/debs" && apt-get download -qq libsentencepiece-dev:arm64 libsentencepiece0:arm64 \
    libqcustomplot-dev:arm64 libqcustomplot2.1-qt6:arm64 2>&1 | { grep -v "unsandboxed as root" || true; })
  for d in "$SYSROOT"/debs/*.deb; do dpkg -x "$d" "$SYSROOT"; done
  touch "$SYSROOT/.complete"
fi
[ "${ARM64_SETUP_ONLY:-0}" = 1 ] && exit 0
source tools/ccache_env.sh
PKG_CONFIG_LIBDIR="$SYSROOT/usr/lib/aarch64-linux-gnu/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$SYSROOT" \
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE="$(pwd)/tools/arm64-toolchain.cmake" \
  -DATTNSCOPE_ARM64_SYSROOT="$SYSROOT" "${ATTNSCOPE_LAUNCHER[@]}"
if [ "${ARM64_TESTS:-all}" = kernels ]; then
  cmake --build "$BUILD" -j"$(nproc)" --target attnscope_kernel_suites
  cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" -L kernels
else
  cmake --build "$BUILD" -j"$(nproc)"
  cd "$BUILD" && ctest --output-on-failure -j"$(nproc)"
fi
