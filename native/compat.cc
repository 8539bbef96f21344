// SPDX-License-Identifier: MIT
// The prebuilds' glibc floor (binding.gyp's portable build, scripts/prebuild.mjs): they load on glibc 2.28 and
// reference no GLIBCXX or CXXABI version, so libstdc++ is linked in. The libstdc++.a and the glibc headers of the
// building system reference newer glibc versions than the floor, from inside the archive too, where a .symver in our
// own sources cannot reach. The link therefore redirects each such symbol NAME to __wrap_NAME here
// (-Wl,--wrap=NAME, listed in binding.gyp), which either calls NAME's oldest version, pinned with .symver (the
// version every glibc since the architecture's first has), or replaces a symbol that has no version at or below
// the floor. This file is built for the prebuilds only.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <ctime>

#if defined(__x86_64__)
#define CUDAKIT_GLIBC_BASE "GLIBC_2.2.5"
#define CUDAKIT_GLIBC_2_3_3 "GLIBC_2.3.3"
#elif defined(__aarch64__)
#define CUDAKIT_GLIBC_BASE "GLIBC_2.17"  // glibc's first aarch64 release: every symbol's oldest version
#define CUDAKIT_GLIBC_2_3_3 "GLIBC_2.17"
#else
#error "the portable build pins glibc symbol versions for x86_64 and aarch64 only"
#endif

// cudakit_glibc_NAME is NAME at VERSION; __wrap_NAME calls it. glibc 2.34 moved libdl and libpthread into libc
// and gave these functions a GLIBC_2.34 default version; the pinned one is the same function.
#define CUDAKIT_PINNED(version, ret, name, params, ...)           \
  ret cudakit_glibc_##name params;                                \
  __asm__(".symver cudakit_glibc_" #name ", " #name "@" version); \
  ret __wrap_##name params { return cudakit_glibc_##name(__VA_ARGS__); }

extern "C" {

CUDAKIT_PINNED(CUDAKIT_GLIBC_BASE, void*, dlopen, (const char* file, int mode), file, mode)
CUDAKIT_PINNED(CUDAKIT_GLIBC_BASE, void*, dlsym, (void* handle, const char* name), handle, name)
CUDAKIT_PINNED(CUDAKIT_GLIBC_BASE, char*, dlerror, (void))
CUDAKIT_PINNED(CUDAKIT_GLIBC_2_3_3, int, dlinfo, (void* handle, int request, void* arg), handle, request, arg)
CUDAKIT_PINNED(CUDAKIT_GLIBC_BASE, int, pthread_create,
               (pthread_t * thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg), thread, attr, start,
               arg)
CUDAKIT_PINNED(CUDAKIT_GLIBC_BASE, int, pthread_detach, (pthread_t thread), thread)
CUDAKIT_PINNED(CUDAKIT_GLIBC_BASE, int, pthread_join, (pthread_t thread, void** result), thread, result)
CUDAKIT_PINNED(CUDAKIT_GLIBC_BASE, int, pthread_once, (pthread_once_t * once, void (*init)(void)), once, init)
CUDAKIT_PINNED(CUDAKIT_GLIBC_BASE, int, pthread_key_create, (pthread_key_t * key, void (*destructor)(void*)), key,
               destructor)
CUDAKIT_PINNED(CUDAKIT_GLIBC_BASE, int, pthread_key_delete, (pthread_key_t key), key)
CUDAKIT_PINNED(CUDAKIT_GLIBC_BASE, void*, pthread_getspecific, (pthread_key_t key), key)
CUDAKIT_PINNED(CUDAKIT_GLIBC_BASE, int, pthread_setspecific, (pthread_key_t key, const void* value), key, value)
CUDAKIT_PINNED(CUDAKIT_GLIBC_2_3_3, int, pthread_condattr_setclock, (pthread_condattr_t * attr, clockid_t clock), attr,
               clock)

// glibc 2.32: libstdc++ skips atomic reference counting while this says the process has one thread. 0 ("maybe
// several") keeps the atomics, which is always correct.
char __wrap___libc_single_threaded = 0;

// glibc 2.36: libstdc++'s std::random_device (linked in, never called by cudakit) uses it for the "arc4random"
// token. The same guarantee from getentropy (glibc 2.25), or /dev/urandom where the kernel lacks getrandom.
uint32_t __wrap_arc4random(void) {
  uint32_t value = 0;
  if (getentropy(&value, sizeof value) == 0) return value;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  bool ok = fd >= 0 && read(fd, &value, sizeof value) == static_cast<ssize_t>(sizeof value);
  if (fd >= 0) close(fd);
  if (!ok) abort();  // arc4random cannot fail
  return value;
}

}  // extern "C"
