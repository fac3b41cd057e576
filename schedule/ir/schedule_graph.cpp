#include "schedule/ir/schedule_graph.h"

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

// Edges: each dep → op, and each op → the next op on its stream. Invalid references are skipped (validate()
// reports them separately).
std::vector<Edge> dependency_edges(const Schedule& s) {
  std::vector<Edge> edges;
  std::vector<int32_t> last_on_stream(s.streams.size(), -1);
  const auto n = static_cast<int32_t>(s.ops.size());
  for (int32_t i = 0; i < n; ++i) {
    const Op& op = s.ops[static_cast<size_t>(i)];
    for (const int32_t d : op.deps) {
      if (d >= 0 && d < n && d != i) edges.emplace_back(static_cast<size_t>(d), static_cast<size_t>(i));
    }
    if (op.stream >= 0 && op.stream < static_cast<int32_t>(s.streams.size())) {
      int32_t& last = last_on_stream[static_cast<size_t>(op.stream)];
      if (last >= 0) edges.emplace_back(static_cast<size_t>(last), static_cast<size_t>(i));
      last = i;
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
  std::vector<int32_t>* cycle;
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
    *cycle = path;
  }
};

}  // namespace

std::vector<int32_t> issue_order(const Schedule& s) {
  const std::vector<Edge> edges = dependency_edges(s);
  const Graph g = build_graph(s, edges);
  const size_t n = s.ops.size();
  std::vector<size_t> pending(n, 0);
  for (const Edge& e : edges) ++pending[e.second];
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>> ready;
  for (size_t v = 0; v < n; ++v) {
    if (pending[v] == 0) ready.push(static_cast<int32_t>(v));
  }
  std::vector<int32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int32_t v = ready.top();
    ready.pop();
    order.push_back(v);
    for (auto [e, end] = boost::out_edges(static_cast<size_t>(v), g); e != end; ++e) {
      const size_t t = boost::target(*e, g);
      if (--pending[t] == 0) ready.push(static_cast<int32_t>(t));
    }
  }
  if (order.size() != n) order.clear();
  return order;
}

std::vector<int32_t> find_cycle(const Schedule& s) {
  const Graph g = build_graph(s, dependency_edges(s));
  std::vector<int32_t> parent(s.ops.size(), -1), cycle;
  std::vector<boost::default_color_type> colors(s.ops.size());
  CycleFinder finder;
  finder.parent = &parent;
  finder.cycle = &cycle;
  boost::depth_first_search(g, boost::visitor(finder).color_map(boost::make_iterator_property_map(
                                   colors.begin(), boost::get(boost::vertex_index, g))));
  return cycle;
}

HappensBefore::HappensBefore(const Schedule& s) : HappensBefore(s, issue_order(s)) {}

HappensBefore::HappensBefore(const Schedule& s, const std::vector<int32_t>& order) : streams_(s.streams.size()) {
  FSDPSIM_CHECK(order.size() == s.ops.size(), "HappensBefore needs an acyclic schedule");
  const size_t n = s.ops.size();
  stream_of_.resize(n);
  position_.resize(n);
  clock_.assign(n * streams_, 0);
  std::vector<int32_t> count(streams_, 0), last(streams_, -1);
  for (size_t i = 0; i < n; ++i) {
    stream_of_[i] = s.ops[i].stream;
    position_[i] = ++count[static_cast<size_t>(s.ops[i].stream)];
  }
  // In issue order every predecessor's clock is final before its successors are visited.
  std::vector<int32_t> prev_on_stream(n, -1);
  for (size_t i = 0; i < n; ++i) {
    int32_t& l = last[static_cast<size_t>(s.ops[i].stream)];
    prev_on_stream[i] = l;
    l = static_cast<int32_t>(i);
  }
  for (const int32_t v : order) {
    int32_t* clock = &clock_[static_cast<size_t>(v) * streams_];
    const auto merge_finished = [&](int32_t pred) {
      const int32_t* other = &clock_[static_cast<size_t>(pred) * streams_];
      for (size_t k = 0; k < streams_; ++k) clock[k] = std::max(clock[k], other[k]);
      const auto ps = static_cast<size_t>(stream_of_[static_cast<size_t>(pred)]);
      clock[ps] = std::max(clock[ps], position_[static_cast<size_t>(pred)]);
    };
    if (prev_on_stream[static_cast<size_t>(v)] >= 0) merge_finished(prev_on_stream[static_cast<size_t>(v)]);
    for (const int32_t d : s.ops[static_cast<size_t>(v)].deps) merge_finished(d);
  }
}

bool HappensBefore::before(int32_t a, int32_t b) const {
  if (a == b) return false;
  const auto sa = static_cast<size_t>(stream_of_[static_cast<size_t>(a)]);
  return clock_[static_cast<size_t>(b) * streams_ + sa] >= position_[static_cast<size_t>(a)];
}

}  // namespace fsdpsim
