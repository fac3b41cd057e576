# HTML report tests: escaping, the Pareto front, bar merging and memory downsampling without a browser (unit), and
# both pages opened in headless Chromium, which scripts/setup installs (integration).
fsdpsim_test(test_plan_html_unit SOURCES html_unit_test.cpp DEPS fsdpsim_plan LABELS unit)
fsdpsim_test(test_plan_html SOURCES html_chromium_test.cpp DEPS fsdpsim_plan LABELS integration)
