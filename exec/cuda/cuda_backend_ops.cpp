// CudaBackend: the work of each op — cuBLAS GEMMs, memory-bound copies, host copies, and NCCL collectives (or their
// device-copy stand-ins when emulating), with the #wrong check around collectives.
//
// FP8 compute ops run as BF16 GEMMs of the same shapes (the executor does not quantize); their measured time is
// therefore that of BF16 tensor cores. measure_gpus() measures FP8 GEMMs with cuBLASLt for calibration.
#include <algorithm>
#include <chrono>

#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/runtime/check_kernels.h"
#include "exec/cuda/runtime/cuda_check.h"

namespace fsdpsim {
namespace {

check_kernels::ElemType elem_type(DType t) {
  switch (t) {
    case DType::fp32:
      return check_kernels::ElemType::fp32;
    case DType::bf16:
      return check_kernels::ElemType::bf16;
    case DType::fp16:
      return check_kernels::ElemType::fp16;
    case DType::fp8:
      return check_kernels::ElemType::fp8_e4m3;
  }
  return check_kernels::ElemType::bf16;
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::fp32:
      return ncclFloat32;
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp16:
      return ncclFloat16;
    case DType::fp8:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
      return ncclFloat8e4m3;  // FP8 types (and their reductions, on sm_90+) arrived in NCCL 2.24
#else
      return ncclUint8;
#endif
  }
  return ncclBfloat16;
}

// NCCL's built-in reduction for `op`; premul_sum is a sum pre-multiplied by 1/n, created per call
// (ncclRedOpCreatePreMulSum) and destroyed once the call has been enqueued, as the NCCL API allows.
ncclRedOp_t builtin_reduction(ReduceOp op) {
  return op == ReduceOp::avg ? ncclAvg : ncclSum;
}

void copy_async(void* dst, const void* src, int64_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (bytes <= 0 || dst == src) return;
  FSDPSIM_CUDA(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), kind, s));
}

}  // namespace

void CudaBackend::run(const Op& op) {
  switch (op.kind) {
    case OpKind::compute:
      run_gemms(op);
      run_memory_bound(op.stream, op.bytes_touched);
      return;
    case OpKind::optimizer:
      run_memory_bound(op.stream, op.bytes_touched);
      return;
    case OpKind::copy:
      run_memory_bound(op.stream, op.bytes_touched);
      run_host_copy(op, op.send_bytes, true);
      run_host_copy(op, op.recv_bytes, false);
      return;
    case OpKind::sync:
      return;
    case OpKind::send:
    case OpKind::recv:
      run_p2p(op);
      return;
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_reduce:
    case OpKind::all_to_all:
      run_collective(op);
      return;
  }
}

void CudaBackend::run_gemms(const Op& op) {
  CudaStreamResources& r = streams_[op.stream.index()];
  const float alpha = 1.0f, beta = 0.0f;
  for (const GemmLaunch& l : compute_.launches[op.id.index()]) {
    const char* w = !l.w.buffer.valid() ? r.w : live_pointer(l.w.buffer, op, "reads weights from");
    char* c = !l.c.buffer.valid() ? r.c : live_pointer(l.c.buffer, op, "writes gradients to");
    if (w == nullptr || c == nullptr) continue;
    w += l.w.offset_bytes;
    c += l.c.offset_bytes;
    // Row-major C[m×n] = A[m×k]·Wᵀ is column-major Cᵀ[n×m] = W·Aᵀ: cuBLAS's A is W stored k×n (op T, lda = k), its
    // B is A stored k×m (op N, ldb = k), its C is n×m (ldc = n) — the "TN" layout cuBLAS runs best (and the one its
    // FP8 kernels require).
    FSDPSIM_CUBLAS(cublasGemmStridedBatchedEx(
        r.blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(l.n), static_cast<int>(l.m), static_cast<int>(l.k), &alpha,
        w, CUDA_R_16BF, static_cast<int>(l.k), l.w.batch_stride, r.a + l.a.offset_bytes, CUDA_R_16BF,
        static_cast<int>(l.k), l.a.batch_stride, &beta, c, CUDA_R_16BF, static_cast<int>(l.n), l.c.batch_stride,
        static_cast<int>(l.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

void CudaBackend::run_memory_bound(StreamId stream, int64_t bytes_touched) {
  CudaStreamResources& r = streams_[stream.index()];
  const int64_t half = r.sizes.memory_bytes / 2;
  if (bytes_touched <= 0 || half <= 0) return;
  // A device copy reads and writes every byte it moves: bytes_touched/2 copied touch bytes_touched of HBM.
  for (int64_t left = bytes_touched / 2; left > 0;) {
    const int64_t n = std::min(left, half);
    copy_async(r.memory + half, r.memory, n, cudaMemcpyDeviceToDevice, r.stream);
    left -= n;
  }
}

void CudaBackend::run_host_copy(const Op& op, int64_t bytes, bool to_host) {
  if (bytes <= 0) return;
  CudaStreamResources& r = streams_[op.stream.index()];
  // The device side is the op's own buffer when it is live and large enough, else the stream's memory region.
  char* device = r.memory;
  int64_t device_bytes = r.sizes.memory_bytes;
  for (const BufferId b : to_host ? op.reads : op.writes) {
    char* p = pointers_[b.index()];
    if (p != nullptr && schedule_->buffers[b].size_bytes >= bytes) {
      device = p;
      device_bytes = bytes;
      break;
    }
  }
  const int64_t chunk = std::min(device_bytes, r.sizes.pinned_host_bytes);
  if (chunk <= 0 || device == nullptr || r.pinned == nullptr) return;
  for (int64_t done = 0; done < bytes; done += chunk) {
    const int64_t n = std::min(chunk, bytes - done);
    char* at = device + (device_bytes >= bytes ? done : 0);
    if (to_host) {
      copy_async(r.pinned, at, n, cudaMemcpyDeviceToHost, r.stream);
    } else {
      copy_async(at, r.pinned, n, cudaMemcpyHostToDevice, r.stream);
    }
  }
}

void CudaBackend::run_collective(const Op& op) {
  const CollectivePlan& p = comm_.ops[op.id];
  if (p.count <= 0) return;
  CudaStreamResources& r = streams_[op.stream.index()];
  char* in = !p.input_buffer.valid() ? r.comm_in : live_pointer(p.input_buffer, op, "reads");
  char* out = !p.output_buffer.valid() ? r.comm_out : live_pointer(p.output_buffer, op, "writes");
  if (in == nullptr || out == nullptr) return;
  // One buffer for both: NCCL's in-place forms, sendbuff = recvbuff + rank·count (AG), recvbuff = sendbuff +
  // rank·count (RS); an all-reduce runs in place on the same pointer (the plan never gives an all-to-all one buffer).
  const int64_t slot = static_cast<int64_t>(groups_.membership(op.group).rank) * p.count * p.elem_bytes;
  if (p.input_buffer.valid() && p.input_buffer == p.output_buffer) {
    if (op.kind == OpKind::all_gather) in = out + slot;
    if (op.kind == OpKind::reduce_scatter) out = in + slot;
  }
  if (setup_.check) check_input(op, p, in, r.stream);
  if (setup_.emulate) {
    emulate_collective(op, p, in, out, r.stream);
  } else {
    nccl_collective(op, p, in, out, r.stream);
  }
  if (setup_.check) check_output(op, p, out, r.stream);
}

void CudaBackend::run_p2p(const Op& op) {
  const P2pOpPlan& p = p2p_.ops[op.id];
  if (p.bytes <= 0) return;
  CudaStreamResources& r = streams_[op.stream.index()];
  const bool sending = op.kind == OpKind::send;
  // Not live_pointer(): it notes the op as skipped, and a send or receive is never skipped (NCCL pairs a channel's
  // k-th send with its k-th receive, so the peer's next call would pair with the wrong op: another size, or a wait
  // for ever).
  char* data = sending ? r.comm_in : pointers_[p.buffer.index()];
  if (data == nullptr) {
    throw CudaError("op '" + op.name + "' (id " + std::to_string(op.id.value()) + ") has no device memory to " +
                        (sending ? "send from" : "receive into buffer '" + schedule_->buffers[p.buffer].name + "'") +
                        ": a skipped send or receive would pair the channel's later ones with the wrong ops",
                    CudaFault::error);
  }
  const auto bytes = static_cast<size_t>(p.bytes);
  if (setup_.emulate) {
    // A stage emulated alone has no peer: its sends go nowhere and its receives write the bytes a peer would send.
    if (!sending) FSDPSIM_CUDA(cudaMemsetAsync(data, 0, bytes, r.stream));
    return;
  }
  // --check: the send carries a known pattern (BF16 elements, the all-gather pattern of one rank) and the receive
  // counts the elements that arrived different.
  const int64_t elements = p.bytes / 2;
  if (setup_.check && sending) {
    check_kernels::fill(data, elements, check_kernels::ElemType::bf16, check_kernels::Pattern::gather, 0, 1, r.stream);
    FSDPSIM_CUDA(cudaGetLastError());
  }
  nccl_call(op, sending ? "ncclSend" : "ncclRecv", [&](ncclComm_t c) {
    return sending ? ncclSend(data, bytes, ncclInt8, p.peer, c, r.stream)
                   : ncclRecv(data, bytes, ncclInt8, p.peer, c, r.stream);
  });
  if (setup_.check && !sending) {
    check_kernels::VerifySpec spec;
    spec.collective = check_kernels::Collective::all_gather;
    spec.type = check_kernels::ElemType::bf16;
    spec.count = elements;
    check_kernels::verify(data, spec, wrong_ + op.id.value(), r.stream);
    FSDPSIM_CUDA(cudaGetLastError());
  }
}

void CudaBackend::nccl_collective(const Op& op, const CollectivePlan& p, const void* in, void* out, cudaStream_t s) {
  const ncclDataType_t type = nccl_type(op.dtype);
  const size_t count = static_cast<size_t>(p.count);
  const int32_t n = groups_.membership(op.group).size;
  if (op.kind == OpKind::all_gather) {
    nccl_call(op, "ncclAllGather", [&](ncclComm_t c) { return ncclAllGather(in, out, count, type, c, s); });
    return;
  }
  if (op.kind == OpKind::reduce_scatter || op.kind == OpKind::all_reduce) {
    ncclRedOp_t red = builtin_reduction(op.reduce_op);
    const bool custom = op.reduce_op == ReduceOp::premul_sum;
    if (custom) {
      alignas(8) unsigned char scalar[8] = {};
      check_kernels::encode_scalar(1.0f / static_cast<float>(n), elem_type(op.dtype), scalar);
      nccl_call(op, "ncclRedOpCreatePreMulSum",
                [&](ncclComm_t c) { return ncclRedOpCreatePreMulSum(&red, scalar, type, ncclScalarHostImmediate, c); });
    }
    if (op.kind == OpKind::reduce_scatter) {
      nccl_call(op, "ncclReduceScatter",
                [&](ncclComm_t c) { return ncclReduceScatter(in, out, count, type, red, c, s); });
    } else {
      nccl_call(op, "ncclAllReduce", [&](ncclComm_t c) { return ncclAllReduce(in, out, count, type, red, c, s); });
    }
    if (custom) nccl_call(op, "ncclRedOpDestroy", [&](ncclComm_t c) { return ncclRedOpDestroy(red, c); });
    return;
  }
  // All-to-all as grouped point-to-point calls (block j of the input to peer j, block j of the output from peer j);
  // the group is always closed, even when a call inside it failed.
  const int64_t block = p.count * p.elem_bytes;
  nccl_call(op, "ncclSend/ncclRecv (all-to-all)", [&](ncclComm_t c) {
    const ncclResult_t started = ncclGroupStart();
    if (started != ncclSuccess) return started;
    ncclResult_t first = ncclSuccess;
    for (int32_t peer = 0; peer < n && first == ncclSuccess; ++peer) {
      first = ncclSend(static_cast<const char*>(in) + peer * block, count, type, peer, c, s);
      if (first == ncclSuccess) first = ncclRecv(static_cast<char*>(out) + peer * block, count, type, peer, c, s);
    }
    const ncclResult_t ended = ncclGroupEnd();  // ncclInProgress on a nonblocking communicator: waited for
    return first != ncclSuccess ? first : ended;
  });
}

void CudaBackend::nccl_call(const Op& op, const std::string& what,
                            const std::function<ncclResult_t(ncclComm_t)>& call) {
  const auto start = std::chrono::steady_clock::now();
  try {
    const NcclWait wait = nccl_wait(what + " for " + describe_op(op));
    if (is_p2p(op.kind)) {
      groups_.enqueue_channel(p2p_.ops[op.id].channel, IssuedOp{op.id, step_}, call, wait);
    } else {
      groups_.enqueue(op.group, IssuedOp{op.id, step_}, call, wait);
    }
  } catch (const CudaError& e) {
    if (watchdog_ == nullptr) throw;
    // The cause first: a fault the watchdog already found (the communicators' abort is what ended this call).
    if (const std::optional<WatchdogFault> f = watchdog_->fault()) throw CudaError(f->message, f->kind);
    if (e.fault() == CudaFault::collective_timeout) {
      const TimeNs waited_ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
      const WatchdogFault f =
          watchdog_->raise(CudaFault::collective_timeout,
                           watchdog_->enqueue_timeout_report(op.id, step_, positions_[op.id.index()], waited_ns));
      throw CudaError(f.message, f.kind);
    }
    if (e.fault() == CudaFault::nccl_async_error) {
      const WatchdogFault f = watchdog_->raise(
          CudaFault::nccl_async_error,
          watchdog_->async_error_report().value_or(std::string(e.what()) + "; " + kAbortedEveryCommunicator));
      throw CudaError(f.message, f.kind);
    }
    throw;
  }
}

void CudaBackend::emulate_collective(const Op& op, const CollectivePlan& p, const char* in, char* out, cudaStream_t s) {
  // Rank 0 alone: each collective becomes one device copy of this rank's own bytes (its slot of an all-gather, its
  // block of a reduce-scatter, the whole buffer otherwise). The memory plan is exact; times are not a collective's.
  const int64_t block = p.count * p.elem_bytes;
  const int64_t slot = static_cast<int64_t>(groups_.membership(op.group).rank) * block;
  switch (op.kind) {
    case OpKind::all_gather:
      copy_async(out + slot, in, block, cudaMemcpyDeviceToDevice, s);
      return;
    case OpKind::reduce_scatter:
      copy_async(out, in + slot, block, cudaMemcpyDeviceToDevice, s);
      return;
    default:
      copy_async(out, in, p.output_bytes, cudaMemcpyDeviceToDevice, s);
      return;
  }
}

void CudaBackend::check_input(const Op& op, const CollectivePlan& p, void* in, cudaStream_t s) {
  const GroupMembership& g = groups_.membership(op.group);
  const bool reduces = op.kind == OpKind::reduce_scatter || op.kind == OpKind::all_reduce;
  const int64_t count = p.input_bytes / p.elem_bytes;
  check_kernels::fill(in, count, elem_type(op.dtype),
                      reduces ? check_kernels::Pattern::reduce : check_kernels::Pattern::gather, g.rank, g.size, s);
  FSDPSIM_CUDA(cudaGetLastError());
}

void CudaBackend::check_output(const Op& op, const CollectivePlan& p, const void* out, cudaStream_t s) {
  const GroupMembership& g = groups_.membership(op.group);
  check_kernels::VerifySpec spec;
  spec.collective = op.kind == OpKind::all_gather       ? check_kernels::Collective::all_gather
                    : op.kind == OpKind::reduce_scatter ? check_kernels::Collective::reduce_scatter
                    : op.kind == OpKind::all_reduce     ? check_kernels::Collective::all_reduce
                                                        : check_kernels::Collective::all_to_all;
  spec.type = elem_type(op.dtype);
  spec.rank = g.rank;
  spec.ranks = g.size;
  spec.count = p.count;
  spec.average = op.reduce_op == ReduceOp::avg || op.reduce_op == ReduceOp::premul_sum;
  check_kernels::verify(out, spec, wrong_ + op.id.value(), s);
  FSDPSIM_CUDA(cudaGetLastError());
}

}  // namespace fsdpsim
