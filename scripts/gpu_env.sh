# Sourced by the scripts that run on a CUDA machine from a bundle
# (scripts/gpu_run.sh, bench/tune_cuda.sh): the bundle's libraries first,
# then the CUDA libraries of the machine (its toolkit, and those Python
# wheels bring: cuDNN, cuBLAS, CUPTI), and the kernel caches in $TMPDIR.
# Needs $bundle.
libs=$bundle/lib:${CUDA_HOME:-/usr/local/cuda}/lib64
for d in /opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib; do
	[ -d "$d" ] && libs=$libs:$d
done
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TESSEL_CACHE_DIR=${TMPDIR:-/tmp}/tessel-kernels
export POCL_CACHE_DIR=${TMPDIR:-/tmp}/tessel-pocl
