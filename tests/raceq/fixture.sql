-- Test fixture for raceq (tests/raceq): applied after queries/schema.sql.
-- Two complete analyses of the same program with all four engines:
--   run 1 'demo'        the original program,
--   run 2 'demo-fixed'  the same program after fixing the stencil race
--                       (race S is gone; every other race persists, found at
--                       different addresses: diffs must match by identity),
--   run 3 'demo'        an interrupted analysis (status 'running'): reports
--                       never look at it,
--   run 4 'vc-only'     a complete run with engine vc only.
-- The races illustrate why engines disagree (see the `engines` report):
--   S  stencil, inter-block write/read, no barrier      all four engines
--   H  histogram, block-scoped atomics across blocks    scoped only (scope-atomic)
--   W  reduce, warp-synchronous code, no __syncwarp     vc, scoped, fsm (intra-warp)
--   P  update, flag-ordered writes, no common lock      lockset only, potential
--   C  host copy racing a running kernel                vc, scoped, fsm (inter-kernel)
--   F  listing3, conflict older than fsm's history      vc, scoped, lockset
--   Q  producer/consumer, fence of block scope          scoped (scope-fence), fsm
BEGIN;
INSERT INTO runs (id, name, status, started_at, finished_at, analyzer_version,
                  trace_path, trace_hash, trace_bytes, device, sm_arch, producer,
                  recorded_command, engines, threads, options, events, accesses,
                  thread_accesses, launches, lost_events, truncated,
                  decode_seconds, wall_seconds, peak_rss_bytes) VALUES
 (1, 'demo', 'complete', '2024-05-01T10:00:00Z', '2024-05-01T10:00:02Z', '0.1.0',
  'traces/demo.wrt', 'a3f1c2d4e5f60718', 482133, 'NVIDIA H100 80GB HBM3', 90,
  'warprace-recorder 0.1.0', './demo --n 4096', 'vc,scoped,lockset,fsm', 2,
  '--engines vc,scoped,lockset,fsm --threads 2', 152340, 98112, 3139584, 7, 0, 0,
  0.125, 1.5, 73400320),
 (2, 'demo-fixed', 'complete', '2024-05-02T09:30:00Z', '2024-05-02T09:30:02Z', '0.1.0',
  'traces/demo-fixed.wrt', 'b7e2d9a0c1f23344', 480019, 'NVIDIA H100 80GB HBM3', 90,
  'warprace-recorder 0.1.0', './demo --n 4096 --fixed', 'vc,scoped,lockset,fsm', 2,
  '--engines vc,scoped,lockset,fsm --threads 2', 152402, 98176, 3141632, 7, 12, 0,
  0.25, 1.75, 71303168),
 (3, 'demo', 'running', '2024-05-03T08:00:00Z', NULL, '0.1.0',
  'traces/demo.wrt', 'a3f1c2d4e5f60718', 482133, 'NVIDIA H100 80GB HBM3', 90,
  'warprace-recorder 0.1.0', './demo --n 4096', 'vc,scoped,lockset,fsm', 2,
  '', 0, 0, 0, 0, 0, 0, NULL, NULL, NULL),
 (4, 'vc-only', 'complete', '2024-05-04T12:00:00Z', '2024-05-04T12:00:01Z', '0.1.0',
  'traces/demo.wrt', 'a3f1c2d4e5f60718', 482133, 'NVIDIA H100 80GB HBM3', 90,
  'warprace-recorder 0.1.0', './demo --n 4096', 'vc', 1,
  '--engines vc --threads 1', 152340, 98112, 3139584, 7, 0, 0,
  0.125, 0.5, 20971520);

-- the stencil is launched from two lines; the launches of listing3 and
-- producer_consumer have no site (a trace that does not say)
INSERT INTO launches (run_id, launch, kernel, grid, block, shared_bytes, stream, site)
SELECT r.id, l.launch, l.kernel, l.grid, l.block, l.shared_bytes, l.stream, l.site
FROM (SELECT 1 AS id UNION ALL SELECT 2 UNION ALL SELECT 4) r,
     (SELECT 1 AS launch, 'stencil' AS kernel, '64,1,1' AS grid, '256,1,1' AS block, 0 AS shared_bytes, 0 AS stream, 'demo.cu:80:main' AS site
      UNION ALL SELECT 2, 'stencil', '64,1,1', '256,1,1', 0, 0, 'demo.cu:91:main'
      UNION ALL SELECT 3, 'histogram', '32,1,1', '128,1,1', 1024, 0, 'demo.cu:95:main'
      UNION ALL SELECT 4, 'reduce', '16,1,1', '256,1,1', 1024, 1, 'demo.cu:97:main'
      UNION ALL SELECT 5, 'update', '8,1,1', '64,1,1', 0, 0, 'demo.cu:99:main'
      UNION ALL SELECT 6, 'listing3', '1,1,1', '64,1,1', 0, 0, ''
      UNION ALL SELECT 7, 'producer_consumer', '2,1,1', '32,1,1', 0, 1, '') l;

INSERT INTO allocations (run_id, alloc_id, name, space, base, size)
SELECT r.id, a.alloc_id, a.name, a.space, a.base + r.shift, a.size
FROM (SELECT 1 AS id, 0 AS shift UNION ALL SELECT 2, 1048576 UNION ALL SELECT 4, 0) r,
     (SELECT 1 AS alloc_id, 'd_grid' AS name, 'global' AS space, 140737488355328 AS base, 65536 AS size
      UNION ALL SELECT 2, 'd_hist', 'global', 140737488420864, 1024
      UNION ALL SELECT 3, 'd_data', 'global', 140737488421888, 4096
      UNION ALL SELECT 4, 'd_flag', 'global', 140737488425984, 64
      UNION ALL SELECT 5, 'sdata', 'shared', 0, 1024
      UNION ALL SELECT 6, 'd_unused', 'global', 140737488426048, 256) a;

-- The identities (engine-independent) and one first example each.
CREATE TEMP TABLE ident (
    tag TEXT PRIMARY KEY, kernel_a TEXT, kernel_b TEXT, site_a TEXT, site_b TEXT,
    kind_a TEXT, kind_b TEXT, race_class TEXT, ex_space TEXT, ex_address INTEGER,
    ex_alloc TEXT, ex_offset INTEGER,
    a_launch INTEGER, a_block INTEGER, a_warp INTEGER, a_lane INTEGER, a_seq INTEGER,
    b_launch INTEGER, b_block INTEGER, b_warp INTEGER, b_lane INTEGER, b_seq INTEGER);
INSERT INTO ident VALUES
 ('S', 'stencil', 'stencil', 'src/stencil.cu:42:stencil', 'src/stencil.cu:57:stencil',
  'write', 'read', 'inter-block', 'global', 140737488355584, 'd_grid', 256,
  1, 0, 7, 31, 1040, 1, 1, 0, 0, 1301),
 ('H', 'histogram', 'histogram', 'src/hist.cu:20:histogram', 'src/hist.cu:20:histogram',
  'atomic', 'atomic', 'inter-block', 'global', 140737488420872, 'd_hist', 8,
  3, 0, 1, 4, 20410, 3, 5, 2, 9, 20988),
 ('W', 'reduce', 'reduce', 'src/reduce.cu:31:warp_reduce', 'src/reduce.cu:33:warp_reduce',
  'write', 'read', 'intra-warp', 'shared', 64, 'sdata', 64,
  4, 2, 0, 16, 40211, 4, 2, 0, 0, 40212),
 ('P', 'update', 'update', 'src/lock.cu:15:update', 'src/lock.cu:15:update',
  'write', 'write', 'inter-block', 'global', 140737488421888, 'd_data', 0,
  5, 0, 0, 0, 60001, 5, 3, 1, 0, 60877),
 ('C', 'host', 'stencil', '?', 'pc:0x1a0',
  'write', 'read', 'inter-kernel', 'global', 140737488359424, 'd_grid', 4096,
  0, NULL, NULL, NULL, 1200, 2, 4, 3, 12, 1388),
 ('F', 'listing3', 'listing3', 'src/finite.cu:10:listing3', 'src/finite.cu:14:listing3',
  'write', 'read', 'inter-warp', 'global', 140737488423936, 'd_data', 2048,
  6, 0, 0, 3, 70100, 6, 0, 1, 3, 70480),
 ('Q', 'producer_consumer', 'producer_consumer', 'src/flag.cu:8:producer', 'src/flag.cu:21:consumer',
  'write', 'read', 'inter-block', 'global', 140737488425988, 'd_flag', 4,
  7, 0, 0, 0, 80010, 7, 1, 0, 0, 80533);

-- Who found what, per run: (run, engine, identity tag, verdict, potential, count).
CREATE TEMP TABLE found (run_id INTEGER, engine TEXT, tag TEXT, verdict TEXT,
                         potential INTEGER, count INTEGER, shift INTEGER);
INSERT INTO found VALUES
 (1, 'vc', 'S', '', 0, 12, 0),      (1, 'scoped', 'S', 'missing-sync', 0, 12, 0),
 (1, 'lockset', 'S', '', 0, 9, 0),  (1, 'fsm', 'S', '', 0, 12, 0),
 (1, 'scoped', 'H', 'scope-atomic', 0, 96, 0),
 (1, 'vc', 'W', '', 0, 31, 0),      (1, 'scoped', 'W', 'missing-sync', 0, 31, 0),
 (1, 'fsm', 'W', '', 0, 31, 0),
 (1, 'lockset', 'P', '', 1, 4, 0),
 (1, 'vc', 'C', '', 0, 64, 0),      (1, 'scoped', 'C', 'missing-sync', 0, 64, 0),
 (1, 'fsm', 'C', '', 0, 64, 0),
 (1, 'vc', 'F', '', 0, 1, 0),       (1, 'scoped', 'F', 'missing-sync', 0, 1, 0),
 (1, 'lockset', 'F', '', 0, 1, 0),
 (1, 'scoped', 'Q', 'scope-fence', 0, 2, 0), (1, 'fsm', 'Q', '', 0, 2, 0),
 -- run 2: S fixed; the rest at other addresses (shifted by 1 MiB)
 (2, 'scoped', 'H', 'scope-atomic', 0, 90, 1048576),
 (2, 'vc', 'W', '', 0, 31, 1048576),  (2, 'scoped', 'W', 'missing-sync', 0, 31, 1048576),
 (2, 'fsm', 'W', '', 0, 31, 1048576),
 (2, 'lockset', 'P', '', 1, 5, 1048576),
 (2, 'vc', 'C', '', 0, 64, 1048576),  (2, 'scoped', 'C', 'missing-sync', 0, 64, 1048576),
 (2, 'fsm', 'C', '', 0, 64, 1048576),
 (2, 'vc', 'F', '', 0, 1, 1048576),   (2, 'scoped', 'F', 'missing-sync', 0, 1, 1048576),
 (2, 'lockset', 'F', '', 0, 1, 1048576),
 (2, 'scoped', 'Q', 'scope-fence', 0, 2, 1048576), (2, 'fsm', 'Q', '', 0, 2, 1048576),
 -- run 3 (interrupted): whatever it had written must never show
 (3, 'vc', 'S', '', 0, 99, 0),
 -- run 4: vc only
 (4, 'vc', 'S', '', 0, 12, 0), (4, 'vc', 'W', '', 0, 31, 0),
 (4, 'vc', 'C', '', 0, 64, 0), (4, 'vc', 'F', '', 0, 1, 0);

INSERT INTO races (run_id, engine, identity, kernel_a, kernel_b, site_a, site_b,
                   kind_a, kind_b, race_class, scope_verdict, potential, count,
                   ex_space, ex_address, ex_alloc, ex_offset,
                   ex_a_launch, ex_a_block, ex_a_warp, ex_a_lane, ex_a_seq,
                   ex_b_launch, ex_b_block, ex_b_warp, ex_b_lane, ex_b_seq)
SELECT f.run_id, f.engine,
       i.kernel_a || '|' || i.kernel_b || '|' || i.site_a || '|' || i.site_b || '|' ||
       i.kind_a || '|' || i.kind_b || '|' || i.race_class,
       i.kernel_a, i.kernel_b, i.site_a, i.site_b, i.kind_a, i.kind_b, i.race_class,
       f.verdict, f.potential, f.count,
       i.ex_space, i.ex_address + CASE i.ex_space WHEN 'global' THEN f.shift ELSE 0 END,
       i.ex_alloc, i.ex_offset,
       i.a_launch, i.a_block, i.a_warp, i.a_lane, i.a_seq + f.shift / 4096,
       i.b_launch, i.b_block, i.b_warp, i.b_lane, i.b_seq + f.shift / 4096
FROM found f JOIN ident i ON i.tag = f.tag
ORDER BY f.run_id, f.engine, f.tag;

INSERT INTO engine_runs (run_id, engine, seconds, shadow_words, races, occurrences)
SELECT r.id, e.engine, e.seconds * (CASE WHEN r.id = 4 THEN 1 ELSE 1 END),
       e.words,
       (SELECT count(*) FROM races x WHERE x.run_id = r.id AND x.engine = e.engine),
       (SELECT coalesce(sum(count), 0) FROM races x WHERE x.run_id = r.id AND x.engine = e.engine)
FROM (SELECT 1 AS id, 'vc,scoped,lockset,fsm' AS engines UNION ALL
      SELECT 2, 'vc,scoped,lockset,fsm' UNION ALL SELECT 4, 'vc') r,
     (SELECT 'vc' AS engine, 0.5 AS seconds, 24576 AS words UNION ALL
      SELECT 'scoped', 0.625, 24576 UNION ALL
      SELECT 'lockset', 0.375, 24576 UNION ALL
      SELECT 'fsm', 0.125, 24576) e
WHERE instr(',' || r.engines || ',', ',' || e.engine || ',') > 0;

DROP TABLE ident;
DROP TABLE found;
COMMIT;
