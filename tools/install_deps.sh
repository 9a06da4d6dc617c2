#!/usr/bin/env bash
# Installs the Debian 12 packages AttnScope needs to build, test and run (only those missing).
# Needs root or sudo. Used by tools/run.sh, tools/test.sh and .ci/run. Extra packages may be named as
# arguments (tools/fuzz.sh: clang and its libFuzzer runtime).
set -euo pipefail
# qemu-user: the tests run the binary as older CPUs (no AVX-512, no AVX) would (tests/core/tst_cli_kernels.cpp)
# libsentencepiece-dev: reading tokenizer.model; sentencepiece: spm_train, which the tests use to make one
# libminizip-dev: Gemma Scope's params.npz; libyaml-cpp-dev: circuit-tracer's config.yaml; zlib1g-dev: Neuronpedia's .jsonl.gz labels
# libqt6sql6-sqlite: Qt SQL's QSQLITE driver, for the feature-contexts database (model/analysis/features/context_store.h)
# ccache: the build scripts compile through it when it is there (tools/ccache_env.sh); the build works without it
PKGS=(cmake g++ make pkg-config qt6-base-dev qt6-svg-dev libqcustomplot-dev libeigen3-dev
      libgl-dev fonts-dejavu-core qemu-user libsentencepiece-dev sentencepiece
      libminizip-dev libyaml-cpp-dev zlib1g-dev libqt6sql6-sqlite ccache "$@")
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "Installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
