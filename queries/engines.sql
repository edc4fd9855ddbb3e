-- name: engines
-- description: Compare the engines on one run (one trace): who found which race, where they agree, and why they can differ
-- param: run=latest  the run: id, name or 'latest'
--
-- Races are matched by their engine-independent identity (kernels, the two
-- sites, the two kinds, class).  found_by / missed_by list the run's engines
-- in the order they ran.  why explains a disagreement by the engines' design
-- (analyzer/ENGINES.md has the details):
--   vc is scope-oblivious, scoped honours PTX scopes (it also reports atomics
--   of too narrow a scope, which vc never reports: two atomics never race for
--   it); lockset warns about potential races that this run's order happened
--   not to expose (it does not model mbarriers); fsm keeps a finite history
--   per word (constant memory) and does not model fences, locks or mbarriers.

-- section: Agreement per engine
WITH RECURSIVE
run AS (SELECT id, engines FROM complete_runs WHERE id = :run),
split(pos, engine, rest) AS (
    SELECT 0, '', engines || ',' FROM run
    UNION ALL
    SELECT pos + 1, substr(rest, 1, instr(rest, ',') - 1), substr(rest, instr(rest, ',') + 1)
    FROM split WHERE rest <> ''),
eng AS (SELECT pos, engine FROM split WHERE pos > 0 AND engine <> ''),
x AS (SELECT races.* FROM races JOIN run ON races.run_id = run.id),
per AS (SELECT identity, count(DISTINCT engine) AS n_found FROM x GROUP BY identity)
SELECT e.engine,
       count(DISTINCT f.identity) AS races,
       count(DISTINCT CASE WHEN per.n_found = (SELECT count(*) FROM eng) THEN f.identity END) AS found_by_all,
       count(DISTINCT CASE WHEN per.n_found = 1 THEN f.identity END) AS only_this_engine,
       count(DISTINCT CASE WHEN f.potential <> 0 THEN f.identity END) AS potential,
       (SELECT count(DISTINCT identity) FROM x) - count(DISTINCT f.identity) AS missed
FROM eng e
LEFT JOIN x f ON f.engine = e.engine
LEFT JOIN per ON per.identity = f.identity
GROUP BY e.pos
ORDER BY e.pos;

-- section: Races by identity
WITH RECURSIVE
run AS (SELECT id, engines FROM complete_runs WHERE id = :run),
split(pos, engine, rest) AS (
    SELECT 0, '', engines || ',' FROM run
    UNION ALL
    SELECT pos + 1, substr(rest, 1, instr(rest, ',') - 1), substr(rest, instr(rest, ',') + 1)
    FROM split WHERE rest <> ''),
eng AS (SELECT pos, engine FROM split WHERE pos > 0 AND engine <> ''),
x AS (SELECT races.* FROM races JOIN run ON races.run_id = run.id),
ids AS (SELECT identity, min(kernel_a) AS kernel_a, min(kernel_b) AS kernel_b,
               min(site_a) AS site_a, min(site_b) AS site_b, min(kind_a) AS kind_a,
               min(kind_b) AS kind_b, min(race_class) AS race_class,
               max(count) AS occurrences
        FROM x GROUP BY identity),
-- (identity, engine) pairs in engine order, found or not
grid AS (SELECT i.identity, e.pos, e.engine,
                EXISTS (SELECT 1 FROM x WHERE x.identity = i.identity
                        AND x.engine = e.engine) AS found
         FROM ids i CROSS JOIN eng e ORDER BY i.identity, e.pos),
lists AS (SELECT identity,
                 group_concat(CASE WHEN found THEN engine END, ',') AS found_by,
                 group_concat(CASE WHEN NOT found THEN engine END, ',') AS missed_by,
                 sum(found) AS n_found, count(*) AS n_eng
          FROM grid GROUP BY identity),
flags AS (SELECT i.*, l.found_by, l.missed_by, l.n_found, l.n_eng,
                 EXISTS (SELECT 1 FROM eng WHERE engine = 'vc') AS has_vc,
                 EXISTS (SELECT 1 FROM eng WHERE engine = 'scoped') AS has_sc,
                 EXISTS (SELECT 1 FROM eng WHERE engine = 'lockset') AS has_lk,
                 EXISTS (SELECT 1 FROM eng WHERE engine = 'fsm') AS has_fsm,
                 EXISTS (SELECT 1 FROM x WHERE x.identity = i.identity AND engine = 'vc') AS vc,
                 EXISTS (SELECT 1 FROM x WHERE x.identity = i.identity AND engine = 'scoped') AS sc,
                 EXISTS (SELECT 1 FROM x WHERE x.identity = i.identity AND engine = 'lockset') AS lk,
                 EXISTS (SELECT 1 FROM x WHERE x.identity = i.identity AND engine = 'fsm') AS fsm,
                 EXISTS (SELECT 1 FROM x WHERE x.identity = i.identity AND engine = 'lockset'
                         AND potential <> 0) AS lk_potential,
                 (SELECT min(scope_verdict) FROM x WHERE x.identity = i.identity
                  AND engine = 'scoped' AND scope_verdict <> '') AS verdict
          FROM ids i JOIN lists l USING (identity))
SELECT CASE WHEN kernel_a = kernel_b THEN kernel_a ELSE kernel_a || ' / ' || kernel_b END AS kernel,
       race_class, site_a, kind_a, site_b, kind_b,
       found_by,
       coalesce(missed_by, '') AS missed_by,
       CASE WHEN n_found = n_eng THEN 'all'
            WHEN n_found = 1 THEN 'only ' || found_by
            ELSE 'some' END AS agreement,
       coalesce(verdict, '') AS scope_verdict,
       CASE WHEN n_found = n_eng THEN 'all engines agree'
       ELSE coalesce(nullif(substr(
         CASE WHEN sc AND has_vc AND NOT vc AND verdict = 'weak-access'
              THEN '; scoped: an access is weak where it had to be strong; vc ignores strength' ELSE '' END ||
         CASE WHEN (sc OR fsm) AND has_vc AND NOT vc AND kind_a = 'atomic' AND kind_b = 'atomic'
              THEN '; the atomics'' scope does not hold both threads (scoped and fsm model scopes); for vc two atomics never race' ELSE '' END ||
         CASE WHEN sc AND has_vc AND NOT vc AND coalesce(verdict, '') NOT IN ('weak-access')
                   AND NOT (kind_a = 'atomic' AND kind_b = 'atomic')
              THEN '; scope: vc is scope-oblivious and takes the synchronization as ordering; scoped finds its scope ('
                   || coalesce(verdict, '?') || ') does not hold both threads' ELSE '' END ||
         CASE WHEN vc AND has_sc AND NOT sc
              THEN '; vc found it but scoped did not: unexpected (scoped orders no more than vc), see analyzer/ENGINES.md' ELSE '' END ||
         CASE WHEN lk AND lk_potential AND NOT vc
              THEN '; lockset potential race: no common lock protects both accesses; this run''s order hid it, another schedule can expose it' ELSE '' END ||
         CASE WHEN lk AND NOT lk_potential AND has_vc AND NOT vc
              THEN '; lockset: no common lock protects both accesses (it ignores ordering by flags, fences, atomics and mbarriers)' ELSE '' END ||
         CASE WHEN has_lk AND NOT lk AND vc
              THEN '; lockset: unreported by its state machine (exclusive / read-shared word, barrier or kernel reset, or a lock it inferred)' ELSE '' END ||
         CASE WHEN has_fsm AND NOT fsm AND vc
              THEN '; fsm: finite history (one shadow word per word): the earlier access was forgotten before the conflicting one (HiRace Listing 3)' ELSE '' END ||
         CASE WHEN fsm AND has_vc AND NOT vc AND race_class = 'intra-warp'
              THEN '; fsm orders the lanes of a warp only by __syncwarp; vc and scoped take a converged warp as lockstep (GPUVerify warp semantics)' ELSE '' END ||
         CASE WHEN fsm AND has_vc AND NOT vc AND race_class <> 'intra-warp'
                   AND NOT (kind_a = 'atomic' AND kind_b = 'atomic')
              THEN '; fsm does not model fences, locks or mbarriers: the synchronization vc saw is invisible to its table' ELSE '' END,
         3), ''), 'engines differ; see analyzer/ENGINES.md') END AS why
FROM flags
ORDER BY n_found DESC, kernel_a, kernel_b, site_a, site_b, kind_a, kind_b, race_class;
