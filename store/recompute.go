package store

import (
	"context"
	"fmt"

	"github.com/lib/pq"
)

// RecomputeEntities rebuilds, from the raw event tables alone, the entity
// state of the given stakers, (AVS, operator) registration pairs, AVS,
// operators and operators' delegated shares, with the derivations
// ApplyBatch runs. It is the way back to
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
	// DelegatedOperators are the operators whose delegated shares to
	// rebuild.
	DelegatedOperators []string
}

func (tx *Tx) recomputeStakers(ctx context.Context, k EntityKeys) error {
	if err := tx.deriveStakers(ctx, someKeys(k.Stakers)); err != nil {
		return err
	}
	return tx.deriveOperatorShares(ctx, someKeys(k.DelegatedOperators))
}

func (tx *Tx) recomputeAVS(ctx context.Context, k EntityKeys) error {
	if len(k.AVS) == 0 {
		return nil
	}
	avss := pq.Array(k.AVS)
	if _, err := tx.execContext(ctx, `
		DELETE FROM avs a WHERE a.address = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM metadata_uri_events e WHERE e.subject = 'avs' AND e.address = a.address)`, avss); err != nil {
		return err
	}
	if _, err := tx.execContext(ctx, `
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
	if _, err := tx.execContext(ctx, `
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
	if _, err := tx.execContext(ctx, `
		DELETE FROM operators o WHERE o.address = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM operator_registered_events e WHERE e.operator_address = o.address)`, ops); err != nil {
		return err
	}
	if _, err := tx.execContext(ctx, `
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
	_, err := tx.execContext(ctx, `
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
