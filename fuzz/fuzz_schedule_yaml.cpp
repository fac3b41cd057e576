// Fuzz target: the schedule IR YAML (schedule_from_yaml, then validate()). A schedule that parses must write itself
// back exactly; one that is valid and small must simulate (two steps, as `simulate --schedule` runs it) and its
// JSON report must read back and compare with itself.
#include "fuzz/fuzz_target.h"
#include "report/report_compare.h"
#include "schedule/ir_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz.schedule.yaml", [&] {
    const fsdpsim::Schedule schedule = fsdpsim::schedule_from_yaml(text, "fuzz.schedule.yaml");
    const fsdpsim::Schedule back =
        fsdpsim::schedule_from_yaml(fsdpsim::schedule_to_yaml(schedule), "fuzz.schedule.yaml");
    if (!(back == schedule)) fsdpsim::fuzz::finding("schedule_to_yaml does not round-trip");
    if (!fsdpsim::validate(schedule).empty() || schedule.ops.size() > 512) return;
    const fsdpsim::Topology topology = fsdpsim::topology_preset("dgx-h100-ndr");
    if (schedule.info.world_size % topology.gpus_per_node != 0) return;  // the CLI refuses these (check_world)
    const fsdpsim::RunRecord run = fsdpsim::run_schedule(schedule, topology, fsdpsim::SimOptions{});
    const fsdpsim::Report report = fsdpsim::make_report(schedule, topology, run);
    const fsdpsim::Report read = fsdpsim::report_from_json(fsdpsim::report_json(report), "fuzz.report.json");
    (void)fsdpsim::comparison_text(fsdpsim::compare_reports(read, read));
  });
}
