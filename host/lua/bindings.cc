#include "bindings.h"

namespace kplab::host {

// The one table of native modules installed into `kp`.
const std::vector<ModuleInstaller>& AllModules() {
  static const std::vector<ModuleInstaller> modules = {&InstallText, &InstallCorpus, &InstallEmbed, &InstallPlot,
                                                        &InstallStats, &InstallCalib, &InstallHomog,
                                                        &InstallParams, &InstallKernels, &InstallTokens,
                                                        &InstallTextMetrics};
  return modules;
}

}  // namespace kplab::host
