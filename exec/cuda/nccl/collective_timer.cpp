// CollectiveTimer: NCCL AG / RS / AR on the local GPUs from one thread, grouped as nccl-tests' single-thread mode
// drives several GPUs, timed with CUDA events, with nccl-tests' size, algbw and busbw conventions
// (NVIDIA/nccl-tests doc/PERFORMANCE.md; docs/architecture.md §6.2) and its #wrong check.
#include <algorithm>
#include <string>

#include "exec/cuda/cuda_runner.h"
#include "exec/cuda/runtime/check_kernels.h"
#include "exec/cuda/runtime/cuda_check.h"
#include "run/bus_bandwidth.h"

namespace fsdpsim {
namespace {

constexpr int64_t kElemBytes = 2;  // bf16, the dtype of FSDP's gathers and (usually) its gradient reductions

// Per-rank input and output bytes and the NCCL count for the size nccl-tests prints: AG prints the whole output
// (sendcount·n elements), RS the whole input (recvcount·n), AR the buffer (count).
struct Shape {
  int64_t count = 0, in_bytes = 0, out_bytes = 0, printed_bytes = 0;
};

Shape shape_of(OpKind kind, int64_t size_bytes, int32_t n) {
  Shape s;
  if (kind == OpKind::all_reduce) {
    s.count = size_bytes / kElemBytes;
    s.in_bytes = s.out_bytes = s.printed_bytes = s.count * kElemBytes;
    return s;
  }
  s.count = size_bytes / (kElemBytes * n);
  const int64_t slot = s.count * kElemBytes;
  s.in_bytes = kind == OpKind::all_gather ? slot : slot * n;
  s.out_bytes = kind == OpKind::all_gather ? slot * n : slot;
  s.printed_bytes = slot * n;
  return s;
}

check_kernels::Collective checked(OpKind kind) {
  if (kind == OpKind::all_gather) return check_kernels::Collective::all_gather;
  if (kind == OpKind::reduce_scatter) return check_kernels::Collective::reduce_scatter;
  return check_kernels::Collective::all_reduce;
}

}  // namespace

struct CollectiveTimer::Impl {
  std::vector<int32_t> devices;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> starts, ends;
  std::vector<char*> in, out;
  std::vector<int64_t> in_capacity, out_capacity;
  std::vector<unsigned long long*> wrong;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    for (ncclComm_t c : comms) {
      if (c != nullptr) (void)ncclCommDestroy(c);  // one after the other, as nccl-tests' single-thread mode does
    }
    for (size_t d = 0; d < devices.size(); ++d) {
      (void)cudaSetDevice(devices[d]);
      if (d < in.size() && in[d] != nullptr) (void)cudaFree(in[d]);
      if (d < out.size() && out[d] != nullptr) (void)cudaFree(out[d]);
      if (d < wrong.size() && wrong[d] != nullptr) (void)cudaFree(wrong[d]);
      if (d < starts.size() && starts[d] != nullptr) (void)cudaEventDestroy(starts[d]);
      if (d < ends.size() && ends[d] != nullptr) (void)cudaEventDestroy(ends[d]);
      if (d < streams.size() && streams[d] != nullptr) (void)cudaStreamDestroy(streams[d]);
    }
  }

  // Grows device `d`'s buffer `p` to `bytes`.
  static void ensure(char*& p, int64_t& capacity, int64_t bytes) {
    if (capacity >= bytes) return;
    if (p != nullptr) FSDPSIM_CUDA(cudaFree(p));
    p = nullptr;
    capacity = 0;
    FSDPSIM_CUDA(cudaMalloc(reinterpret_cast<void**>(&p), static_cast<size_t>(bytes)));
    capacity = bytes;
  }

  void launch(OpKind kind, const Shape& s) {
    const auto count = static_cast<size_t>(s.count);
    FSDPSIM_NCCL(ncclGroupStart());
    ncclResult_t first = ncclSuccess;
    for (size_t d = 0; d < devices.size() && first == ncclSuccess; ++d) {
      if (kind == OpKind::all_gather) first = ncclAllGather(in[d], out[d], count, ncclBfloat16, comms[d], streams[d]);
      if (kind == OpKind::reduce_scatter) {
        first = ncclReduceScatter(in[d], out[d], count, ncclBfloat16, ncclSum, comms[d], streams[d]);
      }
      if (kind == OpKind::all_reduce)
        first = ncclAllReduce(in[d], out[d], count, ncclBfloat16, ncclSum, comms[d], streams[d]);
    }
    const ncclResult_t end = ncclGroupEnd();
    if (first != ncclSuccess)
      throw_nccl_error(first, "ncclAllGather/ncclReduceScatter/ncclAllReduce", __FILE__, __LINE__);
    if (end != ncclSuccess) throw_nccl_error(end, "ncclGroupEnd", __FILE__, __LINE__);
  }

  void prepare(OpKind kind, const Shape& s) {
    const auto n = static_cast<int32_t>(devices.size());
    const bool reduces = kind != OpKind::all_gather;
    for (size_t d = 0; d < devices.size(); ++d) {
      FSDPSIM_CUDA(cudaSetDevice(devices[d]));
      ensure(in[d], in_capacity[d], s.in_bytes);
      ensure(out[d], out_capacity[d], s.out_bytes);
      check_kernels::fill(in[d], s.in_bytes / kElemBytes, check_kernels::ElemType::bf16,
                          reduces ? check_kernels::Pattern::reduce : check_kernels::Pattern::gather,
                          static_cast<int32_t>(d), n, streams[d]);
      FSDPSIM_CUDA(cudaGetLastError());
      FSDPSIM_CUDA(cudaMemsetAsync(wrong[d], 0, sizeof(unsigned long long), streams[d]));
    }
  }

  // The slowest rank's time per call over the timed calls.
  double measure(OpKind kind, const Shape& s, int32_t iterations) {
    for (size_t d = 0; d < devices.size(); ++d) {
      FSDPSIM_CUDA(cudaSetDevice(devices[d]));
      FSDPSIM_CUDA(cudaEventRecord(starts[d], streams[d]));
    }
    for (int32_t i = 0; i < iterations; ++i) launch(kind, s);
    for (size_t d = 0; d < devices.size(); ++d) {
      FSDPSIM_CUDA(cudaSetDevice(devices[d]));
      FSDPSIM_CUDA(cudaEventRecord(ends[d], streams[d]));
    }
    double slowest_ms = 0;
    for (size_t d = 0; d < devices.size(); ++d) {
      FSDPSIM_CUDA(cudaSetDevice(devices[d]));
      FSDPSIM_CUDA(cudaEventSynchronize(ends[d]));
      float ms = 0;
      FSDPSIM_CUDA(cudaEventElapsedTime(&ms, starts[d], ends[d]));
      slowest_ms = std::max(slowest_ms, static_cast<double>(ms));
    }
    return slowest_ms / 1e3 / iterations;
  }

  int64_t count_wrong(OpKind kind, const Shape& s) {
    int64_t total = 0;
    for (size_t d = 0; d < devices.size(); ++d) {
      FSDPSIM_CUDA(cudaSetDevice(devices[d]));
      check_kernels::VerifySpec spec;
      spec.collective = checked(kind);
      spec.type = check_kernels::ElemType::bf16;
      spec.rank = static_cast<int32_t>(d);
      spec.ranks = static_cast<int32_t>(devices.size());
      spec.count = s.count;
      check_kernels::verify(out[d], spec, wrong[d], streams[d]);
      FSDPSIM_CUDA(cudaGetLastError());
      unsigned long long w = 0;
      FSDPSIM_CUDA(cudaMemcpyAsync(&w, wrong[d], sizeof w, cudaMemcpyDeviceToHost, streams[d]));
      FSDPSIM_CUDA(cudaStreamSynchronize(streams[d]));
      total += static_cast<int64_t>(w);
    }
    return total;
  }
};

CollectiveTimer::CollectiveTimer(std::vector<int32_t> devices) : impl_(std::make_unique<Impl>()) {
  std::string why;
  if (!cuda_device_available(&why)) throw CudaError("cannot time collectives: " + why, false);
  if (devices.empty()) {
    int count = 0;
    FSDPSIM_CUDA(cudaGetDeviceCount(&count));
    for (int32_t d = 0; d < count; ++d) devices.push_back(d);
  }
  Impl& m = *impl_;
  m.devices = std::move(devices);
  const size_t n = m.devices.size();
  m.comms.assign(n, nullptr);
  m.streams.assign(n, nullptr);
  m.starts.assign(n, nullptr);
  m.ends.assign(n, nullptr);
  m.in.assign(n, nullptr);
  m.out.assign(n, nullptr);
  m.in_capacity.assign(n, 0);
  m.out_capacity.assign(n, 0);
  m.wrong.assign(n, nullptr);
  for (size_t d = 0; d < n; ++d) {
    FSDPSIM_CUDA(cudaSetDevice(m.devices[d]));
    FSDPSIM_CUDA(cudaStreamCreateWithFlags(&m.streams[d], cudaStreamNonBlocking));
    FSDPSIM_CUDA(cudaEventCreate(&m.starts[d]));
    FSDPSIM_CUDA(cudaEventCreate(&m.ends[d]));
    FSDPSIM_CUDA(cudaMalloc(reinterpret_cast<void**>(&m.wrong[d]), sizeof(unsigned long long)));
  }
  FSDPSIM_NCCL(ncclCommInitAll(m.comms.data(), static_cast<int>(n), m.devices.data()));
}

CollectiveTimer::~CollectiveTimer() = default;

int32_t CollectiveTimer::ranks() const {
  return static_cast<int32_t>(impl_->devices.size());
}

int64_t CollectiveTimer::free_bytes() const {
  int64_t least = -1;
  for (const int32_t d : impl_->devices) {
    FSDPSIM_CUDA(cudaSetDevice(d));
    size_t free_bytes = 0, total = 0;
    FSDPSIM_CUDA(cudaMemGetInfo(&free_bytes, &total));
    const auto f = static_cast<int64_t>(free_bytes);
    least = least < 0 ? f : std::min(least, f);
  }
  return std::max<int64_t>(least, 0);
}

CollectiveSample CollectiveTimer::time(OpKind kind, int64_t size_bytes, int32_t warmup, int32_t iterations) {
  if (kind != OpKind::all_gather && kind != OpKind::reduce_scatter && kind != OpKind::all_reduce) {
    throw ConfigError("CollectiveTimer times all_gather, reduce_scatter and all_reduce, not " +
                      std::string(to_string(kind)));
  }
  const int32_t n = ranks();
  const Shape s = shape_of(kind, size_bytes, n);
  CollectiveSample sample;
  sample.kind = kind;
  sample.ranks = n;
  sample.nodes = 1;
  sample.dtype = DType::bf16;
  sample.size_bytes = s.printed_bytes;
  if (s.count <= 0 || iterations < 1) return sample;
  impl_->prepare(kind, s);
  for (int32_t i = 0; i < warmup; ++i) impl_->launch(kind, s);
  sample.time_s = impl_->measure(kind, s, iterations);
  sample.wrong = impl_->count_wrong(kind, s);
  const double algbw = sample.time_s > 0 ? static_cast<double>(s.printed_bytes) / sample.time_s : 0.0;
  sample.busbw_bytes_per_s = algbw * busbw_factor(kind, n);
  return sample;
}

}  // namespace fsdpsim
