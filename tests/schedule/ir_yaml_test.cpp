#include "schedule/ir_yaml.h"

#include <gtest/gtest.h>

#include "builders/builder.h"
#include "model/model.h"
#include "schedule/validate.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    (void)schedule_from_yaml(yaml, "s.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(IrYaml, TinyScheduleRoundTripsExactly) {
  const Schedule s = testing::tiny_schedule();
  const std::string text = schedule_to_yaml(s);
  const Schedule back = schedule_from_yaml(text, "s.yaml");
  EXPECT_EQ(back, s);
  EXPECT_EQ(schedule_to_yaml(back), text);
}

TEST(IrYaml, BuiltSchedulesRoundTripExactly) {
  for (const char* strategy : {"no_shard", "optim", "optim_grads", "optim_grads_params"}) {
    FsdpConfig config;
    apply_override(config, std::string("data_parallel_sharding_strategy=") + strategy);
    apply_override(config, "global_batch_size=16");  // 2 micro-batches on 8 GPUs
    const Schedule s = build_schedule(model_preset("mixtral-8x7b"), config, 8);
    const std::string text = schedule_to_yaml(s);
    EXPECT_EQ(schedule_from_yaml(text, "s.yaml"), s) << strategy;
  }
}

// A rowwise FP8 schedule carries its GEMM scaling (the simulator times its GEMMs by it) through the YAML; the key is
// written only when it is not tensorwise, and an unknown scaling is refused.
TEST(IrYaml, Fp8GemmScalingRoundTrips) {
  FsdpConfig config;
  apply_override(config, "implementation=fsdp2");
  apply_override(config, "fp8_compute=true");
  apply_override(config, "fp8_recipe=rowwise_with_gw_hp");
  const Schedule s = build_schedule(model_preset("llama3-8b"), config, 8);
  EXPECT_EQ(s.info.fp8_gemm_scaling, Fp8GemmScaling::rowwise_with_gw_hp);
  const std::string text = schedule_to_yaml(s);
  EXPECT_NE(text.find("fp8_gemm_scaling: rowwise_with_gw_hp"), std::string::npos);
  EXPECT_NE(text.find("{name: output, m: 4096, n: 128256, k: 4096, bf16_in_fp8: true}"), std::string::npos);
  EXPECT_EQ(schedule_from_yaml(text, "s.yaml"), s);
  std::string bad = text;
  bad.replace(bad.find("rowwise_with_gw_hp"), 18, "columnwise");
  EXPECT_NE(error_of(bad).find("'info.fp8_gemm_scaling': unknown value 'columnwise'"), std::string::npos)
      << error_of(bad);
  apply_override(config, "fp8_recipe=tensorwise");
  EXPECT_EQ(schedule_to_yaml(build_schedule(model_preset("llama3-8b"), config, 8)).find("fp8_gemm_scaling"),
            std::string::npos);
}

TEST(IrYaml, KernelCountsAndHostDispatchRoundTrip) {
  FsdpConfig config;
  apply_override(config, "implementation=fsdp2");
  const Schedule s = build_schedule(model_preset("llama3-8b"), config, 8);
  EXPECT_EQ(s.info.host_dispatch, HostDispatch::compiled);  // auto: fsdp2 with fused_elementwise is torch.compile
  const std::string text = schedule_to_yaml(s);
  EXPECT_NE(text.find("host_dispatch: compiled"), std::string::npos);
  // A layer's forward: torchtitan's seven matmuls, attention and seven fused elementwise kernels.
  EXPECT_NE(text.find("kernels: 15"), std::string::npos);
  EXPECT_EQ(schedule_from_yaml(text, "s.yaml"), s);
  std::string bad = text;
  bad.replace(bad.find("kernels: 15"), 11, "kernels: -1");
  EXPECT_NE(error_of(bad).find("kernels"), std::string::npos) << error_of(bad);
  bad = text;
  bad.replace(bad.find("host_dispatch: compiled"), 23, "host_dispatch: jit");
  EXPECT_NE(error_of(bad).find("'info.host_dispatch': unknown value 'jit'"), std::string::npos) << error_of(bad);
}

TEST(IrYaml, KernelClassBytesRoundTripAndMustBeAPartOfTheOpsBytes) {
  // An eager FSDP2 schedule: its layers carry unvectorized and reduction bytes, which the YAML keeps.
  FsdpConfig config;
  apply_override(config, "implementation=fsdp2");
  apply_override(config, "fused_elementwise=false");
  apply_override(config, "loss_implementation=eager_fp32");
  const Schedule s = build_schedule(model_preset("llama3-8b"), config, 8);
  const std::string text = schedule_to_yaml(s);
  EXPECT_NE(text.find("unvectorized_bytes:"), std::string::npos);
  EXPECT_NE(text.find("reduction_bytes:"), std::string::npos);
  EXPECT_EQ(schedule_from_yaml(text, "s.yaml"), s);
  // More classified bytes than the op touches is refused by validation, naming the op and both figures.
  Schedule bad = s;
  for (Op& op : bad.ops) {
    if (op.class_bytes.total() > 0) {
      op.class_bytes.unvectorized = op.bytes_touched;
      break;
    }
  }
  const std::vector<std::string> problems = validate(bad);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("unvectorized_bytes + reduction_bytes"), std::string::npos) << problems[0];
}

TEST(IrYaml, UnknownStreamNameIsAnError) {
  std::string text = schedule_to_yaml(testing::tiny_schedule());
  text.replace(text.find("stream: ag"), 10, "stream: ax");
  const std::string message = error_of(text);
  EXPECT_NE(message.find("s.yaml:"), std::string::npos) << message;
  EXPECT_NE(message.find("'ops[0].stream': unknown stream 'ax' (did you mean 'ag'?)"), std::string::npos) << message;
}

TEST(IrYaml, UnknownKeyAndWrongType) {
  std::string text = schedule_to_yaml(testing::tiny_schedule());
  std::string misspelled = text;
  misspelled.replace(misspelled.find("send_bytes"), 10, "send_bites");
  EXPECT_NE(error_of(misspelled).find("'ops[0].send_bites': unknown key (did you mean 'send_bytes'?)"),
            std::string::npos)
      << error_of(misspelled);
  std::string wrong = text;
  wrong.replace(wrong.find("send_bytes: 100"), 15, "send_bytes: lots");
  EXPECT_NE(error_of(wrong).find("'ops[0].send_bytes': expected a whole number, got 'lots'"), std::string::npos);
}

TEST(IrYaml, NegativeSizeAndNewerVersion) {
  std::string text = schedule_to_yaml(testing::tiny_schedule());
  std::string negative = text;
  negative.replace(negative.find("size_bytes: 50"), 14, "size_bytes: -50");
  EXPECT_NE(error_of(negative).find("'buffers[2].size_bytes': value -50 is out of range"), std::string::npos);
  std::string newer = text;
  newer.replace(newer.find("version: 1"), 10, "version: 9");
  EXPECT_NE(error_of(newer).find("'version': schedule IR version 9 is newer than this fsdpsim reads (version 1)"),
            std::string::npos);
  EXPECT_NE(error_of(newer).find("write the schedule with this fsdpsim"), std::string::npos);
}

TEST(IrYaml, MalformedYaml) {
  EXPECT_NE(error_of("version: 1\nops: [\n").find("malformed YAML"), std::string::npos);
}

}  // namespace
}  // namespace fsdpsim
