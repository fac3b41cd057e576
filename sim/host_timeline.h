#pragma once
/// The host side of a step: each rank's CPU thread walks its ops in program order (the schedule's op order, which
/// the builders write in the order the frameworks issue them) and spends a CPU time on each before its kernels reach
/// the GPU. An op cannot start before the host has issued it, however idle its stream. For a large model the host runs
/// far ahead and this changes nothing; for a small one, or a small micro-batch, the step is as long as the host's walk
/// (bench/results/2026-11-27-kernels: 2.4-3.8 ms of CPU per Llama layer per step in eager PyTorch, 5.0-8.8 ms with
/// FSDP2's hooks, against a few hundred microseconds of kernels).
///
/// The host never waits on the GPU inside a step (no op here synchronises: FSDP2's and Megatron-FSDP's waits are
/// stream waits), and a step's walk starts with the step: the training loop's once-per-step synchronisation (the
/// loss's .item(), Megatron's gradient-norm check) leaves nothing in flight across it.

#include <vector>

#include "common/units.h"
#include "schedule/ir.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// CPU time the host spends issuing `op` (its kernels at the schedule's HostDispatch rate, plus FSDP2's hooks for a
/// parameter all-gather or gradient reduce-scatter over a data-parallel group).
TimeNs host_issue_cost_ns(const Schedule& s, const Op& op, const HostCosts& host);

/// The host's walk of one step.
struct HostTimeline {
  /// By op id: when the host has issued it, from the start of its step: the running sum of host_issue_cost_ns over
  /// the ops of the op's pipeline stage (each stage is its own rank and CPU) up to and including it, in the order the
  /// host reaches them — the op order, except that a pipeline receive comes just before the first op that reads it
  /// and a send just after the op it waits on, where the frameworks post them (the builder appends both after the
  /// stage's computes). Empty when the profile models no host cost or no op has one.
  IdVector<OpId, TimeNs> issue_ns;
  std::vector<TimeNs> walk_ns;   ///< per pipeline stage: the whole walk of a step
  std::vector<int64_t> kernels;  ///< per pipeline stage: the kernels it issues
};

/// One walk over the ops gives all three.
HostTimeline host_timeline(const Schedule& s, const HostCosts& host);

}  // namespace fsdpsim
