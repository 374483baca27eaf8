-- +goose Up
-- Addresses and hashes are lowercase 0x-prefixed hex. uint256 amounts are
-- NUMERIC(78,0) guarded to [0, 2^256); quantities that can fall carry signed
-- int256 values.

CREATE DOMAIN address AS TEXT CHECK (VALUE ~ '^0x[0-9a-f]{40}$');
CREATE DOMAIN hash32 AS TEXT CHECK (VALUE ~ '^0x[0-9a-f]{64}$');
CREATE DOMAIN uint256 AS NUMERIC(78,0)
    CHECK (VALUE >= 0 AND VALUE < 115792089237316195423570985008687907853269984665640564039457584007913129639936);
CREATE DOMAIN int256 AS NUMERIC(78,0)
    CHECK (VALUE >= -57896044618658097711785492504343953926634992332820282019728792003956564819968
       AND VALUE < 57896044618658097711785492504343953926634992332820282019728792003956564819968);

CREATE TYPE strategy_kind AS ENUM ('beacon', 'eigen', 'liquid');
CREATE TYPE delegation_type AS ENUM ('DELEGATION', 'UNDELEGATION', 'SHARES_INCREASED', 'SHARES_DECREASED');

-- One row: which network this database serves and service-wide settings.
CREATE TABLE service_state (
    id                          BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    network                     TEXT NOT NULL,
    min_withdrawal_delay_blocks BIGINT NOT NULL DEFAULT 100800 CHECK (min_withdrawal_delay_blocks >= 0),
    head_block                  BIGINT NOT NULL DEFAULT 0 CHECK (head_block >= 0),
    head_time                   TIMESTAMPTZ,
    -- data_version grows by one with every committed batch or refresh; caches key on it.
    data_version                BIGINT NOT NULL DEFAULT 0,
    refreshed_at                TIMESTAMPTZ
);

-- Tokens: strategy underlyings and reward tokens, with their ETH price.
CREATE TABLE tokens (
    address   address PRIMARY KEY,
    symbol    TEXT NOT NULL,
    decimals  INTEGER NOT NULL DEFAULT 18 CHECK (decimals BETWEEN 0 AND 77),
    eth_price NUMERIC NOT NULL DEFAULT 0 CHECK (eth_price >= 0)
);

CREATE TABLE strategies (
    address           address PRIMARY KEY,
    symbol            TEXT NOT NULL,
    kind              strategy_kind NOT NULL,
    underlying_token  address,
    decimals          INTEGER NOT NULL DEFAULT 18 CHECK (decimals BETWEEN 0 AND 77),
    -- sharesToUnderlyingView(1e18): underlying units per 1e18 shares.
    shares_to_underlying uint256 NOT NULL DEFAULT 1000000000000000000,
    -- ETH per one whole underlying token (1 for beacon ETH).
    eth_price         NUMERIC NOT NULL DEFAULT 0 CHECK (eth_price >= 0),
    -- Derived by refresh.
    total_shares      uint256 NOT NULL DEFAULT 0,
    delegated_shares  uint256 NOT NULL DEFAULT 0
);

CREATE TABLE avs (
    address              address PRIMARY KEY,
    metadata_uri         TEXT,
    metadata_name        TEXT NOT NULL DEFAULT '',
    metadata_description TEXT,
    metadata_discord     TEXT,
    metadata_logo        TEXT,
    metadata_telegram    TEXT,
    metadata_website     TEXT,
    metadata_x           TEXT,
    metadata_block       BIGINT,
    metadata_log_index   INTEGER,
    restakeable_strategies address[] NOT NULL DEFAULT '{}',
    strategies_block     BIGINT,
    strategies_log_index INTEGER,
    created_at_block     BIGINT NOT NULL,
    updated_at_block     BIGINT NOT NULL,
    created_at           TIMESTAMPTZ NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL,
    -- Derived by refresh.
    total_stakers        INTEGER NOT NULL DEFAULT 0,
    total_operators      INTEGER NOT NULL DEFAULT 0,
    max_apy              NUMERIC NOT NULL DEFAULT 0,
    tvl_eth              NUMERIC NOT NULL DEFAULT 0
);
CREATE INDEX avs_name_lower_idx ON avs (lower(metadata_name) text_pattern_ops);
CREATE INDEX avs_total_stakers_idx ON avs (total_stakers, address);
CREATE INDEX avs_total_operators_idx ON avs (total_operators, address);
CREATE INDEX avs_max_apy_idx ON avs (max_apy, address);
CREATE INDEX avs_tvl_eth_idx ON avs (tvl_eth, address);
CREATE INDEX avs_created_at_idx ON avs (created_at);

CREATE TABLE curated_avs_metadata (
    avs_address          address PRIMARY KEY REFERENCES avs (address) ON DELETE CASCADE,
    metadata_name        TEXT NOT NULL,
    metadata_description TEXT,
    metadata_discord     TEXT,
    metadata_logo        TEXT,
    metadata_telegram    TEXT,
    metadata_website     TEXT,
    metadata_x           TEXT,
    metadata_github      TEXT,
    metadata_token_address address,
    tags                 TEXT[] NOT NULL DEFAULT '{}',
    is_visible           BOOLEAN NOT NULL DEFAULT TRUE,
    is_verified          BOOLEAN NOT NULL DEFAULT FALSE
);

CREATE TABLE operators (
    address              address PRIMARY KEY,
    metadata_uri         TEXT,
    metadata_name        TEXT NOT NULL DEFAULT '',
    metadata_description TEXT,
    metadata_discord     TEXT,
    metadata_logo        TEXT,
    metadata_telegram    TEXT,
    metadata_website     TEXT,
    metadata_x           TEXT,
    metadata_block       BIGINT,
    metadata_log_index   INTEGER,
    created_at_block     BIGINT NOT NULL,
    updated_at_block     BIGINT NOT NULL,
    created_at           TIMESTAMPTZ NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL,
    -- Derived by refresh.
    total_stakers        INTEGER NOT NULL DEFAULT 0,
    total_avs            INTEGER NOT NULL DEFAULT 0,
    max_apy              NUMERIC NOT NULL DEFAULT 0,
    tvl_eth              NUMERIC NOT NULL DEFAULT 0
);
CREATE INDEX operators_name_lower_idx ON operators (lower(metadata_name) text_pattern_ops);
CREATE INDEX operators_total_stakers_idx ON operators (total_stakers, address);
CREATE INDEX operators_total_avs_idx ON operators (total_avs, address);
CREATE INDEX operators_max_apy_idx ON operators (max_apy, address);
CREATE INDEX operators_tvl_eth_idx ON operators (tvl_eth, address);
CREATE INDEX operators_created_at_idx ON operators (created_at);

-- Registration of an operator to an AVS; the latest status event wins.
CREATE TABLE avs_operators (
    avs_address      address NOT NULL,
    operator_address address NOT NULL,
    is_active        BOOLEAN NOT NULL,
    -- Derived by refresh: the AVS's restakeable strategies the operator holds shares in.
    restaked_strategies address[] NOT NULL DEFAULT '{}',
    created_at_block BIGINT NOT NULL,
    updated_at_block BIGINT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (avs_address, operator_address)
);
CREATE INDEX avs_operators_operator_idx ON avs_operators (operator_address, avs_address);
CREATE INDEX avs_operators_active_idx ON avs_operators (avs_address, operator_address) WHERE is_active;

CREATE TABLE stakers (
    address          address PRIMARY KEY,
    operator_address address,
    created_at_block BIGINT NOT NULL,
    updated_at_block BIGINT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX stakers_operator_idx ON stakers (operator_address, address) WHERE operator_address IS NOT NULL;
CREATE INDEX stakers_created_at_idx ON stakers (created_at);

-- A staker's shares per strategy: deposits and pod share updates minus queued withdrawals.
CREATE TABLE staker_shares (
    staker_address   address NOT NULL,
    strategy_address address NOT NULL,
    shares           int256 NOT NULL,
    PRIMARY KEY (staker_address, strategy_address)
);
CREATE INDEX staker_shares_strategy_idx ON staker_shares (strategy_address);

-- Derived by refresh: Σ of the delegated stakers' shares.
CREATE TABLE operator_shares (
    operator_address address NOT NULL,
    strategy_address address NOT NULL,
    shares           uint256 NOT NULL,
    PRIMARY KEY (operator_address, strategy_address)
);
CREATE INDEX operator_shares_strategy_idx ON operator_shares (strategy_address);

-- Derived by refresh: Σ shares of the AVS's active operators in its restakeable strategies.
CREATE TABLE avs_shares (
    avs_address      address NOT NULL,
    strategy_address address NOT NULL,
    shares           uint256 NOT NULL,
    PRIMARY KEY (avs_address, strategy_address)
);

-- Derived by refresh: APY per AVS and rewarded strategy, in percent.
CREATE TABLE avs_strategy_apy (
    avs_address      address NOT NULL,
    strategy_address address NOT NULL,
    apy              NUMERIC NOT NULL,
    PRIMARY KEY (avs_address, strategy_address)
);

-- Raw event tables: the source of truth from which the state above is derived.

CREATE TABLE operator_registered_events (
    block_number BIGINT NOT NULL,
    log_index    INTEGER NOT NULL,
    tx_hash      hash32 NOT NULL,
    block_time   TIMESTAMPTZ NOT NULL,
    operator_address address NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX operator_registered_events_operator_idx ON operator_registered_events (operator_address);

CREATE TABLE metadata_uri_events (
    block_number BIGINT NOT NULL,
    log_index    INTEGER NOT NULL,
    tx_hash      hash32 NOT NULL,
    block_time   TIMESTAMPTZ NOT NULL,
    subject      TEXT NOT NULL CHECK (subject IN ('avs', 'operator')),
    address      address NOT NULL,
    uri          TEXT NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX metadata_uri_events_address_idx ON metadata_uri_events (subject, address, block_number DESC, log_index DESC);

CREATE TABLE delegation_events (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    type             delegation_type NOT NULL,
    staker_address   address NOT NULL,
    operator_address address NOT NULL,
    strategy_address address,
    shares           uint256,
    PRIMARY KEY (block_number, log_index),
    CHECK ((type IN ('SHARES_INCREASED', 'SHARES_DECREASED')) = (strategy_address IS NOT NULL AND shares IS NOT NULL))
);
CREATE INDEX delegation_events_staker_time_idx ON delegation_events (staker_address, block_time DESC, block_number DESC, log_index DESC);
CREATE INDEX delegation_events_operator_time_idx ON delegation_events (operator_address, block_time DESC, block_number DESC, log_index DESC);
CREATE INDEX delegation_events_tx_idx ON delegation_events (tx_hash);
CREATE INDEX delegation_events_time_idx ON delegation_events (block_time);

CREATE TABLE deposits (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    staker_address   address NOT NULL,
    token_address    address,
    strategy_address address NOT NULL,
    shares           uint256 NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX deposits_staker_idx ON deposits (staker_address, block_time DESC);
CREATE INDEX deposits_strategy_idx ON deposits (strategy_address, block_time DESC);
CREATE INDEX deposits_time_idx ON deposits (block_time);

CREATE TABLE pod_share_events (
    block_number  BIGINT NOT NULL,
    log_index     INTEGER NOT NULL,
    tx_hash       hash32 NOT NULL,
    block_time    TIMESTAMPTZ NOT NULL,
    pod_owner     address NOT NULL,
    shares_delta  int256 NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX pod_share_events_owner_idx ON pod_share_events (pod_owner);
CREATE INDEX pod_share_events_time_idx ON pod_share_events (block_time);

CREATE TABLE withdrawals (
    withdrawal_root     hash32 PRIMARY KEY,
    nonce               uint256 NOT NULL,
    staker_address      address NOT NULL,
    delegated_to        address NOT NULL,
    withdrawer_address  address NOT NULL,
    start_block         BIGINT NOT NULL,
    strategies          address[] NOT NULL,
    shares              NUMERIC(78,0)[] NOT NULL CHECK (cardinality(shares) = cardinality(strategies)),
    block_number        BIGINT NOT NULL,
    log_index           INTEGER NOT NULL,
    tx_hash             hash32 NOT NULL,
    created_at_block    BIGINT NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at_block    BIGINT NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    is_completed        BOOLEAN NOT NULL DEFAULT FALSE,
    completed_block     BIGINT,
    completed_log_index INTEGER,
    completed_tx_hash   hash32,
    completed_at        TIMESTAMPTZ,
    UNIQUE (block_number, log_index)
);
CREATE INDEX withdrawals_created_idx ON withdrawals (created_at_block DESC, withdrawal_root DESC);
CREATE INDEX withdrawals_staker_idx ON withdrawals (staker_address, created_at_block DESC, withdrawal_root DESC);
CREATE INDEX withdrawals_delegated_to_idx ON withdrawals (delegated_to, created_at_block DESC, withdrawal_root DESC);
CREATE INDEX withdrawals_strategies_idx ON withdrawals USING GIN (strategies);
CREATE INDEX withdrawals_pending_idx ON withdrawals (created_at_block DESC, withdrawal_root DESC) WHERE NOT is_completed;
CREATE INDEX withdrawals_completed_idx ON withdrawals (created_at_block DESC, withdrawal_root DESC) WHERE is_completed;
CREATE INDEX withdrawals_created_at_idx ON withdrawals (created_at);
CREATE INDEX withdrawals_completed_at_idx ON withdrawals (completed_at) WHERE is_completed;
CREATE INDEX withdrawals_completed_block_idx ON withdrawals (completed_block) WHERE is_completed;

CREATE TABLE registration_events (
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    operator_address address NOT NULL,
    avs_address      address NOT NULL,
    registered       BOOLEAN NOT NULL,
    PRIMARY KEY (block_number, log_index)
);
CREATE INDEX registration_events_pair_idx ON registration_events (avs_address, operator_address, block_number DESC, log_index DESC);
CREATE INDEX registration_events_operator_idx ON registration_events (operator_address);

CREATE TABLE avs_strategy_events (
    block_number BIGINT NOT NULL,
    log_index    INTEGER NOT NULL,
    avs_address  address NOT NULL,
    strategies   address[] NOT NULL,
    PRIMARY KEY (block_number, log_index, avs_address)
);

CREATE TABLE rewards_submissions (
    rewards_submission_hash hash32 PRIMARY KEY,
    avs_address      address NOT NULL,
    for_all          BOOLEAN NOT NULL DEFAULT FALSE,
    submission_nonce uint256 NOT NULL,
    token_address    address NOT NULL,
    amount           uint256 NOT NULL,
    start_timestamp  BIGINT NOT NULL CHECK (start_timestamp >= 0),
    duration         BIGINT NOT NULL CHECK (duration >= 0),
    block_number     BIGINT NOT NULL,
    log_index        INTEGER NOT NULL,
    tx_hash          hash32 NOT NULL,
    block_time       TIMESTAMPTZ NOT NULL,
    UNIQUE (block_number, log_index)
);
CREATE INDEX rewards_submissions_avs_idx ON rewards_submissions (avs_address, block_number DESC, log_index DESC);
CREATE INDEX rewards_submissions_time_idx ON rewards_submissions (block_time);

CREATE TABLE rewards_submission_strategies (
    rewards_submission_hash hash32 NOT NULL REFERENCES rewards_submissions (rewards_submission_hash) ON DELETE CASCADE,
    position         INTEGER NOT NULL,
    strategy_address address NOT NULL,
    multiplier       uint256 NOT NULL,
    -- amount × multiplier / Σ multipliers of the submission.
    amount           uint256 NOT NULL,
    PRIMARY KEY (rewards_submission_hash, position)
);
CREATE INDEX rewards_submission_strategies_strategy_idx ON rewards_submission_strategies (strategy_address);

-- Daily metric snapshots, as of the end of each UTC day (the current day as of the last refresh).
CREATE TABLE strategy_daily_snapshots (
    day              DATE NOT NULL,
    strategy_address address NOT NULL,
    total_shares     int256 NOT NULL,
    delegated_shares int256 NOT NULL,
    tvl              NUMERIC NOT NULL,
    tvl_eth          NUMERIC NOT NULL,
    PRIMARY KEY (strategy_address, day)
);
CREATE INDEX strategy_daily_snapshots_day_idx ON strategy_daily_snapshots (day);

CREATE TABLE daily_snapshots (
    day                   DATE PRIMARY KEY,
    total_avs             INTEGER NOT NULL,
    total_operators       INTEGER NOT NULL,
    total_stakers         INTEGER NOT NULL,
    new_stakers           INTEGER NOT NULL,
    total_withdrawals     INTEGER NOT NULL,
    completed_withdrawals INTEGER NOT NULL,
    tvl_eth               NUMERIC NOT NULL,
    tvl_beacon_chain      NUMERIC NOT NULL,
    tvl_restaking         NUMERIC NOT NULL,
    delegated_eth         NUMERIC NOT NULL,
    deployment_ratio      NUMERIC NOT NULL
);

CREATE TABLE api_keys (
    id                    BIGSERIAL PRIMARY KEY,
    name                  TEXT NOT NULL UNIQUE CHECK (name <> ''),
    key_hash              BYTEA NOT NULL UNIQUE,
    key_prefix            TEXT NOT NULL,
    rate_limit_per_minute INTEGER CHECK (rate_limit_per_minute > 0),
    created_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at            TIMESTAMPTZ
);

-- The indexer's cursor and the hashes of the blocks it has applied, for reorg detection.
CREATE TABLE sync_cursor (
    id           BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    block_number BIGINT NOT NULL,
    block_hash   TEXT NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE indexed_blocks (
    block_number BIGINT PRIMARY KEY,
    block_hash   hash32 NOT NULL
);

-- +goose Down
DROP TABLE indexed_blocks, sync_cursor, api_keys, daily_snapshots, strategy_daily_snapshots,
    rewards_submission_strategies, rewards_submissions, avs_strategy_events, registration_events,
    withdrawals, pod_share_events, deposits, delegation_events, metadata_uri_events,
    operator_registered_events, avs_strategy_apy, avs_shares, operator_shares, staker_shares,
    stakers, avs_operators, operators, curated_avs_metadata, avs, strategies, tokens, service_state;
DROP TYPE delegation_type, strategy_kind;
DROP DOMAIN int256, uint256, hash32, address;
