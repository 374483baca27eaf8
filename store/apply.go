package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/chain"
)

// ApplyBatch inserts the batch's events into the raw event tables and brings
// the entity state they touch up to date: stakers (existence, current
// operator), staker shares, operators, AVS, registrations, withdrawals and
// rewards submissions. Raw inserts are idempotent (a log already stored is
// skipped) and share balances move only by the deltas of the rows actually
// inserted, so applying a batch twice changes nothing. Aggregates are not
// touched: call Refresh once the batches of a transaction are applied.
//
// Everything is set-based: each kind of event is one INSERT ... SELECT FROM
// unnest(...) statement, whatever the batch size.
func (tx *Tx) ApplyBatch(ctx context.Context, b *chain.Batch) error {
	return tx.applySteps(ctx, b, largeSteps{
		delegations:       tx.applyDelegations,
		deposits:          tx.applyDeposits,
		podShares:         tx.applyPodShares,
		withdrawalsQueued: tx.applyWithdrawalsQueued,
		withdrawalsDone:   tx.applyWithdrawalsCompleted,
		scalingFactors:    tx.applyDepositScalingFactors,
		stakers:           tx.applyStakerState,
	})
}

// largeSteps are the apply steps of the event kinds that grow into the
// millions, which ApplyBatch and BulkApply store differently; stakers may
// be nil.
type largeSteps struct {
	delegations, deposits, podShares, scalingFactors, withdrawalsQueued, withdrawalsDone, stakers func(context.Context, *chain.Batch) error
}

// applySteps applies every kind of event of b in order, the large kinds
// with large, and moves the head.
func (tx *Tx) applySteps(ctx context.Context, b *chain.Batch, large largeSteps) error {
	steps := []struct {
		name string
		fn   func(context.Context, *chain.Batch) error
	}{
		{"strategies", tx.ensureStrategies},
		{"operators", tx.applyOperatorsRegistered},
		{"metadata uris", tx.applyMetadataURIs},
		{"registrations", tx.applyRegistrations},
		{"operator sets", tx.applyOperatorSets},
		{"avs strategies", tx.applyAVSStrategies},
		{"delegations", large.delegations},
		{"deposits", large.deposits},
		{"pod shares", large.podShares},
		{"slashing", tx.applySlashingEvents},
		{"deposit scaling factors", large.scalingFactors},
		{"withdrawals queued", large.withdrawalsQueued},
		{"withdrawals completed", large.withdrawalsDone},
		{"rewards", tx.applyRewards},
		{"protocol events", tx.applyProtocolEvents},
		{"metadata documents", tx.applyMetadataDocuments},
		{"stakers", large.stakers},
	}
	for _, s := range steps {
		if s.fn == nil {
			continue
		}
		if err := s.fn(ctx, b); err != nil {
			return fmt.Errorf("apply %s: %w", s.name, Classify(err))
		}
	}
	if b.Head.BlockNumber > 0 {
		if err := tx.SetHead(ctx, b.Head); err != nil {
			return err
		}
	}
	return nil
}

// positions holds the Position columns of a set of events as parallel arrays.
type positions struct {
	blocks  []int64
	logs    []int64
	txs     []string
	times   []time.Time
	minTime time.Time
}

func (p *positions) add(pos chain.Position) {
	p.blocks = append(p.blocks, int64(pos.BlockNumber))
	p.logs = append(p.logs, int64(pos.LogIndex))
	p.txs = append(p.txs, strings.ToLower(pos.TxHash))
	t := pos.BlockTime.UTC()
	p.times = append(p.times, t)
	if p.minTime.IsZero() || t.Before(p.minTime) {
		p.minTime = t
	}
}

func (p *positions) args() []any {
	return []any{pq.Array(p.blocks), pq.Array(p.logs), pq.Array(p.txs), pq.Array(formatTimes(p.times))}
}

func formatTimes(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format(time.RFC3339Nano)
	}
	return out
}

func bigString(v *big.Int) string {
	if v == nil {
		return "0"
	}
	return v.String()
}

// lower lowercases s. Addresses and hashes mostly come lowercase already,
// and checking eight bytes at a time is several times cheaper than
// strings.ToLower's byte-by-byte scan, which bulk loads make millions of.
func lower(s string) string {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64([]byte(s[i : i+8]))
		// With every high bit clear, w + 0x3f sets a byte's high bit from
		// 'A' up and w + 0x25 from 'Z'+1 up: a byte in A-Z has the first
		// and not the second.
		if w&highs != 0 || (w+0x3f*ones)&^(w+0x25*ones)&highs != 0 {
			return strings.ToLower(s)
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// markDirty records the earliest block time of applied events so Refresh
// knows from which day the daily snapshots must be recomputed.
func (tx *Tx) markDirty(ctx context.Context, since time.Time) error {
	if since.IsZero() {
		return nil
	}
	_, err := tx.execContext(ctx, `
		UPDATE service_state SET dirty_since = LEAST(COALESCE(dirty_since, $1), $1) WHERE id`, since.UTC())
	return err
}

// ensureStrategies inserts a placeholder row for every strategy an event
// names that the strategies table does not know yet, so that no share is
// lost; such a strategy has no price and counts for nothing in ETH until its
// reference data arrives.
func (tx *Tx) ensureStrategies(ctx context.Context, b *chain.Batch) error {
	seen := map[string]bool{}
	for _, d := range b.Deposits {
		seen[lower(d.Strategy)] = true
	}
	for _, d := range b.Delegations {
		if d.Strategy != "" {
			seen[lower(d.Strategy)] = true
		}
	}
	for _, w := range b.WithdrawalsQueued {
		for _, s := range w.Strategies {
			seen[lower(s)] = true
		}
	}
	if len(b.PodShares) > 0 {
		seen[chain.BeaconStrategy] = true
	}
	if len(seen) == 0 {
		return nil
	}
	addrs := make([]string, 0, len(seen))
	for a := range seen {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	_, err := tx.execContext(ctx, `
		INSERT INTO strategies (address, symbol, kind, eth_price)
		SELECT a, CASE WHEN a = $2 THEN 'Beacon ETH' ELSE a END,
		       CASE WHEN a = $2 THEN 'beacon'::strategy_kind ELSE 'liquid'::strategy_kind END,
		       CASE WHEN a = $2 THEN 1 ELSE 0 END
		FROM unnest($1::text[]) AS a
		ON CONFLICT (address) DO NOTHING`, pq.Array(addrs), chain.BeaconStrategy)
	return err
}

func (tx *Tx) applyOperatorsRegistered(ctx context.Context, b *chain.Batch) error {
	if len(b.OperatorsRegistered) == 0 {
		return nil
	}
	var p positions
	var ops []string
	for _, e := range b.OperatorsRegistered {
		p.add(e.Position)
		ops = append(ops, lower(e.Operator))
	}
	_, err := tx.execContext(ctx, `
		WITH ins AS (
		    INSERT INTO operator_registered_events (block_number, log_index, tx_hash, block_time, operator_address)
		    SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::text[])
		    ON CONFLICT DO NOTHING
		    RETURNING operator_address, block_number, block_time
		), firsts AS (
		    SELECT DISTINCT ON (operator_address) operator_address, block_number, block_time
		    FROM ins ORDER BY operator_address, block_number, block_time
		)
		INSERT INTO operators (address, created_at_block, updated_at_block, created_at, updated_at)
		SELECT operator_address, block_number, block_number, block_time, block_time FROM firsts
		ON CONFLICT (address) DO UPDATE
		SET created_at_block = LEAST(operators.created_at_block, EXCLUDED.created_at_block),
		    created_at = LEAST(operators.created_at, EXCLUDED.created_at),
		    updated_at_block = GREATEST(operators.updated_at_block, EXCLUDED.updated_at_block),
		    updated_at = GREATEST(operators.updated_at, EXCLUDED.updated_at)`,
		append(p.args(), pq.Array(ops))...)
	if err != nil {
		return err
	}
	return tx.markDirty(ctx, p.minTime)
}

func (tx *Tx) applyMetadataURIs(ctx context.Context, b *chain.Batch) error {
	if len(b.MetadataURIs) == 0 {
		return nil
	}
	var p positions
	var subjects, addrs, uris []string
	for _, e := range b.MetadataURIs {
		p.add(e.Position)
		subjects = append(subjects, string(e.Subject))
		addrs = append(addrs, lower(e.Address))
		uris = append(uris, e.URI)
	}
	args := append(p.args(), pq.Array(subjects), pq.Array(addrs), pq.Array(uris))
	if _, err := tx.execContext(ctx, `
		INSERT INTO metadata_uri_events (block_number, log_index, tx_hash, block_time, subject, address, uri)
		SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::text[])
		ON CONFLICT DO NOTHING`, args...); err != nil {
		return err
	}
	// An AVS comes into existence with its first metadata URI.
	if _, err := tx.execContext(ctx, `
		INSERT INTO avs (address, created_at_block, updated_at_block, created_at, updated_at)
		SELECT address, min(block_number), max(block_number), min(block_time), max(block_time)
		FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[]) AS e(block_number, block_time, subject, address)
		WHERE subject = 'avs'
		GROUP BY address
		ON CONFLICT (address) DO UPDATE
		SET created_at_block = LEAST(avs.created_at_block, EXCLUDED.created_at_block),
		    created_at = LEAST(avs.created_at, EXCLUDED.created_at),
		    updated_at_block = GREATEST(avs.updated_at_block, EXCLUDED.updated_at_block),
		    updated_at = GREATEST(avs.updated_at, EXCLUDED.updated_at)`,
		pq.Array(p.blocks), pq.Array(formatTimes(p.times)), pq.Array(subjects), pq.Array(addrs)); err != nil {
		return err
	}
	// A strategies observation stored before the AVS row existed applies now.
	if err := tx.recomputeAVSStrategies(ctx, avsAddresses(b.MetadataURIs)); err != nil {
		return err
	}
	// The latest URI per subject wins.
	for _, table := range []string{"avs", "operators"} {
		subject := map[string]string{"avs": "avs", "operators": "operator"}[table]
		if _, err := tx.execContext(ctx, fmt.Sprintf(`
			UPDATE %[1]s t
			SET metadata_uri = l.uri,
			    updated_at_block = GREATEST(t.updated_at_block, l.block_number),
			    updated_at = GREATEST(t.updated_at, l.block_time)
			FROM (
			    SELECT DISTINCT ON (address) address, uri, block_number, block_time
			    FROM metadata_uri_events
			    WHERE subject = $1 AND address = ANY($2)
			    ORDER BY address, block_number DESC, log_index DESC
			) l
			WHERE t.address = l.address`, table), subject, pq.Array(addrs)); err != nil {
			return err
		}
	}
	return tx.markDirty(ctx, p.minTime)
}

// avsAddresses returns the AVS addresses that metadata URI events name.
func avsAddresses(events []chain.MetadataURIUpdated) []string {
	var out []string
	for _, e := range events {
		if e.Subject == chain.SubjectAVS {
			out = append(out, lower(e.Address))
		}
	}
	return out
}

func (tx *Tx) applyMetadataDocuments(ctx context.Context, b *chain.Batch) error {
	for _, table := range []string{"avs", "operators"} {
		subject := chain.SubjectAVS
		if table == "operators" {
			subject = chain.SubjectOperator
		}
		var addrs, names []string
		var blocks, logs []int64
		var descs, websites, logos, xs, discords, telegrams []sql.NullString
		for _, d := range b.MetadataDocuments {
			if d.Subject != subject {
				continue
			}
			addrs = append(addrs, lower(d.Address))
			names = append(names, d.Name)
			blocks = append(blocks, int64(d.BlockNumber))
			logs = append(logs, int64(d.LogIndex))
			descs = append(descs, nullString(d.Description))
			websites = append(websites, nullString(d.Website))
			logos = append(logos, nullString(d.Logo))
			xs = append(xs, nullString(d.Twitter))
			discords = append(discords, nullString(d.Discord))
			telegrams = append(telegrams, nullString(d.Telegram))
		}
		if len(addrs) == 0 {
			continue
		}
		// A document older than the one stored is ignored; within the batch the
		// newest document per subject wins.
		if _, err := tx.execContext(ctx, fmt.Sprintf(`
			UPDATE %s t
			SET metadata_name = d.name, metadata_description = d.description, metadata_website = d.website,
			    metadata_logo = d.logo, metadata_x = d.x, metadata_discord = d.discord,
			    metadata_telegram = d.telegram, metadata_block = d.block_number, metadata_log_index = d.log_index
			FROM (
			    SELECT DISTINCT ON (address) *
			    FROM unnest($1::text[], $2::text[], $3::bigint[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
			        AS u(address, name, block_number, log_index, description, website, logo, x, discord, telegram)
			    ORDER BY address, block_number DESC, log_index DESC
			) d
			WHERE t.address = d.address
			  AND (t.metadata_block IS NULL OR (t.metadata_block, t.metadata_log_index) <= (d.block_number, d.log_index))`, table),
			pq.Array(addrs), pq.Array(names), pq.Array(blocks), pq.Array(logs), pq.Array(descs),
			pq.Array(websites), pq.Array(logos), pq.Array(xs), pq.Array(discords), pq.Array(telegrams)); err != nil {
			return err
		}
	}
	return nil
}

// nullIfEmpty is NULL for the empty string and s otherwise.
func nullIfEmpty(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func nullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

func (tx *Tx) applyRegistrations(ctx context.Context, b *chain.Batch) error {
	if len(b.Registrations) == 0 {
		return nil
	}
	var p positions
	var ops, avss []string
	var regs []bool
	for _, e := range b.Registrations {
		p.add(e.Position)
		ops = append(ops, lower(e.Operator))
		avss = append(avss, lower(e.AVS))
		regs = append(regs, e.Registered)
	}
	args := append(p.args(), pq.Array(ops), pq.Array(avss), pq.Array(regs))
	if _, err := tx.execContext(ctx, `
		INSERT INTO registration_events (block_number, log_index, tx_hash, block_time, operator_address, avs_address, registered)
		SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::bool[])
		ON CONFLICT DO NOTHING`, args...); err != nil {
		return err
	}
	if err := tx.recomputeRegistrations(ctx, avss, ops); err != nil {
		return err
	}
	return tx.markDirty(ctx, p.minTime)
}

// recomputeRegistrations rebuilds the avs_operators rows of the given
// (avs, operator) pairs from their AVSDirectory registration events and
// their operator set membership events: an operator is an AVS's operator
// while its latest AVSDirectory status says registered or it is a member of
// any of the AVS's operator sets (its latest membership event of that set
// added it). Pairs left without events of either kind are deleted.
func (tx *Tx) recomputeRegistrations(ctx context.Context, avss, ops []string) error {
	if _, err := tx.execContext(ctx, `
		WITH pairs AS (
		    SELECT DISTINCT avs_address, operator_address
		    FROM unnest($1::text[], $2::text[]) AS p(avs_address, operator_address)
		), state AS (
		    SELECT p.avs_address, p.operator_address,
		           (SELECT registered FROM registration_events e
		            WHERE e.avs_address = p.avs_address AND e.operator_address = p.operator_address
		            ORDER BY block_number DESC, log_index DESC LIMIT 1) AS registered,
		           (SELECT bool_or(m.added) FROM (
		                SELECT DISTINCT ON (operator_set_id) added
		                FROM operator_set_membership_events e
		                WHERE e.avs_address = p.avs_address AND e.operator_address = p.operator_address
		                ORDER BY operator_set_id, block_number DESC, log_index DESC) m) AS member,
		           s.*
		    FROM pairs p
		    CROSS JOIN LATERAL (
		        SELECT min(block_number) AS created_at_block, max(block_number) AS updated_at_block,
		               min(block_time) AS created_at, max(block_time) AS updated_at
		        FROM (
		            SELECT block_number, block_time FROM registration_events e
		            WHERE e.avs_address = p.avs_address AND e.operator_address = p.operator_address
		            UNION ALL
		            SELECT block_number, block_time FROM operator_set_membership_events e
		            WHERE e.avs_address = p.avs_address AND e.operator_address = p.operator_address
		        ) x
		    ) s
		), gone AS (
		    DELETE FROM avs_operators o USING state s
		    WHERE o.avs_address = s.avs_address AND o.operator_address = s.operator_address
		      AND s.registered IS NULL AND s.member IS NULL
		)
		INSERT INTO avs_operators (avs_address, operator_address, is_active, created_at_block, updated_at_block, created_at, updated_at)
		SELECT avs_address, operator_address, COALESCE(registered, FALSE) OR COALESCE(member, FALSE),
		       created_at_block, updated_at_block, created_at, updated_at
		FROM state WHERE registered IS NOT NULL OR member IS NOT NULL
		ON CONFLICT (avs_address, operator_address) DO UPDATE
		SET is_active = EXCLUDED.is_active, created_at_block = EXCLUDED.created_at_block,
		    updated_at_block = EXCLUDED.updated_at_block, created_at = EXCLUDED.created_at,
		    updated_at = EXCLUDED.updated_at`, pq.Array(avss), pq.Array(ops)); err != nil {
		return err
	}
	return nil
}

func (tx *Tx) applyAVSStrategies(ctx context.Context, b *chain.Batch) error {
	for _, e := range b.AVSStrategies {
		strategies := make([]string, len(e.Strategies))
		for i, s := range e.Strategies {
			strategies[i] = lower(s)
		}
		if _, err := tx.execContext(ctx, `
			INSERT INTO avs_strategy_events (block_number, log_index, avs_address, strategies)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, int64(e.BlockNumber), int64(e.LogIndex), lower(e.AVS), pq.Array(strategies)); err != nil {
			return err
		}
	}
	if len(b.AVSStrategies) == 0 {
		return nil
	}
	avss := make([]string, 0, len(b.AVSStrategies))
	for _, e := range b.AVSStrategies {
		avss = append(avss, lower(e.AVS))
	}
	return tx.recomputeAVSStrategies(ctx, avss)
}

// recomputeAVSStrategies sets each given AVS's restakeable strategies: its
// latest strategies observation, followed by the other strategies of its
// operator sets in address order (a strategy belongs to a set while its
// latest event for the set added it).
func (tx *Tx) recomputeAVSStrategies(ctx context.Context, avss []string) error {
	_, err := tx.execContext(ctx, `
		UPDATE avs a
		SET restakeable_strategies = COALESCE(l.strategies, '{}') || COALESCE((
		        SELECT array_agg(DISTINCT s.strategy_address ORDER BY s.strategy_address) FROM (
		            SELECT DISTINCT ON (operator_set_id, strategy_address) strategy_address, added
		            FROM operator_set_strategy_events e
		            WHERE e.avs_address = k.address
		            ORDER BY operator_set_id, strategy_address, block_number DESC, log_index DESC
		        ) s
		        WHERE s.added AND NOT s.strategy_address = ANY (COALESCE(l.strategies, '{}'))), '{}'),
		    strategies_block = l.block_number, strategies_log_index = l.log_index
		FROM (SELECT DISTINCT unnest($1::text[]) AS address) k
		LEFT JOIN LATERAL (
		    SELECT strategies, block_number, log_index FROM avs_strategy_events e
		    WHERE e.avs_address = k.address
		    ORDER BY block_number DESC, log_index DESC LIMIT 1
		) l ON TRUE
		WHERE a.address = k.address`, pq.Array(avss))
	return err
}

func (tx *Tx) applyDelegations(ctx context.Context, b *chain.Batch) error {
	if len(b.Delegations) == 0 {
		return nil
	}
	var p positions
	var types, stakers, ops []string
	var strategies, shares []sql.NullString
	for _, e := range b.Delegations {
		if !e.Type.Valid() {
			return fmt.Errorf("delegation event at block %d log %d: unknown type %q", e.BlockNumber, e.LogIndex, e.Type)
		}
		p.add(e.Position)
		types = append(types, string(e.Type))
		stakers = append(stakers, lower(e.Staker))
		ops = append(ops, lower(e.Operator))
		if e.Type == chain.SharesIncreased || e.Type == chain.SharesDecreased {
			strategies = append(strategies, sql.NullString{String: lower(e.Strategy), Valid: true})
			shares = append(shares, sql.NullString{String: bigString(e.Shares), Valid: true})
		} else {
			strategies = append(strategies, sql.NullString{})
			shares = append(shares, sql.NullString{})
		}
	}
	args := append(p.args(), pq.Array(types), pq.Array(stakers), pq.Array(ops), pq.Array(strategies), pq.Array(shares))
	if _, err := tx.execContext(ctx, `
		INSERT INTO delegation_events (block_number, log_index, tx_hash, block_time, type, staker_address,
		                               operator_address, strategy_address, shares)
		SELECT b, l, t, bt, ty::delegation_type, s, o, st, sh::numeric
		FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::text[], $6::text[],
		            $7::text[], $8::text[], $9::text[]) AS u(b, l, t, bt, ty, s, o, st, sh)
		ON CONFLICT DO NOTHING`, args...); err != nil {
		return err
	}
	return tx.markDirty(ctx, p.minTime)
}

func (tx *Tx) applyDeposits(ctx context.Context, b *chain.Batch) error {
	if len(b.Deposits) == 0 {
		return nil
	}
	var p positions
	var stakers, strategies, shares []string
	var tokens []sql.NullString
	for _, e := range b.Deposits {
		p.add(e.Position)
		stakers = append(stakers, lower(e.Staker))
		strategies = append(strategies, lower(e.Strategy))
		shares = append(shares, bigString(e.Shares))
		if e.Token == "" {
			tokens = append(tokens, sql.NullString{})
		} else {
			tokens = append(tokens, sql.NullString{String: lower(e.Token), Valid: true})
		}
	}
	args := append(p.args(), pq.Array(stakers), pq.Array(tokens), pq.Array(strategies), pq.Array(shares))
	if _, err := tx.execContext(ctx, `
		INSERT INTO deposits (block_number, log_index, tx_hash, block_time, staker_address, token_address,
		                      strategy_address, shares)
		SELECT b, l, t, bt, s, tok, st, sh::numeric
		FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::text[], $6::text[],
		            $7::text[], $8::text[]) AS u(b, l, t, bt, s, tok, st, sh)
		ON CONFLICT DO NOTHING`, args...); err != nil {
		return err
	}
	return tx.markDirty(ctx, p.minTime)
}

func (tx *Tx) applyPodShares(ctx context.Context, b *chain.Batch) error {
	if len(b.PodShares) == 0 {
		return nil
	}
	var p positions
	var owners, deltas []string
	for _, e := range b.PodShares {
		p.add(e.Position)
		owners = append(owners, lower(e.PodOwner))
		deltas = append(deltas, bigString(e.SharesDelta))
	}
	args := append(p.args(), pq.Array(owners), pq.Array(deltas))
	if _, err := tx.execContext(ctx, `
		INSERT INTO pod_share_events (block_number, log_index, tx_hash, block_time, pod_owner, shares_delta)
		SELECT b, l, t, bt, o, d::numeric
		FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::text[], $6::text[]) AS u(b, l, t, bt, o, d)
		ON CONFLICT DO NOTHING`, args...); err != nil {
		return err
	}
	return tx.markDirty(ctx, p.minTime)
}

func (tx *Tx) applyWithdrawalsQueued(ctx context.Context, b *chain.Batch) error {
	if len(b.WithdrawalsQueued) == 0 {
		return nil
	}
	var p positions
	var roots, nonces, stakers, delegated, withdrawers, strategies, shares []string
	var scaled []sql.NullString
	var starts []int64
	for _, e := range b.WithdrawalsQueued {
		if len(e.Strategies) != len(e.Shares) {
			return fmt.Errorf("withdrawal %s: %d strategies but %d share amounts", e.Root, len(e.Strategies), len(e.Shares))
		}
		p.add(e.Position)
		roots = append(roots, lower(e.Root))
		nonces = append(nonces, bigString(e.Nonce))
		stakers = append(stakers, lower(e.Staker))
		d := lower(e.DelegatedTo)
		if d == "" {
			d = chain.ZeroAddress
		}
		delegated = append(delegated, d)
		w := lower(e.Withdrawer)
		if w == "" {
			w = lower(e.Staker)
		}
		withdrawers = append(withdrawers, w)
		starts = append(starts, int64(e.StartBlock))
		// Arrays of arrays must be rectangular in PostgreSQL, so the
		// strategies and shares travel as comma-joined text.
		ss := make([]string, len(e.Strategies))
		sh := make([]string, len(e.Shares))
		for i := range e.Strategies {
			ss[i] = lower(e.Strategies[i])
			sh[i] = bigString(e.Shares[i])
		}
		strategies = append(strategies, strings.Join(ss, ","))
		shares = append(shares, strings.Join(sh, ","))
		if e.ScaledShares == nil {
			scaled = append(scaled, sql.NullString{})
		} else {
			if len(e.ScaledShares) != len(e.Strategies) {
				return fmt.Errorf("withdrawal %s: %d strategies but %d scaled share amounts", e.Root, len(e.Strategies), len(e.ScaledShares))
			}
			sc := make([]string, len(e.ScaledShares))
			for i, v := range e.ScaledShares {
				sc[i] = bigString(v)
			}
			scaled = append(scaled, sql.NullString{String: strings.Join(sc, ","), Valid: true})
		}
	}
	args := append(p.args(), pq.Array(roots), pq.Array(nonces), pq.Array(stakers), pq.Array(delegated),
		pq.Array(withdrawers), pq.Array(starts), pq.Array(strategies), pq.Array(shares), pq.Array(scaled))
	// The deposit shares each withdrawal took are derived by
	// withdrawal_deposit_shares, whose factors come from the deposit scaling
	// factor events stored by an earlier step.
	if _, err := tx.execContext(ctx, `
		INSERT INTO withdrawals (block_number, log_index, tx_hash, created_at, withdrawal_root, nonce,
		    staker_address, delegated_to, withdrawer_address, start_block, strategies, shares,
		    scaled_shares, deposit_shares, created_at_block, updated_at_block, updated_at)
		SELECT b, l, t, bt, r, n::numeric, s, d, w, sb, st, sh, sc,
		       withdrawal_deposit_shares(s, st::text[], sh, sc, b, l, t),
		       b, b, bt
		FROM (
		    SELECT b, l, t, bt, r, n, s, d, w, sb,
		           string_to_array(NULLIF(st, ''), ',')::address[] AS st,
		           string_to_array(NULLIF(sh, ''), ',')::numeric(78,0)[] AS sh,
		           string_to_array(NULLIF(sc, ''), ',')::numeric(78,0)[] AS sc
		    FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::text[], $6::text[],
		                $7::text[], $8::text[], $9::text[], $10::bigint[], $11::text[], $12::text[], $13::text[])
		        AS u(b, l, t, bt, r, n, s, d, w, sb, st, sh, sc)
		) u
		ON CONFLICT DO NOTHING`, args...); err != nil {
		return err
	}
	return tx.markDirty(ctx, p.minTime)
}

func (tx *Tx) applyWithdrawalsCompleted(ctx context.Context, b *chain.Batch) error {
	if len(b.WithdrawalsDone) == 0 {
		return nil
	}
	var p positions
	var roots []string
	for _, e := range b.WithdrawalsDone {
		p.add(e.Position)
		roots = append(roots, lower(e.Root))
	}
	// A completion of a withdrawal queued before indexing began names no
	// stored withdrawal and changes nothing.
	args := append(p.args(), pq.Array(roots))
	if _, err := tx.execContext(ctx, `
		UPDATE withdrawals w
		SET is_completed = TRUE, completed_block = c.b, completed_log_index = c.l, completed_tx_hash = c.t,
		    completed_at = c.bt, updated_at_block = c.b, updated_at = c.bt
		FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::text[]) AS c(b, l, t, bt, r)
		WHERE w.withdrawal_root = c.r AND NOT w.is_completed`, args...); err != nil {
		return err
	}
	return tx.markDirty(ctx, p.minTime)
}

func (tx *Tx) applyRewards(ctx context.Context, b *chain.Batch) error {
	if len(b.RewardsSubmissions) == 0 {
		return nil
	}
	var p positions
	var hashes, avss, nonces, tokens, amounts, kinds []string
	var setIDs, submitters, descriptions []sql.NullString
	var forAll []bool
	var starts, durations []int64
	var sHashes, sStrategies, sMultipliers, sAmounts []string
	var sPositions []int64
	var oHashes, oOperators, oAmounts []string
	var oPositions []int64
	for _, e := range b.RewardsSubmissions {
		p.add(e.Position)
		h := lower(e.Hash)
		hashes = append(hashes, h)
		avss = append(avss, lower(e.AVS))
		kind := e.SubmissionKind()
		forAll = append(forAll, e.ForAll || kind == chain.RewardsForAll || kind == chain.RewardsForAllEarners)
		kinds = append(kinds, string(kind))
		setIDs = append(setIDs, textValue(e.OperatorSetID))
		submitters = append(submitters, nullIfEmpty(lower(e.Submitter)))
		descriptions = append(descriptions, nullIfEmpty(e.Description))
		for i, or := range e.OperatorRewards {
			oHashes = append(oHashes, h)
			oPositions = append(oPositions, int64(i))
			oOperators = append(oOperators, lower(or.Operator))
			oAmounts = append(oAmounts, bigString(or.Amount))
		}
		nonces = append(nonces, bigString(e.Nonce))
		tokens = append(tokens, lower(e.Token))
		amounts = append(amounts, bigString(e.Amount))
		starts = append(starts, int64(e.StartTimestamp))
		durations = append(durations, int64(e.Duration))
		multipliers := make([]*big.Int, len(e.Strategies))
		for i, sm := range e.Strategies {
			multipliers[i] = sm.Multiplier
			if multipliers[i] == nil {
				multipliers[i] = new(big.Int)
			}
		}
		for i, amt := range splitByMultiplier(e.Amount, multipliers) {
			sHashes = append(sHashes, h)
			sPositions = append(sPositions, int64(i))
			sStrategies = append(sStrategies, lower(e.Strategies[i].Strategy))
			sMultipliers = append(sMultipliers, multipliers[i].String())
			sAmounts = append(sAmounts, amt.String())
		}
	}
	args := append(p.args(), pq.Array(hashes), pq.Array(avss), pq.Array(forAll), pq.Array(nonces),
		pq.Array(tokens), pq.Array(amounts), pq.Array(starts), pq.Array(durations), pq.Array(kinds),
		pq.Array(setIDs), pq.Array(submitters), pq.Array(descriptions))
	if _, err := tx.execContext(ctx, `
		INSERT INTO rewards_submissions (block_number, log_index, tx_hash, block_time, rewards_submission_hash,
		    avs_address, for_all, submission_nonce, token_address, amount, start_timestamp, duration,
		    kind, operator_set_id, submitter, description)
		SELECT b, l, t, bt, h, a, f, n::numeric, tok, amt::numeric, st, d, k, os::bigint, sub, descr
		FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::bool[],
		            $8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::text[], $14::text[],
		            $15::text[], $16::text[])
		    AS u(b, l, t, bt, h, a, f, n, tok, amt, st, d, k, os, sub, descr)
		ON CONFLICT DO NOTHING`, args...); err != nil {
		return err
	}
	if len(oHashes) > 0 {
		if _, err := tx.execContext(ctx, `
			INSERT INTO rewards_submission_operators (rewards_submission_hash, position, operator_address, amount)
			SELECT h, p, o, a::numeric
			FROM unnest($1::text[], $2::int[], $3::text[], $4::text[]) AS u(h, p, o, a)
			ON CONFLICT DO NOTHING`,
			pq.Array(oHashes), pq.Array(oPositions), pq.Array(oOperators), pq.Array(oAmounts)); err != nil {
			return err
		}
	}
	if len(sHashes) > 0 {
		if _, err := tx.execContext(ctx, `
			INSERT INTO rewards_submission_strategies (rewards_submission_hash, position, strategy_address, multiplier, amount)
			SELECT h, p, s, m::numeric, a::numeric
			FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[]) AS u(h, p, s, m, a)
			ON CONFLICT DO NOTHING`,
			pq.Array(sHashes), pq.Array(sPositions), pq.Array(sStrategies), pq.Array(sMultipliers), pq.Array(sAmounts)); err != nil {
			return err
		}
	}
	// Reward tokens without reference data get a row with no price.
	if _, err := tx.execContext(ctx, `
		INSERT INTO tokens (address, symbol) SELECT DISTINCT t, t FROM unnest($1::text[]) AS t
		ON CONFLICT DO NOTHING`, pq.Array(tokens)); err != nil {
		return err
	}
	return tx.markDirty(ctx, p.minTime)
}

// applyStakerState derives the stakers and operators the batch's events
// name, with deriveStakers and deriveOperatorShares.
func (tx *Tx) applyStakerState(ctx context.Context, b *chain.Batch) error {
	if err := tx.deriveStakers(ctx, someKeys(batchStakers(b))); err != nil {
		return err
	}
	return tx.deriveOperatorShares(ctx, someKeys(batchOperators(b)))
}

// batchStakers are the stakers whose state b's events change.
func batchStakers(b *chain.Batch) []string {
	var out []string
	for _, e := range b.Delegations {
		out = append(out, e.Staker)
	}
	for _, e := range b.Deposits {
		out = append(out, e.Staker)
	}
	for _, e := range b.PodShares {
		out = append(out, e.PodOwner)
	}
	for _, e := range b.WithdrawalsQueued {
		out = append(out, e.Staker)
	}
	for _, e := range b.DepositScalingFactors {
		out = append(out, e.Staker)
	}
	for _, e := range b.BeaconSlashingFactors {
		out = append(out, e.Staker)
	}
	return joinKeys(out)
}

// batchOperators are the operators whose delegated shares b's events change.
func batchOperators(b *chain.Batch) []string {
	var out []string
	for _, e := range b.Delegations {
		if e.Type == chain.SharesIncreased || e.Type == chain.SharesDecreased {
			out = append(out, e.Operator)
		}
	}
	for _, e := range b.SlashedOperatorShares {
		out = append(out, e.Operator)
	}
	return joinKeys(out)
}
