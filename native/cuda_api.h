// SPDX-License-Identifier: MIT
// Our own declarations of the CUDA Driver API and NVRTC types, values and entry points that cudakit uses.
// Values and signatures follow the public CUDA documentation; no NVIDIA header is included or copied, so the
// addon builds with a C++ compiler and Node's headers alone. Everything is resolved at run time (loader.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cu {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using cuuint64_t = uint64_t;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
struct CUmemPoolHandle_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;
using CUmemoryPool = CUmemPoolHandle_st*;
using CUhostFn = void (*)(void* userData);
using CUoccupancyB2DSize = size_t (*)(int blockSize);

struct CUuuid {
  char bytes[16];
};

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;

// CUdevice_attribute values used natively (the full table lives in lib/attributes.ts).
constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115;

// CUfunction_attribute
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

// CUjit_option
constexpr int CU_JIT_INFO_LOG_BUFFER = 3;
constexpr int CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

// Flags
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 0x01;
constexpr unsigned CU_MEMHOSTALLOC_DEVICEMAP = 0x02;
constexpr unsigned CU_MEMHOSTREGISTER_PORTABLE = 0x01;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x02;
// CUmemPool_attribute values that take a cuuint64_t (the others take an int).
constexpr int CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4;
constexpr int CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8;
constexpr int CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06;

// cuMemPoolSetAccess: which location gets which access to a pool's allocations.
constexpr int CU_MEM_LOCATION_TYPE_DEVICE = 1;
struct CUmemLocation {
  int type;  // CUmemLocationType
  int id;    // the device ordinal, for CU_MEM_LOCATION_TYPE_DEVICE
};
struct CUmemAccessDesc {
  CUmemLocation location;
  int flags;  // CUmemAccess_flags: 0 none, 1 read, 3 read and write
};

// cuGetProcAddress
constexpr cuuint64_t CU_GET_PROC_ADDRESS_DEFAULT = 0;
constexpr int CU_GET_PROC_ADDRESS_SUCCESS = 0;
constexpr int CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2;

// Launch attributes for cuLaunchKernelEx
constexpr int CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2;
constexpr int CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4;

union CUlaunchAttributeValue {
  char pad[64];
  void* alignment;  // the real union holds pointers, so it is 8-byte aligned
  int cooperative;
  struct {
    unsigned x, y, z;
  } clusterDim;
};
struct CUlaunchAttribute {
  int id;
  char pad[4];
  CUlaunchAttributeValue value;
};
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned numAttrs;
};

// Each driver entry point: name for cuGetProcAddress, the CUDA version whose ABI the signature below matches,
// and the signature. X(field, "symbol", version, return(args)).
#define CUDAKIT_DRIVER_API(X)                                                                                         \
  X(cuInit, "cuInit", 2000, CUresult(unsigned flags))                                                                 \
  X(cuDriverGetVersion, "cuDriverGetVersion", 2020, CUresult(int* version))                                           \
  X(cuGetErrorName, "cuGetErrorName", 6000, CUresult(CUresult error, const char** str))                               \
  X(cuGetErrorString, "cuGetErrorString", 6000, CUresult(CUresult error, const char** str))                           \
  X(cuDeviceGetCount, "cuDeviceGetCount", 2000, CUresult(int* count))                                                 \
  X(cuDeviceGet, "cuDeviceGet", 2000, CUresult(CUdevice* device, int ordinal))                                        \
  X(cuDeviceGetName, "cuDeviceGetName", 2000, CUresult(char* name, int len, CUdevice dev))                            \
  X(cuDeviceGetUuid, "cuDeviceGetUuid", 11040, CUresult(CUuuid* uuid, CUdevice dev))                                  \
  X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", 4010, CUresult(char* id, int len, CUdevice dev))                      \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", 2000, CUresult(int* pi, int attrib, CUdevice dev))                  \
  X(cuDeviceTotalMem, "cuDeviceTotalMem", 3020, CUresult(size_t* bytes, CUdevice dev))                                \
  X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", 11020, CUresult(CUmemoryPool* pool, CUdevice dev))        \
  X(cuMemPoolSetAttribute, "cuMemPoolSetAttribute", 11020, CUresult(CUmemoryPool pool, int attr, void* value))        \
  X(cuMemPoolGetAttribute, "cuMemPoolGetAttribute", 11020, CUresult(CUmemoryPool pool, int attr, void* value))        \
  X(cuMemPoolTrimTo, "cuMemPoolTrimTo", 11020, CUresult(CUmemoryPool pool, size_t minBytesToKeep))                    \
  X(cuMemPoolSetAccess, "cuMemPoolSetAccess", 11020,                                                                  \
    CUresult(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count))                                            \
  X(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", 4000, CUresult(int* can, CUdevice dev, CUdevice peer))            \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000, CUresult(CUcontext* pctx, CUdevice dev))              \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 11000, CUresult(CUdevice dev))                            \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", 4000, CUresult(CUcontext* pctx))                                              \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", 4000, CUresult(CUcontext ctx))                                                \
  X(cuCtxSynchronize, "cuCtxSynchronize", 2000, CUresult())                                                           \
  X(cuCtxGetDevice, "cuCtxGetDevice", 2000, CUresult(CUdevice* device))                                               \
  X(cuCtxSetLimit, "cuCtxSetLimit", 3010, CUresult(int limit, size_t value))                                          \
  X(cuCtxGetLimit, "cuCtxGetLimit", 3010, CUresult(size_t* value, int limit))                                         \
  X(cuCtxResetPersistingL2Cache, "cuCtxResetPersistingL2Cache", 11000, CUresult())                                    \
  X(cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", 5050, CUresult(int* least, int* greatest))            \
  X(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", 4000, CUresult(CUcontext peerCtx, unsigned flags))                \
  X(cuMemGetInfo, "cuMemGetInfo", 3020, CUresult(size_t* freeBytes, size_t* totalBytes))                              \
  X(cuMemAlloc, "cuMemAlloc", 3020, CUresult(CUdeviceptr* dptr, size_t bytes))                                        \
  X(cuMemFree, "cuMemFree", 3020, CUresult(CUdeviceptr dptr))                                                         \
  X(cuMemAllocAsync, "cuMemAllocAsync", 11020, CUresult(CUdeviceptr* dptr, size_t bytes, CUstream s))                 \
  X(cuMemFreeAsync, "cuMemFreeAsync", 11020, CUresult(CUdeviceptr dptr, CUstream s))                                  \
  X(cuMemHostAlloc, "cuMemHostAlloc", 2020, CUresult(void** pp, size_t bytes, unsigned flags))                        \
  X(cuMemFreeHost, "cuMemFreeHost", 2000, CUresult(void* p))                                                          \
  X(cuMemHostRegister, "cuMemHostRegister", 6050, CUresult(void* p, size_t bytes, unsigned flags))                    \
  X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer", 3020,                                                     \
    CUresult(CUdeviceptr* dptr, void* p, unsigned flags))                                                             \
  X(cuMemHostUnregister, "cuMemHostUnregister", 4000, CUresult(void* p))                                              \
  X(cuMemcpyHtoD, "cuMemcpyHtoD", 3020, CUresult(CUdeviceptr dst, const void* src, size_t bytes))                     \
  X(cuMemcpyDtoH, "cuMemcpyDtoH", 3020, CUresult(void* dst, CUdeviceptr src, size_t bytes))                           \
  X(cuMemcpyDtoD, "cuMemcpyDtoD", 3020, CUresult(CUdeviceptr dst, CUdeviceptr src, size_t bytes))                     \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync", 3020,                                                                     \
    CUresult(CUdeviceptr dst, const void* src, size_t bytes, CUstream s))                                             \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync", 3020, CUresult(void* dst, CUdeviceptr src, size_t bytes, CUstream s))     \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync", 3020,                                                                     \
    CUresult(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s))                                             \
  X(cuMemcpyPeer, "cuMemcpyPeer", 4000,                                                                               \
    CUresult(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t bytes))                     \
  X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 4000,                                                                     \
    CUresult(CUdeviceptr dst, CUcontext dstCtx, CUdeviceptr src, CUcontext srcCtx, size_t bytes, CUstream s))         \
  X(cuMemsetD8Async, "cuMemsetD8Async", 3020, CUresult(CUdeviceptr dst, unsigned char v, size_t n, CUstream s))       \
  X(cuMemsetD16Async, "cuMemsetD16Async", 3020, CUresult(CUdeviceptr dst, unsigned short v, size_t n, CUstream s))    \
  X(cuMemsetD32Async, "cuMemsetD32Async", 3020, CUresult(CUdeviceptr dst, unsigned v, size_t n, CUstream s))          \
  X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", 12000,                                                          \
    CUresult(void* tensorMap, int dataType, unsigned rank, void* globalAddress, const cuuint64_t* globalDim,          \
             const cuuint64_t* globalStrides, const unsigned* boxDim, const unsigned* elementStrides, int interleave, \
             int swizzle, int l2Promotion, int oobFill))                                                              \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx", 2010,                                                                   \
    CUresult(CUmodule* m, const void* image, unsigned n, int* options, void** values))                                \
  X(cuModuleUnload, "cuModuleUnload", 2000, CUresult(CUmodule m))                                                     \
  X(cuModuleGetFunction, "cuModuleGetFunction", 2000, CUresult(CUfunction* f, CUmodule m, const char* name))          \
  X(cuModuleGetGlobal, "cuModuleGetGlobal", 3020,                                                                     \
    CUresult(CUdeviceptr* dptr, size_t* bytes, CUmodule m, const char* name))                                         \
  X(cuFuncGetAttribute, "cuFuncGetAttribute", 2020, CUresult(int* pi, int attrib, CUfunction f))                      \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", 9000, CUresult(CUfunction f, int attrib, int value))                    \
  X(cuFuncGetParamInfo, "cuFuncGetParamInfo", 12040,                                                                  \
    CUresult(CUfunction f, size_t index, size_t* offset, size_t* size))                                               \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050,                 \
    CUresult(int* numBlocks, CUfunction f, int blockSize, size_t smem))                                               \
  X(cuOccupancyMaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize", 6050,                                       \
    CUresult(int* minGrid, int* block, CUfunction f, CUoccupancyB2DSize fn, size_t smem, int limit))                  \
  X(cuLaunchKernel, "cuLaunchKernel", 4000,                                                                           \
    CUresult(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,              \
             unsigned smem, CUstream s, void** params, void** extra))                                                 \
  X(cuLaunchKernelEx, "cuLaunchKernelEx", 11080,                                                                      \
    CUresult(const CUlaunchConfig* config, CUfunction f, void** params, void** extra))                                \
  X(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", 5050,                                                   \
    CUresult(CUstream* s, unsigned flags, int priority))                                                              \
  X(cuStreamDestroy, "cuStreamDestroy", 4000, CUresult(CUstream s))                                                   \
  X(cuStreamSynchronize, "cuStreamSynchronize", 2000, CUresult(CUstream s))                                           \
  X(cuStreamQuery, "cuStreamQuery", 2000, CUresult(CUstream s))                                                       \
  X(cuStreamWaitEvent, "cuStreamWaitEvent", 3020, CUresult(CUstream s, CUevent e, unsigned flags))                    \
  X(cuStreamBeginCapture, "cuStreamBeginCapture", 10010, CUresult(CUstream s, int mode))                              \
  X(cuStreamEndCapture, "cuStreamEndCapture", 10000, CUresult(CUstream s, CUgraph* g))                                \
  X(cuEventCreate, "cuEventCreate", 2000, CUresult(CUevent* e, unsigned flags))                                       \
  X(cuEventDestroy, "cuEventDestroy", 4000, CUresult(CUevent e))                                                      \
  X(cuEventRecord, "cuEventRecord", 2000, CUresult(CUevent e, CUstream s))                                            \
  X(cuEventSynchronize, "cuEventSynchronize", 2000, CUresult(CUevent e))                                              \
  X(cuEventQuery, "cuEventQuery", 2000, CUresult(CUevent e))                                                          \
  X(cuEventElapsedTime, "cuEventElapsedTime", 2000, CUresult(float* ms, CUevent start, CUevent end))                  \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 11040,                                                \
    CUresult(CUgraphExec* exec, CUgraph g, unsigned long long flags))                                                 \
  X(cuGraphLaunch, "cuGraphLaunch", 10000, CUresult(CUgraphExec exec, CUstream s))                                    \
  X(cuGraphGetNodes, "cuGraphGetNodes", 10000, CUresult(CUgraph g, void** nodes, size_t* count))                      \
  X(cuGraphDestroy, "cuGraphDestroy", 10000, CUresult(CUgraph g))                                                     \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", 10000, CUresult(CUgraphExec exec))

}  // namespace cu

namespace nvrtc {

using nvrtcResult = int;
struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;

// NVRTC entry points, resolved with dlsym. X(field, optional, return(args)).
#define CUDAKIT_NVRTC_API(X)                                                                                    \
  X(nvrtcVersion, false, nvrtc::nvrtcResult(int* major, int* minor))                                            \
  X(nvrtcGetErrorString, false, const char*(nvrtc::nvrtcResult r))                                              \
  X(nvrtcCreateProgram, false,                                                                                  \
    nvrtc::nvrtcResult(nvrtc::nvrtcProgram* p, const char* src, const char* name, int numHeaders,               \
                       const char* const* headers, const char* const* includeNames))                            \
  X(nvrtcDestroyProgram, false, nvrtc::nvrtcResult(nvrtc::nvrtcProgram* p))                                     \
  X(nvrtcCompileProgram, false, nvrtc::nvrtcResult(nvrtc::nvrtcProgram p, int n, const char* const* options))   \
  X(nvrtcGetProgramLogSize, false, nvrtc::nvrtcResult(nvrtc::nvrtcProgram p, size_t* size))                     \
  X(nvrtcGetProgramLog, false, nvrtc::nvrtcResult(nvrtc::nvrtcProgram p, char* log))                            \
  X(nvrtcGetPTXSize, false, nvrtc::nvrtcResult(nvrtc::nvrtcProgram p, size_t* size))                            \
  X(nvrtcGetPTX, false, nvrtc::nvrtcResult(nvrtc::nvrtcProgram p, char* ptx))                                   \
  X(nvrtcGetCUBINSize, true, nvrtc::nvrtcResult(nvrtc::nvrtcProgram p, size_t* size))                           \
  X(nvrtcGetCUBIN, true, nvrtc::nvrtcResult(nvrtc::nvrtcProgram p, char* cubin))                                \
  X(nvrtcAddNameExpression, false, nvrtc::nvrtcResult(nvrtc::nvrtcProgram p, const char* expr))                 \
  X(nvrtcGetLoweredName, false, nvrtc::nvrtcResult(nvrtc::nvrtcProgram p, const char* expr, const char** name)) \
  X(nvrtcGetNumSupportedArchs, true, nvrtc::nvrtcResult(int* n))                                                \
  X(nvrtcGetSupportedArchs, true, nvrtc::nvrtcResult(int* archs))

}  // namespace nvrtc
