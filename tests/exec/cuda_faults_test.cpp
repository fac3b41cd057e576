// The CUDA backend's fault reports, from the facts the watchdog and the allocator gather on the device: checked here
// without a GPU (the facts are plain values). What a real GPU run adds is only whether the facts are gathered right.
#include <gtest/gtest.h>

#include "exec/cuda/runtime/cuda_faults.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

TEST(CudaFaults, GroupInstancesAreListedWholeOrShortened) {
  Schedule s = testing::tiny_schedule();
  EXPECT_EQ(describe_group_instance(s, GroupId(0), 2, 4), "'dp_shard' [0, 1, 2, 3]");
  EXPECT_EQ(describe_group_instance(s, GroupId(-1), 0, 4), "'world' [0, 1, 2, 3]");
  // 128 members of stride 8 holding rank 13: position (13 / 8) mod 128 = 1, first member 13 − 8 = 5, last
  // 5 + 127 × 8 = 1021.
  s.groups[0] = Group{"dp_shard", 128, 8};
  EXPECT_EQ(describe_group_instance(s, GroupId(0), 13, 1024), "'dp_shard' [5, 13, 21, ..., 1021] (128 ranks)");
}

TEST(CudaFaults, CollectiveTimeoutNamesTheOpGroupAndWhoIssuedIt) {
  const Schedule s = testing::tiny_schedule();
  CollectiveTimeout t;
  t.op = OpId(0);
  t.step = 1;
  t.ran_ns = 600'100'000'000;
  t.timeout_ns = 600'000'000'000;
  t.issued = {0, 1, 2};
  t.not_issued = {3};
  EXPECT_EQ(describe_collective_timeout(s, FaultSite{0, 0, 4}, t),
            "collective timed out on rank 0 (GPU 0): op 0 'ag.layer.0' (all_gather over 'dp_shard' [0, 1, 2, 3], "
            "step 1) had run for 600.100 s without finishing (timeout 600.000 s); ranks 0, 1, 2 have issued it, "
            "rank 3 has not: look at what that rank did last; every NCCL communicator of this rank was aborted "
            "(ncclCommAbort)");
  t.not_issued.clear();
  t.issued = {0, 1, 2, 3};
  t.enqueueing = true;
  t.ran_ns = 5'000'000'000;
  t.timeout_ns = 5'000'000'000;
  EXPECT_EQ(describe_collective_timeout(s, FaultSite{2, 6, 4}, t),
            "collective timed out on rank 2 (GPU 6): op 0 'ag.layer.0' (all_gather over 'dp_shard' [0, 1, 2, 3], "
            "step 1) was still being enqueued by NCCL (ncclInProgress) after 5.000 s without finishing (timeout "
            "5.000 s); all 4 members have issued it: a hung GPU or a broken link rather than a missing peer; every "
            "NCCL communicator of this rank was aborted (ncclCommAbort)");
  t.issued.clear();  // under MPI the peers' progress is unknown: nothing is claimed about it
  EXPECT_EQ(describe_collective_timeout(s, FaultSite{2, 6, 4}, t).find("issued"), std::string::npos);
}

TEST(CudaFaults, AsyncErrorNamesTheGroupTheErrorAndTheLastOp) {
  const Schedule s = testing::tiny_schedule();
  NcclAsyncError e{GroupId(0),
                   "ncclRemoteError",
                   "remote process exited or there was a network error",
                   "NET/IB: Got completion from peer 10.0.0.3 with status=12",
                   OpId(3),
                   1};
  EXPECT_EQ(describe_nccl_async_error(s, FaultSite{1, 1, 4}, e),
            "NCCL error on rank 1 (GPU 1) in the communicator of group 'dp_shard' [0, 1, 2, 3]: ncclRemoteError "
            "(remote process exited or there was a network error): NET/IB: Got completion from peer 10.0.0.3 with "
            "status=12; the last op issued on it was op 3 'rs.layer.0' (reduce_scatter, step 1); every NCCL "
            "communicator of this rank was aborted (ncclCommAbort)");
  e.group = {};
  e.last_error.clear();
  e.last_op = {};
  EXPECT_EQ(describe_nccl_async_error(s, FaultSite{1, 1, 4}, e),
            "NCCL error on rank 1 (GPU 1) in the communicator of 'world' [0, 1, 2, 3]: ncclRemoteError (remote "
            "process exited or there was a network error); no op had been issued on it yet; every NCCL communicator "
            "of this rank was aborted (ncclCommAbort)");
}

TEST(CudaFaults, OutOfMemoryComparesWithThePrediction) {
  Schedule s = testing::tiny_schedule();
  s.buffers[1].size_bytes = 1'717'986'918;  // params.layer.0: 1.6 GiB (1.6 × 2³⁰ = 1,717,986,918.4)
  DeviceOutOfMemory oom;
  oom.failure.buffer = BufferId(1);
  oom.failure.op = OpId(0);
  oom.failure.step = 1;
  oom.failure.in_use_by_category[static_cast<size_t>(BufferCategory::activation)] = 51 * kGiB;
  oom.failure.in_use_by_category[static_cast<size_t>(BufferCategory::param_shard)] = 23 * kGiB;
  oom.failure.in_use_bytes = 74 * kGiB;  // 51 + 23
  oom.allocator = "cudaMallocFromPoolAsync on stream 'ag'";
  oom.pool_reserved_bytes = 76 * kGiB;
  oom.registered_bytes = 0;
  oom.executor_bytes = kGiB / 2;
  oom.device_free_bytes = kGiB;
  oom.device_total_bytes = 80 * kGiB;
  MemoryPeak predicted;
  predicted.bytes = 113 * kGiB;
  predicted.op = OpId(1);
  predicted.breakdown[static_cast<size_t>(BufferCategory::activation)] = 90 * kGiB;
  predicted.breakdown[static_cast<size_t>(BufferCategory::param_shard)] = 23 * kGiB;
  const std::string without = describe_device_oom(s, FaultSite{0, 0, 4}, oom, predicted);
  EXPECT_EQ(without,
            "out of GPU memory on rank 0 (GPU 0): allocating 1.6 GiB for buffer 1 'params.layer.0' (gathered_param) "
            "in op 0 'ag.layer.0' (step 1) failed with 74.0 GiB in use (activation 51.0 GiB, param_shard 23.0 GiB) "
            "[cudaMallocFromPoolAsync on stream 'ag']; the pool reserves 76.0 GiB, registered buffers hold 0 B, "
            "executor scratch 512.0 MiB; the device has 1.0 GiB free of 80.0 GiB; the simulator predicted a peak of "
            "113.0 GiB for this schedule (reached at op 'fwd.layer.0': activation 90.0 GiB, param_shard 23.0 GiB)");
  // The simulator's verdict for the memory this run had is appended when the launcher asked for it.
  oom.same_memory_prediction = "given the same 79.5 GiB, the simulator runs out too";
  const std::string with = describe_device_oom(s, FaultSite{0, 0, 4}, oom, predicted);
  EXPECT_EQ(with, without + "; given the same 79.5 GiB, the simulator runs out too");
}

}  // namespace
}  // namespace fsdpsim
