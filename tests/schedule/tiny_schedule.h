#pragma once
// A hand-built valid schedule of one FSDP unit for tests: all-gather → forward → backward → reduce-scatter.

#include "schedule/ir.h"

namespace fsdpsim::testing {

/// Streams compute/ag/rs; group dp of 4; buffers: 0 param shard (persistent, 100 B), 1 gathered params (400 B),
/// 2 activations (50 B), 3 unsharded grads (400 B), 4 grad shard (persistent, 100 B).
/// Ops: 0 all-gather (allocs 1), 1 forward (deps 0, allocs 2, frees 1), 2 backward (reads 2 frees 2, allocs 3),
/// 3 reduce-scatter (deps 2, frees 3).
inline Schedule tiny_schedule() {
  Schedule s;
  s.info.model = "tiny";
  s.info.implementation = "megatron_fsdp";
  s.info.strategy = "optim_grads_params";
  s.info.world_size = 4;
  s.units = {UnitInfo{"layer.0", 400}};
  s.groups = {Group{"dp_shard", 4, 1}};
  s.streams = {Stream{"compute", 0}, Stream{"ag", 0}, Stream{"rs", 0}};
  s.buffers = {Buffer{BufferId(0), "param_shard", BufferCategory::param_shard, 100, true, false},
               Buffer{BufferId(1), "params.layer.0", BufferCategory::gathered_param, 400, false, false},
               Buffer{BufferId(2), "act.layer.0", BufferCategory::activation, 50, false, false},
               Buffer{BufferId(3), "grads.layer.0", BufferCategory::unsharded_grad, 400, false, false},
               Buffer{BufferId(4), "grad_shard", BufferCategory::grad_shard, 100, true, false}};
  Op ag;
  ag.id = OpId(0);
  ag.name = "ag.layer.0";
  ag.kind = OpKind::all_gather;
  ag.unit = 0;
  ag.micro_batch = 0;
  ag.stream = StreamId(1);
  ag.group = GroupId(0);
  ag.send_bytes = 100;
  ag.recv_bytes = 400;
  ag.allocs = {BufferId(1)};
  ag.reads = {BufferId(0)};
  ag.writes = {BufferId(1)};
  Op fwd;
  fwd.id = OpId(1);
  fwd.name = "fwd.layer.0";
  fwd.unit = 0;
  fwd.micro_batch = 0;
  fwd.stream = StreamId(0);
  fwd.gemms = {Gemm{"mlp", 8, 16, 4, 1, false}};
  fwd.deps = {OpId(0)};
  fwd.reads = {BufferId(1)};
  fwd.allocs = {BufferId(2)};
  fwd.writes = {BufferId(2)};
  fwd.frees = {BufferId(1)};
  Op bwd;
  bwd.id = OpId(2);
  bwd.name = "bwd.layer.0";
  bwd.phase = Phase::bwd;
  bwd.unit = 0;
  bwd.micro_batch = 0;
  bwd.stream = StreamId(0);
  bwd.reads = {BufferId(2)};
  bwd.frees = {BufferId(2)};
  bwd.allocs = {BufferId(3)};
  bwd.writes = {BufferId(3)};
  Op rs;
  rs.id = OpId(3);
  rs.name = "rs.layer.0";
  rs.kind = OpKind::reduce_scatter;
  rs.phase = Phase::bwd;
  rs.unit = 0;
  rs.micro_batch = 0;
  rs.stream = StreamId(2);
  rs.group = GroupId(0);
  rs.reduce_op = ReduceOp::sum;
  rs.send_bytes = 400;
  rs.recv_bytes = 100;
  rs.deps = {OpId(2)};
  rs.reads = {BufferId(3)};
  rs.writes = {BufferId(4)};
  rs.frees = {BufferId(3)};
  s.ops = {ag, fwd, bwd, rs};
  return s;
}

}  // namespace fsdpsim::testing
