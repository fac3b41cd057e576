// The HTML reports without a browser: escaping, the Pareto front, the merging of sub-pixel timeline bars, the
// per-pixel memory downsampling, self-containment (nothing fetched) and byte-identical output.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "plan/html_report.h"
#include "plan/html_svg.h"

namespace fsdpsim {
namespace {

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

Op make_op(int32_t id, int32_t stream, OpKind kind, const std::string& name) {
  Op op;
  op.id = OpId(id);
  op.stream = StreamId(stream);
  op.kind = kind;
  op.name = name;
  return op;
}

// A hand-made step on three streams, 5,000 ns long:
//   compute: 5,000 ops of 1 ns back to back (ids 0..4999);
//   ag:      two ops of 2,500 ns (ids 5000, 5001);
//   rs:      three ops of 1 ns at 0, 100 and 200 ns (ids 5002..5004).
struct Case {
  Schedule schedule;
  RunRecord run;
  Report report;
};

Case merging_case(const std::string& compute_name = "compute") {
  Case c;
  Schedule& s = c.schedule;
  s.streams = {Stream{compute_name}, Stream{"ag"}, Stream{"rs"}};
  StepRun step;
  step.start_ns = 0;
  step.end_ns = 5000;
  const auto add = [&](int32_t stream, OpKind kind, TimeNs start, TimeNs end) {
    const auto id = static_cast<int32_t>(s.ops.size());
    s.ops.push_back(make_op(id, stream, kind, "op" + std::to_string(id)));
    step.ops.push_back(OpTiming{start, end});
  };
  for (TimeNs t = 0; t < 5000; ++t) add(0, OpKind::compute, t, t + 1);
  add(1, OpKind::all_gather, 0, 2500);
  add(1, OpKind::all_gather, 2500, 5000);
  for (const TimeNs t : {0, 100, 200}) add(2, OpKind::reduce_scatter, t, t + 1);
  c.run.steps = {step};
  // Memory: 4 GiB of param_shard throughout, 2 GiB of activations from 1,000 to 3,000 ns.
  MemorySample a, b, d;
  a.time_ns = 0;
  a.bytes[static_cast<size_t>(BufferCategory::param_shard)] = 4 * kGiB;
  a.reserved_bytes = 4 * kGiB;
  b = a;
  b.time_ns = 1000;
  b.bytes[static_cast<size_t>(BufferCategory::activation)] = 2 * kGiB;
  b.reserved_bytes = 6 * kGiB;
  d = b;
  d.time_ns = 3000;
  d.bytes[static_cast<size_t>(BufferCategory::activation)] = 0;
  c.run.timeline = {a, b, d};
  Report& r = c.report;
  r.model = "tiny";
  r.topology = "hand-made";
  r.gpu_memory_bytes = 80 * kGiB;
  r.peak_allocated_bytes = 6 * kGiB;
  r.peak_reserved_bytes = 6 * kGiB;
  r.peak_time_s = 1e-6;
  r.peak_op = "op1000";
  r.memory_breakdown = {{"param_shard", 4 * kGiB}, {"activation", 2 * kGiB}, {"nccl", 0}};
  return c;
}

TEST(HtmlEscape, ReplacesEveryCharacterThatEndsTextOrAnAttribute) {
  EXPECT_EQ(html_escape("<a href=\"x\">Tom & Jerry's</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
  EXPECT_EQ(html_escape("plain text 1.5 GiB"), "plain text 1.5 GiB");
  EXPECT_EQ(html_escape(""), "");
}

TEST(HtmlEscape, InputTextNeverReachesThePageUnescaped) {
  Case c = merging_case("</script><script>alert(1)</script>");
  c.schedule.ops[0].name = "<img src=x onerror=alert(2)>";
  c.report.model = "m\"odel & <b>";
  c.report.oom = true;
  c.report.oom_reason = "needs 90 GiB > 80 GiB";
  const std::string html = html_run_report(c.schedule, c.run, c.report, {});
  EXPECT_EQ(occurrences(html, "<script"), 1u);  // only the self-check
  EXPECT_EQ(occurrences(html, "<img"), 0u);
  EXPECT_NE(html.find("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("m&quot;odel &amp; &lt;b&gt;"), std::string::npos);
  EXPECT_NE(html.find("Out of memory: needs 90 GiB &gt; 80 GiB"), std::string::npos);
}

// The table between `<table id="ID"` and its end; empty when the page has none.
std::string table_with_id(const std::string& html, const std::string& id) {
  const size_t begin = html.find("<table id=\"" + id + "\"");
  if (begin == std::string::npos) return "";
  return html.substr(begin, html.find("</table>", begin) - begin);
}

TEST(HtmlRunConfig, TableShowsTheJobsSettings) {
  Case c = merging_case();
  c.report.world_size = 16;
  c.report.model_size.params = 8'030'000'000;
  c.report.model_size.active_params = 8'030'000'000;
  FsdpConfig config;
  config.data_parallel_sharding_strategy = ShardingStrategy::optim_grads;
  config.tp = 2;
  config.cp = 2;
  config.ep = 4;
  config.micro_batch_size = 2;
  config.global_batch_size = 64;
  config.seq_length = 8192;
  config.recompute_granularity = Recompute::full;
  config.recompute_method = RecomputeMethod::block;
  config.recompute_num_layers = 3;
  config.grad_comm_dtype = "fp32";
  config.exp_avg_sq_dtype = DType::bf16;
  const std::string html = html_run_report(c.schedule, c.run, c.report, {}, &config);
  const std::string table = table_with_id(html, "config");
  ASSERT_FALSE(table.empty());
  for (const char* row :
       {"<tr data-key=\"implementation\"><th>implementation</th><td>megatron_fsdp</td></tr>",
        "<tr data-key=\"data_parallel_sharding_strategy\"><th>sharding strategy</th><td>optim_grads</td></tr>",
        "<tr data-key=\"tp\"><th>tensor parallel</th><td>2</td></tr>",
        "<tr data-key=\"cp\"><th>context parallel</th><td>2</td></tr>",
        "<tr data-key=\"ep\"><th>expert parallel</th><td>4 (expert tensor parallel 1)</td></tr>",
        "<tr data-key=\"pp\"><th>pipeline parallel</th><td>1</td></tr>",
        // 16 GPUs / (tp 2 × cp 2) = 4.
        "<tr data-key=\"dp\"><th>data parallel</th><td>4 (GPUs / (tp × cp))</td></tr>",
        "<tr data-key=\"micro_batch_size\"><th>micro-batch size</th><td>2 sequences</td></tr>",
        "<tr data-key=\"global_batch_size\"><th>global batch</th><td>64 sequences</td></tr>",
        "<tr data-key=\"seq_length\"><th>sequence length</th><td>8192 tokens</td></tr>",
        "<tr data-key=\"recompute_granularity\"><th>recompute</th><td>full, method block, 3 layers</td></tr>",
        "<tr data-key=\"param_dtype\"><th>parameters</th><td>bf16</td></tr>",
        "<tr data-key=\"main_params_dtype\"><th>main weights</th><td>fp32</td></tr>",
        // main_grads_dtype auto: the parameter dtype; grad_comm_dtype given as fp32.
        "<tr data-key=\"main_grads_dtype\"><th>gradients</th><td>bf16 (auto)</td></tr>",
        "<tr data-key=\"grad_comm_dtype\"><th>gradient communication</th><td>fp32</td></tr>",
        "<tr data-key=\"exp_avg_dtype\"><th>optimizer states</th><td>exp_avg fp32, exp_avg_sq bf16</td></tr>"}) {
    EXPECT_NE(table.find(row), std::string::npos) << row;
  }
  // The model's size sits with the model in the job table.
  EXPECT_NE(table_with_id(html, "job").find("<tr><th>model size</th><td>" + model_size_text(c.report.model_size)),
            std::string::npos);
  EXPECT_EQ(html, html_run_report(c.schedule, c.run, c.report, {}, &config));
  // Without a configuration (a schedule read from a file) there is no table.
  EXPECT_EQ(html_run_report(c.schedule, c.run, c.report, {}).find("id=\"config\""), std::string::npos);
}

TEST(HtmlRunConfig, GlobalBatchZeroShowsWhatTheScheduleMadeOfIt) {
  // global_batch_size 0: one micro-batch per data-parallel rank; the schedule's 131,072 tokens per step over 4,096
  // tokens per sequence are 32 sequences. Selective recompute names its modules.
  Case c = merging_case();
  c.schedule.info.global_tokens_per_step = 131072;
  FsdpConfig config;
  config.global_batch_size = 0;
  config.seq_length = 4096;
  config.recompute_granularity = Recompute::selective;
  config.recompute_modules = {RecomputeModule::core_attn, RecomputeModule::mlp};
  const std::string table = table_with_id(html_run_report(c.schedule, c.run, c.report, {}, &config), "config");
  EXPECT_NE(table.find("<th>global batch</th><td>32 sequences (0 given: one micro-batch per data-parallel rank)</td>"),
            std::string::npos);
  EXPECT_NE(table.find("<th>recompute</th><td>selective (core_attn, mlp)</td>"), std::string::npos);
  // world_size 0 (not known): no data-parallel row rather than a made-up one.
  EXPECT_EQ(table.find("data-key=\"dp\""), std::string::npos);
  // A schedule that does not record its tokens per step: only the rule, not "0 sequences".
  c.schedule.info.global_tokens_per_step = 0;
  EXPECT_NE(table_with_id(html_run_report(c.schedule, c.run, c.report, {}, &config), "config")
                .find("<th>global batch</th><td>0 given: one micro-batch per data-parallel rank</td>"),
            std::string::npos);
}

TEST(HtmlRunCollectives, OneRowPerCollectiveAndNoTableWithoutThem) {
  Case c = merging_case();
  EXPECT_EQ(html_run_report(c.schedule, c.run, c.report, {}).find("id=\"collectives\""), std::string::npos);
  CollectiveTotals ag;
  ag.kind = OpKind::all_gather;
  ag.group = "dp<shard>";
  ag.ranks = 8;
  ag.domains = 1;
  ag.count = 64;
  ag.size_bytes = kGiB;
  ag.busy_ns = 12'500'000;
  ag.algorithm = "Ring/Simple";
  ag.busbw_bytes_per_s = 350e9;
  CollectiveTotals rs = ag;
  rs.kind = OpKind::reduce_scatter;
  rs.group = "dp";
  rs.domains = 2;
  rs.count = 32;
  rs.size_bytes = 512 * kMiB;
  rs.busy_ns = 3'000'000;
  rs.algorithm = "NVLS/Simple";
  rs.busbw_bytes_per_s = 480.25e9;
  c.report.collectives = {ag, rs};
  const std::string html = html_run_report(c.schedule, c.run, c.report, {});
  const std::string table = table_with_id(html, "collectives");
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(occurrences(table, "<tr><td>"), 2u);
  EXPECT_NE(table.find("<tr><td>all_gather</td><td>dp&lt;shard&gt;</td><td class=\"num\">8</td><td class=\"num\">1"
                       "</td><td class=\"num\">64</td><td class=\"num\">" +
                       format_bytes(kGiB) + "</td><td class=\"num\">" + format_time_ns(12'500'000) +
                       "</td><td>Ring/Simple</td><td class=\"num\">350.0 GB/s</td></tr>"),
            std::string::npos);
  EXPECT_NE(table.find("<tr><td>reduce_scatter</td><td>dp</td><td class=\"num\">8</td><td class=\"num\">2</td>"
                       "<td class=\"num\">32</td><td class=\"num\">" +
                       format_bytes(512 * kMiB) + "</td><td class=\"num\">" + format_time_ns(3'000'000) +
                       "</td><td>NVLS/Simple</td><td class=\"num\">480.2 GB/s</td></tr>"),
            std::string::npos);
  // The page's self-check counts the rows a browser drew.
  EXPECT_NE(html.find("[\"collective-rows\", \"#collectives tbody tr\", 1, 0]"), std::string::npos);
}

TEST(HtmlRunOom, ThroughputIsMarkedOnlyWhenTheRunDoesNotFit) {
  Case c = merging_case();
  c.report.step_time_s = 2.0;
  c.report.tokens_per_s_per_gpu = 1234;
  const std::string fits = html_run_report(c.schedule, c.run, c.report, {});
  EXPECT_EQ(fits.find("class=\"v if-it-fit\""), std::string::npos);
  EXPECT_EQ(fits.find("if-it-fit-mark\">"), std::string::npos);
  EXPECT_EQ(fits.find("id=\"if-it-fit-note\""), std::string::npos);
  c.report.oom = true;
  c.report.oom_reason = "needs 90 GiB > 80 GiB";
  const std::string oom = html_run_report(c.schedule, c.run, c.report, {});
  // Step time, first step, tokens/s, TFLOP/s, MFU and exposed communication: marked, with their numbers kept.
  EXPECT_EQ(occurrences(oom, "<div class=\"v if-it-fit\">"), 6u);
  EXPECT_NE(oom.find("<div class=\"v if-it-fit\">1,234<span class=\"if-it-fit-mark\">*</span></div>"),
            std::string::npos);
  EXPECT_NE(oom.find("<p id=\"if-it-fit-note\" class=\"note\"><span class=\"if-it-fit-mark\">*</span> The run does "
                     "not fit in memory; its throughput is what it would be if it did.</p>"),
            std::string::npos);
  // Memory figures are real either way: not marked.
  EXPECT_NE(oom.find("<div class=\"k\">peak reserved</div><div class=\"v\">"), std::string::npos);
  EXPECT_NE(oom.find(".card .v.if-it-fit{"), std::string::npos);  // the page styles the mark
}

TEST(HtmlRunRanks, ThePageSaysWhichRankTheFiguresAreForAndWhatAStragglerCosts) {
  Case c = merging_case();
  c.report.step_time_s = 2.0;
  EXPECT_EQ(html_run_report(c.schedule, c.run, c.report, {}).find("id=\"ranks-differ\""), std::string::npos);
  c.report.simulated_rank = "a straggler (compute 1.25× slower) <slow>";
  c.report.straggler_cost_s = 0.5;
  const std::string html = html_run_report(c.schedule, c.run, c.report, {});
  EXPECT_NE(html.find("<p id=\"ranks-differ\" class=\"note\">Ranks differ: the figures are for a straggler (compute "
                      "1.25× slower) &lt;slow&gt;; the straggler costs every rank 0.500 s per step (25.0% of it).</p>"),
            std::string::npos);
}

TEST(HtmlRunPipeline, ThePageNamesTheStagesWhoseMemoryItShowsAndGroupsLanesByStage) {
  Case c = merging_case();
  c.report.world_size = 64;
  // Two stages: the hand-made compute and ag streams on stage 0, rs on stage 1.
  c.schedule.info.pipeline_stages = 2;
  c.schedule.streams[2].stage = 1;
  c.report.pipeline_stages = 2;
  c.report.virtual_stages = 2;
  c.report.pipeline_schedule = "interleaved_1f1b";
  c.report.pipeline_bubble_s = 0.25;
  c.report.memory_stage = 1;
  c.report.stage_peak_reserved_bytes = {5 * kGiB, 6 * kGiB};
  FsdpConfig config;
  config.tp = 8;
  config.pp = 2;
  config.virtual_pipeline_stages = 2;
  config.pipeline_schedule = PipelineSchedule::interleaved_1f1b;
  const std::string html = html_run_report(c.schedule, c.run, c.report, {}, &config);
  const std::string table = table_with_id(html, "config");
  EXPECT_NE(table.find("<tr data-key=\"pp\"><th>pipeline parallel</th><td>2 stages × 2 model chunks, "
                       "interleaved_1f1b</td></tr>"),
            std::string::npos)
      << table;
  // 64 GPUs / (tp 8 × pp 2) = 4.
  EXPECT_NE(table.find("<tr data-key=\"dp\"><th>data parallel</th><td>4 (GPUs / (tp × cp × pp))</td></tr>"),
            std::string::npos)
      << table;
  EXPECT_NE(html.find("<p id=\"pipeline\" class=\"note\">Pipeline: interleaved_1f1b, 2 stages × 2 model chunks; "
                      "bubble 250.00 ms on stage 0. Peak reserved per stage: stage 0 5.0 GiB, stage 1 6.0 GiB. The "
                      "memory chart, breakdown and verdict are stage 1's, the fullest"),
            std::string::npos)
      << html;
  EXPECT_EQ(occurrences(html, "data-stage=\"0\""), 2u);
  EXPECT_EQ(occurrences(html, "data-stage=\"1\""), 1u);
  EXPECT_NE(html.find("on 3 streams of 2 pipeline stages (one rank each)"), std::string::npos);
  // Without a pipeline neither the note nor stage attributes appear.
  const Case plain = merging_case();
  const std::string one = html_run_report(plain.schedule, plain.run, plain.report, {});
  EXPECT_EQ(one.find("id=\"pipeline\""), std::string::npos);
  EXPECT_EQ(one.find("data-stage="), std::string::npos);
}

TEST(HtmlTimeline, MergesSubPixelOpsPerLaneAndKeepsWideOnes) {
  // The plot is 1,000 px wide for 5,000 ns: 0.2 px per ns.
  //   compute: 5,000 ops of 0.2 px, each starting where the last ended (gap 0 < 1 px) → one bar merging 5,000 ops;
  //   ag:      2 ops of 2,500 × 0.2 = 500 px → 2 bars;
  //   rs:      3 ops of 0.2 px at x = 0, 20, 40 px, 19.8 px apart (≥ 1 px) → 3 bars, none merged.
  // 1 + 2 + 3 = 6 bars.
  const Case c = merging_case();
  const std::string html = html_run_report(c.schedule, c.run, c.report, {});
  EXPECT_EQ(occurrences(html, "<rect data-bar="), 6u);
  EXPECT_EQ(occurrences(html, "data-merged="), 1u);
  EXPECT_NE(html.find("<rect data-bar=\"compute\" data-merged=\"5000\""), std::string::npos);
  EXPECT_EQ(occurrences(html, "<rect data-bar=\"all_gather\""), 2u);
  EXPECT_EQ(occurrences(html, "<rect data-bar=\"reduce_scatter\""), 3u);
  // The first all-gather: x = 120 (left margin) + 0, width 500 px.
  EXPECT_NE(html.find("<rect data-bar=\"all_gather\" x=\"120.0\" y=\"32.0\" width=\"500.0\""), std::string::npos);
}

TEST(HtmlTimeline, AMergedBarIsAsOpaqueAsTheStreamWasBusy) {
  // A fourth stream with 200 ops of 1 ns every 2 ns from 0: each 0.2 px wide, 0.2 px apart (< 1 px) → one merged
  // bar from 0 to 399 ns, busy 200 ns of 399: opacity 200 / 399 = 0.501 → "0.50".
  Case c = merging_case();
  c.schedule.streams.push_back(Stream{"sparse"});
  for (TimeNs t = 0; t < 400; t += 2) {
    const auto id = static_cast<int32_t>(c.schedule.ops.size());
    c.schedule.ops.push_back(make_op(id, 3, OpKind::copy, "copy" + std::to_string(id)));
    c.run.steps[0].ops.push_back(OpTiming{t, t + 1});
  }
  const std::string html = html_run_report(c.schedule, c.run, c.report, {});
  EXPECT_NE(html.find("<rect data-bar=\"copy\" data-merged=\"200\" fill-opacity=\"0.50\""), std::string::npos);
  // The compute lane was busy throughout: no opacity.
  EXPECT_NE(html.find("<rect data-bar=\"compute\" data-merged=\"5000\" x="), std::string::npos);
}

TEST(HtmlMemory, OneAreaPerLiveCategoryAndThePeakMarked) {
  // param_shard and activation hold bytes at some time; nccl is in the breakdown but 0 → no segment.
  const Case c = merging_case();
  const std::string html = html_run_report(c.schedule, c.run, c.report, {});
  EXPECT_EQ(occurrences(html, "<polygon data-area="), 2u);
  EXPECT_EQ(occurrences(html, "data-area=\"param_shard\""), 1u);
  EXPECT_EQ(occurrences(html, "data-area=\"activation\""), 1u);
  EXPECT_EQ(occurrences(html, "<circle data-peak=\"1\""), 1u);
  EXPECT_EQ(occurrences(html, "<rect data-segment="), 2u);
  // Capacity: 80 GiB − 0 overheads; the y axis reaches 80 GiB × 1.08 = 86.4 GiB over 300 px from y = 26, so the
  // line is at 26 + 300 × (1 − 80 / 86.4) = 26 + 22.2 = 48.2.
  EXPECT_NE(html.find("<line data-capacity=\"1\" x1=\"120.0\" y1=\"48.2\""), std::string::npos);
  EXPECT_NE(html.find("usable 80.0 GiB = GPU 80.0 GiB − overheads 0 B"), std::string::npos);
}

TEST(HtmlMemory, ManySamplesPerPixelKeepTheHighestAndStayBounded) {
  // 100,000 samples 1 ns apart over a 100,000 ns step: activations toggle 0 / 1 GiB every sample on top of 1 GiB of
  // param_shard. Each of the 1,000 pixel columns covers 100 samples and shows its fullest (2 GiB), so the activation
  // band is [1, 2] GiB everywhere: one polygon of 4 points. y(b) = 26 + 300 × (1 − b / 86.4 GiB):
  //   y(2 GiB) = 26 + 293.06 = 319.1, y(1 GiB) = 26 + 296.53 = 322.5.
  Case c = merging_case();
  c.run.steps[0].end_ns = 100000;
  c.run.timeline.clear();
  for (TimeNs t = 0; t < 100000; ++t) {
    MemorySample s;
    s.time_ns = t;
    s.bytes[static_cast<size_t>(BufferCategory::param_shard)] = kGiB;
    s.bytes[static_cast<size_t>(BufferCategory::activation)] = t % 2 == 1 ? kGiB : 0;
    s.reserved_bytes = 2 * kGiB;
    c.run.timeline.push_back(s);
  }
  const std::string html = html_run_report(c.schedule, c.run, c.report, {});
  EXPECT_NE(html.find("data-area=\"activation\" fill=\"#b07aa1\" fill-opacity=\"0.9\" "
                      "points=\"120.0,319.1 1120.0,319.1 1120.0,322.5 120.0,322.5\""),
            std::string::npos);
  EXPECT_LT(html.size(), 200'000u);  // the 100,000 samples do not reach the page
}

TEST(HtmlPage, SelfContainedAndDeterministic) {
  const Case c = merging_case();
  const std::string html = html_run_report(c.schedule, c.run, c.report, {});
  EXPECT_EQ(html, html_run_report(c.schedule, c.run, c.report, {}));
  for (const char* fetch : {"https://", "src=", "href=", "url(", "@import", "<link", "<img", "<iframe", "@font-face"}) {
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
  }
  // "http://" only as the SVG namespace name, which is never fetched.
  EXPECT_EQ(occurrences(html, "http://"), occurrences(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_NE(html.find("<pre id=\"fsdpsim-selfcheck\">"), std::string::npos);
}

SweepResult pt(int64_t needed_gib, double tokens_per_s, bool valid = true) {
  SweepResult r;
  r.valid = valid;
  r.needed_bytes = needed_gib * kGiB;
  r.tokens_per_s_per_gpu = tokens_per_s;
  r.gpu_memory_bytes = 80 * kGiB;
  r.memory.fit = needed_gib <= 80 ? MemoryFit::fits : MemoryFit::out_of_memory;
  return r;
}

TEST(ParetoFront, KeepsExactlyTheUndominatedValidPoints) {
  // (needed GiB, tokens/s):
  //   0 (10, 100)  front: only 7 needs less, and it gives 50
  //   1 (20, 150)  front: the points needing ≤ 20 (7, 0, 2) give at most 100
  //   2 (15,  90)  dominated by 0 (10 GiB, 100)
  //   3 (30, 150)  dominated by 1 (same 150 with 20 GiB)
  //   4 (40, 300)  front: the fastest
  //   5 (20, 150)  equal to 1: kept with it
  //   6 invalid    ignored although it would dominate everything
  //   7 ( 5,  50)  front: the least memory
  // By needed memory, then index: 7 (5), 0 (10), 1 (20), 5 (20), 4 (40).
  const std::vector<SweepResult> results = {pt(10, 100), pt(20, 150), pt(15, 90),         pt(30, 150),
                                            pt(40, 300), pt(20, 150), pt(1, 1000, false), pt(5, 50)};
  EXPECT_EQ(pareto_front(results), (std::vector<size_t>{7, 0, 1, 5, 4}));
}

TEST(ParetoFront, EmptyWithoutValidPointsAndSingleOtherwise) {
  EXPECT_TRUE(pareto_front({}).empty());
  EXPECT_TRUE(pareto_front({pt(10, 100, false)}).empty());
  EXPECT_EQ(pareto_front({pt(10, 100)}), (std::vector<size_t>{0}));
  // Same memory, less throughput: only the faster one.
  EXPECT_EQ(pareto_front({pt(10, 90), pt(10, 100)}), (std::vector<size_t>{1}));
}

TEST(HtmlSweep, MarksTheFrontAndEscapesItsInputs) {
  std::vector<SweepResult> results = {pt(10, 100), pt(15, 90), pt(20, 150), pt(1, 1, false)};
  results[0].assignments = {"tp=<2>"};
  results[3].invalid_reason = "heads & \"tp\"";
  // Front: 0 (10, 100) and 2 (20, 150); 1 (15, 90) is dominated by 0.
  const std::string html = html_sweep_report(results, {2, 0, 1, 3}, "a <b> sweep");
  EXPECT_EQ(occurrences(html, "data-pareto=\"1\""), 2u);
  EXPECT_NE(html.find("data-index=\"0\" data-fits=\"1\" data-pareto=\"1\""), std::string::npos);
  EXPECT_NE(html.find("data-index=\"2\" data-fits=\"1\" data-pareto=\"1\""), std::string::npos);
  EXPECT_EQ(occurrences(html, "<circle data-point="), 3u);  // the invalid point is not drawn
  EXPECT_NE(html.find("<title>a &lt;b&gt; sweep</title>"), std::string::npos);
  EXPECT_NE(html.find("tp=&lt;2&gt;"), std::string::npos);
  EXPECT_NE(html.find("invalid: heads &amp; &quot;tp&quot;"), std::string::npos);
  EXPECT_EQ(html, html_sweep_report(results, {2, 0, 1, 3}, "a <b> sweep"));
}

TEST(HtmlPage, SelfCheckIsHiddenFromReaders) {
  // The browser tests read the self-check's <pre> from a dumped DOM, so it stays, with its bare tag; the page's style
  // keeps it (and its "self-check did not run" placeholder) off the screen and out of print.
  const Case c = merging_case();
  for (const std::string& html :
       {html_run_report(c.schedule, c.run, c.report, {}), html_sweep_report({pt(10, 100)}, {0}, "sweep")}) {
    EXPECT_EQ(occurrences(html, "<pre id=\"fsdpsim-selfcheck\">"), 1u);
    EXPECT_NE(html.find("pre#fsdpsim-selfcheck{display:none}"), std::string::npos);
    EXPECT_EQ(occurrences(html, "fsdpsim-selfcheck"), 3u);  // the rule, the element and the script writing into it
  }
}

// (needed GiB, tokens/s) on 80 GiB GPUs:
//   0 ( 10, 100) fits  front
//   1 ( 20, 150) fits  front
//   2 ( 15,  90) fits  dominated by 0
//   3 ( 30, 500) OOM   the fastest, and nothing that fits dominates it, yet its throughput cannot be had
//   4 (800, 900) OOM   ten times the GPU memory
std::vector<SweepResult> fitting_and_oom_points() {
  std::vector<SweepResult> results = {pt(10, 100), pt(20, 150), pt(15, 90), pt(30, 500), pt(800, 900)};
  results[3].memory.fit = MemoryFit::out_of_memory;  // pt() says 30 GiB fits 80 GiB; this one's overheads say otherwise
  return results;
}

TEST(ParetoFront, LeavesOutPointsThatDoNotFit) {
  const std::vector<SweepResult> results = fitting_and_oom_points();
  EXPECT_EQ(pareto_front(results), (std::vector<size_t>{0, 1}));
  // With no fitting point there is no front, however fast the OOM points are.
  SweepResult oom = pt(100, 1e6);
  ASSERT_FALSE(oom.fits());
  EXPECT_TRUE(pareto_front({oom, oom}).empty());
}

TEST(HtmlSweep, AxisFollowsTheFittingPointsAndClipsTheRest) {
  const std::vector<SweepResult> results = fitting_and_oom_points();
  const std::string html = html_sweep_report(results, {1, 0, 2, 3, 4}, "sweep");
  // Only the fitting front is marked; both OOM points are still drawn.
  EXPECT_EQ(occurrences(html, "data-pareto=\"1\""), 2u);
  EXPECT_NE(html.find("data-index=\"3\" data-fits=\"0\" data-pareto=\"0\" cx="), std::string::npos);
  EXPECT_EQ(occurrences(html, "<circle data-point="), 5u);
  // The axis: max(GPU memory 80, largest fitting need 20) × 1.1 = 88 GiB, not the 800 GiB OOM point × 1.1.
  EXPECT_NE(html.find("data-memory-axis-bytes=\"" + std::to_string(88 * kGiB) + "\""), std::string::npos);
  // x(b) = 120 + b / 88 GiB × 1000: point 0 at 120 + 113.6 = 233.6, point 3 (30 GiB, on the chart) at 460.9.
  EXPECT_NE(html.find("data-index=\"0\" data-fits=\"1\" data-pareto=\"1\" cx=\"233.6\""), std::string::npos);
  EXPECT_NE(html.find("data-index=\"3\" data-fits=\"0\" data-pareto=\"0\" cx=\"460.9\""), std::string::npos);
  // Point 4 (800 GiB) is clipped at the right edge, 120 + 1000 = 1120, marked and counted in a note.
  EXPECT_NE(html.find("data-index=\"4\" data-fits=\"0\" data-pareto=\"0\" data-off-chart=\"1\" cx=\"1120.0\""),
            std::string::npos);
  EXPECT_EQ(occurrences(html, "data-off-chart=\"1\""), 1u);
  EXPECT_NE(html.find("off the chart: drawn at its right edge"), std::string::npos);  // its tooltip
  EXPECT_NE(html.find("<p id=\"off-chart\" class=\"note\">1 point needs more memory than the axis shows (up to "
                      "800.0 GiB): drawn at its right edge, outlined dashed.</p>"),
            std::string::npos);
  // The front's table lists the fitting front only.
  EXPECT_EQ(occurrences(table_with_id(html, "pareto"), "<tr class=\"fits\">"), 2u);
  EXPECT_EQ(html, html_sweep_report(results, {1, 0, 2, 3, 4}, "sweep"));
  // Without the OOM outlier nothing is off the chart, and there is no note.
  const std::vector<SweepResult> inside(results.begin(), results.begin() + 4);
  const std::string all_inside = html_sweep_report(inside, {1, 0, 2, 3}, "sweep");
  EXPECT_EQ(all_inside.find("data-off-chart"), std::string::npos);
  EXPECT_EQ(all_inside.find("id=\"off-chart\""), std::string::npos);
}

TEST(HtmlSweep, WithoutFittingPointsOrGpuMemoryTheOomPointsSetTheAxis) {
  // Nothing fits and no GPU memory is known: the axis spans the points, 100 GiB × 1.1 = 110 GiB.
  std::vector<SweepResult> results = {pt(100, 10), pt(90, 20)};
  for (SweepResult& r : results) r.gpu_memory_bytes = 0;
  const std::string html = html_sweep_report(results, {0, 1}, "sweep");
  EXPECT_NE(html.find("data-memory-axis-bytes=\"" + std::to_string(110 * kGiB) + "\""), std::string::npos);
  EXPECT_EQ(html.find("data-off-chart"), std::string::npos);
  EXPECT_EQ(occurrences(html, "data-pareto=\"1\""), 0u);
}

TEST(HtmlSweep, AThroughputAxisFittedToPointsThatSitCloseTogether) {
  // 797-823 tokens/s: spread 26, a tenth of it (2.6) spare each side, 1-2-5 ticks over 31.2 step by 10: the axis
  // runs 790-830, not 0-905 where the points would be one flat line.
  const std::vector<SweepResult> close = {pt(10, 797), pt(20, 810), pt(30, 823)};
  EXPECT_NE(html_sweep_report(close, {2, 1, 0}, "sweep").find("data-throughput-axis=\"790 830\""), std::string::npos);
  // 100-1000 tokens/s spread over more than half the axis: it starts at 0 and ends at 1000 × 1.1.
  const std::vector<SweepResult> spread = {pt(10, 100), pt(20, 1000)};
  EXPECT_NE(html_sweep_report(spread, {1, 0}, "sweep").find("data-throughput-axis=\"0 1100\""), std::string::npos);
}

TEST(HtmlSweep, AtRiskPointsHaveTheirOwnColourAndLegendEntry) {
  std::vector<SweepResult> results = {pt(10, 100), pt(78, 120), pt(90, 130)};
  results[1].memory.fit = MemoryFit::at_risk;
  const std::string html = html_sweep_report(results, {0, 1, 2}, "sweep");
  EXPECT_NE(html.find("at risk (within the margin of GPU memory)"), std::string::npos);
  const auto fill_of = [&](size_t index) {
    const size_t at = html.find("<circle data-point=\"1\" data-index=\"" + std::to_string(index) + "\"");
    const size_t fill = html.find("fill=\"", at);
    return html.substr(fill + 6, 7);
  };
  EXPECT_EQ(fill_of(0), "#59a14f");  // fits
  EXPECT_EQ(fill_of(1), "#f28e2b");  // at risk
  EXPECT_EQ(fill_of(2), "#e15759");  // out of memory
}

TEST(HtmlSweep, StatesTheSettingsEveryPointShares) {
  const std::vector<SweepResult> results = {pt(10, 100)};
  EXPECT_NE(html_sweep_report(results, {0}, "sweep", "seq_length=8192 global_batch_size=<512>")
                .find("<p class=\"sub\" id=\"fixed\">Every point shares: seq_length=8192 "
                      "global_batch_size=&lt;512&gt;</p>"),
            std::string::npos);
  EXPECT_EQ(html_sweep_report(results, {0}, "sweep").find("id=\"fixed\""), std::string::npos);
}

TEST(HtmlFormat, TicksAndNumbers) {
  // 1000 / 10 = 100 → step 100: 0, 100, ..., 1000 (11 ticks).
  EXPECT_EQ(html::nice_ticks(1000, 10).size(), 11u);
  // 7.3e9 / 10 = 7.3e8 → 7.3 rounds up to 10 → step 1e9: 0 .. 7e9 (8 ticks).
  const std::vector<double> t = html::nice_ticks(7.3e9, 10);
  ASSERT_EQ(t.size(), 8u);
  EXPECT_EQ(t[1], 1e9);
  EXPECT_EQ(html::time_tick_label(2e9, 1e9), "2 s");
  EXPECT_EQ(html::time_tick_label(250e6, 50e6), "250 ms");
  EXPECT_EQ(html::grouped(1234567.4), "1,234,567");
  EXPECT_EQ(html::grouped(999), "999");
  EXPECT_EQ(html::fixed(-0.04, 1), "0.0");
  EXPECT_EQ(html::percent(0.4126), "41.3 %");
}

}  // namespace
}  // namespace fsdpsim
