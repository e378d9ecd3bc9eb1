-- FlowForge 0013: bounds on what a tenant can make the engine compute with.
--   * JSON nesting depth (setting.max_json_depth, default 64): a 10,000-deep
--     document is valid jsonb but crashes the JSON parsers of most workers;
--   * durations a definition carries: backoff at most 1 day, max_backoff at
--     most 7 days, timeout at most 30 days. Unbounded, "1000000 years" made
--     the reaper's now() + backoff overflow (22008) on every tick, for every
--     organization.
-- Definitions written before this limit are clamped to it (a NOTICE says how
-- many), so the constraints below validate; their specs keep the text they
-- were defined with.
-- depends: 0012_gateway_tokens

ALTER TABLE flowforge.setting
    ADD COLUMN max_json_depth integer NOT NULL DEFAULT 64,
    ADD CONSTRAINT setting_max_json_depth_sane CHECK (max_json_depth BETWEEN 8 AND 1000);

DO $$
DECLARE
    v_tasks integer;
    v_runs integer;
BEGIN
    UPDATE flowforge.task
    SET backoff = least(backoff, interval '1 day'),
        max_backoff = least(max_backoff, interval '7 days'),
        -- least() ignores NULLs: it would give a task with no timeout one of 30 days.
        timeout = CASE WHEN timeout > interval '30 days' THEN interval '30 days' ELSE timeout END
    WHERE backoff > interval '1 day' OR max_backoff > interval '7 days' OR timeout > interval '30 days';
    GET DIAGNOSTICS v_tasks = ROW_COUNT;
    UPDATE flowforge.task_run SET timeout = interval '30 days' WHERE timeout > interval '30 days';
    GET DIAGNOSTICS v_runs = ROW_COUNT;
    IF v_tasks + v_runs > 0 THEN
        RAISE NOTICE 'clamped the durations of % task definition(s) and % task run(s) to the new bounds', v_tasks, v_runs;
    END IF;
END;
$$;

ALTER TABLE flowforge.task
    ADD CONSTRAINT task_durations_bounded
        CHECK (backoff <= interval '1 day' AND max_backoff <= interval '7 days'
               AND (timeout IS NULL OR timeout <= interval '30 days')) NOT VALID;
ALTER TABLE flowforge.task_run
    ADD CONSTRAINT taskrun_timeout_bounded CHECK (timeout IS NULL OR timeout <= interval '30 days') NOT VALID;
