#include <ctime>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/output.h"
#include "common/error.h"
#include "common/text.h"
#include "common/yaml_reader.h"
#include "sim/calibration.h"
#include "topologies/hardware.h"
#ifdef FSDPSIM_HAVE_CUDA
#include "exec/cuda/cuda_loader.h"
#endif

namespace fsdpsim::cli {
namespace {

struct CalibrateOptions {
  std::string topology = "dgx-h100-ndr";
  std::string profile;
  std::vector<std::string> imports;
  std::string output;
  bool gpu = false;
};

// "all_gather=FILE" names the collective; a bare FILE lets the log (or its name) say.
void import_log(const std::string& spec, GpuMeasurements& m) {
  std::optional<OpKind> kind;
  std::string path = spec;
  const size_t eq = spec.find('=');
  if (eq != std::string::npos) {
    kind = parse_op_kind(spec.substr(0, eq));
    if (!kind || !is_collective(*kind)) {
      throw ConfigError(SourceLocation{"<--import-nccl-tests " + spec + ">", 0, 0}, spec.substr(0, eq),
                        "unknown collective", "use all_gather=FILE, reduce_scatter=FILE or all_reduce=FILE");
    }
    path = spec.substr(eq + 1);
  } else if (path.find("all_gather") != std::string::npos) {
    kind = OpKind::all_gather;
  } else if (path.find("reduce_scatter") != std::string::npos) {
    kind = OpKind::reduce_scatter;
  } else if (path.find("all_reduce") != std::string::npos) {
    kind = OpKind::all_reduce;
  }
  const std::vector<CollectiveSample> rows = parse_nccl_tests_log(read_text_file(path), path, kind);
  m.collectives.insert(m.collectives.end(), rows.begin(), rows.end());
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

GpuMeasurements measure(bool gpu) {
  GpuMeasurements m;
  if (!gpu) return m;
#ifdef FSDPSIM_HAVE_CUDA
  std::string why;
  if (!cuda_backend_device_available(&why)) throw ConfigError("--gpu: no GPU can be measured here: " + why);
  m = cuda_backend().measure_gpus({});
#else
  throw ConfigError("--gpu: this fsdpsim was built without the CUDA backend (configure with -DFSDPSIM_CUDA=ON)");
#endif
  return m;
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "measure GEMM and collective rates (or import nccl-tests logs) into a GPU profile");
  cmd->add_option("--topology,-t", options->topology, "the topology the measurements are compared against")
      ->capture_default_str();
  cmd->add_option("--profile", options->profile, "GPU profile to start from (default: the topology's)");
  cmd->add_option("--import-nccl-tests", options->imports,
                  "nccl-tests output to import: FILE or all_gather=FILE / reduce_scatter=FILE / all_reduce=FILE");
  cmd->add_flag("--gpu", options->gpu, "measure the GPUs present (GEMMs, copy bandwidth, collectives)");
  cmd->add_option("-o,--output", options->output, "write the calibrated profile YAML here")->required();
  cmd->callback([options] {
    if (!options->gpu && options->imports.empty()) {
      throw ConfigError(
          "nothing to calibrate from: give --gpu to measure the GPUs present, or --import-nccl-tests FILE");
    }
    const Topology topology = load_topology(options->topology);
    const GpuProfile base = options->profile.empty() ? topology.gpu : load_gpu_profile(options->profile);
    GpuMeasurements m = measure(options->gpu);
    for (const auto& spec : options->imports) import_log(spec, m);
    const std::string label =
        "fsdpsim calibrate, " + (m.device.empty() ? std::string("nccl-tests logs") : m.device) + ", " + today();
    CalibrationSummary summary;
    const GpuProfile calibrated = calibrate_profile(base, topology, m, label, &summary);
    write_text_file(options->output,
                    "# Calibrated by `fsdpsim calibrate` from " + base.name + "; use with simulate --profile.\n" +
                        gpu_profile_to_yaml(calibrated),
                    "-o");
    std::cout << "calibrated " << base.name << " (" << label << "):\n";
    for (const auto& line : summary.lines) std::cout << "  " << line << "\n";
    std::cout << "profile written to " << options->output << "\n";
  });
}

}  // namespace fsdpsim::cli
