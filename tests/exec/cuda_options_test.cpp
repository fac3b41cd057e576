// run_cuda's option errors, raised before any device is touched (so they run on machines without a GPU), and the
// device check itself.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "common/error.h"
#include "exec/cuda/cuda_runner.h"
#include "tests/schedule/tiny_schedule.h"
#include "tests/support/shaped_schedule.h"

namespace fsdpsim {
namespace {

// The message of the ConfigError `body` throws ("" when it throws none).
std::string config_error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string error_for(const CudaOptions& options) {
  const Schedule s = testing::tiny_schedule();  // built for 4 GPUs
  return config_error_of([&] { (void)run_cuda(s, options); });
}

void expect_names(const std::string& message, const std::string& key, const std::string& fix) {
  EXPECT_NE(message.find("'" + key + "'"), std::string::npos) << message;
  EXPECT_NE(message.find(fix), std::string::npos) << message;
}

TEST(CudaOptions, StepsMustBePositive) {
  CudaOptions o;
  o.steps = 0;
  expect_names(error_for(o), "--steps", "run at least one step");
}

TEST(CudaOptions, CollectiveTimeoutMustBePositive) {
  CudaOptions o;
  EXPECT_EQ(o.collective_timeout_ns, 600'000'000'000);  // PyTorch's default for NCCL: 10 min = 600 s
  o.collective_timeout_ns = 0;
  expect_names(error_for(o), "--collective-timeout", "give a positive duration, e.g. 600s");
}

TEST(CudaOptions, EmulateWorldMustMatchTheSchedule) {
  CudaOptions o;
  o.emulate_world = 8;
  expect_names(error_for(o), "--emulate-world", "use --emulate-world 4");
  o.emulate_world = -1;
  expect_names(error_for(o), "--emulate-world", "or 4 to emulate rank 0");
}

TEST(CudaOptions, CheckNeedsRealCollectives) {
  CudaOptions o;
  o.emulate_world = 4;
  o.check = true;
  expect_names(error_for(o), "--check", "drop --check or --emulate-world");
}

TEST(CudaOptions, EmulationIsOneProcessOnOneGpu) {
  CudaOptions o;
  o.emulate_world = 4;
  o.mpi = true;
  expect_names(error_for(o), "--mpi", "drop one of them");
  o.mpi = false;
  o.devices = {0, 1};
  expect_names(error_for(o), "--devices", "list one device");
}

TEST(CudaOptions, DevicesMustBeOnePerRankAndDistinct) {
  CudaOptions o;
  o.devices = {0, 1};
  expect_names(error_for(o), "--devices", "list 4 devices, use --emulate-world 4");
  o.devices = {0, 1, 1, 2};
  expect_names(error_for(o), "--devices", "list each GPU once");
  o.devices = {0, 1, 2, -3};
  expect_names(error_for(o), "--devices", "list CUDA device indices from 0");
}

TEST(CudaOptions, GroupsMustTileTheWorld) {
  Schedule s = testing::tiny_schedule();
  s.groups[0].size = 3;  // 3 × stride 1 does not divide 4 ranks
  try {
    (void)run_cuda(s, CudaOptions{});
    FAIL() << "expected a ScheduleError";
  } catch (const ScheduleError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'dp_shard'"), std::string::npos) << what;
    EXPECT_NE(what.find("rebuild the schedule"), std::string::npos) << what;
  }
}

TEST(CudaDevice, AvailabilityComesWithAReasonWhenThereIsNone) {
  std::string why = "unchanged";
  const bool available = cuda_device_available(&why);
  EXPECT_EQ(available, why.empty()) << why;
  if (available) GTEST_SKIP() << "a GPU is present: the no-device error cannot be observed here";
  // Without a device, running says why (the same reason cuda_device_available gave).
  CudaOptions o;
  o.emulate_world = 4;
  try {
    (void)run_cuda(testing::tiny_schedule(), o);
    FAIL() << "expected a CudaError";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    EXPECT_FALSE(e.out_of_memory());
  }
}

// A real pipeline run has CUDA load its kernels at start-up (CUDA_MODULE_LOADING=EAGER): one stage's receives wait
// from the step's start while its first GEMMs launch, and a lazy load may wait for the device to go idle. An emulated
// pipeline (no receive waits on a peer), a schedule without stages, and a user's own setting are left alone.
TEST(CudaOptions, APipelineRunLoadsItsKernelsEagerly) {
  const char* saved = std::getenv("CUDA_MODULE_LOADING");
  const std::string before = saved != nullptr ? saved : "";
  const auto loading = [] {
    const char* v = std::getenv("CUDA_MODULE_LOADING");
    return std::string(v != nullptr ? v : "(unset)");
  };
  const Schedule pipeline = build_shaped_schedule({"pp=2"});
  ASSERT_EQ(pipeline.info.pipeline_stages, 2);
  CudaOptions emulated;
  emulated.emulate_world = 2;
  unsetenv("CUDA_MODULE_LOADING");
  load_kernels_eagerly_for_pipelines(testing::tiny_schedule(), CudaOptions{});
  EXPECT_EQ(loading(), "(unset)");
  load_kernels_eagerly_for_pipelines(pipeline, emulated);
  EXPECT_EQ(loading(), "(unset)");
  load_kernels_eagerly_for_pipelines(pipeline, CudaOptions{});
  EXPECT_EQ(loading(), "EAGER");
  setenv("CUDA_MODULE_LOADING", "LAZY", 1);
  load_kernels_eagerly_for_pipelines(pipeline, CudaOptions{});
  EXPECT_EQ(loading(), "LAZY");
  if (saved != nullptr) {
    setenv("CUDA_MODULE_LOADING", before.c_str(), 1);
  } else {
    unsetenv("CUDA_MODULE_LOADING");
  }
}

}  // namespace
}  // namespace fsdpsim
