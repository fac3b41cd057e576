// run_cuda: option checks, device discovery, and the single-process launcher — ncclCommInitAll over the GPUs and one
// host thread per GPU running the interpreter on that GPU's backend (or rank 0 alone when emulating a larger world).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <thread>

#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/cuda_launch.h"
#include "exec/cuda/nccl/nccl_nonblocking.h"
#include "exec/cuda/runtime/cuda_check.h"
#include "exec/interpreter.h"
#include "exec/stage_runs.h"

namespace fsdpsim {
namespace {

[[noreturn]] void bad_option(const std::string& key, const std::string& problem, const std::string& fix) {
  throw ConfigError(SourceLocation{"<exec --backend cuda>", 0, 0}, key, problem, fix);
}

void check_devices(const Schedule& s, const CudaOptions& o) {
  std::set<int32_t> seen;
  for (const int32_t d : o.devices) {
    if (d < 0)
      bad_option("--devices", "device index " + std::to_string(d) + " is negative", "list CUDA device indices from 0");
    if (!seen.insert(d).second && !o.mpi) {
      bad_option("--devices", "lists GPU " + std::to_string(d) + " twice", "list each GPU once");
    }
  }
  const auto world = static_cast<size_t>(s.info.world_size);
  if (o.emulate_world > 0 && o.devices.size() > 1) {
    bad_option("--devices", "lists " + std::to_string(o.devices.size()) + " GPUs but --emulate-world runs on one",
               "list one device");
  }
  if (!o.mpi && o.emulate_world == 0 && !o.devices.empty() && o.devices.size() != world) {
    bad_option("--devices",
               "lists " + std::to_string(o.devices.size()) + " GPUs but the schedule needs " + std::to_string(world) +
                   " (one per rank)",
               "list " + std::to_string(world) + " devices, use --emulate-world " + std::to_string(world) +
                   " to check the memory plan on one GPU, or --mpi across nodes");
  }
}

// The GPUs of this process, one per rank: the listed ones, else the first world-size visible ones.
std::vector<int32_t> pick_devices(const Schedule& s, const CudaOptions& o, int32_t ranks) {
  int count = 0;
  FSDPSIM_CUDA(cudaGetDeviceCount(&count));
  std::vector<int32_t> devices = o.devices;
  if (devices.empty()) {
    if (count < ranks) {
      bad_option("--devices",
                 "the schedule needs " + std::to_string(s.info.world_size) + " GPUs but " + std::to_string(count) +
                     " are visible",
                 "use --emulate-world " + std::to_string(s.info.world_size) +
                     " to check its memory plan on one GPU, or --mpi to run one process per GPU across nodes");
    }
    for (int32_t d = 0; d < ranks; ++d) devices.push_back(d);
  }
  devices.resize(static_cast<size_t>(ranks));
  for (const int32_t d : devices) {
    if (d >= count) {
      bad_option("--devices", "GPU " + std::to_string(d) + " does not exist (" + std::to_string(count) + " visible)",
                 "list indices below " + std::to_string(count));
    }
  }
  return devices;
}

// A failure on one rank makes the others stop (their errors are consequences): the first rank to fail is the cause.
void rethrow_root_cause(const std::vector<std::exception_ptr>& errors, const std::vector<char>& root) {
  for (size_t r = 0; r < errors.size(); ++r) {
    if (errors[r] && root[r] != 0) std::rethrow_exception(errors[r]);
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// `outcomes[i]` is the outcome of world rank `ranks[i]`.
ExecResult collect(const Schedule& s, const std::vector<RankOutcome>& outcomes, const std::vector<int32_t>& ranks,
                   const std::vector<int32_t>& devices, const std::string& mode, CudaOverheads& overheads) {
  ExecResult result;
  result.run = outcomes.front().run;
  if (s.info.pipeline_stages > 1) {
    // Each stage's first GPU measured that stage: one run of the whole pipeline from them.
    std::vector<RunRecord> by_stage;
    for (int32_t stage = 0; stage < s.info.pipeline_stages; ++stage) {
      const auto at = std::find(ranks.begin(), ranks.end(), rank_in_stage(s, 0, stage));
      FSDPSIM_CHECK(at != ranks.end(), "every stage's first GPU ran");
      by_stage.push_back(outcomes[static_cast<size_t>(at - ranks.begin())].run);
    }
    result.run = merge_stage_runs(s, by_stage);
  }
  for (size_t i = 0; i < outcomes.size(); ++i) {
    for (const auto& p : outcomes[i].problems) result.problems.push_back("rank " + std::to_string(ranks[i]) + ": " + p);
  }
  result.measurement().device = describe_devices(devices, mode);
  overheads = outcomes.front().overheads;
  return result;
}

// Nonblocking world communicators for the local GPUs: one ncclCommInitRankConfig per GPU inside one group (what
// ncclCommInitAll does, which takes no config; nccl-tests' threadInit does the same), each then waited for.
std::vector<ncclComm_t> init_world(const std::vector<int32_t>& devices, int32_t world, TimeNs timeout_ns) {
  ncclUniqueId id{};
  FSDPSIM_NCCL(ncclGetUniqueId(&id));
  // NCCL may write a slot from its background thread after a failed wait: the slots are left to it then.
  auto slots = std::make_unique<ncclComm_t[]>(static_cast<size_t>(world));
  ncclConfig_t config = nonblocking_config();
  FSDPSIM_NCCL(ncclGroupStart());
  ncclResult_t first = ncclSuccess;
  cudaError_t device = cudaSuccess;
  for (int32_t r = 0; r < world && (first == ncclSuccess || first == ncclInProgress) && device == cudaSuccess; ++r) {
    device = cudaSetDevice(devices[static_cast<size_t>(r)]);
    if (device == cudaSuccess) first = ncclCommInitRankConfig(&slots[static_cast<size_t>(r)], world, id, r, &config);
  }
  const ncclResult_t ended = ncclGroupEnd();  // the group is closed whatever failed inside it
  std::vector<ncclComm_t> comms;
  try {
    if (device != cudaSuccess) throw_cuda_error(device, "cudaSetDevice (communicator setup)", __FILE__, __LINE__);
    FSDPSIM_NCCL_NB(first);
    FSDPSIM_NCCL_NB(ended);
    for (int32_t r = 0; r < world; ++r) {
      const NcclWait wait{timeout_ns, nullptr,
                          "ncclCommInitRankConfig for rank " + std::to_string(r) + " on GPU " +
                              std::to_string(devices[static_cast<size_t>(r)])};
      comms.push_back(wait_new_comm(&slots[static_cast<size_t>(r)], nullptr, wait));
    }
  } catch (...) {
    for (int32_t r = 0; r < world; ++r) {
      ncclComm_t c = std::atomic_ref<ncclComm_t>(slots[static_cast<size_t>(r)]).load(std::memory_order_acquire);
      if (c != nullptr) (void)ncclCommAbort(c);
    }
    (void)slots.release();
    throw;
  }
  return comms;
}

ExecResult run_threads(const Schedule& s, const CudaOptions& o, CudaOverheads& overheads) {
  const int32_t world = s.info.world_size;
  const std::vector<int32_t> devices = pick_devices(s, o, world);
  // Each GPU's memory in use before NCCL (its context), so that the communicators' share can be told apart.
  std::vector<int64_t> before_world;
  for (const int32_t d : devices) {
    FSDPSIM_CUDA(cudaSetDevice(d));
    FSDPSIM_CUDA(cudaFree(nullptr));  // creates the context now
    before_world.push_back(device_memory_in_use());
  }
  const std::vector<ncclComm_t> comms = init_world(devices, world, o.collective_timeout_ns);
  std::atomic<bool> abort{false};
  IssueBoard board(world);
  PredictedPeak predicted(o.predicted_peak);
  const RankShared shared{&abort, &board, &predicted};
  std::vector<RankOutcome> outcomes(static_cast<size_t>(world));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  std::vector<char> root(static_cast<size_t>(world), 0);
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < world; ++r) {
    const auto i = static_cast<size_t>(r);
    threads.emplace_back([&, r, i] {
      bool first = false;
      try {
        outcomes[i] = run_rank(s, o, devices[i], r, world, comms[i], shared, &first, before_world[i]);
      } catch (...) {
        root[i] = first ? 1 : 0;
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  rethrow_root_cause(errors, root);
  std::vector<int32_t> ranks(static_cast<size_t>(world));
  std::iota(ranks.begin(), ranks.end(), 0);
  return collect(s, outcomes, ranks, devices, "", overheads);
}

ExecResult run_emulated(const Schedule& s, const CudaOptions& o, CudaOverheads& overheads) {
  const std::vector<int32_t> devices{o.devices.empty() ? 0 : o.devices.front()};
  int count = 0;
  FSDPSIM_CUDA(cudaGetDeviceCount(&count));
  if (devices.front() >= count) {
    bad_option("--devices",
               "GPU " + std::to_string(devices.front()) + " does not exist (" + std::to_string(count) + " visible)",
               "list an index below " + std::to_string(count));
  }
  std::atomic<bool> abort{false};
  PredictedPeak predicted(o.predicted_peak);
  // Rank 0 alone; with pipeline parallelism, the first GPU of each stage, one after another on this GPU (a receive
  // writes what its send would have sent).
  const int32_t stages = std::max(1, s.info.pipeline_stages);
  std::vector<RankOutcome> outcomes;
  std::vector<int32_t> ranks;
  for (int32_t stage = 0; stage < stages; ++stage) {
    ranks.push_back(rank_in_stage(s, 0, stage));
    outcomes.push_back(run_rank(s, o, devices.front(), ranks.back(), s.info.world_size, nullptr,
                                RankShared{&abort, nullptr, &predicted}, nullptr));
  }
  const std::string mode = stages > 1 ? "emulating the first GPU of each of " + std::to_string(stages) +
                                            " pipeline stages of " + std::to_string(s.info.world_size) +
                                            " GPUs, one after another"
                                      : "emulating rank 0 of " + std::to_string(s.info.world_size) + " GPUs";
  return collect(s, outcomes, ranks, devices, mode, overheads);
}

}  // namespace

void load_kernels_eagerly_for_pipelines(const Schedule& schedule, const CudaOptions& options) {
  if (schedule.info.pipeline_stages > 1 && options.emulate_world == 0) {
    (void)setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
  }
}

bool cuda_device_available(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();  // leave no error behind for the next CUDA call of this thread
  std::string reason;
  if (e != cudaSuccess) {
    reason = std::string("cudaGetDeviceCount failed with ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
             "): no usable NVIDIA driver or GPU on this machine";
  } else if (count < 1) {
    reason = "no CUDA device is visible (check CUDA_VISIBLE_DEVICES)";
  }
  if (why != nullptr) *why = reason;
  return reason.empty();
}

void check_cuda_options(const Schedule& s, const CudaOptions& o) {
  const std::string world = std::to_string(s.info.world_size);
  if (o.steps < 1) bad_option("--steps", "is " + std::to_string(o.steps), "run at least one step");
  if (o.collective_timeout_ns <= 0) {
    bad_option("--collective-timeout", "is " + format_time_ns(o.collective_timeout_ns),
               "give a positive duration, e.g. 600s (the default)");
  }
  if (s.info.world_size < 1) bad_option("world_size", "the schedule's world size is " + world, "rebuild the schedule");
  if (o.emulate_world < 0) {
    bad_option("--emulate-world", "is negative", "use 0 to run every rank, or " + world + " to emulate rank 0");
  }
  if (o.emulate_world > 0 && o.emulate_world != s.info.world_size) {
    bad_option(
        "--emulate-world",
        "is " + std::to_string(o.emulate_world) + " but the schedule was built for " + world + " GPUs",
        "use --emulate-world " + world + ", or rebuild the schedule for " + std::to_string(o.emulate_world) + " GPUs");
  }
  if (o.emulate_world > 0 && o.check) {
    bad_option("--check", "needs real collectives, but with --emulate-world they are copies of one rank's bytes",
               "drop --check or --emulate-world");
  }
  if (o.emulate_world > 0 && o.mpi) bad_option("--mpi", "and --emulate-world exclude each other", "drop one of them");
#if !FSDPSIM_HAVE_MPI
  if (o.mpi) {
    bad_option("--mpi", "this fsdpsim was built without MPI",
               "install libopenmpi-dev and reconfigure with -DFSDPSIM_MPI=ON, or drop --mpi");
  }
#endif
  check_devices(s, o);
  for (const Group& g : s.groups) (void)group_membership(g, 0, s.info.world_size);
}

std::string describe_devices(const std::vector<int32_t>& devices, const std::string& mode) {
  cudaDeviceProp prop{};
  FSDPSIM_CUDA(cudaGetDeviceProperties(&prop, devices.front()));
  std::string text = prop.name;
  if (devices.size() > 1) text += " x" + std::to_string(devices.size());
  int version = 0;
  FSDPSIM_NCCL(ncclGetVersion(&version));
  // NCCL_VERSION_CODE for 2.9 and later: major·10000 + minor·100 + patch (nccl.h, NCCL_VERSION).
  text += " (NCCL " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
          std::to_string(version % 100);
  if (!mode.empty()) text += ", " + mode;
  return text + ")";
}

RankOutcome run_rank(const Schedule& schedule, const CudaOptions& options, int32_t device, int32_t rank,
                     int32_t world_size, ncclComm_t world, const RankShared& shared, bool* root_cause,
                     int64_t in_use_before_world_bytes) {
  CudaRankSetup setup;
  setup.device = device;
  setup.rank = rank;
  setup.world_size = world_size;
  setup.stage = schedule.info.pipeline_stages > 1 ? stage_of_rank(schedule, rank) : -1;
  setup.world = world;
  setup.emulate = options.emulate_world > 0;
  setup.check = options.check;
  setup.abort = shared.stop;
  setup.collective_timeout_ns = options.collective_timeout_ns;
  setup.board = shared.board;
  setup.predicted = shared.predicted;
  setup.in_use_before_world_bytes = in_use_before_world_bytes;
  setup.predict_with_memory = options.predict_with_memory ? &options.predict_with_memory : nullptr;
  CudaBackend backend(setup);  // takes over `world`; its constructor touches no device
  RankOutcome out;
  try {
    FSDPSIM_CUDA(cudaSetDevice(device));
    out.run = interpret(schedule, backend, ExecOptions{.steps = options.steps, .stage = setup.stage});
    out.problems = backend.problems();
    backend.measure_lazy_overheads();
    out.overheads = backend.overheads();
    backend.release_all(false);
  } catch (...) {
    // A fault the watchdog found is the cause; the error that unwound here (an aborted call, a failed stream) is
    // what followed from it. Otherwise raise the flag before aborting the communicators: the other ranks' errors
    // that follow are consequences.
    const std::optional<WatchdogFault> fault = backend.fault();
    const bool first = fault ? fault->first : shared.stop == nullptr || !shared.stop->exchange(true);
    if (root_cause != nullptr) *root_cause = first;
    backend.release_all(true);
    if (fault) throw CudaError(fault->message, fault->kind);
    throw;
  }
  return out;
}

ExecResult run_cuda(const Schedule& schedule, const CudaOptions& options) {
  CudaOverheads ignored;
  return run_cuda(schedule, options, ignored);
}

ExecResult run_cuda(const Schedule& schedule, const CudaOptions& options, CudaOverheads& overheads) {
  check_cuda_options(schedule, options);
  ExecResult result;
  if (options.mpi) {
    result = run_cuda_mpi(schedule, options, overheads);
  } else {
    std::string why;
    if (!cuda_device_available(&why)) throw CudaError("cannot run the schedule on GPUs: " + why, false);
    result = options.emulate_world > 0 ? run_emulated(schedule, options, overheads)
                                       : run_threads(schedule, options, overheads);
  }
  // The run states the memory it measured beyond the IR's buffers; the report shows it in place of the profile's.
  Measurement& measured = result.measurement();
  measured.backend = "cuda";
  measured.device_memory =
      MeasuredDeviceMemory{.device_total_bytes = overheads.device_total_bytes,
                           .overheads = MemoryOverheads{.cuda_context_bytes = overheads.measured_context_bytes,
                                                        .cublas_workspace_bytes = overheads.measured_cublas_bytes,
                                                        .nccl_bytes = overheads.measured_nccl_bytes,
                                                        .nccl_registration_bytes = 0,
                                                        .communicators = overheads.communicators},
                           .executor_scratch_bytes = overheads.scratch_bytes + overheads.check_bytes};
  measured.collectives_emulated = options.emulate_world > 0;
  return result;
}

}  // namespace fsdpsim
