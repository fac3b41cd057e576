#include "schedule/ir_yaml.h"

#include <limits>

#include "common/limits.h"
#include "common/text.h"
#include "common/yaml_reader.h"

namespace fsdpsim {
namespace {

constexpr int64_t kMaxGemmDim = int64_t{1} << 40;

template <class IdT>
void emit_ids(YAML::Emitter& out, const char* key, const std::vector<IdT>& ids) {
  if (ids.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const IdT id : ids) out << id.value();
  out << YAML::EndSeq;
}

void emit_info(YAML::Emitter& out, const ScheduleInfo& info) {
  out << YAML::Key << "info" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << info.model;
  out << YAML::Key << "implementation" << YAML::Value << info.implementation;
  out << YAML::Key << "strategy" << YAML::Value << info.strategy;
  out << YAML::Key << "world_size" << YAML::Value << info.world_size;
  out << YAML::Key << "micro_batches" << YAML::Value << info.micro_batches;
  out << YAML::Key << "global_tokens_per_step" << YAML::Value << info.global_tokens_per_step;
  out << YAML::Key << "model_flops_per_gpu" << YAML::Value << info.model_flops_per_gpu;
  out << YAML::Key << "compute_dtype" << YAML::Value << std::string(to_string(info.compute_dtype));
  out << YAML::Key << "prefetch_depth" << YAML::Value << info.prefetch_depth;
  if (info.moe_routing_skew != 1.0)
    out << YAML::Key << "moe_routing_skew" << YAML::Value << shortest_decimal(info.moe_routing_skew);
  if (info.pipeline_stages > 1) {
    out << YAML::Key << "pipeline_stages" << YAML::Value << info.pipeline_stages;
    out << YAML::Key << "virtual_stages" << YAML::Value << info.virtual_stages;
    out << YAML::Key << "pipeline_schedule" << YAML::Value << info.pipeline_schedule;
  }
  if (info.attention_kernel != AttentionKernel::flash) {
    out << YAML::Key << "attention_kernel" << YAML::Value << std::string(to_string(info.attention_kernel));
  }
  if (info.query_heads_per_kv_head != 1) {
    out << YAML::Key << "query_heads_per_kv_head" << YAML::Value << info.query_heads_per_kv_head;
  }
  if (info.fp8_gemm_scaling != Fp8GemmScaling::tensorwise) {
    out << YAML::Key << "fp8_gemm_scaling" << YAML::Value << std::string(to_string(info.fp8_gemm_scaling));
  }
  if (info.host_dispatch != HostDispatch::eager) {
    out << YAML::Key << "host_dispatch" << YAML::Value << std::string(to_string(info.host_dispatch));
  }
  if (info.model_params > 0) {
    out << YAML::Key << "model_params" << YAML::Value << info.model_params;
    out << YAML::Key << "model_active_params" << YAML::Value << info.model_active_params;
  }
  out << YAML::EndMap;
}

void emit_gemm(YAML::Emitter& out, const Gemm& g) {
  out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << g.name << YAML::Key << "m" << YAML::Value
      << g.m << YAML::Key << "n" << YAML::Value << g.n << YAML::Key << "k" << YAML::Value << g.k;
  if (g.batch != 1) out << YAML::Key << "batch" << YAML::Value << g.batch;
  if (g.attention) out << YAML::Key << "attention" << YAML::Value << true;
  if (g.bf16_in_fp8) out << YAML::Key << "bf16_in_fp8" << YAML::Value << true;
  out << YAML::EndMap;
}

void emit_op(YAML::Emitter& out, const Schedule& s, const Op& op) {
  out << YAML::BeginMap;
  out << YAML::Key << "id" << YAML::Value << op.id.value();
  out << YAML::Key << "name" << YAML::Value << op.name;
  out << YAML::Key << "kind" << YAML::Value << std::string(to_string(op.kind));
  out << YAML::Key << "phase" << YAML::Value << std::string(to_string(op.phase));
  if (op.unit >= 0) out << YAML::Key << "unit" << YAML::Value << op.unit;
  if (op.micro_batch >= 0) out << YAML::Key << "micro_batch" << YAML::Value << op.micro_batch;
  out << YAML::Key << "stream" << YAML::Value
      << (s.streams.contains(op.stream) ? s.streams[op.stream].name : std::string("?"));
  if (s.groups.contains(op.group)) out << YAML::Key << "group" << YAML::Value << s.groups[op.group].name;
  if (op.reduce_op != ReduceOp::none)
    out << YAML::Key << "reduce_op" << YAML::Value << std::string(to_string(op.reduce_op));
  if (op.dtype != DType::bf16) out << YAML::Key << "dtype" << YAML::Value << std::string(to_string(op.dtype));
  if (op.send_bytes != 0) out << YAML::Key << "send_bytes" << YAML::Value << op.send_bytes;
  if (op.recv_bytes != 0) out << YAML::Key << "recv_bytes" << YAML::Value << op.recv_bytes;
  if (op.bytes_touched != 0) out << YAML::Key << "bytes_touched" << YAML::Value << op.bytes_touched;
  if (op.class_bytes.unvectorized != 0)
    out << YAML::Key << "unvectorized_bytes" << YAML::Value << op.class_bytes.unvectorized;
  if (op.class_bytes.reduction != 0) out << YAML::Key << "reduction_bytes" << YAML::Value << op.class_bytes.reduction;
  if (op.kernels != 0) out << YAML::Key << "kernels" << YAML::Value << op.kernels;
  if (!op.gemms.empty()) {
    out << YAML::Key << "gemms" << YAML::Value << YAML::BeginSeq;
    for (const auto& g : op.gemms) emit_gemm(out, g);
    out << YAML::EndSeq;
  }
  emit_ids(out, "allocs", op.allocs);
  emit_ids(out, "frees", op.frees);
  emit_ids(out, "reads", op.reads);
  emit_ids(out, "writes", op.writes);
  emit_ids(out, "deps", op.deps);
  if (op.peer.valid()) out << YAML::Key << "peer" << YAML::Value << op.peer.value();
  out << YAML::EndMap;
}

// ---- reading ----------------------------------------------------------------------------------------------------
template <typename E>
E parse_enum(const YamlValue& v, std::optional<E> (*parse)(std::string_view), const std::vector<E>& all) {
  const std::string text = v.as_string();
  if (auto e = parse(text)) return *e;
  std::vector<std::string> names;
  for (const E e : all) names.emplace_back(to_string(e));
  v.fail("unknown value '" + text + "'" + did_you_mean(text, names), "valid: " + join(names));
}

std::optional<DType> parse_dtype_opt(std::string_view t) {
  return parse_dtype(t);
}

template <class IdT>
std::vector<IdT> read_ids(YamlMap& map, const std::string& key) {
  std::vector<IdT> out;
  if (!map.has(key)) return out;
  for (const auto& v : map.list(key))
    out.emplace_back(static_cast<int32_t>(v.as_int(0, std::numeric_limits<int32_t>::max())));
  return out;
}

int32_t index_by_name(const YamlValue& v, const std::vector<std::string>& names, const char* what) {
  const std::string name = v.as_string();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int32_t>(i);
  }
  v.fail(std::string("unknown ") + what + " '" + name + "'" + did_you_mean(name, names),
         std::string("declare it under '") + what + "s:' or use one of: " + join(names));
}

ScheduleInfo read_info(YamlMap map) {
  ScheduleInfo info;
  info.model = map.get("model").as_string();
  info.implementation = map.get("implementation").as_choice({"megatron_fsdp", "fsdp2"});
  info.strategy = map.get("strategy").as_choice({"no_shard", "optim", "optim_grads", "optim_grads_params"});
  info.world_size = static_cast<int32_t>(map.get("world_size").as_int(1, 1 << 22));
  info.micro_batches = static_cast<int32_t>(map.get("micro_batches").as_int(1, 100000));
  info.global_tokens_per_step = map.get("global_tokens_per_step").as_int(0, limits::kMaxTokensPerStep);
  info.model_flops_per_gpu = map.get("model_flops_per_gpu").as_int(0, limits::kMaxStepFlopsPerGpu);
  info.compute_dtype =
      parse_enum<DType>(map.get("compute_dtype"), parse_dtype_opt, {DType::fp32, DType::bf16, DType::fp16, DType::fp8});
  info.prefetch_depth = static_cast<int32_t>(map.int_or("prefetch_depth", 0, 0, 1 << 20));
  if (map.has("moe_routing_skew")) info.moe_routing_skew = map.get("moe_routing_skew").as_double(1.0, 1024.0);
  info.pipeline_stages = static_cast<int32_t>(map.int_or("pipeline_stages", 1, 1, limits::kMaxPipelineStages));
  info.virtual_stages = static_cast<int32_t>(map.int_or("virtual_stages", 1, 1, limits::kMaxPipelineStages));
  if (map.has("pipeline_schedule"))
    info.pipeline_schedule =
        map.get("pipeline_schedule").as_choice({"gpipe", "1f1b", "interleaved_1f1b", "zbv", "dualpipev"});
  if (map.has("attention_kernel")) {
    // as_choice() refuses any name the table does not list, so parse() cannot fail here.
    info.attention_kernel =
        kAttentionKernelNames.parse(map.get("attention_kernel").as_choice(kAttentionKernelNames.names())).value();
  }
  info.query_heads_per_kv_head = static_cast<int32_t>(map.int_or("query_heads_per_kv_head", 1, 1, limits::kMaxHeads));
  if (map.has("fp8_gemm_scaling")) {
    info.fp8_gemm_scaling =
        kFp8GemmScalingNames.parse(map.get("fp8_gemm_scaling").as_choice(kFp8GemmScalingNames.names())).value();
  }
  if (map.has("host_dispatch")) {
    info.host_dispatch =
        kHostDispatchNames.parse(map.get("host_dispatch").as_choice(kHostDispatchNames.names())).value();
  }
  info.model_params = map.int_or("model_params", 0, 0, limits::kMaxParameters);
  info.model_active_params = map.int_or("model_active_params", 0, 0, info.model_params);
  map.finish();
  return info;
}

Gemm read_gemm(YamlMap map) {
  Gemm g;
  g.name = map.get("name").as_string();
  // Each dimension within 2^40 (a GEMM's FLOPs are summed and bounded by validate()), so reading cannot overflow.
  g.m = map.get("m").as_int(0, kMaxGemmDim);
  g.n = map.get("n").as_int(0, kMaxGemmDim);
  g.k = map.get("k").as_int(0, kMaxGemmDim);
  g.batch = map.int_or("batch", 1, 0, kMaxGemmDim);
  g.attention = map.bool_or("attention", false);
  g.bf16_in_fp8 = map.bool_or("bf16_in_fp8", false);
  map.finish();
  return g;
}

Op read_op(YamlMap map, const std::vector<std::string>& streams, const std::vector<std::string>& groups) {
  Op op;
  op.id = OpId(static_cast<int32_t>(map.get("id").as_int(0, std::numeric_limits<int32_t>::max())));
  op.name = map.get("name").as_string();
  op.kind = parse_enum<OpKind>(map.get("kind"), parse_op_kind, all_op_kinds());
  op.phase = parse_enum<Phase>(map.get("phase"), parse_phase, all_phases());
  op.unit = static_cast<int32_t>(map.int_or("unit", -1, -1, std::numeric_limits<int32_t>::max()));
  op.micro_batch = static_cast<int32_t>(map.int_or("micro_batch", -1, -1, std::numeric_limits<int32_t>::max()));
  op.stream = StreamId(index_by_name(map.get("stream"), streams, "stream"));
  if (map.has("group")) op.group = GroupId(index_by_name(map.get("group"), groups, "group"));
  if (map.has("reduce_op"))
    op.reduce_op = parse_enum<ReduceOp>(map.get("reduce_op"), parse_reduce_op, all_reduce_ops());
  if (map.has("dtype")) {
    op.dtype =
        parse_enum<DType>(map.get("dtype"), parse_dtype_opt, {DType::fp32, DType::bf16, DType::fp16, DType::fp8});
  }
  op.send_bytes = map.int_or("send_bytes", 0, 0, limits::kMaxBytes);
  op.recv_bytes = map.int_or("recv_bytes", 0, 0, limits::kMaxBytes);
  op.bytes_touched = map.int_or("bytes_touched", 0, 0, limits::kMaxBytes);
  op.class_bytes.unvectorized = map.int_or("unvectorized_bytes", 0, 0, limits::kMaxBytes);
  op.class_bytes.reduction = map.int_or("reduction_bytes", 0, 0, limits::kMaxBytes);
  op.kernels = static_cast<int32_t>(map.int_or("kernels", 0, 0, limits::kMaxKernelsPerOp));
  if (map.has("gemms")) {
    const YAML::Node list = map.raw("gemms");
    if (!list.IsSequence()) map.fail("'gemms' must be a list", "write gemms: [{name: x, m: 1, n: 1, k: 1}]");
    if (static_cast<int64_t>(list.size()) > limits::kMaxGemmsPerOp) {
      throw ConfigError(location_of(list, map.source()), map.key_path("gemms"),
                        std::to_string(list.size()) + " GEMMs in one op is beyond what fsdpsim models",
                        "at most " + std::to_string(limits::kMaxGemmsPerOp) + "; split the work into several ops");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      op.gemms.push_back(
          read_gemm(YamlMap(list[i], map.source(), map.key_path("gemms") + "[" + std::to_string(i) + "]")));
    }
  }
  op.allocs = read_ids<BufferId>(map, "allocs");
  op.frees = read_ids<BufferId>(map, "frees");
  op.reads = read_ids<BufferId>(map, "reads");
  op.writes = read_ids<BufferId>(map, "writes");
  op.deps = read_ids<OpId>(map, "deps");
  if (map.has("peer"))
    op.peer = OpId(static_cast<int32_t>(map.get("peer").as_int(0, std::numeric_limits<int32_t>::max())));
  map.finish();
  return op;
}

// `max_items` is the limit on the list (common/limits.h), checked before any item is read.
template <typename T, typename F>
std::vector<T> read_list(YamlMap& top, const std::string& key, int64_t max_items, F read_one) {
  std::vector<T> out;
  const YAML::Node list = top.raw(key);
  if (list.IsNull()) return out;
  if (!list.IsSequence()) top.fail("'" + key + "' must be a list", "write one '- ...' entry per item");
  if (static_cast<int64_t>(list.size()) > max_items) {
    throw ConfigError(
        location_of(list, top.source()), key,
        std::to_string(list.size()) + " " + key + " is beyond what fsdpsim models",
        "a step may have at most " + std::to_string(max_items) + " " + key + " (see the limits in docs/hardening.md)");
  }
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    out.push_back(read_one(YamlMap(list[i], top.source(), key + "[" + std::to_string(i) + "]")));
  }
  return out;
}

}  // namespace

std::string schedule_to_yaml(const Schedule& s) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "version" << YAML::Value << s.version;
  emit_info(out, s.info);
  out << YAML::Key << "units" << YAML::Value << YAML::BeginSeq;
  for (const auto& u : s.units) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << u.name << YAML::Key << "params"
        << YAML::Value << u.params << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "groups" << YAML::Value << YAML::BeginSeq;
  for (const auto& g : s.groups) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << g.name << YAML::Key << "size"
        << YAML::Value << g.size << YAML::Key << "stride" << YAML::Value << g.stride << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "streams" << YAML::Value << YAML::BeginSeq;
  for (const auto& st : s.streams) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << st.name;
    if (st.priority != 0) out << YAML::Key << "priority" << YAML::Value << st.priority;
    if (st.stage != 0) out << YAML::Key << "stage" << YAML::Value << st.stage;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "buffers" << YAML::Value << YAML::BeginSeq;
  for (const auto& b : s.buffers) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "id" << YAML::Value << b.id.value() << YAML::Key << "name"
        << YAML::Value << b.name << YAML::Key << "category" << YAML::Value << std::string(to_string(b.category))
        << YAML::Key << "size_bytes" << YAML::Value << b.size_bytes;
    if (b.persistent) out << YAML::Key << "persistent" << YAML::Value << true;
    if (b.nccl_registered) out << YAML::Key << "nccl_registered" << YAML::Value << true;
    if (b.stage != 0) out << YAML::Key << "stage" << YAML::Value << b.stage;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "ops" << YAML::Value << YAML::BeginSeq;
  for (const auto& op : s.ops) emit_op(out, s, op);
  out << YAML::EndSeq;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

Schedule schedule_from_yaml(const std::string& text, const std::string& source) {
  const YamlDocument doc = load_yaml_text(text, source);
  YamlMap top(doc.root, doc.source, "");
  Schedule s;
  const YamlValue version = top.get("version");
  s.version = static_cast<int32_t>(version.as_int(1, INT32_MAX));
  if (s.version > Schedule::kVersion) {
    version.fail("schedule IR version " + std::to_string(s.version) + " is newer than this fsdpsim reads (version " +
                     std::to_string(Schedule::kVersion) + ")",
                 "write the schedule with this fsdpsim ('fsdpsim schedule -o FILE'), or update fsdpsim");
  }
  s.info = read_info(top.map("info"));
  s.units = read_list<UnitInfo>(top, "units", limits::kMaxLayers + 2, [](YamlMap m) {
    UnitInfo u{m.get("name").as_string(), m.get("params").as_int(0, limits::kMaxParameters)};
    m.finish();
    return u;
  });
  s.groups = read_list<Group>(top, "groups", limits::kMaxGroups, [](YamlMap m) {
    Group g{m.get("name").as_string(), static_cast<int32_t>(m.get("size").as_int(1, 1 << 22)),
            static_cast<int32_t>(m.get("stride").as_int(1, 1 << 22))};
    m.finish();
    return g;
  });
  s.streams = read_list<Stream>(top, "streams", limits::kMaxStreams, [](YamlMap m) {
    Stream st{m.get("name").as_string(), static_cast<int32_t>(m.int_or("priority", 0, -8, 8)),
              static_cast<int32_t>(m.int_or("stage", 0, 0, limits::kMaxPipelineStages - 1))};
    m.finish();
    return st;
  });
  s.buffers = read_list<Buffer>(top, "buffers", limits::kMaxScheduleBuffers, [](YamlMap m) {
    Buffer b;
    b.id = BufferId(static_cast<int32_t>(m.get("id").as_int(0, std::numeric_limits<int32_t>::max())));
    b.name = m.get("name").as_string();
    b.category = parse_enum<BufferCategory>(m.get("category"), parse_buffer_category, all_buffer_categories());
    b.size_bytes = m.get("size_bytes").as_int(0, limits::kMaxBytes);
    b.persistent = m.bool_or("persistent", false);
    b.nccl_registered = m.bool_or("nccl_registered", false);
    b.stage = static_cast<int32_t>(m.int_or("stage", 0, 0, limits::kMaxPipelineStages - 1));
    m.finish();
    return b;
  });
  std::vector<std::string> stream_names, group_names;
  for (const auto& st : s.streams) stream_names.push_back(st.name);
  for (const auto& g : s.groups) group_names.push_back(g.name);
  s.ops = read_list<Op>(top, "ops", limits::kMaxScheduleOps,
                        [&](YamlMap m) { return read_op(std::move(m), stream_names, group_names); });
  top.finish();
  return s;
}

Schedule load_schedule(const std::string& path) {
  return schedule_from_yaml(read_text_file(path), path);
}

}  // namespace fsdpsim
