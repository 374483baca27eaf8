// Package model holds the Go types of the GraphQL schema (schema.graphqls):
// the hand-written ones in this file, the custom scalars, and those gqlgen
// generates into models_gen.go. Fields of the schema that a struct here does
// not have are resolved by package graph, usually through a dataloader.
//
// Amounts stay exact (decimal text, DecimalSum or big.Rat) until the
// conversion into a model value for a Float field of the schema, which is
// where the REST contract wants a JSON number.
package model

import (
	"context"
	"time"
)

// PageMeta is the paging information of a list. Total is counted only when
// a query asks for it, by Count.
type PageMeta struct {
	Skip  int
	Take  int
	Count func(ctx context.Context) (int, error) `json:"-"`
}

// Avs is an AVS record.
type Avs struct {
	Address               string
	MetadataURL           *string
	MetadataName          string
	MetadataDescription   *string
	MetadataDiscord       *string
	MetadataLogo          *string
	MetadataTelegram      *string
	MetadataWebsite       *string
	MetadataX             *string
	TotalStakers          int
	TotalOperators        int
	MaxApy                string
	MaxApyNumber          float64
	CreatedAtBlock        string
	UpdatedAtBlock        string
	CreatedAt             time.Time
	UpdatedAt             time.Time
	RestakeableStrategies []string
}

// AvsPage is a page of AVS.
type AvsPage struct {
	Data []*Avs
	Meta *PageMeta
}

// AvsAddressPage is a page of AVS address items.
type AvsAddressPage struct {
	Data []*AvsAddress
	Meta *PageMeta
}

// Operator is an operator record.
type Operator struct {
	Address             string
	MetadataName        string
	MetadataDescription *string
	MetadataDiscord     *string
	MetadataLogo        *string
	MetadataTelegram    *string
	MetadataWebsite     *string
	MetadataX           *string
	TotalStakers        int
	TotalAvs            int
	MaxApy              string
	MaxApyNumber        float64
	CreatedAtBlock      string
	UpdatedAtBlock      string
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// OperatorPage is a page of operators.
type OperatorPage struct {
	Data []*Operator
	Meta *PageMeta
}

// AvsOperator is an operator as seen from one AVS.
type AvsOperator struct {
	Operator
	AvsAddress         string
	IsActive           bool
	RestakedStrategies []string
}

// AvsOperatorPage is a page of an AVS's operators.
type AvsOperatorPage struct {
	Data []*AvsOperator
	Meta *PageMeta
}

// AvsRegistration is the registration of an operator to an AVS.
type AvsRegistration struct {
	AvsAddress         string
	OperatorAddress    string
	IsActive           bool
	RestakedStrategies []string
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// Staker is a staker. The time fields are nil for an address never seen.
type Staker struct {
	Address         string
	OperatorAddress *string
	CreatedAtBlock  *int
	CreatedAt       *time.Time
	UpdatedAtBlock  *int
	UpdatedAt       *time.Time
}

// StakerPage is a page of stakers.
type StakerPage struct {
	Data []*Staker
	Meta *PageMeta
}

// StrategyShares is an amount of shares in one strategy with its value.
// DepositShares and WithdrawableShares are set for a staker's positions
// only. The values are kept as the store's decimal text and converted to
// numbers only when a query selects them: most pages of shares select
// none, and converting long decimals took a twentieth of the server's
// time on a page of operators.
type StrategyShares struct {
	StrategyAddress    string
	Shares             string
	DepositShares      *string
	WithdrawableShares *string
	UnderlyingToken    *string
	// UnderlyingValueText and ETHValueText are the values in underlying
	// tokens and in ETH as decimal text.
	UnderlyingValueText string
	ETHValueText        string
}

// UnderlyingValue is the value of the shares in whole underlying tokens.
func (s *StrategyShares) UnderlyingValue() float64 { return DecimalToFloat(s.UnderlyingValueText) }

// EthValue is the value of the shares in ETH.
func (s *StrategyShares) EthValue() float64 { return DecimalToFloat(s.ETHValueText) }

// DelegationEvent is a delegation event. StakerAddress names the staker
// relation; the operator is in Args.
type DelegationEvent struct {
	Tx              string
	BlockNumber     int
	BlockTime       time.Time
	LogIndex        int
	Type            DelegationEventType
	Args            *DelegationEventArgs
	UnderlyingToken *string
	UnderlyingValue *float64
	EthValue        *float64
	StakerAddress   string
}

// DelegationEventArgs are the arguments of a delegation event. Shares is
// decimal integer text; SharesNumber is the same value as a JSON number with
// every digit kept, where a float64 would round integers beyond 2^53.
type DelegationEventArgs struct {
	Operator     string
	Staker       string
	Strategy     *string
	Shares       *string
	SharesNumber *Number
}

// DelegationEventPage is a page of delegation events.
type DelegationEventPage struct {
	Data []*DelegationEvent
	Meta *PageMeta
}

// Withdrawal is a withdrawal record.
type Withdrawal struct {
	WithdrawalRoot    string
	Nonce             int
	StakerAddress     string
	DelegatedTo       string
	WithdrawerAddress string
	CreatedAtBlock    int
	CreatedAt         time.Time
	UpdatedAtBlock    int
	UpdatedAt         time.Time
	IsCompleted       bool
	IsWithdrawable    bool
}

// WithdrawalPage is a page of withdrawals.
type WithdrawalPage struct {
	Data []*Withdrawal
	Meta *PageMeta
}

// Deposit is a deposit into a strategy.
type Deposit struct {
	Tx              string
	BlockNumber     int
	BlockTime       time.Time
	StakerAddress   string
	TokenAddress    *string
	StrategyAddress string
	Shares          string
}

// DepositPage is a page of deposits.
type DepositPage struct {
	Data []*Deposit
	Meta *PageMeta
}

// Strategy is a restaking strategy.
type Strategy struct {
	Address            string
	Symbol             string
	Kind               StrategyKind
	UnderlyingToken    *string
	Decimals           int
	SharesToUnderlying string
	EthPrice           float64
	TotalShares        string
	DelegatedShares    string
	Tvl                float64
	TvlEth             float64
}

// AvsRewards are the rewards of one AVS; its submissions are resolved by
// page.
type AvsRewards struct {
	Address          string
	TotalRewards     string
	TotalSubmissions int
	RewardTokens     []string
	RewardStrategies []string
}

// RewardsSubmission is a rewards submission.
type RewardsSubmission struct {
	RewardsSubmissionHash string
	SubmissionNonce       string
	StartTimestamp        int
	Duration              int
	TotalAmount           string
	TokenAddress          string
	AvsAddress            string
	IsForAll              bool
	Kind                  RewardsSubmissionKind
	OperatorSetID         *int
	Submitter             *string
	Description           *string
	Tx                    string
	BlockNumber           int
	BlockTime             time.Time
}

// RewardsSubmissionStrategy is one strategy of a rewards submission.
type RewardsSubmissionStrategy struct {
	StrategyAddress string
	Multiplier      string
	Amount          string
}

// RewardsSubmissionPage is a page of rewards submissions.
type RewardsSubmissionPage struct {
	Data []*RewardsSubmission
	Meta *PageMeta
}

// RewardsSubmissionOperator is one operator's amount in an
// operator-directed rewards submission.
type RewardsSubmissionOperator struct {
	OperatorAddress string
	Amount          string
	Strategies      []string
	StrategyAmounts []string
}

// OperatorSet is an operator set; its AVS, allocated stake and lists are
// resolved by key.
type OperatorSet struct {
	AvsAddress     string
	ID             int
	Strategies     []string
	TotalOperators int
	CreatedAtBlock int
	CreatedAt      time.Time
}

// OperatorSetPage is a page of operator sets.
type OperatorSetPage struct {
	Data []*OperatorSet
	Meta *PageMeta
}

// OperatorSetMember is the membership of an operator in an operator set.
type OperatorSetMember struct {
	OperatorAddress string
	AvsAddress      string
	OperatorSetID   int
	IsActive        bool
	CreatedAtBlock  int
	CreatedAt       time.Time
	UpdatedAtBlock  int
	UpdatedAt       time.Time
}

// OperatorSetMemberPage is a page of operator set memberships.
type OperatorSetMemberPage struct {
	Data []*OperatorSetMember
	Meta *PageMeta
}

// Allocation is an operator's allocation to an operator set in one
// strategy.
type Allocation struct {
	OperatorAddress  string
	AvsAddress       string
	OperatorSetID    int
	StrategyAddress  string
	Magnitude        string
	PendingMagnitude *string
	EffectBlock      *int
	MaxMagnitude     string
	AllocatedShares  string
	UpdatedAtBlock   int
	UpdatedAt        time.Time
}

// AllocationPage is a page of allocations.
type AllocationPage struct {
	Data []*Allocation
	Meta *PageMeta
}

// Slashing is a slashing of an operator through an operator set.
type Slashing struct {
	OperatorAddress string
	AvsAddress      string
	OperatorSetID   int
	Strategies      []*SlashedStrategy
	Description     string
	BlockNumber     int
	LogIndex        int
	TransactionHash string
	CreatedAt       time.Time
}

// SlashingPage is a page of slashings.
type SlashingPage struct {
	Data []*Slashing
	Meta *PageMeta
}

// SlashedStrategy is what a slashing took in one strategy.
type SlashedStrategy struct {
	StrategyAddress string
	WadSlashed      string
	SharesSlashed   string
	SharesBurned    string
}

// Metrics is the root of the ecosystem metrics; every field is resolved
// from the daily snapshots, which are read once per request.
type Metrics struct{}

// DepositEvent is a deposit as an event. The staker relation is resolved
// from Args.Staker.
type DepositEvent struct {
	Tx              string
	BlockNumber     int
	BlockTime       time.Time
	LogIndex        int
	Type            DepositEventType
	Args            *DepositEventArgs
	UnderlyingToken *string
	UnderlyingValue *float64
	EthValue        *float64
}

// DepositEventArgs are the arguments of a deposit event. Shares is decimal
// integer text and SharesNumber the same value as a JSON number.
type DepositEventArgs struct {
	Staker       string
	Token        *string
	Strategy     string
	Shares       string
	SharesNumber Number
}

// DepositEventPage is a page of deposit events.
type DepositEventPage struct {
	Data []*DepositEvent
	Meta *PageMeta
}

// WithdrawalEvent is the queuing or completion of a withdrawal. The
// withdrawal relation is resolved from Args.WithdrawalRoot.
type WithdrawalEvent struct {
	Tx          string
	BlockNumber int
	BlockTime   time.Time
	LogIndex    int
	Type        WithdrawalEventType
	Args        *WithdrawalEventArgs
}

// WithdrawalEventPage is a page of withdrawal events.
type WithdrawalEventPage struct {
	Data []*WithdrawalEvent
	Meta *PageMeta
}

// RewardsEvent is a rewards submission as an event. The submission
// relation is resolved from Args.RewardsSubmissionHash.
type RewardsEvent struct {
	Tx          string
	BlockNumber int
	BlockTime   time.Time
	LogIndex    int
	Type        RewardsEventType
	Args        *RewardsEventArgs
	EthValue    *float64
}

// RewardsEventArgs are the arguments of a rewards event. SubmissionNonce
// and RewardsSubmissionAmount are decimal integer text;
// SubmissionNonceNumber is the nonce as a JSON number.
type RewardsEventArgs struct {
	Avs                             string
	SubmissionNonce                 string
	SubmissionNonceNumber           Number
	RewardsSubmissionHash           string
	RewardsSubmissionToken          string
	RewardsSubmissionAmount         string
	RewardsSubmissionStartTimeStamp int
	RewardsSubmissionDuration       int
	Strategies                      []*RewardsEventStrategy
}

// RewardsEventPage is a page of rewards events.
type RewardsEventPage struct {
	Data []*RewardsEvent
	Meta *PageMeta
}

// RegistrationEventPage is a page of registration events.
type RegistrationEventPage struct {
	Data []*RegistrationEvent
	Meta *PageMeta
}
