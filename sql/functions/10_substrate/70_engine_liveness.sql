-- Engine liveness (seed 002's engine): which daemon serves which
-- organization's periodic duties. Every daemon is an engine instance; the
-- duties of each organization are held by one daemon at a time under a lease
-- with a generation, so N daemons split M organizations without a leader:
--
--   * each daemon keeps a row in the default organization as its heartbeat
--     (live = heartbeat within one duty lease: a daemon stops counting when
--     its leases lapse, so the survivors' share grows as its organizations
--     become free, and none waits unserved);
--   * its fair share is ceil(M / live daemons): it renews what it holds, gives
--     back what exceeds its share, and takes organizations nobody holds (no
--     serving row, or a lease that lapsed — a dead or paused daemon's);
--   * taking over bumps the organization's generation and demotes the lapsed
--     holder in the same transaction; engine_one_serving_per_org makes two
--     holders at once impossible;
--   * the duties run in the transaction that renewed the lease, whose row lock
--     keeps anyone from taking the organization meanwhile; a daemon paused
--     past its lease comes back to find the organization gone (its generation
--     is no longer the serving one) and does nothing for it.

CREATE OR REPLACE FUNCTION flowforge._duty_share(p_engine_id text, p_now timestamptz)
RETURNS TABLE (organization_id uuid, generation bigint)
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    c_default constant uuid := '00000000-0000-0000-0000-000000000001';
    v_lease constant interval := (SELECT s.duty_lease FROM flowforge.setting s);
    v_live integer;
    v_share integer;
    v_held integer;
    v_org uuid;
    v_generation bigint;
BEGIN
    -- My heartbeat (a standby row in the default organization unless I serve it).
    INSERT INTO flowforge.engine AS e (organization_id, engine_id, status, heartbeat_at, created_at)
    VALUES (c_default, p_engine_id, 'standby', p_now, p_now)
    ON CONFLICT ON CONSTRAINT engine_tenant_engine_uq DO UPDATE SET heartbeat_at = p_now, updated_at = p_now;

    SELECT count(DISTINCT e.engine_id) INTO v_live FROM flowforge.engine e
    WHERE e.organization_id = c_default AND e.heartbeat_at > p_now - v_lease;
    v_share := ceil((SELECT count(*) FROM flowforge.organization)::numeric / greatest(v_live, 1));

    -- Renew what I still hold; a lapsed lease of mine is given up (taken again below if nobody else did).
    UPDATE flowforge.engine e SET lease_expires_at = p_now + v_lease, heartbeat_at = p_now, updated_at = p_now
    WHERE e.engine_id = p_engine_id AND e.status = 'serving' AND e.lease_expires_at > p_now;
    UPDATE flowforge.engine e SET status = 'standby', lease_expires_at = NULL, updated_at = p_now
    WHERE e.engine_id = p_engine_id AND e.status = 'serving' AND e.lease_expires_at <= p_now;
    -- More than my share (daemons joined): give back the highest organization
    -- ids (a stable choice, so the daemons converge instead of trading).
    UPDATE flowforge.engine e SET status = 'standby', lease_expires_at = NULL, updated_at = p_now
    WHERE e.id IN (SELECT x.id FROM flowforge.engine x WHERE x.engine_id = p_engine_id AND x.status = 'serving'
                   ORDER BY x.organization_id DESC OFFSET v_share);
    SELECT count(*) INTO v_held FROM flowforge.engine e WHERE e.engine_id = p_engine_id AND e.status = 'serving';

    -- Take organizations nobody holds, up to my share. The organization row's
    -- lock (SKIP LOCKED) keeps two daemons from taking one organization at once.
    FOR v_org IN
        SELECT o.id FROM flowforge.organization o
        WHERE NOT EXISTS (SELECT 1 FROM flowforge.engine e
                          WHERE e.organization_id = o.id AND e.status = 'serving' AND e.lease_expires_at > p_now)
        ORDER BY o.id
    LOOP
        EXIT WHEN v_held >= v_share;
        PERFORM 1 FROM flowforge.organization o WHERE o.id = v_org FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        CONTINUE WHEN EXISTS (SELECT 1 FROM flowforge.engine e
                              WHERE e.organization_id = v_org AND e.status = 'serving' AND e.lease_expires_at > p_now);
        UPDATE flowforge.engine e SET status = 'standby', lease_expires_at = NULL, updated_at = p_now
        WHERE e.organization_id = v_org AND e.status = 'serving';
        v_generation := coalesce((SELECT max(e.generation) FROM flowforge.engine e WHERE e.organization_id = v_org), 0) + 1;
        INSERT INTO flowforge.engine AS e (organization_id, engine_id, status, generation, lease_expires_at, heartbeat_at,
                                           created_at)
        VALUES (v_org, p_engine_id, 'serving', v_generation, p_now + v_lease, p_now, p_now)
        ON CONFLICT ON CONSTRAINT engine_tenant_engine_uq DO UPDATE
        SET status = 'serving', generation = EXCLUDED.generation, lease_expires_at = EXCLUDED.lease_expires_at,
            heartbeat_at = p_now, updated_at = p_now;
        v_held := v_held + 1;
    END LOOP;

    RETURN QUERY
    SELECT e.organization_id, e.generation FROM flowforge.engine e
    WHERE e.engine_id = p_engine_id AND e.status = 'serving';
END;
$$;
COMMENT ON FUNCTION flowforge._duty_share(text, timestamptz) IS
  'Internal: records daemon p_engine_id''s heartbeat, renews the organization leases it holds, gives back what '
  'exceeds its fair share (ceil(organizations / live daemons)), takes unheld or lapsed organizations up to it (a new '
  'generation each), and returns the organizations it serves with their generations.';

-- For writes outside tick() that depend on serving an organization (a feeder
-- recording progress): still the serving holder under that generation?
CREATE OR REPLACE FUNCTION flowforge._serves(p_org uuid, p_engine_id text, p_generation bigint, p_now timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT EXISTS (SELECT 1 FROM flowforge.engine e
                   WHERE e.organization_id = p_org AND e.engine_id = p_engine_id AND e.status = 'serving'
                     AND e.generation = p_generation AND e.lease_expires_at > p_now)
$$;
COMMENT ON FUNCTION flowforge._serves(uuid, text, bigint, timestamptz) IS
  'Internal: true when daemon p_engine_id still serves organization p_org under generation p_generation.';

CREATE OR REPLACE FUNCTION flowforge.list_engines()
RETURNS TABLE (engine_id text, live boolean, organizations bigint, heartbeat_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
#variable_conflict use_column
DECLARE
    v_now constant timestamptz := flowforge.now();
    v_lease constant interval := (SELECT s.duty_lease FROM flowforge.setting s);
BEGIN
    RETURN QUERY
    SELECT e.engine_id::text, max(e.heartbeat_at) > v_now - v_lease,
           count(*) FILTER (WHERE e.status = 'serving' AND e.lease_expires_at > v_now), max(e.heartbeat_at)
    FROM flowforge.engine e
    GROUP BY e.engine_id
    ORDER BY e.engine_id;
END;
$$;
COMMENT ON FUNCTION flowforge.list_engines() IS
  'list_engines() -> setof (engine_id, live, organizations, heartbeat_at): every daemon that ever served duties, '
  'whether it is live, and how many organizations'' duties it holds now. For the operator and the daemon. Errors: '
  'none of its own.';
SELECT flowforge._rights('flowforge.list_engines()', 'flowforge_system', '{flowforge_daemon,flowforge_readonly}');

-- A daemon that stops cleanly says so: its organizations are free at once
-- and it no longer counts as live, so the survivors' next tick takes them
-- over (a larger share each) instead of waiting a duty lease for them to lapse.
CREATE OR REPLACE FUNCTION flowforge.leave_duties(engine_id text) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET flowforge.caller_org = ''
AS $$
DECLARE
    v_now constant timestamptz := flowforge.now();
    v_lease constant interval := (SELECT s.duty_lease FROM flowforge.setting s);
    v_left integer;
BEGIN
    IF leave_duties.engine_id IS NULL OR length(leave_duties.engine_id) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'engine_id must be 1 to 200 characters' USING ERRCODE = 'FF003',
            HINT = 'Pass the id the daemon ticked with (its --engine-id, <host>:<pid> by default).';
    END IF;
    UPDATE flowforge.engine e SET status = 'standby', lease_expires_at = NULL, updated_at = v_now
    WHERE e.engine_id = leave_duties.engine_id AND e.status = 'serving';
    GET DIAGNOSTICS v_left = ROW_COUNT;
    -- Live means a heartbeat within one duty lease: one lease ago is not live.
    UPDATE flowforge.engine e SET heartbeat_at = v_now - v_lease, updated_at = v_now
    WHERE e.engine_id = leave_duties.engine_id AND e.heartbeat_at > v_now - v_lease;
    RETURN v_left;
END;
$$;
COMMENT ON FUNCTION flowforge.leave_duties(text) IS
  'leave_duties(engine_id text) -> integer: a daemon stopping cleanly gives back every organization whose duties it '
  'serves (each row standby, no lease) and stops counting as live, so the live daemons take those organizations at '
  'their next tick (under a new generation, as after a lapse) instead of one duty lease later; returns how many it '
  'gave back (0 for an unknown or already stopped daemon: a second call is harmless). A daemon that ticks again '
  'afterwards simply rejoins. Errors: FF003 engine_id NULL or not 1..200 characters.';
SELECT flowforge._rights('flowforge.leave_duties(text)', 'flowforge_system', '{flowforge_daemon}');
