# Sourced by the scripts that run on a CUDA machine from a bundle
# (scripts/gpu_run.sh, bench/tune_cuda.sh): the bundle's libraries first,
# then the folders that hold the machine's CUDA libraries (NVRTC, CUPTI,
# cuBLAS, cuDNN: its toolkit, extras/CUPTI, or the Python wheels that
# bring them), then the bundle's C++ runtime only where the machine has
# none (a newer system libstdc++ serves the bundle's binaries and the
# CUDA libraries alike), and the kernel caches in $TMPDIR.  Needs $bundle.
libs=$bundle/lib
for name in libnvrtc.so.13 libcupti.so.13 libcublas.so.13 libcudnn.so.9; do
	found=$(find "${CUDA_HOME:-/usr/local/cuda}/" /usr/local/cuda*/ /opt/*/.venv/lib/ \
		/usr/lib/x86_64-linux-gnu/ -maxdepth 6 -name "$name" 2>/dev/null | head -1) || true
	if [ -n "$found" ]; then
		libs=$libs:$(dirname "$found")
	fi
done
for lib in libstdc++.so.6 libgcc_s.so.1 libgomp.so.1; do
	if [ -e "$bundle/lib/fallback/$lib" ] && ! ldconfig -p | grep -q "$lib "; then
		libs=$libs:$bundle/lib/fallback
		break
	fi
done
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TESSEL_CACHE_DIR=${TMPDIR:-/tmp}/tessel-kernels
export POCL_CACHE_DIR=${TMPDIR:-/tmp}/tessel-pocl
