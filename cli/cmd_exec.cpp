#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/output.h"
#include "common/error.h"
#include "common/units.h"
#include "exec/host/host_runner.h"
#include "plan/exec_checks.h"
#include "report/report.h"
#ifdef FSDPSIM_HAVE_CUDA
#include "exec/cuda/cuda_loader.h"
#endif

namespace fsdpsim::cli {
namespace {

struct ExecCliOptions {
  JobOptions job;
  std::string schedule_file;
  std::string backend = "host";
  std::string json;
  std::string trace;
  int32_t steps = 2;
  // host
  int32_t ranks = 0;
  bool emulate = false;
  int64_t bytes_scale = 1024;
  std::string order = "predicted";
  std::vector<std::string> inject;
  // both
  std::string collective_timeout;
  // cuda
  int32_t emulate_world = 0;
  bool check = false;
  std::vector<int32_t> devices;
  bool mpi = false;
};

// --collective-timeout as nanoseconds; 0 when not given (each backend keeps its default).
TimeNs collective_timeout_ns(const ExecCliOptions& o) {
  if (o.collective_timeout.empty()) return 0;
  std::string why;
  const std::optional<TimeNs> ns = parse_time_ns(o.collective_timeout, &why);
  if (!ns || *ns <= 0) {
    throw ConfigError(SourceLocation{"<--collective-timeout>", 0, 0}, "--collective-timeout",
                      ns ? "is '" + o.collective_timeout + "', not a positive duration" : why,
                      "give a duration with a unit (ns, us, ms, s), e.g. --collective-timeout 5s or 600s");
  }
  return *ns;
}

ExecResult run_on_host(const Schedule& schedule, const Topology& topology, const ExecCliOptions& o) {
  HostOptions host;
  host.steps = o.steps;
  host.ranks = o.ranks;
  host.emulate = o.emulate;
  host.bytes_scale = o.bytes_scale;
  if (const TimeNs timeout_ns = collective_timeout_ns(o); timeout_ns > 0) host.timeout_ns = timeout_ns;
  for (const std::string& spec : o.inject) host.faults.push_back(parse_host_fault(spec));
  std::optional<MemoryPeak> peak;
  if (o.order == "predicted") {
    // Perform allocations and releases in the order the simulator predicts, so the measured peak is comparable.
    const RunRecord predicted = predict_steps(schedule, topology, o.steps);
    host.memory_order = predicted_memory_order(schedule, predicted);
    peak = predicted.steps.back().peak_allocated;
  }
  // A failed allocation is reported against the simulator's steady-step peak (simulated only when that happens).
  host.predicted_peak = [&schedule, &topology, &o, peak]() -> std::optional<MemoryPeak> {
    if (peak) return peak;
    return predicted_steady_peak(schedule, topology, o.steps);
  };
  return run_host(schedule, host);
}

ExecResult run_on_gpus(const Schedule& schedule, const Topology& topology, const ExecCliOptions& o) {
  if (!o.inject.empty()) {
    throw ConfigError(SourceLocation{"<--inject>", 0, 0}, "--inject", "injects faults into the host backend only",
                      "drop --inject, or run with --backend host");
  }
#ifdef FSDPSIM_HAVE_CUDA
  CudaOptions cuda;
  cuda.steps = o.steps;
  cuda.emulate_world = o.emulate_world;
  cuda.check = o.check;
  cuda.devices = o.devices;
  cuda.mpi = o.mpi;
  const CudaBackendApi& backend = cuda_backend();              // loads libfsdpsim_cuda.so, or says why it cannot
  backend.load_kernels_eagerly_for_pipelines(schedule, cuda);  // before the first CUDA call
  std::string why;
  if (!backend.device_available(&why)) throw Error("--backend cuda: no GPU can be used here: " + why);
  if (const TimeNs timeout_ns = collective_timeout_ns(o); timeout_ns > 0) cuda.collective_timeout_ns = timeout_ns;
  // An out-of-memory report compares with the simulator's steady-step peak, simulated only when that happens.
  cuda.predicted_peak = [&schedule, &topology, &o] { return predicted_steady_peak(schedule, topology, o.steps); };
  cuda.predict_with_memory = [&schedule, &topology, &o](int64_t bytes) {
    return predicted_fit_with_memory(schedule, topology, o.steps, bytes);
  };
  return backend.run(schedule, cuda);
#else
  (void)schedule;
  (void)topology;
  (void)o;
  throw Error("--backend cuda: this fsdpsim was built without the CUDA backend (configure with -DFSDPSIM_CUDA=ON)");
#endif
}

void execute(const ExecCliOptions& o) {
  JobOptions job = o.job;
  if (o.emulate_world > 0 && o.schedule_file.empty()) {
    // Build the N-GPU job's schedule; rank 0 of it runs on the GPU present.
    const Topology t = load_topology(job.topology);
    if (o.emulate_world % t.gpus_per_node != 0) {
      throw ConfigError(SourceLocation{"<--emulate-world>", 0, 0}, "--emulate-world",
                        std::to_string(o.emulate_world) + " GPUs is not a whole number of " + t.name + " nodes",
                        "use a multiple of " + std::to_string(t.gpus_per_node));
    }
    job.sets.push_back("nodes=" + std::to_string(o.emulate_world / t.gpus_per_node));
  }
  Topology topology;
  const Schedule schedule = load_or_build_schedule_for_cli(o.schedule_file, job, &topology);
  if (o.emulate_world > 0 && o.emulate_world != schedule.info.world_size) {
    throw ConfigError(SourceLocation{"<--emulate-world>", 0, 0}, "--emulate-world",
                      "the schedule is for " + std::to_string(schedule.info.world_size) + " GPUs",
                      "use --emulate-world " + std::to_string(schedule.info.world_size));
  }
  const ExecResult result =
      o.backend == "cuda" ? run_on_gpus(schedule, topology, o) : run_on_host(schedule, topology, o);
  const Report report = make_report(schedule, topology, result.run);
  std::cout << report_text(report);
  if (!o.json.empty()) write_text_file(o.json, report_json(report), "--json");
  if (!o.trace.empty()) write_text_file(o.trace, chrome_trace(schedule, result.run), "--trace");
  if (!result.problems.empty()) {
    std::cerr << "\n" << result.problems.size() << " problem" << (result.problems.size() == 1 ? "" : "s") << ":\n";
    for (const auto& p : result.problems) std::cerr << "  - " << p << "\n";
    throw Error("the run found " + std::to_string(result.problems.size()) + " problem(s); see above");
  }
}

}  // namespace

void register_exec(CLI::App& app) {
  auto o = std::make_shared<ExecCliOptions>();
  CLI::App* cmd = app.add_subcommand("exec", "run the schedule on the host backend (threads as ranks) or on GPUs");
  add_job_options(*cmd, o->job);
  cmd->add_option("--schedule", o->schedule_file, "run this schedule IR file instead of building one");
  cmd->add_option("--backend", o->backend, "host (threads as ranks, real data, no GPU) or cuda")
      ->check(CLI::IsMember({"host", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--json", o->json, "write the measured report as JSON (compare with 'fsdpsim validate')");
  cmd->add_option("--trace", o->trace, "write a Chrome-trace JSON of the measured run");
  cmd->add_option("--steps", o->steps, "steps to run; the last is the steady state")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--ranks", o->ranks, "host: threads as ranks (default: the schedule's world size)");
  cmd->add_flag("--emulate", o->emulate, "host: run rank 0 alone, collectives emulated locally");
  cmd->add_option("--bytes-scale", o->bytes_scale, "host: each buffer holds size/N real bytes")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  cmd->add_option("--order", o->order,
                  "host: 'predicted' performs allocations in the simulator's order (exact peak "
                  "comparison), 'free' lets streams race")
      ->check(CLI::IsMember({"predicted", "free"}))
      ->capture_default_str();
  cmd->add_option("--inject", o->inject,
                  "host: inject a fault, e.g. stall:rank=3,op=ag.layer.2.mb0[,step=S][,for=2s] (the rank never "
                  "arrives, or arrives late) or oom:rank=0,op=fwd.layer.5.mb0[,step=S][,buffer=NAME] (an allocation "
                  "fails); repeatable");
  cmd->add_option("--collective-timeout", o->collective_timeout,
                  "a collective that has not finished after this long is aborted and reported, e.g. 5s (host "
                  "default 30s; cuda default 600s)");
  cmd->add_option("--emulate-world", o->emulate_world,
                  "cuda: run rank 0 of an N-GPU job on one GPU (memory plan check); with pp, the first GPU of "
                  "each stage in turn");
  cmd->add_flag("--check", o->check,
                "cuda: verify every collective's result (nccl-tests #wrong) and every pipeline message");
  cmd->add_option("--devices", o->devices, "cuda: local GPU indices to use (default: all visible)")->delimiter(',');
  cmd->add_flag("--mpi", o->mpi, "cuda: one process per GPU under mpirun/srun");
  cmd->callback([o] { execute(*o); });
}

}  // namespace fsdpsim::cli
