# Sourced by the build scripts (tools/test.sh, test_sanitized.sh, test_arm64.sh, fuzz.sh, test_package.sh) from the
# project root: compiles through ccache when it is installed (tools/install_deps.sh installs it), else directly.
# The cache stays outside the clone (ccache's default ~/.cache/ccache, or CCACHE_DIR when set) and paths are
# taken relative to the clone (CCACHE_BASEDIR), so a fresh clone or a new build folder on the same machine hits
# what another compiled. The sloppiness lets the compiles that use the tests' precompiled headers be cached.
# Sets ATTNSCOPE_LAUNCHER: the cmake arguments naming (or clearing) the compiler launcher.
if command -v ccache > /dev/null 2>&1; then
  export CCACHE_BASEDIR="$PWD"
  export CCACHE_NOHASHDIR=1 # -g builds: the build folder's path out of the hash, so clones share them too
  export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
  # Every compile that uses a precompiled header makes ccache hash the .gch (about 280 MB for the suites'): with the
  # inode cache it is hashed once per build, not once per file. On the model library, the test support and 15 suites
  # (docs/development.md#ci-time) a cold build took 515 s against 558 s without it, a warm one 60 s against 159 s.
  export CCACHE_INODECACHE=1
  # room for the release, sanitizer, arm64 and fuzz builds together (ccache keeps 5 GB unless told)
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-12G}"
  ATTNSCOPE_LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
else
  ATTNSCOPE_LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER= -DCMAKE_CXX_COMPILER_LAUNCHER=)
fi
