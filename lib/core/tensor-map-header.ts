// SPDX-License-Identifier: MIT
// <cudakit/tensor_map.h>: the CUtensorMap type for kernels compiled by NVRTC (cuda.h, which declares it, includes
// stdlib.h, which NVRTC does not have) and the TMA operations a kernel does with one, as inline PTX for sm_90 and
// later. A Program whose source names the header gets it as an in-memory header (program.ts).

/** The name a kernel includes: `#include <cudakit/tensor_map.h>`. */
export const TENSOR_MAP_HEADER_NAME = 'cudakit/tensor_map.h';

/** The header's text. */
export const TENSOR_MAP_HEADER = String.raw`// cudakit/tensor_map.h: CUtensorMap and the TMA's copies (sm_90 and later).
#pragma once
#ifndef CUDA_VERSION  // cuda.h's own CUtensorMap where it is included (nvcc)
struct __align__(64) CUtensorMap_st {
  unsigned long long opaque[16];
};
typedef CUtensorMap_st CUtensorMap;
#endif

namespace cudakit {
namespace tma {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

// A shared-memory address as PTX's shared state space takes it.
__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Fetches the map into the TMA's descriptor cache (optional, before the first copy).
__device__ __forceinline__ void prefetch(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// An mbarrier in shared memory, for one thread to initialise with the number of arrivals it waits for.
__device__ __forceinline__ void barrier_init(unsigned long long* bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(arrivals) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Arrives on the barrier, telling it how many bytes the copies it waits for will bring.
__device__ __forceinline__ void arrive_expect_bytes(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}

// Waits until the barrier's phase 'parity' (0, then 1, then 0 ...) has completed.
__device__ __forceinline__ void wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
}

// Copies the box at element coordinates (x), (x, y) or (x, y, z) of the map's tensor into shared memory at 'dst'
// (aligned to 128 bytes; 1024 with a 128B swizzle), completing on 'bar'.
__device__ __forceinline__ void load(void* dst, const CUtensorMap* map, int x, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2}], [%3];" ::"r"(smem_address(dst)),
      "l"(map), "r"(x), "r"(smem_address(bar))
      : "memory");
}
__device__ __forceinline__ void load(void* dst, const CUtensorMap* map, int x, int y, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2, %3}], [%4];" ::"r"(smem_address(dst)),
      "l"(map), "r"(x), "r"(y), "r"(smem_address(bar))
      : "memory");
}
__device__ __forceinline__ void load(void* dst, const CUtensorMap* map, int x, int y, int z, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
      "[%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_address(dst)),
      "l"(map), "r"(x), "r"(y), "r"(z), "r"(smem_address(bar))
      : "memory");
}

// Makes this thread's writes to shared memory visible to the TMA (before a store of them).
__device__ __forceinline__ void fence_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Copies shared memory at 'src' to the box at (x) or (x, y) of the map's tensor; then commit() and wait_stores().
__device__ __forceinline__ void store(const CUtensorMap* map, int x, const void* src) {
  asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];" ::"l"(map),
               "r"(smem_address(src)), "r"(x)
               : "memory");
}
__device__ __forceinline__ void store(const CUtensorMap* map, int x, int y, const void* src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map),
               "r"(smem_address(src)), "r"(x), "r"(y)
               : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
__device__ __forceinline__ void wait_stores() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

#endif
}  // namespace tma
}  // namespace cudakit
`;
