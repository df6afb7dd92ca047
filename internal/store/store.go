package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skeinhq/skein/internal/record"
)

// Conditions callers tell apart with errors.Is. Implementations wrap them
// with what was not found, which file is locked, and so on.
var (
	// ErrNotFound: no run, workflow, token or schedule has the given key.
	ErrNotFound = errors.New("not found")
	// ErrExists: a run with the given id already exists.
	ErrExists = errors.New("already exists")
	// ErrLocked: another process held the database locked for longer than
	// the busy timeout.
	ErrLocked = errors.New("the database is locked by another process")
	// ErrCorrupt: the database file is not a Skein database or is damaged.
	// Implementations never reset or recreate such a database.
	ErrCorrupt = errors.New("the database is not a Skein database or is damaged")
	// ErrNewerSchema: the database was written by a newer Skein, whose
	// schema this binary does not know. Nothing is changed.
	ErrNewerSchema = errors.New("the database was written by a newer version of skein")
	// ErrOwned: the run has a live owner (its lease has not expired), so
	// it cannot be claimed. The error is an *OwnedError.
	ErrOwned = errors.New("the run is owned by a live process")
	// ErrLeaseLost: the caller's owner token is no longer the run's (its
	// lease expired and someone else claimed the run); nothing was written.
	ErrLeaseLost = errors.New("the run's lease was lost to another owner")
)

// OwnedError says who owns a run that could not be claimed.
type OwnedError struct {
	RunID string
	Owner Owner
	// LeaseUntil is when the owner's lease runs out unless renewed.
	LeaseUntil time.Time
}

func (e *OwnedError) Error() string {
	return fmt.Sprintf("run %s is owned by %s (lease until %s)", e.RunID, e.Owner, e.LeaseUntil.Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrOwned) hold.
func (e *OwnedError) Is(target error) bool { return target == ErrOwned }

// The records a store keeps (package record has them): the run row, its
// owner, a step, and an event row.
type (
	Run   = record.Run
	Owner = record.Owner
	Step  = record.Step
	Event = record.EventRow
)

// Signal is data sent to a wait node of a run (a wait with until:
// signal), for one visit of that node: the visit that waited when the
// signal was sent.
type Signal struct {
	RunID string
	// Node is the wait node's id, or <node>#<name> for one of the waits
	// of a step that parks more than once (an agent's approvals; see
	// engine.SignalName).
	Node  string
	Visit int
	// Seq numbers a run's signals from 1 in the order they were saved.
	Seq int64
	// Data is any JSON value: a map, a list, a string, a number, a bool
	// or nil. It round-trips as maps' values do.
	Data      any
	CreatedAt time.Time
}

// Batch is one run's share of a SaveBatch.
type Batch struct {
	RunID string
	Steps []*Step
	// Plan are steps planned and not started: pending, with only their
	// key (Generation, Node, Visit), StepOrder, Type and Iteration. They
	// are written as one row of the run's plan, not a step row each; a
	// store lists each as a pending step (Steps, StepHistory) until a step
	// of the same key is saved, which then stands in its place.
	Plan   []*Step
	Events []Event
	// Token, when set, fences the batch: it is written only while the
	// run's owner token is Token, else SaveBatch fails with ErrLeaseLost
	// and writes nothing.
	Token string
	// Finish, when set, is the run's final record, written in the same
	// transaction as the steps and events: its status, outputs, error,
	// finish time and usage. The run's owner and lease are cleared.
	Finish *Run
}

// WorkflowVersion is one stored version of a workflow's source. Versions of
// a name count from 1.
type WorkflowVersion struct {
	Name      string
	Version   int
	Hash      string
	Source    []byte
	CreatedAt time.Time
}

// Token is an API token of skein serve, as stored: its secret is kept only
// as a hash (see internal/auth).
type Token struct {
	// ID is the token's public part, unique.
	ID    string
	Name  string
	Scope string
	// Hash is the SHA-256 of the whole token.
	Hash      []byte
	CreatedAt time.Time
}

// ChatTurn is one message of a chat conversation and the run that
// answered it (its reply is an output of that run).
type ChatTurn struct {
	Workflow     string
	Conversation string
	// Turn numbers a conversation's messages from 1; AddChatTurn sets it.
	Turn      int
	RunID     string
	Message   string
	CreatedAt time.Time
	// Run is the run that answered, read with the turn by ChatTurns.
	Run *Run
}

// MemoryMessage is one message of a thread of memory (an llm or agent
// node's memory:): a user's message or a model's reply.
type MemoryMessage struct {
	// Seq orders a store's messages; ReplaceMemory sets it.
	Seq     int64
	Role    string
	Content string
	// RunID and Step are the run and the step (node/visit) that kept it.
	RunID     string
	Step      string
	CreatedAt time.Time
}

// MemorySource is the step that keeps messages in a thread: its run, the
// step (node/visit), and the run that run re-runs, if any (whose messages
// of the same step the rerun's replace).
type MemorySource struct {
	RunID    string
	Step     string
	Replaces string
}

// Schedule is the state of one schedule trigger of a workflow (DESIGN §5):
// when it fires next and what it fired last. Several servers on one store
// share it: a fire is claimed by moving NextFire with AdvanceSchedule,
// which succeeds for one of them only.
type Schedule struct {
	Workflow string
	// Trigger is the id of the trigger node.
	Trigger string
	// Spec names the fire times (the cron expression and time zone). A
	// schedule saved with another Spec starts afresh.
	Spec string
	// NextFire is when the schedule fires next.
	NextFire time.Time
	// LastFire is the time of the last fire that started a run (its
	// scheduled time, not when it ran); zero before the first.
	LastFire time.Time
	// LastRunID is the run the last fire started.
	LastRunID string
	// UpdatedAt is when the schedule was last written.
	UpdatedAt time.Time
}

// RunFilter selects runs for ListRuns. Zero fields do not filter.
type RunFilter struct {
	Workflow string
	// Status is a stored status, or "interrupted": running or waiting
	// runs whose lease expired.
	Status record.RunStatus
	// Parent keeps only the child runs of this run.
	Parent string
	// Limit caps the number of runs returned; 0 returns them all.
	Limit int
	// Before keeps only runs started strictly before this time; pass the
	// StartedAt of the last run of a page to get the next page.
	Before time.Time
	// DueBy, when set, keeps only the waiting runs with no live owner
	// whose WakeAt is at or before it: the runs a timer should wake.
	DueBy time.Time
}

// Store keeps workflows, runs, steps, events and what serve and the
// nodes keep beside them (tokens, chats, memory, schedules, deliveries). It is safe
// for concurrent use.
type Store interface {
	// SaveWorkflow stores source as the next version of the workflow
	// name. When hash equals the latest version's hash, it returns the
	// latest version and stores nothing.
	SaveWorkflow(ctx context.Context, name string, source []byte, hash string) (WorkflowVersion, error)
	// Workflow returns one version of a workflow; version 0 is the latest.
	Workflow(ctx context.Context, name string, version int) (WorkflowVersion, error)

	// CreateRun stores a new run. An empty Status becomes "pending", a
	// zero StartedAt becomes now and a zero Generation 1; they are written
	// back to r. A run with an Owner gets a lease of LeaseTTL from now, by
	// the database's clock. A run id that exists already gives ErrExists.
	CreateRun(ctx context.Context, r *Run) error
	// UpdateRun replaces the run r.ID's description, status, results and
	// usage; it leaves its owner, lease, cancel request and generation.
	UpdateRun(ctx context.Context, r *Run) error
	Run(ctx context.Context, id string) (*Run, error)
	// ListRuns returns the runs that match f, newest first.
	ListRuns(ctx context.Context, f RunFilter) ([]*Run, error)

	// ClaimRun makes o the run's owner for ttl and starts its next
	// generation, atomically: it succeeds only when the run has no owner,
	// its lease expired (by the database's clock), or its owner token is
	// takeover (an owner the caller found dead). The run's status becomes
	// running, its cancel request, error, finish time and wake-up time are
	// cleared. It
	// returns the claimed run, or an *OwnedError (ErrOwned).
	ClaimRun(ctx context.Context, id string, o Owner, ttl time.Duration, takeover string) (*Run, error)
	// RenewLease extends the lease of the owner token for ttl from now and
	// reports whether a cancel was requested. ErrLeaseLost when token is
	// not the run's owner any more.
	RenewLease(ctx context.Context, id, token string, ttl time.Duration) (cancelRequested bool, err error)
	// RequestCancel asks the run's owner to cancel it; the owner sees it
	// at its next RenewLease. letFinish asks it to let the running nodes
	// finish; a request without it makes an earlier one with it stop them
	// (never the reverse). It returns the run.
	RequestCancel(ctx context.Context, id string, letFinish bool) (*Run, error)

	// Steps returns the steps of the run's latest generation that has
	// any, by step order: the steps saved, and those only planned
	// (Batch.Plan) as pending.
	Steps(ctx context.Context, runID string) ([]*Step, error)
	// EachStep calls fn with each saved step of the run's generation
	// gen, by step order, as it reads them: a run too long to hold whole
	// is read a step at a time. Planned steps with no row are not listed.
	// It stops at fn's first error and returns it.
	EachStep(ctx context.Context, runID string, gen int, fn func(*Step) error) error
	// StepHistory returns every step of every generation of the run,
	// oldest generation first, each by step order; given nodes, only
	// theirs. Nothing recorded is ever deleted but with its run.
	StepHistory(ctx context.Context, runID string, nodes ...string) ([]*Step, error)
	// SaveBatch inserts or replaces steps, keyed by (run, generation,
	// node, visit), records the planned steps (Batch.Plan), appends the
	// events (as AppendEvents) and writes the final run records of
	// several runs in one transaction, setting the
	// events' RunID and Seq; the steps' RunID fields are ignored. A batch
	// of a missing run fails the whole transaction with ErrNotFound, and
	// one whose Token is not its run's owner token with ErrLeaseLost.
	SaveBatch(ctx context.Context, batches []Batch) error

	// AppendEvents adds events to the run's log, numbering them after the
	// ones already there, and sets RunID and Seq in the slice.
	AppendEvents(ctx context.Context, runID string, events []Event) error
	// Events returns up to limit of the run's events with Seq > afterSeq,
	// in order; limit 0 returns them all.
	Events(ctx context.Context, runID string, afterSeq int64, limit int) ([]Event, error)

	// SaveSignal records a signal for the visit of a node of a run,
	// setting its Seq and, when zero, its CreatedAt (now). A visit takes
	// one signal: a second for the same run, node and visit gives
	// ErrExists; an unknown run ErrNotFound. In the same transaction a
	// waiting run becomes due (its WakeAt is at most CreatedAt), so a
	// server resumes it even when whoever saved the signal did not.
	SaveSignal(ctx context.Context, s *Signal) error
	// Signals returns the run's signals with Seq > afterSeq, in order.
	Signals(ctx context.Context, runID string, afterSeq int64) ([]Signal, error)

	// CreateToken stores an API token; an id used already gives
	// ErrExists. A zero CreatedAt becomes now and is written back.
	CreateToken(ctx context.Context, t *Token) error
	// Token returns the API token id, or ErrNotFound.
	Token(ctx context.Context, id string) (*Token, error)
	// Tokens returns every API token, oldest first.
	Tokens(ctx context.Context) ([]*Token, error)
	// DeleteToken deletes the API token id (a revoke: it authenticates
	// nothing from then on), or fails with ErrNotFound.
	DeleteToken(ctx context.Context, id string) error

	// AddChatTurn stores the next message of a conversation, numbered
	// after the ones already there, and writes its Turn and CreatedAt
	// back. Its run must exist; the turn is deleted with the run.
	AddChatTurn(ctx context.Context, t *ChatTurn) error
	// ChatTurns returns the last limit messages of a conversation (all of
	// them when limit is 0), oldest first, each with its Run.
	ChatTurns(ctx context.Context, workflow, conversation string, limit int) ([]*ChatTurn, error)

	// ReplaceMemory keeps msgs in a thread of a workflow, after every
	// message there, in place of what src's step kept in the thread
	// before (in src's run, or in the run it replaces): a step that runs
	// again adds no second copy. The run must exist (else ErrNotFound);
	// the messages are deleted with it. Seq and CreatedAt are written
	// back.
	ReplaceMemory(ctx context.Context, workflow, thread string, src MemorySource, msgs []*MemoryMessage) error
	// Memory returns the last limit messages of a thread (all when limit
	// is 0), oldest first, leaving out those except's step kept (in its
	// run or the one it replaces): a step's own earlier exchange is not
	// its memory.
	Memory(ctx context.Context, workflow, thread string, limit int, except MemorySource) ([]*MemoryMessage, error)

	// SetSchedule stores a schedule that is new or whose Spec changed, as
	// given, and otherwise keeps the stored one (its fire times go on). It
	// returns the schedule as stored.
	SetSchedule(ctx context.Context, s Schedule) (Schedule, error)
	// AdvanceSchedule writes s (NextFire, LastFire, LastRunID) only when
	// the stored schedule has the same Spec and its NextFire is still
	// from, and reports whether it did: of several callers advancing one
	// schedule from the same time exactly one succeeds. An unknown
	// schedule is ErrNotFound.
	AdvanceSchedule(ctx context.Context, s Schedule, from time.Time) (bool, error)
	// Schedules returns every stored schedule, by workflow and trigger.
	Schedules(ctx context.Context) ([]Schedule, error)

	// DeleteRuns deletes the runs started before the given time, with
	// their steps, events and child runs (whenever those
	// started), except runs with a live lease and the runs under them. It
	// returns the deleted runs, oldest first, so the caller can remove
	// their folders. With dryRun it deletes nothing and returns what it
	// would delete.
	DeleteRuns(ctx context.Context, before time.Time, dryRun bool) ([]*Run, error)
	// Compact gives the space of deleted rows back to the file system.
	Compact(ctx context.Context) error

	// OweDelivery records that a run's execution owes its delivery, held
	// by o for ttl; recording it again changes nothing.
	OweDelivery(ctx context.Context, runID string, generation int, o Owner, ttl time.Duration) error
	// Deliveries returns the deliveries owed, oldest run first.
	Deliveries(ctx context.Context) ([]*Delivery, error)
	// ClaimDelivery makes o the owner of an owed delivery without a live
	// owner (none, its lease ran out, or its token is takeover), for ttl.
	// It fails with an *OwnedError (ErrOwned) when another holds it, and
	// ErrNotFound when it is not owed.
	ClaimDelivery(ctx context.Context, runID string, generation int, o Owner, ttl time.Duration, takeover string) (*Delivery, error)
	// DeliveryAttempted records, for the owner token, the attempts made
	// and when the next is due, and holds the delivery until next + ttl.
	// It fails with ErrLeaseLost when token no longer holds it.
	DeliveryAttempted(ctx context.Context, runID string, generation int, token string, attempts int, next time.Time, ttl time.Duration) error
	// EndDelivery forgets a delivery that succeeded or gave up, when token
	// holds it (ErrLeaseLost otherwise).
	EndDelivery(ctx context.Context, runID string, generation int, token string) error

	// Tx runs fn in a write transaction, committed when fn returns nil
	// and rolled back, with everything written through tx, when it
	// returns an error. fn writes through tx only: another write of the
	// Store may wait for the transaction to end.
	Tx(ctx context.Context, fn func(tx Tx) error) error
	Close() error
}

// Tx is a write transaction of a Store: what is written through it is
// committed with whatever else its holder writes in the same transaction
// (the queue driver: a run's jobs), all at once or not at all.
type Tx interface {
	// CreateRun is Store.CreateRun in the transaction.
	CreateRun(ctx context.Context, r *Run) error
	// Run is Store.Run in the transaction: it reads the run id without
	// holding its row.
	Run(ctx context.Context, id string) (*Run, error)
	// LockRun reads the run id and holds its row until the transaction
	// ends, so that the writers of one run take turns; it returns the run
	// and the seq of its last event. A missing run is ErrNotFound.
	LockRun(ctx context.Context, id string) (r *Run, lastSeq int64, err error)
	// SaveBatch writes a batch of a run whose row the transaction holds
	// (LockRun): its steps, its events numbered after lastSeq (setting
	// their RunID and Seq) and its final record. Batch.Token is not
	// checked: the holder of the row fences its own writes.
	SaveBatch(ctx context.Context, b Batch, lastSeq int64) error
}

// Delivery is the delivery a run's execution owes (the workflow's
// delivery: block): kept from before the run's final record until the
// receiver took the result or the delivery gave up, so another process
// goes on with it when the one delivering dies.
type Delivery struct {
	RunID      string
	Generation int
	// Attempts counts the attempts made.
	Attempts int
	// NextAt is when the next attempt is due.
	NextAt time.Time
	// Owner holds the delivery while it is made; zero: nobody.
	Owner      Owner
	LeaseUntil time.Time
	// LeaseExpired is set on reading: nobody holds it, or the lease ran
	// out, by the database's clock.
	LeaseExpired bool
}
