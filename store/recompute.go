package store

import (
	"context"
	"fmt"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/chain"
)

// RecomputeEntities rebuilds, from the raw event tables alone, the entity
// state of the given stakers, (AVS, operator) registration pairs, AVS and
// operators: what ApplyBatch maintains incrementally. It is the way back to
// a consistent state after raw events were deleted (a chain reorganisation):
// delete the events, then recompute every key they touched. Rows left with no
// event are deleted. Call Refresh afterwards.
func (tx *Tx) RecomputeEntities(ctx context.Context, keys EntityKeys) error {
	steps := []struct {
		name string
		fn   func(context.Context, EntityKeys) error
	}{
		{"stakers", tx.recomputeStakers},
		{"registrations", func(ctx context.Context, k EntityKeys) error {
			return tx.recomputeRegistrations(ctx, k.RegistrationAVS, k.RegistrationOperators)
		}},
		{"avs", tx.recomputeAVS},
		{"operators", tx.recomputeOperators},
	}
	for _, s := range steps {
		if err := s.fn(ctx, keys); err != nil {
			return fmt.Errorf("recompute %s: %w", s.name, Classify(err))
		}
	}
	return nil
}

// EntityKeys names the entities whose state RecomputeEntities rebuilds.
// RegistrationAVS and RegistrationOperators are parallel: element i of each
// names one pair.
type EntityKeys struct {
	Stakers               []string
	RegistrationAVS       []string
	RegistrationOperators []string
	AVS                   []string
	Operators             []string
}

func (tx *Tx) recomputeStakers(ctx context.Context, k EntityKeys) error {
	if len(k.Stakers) == 0 {
		return nil
	}
	stakers := pq.Array(k.Stakers)
	// Existence and first/last activity over every table that names a staker.
	if _, err := tx.ExecContext(ctx, `
		WITH activity AS (
		    SELECT staker_address AS address, block_number, block_time FROM delegation_events WHERE staker_address = ANY($1)
		    UNION ALL SELECT staker_address, block_number, block_time FROM deposits WHERE staker_address = ANY($1)
		    UNION ALL SELECT pod_owner, block_number, block_time FROM pod_share_events WHERE pod_owner = ANY($1)
		    UNION ALL SELECT staker_address, block_number, created_at FROM withdrawals WHERE staker_address = ANY($1)
		), spans AS (
		    SELECT address, min(block_number) AS first_block, max(block_number) AS last_block,
		           min(block_time) AS first_time, max(block_time) AS last_time
		    FROM activity GROUP BY address
		), gone AS (
		    DELETE FROM stakers s WHERE s.address = ANY($1) AND NOT EXISTS (SELECT 1 FROM spans WHERE spans.address = s.address)
		)
		INSERT INTO stakers (address, created_at_block, updated_at_block, created_at, updated_at)
		SELECT address, first_block, last_block, first_time, last_time FROM spans
		ON CONFLICT (address) DO UPDATE
		SET created_at_block = EXCLUDED.created_at_block, updated_at_block = EXCLUDED.updated_at_block,
		    created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at`, stakers); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM staker_shares WHERE staker_address = ANY($1)`, stakers); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO staker_shares (staker_address, strategy_address, shares)
		SELECT staker_address, strategy_address, sum(delta)
		FROM (
		    SELECT staker_address, strategy_address, shares AS delta FROM deposits WHERE staker_address = ANY($1)
		    UNION ALL
		    SELECT pod_owner, $2, shares_delta FROM pod_share_events WHERE pod_owner = ANY($1)
		    UNION ALL
		    SELECT w.staker_address, x.strategy, -x.shares
		    FROM withdrawals w CROSS JOIN LATERAL unnest(w.strategies, w.shares) AS x(strategy, shares)
		    WHERE w.staker_address = ANY($1)
		) d
		GROUP BY staker_address, strategy_address
		HAVING sum(delta) <> 0`, stakers, chain.BeaconStrategy); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `
		UPDATE stakers s
		SET operator_address = CASE WHEN l.type = 'DELEGATION' THEN l.operator_address END,
		    delegation_block = l.block_number, delegation_log_index = l.log_index
		FROM unnest($1::text[]) AS k(address)
		LEFT JOIN LATERAL (
		    SELECT e.type, e.operator_address, e.block_number, e.log_index
		    FROM delegation_events e
		    WHERE e.staker_address = k.address AND e.type IN ('DELEGATION', 'UNDELEGATION')
		    ORDER BY e.block_number DESC, e.log_index DESC LIMIT 1
		) l ON TRUE
		WHERE s.address = k.address`, stakers)
	return err
}

func (tx *Tx) recomputeAVS(ctx context.Context, k EntityKeys) error {
	if len(k.AVS) == 0 {
		return nil
	}
	avss := pq.Array(k.AVS)
	if _, err := tx.ExecContext(ctx, `
		DELETE FROM avs a WHERE a.address = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM metadata_uri_events e WHERE e.subject = 'avs' AND e.address = a.address)`, avss); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE avs a
		SET metadata_uri = l.uri, created_at_block = l.first_block, created_at = l.first_time,
		    updated_at_block = l.last_block, updated_at = l.last_time
		FROM (
		    SELECT address,
		           (array_agg(uri ORDER BY block_number DESC, log_index DESC))[1] AS uri,
		           min(block_number) AS first_block, max(block_number) AS last_block,
		           min(block_time) AS first_time, max(block_time) AS last_time
		    FROM metadata_uri_events WHERE subject = 'avs' AND address = ANY($1)
		    GROUP BY address
		) l
		WHERE a.address = l.address`, avss); err != nil {
		return err
	}
	// Metadata documents of URIs that no longer exist are dropped with them.
	if _, err := tx.ExecContext(ctx, `
		UPDATE avs a
		SET metadata_name = '', metadata_description = NULL, metadata_website = NULL, metadata_logo = NULL,
		    metadata_x = NULL, metadata_discord = NULL, metadata_telegram = NULL,
		    metadata_block = NULL, metadata_log_index = NULL
		WHERE a.address = ANY($1) AND a.metadata_block IS NOT NULL
		  AND NOT EXISTS (SELECT 1 FROM metadata_uri_events e
		                  WHERE e.subject = 'avs' AND e.address = a.address
		                    AND (e.block_number, e.log_index) <= (a.metadata_block, a.metadata_log_index))`, avss); err != nil {
		return err
	}
	return tx.recomputeAVSStrategies(ctx, k.AVS)
}

func (tx *Tx) recomputeOperators(ctx context.Context, k EntityKeys) error {
	if len(k.Operators) == 0 {
		return nil
	}
	ops := pq.Array(k.Operators)
	if _, err := tx.ExecContext(ctx, `
		DELETE FROM operators o WHERE o.address = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM operator_registered_events e WHERE e.operator_address = o.address)`, ops); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE operators o
		SET metadata_uri = (SELECT uri FROM metadata_uri_events e
		                    WHERE e.subject = 'operator' AND e.address = o.address
		                    ORDER BY block_number DESC, log_index DESC LIMIT 1),
		    created_at_block = r.first_block, created_at = r.first_time,
		    updated_at_block = GREATEST(r.last_block, COALESCE(m.last_block, 0)),
		    updated_at = GREATEST(r.last_time, m.last_time)
		FROM (
		    SELECT operator_address, min(block_number) AS first_block, max(block_number) AS last_block,
		           min(block_time) AS first_time, max(block_time) AS last_time
		    FROM operator_registered_events WHERE operator_address = ANY($1) GROUP BY operator_address
		) r
		LEFT JOIN (
		    SELECT address, max(block_number) AS last_block, max(block_time) AS last_time
		    FROM metadata_uri_events WHERE subject = 'operator' AND address = ANY($1) GROUP BY address
		) m ON m.address = r.operator_address
		WHERE o.address = r.operator_address`, ops); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `
		UPDATE operators o
		SET metadata_name = '', metadata_description = NULL, metadata_website = NULL, metadata_logo = NULL,
		    metadata_x = NULL, metadata_discord = NULL, metadata_telegram = NULL,
		    metadata_block = NULL, metadata_log_index = NULL
		WHERE o.address = ANY($1) AND o.metadata_block IS NOT NULL
		  AND NOT EXISTS (SELECT 1 FROM metadata_uri_events e
		                  WHERE e.subject = 'operator' AND e.address = o.address
		                    AND (e.block_number, e.log_index) <= (o.metadata_block, o.metadata_log_index))`, ops)
	return err
}
