package blobsim

// faults.go: the faults a simulator draws for each request (Request, Plan,
// Faults); transport.go applies them around the service's answer.

import "time"

// Request is one request as the faults see it, before it reaches the
// service.
type Request struct {
	Client    string // the Transport's or Handler's client name
	Op        string // an Op* name
	Container string
	Blob      string // "" for a request on the container or the account
	// Seq counts this client's requests of this Op on this container and
	// blob, from 0: a seed can draw the same faults whatever other clients
	// do. A request whose context had already ended is not counted.
	Seq int
}

// Plan is what happens to one request. The zero Plan is no fault. In
// order: Delay; then Unreachable, or Refuse, or the request is applied
// (and Lose loses its answer); then AnswerDelay; then the answer. The
// request's context is honoured at every wait: a context that ends during
// Delay leaves the request unapplied, during AnswerDelay applied, and the
// client gets the context's error (as net/http gives it: a *url.Error).
type Plan struct {
	Delay       time.Duration // before the request reaches the service
	Unreachable bool          // after Delay, fail without an answer and without applying: connection refused
	Refuse      int           // answer this status (400–599) without applying: 503 ServerBusy, 500 InternalError, 429, ...; 0: apply
	RefuseCode  string        // the error code of Refuse and of LoseAs's status; "": the status's usual one (503 ServerBusy, 500 InternalError, ...)
	Lose        bool          // apply, then lose the answer, as LoseAs says
	// LoseAs is what the client gets instead of a lost answer: 0 nothing,
	// until the request's context ends (a client timeout; for ever without
	// a deadline); -1 a connection reset; a status (500, 503, ...) an error
	// answer with RefuseCode.
	LoseAs      int
	AnswerDelay time.Duration // after applying (or refusing), before the answer reaches the client
}

// Faults draws the Plan of each request. Plan is never called
// concurrently; it must not send requests to the Service.
type Faults interface{ Plan(Request) Plan }

// FaultsFunc is a function as Faults.
type FaultsFunc func(Request) Plan

// Plan calls f.
func (f FaultsFunc) Plan(r Request) Plan { return f(r) }
