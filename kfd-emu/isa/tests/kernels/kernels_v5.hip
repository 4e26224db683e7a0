// Code object v5 (compiled with -mcode-object-version=5): blockDim and gridDim come from the
// hidden kernel arguments (hidden_group_size_*, hidden_block_count_*), which the test fills from
// the layout regen.sh extracts from the metadata note into kernels_v5-*.args.
#include <hip/hip_runtime.h>
extern "C" __global__ void dims_v5(unsigned* out) {
  unsigned gx = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned gy = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned w = gridDim.x * blockDim.x;
  unsigned i = gy * w + gx;
  out[4 * i + 0] = blockDim.x | blockDim.y << 16;
  out[4 * i + 1] = gridDim.x | gridDim.y << 16;
  out[4 * i + 2] = threadIdx.x | threadIdx.y << 16;
  out[4 * i + 3] = blockIdx.x | blockIdx.y << 16;
}
