// A predicted run written as a PyTorch profiler trace (Kineto's Chrome JSON), with the kernel names and
// record_param_comms metadata PyTorch gives NCCL's kernels.
#include "report/profiler_trace.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>

#include "schedule/dtype.h"

namespace fsdpsim {
namespace {

// PyTorch's names: the NCCL kernel of a collective, and the c10d call record_param_comms names.
const char* nccl_kernel_name(OpKind kind) {
  switch (kind) {
    case OpKind::all_gather:
      return "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    case OpKind::reduce_scatter:
      return "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    case OpKind::all_reduce:
      return "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    case OpKind::all_to_all:
      return "ncclDevKernel_AllToAll_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
    default:
      return "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
  }
}

const char* c10d_name(OpKind kind) {
  switch (kind) {
    case OpKind::all_gather:
      return "_allgather_base";
    case OpKind::reduce_scatter:
      return "_reduce_scatter_base";
    case OpKind::all_reduce:
      return "allreduce";
    case OpKind::all_to_all:
      return "all_to_allv";
    case OpKind::send:
      return "send";
    default:
      return "recv";
  }
}

const char* torch_dtype(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return "Float";
    case DType::fp8:
      return "Float8_e4m3fn";
    case DType::fp16:
      return "Half";
    default:
      return "BFloat16";
  }
}

}  // namespace

std::string predicted_profiler_trace(const Schedule& s, const RunRecord& run) {
  using OrderedJson = nlohmann::ordered_json;
  OrderedJson events = OrderedJson::array();
  const auto us = [](TimeNs ns) { return static_cast<double>(ns) / 1e3; };
  const auto range = [&](const std::string& name, int32_t pid, TimeNs start, TimeNs end) {
    events.push_back({{"ph", "X"},
                      {"cat", "gpu_user_annotation"},
                      {"name", name},
                      {"pid", pid},
                      {"tid", 0},
                      {"ts", us(start)},
                      {"dur", us(end - start)}});
  };
  for (size_t step = 0; step < run.steps.size(); ++step) {
    const StepRun& sr = run.steps[step];
    for (int32_t stage = 0; stage < std::max(1, s.info.pipeline_stages); ++stage) {
      range("ProfilerStep#" + std::to_string(step), stage, sr.start_ns, sr.end_ns);
    }
    // One range per (unit, phase, micro-batch) over its compute ops, and one over the optimizer's ops.
    std::map<std::tuple<int32_t, int32_t, Phase, int32_t>, std::pair<TimeNs, TimeNs>> unit_spans;
    std::map<int32_t, std::pair<TimeNs, TimeNs>> optimizer_spans;
    const auto widen = [](std::pair<TimeNs, TimeNs>& span, const OpTiming& t, bool first) {
      span.first = first ? t.start_ns : std::min(span.first, t.start_ns);
      span.second = first ? t.end_ns : std::max(span.second, t.end_ns);
    };
    for (const Op& op : s.ops) {
      const OpTiming& t = sr.ops[op.id];
      if (t.end_ns <= t.start_ns) continue;
      const int32_t stage = s.stage_of(op);
      OrderedJson e{{"ph", "X"},
                    {"cat", "kernel"},
                    {"name", op.name},
                    {"pid", stage},
                    {"tid", op.stream.value() + 1},
                    {"ts", us(t.start_ns)},
                    {"dur", us(t.end_ns - t.start_ns)}};
      if (is_collective(op.kind) || op.kind == OpKind::send || op.kind == OpKind::recv) {
        const int64_t element = std::max<int64_t>(1, dtype_bytes(op.dtype));
        const int32_t group = op.group.valid() ? s.groups[op.group].size : 2;
        e["name"] = nccl_kernel_name(op.kind);
        e["args"] = {{"Collective name", c10d_name(op.kind)},
                     {"In msg nelems", op.send_bytes / element},
                     {"Out msg nelems", op.recv_bytes / element},
                     {"Group size", group},
                     {"dtype", torch_dtype(op.dtype)},
                     {"Process Group Name", op.group.valid() ? s.groups[op.group].name : "p2p"}};
      } else if (op.kind == OpKind::compute) {
        if (op.unit >= 0) {
          auto key = std::make_tuple(stage, op.unit, op.phase, op.micro_batch);
          const bool first = !unit_spans.contains(key);
          widen(unit_spans[key], t, first);
        }
      } else if (op.kind == OpKind::optimizer) {
        const bool first = !optimizer_spans.contains(stage);
        widen(optimizer_spans[stage], t, first);
      } else {
        continue;  // copies, syncs: not kernels a profiler lists as such
      }
      events.push_back(std::move(e));
    }
    for (const auto& [key, span] : unit_spans) {
      const auto& [stage, unit, phase, micro_batch] = key;
      range(s.units[static_cast<size_t>(unit)].name + " " + std::string(to_string(phase)) + " mb" +
                std::to_string(micro_batch),
            stage, span.first, span.second);
    }
    for (const auto& [stage, span] : optimizer_spans)
      range("Optimizer.step#fsdpsim.step", stage, span.first, span.second);
  }
  const OrderedJson trace{{"schemaVersion", 1}, {"displayTimeUnit", "ms"}, {"traceEvents", events}};
  return trace.dump() + "\n";
}

}  // namespace fsdpsim
