#include "schedule/schedule_graph.h"

#include <algorithm>
#include <functional>
#include <queue>

#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/depth_first_search.hpp>

#include "common/error.h"

namespace fsdpsim {
namespace {

// Compressed sparse rows: the whole graph in two arrays, built in one pass (a sweep validates a schedule of tens of
// thousands of ops at every point; an adjacency list of linked edges spent most of that time in malloc).
using Graph = boost::compressed_sparse_row_graph<boost::directedS>;
using Edge = std::pair<size_t, size_t>;

// Each op's predecessor on its stream (none for the first), skipping ops on unknown streams.
IdVector<OpId, OpId> stream_predecessors(const Schedule& s) {
  IdVector<OpId, OpId> prev(s.ops.size(), OpId::none());
  IdVector<StreamId, OpId> last_on_stream(s.streams.size(), OpId::none());
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (!s.streams.contains(s.ops[i].stream)) continue;
    OpId& last = last_on_stream[s.ops[i].stream];
    prev[i] = last;
    last = OpId(static_cast<int32_t>(i));
  }
  return prev;
}

// The send of a well-formed send/recv pair whose recv is `op`, or none (validate() reports malformed pairs).
OpId paired_send(const Schedule& s, const Op& op) {
  if (op.kind != OpKind::recv || !s.ops.contains(op.peer)) return OpId::none();
  const Op& send = s.ops[op.peer];
  return send.kind == OpKind::send && send.peer == op.id ? send.id : OpId::none();
}

// Edges: each dep → op, and each op → the next op on its stream. A send/recv pair is a rendezvous: the send
// cannot start before the recv's predecessors (its stream predecessor and deps) have finished, and the recv ends
// with the send, so the pair adds those predecessors → send, and send → recv. A cycle through such edges is a
// pipeline that deadlocks. Invalid references are skipped (validate() reports them separately).
std::vector<Edge> dependency_edges(const Schedule& s) {
  std::vector<Edge> edges;
  const IdVector<OpId, OpId> prev = stream_predecessors(s);
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    for (const OpId d : op.deps) {
      if (s.ops.contains(d) && d.index() != i) edges.emplace_back(d.index(), i);
    }
    if (prev[i].valid()) edges.emplace_back(prev[i].index(), i);
    if (const OpId send = paired_send(s, op); send.valid()) {
      edges.emplace_back(send.index(), i);
      if (prev[i].valid() && prev[i] != send) edges.emplace_back(prev[i].index(), send.index());
      for (const OpId d : op.deps) {
        if (s.ops.contains(d) && d != send) edges.emplace_back(d.index(), send.index());
      }
    }
  }
  return edges;
}

Graph build_graph(const Schedule& s, const std::vector<Edge>& edges) {
  return Graph(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), s.ops.size());
}

// Records the first back edge a depth-first search meets, and the tree parents to walk the cycle back.
struct CycleFinder : boost::default_dfs_visitor {
  std::vector<int32_t>* parent;
  std::vector<OpId>* cycle;
  void tree_edge(Graph::edge_descriptor e, const Graph& g) const {
    (*parent)[boost::target(e, g)] = static_cast<int32_t>(boost::source(e, g));
  }
  void back_edge(Graph::edge_descriptor e, const Graph& g) const {
    if (!cycle->empty()) return;
    const auto from = static_cast<int32_t>(boost::source(e, g));
    const auto to = static_cast<int32_t>(boost::target(e, g));
    std::vector<int32_t> path{to};
    for (int32_t v = from; v != to && v >= 0; v = (*parent)[static_cast<size_t>(v)]) path.push_back(v);
    path.push_back(to);
    std::reverse(path.begin(), path.end());
    for (const int32_t v : path) cycle->emplace_back(v);
  }
};

}  // namespace

std::vector<OpId> issue_order(const Schedule& s) {
  const std::vector<Edge> edges = dependency_edges(s);
  const Graph g = build_graph(s, edges);
  const size_t n = s.ops.size();
  std::vector<size_t> pending(n, 0);
  for (const Edge& e : edges) ++pending[e.second];
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>> ready;
  for (size_t v = 0; v < n; ++v) {
    if (pending[v] == 0) ready.push(static_cast<int32_t>(v));
  }
  std::vector<OpId> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int32_t v = ready.top();
    ready.pop();
    order.emplace_back(v);
    for (auto [e, end] = boost::out_edges(static_cast<size_t>(v), g); e != end; ++e) {
      const size_t t = boost::target(*e, g);
      if (--pending[t] == 0) ready.push(static_cast<int32_t>(t));
    }
  }
  if (order.size() != n) order.clear();
  return order;
}

std::vector<OpId> find_cycle(const Schedule& s) {
  const Graph g = build_graph(s, dependency_edges(s));
  std::vector<int32_t> parent(s.ops.size(), -1);
  std::vector<OpId> cycle;
  std::vector<boost::default_color_type> colors(s.ops.size());
  CycleFinder finder;
  finder.parent = &parent;
  finder.cycle = &cycle;
  boost::depth_first_search(g, boost::visitor(finder).color_map(boost::make_iterator_property_map(
                                   colors.begin(), boost::get(boost::vertex_index, g))));
  return cycle;
}

HappensBefore::HappensBefore(const Schedule& s) : HappensBefore(s, issue_order(s)) {}

HappensBefore::HappensBefore(const Schedule& s, const std::vector<OpId>& order) : streams_(s.streams.size()) {
  FSDPSIM_CHECK(order.size() == s.ops.size(), "HappensBefore needs an acyclic schedule");
  const size_t n = s.ops.size();
  stream_of_.resize(n);
  position_.resize(n);
  clock_.assign(n * streams_, 0);
  IdVector<StreamId, int32_t> count(streams_, 0);
  for (size_t i = 0; i < n; ++i) {
    stream_of_[i] = s.ops[i].stream;
    position_[i] = ++count[s.ops[i].stream];
  }
  // In issue order every predecessor's clock is final before its successors are visited.
  const IdVector<OpId, OpId> prev_on_stream = stream_predecessors(s);
  for (const OpId v : order) {
    int32_t* clock = &clock_[v.index() * streams_];
    const auto merge_finished = [&](OpId pred) {
      const int32_t* other = &clock_[pred.index() * streams_];
      for (size_t k = 0; k < streams_; ++k) clock[k] = std::max(clock[k], other[k]);
      const size_t ps = stream_of_[pred].index();
      clock[ps] = std::max(clock[ps], position_[pred]);
    };
    if (prev_on_stream[v].valid()) merge_finished(prev_on_stream[v]);
    for (const OpId d : s.ops[v].deps) merge_finished(d);
    // A rendezvous (dependency_edges): the send starts after the recv's predecessors, the recv ends with the send.
    const Op& op = s.ops[v];
    if (const OpId send = paired_send(s, op); send.valid()) merge_finished(send);
    if (op.kind == OpKind::send && s.ops.contains(op.peer) && paired_send(s, s.ops[op.peer]) == v) {
      const Op& recv = s.ops[op.peer];
      if (prev_on_stream[recv.id].valid()) merge_finished(prev_on_stream[recv.id]);
      for (const OpId d : recv.deps) merge_finished(d);
    }
  }
}

bool HappensBefore::before(OpId a, OpId b) const {
  if (a == b) return false;
  const size_t sa = stream_of_[a].index();
  return clock_[b.index() * streams_ + sa] >= position_[a];
}

}  // namespace fsdpsim
