#!/usr/bin/env bash
# The whole GPU grading path, checked in one go on a GPU host, ending with one table.
#
#   scripts/gpu-proof.sh --fetch-wheels   # where pip reaches PyPI: the sandbox's pure-Python wheels into .whl/
#   scripts/gpu-proof.sh                  # on the GPU host, from the repository's root
#
# The GPU host needs Python 3.12+ with torch (2.11 was measured) and numpy; no Django (graders/sandbox, the
# drill loader, bench/gpu.py and the GPU tests import none). The wheels in .whl/ (RestrictedPython and
# pyseccomp, pinned in requirements.txt) are installed into that interpreter itself, never with --target or
# PYTHONPATH: the fork server starts as `python -I` in a clean environment and would not see them.
# With the device tool: run(command="bash scripts/gpu-proof.sh", carry=[".whl"]); $OUT gets the table.
#
# Steps: 1. what the host is  2. wheels (and libseccomp where the host lacks it)  3. imports as the fork
# server sees them  4. bench/gpu.py --proof: CUDA per namespace set, the runners' isolation, the cuda drills,
# the attack suite on GPU runners, the bench  5. pytest (the GPU module, the GPU path's CPU tests, the jail,
# the CPU sandbox under this Python). PROOF_BENCH_S and PROOF_PYTEST_S cap steps 4 and 5 (seconds).
# Exit status: 0 when every step passed, 1 otherwise.

set -uo pipefail
cd "$(dirname "$0")/.."
PY=$(command -v "${PYTHON:-python3}")  # absolute: step 3 runs it under env -i, with another PATH
WHEELS=.whl
REPORT=${OUT:-/tmp/gpu-proof}
mkdir -p "$REPORT"
failed=()

pin() { grep -i "^$1==" requirements.txt | head -n 1; }

if [[ "${1:-}" == "--fetch-wheels" ]]; then
    grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
    mkdir -p "$WHEELS"
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation py \
        -d "$WHEELS" "$(pin RestrictedPython)" "$(pin pyseccomp)" || exit 1
    # pyseccomp is a ctypes binding: a host without libseccomp.so.2 gets it from this Debian package
    (cd "$WHEELS" && apt-get download -oAPT::Architecture=amd64 libseccomp2 2>/dev/null) ||
        echo "no libseccomp2 package fetched: a GPU host without libseccomp runs its pool without seccomp"
    exit 0
fi

step() { printf '\n==== %s\n' "$*"; }

step "1. the host"
"$PY" - <<'EOF'
import os, platform, sys
import torch
print(f"python {platform.python_version()} ({sys.executable}), torch {torch.__version__}, CUDA build {torch.version.cuda}")
print(f"uid {os.geteuid()}, cores {os.cpu_count()}, kernel {platform.release()}")
EOF
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
ls -l /dev/nvidia* 2>&1 | head -n 8
ls /proc/driver/nvidia 2>&1 | head -n 4
[[ -e /dev/nvidiactl ]] || failed+=("no NVIDIA GPU on this host: the rest is a dry run")

step "2. wheels from $WHEELS into $PY itself"
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile "$WHEELS"/*.whl 2>"$REPORT/pip.log" ||
        "$PY" -m pip install -q --no-index --no-deps --no-compile --break-system-packages "$WHEELS"/*.whl ||
        failed+=("wheels")
else
    echo "no wheels in $WHEELS (run scripts/gpu-proof.sh --fetch-wheels where PyPI is reachable)"
fi
if ! ldconfig -p | grep -q 'libseccomp\.so\.2' && ls "$WHEELS"/libseccomp2_*.deb >/dev/null 2>&1; then
    echo "this host lacks libseccomp.so.2: the library alone, from $(basename "$WHEELS"/libseccomp2_*.deb)"
    unpacked=$(mktemp -d)
    dpkg -x "$WHEELS"/libseccomp2_*.deb "$unpacked" && cp -a "$unpacked"/usr/lib/x86_64-linux-gnu/libseccomp.so.2* \
        /usr/lib/x86_64-linux-gnu/ && ldconfig || failed+=("libseccomp")
fi

step "3. imports in the fork server's environment (python -I, a clean environment)"
env -i PATH=/usr/bin:/bin "$PY" -I - <<'EOF' || failed+=("imports")
import importlib
for name in ("numpy", "torch", "RestrictedPython"):
    importlib.import_module(name)
try:
    import pyseccomp  # a ctypes binding: it needs libseccomp.so.2 on the host
    print("pyseccomp loads libseccomp")
except Exception as exc:  # the pool will run, and report itself degraded: no seccomp layer
    print(f"DEGRADED: pyseccomp cannot be used here ({type(exc).__name__}: {exc}); install libseccomp2")
print("RestrictedPython, numpy and torch import")
EOF

step "4. bench/gpu.py --proof (first: it is the proof, and a run cut short still brings back its part)"
timeout "${PROOF_BENCH_S:-600}" "$PY" bench/gpu.py --proof 2>"$REPORT/proof-stderr.log" | tee "$REPORT/gpu-proof.md"
[[ ${PIPESTATUS[0]} -eq 0 ]] || failed+=("bench/gpu.py --proof")


step "5. pytest (the GPU module alone: its pool holds many CUDA contexts; its attack cases ran in step 4)"
pytest_args=(-q -rfEs --noconftest -p no:cacheprovider -c /dev/null --rootdir . -W ignore::pytest.PytestUnknownMarkWarning)
timeout "${PROOF_PYTEST_S:-600}" "$PY" -m pytest "${pytest_args[@]}" -k "not contains_each_attack" tests/graders/test_gpu.py 2>&1 | tee "$REPORT/pytest-gpu.log" | tail -n 25
[[ ${PIPESTATUS[0]} -eq 0 ]] || failed+=("tests/graders/test_gpu.py")
parallel=()
"$PY" -c "import xdist" 2>/dev/null && parallel=(-n "${PYTEST_JOBS:-8}")
timeout "${PROOF_PYTEST_S:-600}" "$PY" -m pytest "${pytest_args[@]}" "${parallel[@]}" tests/graders/test_gpu_path.py tests/graders/test_sandbox_jail.py \
    tests/graders/test_sandbox.py tests/graders/test_wire.py 2>&1 | tee "$REPORT/pytest-cpu.log" | tail -n 25
[[ ${PIPESTATUS[0]} -eq 0 ]] || failed+=("the CPU sandbox tests")

if ((${#failed[@]})); then
    printf '\nGPU PROOF: FAIL (%s)\n' "${failed[*]}"
    exit 1
fi
printf '\nGPU PROOF: PASS\n'
