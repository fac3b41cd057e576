#include "schedule/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <tuple>

#include "common/units.h"

namespace fsdpsim {

ScheduleStats schedule_stats(const Schedule& s) {
  ScheduleStats stats;
  stats.ops = static_cast<int64_t>(s.ops.size());
  stats.buffers = static_cast<int64_t>(s.buffers.size());
  stats.layers = static_cast<int32_t>(s.units.size()) - 2;
  std::map<std::tuple<OpKind, GroupId, int64_t>, size_t> index;
  for (const Op& op : s.ops) {
    if (!is_collective(op.kind)) continue;
    stats.step_send_bytes += op.send_bytes;
    const auto key = std::make_tuple(op.kind, op.group, collective_size_bytes(op));
    auto it = index.find(key);
    if (it == index.end()) {
      const Group& g = s.groups.at(op.group.index());
      stats.collectives.push_back(CollectiveCount{op.kind, g.name, g.size, collective_size_bytes(op), 0});
      it = index.emplace(key, stats.collectives.size() - 1).first;
    }
    ++stats.collectives[it->second].count;
  }
  for (const Buffer& b : s.buffers) {
    if (!b.persistent) continue;
    stats.persistent_bytes[b.category] += b.size_bytes;
    stats.persistent_total_bytes += b.size_bytes;
  }
  return stats;
}

ModelSize model_size(const Schedule& s) {
  ModelSize size;
  size.params = s.info.model_params;
  size.active_params = s.info.model_active_params;
  if (s.info.pipeline_stages <= 1) {
    for (const UnitInfo& u : s.units) size.params_per_rank += u.params;
  } else {
    // A pipeline rank holds its stage's units: the fullest stage's.
    std::vector<std::set<int32_t>> units(static_cast<size_t>(s.info.pipeline_stages));
    for (const Op& op : s.ops) {
      if (op.unit >= 0) units[static_cast<size_t>(s.stage_of(op))].insert(op.unit);
    }
    for (const std::set<int32_t>& stage : units) {
      int64_t params = 0;
      for (const int32_t u : stage) params += s.units[static_cast<size_t>(u)].params;
      size.params_per_rank = std::max(size.params_per_rank, params);
    }
  }
  if (s.info.global_tokens_per_step > 0) {
    // The whole job's FLOPs per step overflow int64 on the largest jobs (Llama-3.1-405B over 268M tokens a step is
    // 6.5e20), so the GPUs-per-token ratio is reduced first; the quotient is the same either way.
    const int64_t g = std::gcd(int64_t{s.info.world_size}, s.info.global_tokens_per_step);
    const int64_t gpus = s.info.world_size / g, tokens = s.info.global_tokens_per_step / g;
    size.flops_per_token = s.info.model_flops_per_gpu <= std::numeric_limits<int64_t>::max() / gpus
                               ? s.info.model_flops_per_gpu * gpus / tokens
                               : std::llround(static_cast<long double>(s.info.model_flops_per_gpu) * gpus / tokens);
  }
  return size;
}

std::string model_size_text(const ModelSize& size) {
  if (size.params <= 0) return "";
  char flops[32];
  std::snprintf(flops, sizeof flops, "%.2f GFLOP", static_cast<double>(size.flops_per_token) / 1e9);
  return format_count(size.params) + " parameters (" + format_count(size.active_params) + " active per token), " +
         format_count(size.params_per_rank) + " per rank before FSDP sharding, " + flops + " per token";
}

std::string schedule_summary(const Schedule& s) {
  const ScheduleStats stats = schedule_stats(s);
  std::ostringstream out;
  char line[256];
  out << "schedule: " << s.info.model << ", " << s.info.implementation << " " << s.info.strategy << ", "
      << s.info.world_size << " GPUs, " << s.info.micro_batches << " micro-batch"
      << (s.info.micro_batches == 1 ? "" : "es") << " per step, " << s.info.global_tokens_per_step
      << " tokens per step\n";
  if (const std::string size = model_size_text(model_size(s)); !size.empty()) out << "model: " << size << "\n";
  out << "units: " << s.units.size() << " (embedding, " << stats.layers << " decoder layers, output); prefetch depth "
      << s.info.prefetch_depth << " unit" << (s.info.prefetch_depth == 1 ? "" : "s") << " ahead\n";
  out << "streams:";
  for (const auto& st : s.streams) out << " " << st.name;
  out << "; " << stats.ops << " ops, " << stats.buffers << " buffers\n\n";
  out << "collectives per step (size as nccl-tests prints it: the whole gathered/scattered buffer):\n";
  std::snprintf(line, sizeof line, "  %-15s %-10s %6s %12s %8s %12s\n", "kind", "group", "ranks", "size", "count",
                "size×count");
  out << line;
  for (const auto& c : stats.collectives) {
    std::snprintf(line, sizeof line, "  %-15s %-10s %6d %12s %8lld %12s\n", std::string(to_string(c.kind)).c_str(),
                  c.group.c_str(), c.group_size, format_bytes(c.size_bytes).c_str(), static_cast<long long>(c.count),
                  format_bytes(c.size_bytes * c.count).c_str());
    out << line;
  }
  out << "\npersistent memory per rank:\n";
  for (const auto& [category, bytes] : stats.persistent_bytes) {
    std::snprintf(line, sizeof line, "  %-16s %12s\n", std::string(to_string(category)).c_str(),
                  format_bytes(bytes).c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "  %-16s %12s\n", "total", format_bytes(stats.persistent_total_bytes).c_str());
  out << line;
  return out.str();
}

}  // namespace fsdpsim
