// kp.kernel.exact / rank / rprec / semrp: markers a plugin assigns to `score` so that the host scores its
// documents with the native kernel of that name (kplab/kernels.h, kplab/semrp_kernel.h) instead of
// calling Lua per document. They are C functions only so that `score` stays "a function"; called from
// Lua they explain themselves.
#include <lua.hpp>

#include "bindings.h"

namespace kplab::host {

namespace {

struct KernelInfo {
  const char* name;
  std::vector<KernelParam> params;  // what the kernel reads; the plugin must declare them with these types
};

const std::vector<KernelInfo>& Kernels() {
  static const std::vector<KernelInfo> kernels = {
      {"exact", {{"ks", ParamType::kCutoffs}}},
      {"rank", {{"alpha", ParamType::kNumber}, {"ks", ParamType::kCutoffs}}},
      {"rprec", {}},
      {"semrp", {{"k", ParamType::kInt}, {"clamp", ParamType::kBool}, {"alpha", ParamType::kNumber},
                 {"ks", ParamType::kString},
                 {"dedup", ParamType::kString, /*optional=*/true}}},
  };
  return kernels;
}

template <int kIndex>
int KernelMarker(lua_State* L) {
  const char* name = Kernels()[kIndex].name;
  return luaL_error(L,
                    "kp.kernel.%s is scored by the host, not called: declare it as the plugin's score "
                    "(score = kp.kernel.%s)",
                    name, name);
}

constexpr lua_CFunction kMarkers[] = {&KernelMarker<0>, &KernelMarker<1>, &KernelMarker<2>, &KernelMarker<3>};

}  // namespace

const char* KernelOf(lua_CFunction f) {
  for (std::size_t i = 0; i < std::size(kMarkers); ++i) {
    if (f != nullptr && f == kMarkers[i]) return Kernels()[i].name;
  }
  return nullptr;
}

const std::vector<KernelParam>& KernelParams(std::string_view kernel) {
  static const std::vector<KernelParam> none;
  for (const KernelInfo& k : Kernels()) {
    if (kernel == k.name) return k.params;
  }
  return none;
}

void InstallKernels(lua_State* L) {
  static_assert(std::size(kMarkers) == 4);
  // [kp]
  lua_createtable(L, 0, static_cast<int>(std::size(kMarkers)));
  for (std::size_t i = 0; i < std::size(kMarkers); ++i) {
    lua_pushcfunction(L, kMarkers[i]);
    lua_setfield(L, -2, Kernels()[i].name);
  }
  lua_setfield(L, -2, "kernel");
}

}  // namespace kplab::host
