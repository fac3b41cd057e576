// Fuzz target: nccl-tests output (parse_nccl_tests_log), as `calibrate --import-nccl-tests` reads it; the samples
// must then calibrate a GPU profile on a DGX H100 topology.
#include <optional>

#include "fuzz/fuzz_target.h"
#include "sim/calibration.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz-nccl.log", [&] {
    // With no kind the log must say which collective it measured; with one it may not.
    std::optional<fsdpsim::OpKind> kind;
    if (size > 0 && data[0] % 2 == 0) kind = fsdpsim::OpKind::reduce_scatter;
    fsdpsim::GpuMeasurements measured;
    measured.collectives = fsdpsim::parse_nccl_tests_log(text, "fuzz-nccl.log", kind);
    const fsdpsim::Topology topology = fsdpsim::topology_preset("dgx-h100-ndr");
    fsdpsim::CalibrationSummary summary;
    (void)fsdpsim::calibrate_profile(topology.gpu, topology, measured, "fuzz", &summary);
  });
}
