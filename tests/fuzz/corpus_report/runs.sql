-- name: runs
-- description: Every run in the database, newest first, interrupted ones included (reports use only 'complete' runs)
--
-- Refer to a run by its id or its name (the newest complete run of that
-- name); 'latest' is the newest complete run.
SELECT r.id, r.name, r.status, r.started_at, r.engines,
       (SELECT count(DISTINCT identity) FROM races x WHERE x.run_id = r.id) AS races,
       r.lost_events,
       r.trace_path AS trace
FROM runs r
ORDER BY r.id DESC;
