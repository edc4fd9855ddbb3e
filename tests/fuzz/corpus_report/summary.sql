-- name: summary
-- description: One run at a glance: what was analyzed, races per engine, per kernel and per class, lost events, timings
-- param: run=latest  the run: id, name or 'latest'
--
-- Counts are distinct race identities (kernels, sites, kinds, class); an
-- identity the scoped engine reports with two scope verdicts counts once.
-- "definite" excludes lockset's potential races (unprotected, but not exposed
-- by this run's order).

-- section: Run
WITH r AS (SELECT * FROM complete_runs WHERE id = :run)
SELECT field, value FROM (
          SELECT 1 AS k, 'run' AS field, id || ' (' || name || ')' AS value FROM r
UNION ALL SELECT 2, 'trace', trace_path || ' (' || trace_bytes || ' bytes, ' || trace_hash || ')' FROM r
UNION ALL SELECT 3, 'device', CASE WHEN device = '' THEN '?' ELSE device END
                   || CASE WHEN sm_arch > 0 THEN ' (sm_' || sm_arch || ')' ELSE '' END FROM r
UNION ALL SELECT 4, 'recorded command', recorded_command FROM r WHERE recorded_command <> ''
UNION ALL SELECT 5, 'analyzed', started_at || ' by warprace ' || analyzer_version FROM r
UNION ALL SELECT 6, 'engines', engines || ' (' || threads || ' threads)' FROM r
UNION ALL SELECT 7, 'events', events || ' events, ' || accesses || ' warp accesses, '
                   || thread_accesses || ' thread accesses, ' || launches || ' launches' FROM r
UNION ALL SELECT 8, 'lost events', CASE WHEN lost_events = 0 AND truncated = 0 THEN '0'
                   ELSE lost_events || CASE WHEN truncated <> 0 THEN ', trace truncated' ELSE '' END
                        || ' (results may miss races)' END FROM r
UNION ALL SELECT 9, 'time', coalesce(printf('%.3f s wall', wall_seconds), '? s wall') || ', '
                   || coalesce(printf('%.3f s decode', decode_seconds), '? s decode') FROM r
UNION ALL SELECT 10, 'peak memory', coalesce(printf('%.1f MiB', peak_rss_bytes / 1048576.0), '?') FROM r
UNION ALL SELECT 11, 'races', (SELECT count(DISTINCT identity) FROM races WHERE run_id = r.id)
                   || ' distinct (' || (SELECT count(DISTINCT identity) FROM races
                                         WHERE run_id = r.id AND potential = 0) || ' definite)' FROM r
) ORDER BY k;

-- section: Races per engine
SELECT er.engine,
       count(DISTINCT x.identity) AS races,
       count(DISTINCT CASE WHEN x.potential = 0 THEN x.identity END) AS definite,
       count(DISTINCT CASE WHEN x.potential <> 0 THEN x.identity END) AS potential,
       coalesce(sum(x.count), 0) AS occurrences,
       printf('%.3f', er.seconds) AS seconds,
       er.shadow_words
FROM complete_runs r
JOIN engine_runs er ON er.run_id = r.id
LEFT JOIN races x ON x.run_id = r.id AND x.engine = er.engine
WHERE r.id = :run
GROUP BY er.engine
ORDER BY instr(',' || min(r.engines) || ',', ',' || er.engine || ','), er.engine;

-- section: Races per kernel
SELECT CASE WHEN x.kernel_a = x.kernel_b THEN x.kernel_a
            ELSE x.kernel_a || ' / ' || x.kernel_b END AS kernel,
       count(DISTINCT x.identity) AS races,
       count(DISTINCT CASE WHEN x.potential = 0 THEN x.identity END) AS definite,
       max(x.count) AS max_count
FROM races x JOIN complete_runs r ON r.id = x.run_id
WHERE r.id = :run
GROUP BY 1
ORDER BY races DESC, kernel;

-- section: Races per class
SELECT c.race_class,
       count(DISTINCT x.identity) AS races,
       count(DISTINCT CASE WHEN x.potential = 0 THEN x.identity END) AS definite
FROM (SELECT 1 AS k, 'intra-warp' AS race_class UNION ALL SELECT 2, 'inter-warp'
      UNION ALL SELECT 3, 'inter-block' UNION ALL SELECT 4, 'inter-kernel') c
LEFT JOIN (SELECT races.* FROM races JOIN complete_runs r ON r.id = races.run_id
           WHERE r.id = :run) x ON x.race_class = c.race_class
GROUP BY c.k
ORDER BY c.k;
