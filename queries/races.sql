-- name: races
-- description: Every race of a run: both sites, kinds, class, scope verdict, count, first example and its kernels' launch lines
-- param: run=latest  the run: id, name or 'latest'
-- param: engine      only this engine's races (default: every engine)
--
-- One row per race identity per engine (and per scope verdict for scoped).
-- kernel is "k" or "k_a / k_b" for races between two launches (host = a host
-- copy), demangled for reading (wr_demangle; the identity keeps the symbol).  example is the first occurrence (lowest trace position): address
-- space, address, allocation+offset (another block's shared word, reached
-- through distributed shared memory: its offset and owner block); thread_a/thread_b are the two threads:
-- L launch B block W warp, lane, @ trace position ('@?' where fsm or
-- lockset no longer had the first side's access: position 0, which is
-- never an access; fsm's site is then '?' too; the sides are in canonical
-- order, so that may be thread_b); launched_a/launched_b: where the host
-- launched the kernel of that thread (file:line:function, '' for a host
-- copy or a trace that does not say).  This report is the one --format
-- sarif is made for: there a launch site is one more related location.
SELECT x.engine,
       x.race_class,
       CASE WHEN x.kernel_a = x.kernel_b THEN wr_demangle(x.kernel_a)
            ELSE wr_demangle(x.kernel_a) || ' / ' || wr_demangle(x.kernel_b) END AS kernel,
       x.site_a, x.kind_a, x.site_b, x.kind_b,
       x.scope_verdict,
       x.potential,
       x.count,
       CASE WHEN x.ex_space = 'dsmem'   -- another block's shared word
            THEN printf('shared 0x%x of B%d', x.ex_address & 0xffffffff, x.ex_address >> 32)
            ELSE x.ex_space || ' ' || printf('0x%x', x.ex_address) END
         || CASE WHEN x.ex_alloc <> '' THEN ' (' || x.ex_alloc || '+' || coalesce(x.ex_offset, '?') || ')'
                 ELSE '' END AS example,
       CASE WHEN x.ex_a_block IS NULL THEN 'host @'
            ELSE printf('L%d B%d W%d lane %d @', x.ex_a_launch, x.ex_a_block,
                        x.ex_a_warp, x.ex_a_lane) END
         || CASE WHEN x.ex_a_seq = 0 THEN '?' ELSE x.ex_a_seq END AS thread_a,
       CASE WHEN x.ex_b_block IS NULL THEN 'host @'
            ELSE printf('L%d B%d W%d lane %d @', x.ex_b_launch, x.ex_b_block,
                        x.ex_b_warp, x.ex_b_lane) END
         || CASE WHEN x.ex_b_seq = 0 THEN '?' ELSE x.ex_b_seq END AS thread_b,
       CASE WHEN x.ex_a_block IS NULL THEN '' ELSE coalesce(la.site, '') END AS launched_a,
       CASE WHEN x.ex_b_block IS NULL THEN '' ELSE coalesce(lb.site, '') END AS launched_b
FROM races x JOIN complete_runs r ON r.id = x.run_id
LEFT JOIN launches la ON la.run_id = x.run_id AND la.launch = x.ex_a_launch
LEFT JOIN launches lb ON lb.run_id = x.run_id AND lb.launch = x.ex_b_launch
WHERE r.id = :run AND (:engine IS NULL OR x.engine = :engine)
ORDER BY instr(',' || r.engines || ',', ',' || x.engine || ','), x.engine,
         x.kernel_a, x.kernel_b, x.site_a, x.site_b, x.kind_a, x.kind_b,
         x.race_class, x.scope_verdict;
