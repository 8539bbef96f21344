{
  "targets": [
    {
      "target_name": "cudakit",
      "sources": [
        "native/addon.cc", "native/common.cc", "native/errors.cc", "native/loader.cc", "native/device.cc",
        "native/memory.cc", "native/program.cc", "native/module.cc", "native/kernel.cc", "native/stream.cc",
        "native/event.cc", "native/graph.cc", "native/staging.cc", "native/bench.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": [
        "NAPI_VERSION=9", "NODE_ADDON_API_DISABLE_DEPRECATED", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS",
        "NAPI_CPP_EXCEPTIONS"
      ],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-fvisibility=hidden", "-fvisibility-inlines-hidden", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
      "libraries": ["-ldl", "-lpthread"]
    }
  ]
}
