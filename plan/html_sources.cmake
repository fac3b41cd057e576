# The HTML report sources (target_sources(fsdpsim_plan PRIVATE ...)): the run and sweep pages, their charts, helpers.
target_sources(fsdpsim_plan PRIVATE html_report.cpp html_sweep.cpp html_timeline.cpp html_memory.cpp html_svg.cpp)
