#!/usr/bin/env bash
# One entry point for a fresh machine: installs what is missing (Debian packages), configures, builds, then
#   ./build.sh demo    runs `culprit demo` (a real GPU if there is one, else the simulated driver)
#   ./build.sh test    runs the whole CPU test suite (CTest)
#   ./build.sh         only builds
# BUILD_DIR (default: build) and JOBS (default: all cores) may be set in the environment.
set -euo pipefail
cd "$(dirname "$0")"
what=${1:-build}
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

need_pkgs=()
have() { command -v "$1" >/dev/null 2>&1; }
have cmake || need_pkgs+=(cmake)
have gcc || need_pkgs+=(gcc)
have g++ || need_pkgs+=(g++)
have make || need_pkgs+=(make)
have python3 || need_pkgs+=(python3)
have addr2line || need_pkgs+=(binutils)
{ [ -e /usr/include/libunwind.h ] || [ -e "/usr/include/$(uname -m)-linux-gnu/libunwind.h" ]; } || need_pkgs+=(libunwind-dev)
# The launcher tests (tests/fake/launcher_cases.py) run real mpirun and srun, and skip without them.
opt_pkgs=()
if [ "$what" = test ]; then
  python3 -c 'import pytest' >/dev/null 2>&1 || need_pkgs+=(python3-pytest)
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3-venv)  # the pip install test
  have clang-format || need_pkgs+=(clang-format)  # the style test (style_format)
  have mpirun || opt_pkgs+=(openmpi-bin)
  [ -x /usr/sbin/munged ] || opt_pkgs+=(munge)
  [ -x /usr/sbin/slurmctld ] || opt_pkgs+=(slurmctld)
  [ -x /usr/sbin/slurmd ] || opt_pkgs+=(slurmd)
  have srun || opt_pkgs+=(slurm-client)
fi

# apt-get install without starting the daemons a package brings (munge, slurmctld, slurmd): the tests start
# their own, and a machine without systemd would keep the others running.
quiet_install() {
  local guard="" rc=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && guard=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null || rc=$?
  if [ -n "$guard" ]; then rm -f /usr/sbin/policy-rc.d; fi
  return $rc
}

if [ ${#need_pkgs[@]} -gt 0 ] || [ ${#opt_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && have apt-get; then
    apt-get update -qq >/dev/null
    if [ ${#need_pkgs[@]} -gt 0 ]; then
      echo "build.sh: installing ${need_pkgs[*]}"
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
    fi
    if [ ${#opt_pkgs[@]} -gt 0 ]; then
      echo "build.sh: installing ${opt_pkgs[*]} (for the launcher tests)"
      quiet_install "${opt_pkgs[@]}" ||
        echo "build.sh: could not install ${opt_pkgs[*]}; the launcher tests will be skipped" >&2
    fi
  elif [ ${#need_pkgs[@]} -gt 0 ]; then
    echo "build.sh: please install: ${need_pkgs[*]} (Debian package names)" >&2
    exit 1
  else
    echo "build.sh: the launcher tests will be skipped without: ${opt_pkgs[*]} (Debian package names)" >&2
  fi
fi

cuda_root=""
for d in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-13.0 /usr/lib/cuda; do
  if [ -n "$d" ] && [ -e "$d/include/cuda.h" ]; then cuda_root=$d; break; fi
done
if [ -z "$cuda_root" ]; then
  echo "build.sh: the CUDA toolkit (cuda.h, 12.4 or newer) was not found; set CUDA_HOME to its directory" >&2
  exit 1
fi
export PATH="$cuda_root/bin:$PATH"

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT="$cuda_root" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"

case "$what" in
  build) ;;
  demo) exec "$BUILD_DIR/bin/culprit" demo ;;
  test) cd "$BUILD_DIR" && exec ctest --output-on-failure -j "$JOBS" ;;
  *) echo "build.sh: unknown action '$what' (use demo, test or nothing)" >&2; exit 2 ;;
esac
