# HTML report tests: escaping, the Pareto front, bar merging and memory downsampling without a browser (unit), and
# both pages opened in headless Chromium, which scripts/setup installs (integration).
fsdpsim_test(test_plan_html_unit SOURCES html_unit_test.cpp DEPS fsdpsim_plan LABELS unit)
# One Chromium at a time: two starting together on a loaded 2-core CI machine is when one was seen to stall. The
# timeout covers the two tries open_in_chromium may make.
fsdpsim_test(test_plan_html SOURCES html_chromium_test.cpp DEPS fsdpsim_plan LABELS integration TIMEOUT 180
             RESOURCE_LOCK chromium)
