-- Ids: time-ordered UUIDs (the UUIDv7 layout) for the substrate's tables.
-- Seed 002's ULIDs, as the native uuid type: 48 bits of Unix milliseconds,
-- then random bits, so new rows land at the right edge of their B-trees
-- (insert locality) instead of all over them. They reveal their creation time
-- to the millisecond, which these rows show anyway (created_at).

CREATE OR REPLACE FUNCTION flowforge.uuid7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
    -- A random version-4 UUID, its first 6 bytes replaced by the millisecond
    -- clock, its version nibble turned from 4 (0100) into 7 (0111).
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                  PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                  FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$;
COMMENT ON FUNCTION flowforge.uuid7() IS
  'uuid7() -> uuid. A time-ordered UUID (RFC 9562 version 7): the first 48 bits are the Unix time in milliseconds '
  '(clock_timestamp, so ids made in one transaction still increase), the rest random (74 bits). Errors: none.';
SELECT flowforge._rights('flowforge.uuid7()', 'flowforge_owner',
    '{flowforge_app,flowforge_worker,flowforge_daemon,flowforge_gateway,flowforge_readonly}');
