// kp.kernel.exact / rank / rprec: markers a plugin assigns to `score` so that the host scores its
// documents with the native kernel of that name (kplab/kernels.h) instead of calling Lua per document.
// They are C functions only so that `score` stays "a function"; called from Lua they explain themselves.
#include <lua.hpp>

#include "bindings.h"
#include "kplab/kernels.h"

namespace kplab::host {

namespace {

template <int kIndex>
int KernelMarker(lua_State* L) {
  const std::string& name = MetricKernelNames()[kIndex];
  return luaL_error(L,
                    "kp.kernel.%s is scored by the host, not called: declare it as the plugin's score "
                    "(score = kp.kernel.%s)",
                    name.c_str(), name.c_str());
}

constexpr lua_CFunction kMarkers[] = {&KernelMarker<0>, &KernelMarker<1>, &KernelMarker<2>};

}  // namespace

const char* KernelOf(lua_CFunction f) {
  for (std::size_t i = 0; i < std::size(kMarkers); ++i) {
    if (f != nullptr && f == kMarkers[i]) return MetricKernelNames()[i].c_str();
  }
  return nullptr;
}

void InstallKernels(lua_State* L) {
  // [kp]
  lua_createtable(L, 0, static_cast<int>(std::size(kMarkers)));
  for (std::size_t i = 0; i < std::size(kMarkers); ++i) {
    lua_pushcfunction(L, kMarkers[i]);
    lua_setfield(L, -2, MetricKernelNames()[i].c_str());
  }
  lua_setfield(L, -2, "kernel");
}

}  // namespace kplab::host
