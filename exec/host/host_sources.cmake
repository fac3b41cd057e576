# host backend sources (target_sources(fsdpsim_exec PRIVATE ...))
