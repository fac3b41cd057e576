#include "report/snapshot_categories.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace fsdpsim {
namespace {

constexpr std::string_view kCategoryFrame = "fsdpsim.category=";

std::string_view text_of(const PickleValue& dict, const char* key) {
  const PickleValue* v = dict.find(key);
  return v != nullptr && v->string() != nullptr ? std::string_view(*v->string()) : std::string_view();
}

int64_t line_of(const PickleValue& frame) {
  const PickleValue* v = frame.find("line");
  return v != nullptr && v->integer() != nullptr ? *v->integer() : -1;
}

bool is_python(std::string_view file) {
  return file.ends_with(".py");
}

struct NamedFunction {
  std::string_view name;
  std::string_view category;
};

// Python functions that say what the memory they (or their callees) allocate is for. Exact names: a substring
// such as "forward" would also match FSDP's own pre/post-forward hooks.
constexpr std::array<NamedFunction, 25> kPythonFunctions{{
    // torch.optim: the moments are created once, in _init_group; the rest of step() is temporaries.
    {"_init_group", "optimizer_state"},
    {"megatron_fsdp_optimizer_step", "workspace"},
    // FSDP2 all-gather: the flat output and the mixed-precision cast of the shard are staging; the per-parameter
    // unsharded storages are the gathered weights.
    {"alloc_all_gather_outputs", "gathered_param"},
    {"init_all_gather_outputs", "gathered_param"},
    {"foreach_all_gather_copy_out", "gathered_param"},
    {"foreach_all_gather", "comm_staging"},
    {"_get_param_all_gather_inputs", "comm_staging"},
    {"all_gather_copy_in", "comm_staging"},
    // FSDP2 reduce-scatter ("foreach_reduce" itself is resolved by line, see SnapshotFrameContext).
    {"foreach_reduce_scatter_copy_in", "comm_staging"},
    // FSDP2 sharded parameters, made when a meta-device model is materialised.
    {"_init_sharded_param", "main_weight"},
    {"reset_sharded_param", "main_weight"},
    {"to_empty", "main_weight"},
    // Megatron-FSDP: DataParallelBuffer.fetch_bucket serves weights and gradients alike; its callers decide.
    {"main_grad_getter", "unsharded_grad"},
    {"_process_post_backward_gradients", "unsharded_grad"},
    {"_bucket_group_gradient_reduce", "unsharded_grad"},
    {"all_gather_params", "gathered_param"},
    {"async_bucket_gather", "gathered_param"},
    {"all_gather_and_wait_parameters_ready", "gathered_param"},
    {"fully_shard_optimizer", "main_weight"},
    {"_init_each_parameter_group_buffers", "param_shard"},
    // The model's own computation.
    {"forward", "activation"},
    {"cross_entropy", "activation"},
    {"checkpoint", "activation"},
    {"backward", "workspace"},
    {"_make_grads", "workspace"},
}};

}  // namespace

SnapshotFrameContext snapshot_frame_context(const PickleValue& snapshot) {
  SnapshotFrameContext context;
  const PickleValue* traces = snapshot.find("device_traces");
  if (traces == nullptr || traces->list() == nullptr) return context;
  for (const PickleValue& device : *traces->list()) {
    if (device.list() == nullptr) continue;
    for (const PickleValue& event : *device.list()) {
      if (text_of(event, "action") != "alloc") continue;
      const PickleValue* frames = event.find("frames");
      if (frames == nullptr || frames->list() == nullptr) continue;
      for (const PickleValue& f : *frames->list()) {
        if (text_of(f, "name") != "foreach_reduce" || !is_python(text_of(f, "filename"))) continue;
        const int64_t line = line_of(f);
        if (line >= 0 && (context.reduce_scatter_input_line < 0 || line < context.reduce_scatter_input_line)) {
          context.reduce_scatter_input_line = line;
        }
        break;
      }
    }
  }
  return context;
}

std::string classify_frames(const PickleValue& frames, const SnapshotFrameContext& context) {
  const PickleList* list = frames.list();
  if (list == nullptr || list->empty()) return "workspace";  // the autograd engine's thread has no Python frame
  for (const PickleValue& f : *list) {
    const std::string_view name = text_of(f, "name");
    if (name.starts_with(kCategoryFrame)) return std::string(name.substr(kCategoryFrame.size()));
  }
  bool any_python = false;
  for (const PickleValue& f : *list) {
    const std::string_view name = text_of(f, "name");
    const std::string_view file = text_of(f, "filename");
    if (!is_python(file)) {
      // C++ frames (stacks="all"): the weight's half of a matmul's backward is its gradient.
      if (name.find("mm_mat2_backward") != std::string_view::npos) return "weight_grad";
      continue;
    }
    any_python = true;
    if (name == "foreach_reduce") {
      const int64_t line = line_of(f);
      return context.reduce_scatter_input_line < 0 || line <= context.reduce_scatter_input_line ? "unsharded_grad"
                                                                                                : "grad_shard";
    }
    for (const NamedFunction& fn : kPythonFunctions) {
      if (name == fn.name) return std::string(fn.category);
    }
    if (file.find("torch/optim/") != std::string_view::npos) return "workspace";  // step()'s temporaries
  }
  // Only C++ frames: the autograd engine (activation gradients and the like) or the framework's own C++ code.
  return any_python ? "unclassified" : "workspace";
}

const std::vector<ComparisonGroup>& comparison_groups() {
  static const std::vector<ComparisonGroup> groups{
      {"sharded weights and grads", {"param_shard", "main_weight", "grad_shard"}},
      {"optimizer state", {"optimizer_state"}},
      {"gathered weights", {"gathered_param"}},
      {"unsharded grads", {"unsharded_grad"}},
      {"activations", {"activation"}},
      {"backward temporaries", {"weight_grad", "workspace"}},
      {"comm staging", {"comm_staging"}},
      {"unclassified", {"unclassified"}},
  };
  return groups;
}

int64_t group_bytes(const ComparisonGroup& group, const std::map<std::string, int64_t>& by_category) {
  int64_t sum = 0;
  for (const std::string& c : group.categories) {
    if (const auto it = by_category.find(c); it != by_category.end()) sum += it->second;
  }
  return sum;
}

}  // namespace fsdpsim
