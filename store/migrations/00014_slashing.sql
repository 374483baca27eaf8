-- +goose Up
-- The slashing-era protocol: operator sets, allocations, magnitudes,
-- slashings, deposit scaling factors, beacon-chain slashing factors,
-- operator-directed rewards and the other events of the core contracts.
-- Raw event tables first (the source of truth), then the state derived from
-- them. The derivation rules are documented in the store package.

-- Fixed-point arithmetic of the contracts: x × y / 1e18, rounded down.
CREATE FUNCTION mul_wad(x NUMERIC, y NUMERIC) RETURNS NUMERIC
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN div(x * y, 1000000000000000000);

CREATE TABLE operator_sets (
    avs_address     address NOT NULL,
    operator_set_id BIGINT NOT NULL CHECK (operator_set_id BETWEEN 0 AND 4294967295),
    block_number    BIGINT NOT NULL,
    log_index       INTEGER NOT NULL,
    tx_hash         hash32 NOT NULL,
    block_time      TIMESTAMPTZ NOT NULL,
    -- Derived: the members whose latest membership event added them.
    total_operators INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (avs_address, operator_set_id),
    UNIQUE (block_number, log_index)
);

CREATE TABLE operator_set_strategy_events (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    avs_address      address NOT NULL,
    operator_set_id  BIGINT NOT NULL,
    strategy_address address NOT NULL,
    added            BOOLEAN NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX operator_set_strategy_events_set_idx
    ON operator_set_strategy_events (avs_address, operator_set_id, strategy_address, block_number DESC, log_index DESC);

CREATE TABLE operator_set_membership_events (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    operator_address address NOT NULL,
    avs_address      address NOT NULL,
    operator_set_id  BIGINT NOT NULL,
    added            BOOLEAN NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX operator_set_membership_events_pair_idx
    ON operator_set_membership_events (avs_address, operator_address, operator_set_id, block_number DESC, log_index DESC);
CREATE INDEX operator_set_membership_events_operator_idx
    ON operator_set_membership_events (operator_address);

CREATE TABLE allocation_delay_events (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    operator_address address NOT NULL,
    delay            BIGINT NOT NULL,
    effect_block     BIGINT NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX allocation_delay_events_operator_idx
    ON allocation_delay_events (operator_address, block_number DESC, log_index DESC);

CREATE TABLE allocation_events (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    operator_address address NOT NULL,
    avs_address      address NOT NULL,
    operator_set_id  BIGINT NOT NULL,
    strategy_address address NOT NULL,
    magnitude        NUMERIC(20,0) NOT NULL CHECK (magnitude >= 0),
    effect_block     BIGINT NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX allocation_events_key_idx
    ON allocation_events (operator_address, avs_address, operator_set_id, strategy_address);

CREATE TABLE max_magnitude_events (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    operator_address address NOT NULL,
    strategy_address address NOT NULL,
    max_magnitude    NUMERIC(20,0) NOT NULL CHECK (max_magnitude >= 0),
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX max_magnitude_events_key_idx
    ON max_magnitude_events (operator_address, strategy_address, block_number DESC, log_index DESC);

CREATE TABLE encumbered_magnitude_events (
    block_number         BIGINT NOT NULL,
    log_index            INTEGER NOT NULL,
    tx_hash              hash32 NOT NULL,
    block_time           TIMESTAMPTZ NOT NULL,
    operator_address     address NOT NULL,
    strategy_address     address NOT NULL,
    encumbered_magnitude NUMERIC(20,0) NOT NULL CHECK (encumbered_magnitude >= 0),
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX encumbered_magnitude_events_key_idx
    ON encumbered_magnitude_events (operator_address, strategy_address, block_number DESC, log_index DESC);

CREATE TABLE slashings (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    operator_address address NOT NULL,
    avs_address      address NOT NULL,
    operator_set_id  BIGINT NOT NULL,
    strategies       address[] NOT NULL,
    wads_slashed     NUMERIC(78,0)[] NOT NULL CHECK (cardinality(wads_slashed) = cardinality(strategies)),
    description      TEXT NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX slashings_operator_idx ON slashings (operator_address, block_number DESC, log_index DESC);
CREATE INDEX slashings_set_idx ON slashings (avs_address, operator_set_id, block_number DESC, log_index DESC);
CREATE INDEX slashings_time_idx ON slashings (block_time DESC, block_number DESC, log_index DESC);
CREATE INDEX slashings_strategies_idx ON slashings USING GIN (strategies);
CREATE INDEX slashings_tx_idx ON slashings (tx_hash);

-- OperatorSharesDecreased with the zero staker: the operator shares a slash took.
CREATE TABLE slashed_operator_shares (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    operator_address address NOT NULL,
    strategy_address address NOT NULL,
    shares           uint256 NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX slashed_operator_shares_operator_idx ON slashed_operator_shares (operator_address, strategy_address);
CREATE INDEX slashed_operator_shares_tx_idx ON slashed_operator_shares (tx_hash);
CREATE INDEX slashed_operator_shares_time_idx ON slashed_operator_shares (block_time);

-- OperatorSharesSlashed: the shares a slash burns, queued withdrawals included.
CREATE TABLE operator_shares_slashed_events (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    operator_address address NOT NULL,
    strategy_address address NOT NULL,
    burned_shares    uint256 NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX operator_shares_slashed_events_tx_idx ON operator_shares_slashed_events (tx_hash);

CREATE TABLE deposit_scaling_factor_events (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    staker_address   address NOT NULL,
    strategy_address address NOT NULL,
    factor           uint256 NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX deposit_scaling_factor_events_key_idx
    ON deposit_scaling_factor_events (staker_address, strategy_address, block_number DESC, log_index DESC);

CREATE TABLE beacon_slashing_factor_events (
    block_number    BIGINT NOT NULL,
    log_index       INTEGER NOT NULL,
    tx_hash         hash32 NOT NULL,
    block_time      TIMESTAMPTZ NOT NULL,
    staker_address  address NOT NULL,
    previous_factor NUMERIC(20,0) NOT NULL,
    new_factor      NUMERIC(20,0) NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX beacon_slashing_factor_events_staker_idx
    ON beacon_slashing_factor_events (staker_address, block_number DESC, log_index DESC);

-- Every other event of the core contracts, with its decoded arguments.
CREATE TABLE protocol_events (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    contract_address address NOT NULL,
    name             TEXT NOT NULL,
    args             JSONB NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX protocol_events_name_idx ON protocol_events (name, block_number DESC, log_index DESC);

-- Withdrawals: the scaled shares of a slashing-era withdrawal and the
-- deposit shares that left the staker's balance when it was queued.
ALTER TABLE withdrawals
    ADD COLUMN scaled_shares NUMERIC(78,0)[] CHECK (cardinality(scaled_shares) = cardinality(strategies)),
    ADD COLUMN deposit_shares NUMERIC(78,0)[] CHECK (cardinality(deposit_shares) = cardinality(strategies));
UPDATE withdrawals SET deposit_shares = shares;
ALTER TABLE withdrawals ALTER COLUMN deposit_shares SET NOT NULL;

-- Staker state: the deposit scaling factor of each position and the pod
-- owner's beacon-chain slashing factor.
ALTER TABLE staker_shares
    ADD COLUMN deposit_scaling_factor uint256 NOT NULL DEFAULT 1000000000000000000;
ALTER TABLE stakers
    ADD COLUMN beacon_slashing_factor NUMERIC(20,0) NOT NULL DEFAULT 1000000000000000000;

-- Derived by refresh: every operator's max magnitude per strategy that a
-- slash lowered (an absent row is WAD), allocations as of the head, and
-- the members and strategies of each operator set.
CREATE TABLE operator_max_magnitudes (
    operator_address address NOT NULL,
    strategy_address address NOT NULL,
    max_magnitude    NUMERIC(20,0) NOT NULL,
    PRIMARY KEY (operator_address, strategy_address)
);

CREATE TABLE allocations (
    operator_address  address NOT NULL,
    avs_address       address NOT NULL,
    operator_set_id   BIGINT NOT NULL,
    strategy_address  address NOT NULL,
    magnitude         NUMERIC(20,0) NOT NULL,
    pending_magnitude NUMERIC(20,0),
    effect_block      BIGINT,
    updated_block     BIGINT NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (operator_address, avs_address, operator_set_id, strategy_address)
);
CREATE INDEX allocations_set_idx ON allocations (avs_address, operator_set_id, strategy_address, operator_address);

CREATE TABLE operator_set_members (
    avs_address      address NOT NULL,
    operator_set_id  BIGINT NOT NULL,
    operator_address address NOT NULL,
    is_active        BOOLEAN NOT NULL,
    created_at_block BIGINT NOT NULL,
    updated_at_block BIGINT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (avs_address, operator_set_id, operator_address)
);
CREATE INDEX operator_set_members_operator_idx ON operator_set_members (operator_address, avs_address, operator_set_id);

CREATE TABLE operator_set_strategies (
    avs_address      address NOT NULL,
    operator_set_id  BIGINT NOT NULL,
    strategy_address address NOT NULL,
    PRIMARY KEY (avs_address, operator_set_id, strategy_address)
);

-- Rewards: the kind of each submission, the operator set of an
-- operator-directed operator set submission, and operator amounts.
ALTER TABLE rewards_submissions
    ADD COLUMN kind TEXT NOT NULL DEFAULT 'avs'
        CHECK (kind IN ('avs', 'for_all', 'for_all_earners', 'operator_directed_avs', 'operator_directed_opset')),
    ADD COLUMN operator_set_id BIGINT,
    ADD COLUMN submitter address,
    ADD COLUMN description TEXT;
UPDATE rewards_submissions SET kind = 'for_all' WHERE for_all;

CREATE TABLE rewards_submission_operators (
    rewards_submission_hash hash32 NOT NULL REFERENCES rewards_submissions (rewards_submission_hash) ON DELETE CASCADE,
    position         INTEGER NOT NULL,
    operator_address address NOT NULL,
    amount           uint256 NOT NULL,
    PRIMARY KEY (rewards_submission_hash, position)
);
CREATE INDEX rewards_submission_operators_operator_idx ON rewards_submission_operators (operator_address);

-- The deposit shares a queued withdrawal took from the staker's balance. A
-- withdrawal queued before the slashing upgrade (no scaled shares) took the
-- shares it names. A slashing-era one took, per strategy, the deposit shares
-- d with d × dsf / 1e18 (rounded down) = its scaled shares, dsf being the
-- staker's deposit scaling factor when it was queued: the smallest such d,
-- ⌈scaled × 1e18 / dsf⌉, unique while dsf ≥ 1e18. The factor is the latest
-- DepositScalingFactorUpdated of the position before the withdrawal's log,
-- skipping the reset to 1e18 that queuing all of a position emits in the
-- same transaction.
-- +goose StatementBegin
CREATE FUNCTION withdrawal_deposit_shares(staker TEXT, strategies TEXT[], shares NUMERIC[], scaled NUMERIC[],
                                          blk BIGINT, lg INTEGER, tx TEXT)
RETURNS NUMERIC[] LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN scaled IS NULL THEN shares ELSE (
        SELECT array_agg(div(x.scaled * 1000000000000000000 + f.factor - 1, f.factor) ORDER BY x.ord)
        FROM unnest(strategies, scaled) WITH ORDINALITY AS x(strategy, scaled, ord)
        CROSS JOIN LATERAL (
            SELECT COALESCE((
                SELECT e.factor FROM deposit_scaling_factor_events e
                WHERE e.staker_address = staker AND e.strategy_address = x.strategy
                  AND (e.block_number, e.log_index) < (blk, lg)
                  AND NOT (e.tx_hash = tx AND e.factor = 1000000000000000000)
                ORDER BY e.block_number DESC, e.log_index DESC LIMIT 1), 1000000000000000000) AS factor
        ) f
    ) END
$$;
-- +goose StatementEnd

-- The shares a staker can withdraw from a position: deposit shares × the
-- deposit scaling factor × the slashing factor, each product rounded down
-- as the DelegationManager does. The slashing factor is the max magnitude
-- of the operator the staker is delegated to (1e18 when not delegated or
-- never slashed), times the pod owner's beacon-chain slashing factor for
-- beacon ETH. A negative (pre-slashing deficit) balance withdraws nothing.
CREATE FUNCTION withdrawable_shares(deposit_shares NUMERIC, scaling_factor NUMERIC, max_magnitude NUMERIC,
                                    beacon_factor NUMERIC, is_beacon BOOLEAN)
RETURNS NUMERIC LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN mul_wad(mul_wad(GREATEST(deposit_shares, 0), scaling_factor),
               CASE WHEN is_beacon THEN mul_wad(COALESCE(max_magnitude, 1000000000000000000), beacon_factor)
                    ELSE COALESCE(max_magnitude, 1000000000000000000) END);

-- Every staker position with its deposit and withdrawable shares.
CREATE VIEW staker_positions AS
SELECT ss.staker_address, ss.strategy_address, s.operator_address,
       ss.shares AS deposit_shares, ss.deposit_scaling_factor,
       withdrawable_shares(ss.shares, ss.deposit_scaling_factor, mm.max_magnitude, s.beacon_slashing_factor,
                           ss.strategy_address = '0xbeac0eeeeeeeeeeeeeeeeeeeeeeeeeeeeeebeac0') AS withdrawable_shares
FROM staker_shares ss
JOIN stakers s ON s.address = ss.staker_address
LEFT JOIN operator_max_magnitudes mm
       ON mm.operator_address = s.operator_address AND mm.strategy_address = ss.strategy_address;

-- +goose Down
DROP VIEW staker_positions;
DROP FUNCTION withdrawable_shares, withdrawal_deposit_shares;
DROP TABLE rewards_submission_operators;
ALTER TABLE rewards_submissions DROP COLUMN kind, DROP COLUMN operator_set_id, DROP COLUMN submitter, DROP COLUMN description;
DROP TABLE operator_set_strategies, operator_set_members, allocations, operator_max_magnitudes;
ALTER TABLE stakers DROP COLUMN beacon_slashing_factor;
ALTER TABLE staker_shares DROP COLUMN deposit_scaling_factor;
ALTER TABLE withdrawals DROP COLUMN scaled_shares, DROP COLUMN deposit_shares;
DROP TABLE protocol_events, beacon_slashing_factor_events, deposit_scaling_factor_events,
    operator_shares_slashed_events, slashed_operator_shares, slashings, encumbered_magnitude_events,
    max_magnitude_events, allocation_events, allocation_delay_events, operator_set_membership_events,
    operator_set_strategy_events, operator_sets;
DROP FUNCTION mul_wad;
