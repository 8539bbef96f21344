{
  "variables": {
    # 1 for the prebuilds (scripts/prebuild.mjs sets CUDAKIT_PORTABLE=1): libstdc++ linked in, glibc 2.28 floor.
    "cudakit_portable%": "<!(node -p \"process.env.CUDAKIT_PORTABLE === '1' ? 1 : 0\")"
  },
  "targets": [
    {
      "target_name": "cudakit",
      "sources": [
        "native/addon.cc", "native/common.cc", "native/errors.cc", "native/loader.cc", "native/device.cc",
        "native/memory.cc", "native/program.cc", "native/module.cc", "native/kernel.cc", "native/stream.cc",
        "native/event.cc", "native/graph.cc", "native/staging.cc", "native/bench.cc", "native/cupti.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": [
        "NAPI_VERSION=9", "NODE_ADDON_API_DISABLE_DEPRECATED", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS",
        "NAPI_CPP_EXCEPTIONS"
      ],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-fvisibility=hidden", "-fvisibility-inlines-hidden", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
      "libraries": ["-ldl", "-lpthread"],
      "conditions": [
        ["cudakit_portable==1", {
          # libstdc++ and its C++ ABI linked in and kept private; libgcc_s stays shared (the static unwinder needs
          # glibc 2.35). Every reference above glibc 2.28, ours or libstdc++.a's, goes to native/compat.cc.
          "sources": ["native/compat.cc"],
          "ldflags": [
            "-static-libstdc++", "-Wl,--exclude-libs,ALL",
            "-Wl,--wrap=dlopen", "-Wl,--wrap=dlsym", "-Wl,--wrap=dlerror", "-Wl,--wrap=dlinfo",
            "-Wl,--wrap=pthread_create", "-Wl,--wrap=pthread_detach", "-Wl,--wrap=pthread_join",
            "-Wl,--wrap=pthread_once", "-Wl,--wrap=pthread_key_create", "-Wl,--wrap=pthread_key_delete",
            "-Wl,--wrap=pthread_getspecific", "-Wl,--wrap=pthread_setspecific",
            "-Wl,--wrap=pthread_condattr_setclock", "-Wl,--wrap=__libc_single_threaded", "-Wl,--wrap=arc4random"
          ],
          # Before glibc 2.34 these functions live in libdl and libpthread: name both, whatever loads the addon.
          "libraries": ["-Wl,--no-as-needed", "-l:libdl.so.2", "-l:libpthread.so.0"]
        }]
      ]
    }
  ]
}
